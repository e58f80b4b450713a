"""Large query results: the command line streams rows and stops at ``--max-rows``; ``Result`` iteration,
``to_pandas()`` and streamed results in Python; ``mergekit run`` errors name the file line and statement."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError

from .clirun import mergekit, no_traceback, table_rows

pytestmark = pytest.mark.spark

ROWS = 200_000


@pytest.fixture
def big(spark, tmp_path):
    """A warehouse with ``big``: ids 1..200000 and a label, written in this process."""
    path = tmp_path / "wh"
    engine = Engine.local(warehouse=str(path))
    engine.execute("CREATE TABLE big (id BIGINT, label VARCHAR)")
    # sequence() holds at most 10,000 entries (Trino's limit): ids are a * 1000 + b
    engine.execute(
        "INSERT INTO big SELECT a * 1000 + b, 'row ' || CAST(a * 1000 + b AS VARCHAR) "
        f"FROM UNNEST(sequence(0, {ROWS // 1000 - 1})) x(a) CROSS JOIN UNNEST(sequence(1, 1000)) y(b)"
    )
    engine.close()
    return path


def test_sql_shows_the_first_1000_rows_with_a_note_and_run_max_rows_0_shows_all(big, tmp_path):
    proc = mergekit("--warehouse", str(big), "sql", "SELECT id, label FROM big ORDER BY id")
    assert proc.returncode == 0, proc.stderr
    no_traceback(proc)
    rows = table_rows(proc.stdout)
    assert rows[0] == ["id", "label"]
    assert rows[1:] == [[str(i), f"row {i}"] for i in range(1, 1001)]
    assert "(first 1000 rows, " in proc.stdout
    assert "Output limited to the first 1000 rows; --max-rows N changes the limit (0: no limit)." in proc.stderr

    # A file: every row with --max-rows 0 (one table, blocks of rows that line up), then an error that names
    # the file, the line where its statement starts (past its comment) and the statement's number.
    script = tmp_path / "monthly.sql"
    script.write_text(
        "-- all of them\n"
        "SELECT id, label FROM big ORDER BY id;\n"
        "\n"
        "-- then a mistake\n"
        "UPDATE big\n"
        "   SET label = 'x'\n"
        " WHERE nope = 1;\n"
        "DELETE FROM big;\n"
    )
    proc = mergekit("--warehouse", str(big), "run", str(script), "--max-rows", "0")
    assert proc.returncode == 1
    no_traceback(proc)
    rows = table_rows(proc.stdout)
    assert rows[0] == ["id", "label"]
    assert rows[1:] == [[str(i), f"row {i}"] for i in range(1, ROWS + 1)]
    assert proc.stdout.count("| id ") == 1, "one table: the blocks after the first have no header"
    assert f"({ROWS} rows, " in proc.stdout
    assert "Output limited" not in proc.stderr
    assert f"{script}:5 (statement 2): [COLUMN_NOT_FOUND]" in proc.stderr, proc.stderr
    assert "DELETE" not in proc.stdout


def test_result_rows_iteration_pandas_and_streamed_results(spark):
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("CREATE TABLE t (id BIGINT, name VARCHAR, amount DECIMAL(10,2))")
    engine.execute("INSERT INTO t VALUES (1, 'a', 1.50), (2, NULL, 2.25), (3, 'c', NULL)")
    query = "SELECT id, name, amount FROM t ORDER BY id"

    res = engine.execute(query)
    assert res.table is not None and res.source is None  # embedders get the rows collected, as before
    assert res.columns == ["id", "name", "amount"]
    assert [row for row in res] == res.rows()
    assert res.rows()[1][:2] == (2, None)
    frame = res.to_pandas()
    assert list(frame.columns) == ["id", "name", "amount"]
    assert frame["id"].tolist() == [1, 2, 3]
    assert frame["name"].tolist()[0] == "a"
    assert [b.num_rows for b in res.batches(2)] == [2]

    small = engine.execute(query, stream=True)  # a small table read by the driver tier: the result holds its rows
    assert (small.metrics["tier"], list(small)) == ("driver", res.rows())
    engine.execute("SET SESSION driver_tier = 'off'")  # from here on Spark's reading, a partition at a time
    streamed = engine.execute(query, stream=True)
    assert streamed.table is None and streamed.is_query
    assert streamed.columns == ["id", "name", "amount"]
    # the statement's views are gone; the streamed result still reads its rows
    assert not [t.name for t in spark.catalog.listTables() if t.name.startswith("mk_")]
    assert sum(b.num_rows for b in streamed.batches(2)) == 2
    assert list(streamed) == res.rows()
    assert streamed.to_arrow().equals(res.to_arrow())
    assert streamed.to_pandas().equals(frame)
    assert engine.execute("SELECT * FROM t WHERE id > 5", stream=True).to_arrow().schema == res.to_arrow().schema
    # a streamed read plans its file partitions small (4 MB) and leaves the embedder's session setting as it was
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key, None)
    try:
        for setting in (None, "1m", "256m"):
            if setting is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, setting)
            assert list(engine.execute(query, stream=True)) == res.rows()
            assert spark.conf.get(key, None) == setting
    finally:
        spark.conf.unset(key) if before is None else spark.conf.set(key, before)

    # DML results keep their shape
    update = engine.execute("UPDATE t SET amount = 0 WHERE id = 3")
    assert update.row_count == 1 and list(update) == [(1,)] and not update.is_query

    # a query's runtime error surfaces while its rows are read, as a coded error
    failing = engine.execute("SELECT id / (id - 2) FROM t", stream=True)
    with pytest.raises(MergekitError) as err:
        list(failing)
    assert err.value.code is ErrorCode.DIVISION_BY_ZERO
    assert isinstance(res.to_arrow(), pa.Table)
