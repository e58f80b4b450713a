"""The driver tier's MERGE without an index, and with a table as its source (docs/architecture.md, "The driver
tier"): a small target of a connector read through page sources (the memory connector, sqldb without a key) or from
small local files (a journal table without a key) is read whole in the engine's process; a source table the driver reads (a scan of one table) is read there too. Every
statement runs on both tiers (``SET SESSION driver_tier``) on a fresh copy of the same tables, and the two must agree
in rows, counts and errors; what the driver declines (too many rows, the target as its own source, a type it does
not compare) runs on Spark with the same result."""

from __future__ import annotations

import datetime as dt
import itertools

import pyarrow as pa
import pytest

from mergekit import Engine
from mergekit.errors import MergekitError
from mergekit.planner import cost

from .test_insert_arrow import spark_jobs

_names = itertools.count()

TARGET = "CREATE TABLE {t} (id integer, v varchar, n integer NOT NULL)"
SOURCE = "CREATE TABLE {s} (id integer, v varchar, n integer)"
TARGET_ROWS = "INSERT INTO {t} VALUES " + ", ".join(f"({i}, 'v{i}', {i})" for i in range(1, 11))
SOURCE_ROWS = "INSERT INTO {s} VALUES (2, 'x', 20), (5, 'y', 50), (11, 'z', 110), (NULL, 'w', 0)"
ARROW_SOURCE = pa.table(
    {
        "id": pa.array([2, 5, 11, None], pa.int32()),
        "v": ["x", "y", "z", "w"],
        "n": pa.array([20, 50, 110, 0], pa.int32()),
    }
)

# (statement over target {t} and source table {s}, the tier it takes when the driver tier is on)
CASES = [
    (
        "MERGE INTO {t} AS t USING {s} AS s ON t.id = s.id WHEN MATCHED AND s.n > 30 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + s.n WHEN NOT MATCHED AND s.id IS NOT NULL THEN "
        "INSERT VALUES (s.id, s.v, s.n)",
        "driver",
    ),
    ("MERGE INTO {t} USING {s} ON {t}.id = {s}.id WHEN MATCHED THEN UPDATE SET n = {s}.n", "driver"),
    (
        "MERGE INTO {t} AS t USING {s} AS s(k, w, m) ON s.k = t.id WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.k, 0)",
        "driver",
    ),  # a NULL key (no match): inserted as a row with a NULL id
    (
        "MERGE INTO {t} AS t USING {s} AS s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
        "driver",
    ),
    ("MERGE INTO {t} AS t USING {s} AS s ON t.v = s.v WHEN MATCHED THEN DELETE", "driver"),  # a string key
    (
        "MERGE INTO {t} AS t USING (VALUES (3, 'a'), (3, 'b')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
        "driver",
    ),  # two source rows for one target row
    (
        "MERGE INTO {t} AS t USING (VALUES (3, 'a'), (3, 'b'), (30, 'c'), (30, 'd')) s(id, v) ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 0)",
        "driver",
    ),  # insert only: the matched rows change nothing
    (
        "MERGE INTO {t} AS t USING (VALUES (4, 2147483647)) s(id, n) ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = t.n + s.n",
        "driver",
    ),  # an overflow
    (
        "MERGE INTO {t} AS t USING (VALUES (4, 'p'), (40, 'q')) s(id, v) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 1)",
        "driver",
    ),
    ("UPDATE {t} SET n = n * 10 WHERE id IN (1, 2, 99)", "driver"),
    ("DELETE FROM {t} WHERE id = 7 AND n > 1", "driver"),
    # no key named: every row of the table read whole, the WHERE evaluated in Arrow
    ("UPDATE {t} SET n = n + 100, v = NULL WHERE n > 8 OR v = 'v2'", "driver"),
    ("UPDATE {t} AS x SET n = -x.n", "driver"),
    ("DELETE FROM {t} WHERE n >= 3 AND n <= 6 AND v <> 'v4'", "driver"),
    ("DELETE FROM {t}", "driver"),
    ("UPDATE {t} SET n = NULL WHERE id > 9", "driver"),  # NOT NULL
    ("UPDATE {t} SET n = n * 1000000000 WHERE id > 2", "driver"),  # an overflow
    ("DELETE FROM {t} WHERE n / (id - 5) > 0", "driver"),  # a division by zero on one row
    ("UPDATE {t} SET n = 1 WHERE v IN (SELECT v FROM {s})", "spark"),
    ("UPDATE {t} SET v = upper(v) WHERE id > 5", "spark"),
    # what the driver leaves to Spark
    ("MERGE INTO {t} AS t USING {t} AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = s.n + 1", "spark"),
    ("MERGE INTO {t} AS t USING (SELECT * FROM {s}) AS s ON t.id = s.id WHEN MATCHED THEN DELETE", "spark"),
    ("MERGE INTO {t} AS t USING {s} AS s ON t.id = s.id AND t.n > 3 WHEN MATCHED THEN DELETE", "spark"),
    ("MERGE INTO {t} AS t USING {s} AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = upper(s.v)", "spark"),
    ("MERGE INTO {t} AS t USING {s} AS s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE", "spark"),
    # concatenation in Arrow (NULL when an operand is); of a double or timestamp, Spark's
    ("UPDATE {t} SET v = v || '!' || v WHERE id < 4", "driver"),
    (
        "MERGE INTO {t} AS t USING {s} AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = concat(t.v, '/', s.v) "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v || NULL, 1)",
        "driver",
    ),
    ("UPDATE {t} SET v = NULL || v WHERE v || 'x' = 'v3x'", "driver"),
    ("UPDATE {t} SET v = v || n WHERE id = 3", "driver"),  # n as CAST(n AS VARCHAR) prints it (an extension)
    ("UPDATE {t} SET v = v || (n * 1.5E0) WHERE id = 3", "spark"),  # a double: Trino's 4.5E0, by Spark
]


# every case memory into memory; the other pairs, what reaches their connectors (a source and a target read whole)
EVERY_CASE = ("lake.default.t", "lake.default.s")
SOME = [0, 2, 4, 9, 11, 12, 14, 20]


def _catalogs(tmp_path) -> dict:
    return {
        "lake": {"connector": "memory"},
        "other": {"connector": "memory", "paradigm": "CHANGE_ONLY_UPDATED_COLUMNS"},
        "j": {"connector": "journal", "warehouse": str(tmp_path / "wh")},
        "db": {"connector": "sqldb", "uri": f"sqlite:///{tmp_path / 'db.sqlite'}"},
    }


def _outcome(engine: Engine, sql: str, tier: str, target: str, source: str) -> tuple:
    """The statement on new copies of the tables: (tier, row count, target rows) or (error, code, message, rows)."""
    n = next(_names)
    t, s = f"{target}{n}", f"{source}{n}"
    engine.execute(TARGET.format(t=t))
    engine.execute(TARGET_ROWS.format(t=t))
    if source == "arrow":  # the caller's Arrow table (register_arrow), the rows of SOURCE_ROWS
        engine.register_arrow(s, ARROW_SOURCE)
    else:
        engine.execute(SOURCE.format(s=s))
        engine.execute(SOURCE_ROWS.format(s=s))
    engine.execute(f"SET SESSION driver_tier = '{tier}'")
    short = {t: "{t}", s: "{s}", t.split(".")[-1]: "{t}", s.split(".")[-1]: "{s}"}
    try:
        result = engine.execute(sql.format(t=t, s=s))
        outcome: tuple = (result.metrics.get("tier"), result.row_count)
    except MergekitError as err:
        message = str(err)
        for name, placeholder in short.items():
            message = message.replace(name, placeholder)
        outcome = ("error", err.code, message)
    finally:
        engine.execute("RESET SESSION driver_tier")
    rows = engine.execute(f"SELECT * FROM {t}").rows()
    return (*outcome, sorted(rows, key=repr))


@pytest.mark.parametrize(
    "target, source",
    [
        ("lake.default.t", "lake.default.s"),  # memory into memory
        ("other.default.t", "lake.default.s"),  # CHANGE_ONLY_UPDATED_COLUMNS
        ("lake.default.t", "j.default.s"),  # a journal table as the source (its small files read by the driver)
        ("db.main.t", "lake.default.s"),  # sqldb without a primary key: read whole through its page sources
        ("j.default.t", "lake.default.s"),  # a small journal table without a key: its local files read whole
        ("lake.default.t", "arrow"),  # the caller's Arrow table (register_arrow): no DataFrame on the driver tier
    ],
)
def test_a_merge_without_an_index_or_from_a_table_agrees_on_both_tiers(spark, tmp_path, target, source) -> None:
    engine = Engine(spark=spark, catalogs=_catalogs(tmp_path))
    try:
        for i, (sql, tier) in enumerate(CASES):
            if (target, source) != EVERY_CASE and i not in SOME:
                continue
            if target.startswith("db.") and sql.startswith("DELETE"):
                tier = None  # sqldb deletes by itself (apply_delete)
            driver = _outcome(engine, sql, "auto", target, source)
            on_spark = _outcome(engine, sql, "off", target, source)
            assert driver[1:] == on_spark[1:], sql
            assert on_spark[0] in ("spark", "error", None), sql
            assert driver[0] in (tier, "error"), (sql, driver)
    finally:
        engine.close()


def test_a_journal_target_with_a_table_source_is_looked_up_on_the_driver(spark, tmp_path) -> None:
    """A journal table keeps its index; its source a memory table the driver reads: no Spark job at all."""
    engine = Engine(spark=spark, catalogs=_catalogs(tmp_path))
    try:
        engine.execute("CREATE TABLE j.default.p (id integer, v varchar, PRIMARY KEY (id))")
        engine.execute("INSERT INTO j.default.p VALUES (1, 'a'), (2, 'b')")
        engine.execute("CREATE TABLE lake.default.c (id integer, v varchar)")
        engine.execute("INSERT INTO lake.default.c VALUES (2, 'B'), (3, 'C')")
        merge = (
            "MERGE INTO j.default.p t USING lake.default.c s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"
        )
        with spark_jobs(spark) as jobs:
            result = engine.execute(merge)
        assert (result.row_count, result.metrics["tier"], jobs) == (2, "driver", [])
        assert "the connector's index on id" in engine.execute("EXPLAIN " + merge).rows()[0][0]
        assert sorted(engine.execute("SELECT * FROM j.default.p").rows()) == [(1, "a"), (2, "B"), (3, "C")]
    finally:
        engine.close()


def test_an_arrow_source_merges_into_a_journal_table_without_spark_and_as_spark_would(
    spark, tmp_path, monkeypatch
) -> None:
    """``register_arrow``: a CDC batch of Arrow rows MERGEd by the journal's index on the driver, no Spark job; a
    column the driver does not compare (a timestamp), a large string or more rows than ``DRIVER_ARROW_MAX_ROWS``
    has Spark read the source (a DataFrame made of the table), which means the same rows, in a caller's session of
    another zone too."""
    engine = Engine(spark=spark, catalogs=_catalogs(tmp_path))
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        engine.execute("CREATE TABLE j.default.q (id bigint, v varchar, at timestamp(6), PRIMARY KEY (id))")
        engine.execute("INSERT INTO j.default.q VALUES (1, 'a', NULL), (2, 'b', NULL)")
        engine.register_arrow("batch", pa.table({"id": pa.array([2, 3], pa.int64()), "v": ["B", "C"]}))
        merge = (
            "MERGE INTO j.default.q t USING batch s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
        )
        with spark_jobs(spark) as jobs:
            result = engine.execute(merge)
        assert (result.row_count, result.metrics["tier"], jobs) == (2, "driver", [])
        # two rows: more than the driver tier reads as they are, and (a DataFrame's keys) more than it collects
        monkeypatch.setattr(cost, "DRIVER_ARROW_MAX_ROWS", 1)
        monkeypatch.setattr(cost, "DRIVER_LOOKUP_MAX_KEYS", 1)
        engine.register_arrow("batch", pa.table({"id": pa.array([2, 4], pa.int64()), "v": ["B", "D"]}))
        with spark_jobs(spark) as jobs:
            result = engine.execute(merge)
        assert (result.row_count, result.metrics["tier"], bool(jobs)) == (2, "spark", True)
        engine.execute("DELETE FROM j.default.q WHERE id = 4")
        monkeypatch.undo()
        spark.conf.set("spark.sql.session.timeZone", "America/New_York")
        stamped = pa.table(
            {
                "id": pa.array([1, 3], pa.int64()),
                "v": pa.array(["A", "c"], pa.large_string()),
                "at": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5), None], pa.timestamp("us")),
            }
        )
        engine.register_arrow("batch", stamped)  # (registered again: replaces the first)
        with spark_jobs(spark) as jobs:
            result = engine.execute(
                "MERGE INTO j.default.q t USING batch s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v, at = s.at"
            )
        assert result.row_count == 2 and jobs  # (the source collected by Spark, then looked up on the driver)
        rows = sorted(engine.execute("SELECT id, v, CAST(at AS varchar) FROM j.default.q").rows())
        assert rows == [(1, "A", "2024-01-02 03:04:05.000000"), (2, "B", None), (3, "c", None)]
        engine.unregister_dataframe("batch")
        with pytest.raises(MergekitError) as err:
            engine.execute(merge)
        assert err.value.code.name == "TABLE_NOT_FOUND"
        with pytest.raises(MergekitError) as err:
            engine.register_arrow("batch", {"id": [1]})  # type: ignore[arg-type]
        assert str(err.value) == "[INVALID_ARGUMENTS] register_arrow takes a pyarrow Table or RecordBatch, not dict"
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
        engine.close()


def test_a_target_larger_than_the_driver_reads_runs_on_spark_and_writes_once(spark, tmp_path, monkeypatch) -> None:
    """The driver finds the table too large while reading it: the transaction is aborted and the statement runs on
    Spark, with one commit of the right rows."""
    engine = Engine(spark=spark, catalogs=_catalogs(tmp_path))
    try:
        engine.execute("CREATE TABLE lake.default.big (id integer, v varchar)")
        engine.execute("INSERT INTO lake.default.big VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        merge = (
            "MERGE INTO lake.default.big t USING (VALUES (2, 'B'), (4, 'D')) s(id, v) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"
        )
        assert "the table read whole through its splits" in engine.execute("EXPLAIN " + merge).rows()[0][0]
        monkeypatch.setattr(cost, "DRIVER_SCAN_MAX_ROWS", 2)
        result = engine.execute(merge)
        assert (result.row_count, result.metrics["tier"]) == (2, "spark")
        rows = sorted(engine.execute("SELECT * FROM lake.default.big").rows())
        assert rows == [(1, "a"), (2, "B"), (3, "c"), (4, "D")]
    finally:
        engine.close()
