"""Embedding mergekit into a SparkSession the user built (DESIGN.md §4: ``Engine(spark=...)``, ``Engine.local()``).

The user's session keeps its own configuration (mergekit applies its settings per statement and restores the
user's, also when a statement fails), and mergekit's Python tasks run an interpreter that imports mergekit even when
the session's workers start ``python3`` from PATH, which is not the virtualenv's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode

ANSI = "spark.sql.ansi.enabled"
TIME_ZONE = "spark.sql.session.timeZone"


@pytest.fixture
def user_settings(spark):
    """The shared session as a user configured it: New York time, ANSI off. Restored for the other tests."""
    saved = {key: spark.conf.get(key, None) for key in (ANSI, TIME_ZONE)}
    spark.conf.set(TIME_ZONE, "America/New_York")
    spark.conf.set(ANSI, "false")
    yield spark
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def _user_values(spark) -> tuple[str, str]:
    return spark.conf.get(TIME_ZONE), spark.conf.get(ANSI)


@pytest.mark.parametrize("connector", ["memory", "journal"])
def test_the_users_session_settings_survive_statements_and_failures(user_settings, tmp_path, connector) -> None:
    spark = user_settings
    config = {"connector": connector} if connector == "memory" else {"connector": connector, "warehouse": str(tmp_path)}
    engine = Engine(spark=spark, catalogs={"lake": config})
    try:
        assert _user_values(spark) == ("America/New_York", "false"), "constructing the engine changed the session"
        engine.execute("CREATE TABLE ev (id INTEGER, n INTEGER, at TIMESTAMP WITH TIME ZONE)")
        engine.execute("INSERT INTO ev VALUES (1, 2147483647, TIMESTAMP '2024-01-01 00:30:00 UTC')")
        assert _user_values(spark) == ("America/New_York", "false")

        # mergekit's semantics inside the statement: ANSI overflow is an error although the user turned it off,
        # and TIMESTAMP WITH TIME ZONE renders in UTC although the user's session is in New York
        with pytest.raises(MergekitError) as failed:
            engine.execute("UPDATE ev SET n = n + 1")
        assert failed.value.code is ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE
        assert _user_values(spark) == ("America/New_York", "false"), "a failed statement left mergekit's settings"
        assert engine.execute("SELECT CAST(at AS VARCHAR), n FROM ev").rows() == [
            ("2024-01-01 00:30:00.000 UTC", 2147483647)
        ]
        merged = engine.merge_into("ev", source=spark.sql("SELECT 1 AS id, 7 AS n"), on="ev.id = s.id")
        assert merged.when_matched_update({"n": "s.n"}).execute().row_count == 1
        assert _user_values(spark) == ("America/New_York", "false")

        # Engine.table(): analysed with mergekit's settings, so the user's session evaluates it with them
        df = engine.table("ev")
        assert _user_values(spark) == ("America/New_York", "false")
        assert df.selectExpr("id", "n").collect()[0].asDict() == {"id": 1, "n": 7}
        # the user's own queries run with the user's settings: ANSI off wraps around, New York time
        assert spark.sql("SELECT CAST(2147483647 AS INT) + CAST(id AS INT) AS x FROM range(1, 2)").first().x < 0
        hour = spark.sql("SELECT hour(TIMESTAMP '2024-01-01 00:30:00 UTC') AS h").first().h
        assert hour == 19
    finally:
        engine.close()
    assert _user_values(spark) == ("America/New_York", "false")


def test_settings_the_user_never_set_stay_unset(spark) -> None:
    saved = spark.conf.get(TIME_ZONE, None)
    spark.conf.unset(TIME_ZONE)
    try:
        engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
        engine.execute("CREATE TABLE t (a INTEGER)")
        with pytest.raises(MergekitError):
            engine.execute("SELECT a / 0 FROM (VALUES 1) v(a)")
        assert spark.conf.get(TIME_ZONE, None) is None  # unset again, not pinned to UTC
        engine.close()
    finally:
        if saved is not None:
            spark.conf.set(TIME_ZONE, saved)


def test_an_engine_without_catalogs_is_refused_saying_what_to_pass(spark) -> None:
    """Issue 26, row 15: tables that silently vanish at exit are worse than one line of configuration."""
    for make in (lambda: Engine(spark=spark), lambda: Engine(spark=spark, default_catalog="lake")):
        with pytest.raises(MergekitError) as refused:
            make()
        assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
        assert str(refused.value).startswith(
            "[INVALID_ARGUMENTS] Engine(...) needs catalogs=...: where its tables live"
        )
        assert "{'lake': {'connector': 'journal', 'warehouse': '/data/lake'}}" in str(refused.value)
        assert "Engine.local(warehouse='./warehouse')" in str(refused.value)


def test_engine_table_leaves_no_temporary_views_behind(spark, tmp_path: Path) -> None:
    """Issue 26, row 16: ``engine.table()`` fifty times adds nothing to the user's catalog, and every DataFrame it
    returned still reads the table as it was, also after later commits."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path)}})
    try:
        engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
        engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        before = sorted(t.name for t in spark.catalog.listTables())
        frames = [engine.table("t") for _ in range(50)]
        assert sorted(t.name for t in spark.catalog.listTables()) == before
        engine.execute("UPDATE t SET v = 'c' WHERE id = 2")
        assert sorted(tuple(r) for r in frames[0].collect()) == [(1, "a"), (2, "b")]
        assert frames[-1].where("id = 2").select("v").first().v == "b"
        assert sorted(tuple(r) for r in engine.table("t").collect()) == [(1, "a"), (2, "c")]
        assert sorted(t.name for t in spark.catalog.listTables()) == before
    finally:
        engine.close()


# A user program: the venv's python builds its own local session first, with python3 on PATH being an interpreter
# that cannot import mergekit (the virtualenv's base interpreter) and no PYSPARK_PYTHON, then embeds mergekit.
USER_PROGRAM = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    sc = spark.sparkContext
    out = {"python_exec": sc.pythonExec}
    try:  # the reported failure: the session's workers cannot import mergekit
        sc.parallelize([0], 1).map(lambda _: __import__("mergekit")).collect()
        out["workers_import_mergekit"] = True
    except Exception as exc:
        out["workers_import_mergekit"] = "no" if "No module named 'mergekit'" in str(exc) else str(exc)[-300:]

    from mergekit import Engine, MergekitError
    from mergekit.execution.session import probe_workers

    try:  # what Engine does on a cluster master, where it cannot hand the executors this interpreter
        probe_workers(spark)
    except MergekitError as exc:
        out["probe"] = str(exc)

    for connector in sys.argv[2:]:  # one program, one session: a table of each connector
        engine = Engine.local(warehouse=f"{sys.argv[1]}/{connector}", connector=connector)
        got = out[connector] = {}
        engine.execute("CREATE TABLE accounts (customer VARCHAR, purchases INTEGER)")
        engine.execute("INSERT INTO accounts VALUES ('Aaron', 5), ('Bill', 7)")
        got["update"] = engine.execute(
            "UPDATE accounts SET purchases = purchases + 1 WHERE customer = 'Bill'"
        ).row_count
        got["merge"] = engine.execute(
            "MERGE INTO accounts t USING (VALUES ('Aaron', 6), ('Ed', 7)) AS s(customer, purchases) "
            "ON t.customer = s.customer WHEN MATCHED THEN UPDATE SET purchases = s.purchases "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.customer, s.purchases)"
        ).row_count
        got["rows"] = engine.execute("SELECT * FROM accounts ORDER BY customer").rows()
        got["table"] = sorted(r.customer for r in engine.table("accounts").collect())
    # the user's session and its own Python functions still use the session's interpreter
    out["python_exec_after"] = sc.pythonExec
    out["user_worker"] = sc.parallelize([0], 1).map(lambda _: __import__("sys").executable).collect()[0]
    print("RESULT " + json.dumps(out))
    """
)


def test_engine_local_in_a_session_whose_workers_cannot_import_mergekit(tmp_path: Path) -> None:
    base = getattr(sys, "_base_executable", None)
    assert sys.prefix != sys.base_prefix and base, "the tests run in a virtualenv (make test)"
    path_dir = tmp_path / "bin"
    path_dir.mkdir()
    (path_dir / "python3").symlink_to(base)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "PYTHONPATH"))}
    env["PATH"] = f"{path_dir}{os.pathsep}{env.get('PATH', '')}"
    program = tmp_path / "user_program.py"
    program.write_text(USER_PROGRAM)
    proc = subprocess.run(
        [sys.executable, str(program), str(tmp_path / "warehouse"), "memory", "journal"],
        cwd=tmp_path,  # not the source tree: the workers must not find mergekit in their working directory
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(lines[-1].removeprefix("RESULT "))
    assert out["python_exec"] == "python3"
    assert out["workers_import_mergekit"] == "no", out  # the situation of the report is reproduced
    assert out["probe"].startswith("[CONFIGURATION_INVALID] The Spark session's Python workers run 'python3'")
    assert f"PYSPARK_PYTHON={sys.executable}" in out["probe"] and "No module named 'mergekit'" in out["probe"]
    for connector in ("memory", "journal"):
        got = out[connector]
        assert got["update"] == 1 and got["merge"] == 2, connector
        assert got["rows"] == [["Aaron", 6], ["Bill", 8], ["Ed", 7]], connector
        assert got["table"] == ["Aaron", "Bill", "Ed"], connector
    assert out["python_exec_after"] == "python3"
    assert out["user_worker"] == str(path_dir / "python3")


def test_engine_local_prints_nothing_while_spark_starts_but_an_error_that_stops_it(tmp_path: Path) -> None:
    """Issue 26, R7: ``Engine.local()`` printed Spark's start-up log ("Using Spark's default log4j profile", WARN
    NativeCodeLoader, "Setting default log level to WARN") on the user's terminal."""
    # upper(): a statement that needs Spark (``SELECT 1`` runs on the driver tier, which starts none)
    program = "from mergekit import Engine; print(Engine.local().execute('SELECT upper(\\'a\\') AS one').rows())"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "MERGEKIT_DRIVER_MEMORY")}
    proc = subprocess.run(
        [sys.executable, "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[('A',)]\n"
    assert proc.stderr == ""
    # a session that cannot start still says why, in Spark's words, before the exception
    proc = subprocess.run(
        [sys.executable, "-c", program],
        cwd=tmp_path,
        env={**env, "MERGEKIT_DRIVER_MEMORY": "100m"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    assert "ERROR SparkContext: Error initializing SparkContext." in proc.stderr
    assert "Insufficient driver memory" in proc.stderr
    assert "Using Spark's default log4j profile" not in proc.stderr and "WARN" not in proc.stderr


def test_a_local_sessions_python_workers_start_with_mergekit_loaded(spark) -> None:
    """Sessions mergekit starts fork their Python workers from a daemon that has imported mergekit
    (``mergekit.execution.worker_daemon``): a new worker (one per task that finds no idle worker, and after every
    task that raised) no longer spends 0.5-0.9 s of CPU importing pyarrow, pandas and mergekit. What the daemon
    loaded is frozen out of the garbage collector (the full collection after each task skips it)."""
    import gc

    assert spark.conf.get("spark.python.daemon.module") == "mergekit.execution.worker_daemon"
    loaded = spark.sparkContext.parallelize([0, 1], 2).map(lambda _: "mergekit.engine" in sys.modules).collect()
    assert loaded == [True, True]
    # every object the imports left (hundreds of thousands), not a handful
    frozen = spark.sparkContext.parallelize([0, 1], 2).map(lambda _: gc.get_freeze_count()).collect()
    assert min(frozen) > 100_000, frozen


def test_mergekit_spark_conf_is_read_as_spark_settings_and_a_bad_pair_is_refused_by_name(monkeypatch) -> None:
    from mergekit.execution.session import env_spark_conf

    monkeypatch.setenv("MERGEKIT_SPARK_CONF", " spark.executor.memory=3g\n spark.sql.codegen.wholeStage=false ")
    assert env_spark_conf() == {"spark.executor.memory": "3g", "spark.sql.codegen.wholeStage": "false"}
    # a value with spaces is quoted as in a shell
    monkeypatch.setenv("MERGEKIT_SPARK_CONF", "spark.driver.extraJavaOptions='-Xss4m -XX:+UseParallelGC' spark.a=b")
    assert env_spark_conf() == {"spark.driver.extraJavaOptions": "-Xss4m -XX:+UseParallelGC", "spark.a": "b"}
    refused = {
        "spark.driver.extraJavaOptions='-Xss4m": (
            '[INVALID_ARGUMENTS] MERGEKIT_SPARK_CONF holds "spark.driver.extraJavaOptions=\'-Xss4m": '
            "no closing quotation"
        ),
        "spark.executor.memory = 3g": (
            "[INVALID_ARGUMENTS] MERGEKIT_SPARK_CONF holds 'spark.executor.memory': each setting must be "
            "spark.<key>=<value>, separated by spaces"
        ),
    }
    for text, message in refused.items():
        monkeypatch.setenv("MERGEKIT_SPARK_CONF", text)
        with pytest.raises(MergekitError) as err:
            env_spark_conf()
        assert err.value.code is ErrorCode.INVALID_ARGUMENTS
        assert str(err.value) == message
