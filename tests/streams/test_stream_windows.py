"""Seed 001's windows as bounded runs on the journal catalog, over the seed's Orders (stream.md): hopping windows
(the HOP group function of Calcite's stream.md, and the seed's hopping window by OVER over hourly totals),
sliding windows (one, and several refining a named window), session windows (SESSION group function), window
table functions in a streaming query, and Calcite's interval difference. Rows in emission order."""

from __future__ import annotations

import datetime

import pytest

from mergekit import Engine

from .seed_orders import ORDERS, orders_lake, ts

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory: pytest.TempPathFactory) -> Engine:
    engine = orders_lake(spark, str(tmp_path_factory.mktemp("w")))
    yield engine
    engine.close()


def test_hopping_windows(lake: Engine) -> None:
    # stream.md: "emits every hour, the orders of the last three hours"; the doc shows the windows closed at 11:00
    # and 12:00 of a running stream; the end of input closes the 13:00 and 14:00 windows too
    hop = (
        "SELECT STREAM HOP_END(rowtime, INTERVAL '1' HOUR, INTERVAL '3' HOUR) AS rowtime, COUNT(*) AS c, "
        "SUM(units) AS units FROM Orders GROUP BY HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '3' HOUR)"
    )
    assert lake.execute(hop).rows() == [
        (ts("11:00:00"), 4, 27),
        (ts("12:00:00"), 8, 50),
        (ts("13:00:00"), 8, 50),
        (ts("14:00:00"), 4, 23),
    ]
    # a retention that is not a multiple of the emission period (the seed's 7,007-second example, shortened)
    odd = (
        "SELECT STREAM HOP_START(rowtime, INTERVAL '1' HOUR, INTERVAL '90' MINUTE) AS s, COUNT(*) AS c "
        "FROM Orders GROUP BY HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '90' MINUTE)"
    )
    assert lake.execute(odd).rows() == [(ts("09:00:00"), 4), (ts("10:00:00"), 8), (ts("11:00:00"), 4)]
    # seed 001's hopping window: a sliding window over the hourly totals (its clause order ORDER BY, PARTITION BY)
    totals = (
        "WITH HourlyTotals (rowtime, productId, c, su) AS (SELECT FLOOR(rowtime TO HOUR), productId, COUNT(*), "
        "SUM(units) FROM Orders GROUP BY FLOOR(rowtime TO HOUR), productId) "
        "SELECT STREAM rowtime, productId, SUM(su) OVER w AS su, SUM(c) OVER w AS c FROM HourlyTotals "
        "WINDOW w AS (ORDER BY rowtime PARTITION BY productId RANGE INTERVAL '2' HOUR PRECEDING)"
    )
    assert lake.execute(totals).rows() == [
        (ts("10:00:00"), 10, 1, 1),
        (ts("10:00:00"), 20, 2, 1),
        (ts("10:00:00"), 30, 24, 2),
        (ts("11:00:00"), 10, 12, 4),
        (ts("11:00:00"), 40, 12, 1),
    ]


def test_sliding_windows(lake: Engine) -> None:
    sliding = (
        "SELECT STREAM rowtime, productId, units, "
        "SUM(units) OVER (ORDER BY rowtime RANGE INTERVAL '1' HOUR PRECEDING) unitsLastHour FROM Orders"
    )
    last_hour = [4, 5, 7, 27, 33, 34, 46, 23]  # 11:24:11 no longer sees the 10:xx orders
    assert lake.execute(sliding).rows() == [(ts(t), p, u, s) for (t, p, _, u), s in zip(ORDERS, last_hour, strict=True)]
    # seed 001: orders whose product's average over 10 minutes exceeds its average over 7 days (two windows
    # refining the named window product, in the seed's syntax)
    refined = (
        "SELECT STREAM * FROM (SELECT STREAM rowtime, productId, units, "
        "AVG(units) OVER product (RANGE INTERVAL '10' MINUTE PRECEDING) AS m10, "
        "AVG(units) OVER product (RANGE INTERVAL '7' DAY PRECEDING) AS d7 "
        "FROM Orders WINDOW product AS (ORDER BY rowtime PARTITION BY productId)) WHERE m10 > d7"
    )
    assert lake.execute(refined).rows() == [
        (ts("11:02:00"), 10, 6, 6.0, 3.5),
        (ts("11:04:00"), 10, 1, 3.5, 8 / 3),
        (ts("11:24:11"), 10, 4, 4.0, 3.0),
    ]


def test_session_windows(lake: Engine) -> None:
    sessions = (
        "SELECT STREAM SESSION_END(rowtime, INTERVAL '30' MINUTE) AS e, productId, COUNT(*) AS c, "
        "SESSION_START(rowtime, INTERVAL '30' MINUTE) AS s FROM Orders "
        "GROUP BY SESSION(rowtime, INTERVAL '30' MINUTE), productId"
    )
    assert lake.execute(sessions).rows() == [  # in the order they close
        (ts("10:47:05"), 10, 1, ts("10:17:05")),
        (ts("10:48:05"), 20, 1, ts("10:18:05")),
        (ts("10:48:07"), 30, 2, ts("10:17:00")),
        (ts("11:39:30"), 40, 1, ts("11:09:30")),
        (ts("11:54:11"), 10, 3, ts("11:02:00")),  # 11:02, 11:04, 11:24:11 (44:55 after 10:17:05: a new one)
    ]
    # a row exactly one gap after the last opens a new session (10:17:00, 10:17:05); 10:18:05 and 10:18:07 share one
    exact = (
        "SELECT STREAM SESSION_END(rowtime, INTERVAL '5' SECOND) AS e, COUNT(*) AS c FROM Orders "
        "GROUP BY SESSION(rowtime, INTERVAL '5' SECOND)"
    )
    ends = ["10:17:05", "10:17:10", "10:18:12", "11:02:05", "11:04:05", "11:09:35", "11:24:16"]
    assert lake.execute(exact).rows() == [(ts(e), 2 if e == "10:18:12" else 1) for e in ends]


def test_window_table_functions_in_a_streaming_query(lake: Engine) -> None:
    hop = lake.execute(
        "SELECT STREAM rowtime, orderId, window_start, window_end FROM TABLE(HOP(TABLE Orders, DESCRIPTOR(rowtime), "
        "INTERVAL '30' MINUTE, INTERVAL '1' HOUR)) WHERE orderId IN (5, 9)"
    ).rows()
    assert hop == [  # in arrival order, each row's windows by their start
        (ts("10:17:00"), 5, ts("09:30:00"), ts("10:30:00")),
        (ts("10:17:00"), 5, ts("10:00:00"), ts("11:00:00")),
        (ts("11:02:00"), 9, ts("10:30:00"), ts("11:30:00")),
        (ts("11:02:00"), 9, ts("11:00:00"), ts("12:00:00")),
    ]
    tumbling = (
        "SELECT STREAM window_end, COUNT(*) AS c FROM TABLE(TUMBLE(DATA => TABLE Orders, "
        "TIMECOL => DESCRIPTOR(rowtime), SIZE => INTERVAL '1' HOUR)) GROUP BY window_start, window_end"
    )
    assert lake.execute(tumbling).rows() == [(ts("11:00:00"), 4), (ts("12:00:00"), 4)]
    session = lake.execute(
        "SELECT STREAM * FROM TABLE(SESSION(TABLE Orders, DESCRIPTOR(rowtime), DESCRIPTOR(productId), "
        "INTERVAL '30' MINUTE)) WHERE productId IN (10, 30)"
    ).rows()
    assert [(r[2], r[4], r[5]) for r in session] == [  # a row is emitted when its session closes
        (6, ts("10:17:05"), ts("10:47:05")),
        (5, ts("10:17:00"), ts("10:48:07")),
        (8, ts("10:17:00"), ts("10:48:07")),
        (9, ts("11:02:00"), ts("11:54:11")),
        (10, ts("11:02:00"), ts("11:54:11")),
        (12, ts("11:02:00"), ts("11:54:11")),
    ]


def test_interval_difference(lake: Engine) -> None:
    minutes = lake.execute(
        "SELECT STREAM orderId, (rowtime - TIMESTAMP '2015-02-15 10:00:00') MINUTE AS m, "
        "CAST((rowtime - TIMESTAMP '2015-02-15 10:00:00') MINUTE AS INTEGER) AS n FROM Orders WHERE orderId <= 7"
    ).rows()
    # whole minutes, truncated (10:17:05 is 17 minutes), as an interval and as a number
    assert minutes == [
        (5, datetime.timedelta(minutes=17), 17),
        (6, datetime.timedelta(minutes=17), 17),
        (7, datetime.timedelta(minutes=18), 18),
    ]
