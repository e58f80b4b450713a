"""The embedding API of DESIGN.md §4."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode
from tests.helpers import assert_rows


def test_engine_local_reuses_the_active_session(spark, tmp_path) -> None:
    engine = Engine.local(warehouse=str(tmp_path / "wh"))
    assert engine.spark is spark
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    engine.execute("CREATE TABLE t (a INTEGER)")
    assert ("t",) in engine.execute("SHOW TABLES").rows()


def test_results_expose_rows_columns_and_arrow(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    results = engine.execute_script(
        "CREATE TABLE t (a INTEGER, b VARCHAR); INSERT INTO t VALUES (1, 'x'), (2, NULL); SELECT a, b FROM t ORDER BY a"
    )
    assert [r.statement for r in results] == ["CREATE TABLE", "INSERT", "SELECT"]
    assert results[0].row_count is None and results[1].row_count == 2 and results[2].row_count is None
    query = results[2]
    assert query.columns == ["a", "b"]
    assert query.rows() == [(1, "x"), (2, None)]
    table = query.to_arrow()
    assert isinstance(table, pa.Table) and table.num_rows == 2
    assert results[1].to_arrow().to_pydict() == {"rows": [2]}


def test_dates_and_timestamps_python_cannot_hold_fail_by_name_and_arrow_keeps_them(spark) -> None:
    """Issue 26: a DATE or TIMESTAMP beyond years 1 to 9999 (which Spark and Arrow hold) is refused by ``rows()``
    and iteration with a coded error naming the column, the value and the range, as Trino's and PostgreSQL's
    Python clients refuse it; ``to_arrow()`` returns it, and in-range rows of the same query read as usual."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    result = engine.execute(
        "SELECT n, date_add('day', n, DATE '9999-12-31') AS d, "
        "TIMESTAMP '0001-01-01 00:00:00' - n * INTERVAL '1' SECOND AS t FROM (VALUES 0, 1) v(n) ORDER BY n"
    )
    with pytest.raises(MergekitError) as refused:
        result.rows()
    assert str(refused.value) == (
        "[NUMERIC_VALUE_OUT_OF_RANGE] Column d holds DATE 10000-01-01, beyond what Python's datetime holds (years 1 to "
        "9999): Result.to_arrow() holds it, or CAST(d AS VARCHAR) in the query"
    )
    with pytest.raises(MergekitError) as refused:
        list(engine.execute("SELECT t FROM (VALUES TIMESTAMP '0001-01-01 00:00:00' - INTERVAL '1' SECOND) v(t)"))
    assert refused.value.code is ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE
    assert "Column t holds TIMESTAMP " in str(refused.value) and "0000-12-31 23:59:59" in str(refused.value)
    assert result.to_arrow().column("d").cast(pa.string()).to_pylist() == ["9999-12-31", "10000-01-01"]
    assert engine.execute("SELECT CAST(DATE '9999-12-31' + INTERVAL '1' DAY AS VARCHAR)").rows() == [("+10000-01-01",)]


def test_table_returns_a_dataframe_of_the_current_state(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute_script("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2)")
    df = engine.table("lake.default.t")
    assert sorted(r.a for r in df.collect()) == [1, 2]


def test_merge_into_builder_with_a_dataframe_source(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute_script("CREATE TABLE t (id BIGINT, v VARCHAR); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    source = spark.createDataFrame([(1, "A", "U"), (2, None, "D"), (4, "D", "U")], "id long, v string, op string")
    result = (
        engine.merge_into("t", source=source, on="t.id = s.id", source_alias="s")
        .when_matched_delete(condition="s.op = 'D'")
        .when_matched_update({"v": "s.v"})
        .when_not_matched_insert({"id": "s.id", "v": "s.v"})
        .execute()
    )
    assert result.row_count == 3
    assert result.metrics == {
        "inserted": 1,
        "updated": 1,
        "deleted": 1,
        "unchanged": 0,  # updates whose new values equal the old ones (counted, not written)
        "per_case": {
            0: {"inserted": 0, "updated": 0, "deleted": 1},
            1: {"inserted": 0, "updated": 1, "deleted": 0},
            2: {"inserted": 1, "updated": 0, "deleted": 0},
        },
        "sinks": result.metrics["sinks"],
        "writer_pids": result.metrics["writer_pids"],
        "scans": result.metrics["scans"],
        "strategy": "spark_join",  # the memory connector has no index
        "tier": "spark",
    }
    assert [s["table"] for s in result.metrics["scans"] if s.get("target")] == ["lake.default.t"]
    assert_rows(engine.execute("SELECT * FROM t").rows(), [(1, "A"), (3, "c"), (4, "D")])


def test_catalog_errors(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT * FROM other.default.t")
    assert info.value.code is ErrorCode.CATALOG_NOT_FOUND
    with pytest.raises(MergekitError) as info:
        Engine(spark=spark, catalogs={"x": {"connector": "memory", "paradigm": "SIDEWAYS"}})
    assert info.value.code is ErrorCode.INVALID_ARGUMENTS
    with pytest.raises(MergekitError) as info:
        Engine(spark=spark, catalogs={"x": {"connector": "no-such-connector"}})
    assert info.value.code is ErrorCode.CONNECTOR_NOT_FOUND


def test_ddl(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("CREATE SCHEMA sales")
    engine.execute(
        "CREATE TABLE sales.orders (id BIGINT NOT NULL, total DECIMAL(10,2), at TIMESTAMP(3) WITH TIME ZONE)"
    )
    assert engine.execute("DESCRIBE sales.orders").rows() == [
        ("id", "bigint", "not null", ""),
        ("total", "decimal(10, 2)", "", ""),
        ("at", "timestamp(3) with time zone", "", ""),
    ]
    with pytest.raises(MergekitError) as info:
        engine.execute("CREATE TABLE sales.orders (id BIGINT)")
    assert info.value.code is ErrorCode.TABLE_ALREADY_EXISTS
    engine.execute("CREATE TABLE IF NOT EXISTS sales.orders (id BIGINT)")
    engine.execute("ALTER TABLE sales.orders ADD COLUMN note VARCHAR")
    engine.execute("INSERT INTO sales.orders VALUES (1, 2.50, TIMESTAMP '2024-01-02 03:04:05 UTC', 'n')")
    assert engine.execute("SELECT id, total, note FROM sales.orders").rows()[0][2] == "n"
    assert engine.execute("SHOW TABLES FROM sales").rows() == [("orders",)]
    engine.execute("DROP TABLE sales.orders")
    engine.execute("DROP TABLE IF EXISTS sales.orders")
    with pytest.raises(MergekitError) as info:
        engine.execute("DROP TABLE sales.orders")
    assert info.value.code is ErrorCode.TABLE_NOT_FOUND
