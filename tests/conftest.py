"""Shared fixtures: one real Spark session and one real PostgreSQL server for the whole test run, or, under
pytest-xdist (``make test`` runs two workers), one of each per worker process.

The session runs on ``local[2]`` unless ``MERGEKIT_TEST_MASTER`` names another master. ``make test`` runs the
suite's MERGE cases (marker ``merge_cases``) a second time on ``local-cluster[2,1,1024]``: a master and two
workers inside the driver JVM, each worker starting its executor as a separate JVM with its own Python workers,
so nothing a merge sink needs can come from the driver's memory. That run turns the driver tier off
(``MERGEKIT_DRIVER_TIER=off`` in the Makefile): its statements are the ones whose sinks must run on executors.

Every test is marked by what it starts (:func:`_marks`): ``spark`` (the shared session), ``jvm`` (Java in a
subprocess: the command line, crash and concurrency workers), ``pg`` (the PostgreSQL server). ``make test-fast``
runs the rest with ``MERGEKIT_TEST_NO_JVM=1``, under which a test that starts Java or PostgreSQL anyway fails
(Java is pointed at a directory that does not exist) rather than quietly making the fast run slow."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]  # tests/kit/test_kit_report.py runs a small kit as an author would

DEFAULT_MASTER = "local[2]"
MASTER = os.environ.get("MERGEKIT_TEST_MASTER") or DEFAULT_MASTER
CLUSTER = MASTER.startswith("local-cluster")
# make test-fast: no Java (nor PostgreSQL) at all; a test that starts it anyway is marked wrong and fails
NO_JVM = os.environ.get("MERGEKIT_TEST_NO_JVM") == "1"
NO_JAVA_HOME = "/nonexistent/mergekit-test-fast-starts-no-java"
if NO_JVM:
    os.environ["JAVA_HOME"] = NO_JAVA_HOME  # the launcher fails at once, in this process and in subprocesses

# The Spark JVMs of the main run (this process's and those of the command lines and workers it starts) collect
# garbage with the parallel collector instead of the JVM's default, G1: thousands of small statements on 2 cores
# ran about 15% faster (a set of 267 tests: 206 s with G1, 172 s parallel, 178 s serial; docs/performance.md). The
# collector changes no result. A caller's own MERGEKIT_SPARK_CONF is kept; the cluster run keeps the default. (The
# JIT's quick compiler alone, -XX:TieredStopAtLevel=1, made short runs 12-20% faster and the whole run no faster,
# 2,233 s with it and 2,120 s without: the optimizing compiler's work pays back over the run; docs/performance.md.)
# The JIT's optimizing compiler (C2) also waits for ten times as many calls and loop turns as by default before it
# compiles a method: the run's JVMs spent more CPU compiling than running (C2 25 s, C1 7.5 s of a 72 s file), much
# of it for Spark's code generated per statement, which runs a few times and is gone. On two workers a set of 162
# tests took 248-250 s instead of 280-286 s (the quick compiler alone: 251-259 s; docs/performance.md).
TEST_JIT_OPTIONS = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4CompileThreshold=60000 -XX:Tier4MinInvocationThreshold=6000"
    " -XX:Tier4BackEdgeThreshold=400000"
)
TEST_SPARK_CONF = f"spark.driver.extraJavaOptions='-XX:+UseParallelGC {TEST_JIT_OPTIONS}'"
if not CLUSTER:
    os.environ.setdefault("MERGEKIT_SPARK_CONF", TEST_SPARK_CONF)
# The driver JVMs of the run (this process's, the command lines' and the workers') map a class-data archive
# (mergekit/execution/jvm_classes.py): made in the background when the first one starts, kept in the venv (built
# again with it), it takes seconds off each of the run's JVM starts. It changes no result.
if not NO_JVM:
    os.environ.setdefault("MERGEKIT_JVM_CLASS_CACHE", os.path.join(sys.prefix, "mergekit-jvm-classes"))


# The MERGE cases the cluster run repeats (marker ``merge_cases``): each connector's merge sinks and page sources
# and each shape of the engine's data path once, small enough for a few minutes on two cores. Each entry: a test
# file (or folder) and which of its tests, by a predicate on the test item.
def _merge_scenario(item: pytest.Item) -> bool:
    """Conformance-kit scenarios whose statement is a MERGE (the kit's UPDATE, DELETE and INSERT scenarios take
    the same path)."""
    scenario = getattr(item, "callspec", None) and item.callspec.params.get("scenario")
    return bool(scenario) and "merge" in scenario.get("requires", ())


def _one_paradigm(item: pytest.Item) -> bool:
    """The memory connector's DELETE_ROW_AND_INSERT_ROW runs (the journal kit covers CHANGE_ONLY_UPDATED_COLUMNS)."""
    callspec = getattr(item, "callspec", None)
    return callspec is None or callspec.params.get("paradigm") in (None, "DELETE_ROW_AND_INSERT_ROW")


MERGE_CASES = {
    "tests/cluster/": lambda item: True,  # the proof that sinks ran in executor JVMs
    "tests/kit/test_kit_journal.py": _merge_scenario,  # Parquet journal files written on executors
    "tests/kit/test_kit_csvdir.py": _merge_scenario,  # a third-party connector installed as a plugin
    "tests/engine/test_merge_semantics.py": _one_paradigm,  # memory connector: duplicates, routing, sink failure
    "tests/engine/test_api.py": lambda item: "merge" in item.name,  # MERGE from a DataFrame source
    "tests/partitioned/test_behaviour.py": lambda item: True,  # merge tables: routing to children, failing child
    # MERGE by index lookups: the journal's lookups, the Arrow join and the writers in executor tasks
    "tests/journal/test_lookup_merge.py": lambda item: (
        "spark_plans_result[spark]" in item.name or "errors" in item.name
    ),
    # a merge table's index: its children's lookups and its row ids in executor tasks
    "tests/partitioned/test_lookup_merge.py": lambda item: "spark_plans_result[spark]" in item.name,
}


# Tests that start Java in a subprocess (marker ``jvm``): the command line as a user runs it, and the workers
# of the crash, kill and multi-process tests. Each entry: a test file, and which of its tests, by name.
JVM_SUBPROCESS = {
    "tests/cli/test_cli_cancel.py": lambda item: True,
    "tests/cli/test_cli_demo.py": lambda item: True,
    "tests/cli/test_cli_results.py": lambda item: item.originalname.startswith("test_sql_shows"),
    "tests/cli/test_cli_sql.py": lambda item: True,
    "tests/engine/test_embedding.py": lambda item: "cannot_import_mergekit" in item.name or "engine_local" in item.name,
    "tests/engine/test_jvm_classes.py": lambda item: True,
    "tests/journal/test_crash.py": lambda item: True,
    "tests/journal/test_engine_processes.py": lambda item: True,
    "tests/sqldb/test_postgres.py": lambda item: item.name == "test_a_retried_task_applies_once",
    "tests/sqldb/test_staging_cleanup.py": lambda item: "killed_driver" in item.name,
    "tests/streams/test_continuous.py": lambda item: item.name.startswith("test_cli_follow"),
    "tests/streams/test_jobs.py": lambda item: "killed_between" in item.name,
}


def _marks(item: pytest.Item, path: str) -> list[str]:
    """``spark`` for a test that uses the shared session (the ``spark`` fixture, directly or through another
    fixture, or the conformance kit's engine), ``jvm`` for one that starts Java in a subprocess (JVM_SUBPROCESS),
    ``pg`` for one that uses the PostgreSQL server (the ``pg_server`` fixture). Test files whose tests start the
    session some other way (``local_session()`` in the test) carry ``pytestmark = pytest.mark.spark``."""
    from mergekit.testing import BaseConnectorTest

    fixtures = set(getattr(item, "fixturenames", ()))
    cls = getattr(item, "cls", None)
    marks = []
    if "spark" in fixtures or (cls is not None and issubclass(cls, BaseConnectorTest)):
        marks.append("spark")
    if any(path.startswith(prefix) and selected(item) for prefix, selected in JVM_SUBPROCESS.items()):
        marks.append("jvm")
    if "pg_server" in fixtures:
        marks.append("pg")
    return marks


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    kept, deselected = [], []
    for item in items:
        path = Path(str(item.path))
        path = path.relative_to(root).as_posix() if path.is_relative_to(root) else ""
        for mark in _marks(item, path):
            item.add_marker(mark)
        if any(path.startswith(prefix) and selected(item) for prefix, selected in MERGE_CASES.items()):
            item.add_marker(pytest.mark.merge_cases)
        # cluster-only tests belong to the cluster run (make test's second pytest): not collected elsewhere,
        # rather than reported as skipped
        (deselected if not CLUSTER and item.get_closest_marker("cluster_only") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def spark():
    if NO_JVM:
        pytest.fail("MERGEKIT_TEST_NO_JVM=1 (make test-fast), yet a test asked for the Spark session: mark it spark")
    from mergekit.execution.session import local_session

    session = local_session(master=MASTER, shuffle_partitions=2)
    if CLUSTER:  # local_session() returns an active session as it is: make sure it is the cluster
        assert session.sparkContext.master == MASTER, f"tests run on {session.sparkContext.master}, not {MASTER}"
    app_id = session.sparkContext.applicationId
    yield session
    session.stop()
    if CLUSTER:
        _remove_worker_dirs(app_id)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The run's one PostgreSQL server: its base URI, without a database name. Tests that need isolation take a
    database of their own on it (``tests.pg_server.fresh_database``), dropped when their module ends."""
    if NO_JVM:
        pytest.fail("MERGEKIT_TEST_NO_JVM=1 (make test-fast), yet a test asked for PostgreSQL: mark it pg")
    from tests.pg_server import running_pg_server

    with running_pg_server() as uri:
        yield uri


@pytest.fixture(scope="module", autouse=True)
def _drop_module_databases() -> Iterator[None]:
    yield
    from tests.pg_server import drop_databases

    drop_databases()


if CLUSTER:

    @pytest.fixture(scope="session", autouse=True)
    def _cluster_session(spark):
        """Tests that find their session through ``local_session()`` (the conformance kit) must get this one."""
        return spark


def _remove_worker_dirs(app_id: str) -> None:
    """local-cluster workers keep their executors' logs under $SPARK_HOME/work/<app id> (the pyspark package
    directory when SPARK_HOME is unset): remove them with the session."""
    from pyspark.find_spark_home import _find_spark_home

    work = Path(os.environ.get("SPARK_HOME") or _find_spark_home()) / "work"
    shutil.rmtree(work / app_id, ignore_errors=True)
    try:
        work.rmdir()
    except OSError:
        pass
