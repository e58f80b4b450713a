"""``Engine.insert_arrow``: an INSERT of Arrow rows, on the driver without a Spark job when every value reaches the
table unchanged, else as an ordinary INSERT; the same rows, checks and errors either way."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError


@pytest.fixture
def lake(spark, tmp_path) -> Iterator[Engine]:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh")}})
    yield engine
    engine.close()


@contextmanager
def spark_jobs(spark) -> Iterator[list[int]]:
    """The ids of the Spark jobs this thread started inside the block (filled in when it ends)."""
    sc = spark.sparkContext
    group = f"insert-arrow-probe-{id(sc)}-{dt.datetime.now().timestamp()}"
    sc.setJobGroup(group, "test probe")
    ids: list[int] = []
    try:
        yield ids
    finally:
        ids.extend(sc.statusTracker().getJobIdsForGroup(group))
        sc._jsc.sc().clearJobGroup()


def at(minute: int) -> dt.datetime:
    return dt.datetime(2026, 1, 1, 10, minute)


def orders(*rows: tuple[int, int, int]) -> pa.Table:
    return pa.table(
        {
            "rowtime": pa.array([at(m) for m, _, _ in rows], pa.timestamp("us")),
            "productid": pa.array([p for _, p, _ in rows], pa.int32()),  # widened to BIGINT losslessly
            "units": pa.array([u for _, _, u in rows], pa.int64()),
        }
    )


def test_a_stream_commit_without_a_spark_job_and_the_monotonic_check_kept(spark, lake):
    lake.execute("CREATE STREAM orders (rowtime TIMESTAMP, productid BIGINT, units BIGINT)")
    with spark_jobs(spark) as jobs:
        first = lake.insert_arrow("orders", orders((0, 30, 3), (5, 10, 1)))
        second = lake.insert_arrow("orders", orders((7, 20, 6)).to_batches()[0])
    assert jobs == []
    assert (first.row_count, second.row_count) == (2, 1)
    assert first.metrics["strategy"] == "driver_append" and first.metrics["inserted"] == 2
    rows = lake.execute("SELECT STREAM rowtime, productid, units FROM orders").rows()
    assert rows == [(at(0), 30, 3), (at(5), 10, 1), (at(7), 20, 6)]
    history = lake.execute("DESCRIBE HISTORY orders").rows()
    with pytest.raises(MergekitError) as info:  # older than what the stream holds: nothing written
        lake.insert_arrow("orders", orders((9, 1, 1), (6, 2, 2)))
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION and "monotonic" in str(info.value)
    assert lake.execute("DESCRIBE HISTORY orders").rows() == history
    assert len(lake.execute("SELECT STREAM * FROM orders").rows()) == 3


def test_the_sql_insert_of_the_same_rows_runs_a_spark_job(spark, lake):
    """The probe sees jobs: the test above cannot pass by accident."""
    lake.execute("CREATE STREAM orders (rowtime TIMESTAMP, productid BIGINT, units BIGINT)")
    with spark_jobs(spark) as jobs:
        lake.execute("INSERT INTO orders VALUES (TIMESTAMP '2026-01-01 10:00:00', 30, 3)")
    assert jobs != []


def test_table_rows_not_null_and_the_primary_key(lake):
    lake.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, amount DOUBLE, PRIMARY KEY (id))")
    data = pa.table({"ID": [2, 1], "amount": pa.array([1.5, 2.0], pa.float32())})  # names ignore case
    result = lake.insert_arrow("lake.default.t", data)
    assert result.metrics["strategy"] == "driver_append"
    assert sorted(lake.execute("SELECT id, name, amount FROM t").rows()) == [(1, None, 2.0), (2, None, 1.5)]
    with pytest.raises(MergekitError) as info:
        lake.insert_arrow("t", pa.table({"id": pa.array([3, None], pa.int64())}))
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
    assert str(info.value) == "[CONSTRAINT_VIOLATION] NULL value not allowed for NOT NULL column: id"
    with pytest.raises(MergekitError) as info:  # a key already in the table: the connector's own check
        lake.insert_arrow("t", pa.table({"id": [5, 1]}))
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
    assert sorted(r[0] for r in lake.execute("SELECT id FROM t").rows()) == [1, 2]


def test_bad_columns_and_bad_data_are_refused_by_name(lake):
    lake.execute("CREATE TABLE t (id BIGINT, name VARCHAR)")
    with pytest.raises(MergekitError) as info:
        lake.insert_arrow("t", pa.table({"id": [1], "nope": ["x"]}))
    assert str(info.value) == "[COLUMN_NOT_FOUND] Insert column name does not exist in target table: nope"
    with pytest.raises(MergekitError) as info:
        lake.insert_arrow("t", pa.table([pa.array([1]), pa.array([2])], names=["id", "ID"]))
    assert info.value.code is ErrorCode.DUPLICATE_COLUMN_NAME
    with pytest.raises(MergekitError) as info:
        lake.insert_arrow("t", [{"id": 1}])  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.INVALID_ARGUMENTS
    with pytest.raises(MergekitError) as info:
        lake.insert_arrow("missing", pa.table({"id": [1]}))
    assert info.value.code is ErrorCode.TABLE_NOT_FOUND
    assert lake.execute("SELECT count(*) FROM t").rows() == [(0,)]


def test_what_spark_evaluates_runs_as_an_ordinary_insert(lake):
    lake.execute(
        "CREATE TABLE t (id BIGINT, code VARCHAR(3), qty INTEGER DEFAULT 7, CONSTRAINT positive CHECK (id > 0))"
    )
    result = lake.insert_arrow("t", pa.table({"id": [1], "code": ["abc"]}))
    assert result.metrics["strategy"] != "driver_append"
    assert result.metrics["driver_append_declined"] == "the table has CHECK constraints"
    assert lake.execute("SELECT id, code, qty FROM t").rows() == [(1, "abc", 7)]  # the DEFAULT evaluated
    with pytest.raises(MergekitError) as info:
        lake.insert_arrow("t", pa.table({"id": [2, -1]}))
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION and "positive" in str(info.value)
    assert lake.execute("SELECT count(*) FROM t").rows() == [(1,)]
    lake.execute("CREATE TABLE u (id BIGINT, amount DOUBLE)")
    result = lake.insert_arrow("u", pa.table({"id": [12], "amount": pa.array([1], pa.int64())}))  # Spark casts
    assert result.metrics["driver_append_declined"] == "column amount needs a conversion from int64"
    assert lake.execute("SELECT id, amount FROM u").rows() == [(12, 1.0)]
    with pytest.raises(MergekitError) as info:  # what SQL refuses is refused: the same INSERT ran
        lake.insert_arrow("u", pa.table({"id": ["12"]}))
    assert str(info.value) == (
        "[TYPE_MISMATCH] Insert query has mismatched column types: Table: [bigint], Query: [varchar]"
    )


def test_a_zoned_timestamp_keeps_its_wall_clock_and_a_dataframe_what_its_session_shows(spark, lake):
    """An Arrow value with a zone into a TIMESTAMP column keeps its wall clock in that zone (Trino's cast: 10:00 at
    +05:00 stays 10:00); the same instant in a Spark DataFrame is what the session shows (05:00 in a UTC session).
    tests/engine/values/test_time_zones.py has the other zones and ways."""
    lake.execute("CREATE TABLE a (ts TIMESTAMP, id BIGINT)")
    value = dt.datetime(2024, 1, 1, 10, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    data = pa.table({"ts": pa.array([value], pa.timestamp("us", tz="+05:00")), "id": [1]})
    assert lake.insert_arrow("a", data).metrics["strategy"] == "driver_append"
    lake.register_dataframe("src", spark.createDataFrame(data.set_column(1, "id", pa.array([2]))))
    lake.execute("INSERT INTO a SELECT ts, id FROM src")
    rows = sorted(lake.execute("SELECT id, ts FROM a").rows())
    assert rows == [(1, dt.datetime(2024, 1, 1, 10, 0, 0, 123456)), (2, dt.datetime(2024, 1, 1, 5, 0, 0, 123456))]


def test_integers_read_as_int64_fit_narrower_columns_on_the_driver(lake, tmp_path):
    """pyarrow's CSV reader makes every integer column int64: values that fit an INTEGER / SMALLINT column are
    stored on the driver (no Spark job); one that does not is NUMERIC_VALUE_OUT_OF_RANGE, as the SQL INSERT of it
    is, and nothing is written."""
    import pyarrow.csv

    lake.execute("CREATE TABLE n (id INTEGER, qty SMALLINT, total BIGINT)")
    path = tmp_path / "n.csv"
    path.write_text("id,qty,total\n1,7,10000000000\n-2147483648,-32768,0\n")
    data = pyarrow.csv.read_csv(path)
    assert data.schema.field("id").type == pa.int64()
    assert lake.insert_arrow("n", data).metrics["strategy"] == "driver_append"
    assert sorted(lake.execute("SELECT id, qty, total FROM n").rows()) == [
        (-2147483648, -32768, 0),
        (1, 7, 10000000000),
    ]
    with pytest.raises(MergekitError) as info:
        lake.insert_arrow("n", pa.table({"id": [5, 3_000_000_000], "qty": [1, 2]}))
    assert str(info.value) == "[NUMERIC_VALUE_OUT_OF_RANGE] Out of range for integer: 3000000000 (column id)"
    with pytest.raises(MergekitError) as sql:
        lake.execute("INSERT INTO n (id, qty) VALUES (5, 1), (3000000000, 2)")
    assert sql.value.code is ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE
    assert lake.execute("SELECT count(*) FROM n").rows() == [(2,)]
