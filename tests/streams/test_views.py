"""Views over streams (seed 001's closure property: "views may be streamed") and a journal table's change feed as
a stream (``change_feed_stream``), through the Engine on the journal catalog, bounded runs."""

from __future__ import annotations

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode
from tests.helpers import fails

from .seed_orders import ORDERS, orders_lake, ts

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory: pytest.TempPathFactory) -> Engine:
    engine = orders_lake(spark, str(tmp_path_factory.mktemp("w")), products=True)
    # a view renaming the monotonic column, one with a group window, one over a view, a stream-table join
    engine.execute(
        "CREATE VIEW big (ts, product, units) AS SELECT rowtime, productId, units FROM Orders WHERE units > 3"
    )
    engine.execute(
        "CREATE VIEW hourly AS SELECT FLOOR(rowtime TO HOUR) AS hr, productId, SUM(units) AS units FROM Orders "
        "GROUP BY FLOOR(rowtime TO HOUR), productId"
    )
    engine.execute("CREATE VIEW bigger AS SELECT * FROM big WHERE units > 10")
    engine.execute(
        "CREATE VIEW named AS SELECT o.rowtime, p.name, o.units FROM Orders o JOIN Products p "
        "ON o.productId = p.productId"
    )
    engine.execute("CREATE VIEW products_view AS SELECT * FROM Products")
    yield engine
    engine.close()


BIG = [(ts(t), p, u) for t, p, _, u in ORDERS if u > 3]


def test_a_view_over_a_stream_is_a_stream(lake: Engine) -> None:
    assert lake.execute("SELECT STREAM * FROM big").rows() == BIG
    assert lake.execute("SELECT STREAM ts, units FROM bigger").rows() == [(t, u) for t, _, u in BIG if u > 10]
    assert lake.execute("SELECT STREAM * FROM (SELECT product FROM big) AS x").rows() == [(p,) for _, p, _ in BIG]
    assert lake.execute("SELECT STREAM name, units FROM named WHERE units > 10").rows() == [("brush", 20), ("glue", 12)]
    # modality applies to the expanded query (Calcite's messages)
    fails(lake, "SELECT * FROM big", ErrorCode.STREAM_NOT_ALLOWED, "Cannot convert stream 'ORDERS' to relation")
    fails(
        lake,
        "SELECT STREAM * FROM products_view",
        ErrorCode.STREAM_NOT_ALLOWED,
        "Cannot convert table 'PRODUCTS_VIEW' to stream",
    )
    assert len(lake.execute("SELECT * FROM products_view").rows()) == 4


def test_windows_through_views_and_with(lake: Engine) -> None:
    hourly = lake.execute("SELECT STREAM FLOOR(ts TO HOUR) AS h, SUM(units) FROM big GROUP BY FLOOR(ts TO HOUR)")
    assert hourly.rows() == [(ts("10:00:00"), 24), (ts("11:00:00"), 22)]
    tumbling = lake.execute(
        "SELECT STREAM TUMBLE_END(ts, INTERVAL '1' HOUR) AS e, COUNT(*) FROM big GROUP BY TUMBLE(ts, INTERVAL '1' HOUR)"
    )
    assert tumbling.rows() == [(ts("11:00:00"), 2), (ts("12:00:00"), 3)]
    # the view's own group window, streamed
    assert sorted(lake.execute("SELECT STREAM * FROM hourly").rows()) == [
        (ts("10:00:00"), 10, 1),
        (ts("10:00:00"), 20, 2),
        (ts("10:00:00"), 30, 24),
        (ts("11:00:00"), 10, 11),
        (ts("11:00:00"), 40, 12),
    ]
    assert lake.execute("WITH b AS (SELECT * FROM big) SELECT STREAM ts, units FROM b").rows() == [
        (t, u) for t, _, u in BIG
    ]
    fails(
        lake,
        "SELECT STREAM product, SUM(units) FROM big GROUP BY product",
        ErrorCode.STREAM_NOT_ALLOWED,
        "Streaming aggregation requires at least one monotonic expression",
    )


def test_a_tables_change_feed_as_a_stream(lake: Engine) -> None:
    lake.execute("CREATE TABLE stock (id INTEGER PRIMARY KEY, units INTEGER) WITH (change_feed_stream = true)")
    lake.execute("INSERT INTO stock VALUES (1, 10), (2, 20)")  # version 1
    lake.execute("UPDATE stock SET units = 11 WHERE id = 1")  # version 2: the new row
    lake.execute("DELETE FROM stock WHERE id = 2")  # version 3: not in the stream
    lake.execute("INSERT INTO stock VALUES (3, 30)")  # version 4
    rows = lake.execute("SELECT STREAM id, units, _change_type, _commit_version FROM stock").rows()
    assert rows == [(1, 10, "insert", 1), (2, 20, "insert", 1), (1, 11, "update", 2), (3, 30, "insert", 4)]
    # still a table: relational queries read its rows, and it keeps taking UPDATE / DELETE / MERGE
    assert lake.execute("SELECT * FROM stock ORDER BY id").rows() == [(1, 11), (3, 30)]
    # _commit_version is monotonic: a streaming aggregation may group by it
    per_commit = lake.execute("SELECT STREAM _commit_version, COUNT(*) FROM stock GROUP BY _commit_version")
    assert per_commit.rows() == [(1, 2), (2, 1), (4, 1)]
    # an ordinary table is not a stream (S49), until the property is set; DEFAULT turns it off again
    fails(
        lake, "SELECT STREAM * FROM Products", ErrorCode.STREAM_NOT_ALLOWED, "Cannot convert table 'PRODUCTS' to stream"
    )
    lake.execute("ALTER TABLE Products SET PROPERTIES change_feed_stream = true")
    assert [r[0] for r in lake.execute("SELECT STREAM productId FROM Products").rows()] == [10, 20, 30, 40]
    lake.execute("ALTER TABLE Products SET PROPERTIES change_feed_stream = DEFAULT")
    fails(
        lake, "SELECT STREAM * FROM Products", ErrorCode.STREAM_NOT_ALLOWED, "Cannot convert table 'PRODUCTS' to stream"
    )
    fails(
        lake,
        "ALTER TABLE Products SET PROPERTIES bogus = true",
        ErrorCode.INVALID_TABLE_PROPERTY,
        "table property 'bogus' does not exist. Valid properties: auto_compact, auto_compact_files, change_feed_stream",
    )
    fails(
        lake,
        "ALTER TABLE Orders SET PROPERTIES change_feed_stream = true",
        ErrorCode.INVALID_TABLE_PROPERTY,
        "is a stream already",
    )
    # a view over the table streams its change feed too (the view's query names the table's columns)
    lake.execute("CREATE VIEW large_stock AS SELECT id, units FROM stock WHERE units > 10")
    assert lake.execute("SELECT STREAM * FROM large_stock").rows() == [(2, 20), (1, 11), (3, 30)]
    assert sorted(lake.execute("SELECT * FROM large_stock").rows()) == [(1, 11), (3, 30)]


def test_continuous_runs_read_views_and_change_streams(lake: Engine) -> None:
    lake.execute("CREATE TABLE moves (id INTEGER, units INTEGER) WITH (change_feed_stream = true)")
    lake.execute("CREATE VIEW moved AS SELECT id, units FROM moves WHERE units > 1")
    rows: list[tuple] = []
    handle = lake.stream(
        "SELECT STREAM id, units FROM moved",
        on_batch=lambda t: rows.extend(tuple(r.values()) for r in t.to_pylist()),
        trigger="0.2 seconds",
    )
    try:
        lake.execute("INSERT INTO moves VALUES (1, 5), (2, 1)")
        handle.process_all_available()
        lake.execute("UPDATE moves SET units = 7 WHERE id = 2")
        handle.process_all_available()
    finally:
        handle.stop()
    assert rows == [(1, 5), (2, 7)]
