"""Streams as catalog objects (issue 17, item 1) through the Engine on the journal catalog: CREATE/DROP STREAM,
SHOW STREAMS, DESCRIBE, INSERT with monotonicity enforced at commit, what a stream refuses, and the seed's
queries over the seed's data (stream.md: Orders, rows emitted in arrival order, windows in emission order)."""

from __future__ import annotations

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode
from tests.helpers import fails

from .seed_orders import ORDERS, orders_lake, ts

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory: pytest.TempPathFactory) -> Engine:
    # the seed's orders in three commits (one INSERT is one commit: one offset of the stream)
    engine = orders_lake(spark, str(tmp_path_factory.mktemp("w")), products=True)
    yield engine
    engine.close()


def test_the_seeds_queries_in_arrival_and_emission_order(lake: Engine) -> None:
    assert lake.execute("SELECT STREAM * FROM Orders").rows() == [(ts(t), p, o, u) for t, p, o, u in ORDERS]
    assert lake.execute("SELECT STREAM * FROM Orders WHERE units > 3").rows() == [
        (ts(t), p, o, u) for t, p, o, u in ORDERS if u > 3
    ]
    # tumbling windows by a streaming GROUP BY (the doc's units 7 for product 20 is an erratum: the data says 2)
    hourly = (
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS rowtime, productId, COUNT(*) AS c, SUM(units) AS units "
        "FROM Orders GROUP BY FLOOR(rowtime TO HOUR), productId"
    )
    assert lake.execute(hourly).rows() == [
        (ts("10:00:00"), 10, 1, 1),
        (ts("10:00:00"), 20, 1, 2),
        (ts("10:00:00"), 30, 2, 24),
        (ts("11:00:00"), 10, 3, 11),
        (ts("11:00:00"), 40, 1, 12),
    ]
    expected = [(ts("10:00:00"), 30), (ts("11:00:00"), 10), (ts("11:00:00"), 40)]
    having = (
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS rowtime, productId FROM Orders "
        "GROUP BY FLOOR(rowtime TO HOUR), productId HAVING COUNT(*) > 2 OR SUM(units) > 10"
    )
    assert lake.execute(having).rows() == expected
    inner = (
        "SELECT FLOOR(rowtime TO HOUR) AS rowtime, productId, COUNT(*) AS c, SUM(units) AS su FROM Orders "
        "GROUP BY FLOOR(rowtime TO HOUR), productId"
    )
    # sub-query and WITH: the same rows (STREAM only matters at the top)
    assert lake.execute(f"SELECT STREAM rowtime, productId FROM ({inner}) WHERE c > 2 OR su > 10").rows() == expected
    with_query = f"WITH t AS ({inner}) SELECT STREAM rowtime, productId FROM t WHERE c > 2 OR su > 10"
    assert lake.execute(with_query).rows() == expected
    # GROUPING SETS: every set has the monotonic key (the hour); the hour's total is a set of its own
    sets = lake.execute(
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS h, productId, COUNT(*) AS c FROM Orders "
        "GROUP BY FLOOR(rowtime TO HOUR), GROUPING SETS ((productId), ())"
    ).rows()
    assert sets == [
        (ts("10:00:00"), None, 4),
        (ts("10:00:00"), 10, 1),
        (ts("10:00:00"), 20, 1),
        (ts("10:00:00"), 30, 2),
        (ts("11:00:00"), None, 4),
        (ts("11:00:00"), 10, 3),
        (ts("11:00:00"), 40, 1),
    ]
    # a stream joined to a table
    joined = lake.execute(
        "SELECT STREAM o.rowtime, p.name FROM Orders AS o JOIN Products AS p ON o.productId = p.productId "
        "WHERE o.units > 10"
    ).rows()
    assert joined == [(ts("10:18:07"), "brush"), (ts("11:09:30"), "glue")]


def test_ddl_show_and_describe(lake: Engine) -> None:
    assert lake.execute("SHOW STREAMS").rows() == [("orders",)]
    assert ("products",) in lake.execute("SHOW TABLES").rows() and ("orders",) in lake.execute("SHOW TABLES").rows()
    assert lake.execute("DESCRIBE Orders").rows()[0] == ("rowtime", "timestamp", "monotonic", "")
    lake.execute("CREATE STREAM ticks (seq BIGINT MONOTONIC DESCENDING, v VARCHAR) WITH (slack = 2, history = true)")
    assert lake.execute("DESCRIBE ticks").rows()[0] == ("seq", "bigint", "monotonic descending", "")
    lake.execute("INSERT INTO ticks VALUES (10, 'a'), (9, 'b')")
    lake.execute("INSERT INTO ticks VALUES (11, 'late but within the slack')")
    fails(lake, "INSERT INTO ticks VALUES (12, 'x')", ErrorCode.CONSTRAINT_VIOLATION, "is monotonic: 12 is older")
    # history = true: the stream is also a table
    assert lake.execute("SELECT count(*) FROM ticks").rows() == [(3,)]
    fails(lake, "CREATE STREAM ticks (seq BIGINT)", ErrorCode.TABLE_ALREADY_EXISTS, "Stream 'lake.default.ticks'")
    lake.execute("CREATE STREAM IF NOT EXISTS ticks (seq BIGINT)")
    fails(lake, "DROP TABLE ticks", ErrorCode.NOT_SUPPORTED, "is a stream: use DROP STREAM")
    fails(lake, "DROP STREAM Products", ErrorCode.NOT_SUPPORTED, "is a table: use DROP TABLE")
    lake.execute("DROP STREAM ticks")
    lake.execute("DROP STREAM IF EXISTS ticks")
    assert lake.execute("SHOW STREAMS").rows() == [("orders",)]


@pytest.mark.parametrize(
    ("sql", "code", "text"),
    [
        ("CREATE STREAM s (k INTEGER, PRIMARY KEY (k))", ErrorCode.NOT_SUPPORTED, "A stream cannot have a primary key"),
        ("CREATE STREAM s (k INTEGER) WITH (retention = 1)", ErrorCode.INVALID_TABLE_PROPERTY, "'retention' does not"),
        ("CREATE STREAM s (k VARCHAR MONOTONIC)", ErrorCode.TYPE_MISMATCH, "must be a timestamp, date or integer"),
        (
            "CREATE STREAM s (k INTEGER MONOTONIC) WITH (slack = INTERVAL '1' HOUR)",
            ErrorCode.INVALID_TABLE_PROPERTY,
            "slack",
        ),
        ("CREATE STREAM s (rowtime TIMESTAMP) WITH (slack = -1)", ErrorCode.INVALID_TABLE_PROPERTY, "slack"),
    ],
)
def test_invalid_stream_definitions(lake: Engine, sql: str, code: ErrorCode, text: str) -> None:
    fails(lake, sql, code, text)
    assert lake.execute("SHOW STREAMS").rows() == [("orders",)]


def test_rows_only_arrive_in_monotonic_order(lake: Engine) -> None:
    before = lake.execute("SELECT STREAM * FROM Orders").rows()
    older = "INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 11:30:00', 1, 1, 1), (TIMESTAMP '2015-02-15 10:00:00', 1, 2, 1)"
    fails(
        lake,
        older,
        ErrorCode.CONSTRAINT_VIOLATION,
        "Column 'ROWTIME' of stream 'ORDERS' is monotonic: 2015-02-15 10:00:00 is older than 2015-02-15 11:24:11",
    )
    fails(lake, "INSERT INTO Orders VALUES (NULL, 1, 1, 1)", ErrorCode.CONSTRAINT_VIOLATION, "NULL")
    for sql in [
        "DELETE FROM Orders WHERE units > 3",
        "UPDATE Orders SET units = 0",
        "MERGE INTO Orders o USING Products p ON o.productId = p.productId WHEN MATCHED THEN DELETE",
        "TRUNCATE TABLE Orders",
        "INSERT OVERWRITE Orders SELECT * FROM Orders",
    ]:
        fails(lake, sql, ErrorCode.STREAM_NOT_ALLOWED, "Stream 'ORDERS' is append-only")
    assert lake.execute("SELECT STREAM * FROM Orders").rows() == before


def test_streams_need_a_connector_that_stores_them(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    fails(engine, "CREATE STREAM s (rowtime TIMESTAMP)", ErrorCode.NOT_SUPPORTED, "does not support streams")
    assert engine.execute("SHOW TABLES").rows() == []
