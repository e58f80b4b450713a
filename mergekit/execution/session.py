"""Creating (or reusing) the Spark session mergekit runs on, and borrowing an embedder's session politely.

An embedder's session keeps its own configuration: mergekit applies the settings its semantics need
(:data:`REQUIRED_CONF`) for the duration of each statement only (:func:`applied_conf`), and its Python tasks run an
interpreter that can import mergekit (:func:`python_for_workers`) without changing the one the embedder's own
Python UDFs run.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import shlex
import shutil
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.lazy_pyspark import cloudpickle

from .jvm_stderr import copy_jvm_stderr

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

# pyspark logs every failed query (with the Java stack) before raising it; mergekit reports errors itself.
logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL + 1)

__all__ = [
    "ARROW_BATCH_ROWS",
    "local_session",
    "applied_conf",
    "conf_for_block",
    "python_for_workers",
    "probe_workers",
    "session_time_zone",
    "ship_by_value",
    "statement_tasks",
    "REQUIRED_CONF",
]

# Settings mergekit relies on for Trino semantics: ANSI arithmetic (overflow and division by zero are
# errors), UTC session time zone, case-insensitive identifiers.
REQUIRED_CONF: Mapping[str, str] = {
    "spark.sql.ansi.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.caseSensitive": "false",
    # a statement's task count follows its data (shuffles coalesced by adaptive execution), not the session's
    # spark.sql.shuffle.partitions (Spark's default, 200, made every 1-row MERGE run 200 writer tasks)
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
}

# Optimizer rules mergekit turns off (added to the session's own ``spark.sql.optimizer.excludedRules``).
# PushProjectionThroughUnion fails with ``NoSuchElementException: key not found`` on a projection holding a
# correlated subquery above a union (a journal scan is a union of natively read files and page sources:
# ``UPDATE t SET b = CASE WHEN NOT EXISTS (SELECT ... WHERE q.k = t.k) ...``, found by the differential test).
# Without it the projection runs once above the union instead of in each branch: the same work.
EXCLUDED_RULES: tuple[str, ...] = ("org.apache.spark.sql.catalyst.optimizer.PushProjectionThroughUnion",)
_EXCLUDED_RULES_KEY = "spark.sql.optimizer.excludedRules"


def _with_excluded_rules(current: str | None) -> str:
    rules = [r.strip() for r in (current or "").split(",") if r.strip()]
    return ",".join(rules + [r for r in EXCLUDED_RULES if r not in rules])


#: What a new local session's JVM logs (log4j) on standard error: ``errors`` (the default) only errors while Spark
#: starts, ``off`` nothing (the command line, which reports errors itself), ``spark`` Spark's own default profile
#: (``mergekit --debug``). ``errors`` and ``off`` also drop Spark's start-up notices ("Using Spark's default log4j
#: profile", "Setting default log level to ...") and warnings (NativeCodeLoader, a loopback hostname).
SparkLog = Literal["errors", "off", "spark"]


# the rows of an Arrow batch to and from Python workers in mergekit's sessions (and of a page the driver tier writes)
ARROW_BATCH_ROWS = 65536


def local_session(
    *,
    master: str | None = None,
    shuffle_partitions: int | None = None,
    conf: Mapping[str, str] | None = None,
    log: SparkLog = "errors",
) -> SparkSession:
    """The active Spark session (as it is: see :func:`applied_conf`), or a new local one whose Python workers run
    this interpreter.

    PySpark starts ``python3`` from PATH for its workers unless told otherwise, which would not see a
    virtualenv, so ``PYSPARK_PYTHON`` and ``spark.pyspark.python`` are set to ``sys.executable``. On a local
    master the workers are forked from :mod:`mergekit.execution.worker_daemon`, which has imported mergekit.
    ``MERGEKIT_SPARK_CONF`` (:func:`env_spark_conf`) adds settings after mergekit's defaults, ``conf`` after those.

    ``log`` (:data:`SparkLog`) says what the JVM prints while the new session starts; unless it is ``spark``, its
    level is OFF once the session runs (failures reach the caller as :class:`MergekitError`). A log4j
    configuration of the caller's (a ``-Dlog4j2.configurationFile`` in ``conf``'s
    ``spark.driver.extraJavaOptions``, a ``log4j2.properties`` in ``SPARK_CONF_DIR``) is used as it is, and left on.
    """
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = os.cpu_count() or 2
    master = master or os.environ.get("MERGEKIT_SPARK_MASTER", f"local[{min(cores, 4)}]")
    settings = {
        "spark.master": master,
        "spark.app.name": "mergekit",
        "spark.pyspark.python": sys.executable,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions or max(2, cores)),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Arrow batches to and from Python workers (scans, processors, sinks): fewer, larger pages
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        # Native scans name their files one by one (a journal's deltas: hundreds); above this many paths Spark
        # lists them with a distributed job, which costs more than listing them on the driver.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "1024",
        "spark.driver.memory": os.environ.get("MERGEKIT_DRIVER_MEMORY", "2g"),
        "spark.sql.adaptive.enabled": "true",
    }
    if master.startswith("local[") or master == "local":
        # One process: shuffle blocks never cross a network, and compressing them costs the CPU the join needs
        # (a 10M/1M MERGE shuffles 1.6M rows; about 0.2 s of its 3.5 s on 2 cores).
        settings.update({"spark.shuffle.compress": "false", "spark.shuffle.spill.compress": "false"})
    settings.update(
        {**REQUIRED_CONF, _EXCLUDED_RULES_KEY: _with_excluded_rules(None), **env_spark_conf(), **(conf or {})}
    )
    if _is_local_master(master) and settings["spark.pyspark.python"] == sys.executable:
        # executors on this machine run this interpreter, which imports mergekit: its daemon forks workers with
        # mergekit's modules already loaded (worker_daemon.py)
        settings.setdefault("spark.python.daemon.module", WORKER_DAEMON)
    if log not in ("errors", "off", "spark"):
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"log must be 'errors', 'off' or 'spark', not {log!r}")
    if _no_jvm_yet():  # MERGEKIT_JVM_CLASS_CACHE: the class-data archive, when one is made (.jvm_classes)
        from .jvm_classes import archive_options

        shared = archive_options(settings)
        if shared:
            settings[_JAVA_OPTIONS_KEY] = " ".join(filter(None, [settings.get(_JAVA_OPTIONS_KEY), *shared]))
    options = settings.get(_JAVA_OPTIONS_KEY)
    quiet = log != "spark" and not _user_log4j_config(options)
    if quiet:  # log4j configured before the JVM logs anything: a file next to this module
        path = Path(__file__).resolve().with_name(_LOG4J_FILES[log])
        settings[_JAVA_OPTIONS_KEY] = " ".join(filter(None, [options, f"-Dlog4j2.configurationFile={path.as_uri()}"]))
    spark_conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    _start_jvm(spark_conf)
    builder = SparkSession.builder.config(conf=spark_conf)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("OFF")
    return spark


_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
WORKER_DAEMON = "mergekit.execution.worker_daemon"
SPARK_CONF_VARIABLE = "MERGEKIT_SPARK_CONF"


def env_spark_conf() -> dict[str, str]:
    """Spark settings from ``MERGEKIT_SPARK_CONF``: ``key=value`` pairs separated by whitespace, quoted as in a
    shell where a value holds spaces (``spark.driver.extraJavaOptions='-Xss4m -XX:+UseParallelGC'``), applied to
    every session mergekit starts, after its own defaults. ``INVALID_ARGUMENTS`` names a pair that is not
    ``spark.<key>=<value>``, or unbalanced quotes."""
    text = os.environ.get(SPARK_CONF_VARIABLE, "")
    try:
        pairs = shlex.split(text)
    except ValueError as err:  # "No closing quotation"
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS, f"{SPARK_CONF_VARIABLE} holds {text!r}: {str(err).lower()}"
        ) from None
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.startswith("spark.") or not value:
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"{SPARK_CONF_VARIABLE} holds {pair!r}: each setting must be spark.<key>=<value>, separated by spaces",
            )
        settings[key] = value
    return settings


_LOG4J_FILES = {"errors": "log4j2-errors.properties", "off": "log4j2-quiet.properties"}


def _user_log4j_config(java_options: str | None) -> bool:
    """Whether the caller configured log4j 2: in the driver's Java options, or a file in Spark's configuration
    directory (Spark reads it from its classpath)."""
    if "log4j2.configurationFile" in (java_options or ""):
        return True
    folder = os.environ.get("SPARK_CONF_DIR")
    if folder is None and os.environ.get("SPARK_HOME"):
        folder = os.path.join(os.environ["SPARK_HOME"], "conf")
    if not folder or not os.path.isdir(folder):
        return False
    return any(name.startswith("log4j2") and not name.endswith(".template") for name in os.listdir(folder))


def _no_jvm_yet() -> bool:
    """Whether the session about to be made starts a JVM (none runs in this process, none is given)."""
    from pyspark import SparkContext

    return SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ


def _start_jvm(conf: SparkConf) -> None:
    """Start the JVM of Spark's driver (as PySpark would on ``getOrCreate``) with its standard error read through
    a pipe: a daemon thread copies it to this process's standard error without the noise :mod:`.jvm_stderr` names,
    so errors (a launcher that fails: all of its output before the exception) and Spark's log (when it is on)
    still show. Nothing to do when a JVM is running or given (``PYSPARK_GATEWAY_PORT``)."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if not _no_jvm_yet():
        return
    read_end, write_end = os.pipe()
    copier = threading.Thread(target=copy_jvm_stderr, args=(read_end,), name="mergekit-jvm-stderr", daemon=True)
    copier.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except BaseException:
        os.close(write_end)
        copier.join(10)  # the launcher has exited: what it printed, before its failure is reported
        raise
    os.close(write_end)  # the JVM holds its own copy
    SparkContext._ensure_initialized(gateway=gateway)


@contextmanager
def applied_conf(spark: SparkSession, python_exec: str | None = None) -> Iterator[None]:
    """:data:`REQUIRED_CONF`, :data:`EXCLUDED_RULES` (and ``python_exec`` for the Python functions created meanwhile) for the duration of
    the block; the session's own values afterwards, also when the block raises.

    Spark captures these settings when a DataFrame is analysed (ANSI evaluation mode, the time zone of
    time-zone-aware expressions) and PySpark captures ``SparkContext.pythonExec`` when it wraps a Python function
    (``mapInArrow``, a UDF), so DataFrames built inside the block keep mergekit's semantics when they run later.
    The settings are session-wide: another thread's queries on the same session during the block see them too.
    """
    conf = spark.conf
    saved: dict[str, str | None] = {}
    required = dict(REQUIRED_CONF)
    required[_EXCLUDED_RULES_KEY] = _with_excluded_rules(conf.get(_EXCLUDED_RULES_KEY, None))
    for key, value in required.items():
        current = conf.get(key, None)  # None: not set in this session (Spark's default applies)
        if current != value:
            saved[key] = current
            conf.set(key, value)
    sc = spark.sparkContext
    saved_exec = sc.pythonExec
    if python_exec is not None:
        sc.pythonExec = python_exec
    try:
        yield
    finally:
        sc.pythonExec = saved_exec
        for key, old in saved.items():
            try:
                if old is None:
                    conf.unset(key)
                else:
                    conf.set(key, old)
            except Exception:  # the session was stopped meanwhile: nothing left to restore
                pass


@contextmanager
def conf_for_block(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """The Spark setting ``key`` is ``value`` for the block (session-wide), then as it was: its old value, or
    unset (Spark's default) when the session had not set it; also when the block raises."""
    conf = spark.conf
    saved = conf.get(key, None)
    conf.set(key, value)
    try:
        yield
    finally:
        if saved is None:
            conf.unset(key)
        else:
            conf.set(key, saved)


def statement_tasks(spark: SparkSession) -> int:
    """How many tasks a statement's own stages (index lookups) use: the cluster's cores, at least two."""
    return max(2, spark.sparkContext.defaultParallelism)


def session_time_zone(spark: SparkSession) -> str | None:
    """The zone the caller's session shows timestamps in (``spark.sql.session.timeZone``, by default the JVM's zone),
    or None for UTC: the zone values crossing from the caller's DataFrames are read in (docs/quickstart.md)."""
    try:
        zone = spark.conf.get(_TIME_ZONE_KEY)  # without a default: Spark's own (the JVM's zone) when unset
    except Exception:  # a stopped session: nothing crosses from it
        return None
    if zone is None or zone.strip().upper() in _UTC_NAMES:
        return None
    return zone.strip()


_TIME_ZONE_KEY = "spark.sql.session.timeZone"
_UTC_NAMES = frozenset({"UTC", "Z", "GMT", "UT", "ETC/UTC", "ETC/GMT", "UCT", "ETC/UCT", "ZULU", "UNIVERSAL", "+00:00"})


def _same_interpreter(python: str, env_path: str | None = None) -> bool:
    """Whether ``python`` (a path or a name looked up on PATH, as Spark's workers do) is this interpreter.

    A virtualenv's ``bin/python`` is a symlink to its base interpreter, which does not see the virtualenv's
    packages, so the two must be the same file *in the same directory*."""
    found = python if os.sep in python else shutil.which(python, path=env_path)
    if not found or not os.path.exists(found):
        return False
    here = sys.executable
    return os.path.dirname(os.path.abspath(found)) == os.path.dirname(os.path.abspath(here)) and os.path.samefile(
        found, here
    )


def _is_local_master(master: str) -> bool:
    return master == "local" or master.startswith(("local[", "local-cluster["))


def python_for_workers(spark: SparkSession, *, probe: bool = True) -> str | None:
    """The interpreter mergekit's Python tasks must be given (``SparkContext.pythonExec`` while a statement builds
    its DataFrames), or None when the session's own is right. Fails at once when neither works.

    PySpark fixes ``pythonExec`` (``PYSPARK_PYTHON``, ``spark.pyspark.python``, else ``python3`` from PATH) when the
    SparkContext starts. A session an embedder created before importing mergekit may therefore run its Python
    workers with an interpreter that cannot import mergekit (the system ``python3`` rather than the virtualenv's):
    every scan and DML statement would fail in its tasks with ``ModuleNotFoundError``.

    - Local masters (``local``, ``local[n]``, ``local-cluster[...]``): executors run on this machine, so mergekit's
      own Python functions are created with ``sys.executable`` (the embedder's own UDFs keep theirs). New Python
      workers are keyed by that interpreter, so this takes effect without restarting anything.
    - Other masters (executors elsewhere, where this path may not exist): a one-task probe job checks that the
      session's interpreter imports mergekit; if it does not, ``CONFIGURATION_INVALID`` says what to set.
    """
    sc = spark.sparkContext
    python = sc.pythonExec or "python3"
    if _same_interpreter(python, os.environ.get("PATH")):
        return None
    if _is_local_master(sc.master):
        return sys.executable
    if probe:
        probe_workers(spark)
    return None


def probe_workers(spark: SparkSession) -> None:
    """Run one task in the session's Python workers; ``CONFIGURATION_INVALID`` (what to set) unless it imports
    mergekit. Takes about a second."""
    sc = spark.sparkContext
    try:
        sc.parallelize([0], 1).map(lambda _: __import__("mergekit").__name__).collect()
    except Exception as exc:  # any failure of the probe means mergekit's tasks would fail too
        detail = next(
            (ln.strip() for ln in reversed(str(exc).splitlines()) if "Error" in ln and ln[:1] not in " \t"),
            type(exc).__name__,
        )
        raise MergekitError(ErrorCode.CONFIGURATION_INVALID, worker_python_message(sc.pythonExec, detail)) from exc


def worker_python_message(python: str | None, detail: str) -> str:
    """What to do when the Spark session's Python workers cannot import mergekit."""
    runs = f"run '{python}', which cannot" if python else "cannot"
    return (
        f"The Spark session's Python workers {runs} import mergekit ({detail}). "
        f"Start the session with PYSPARK_PYTHON={sys.executable} in the environment (or "
        f"spark.pyspark.python={sys.executable}), set before the SparkSession is created, or install mergekit and "
        "its connectors into that interpreter on every executor."
    )


def ship_by_value(module_name: str) -> bool:
    """Have Spark's Python workers receive the classes and functions of ``module_name``'s top-level package by
    value (``cloudpickle.register_pickle_by_value``) when no installed distribution provides that package: a
    connector in a script, a notebook or a test folder, which the workers' interpreter cannot import. Returns
    whether it did. An installed package (also ``pip install -e``) is imported by the workers as usual. The engine
    calls it for every catalog's connector when its Spark session starts, and at ``Engine.add_catalog`` after."""
    top = module_name.partition(".")[0]
    module = sys.modules.get(top)
    if module is None or top in ("__main__", "mergekit") or top in _installed_packages():
        return False  # (__main__ is pickled by value anyway)
    cloudpickle.register_pickle_by_value(module)
    return True


@functools.cache
def _installed_packages() -> frozenset[str]:
    """The top-level packages installed distributions provide (read once per process)."""
    return frozenset(importlib.metadata.packages_distributions())
