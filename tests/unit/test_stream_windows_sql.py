"""Seed 001's windows and joins in the SQL layer, without Spark: HOP and SESSION group functions, window table
functions, streaming OVER (sliding and cascading windows, named windows), joins of two streams (lock step) and
Calcite's interval difference ``(a - b) HOUR``; their rules and messages, and the SQL they become. Calcite's
validator schema: ORDERS and SHIPMENTS are streams (ROWTIME monotonic), HISTORY a stream that keeps its history,
PRODUCTS a table."""

from __future__ import annotations

import pytest

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError

STREAMS = {"orders": (("rowtime", False),), "shipments": (("rowtime", False),), "history": (("rowtime", False),)}
SCHEMA = {
    "orders": {"rowtime": "timestamp(3)", "productid": "integer", "orderid": "integer", "units": "integer"},
    "shipments": {"rowtime": "timestamp(3)", "orderid": "integer"},
    "history": {"rowtime": "timestamp(3)", "product": "varchar", "units": "integer"},
    "products": {"productid": "integer", "name": "varchar"},
}


def kind_of(ref: msql.TableRef) -> msql.ObjectInfo:
    name = ref.name.parts[-1]
    if name == "history":
        return msql.ObjectInfo(msql.ObjectKind.BOTH, STREAMS[name])
    if name in STREAMS:
        return msql.ObjectInfo(msql.ObjectKind.STREAM, STREAMS[name])
    return msql.ObjectInfo(msql.ObjectKind.TABLE)


def query(sql: str) -> msql.Query:
    st = msql.parse_statement(sql)
    assert isinstance(st, msql.Query)
    return st


def spark_sql(sql: str) -> str:
    """The Spark SQL a bounded run (streaming) or a query (relational) renders."""
    st = query(sql)
    if msql.check_modality(st, kind_of):
        st = msql.prepare_stream_query(st, kind_of)
    return st.to_spark(tables={}, schema=SCHEMA)


def fails(sql: str, code: ErrorCode, message: str) -> None:
    with pytest.raises(MergekitError) as caught:
        spark_sql(sql)
    assert caught.value.code is code, caught.value
    assert message in str(caught.value)


# ---- text pre-passes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "read_as"),
    [
        # TABLE name as a table function's argument
        (
            "SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))",
            "TABLE(TUMBLE((SELECT * FROM orders), DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))",
        ),
        # seed 001's refinement of a named window, and its clause order ORDER BY ... PARTITION BY
        (
            "SELECT AVG(units) OVER product (RANGE INTERVAL '10' MINUTE PRECEDING) AS m10 FROM orders "
            "WINDOW product AS (ORDER BY rowtime PARTITION BY productId)",
            "WINDOW product AS (PARTITION BY productId ORDER BY rowtime)",
        ),
        # Calcite's interval difference (a CAST, GROUP BY, an alias after it), and Trino's column alias
        (
            "SELECT CAST((a - b) HOUR AS INTEGER) FROM t",
            "CAST(MERGEKIT_INTERVAL_DIFFERENCE((a - b), 'HOUR') AS INTEGER)",
        ),
        ("SELECT (a - b) DAY AS d FROM t", "MERGEKIT_INTERVAL_DIFFERENCE((a - b), 'DAY') AS d"),
        ("SELECT COUNT(*) FROM t GROUP BY (a - b) MINUTE", "GROUP BY MERGEKIT_INTERVAL_DIFFERENCE((a - b), 'MINUTE')"),
        ("SELECT (a - b) hour FROM t", "SELECT (a - b) AS hour FROM t"),
        ("SELECT x, (a - b) hour, y FROM t", "SELECT x, (a - b) AS hour, y FROM t"),
        ("SELECT coalesce(a - b) hour FROM t", "SELECT COALESCE(a - b) AS hour FROM t"),
        # SESSION is a function name before a parenthesis only
        ("SELECT COUNT(*) FROM t GROUP BY SESSION(rowtime, INTERVAL '1' HOUR)", "GROUP BY SESSION(rowtime"),
        ("SELECT session FROM t", "SELECT session FROM t"),
    ],
)
def test_calcite_syntax_is_read(sql: str, read_as: str) -> None:
    assert read_as in query(sql).sql


# ---- group window functions ------------------------------------------------------------------------------


def test_hop_gives_each_row_every_window_that_holds_it() -> None:
    text = spark_sql(
        "SELECT STREAM HOP_END(rowtime, INTERVAL '1' HOUR, INTERVAL '3' HOUR) AS e, COUNT(*) AS c FROM Orders "
        "GROUP BY HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '3' HOUR)"
    )
    assert "EXPLODE(ARRAY(0, 1, 2)) __mk_hop" in text  # three candidate windows per row
    assert "TIMESTAMPADD(MILLISECOND, 10800000" in text  # retain
    # a retention that is not a multiple of the emission period: two candidates, the filter drops empty ones
    text = spark_sql(
        "SELECT HOP_START(rowtime, INTERVAL '1' HOUR, INTERVAL '90' MINUTE) FROM Orders "
        "GROUP BY HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '90' MINUTE)".replace("FROM Orders", "FROM History")
    )
    assert "EXPLODE(ARRAY(0, 1))" in text and "WHERE `rowtime` < TIMESTAMPADD(MILLISECOND, 5400000" in text


def test_session_groups_by_gaps_per_key() -> None:
    text = spark_sql(
        "SELECT STREAM SESSION_END(rowtime, INTERVAL '20' MINUTE) AS e, productId, COUNT(*) AS c FROM Orders "
        "WHERE units > 1 GROUP BY SESSION(rowtime, INTERVAL '20' MINUTE), productId"
    )
    assert "LAG(`__mk_t`) OVER (PARTITION BY `__mk_k0` ORDER BY `__mk_t`" in text  # sessions per productId
    assert "< 1200000 THEN 0 ELSE 1 END" in text  # a gap of 20 minutes or more opens a session
    assert "WHERE `units` > 1 AND NOT `rowtime` IS NULL" in text  # over the rows the query groups
    assert "GROUP BY `__mk_session`.`__mk_ws`, `productid`, `__mk_session`.`__mk_we`" in text


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        (
            "SELECT SESSION_START(rowtime, INTERVAL '1' HOUR) FROM History GROUP BY SESSION(rowtime, INTERVAL '2' HOUR)",
            ErrorCode.SYNTAX_ERROR,
            "Call to auxiliary group function 'SESSION_START' must have matching call to group function '$SESSION'",
        ),
        (
            "SELECT HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '2' HOUR) FROM History "
            "GROUP BY HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '2' HOUR)",
            ErrorCode.SYNTAX_ERROR,
            "Group function '$HOP' can only appear in GROUP BY clause",
        ),
        (
            "SELECT COUNT(*) FROM History GROUP BY SESSION(rowtime, INTERVAL '1' HOUR, TIME '00:10:00')",
            ErrorCode.SYNTAX_ERROR,
            "Invalid number of arguments to function 'SESSION'. Was expecting 2 arguments, got 3",
        ),
        (
            "SELECT COUNT(*) FROM History GROUP BY HOP(rowtime, INTERVAL '1' HOUR), product",
            ErrorCode.SYNTAX_ERROR,
            "Was expecting 3 or 4 arguments, got 2",
        ),
        (
            "SELECT COUNT(*) FROM History GROUP BY HOP(rowtime, INTERVAL '0' HOUR, INTERVAL '2' HOUR)",
            ErrorCode.NOT_SUPPORTED,
            "The emission period of HOP must be a positive INTERVAL literal",
        ),
        (
            "SELECT COUNT(*) FROM History GROUP BY TUMBLE(rowtime, INTERVAL '1' HOUR), "
            "SESSION(rowtime, INTERVAL '1' HOUR)",
            ErrorCode.NOT_SUPPORTED,
            "more than one group window function",
        ),
        (
            "SELECT COUNT(*) FROM History GROUP BY ROLLUP(SESSION(rowtime, INTERVAL '1' HOUR), product)",
            ErrorCode.NOT_SUPPORTED,
            "SESSION in GROUPING SETS, ROLLUP or CUBE is not supported",
        ),
    ],
)
def test_group_window_rules(sql: str, code: ErrorCode, message: str) -> None:
    fails(sql, code, message)


# ---- window table functions ------------------------------------------------------------------------------


def test_window_table_functions_modality() -> None:
    tvf = "TABLE(TUMBLE(TABLE {0}, DESCRIPTOR(rowtime), INTERVAL '1' HOUR))"
    assert msql.check_modality(query(f"SELECT STREAM * FROM {tvf.format('Orders')}"), kind_of) is True
    assert msql.check_modality(query(f"SELECT * FROM {tvf.format('History')}"), kind_of) is False
    # a streaming aggregation over the windows: window_start and window_end are monotonic
    grouped = f"SELECT STREAM window_end, COUNT(*) AS c FROM {tvf.format('Orders')} GROUP BY window_start, window_end"
    assert msql.check_modality(query(grouped), kind_of) is True
    for sql, message in [
        (f"SELECT * FROM {tvf.format('Orders')}", "Cannot convert stream 'ORDERS' to relation"),
        (f"SELECT STREAM * FROM {tvf.format('Products')}", "Cannot convert table 'PRODUCTS' to stream"),
        (
            "SELECT STREAM * FROM TABLE(SESSION((SELECT * FROM (VALUES (TIMESTAMP '2020-01-01 10:00:00', 'a')) "
            "AS t(ts, uid)), DESCRIPTOR(ts), INTERVAL '15' MINUTE))",
            "Cannot stream VALUES",
        ),
        (
            f"SELECT STREAM units, COUNT(*) FROM {tvf.format('Orders')} GROUP BY units",
            "Streaming aggregation requires at least one monotonic expression in GROUP BY clause",
        ),
    ]:
        with pytest.raises(MergekitError) as caught:
            msql.check_modality(query(sql), kind_of)
        assert caught.value.code is ErrorCode.STREAM_NOT_ALLOWED and message in str(caught.value), sql


def test_window_table_functions_named_arguments_and_results() -> None:
    named = spark_sql(
        "SELECT * FROM TABLE(HOP(DATA => TABLE History, TIMECOL => DESCRIPTOR(rowtime), SLIDE => INTERVAL '5' "
        "MINUTE, SIZE => INTERVAL '10' MINUTE, OFFSET => INTERVAL '2' MINUTE))"
    )
    positional = spark_sql(
        "SELECT * FROM TABLE(HOP(TABLE History, DESCRIPTOR(rowtime), INTERVAL '5' MINUTE, INTERVAL '10' MINUTE, "
        "INTERVAL '2' MINUTE))"
    )
    assert named == positional
    assert "EXPLODE(ARRAY(1, 0))" in named and "- 120000) % 300000" in named  # starts in ascending order, offset
    assert "ORDER BY `__mk_in`.`rowtime`" in named  # a relation: sorted by time, as its monotonic input
    streamed = spark_sql("SELECT STREAM * FROM TABLE(TUMBLE(TABLE Orders, DESCRIPTOR(rowtime), INTERVAL '1' HOUR))")
    assert "ORDER BY" not in streamed and "NOT `__mk_in`.`rowtime` IS NULL" in streamed  # arrival order; NULL drops
    session = spark_sql(
        "SELECT * FROM TABLE(SESSION(TABLE History, DESCRIPTOR(rowtime), DESCRIPTOR(product), INTERVAL '20' MINUTE))"
    )
    assert "`__mk_s`.`__mk_k0` IS NOT DISTINCT FROM `__mk_in`.`product`" in session


@pytest.mark.parametrize(
    ("tvf", "message"),
    [
        ("TUMBLE(TABLE History, DESCRIPTOR(rowtime))", "Was expecting 3 or 4 arguments, got 2"),
        ("TUMBLE(History, DESCRIPTOR(rowtime), INTERVAL '1' HOUR)", "must be TABLE name or a sub-query"),
        ("TUMBLE(TABLE History, rowtime, INTERVAL '1' HOUR)", "The time column of window table function TUMBLE"),
        ("TUMBLE(TABLE History, DESCRIPTOR(rowtime, units), INTERVAL '1' HOUR)", "must be one column"),
        ("TUMBLE(DATA => TABLE History, DESCRIPTOR(rowtime), SIZE => INTERVAL '1' HOUR)", "all by name or all by"),
        ("TUMBLE(DATA => TABLE History, TIMECOL => DESCRIPTOR(rowtime), SLIDE => INTERVAL '1' HOUR)", "no parameter"),
        ("HOP(DATA => TABLE History, TIMECOL => DESCRIPTOR(rowtime), SIZE => INTERVAL '1' HOUR)", "SLIDE parameter"),
    ],
)
def test_window_table_function_errors(tvf: str, message: str) -> None:
    fails(f"SELECT * FROM TABLE({tvf})", ErrorCode.SYNTAX_ERROR, message)


# ---- streaming OVER --------------------------------------------------------------------------------------


def test_streaming_over_gets_the_implicit_order_of_its_monotonic_input() -> None:
    # seed 001's cascading window: a running total per hour (Calcite's implicit ORDER BY of a RANGE window)
    cascading = spark_sql(
        "SELECT STREAM rowtime, SUM(units) OVER (PARTITION BY FLOOR(rowtime TO HOUR)) AS s FROM Orders"
    )
    assert "OVER (PARTITION BY CAST(DATE_TRUNC('HOUR', `rowtime`) AS TIMESTAMP_NTZ) ORDER BY `rowtime` ASC" in cascading
    # a relational query keeps the standard meaning (the whole partition)
    relational = spark_sql("SELECT rowtime, SUM(units) OVER (PARTITION BY FLOOR(rowtime TO HOUR)) AS s FROM History")
    assert "ORDER BY" not in relational
    # seed 001's several windows refining one named window (inlined: Spark rejects refinements)
    refined = spark_sql(
        "SELECT STREAM * FROM (SELECT STREAM rowtime, productId, units, "
        "AVG(units) OVER product (RANGE INTERVAL '10' MINUTE PRECEDING) AS m10, "
        "AVG(units) OVER product (RANGE INTERVAL '7' DAY PRECEDING) AS d7 "
        "FROM Orders WINDOW product AS (ORDER BY rowtime PARTITION BY productId)) WHERE m10 > d7"
    )
    assert "WINDOW" not in refined
    assert refined.count("OVER (PARTITION BY `productid` ORDER BY `rowtime` ASC NULLS LAST RANGE BETWEEN") == 2


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        (
            "SELECT STREAM rowtime, SUM(units) OVER (ORDER BY units) FROM Orders",
            ErrorCode.STREAM_NOT_ALLOWED,
            "Streaming window requires a monotonic expression at the start of its ORDER BY clause or in its "
            "PARTITION BY clause",
        ),
        (
            "SELECT STREAM rowtime, SUM(units) OVER (ORDER BY rowtime DESC) FROM Orders",
            ErrorCode.STREAM_NOT_ALLOWED,
            "Streaming window requires a monotonic expression",
        ),
        (
            "SELECT STREAM o.rowtime, SUM(units) OVER (PARTITION BY o.productId) FROM Orders AS o "
            "JOIN Products AS p ON o.productId = p.productId",
            ErrorCode.STREAM_NOT_ALLOWED,
            "Streaming window requires a monotonic expression",
        ),
        (
            "SELECT STREAM o.rowtime, SUM(units) OVER (RANGE 5 PRECEDING) FROM Orders AS o "
            "JOIN Products AS p ON o.productId = p.productId",
            ErrorCode.SYNTAX_ERROR,
            "Window specification must contain an ORDER BY clause",
        ),
        (
            "SELECT STREAM rowtime, SUM(units) OVER (ORDER BY rowtime ROWS BETWEEN CURRENT ROW AND UNBOUNDED "
            "FOLLOWING) FROM Orders",
            ErrorCode.STREAM_NOT_ALLOWED,
            "UNBOUNDED FOLLOWING window not supported",
        ),
        (
            "SELECT STREAM rowtime, ROW_NUMBER() OVER (PARTITION BY productId) FROM Orders",
            ErrorCode.NOT_SUPPORTED,
            "without ORDER BY in a streaming query is not supported",
        ),
        (
            "SELECT STREAM rowtime, SUM(units) OVER w FROM Orders WINDOW w AS (PARTITION BY productId ROWS 2 PRECEDING)",
            ErrorCode.NOT_SUPPORTED,
            "A ROWS window or ROW_NUMBER() without ORDER BY",
        ),
        (
            "SELECT SUM(units) OVER (w PARTITION BY units) FROM History WINDOW w AS (ORDER BY rowtime)",
            ErrorCode.SYNTAX_ERROR,
            "PARTITION BY not allowed with existing window reference",
        ),
        (
            "SELECT SUM(units) OVER (w ORDER BY units) FROM History WINDOW w AS (ORDER BY rowtime)",
            ErrorCode.SYNTAX_ERROR,
            "ORDER BY not allowed in both base and referenced windows",
        ),
        (
            "SELECT SUM(units) OVER (w ROWS 1 PRECEDING) FROM History WINDOW w AS (ORDER BY rowtime ROWS 2 PRECEDING)",
            ErrorCode.SYNTAX_ERROR,
            "Referenced window cannot have framing declarations",
        ),
    ],
)
def test_streaming_over_rules(sql: str, code: ErrorCode, message: str) -> None:
    fails(sql, code, message)


def test_streaming_over_accepts_sliding_cascading_and_following_frames() -> None:
    for sql in [
        "SELECT STREAM rowtime, SUM(units) OVER (ORDER BY rowtime RANGE INTERVAL '1' HOUR PRECEDING) FROM Orders",
        "SELECT STREAM rowtime, SUM(units) OVER (PARTITION BY FLOOR(rowtime TO HOUR) ORDER BY units) FROM Orders",
        "SELECT STREAM rowtime, SUM(units) OVER (ORDER BY rowtime ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING) FROM Orders",
        "SELECT STREAM rowtime, RANK() OVER (PARTITION BY productId) FROM Orders",
    ]:
        assert "OVER (" in spark_sql(sql), sql


# ---- joins of two streams --------------------------------------------------------------------------------

JOIN = "SELECT STREAM o.rowtime, s.rowtime AS shipTime FROM Orders AS o {kind} Shipments AS s ON o.orderId = s.orderId"


@pytest.mark.parametrize(
    "condition",
    [
        "AND s.rowtime BETWEEN o.rowtime AND o.rowtime + INTERVAL '1' HOUR",
        "AND s.rowtime >= o.rowtime AND s.rowtime < o.rowtime + INTERVAL '1' HOUR",
        "AND o.rowtime > s.rowtime - INTERVAL '1' HOUR AND o.rowtime <= s.rowtime",
        "AND s.rowtime = o.rowtime",
        "AND FLOOR(s.rowtime TO HOUR) = FLOOR(o.rowtime TO HOUR)",
        "WHERE s.rowtime BETWEEN o.rowtime AND o.rowtime + INTERVAL '1' HOUR",  # an inner join: WHERE counts
    ],
)
def test_a_join_of_streams_in_lock_step_runs(condition: str) -> None:
    sql = JOIN.format(kind="JOIN") + " " + condition
    assert msql.check_modality(query(sql), kind_of) is True
    assert msql.emission_order(query(sql), kind_of) == (1, 2)


@pytest.mark.parametrize(
    ("kind", "condition"),
    [
        ("JOIN", ""),
        ("JOIN", "AND s.rowtime >= o.rowtime"),  # bounded from below only
        ("JOIN", "AND s.rowtime >= o.rowtime AND o.units <= 3"),
        (
            "LEFT JOIN",
            "WHERE s.rowtime BETWEEN o.rowtime AND o.rowtime + INTERVAL '1' HOUR",
        ),  # WHERE after an outer join
        ("JOIN", "AND FLOOR(s.rowtime TO HOUR) = FLOOR(o.rowtime TO DAY)"),
    ],
)
def test_a_join_of_streams_without_lock_step_is_refused(kind: str, condition: str) -> None:
    with pytest.raises(MergekitError) as caught:
        msql.check_modality(query(JOIN.format(kind=kind) + " " + condition), kind_of)
    assert caught.value.code is ErrorCode.STREAM_NOT_ALLOWED
    assert str(caught.value) == (
        "[STREAM_NOT_ALLOWED] Stream-to-stream join of 'O' and 'S' requires a condition that bounds a monotonic "
        "column of one within a finite interval of a monotonic column of the other"
    )


def test_a_stream_joined_to_a_table_needs_no_lock_step() -> None:
    sql = "SELECT STREAM o.rowtime, p.name FROM Orders AS o JOIN Products AS p ON o.productId = p.productId"
    assert msql.check_modality(query(sql), kind_of) is True


# ---- interval difference ---------------------------------------------------------------------------------


def test_interval_difference_is_monotonic_and_counts_whole_units() -> None:
    hours = "CAST((rowtime - TIMESTAMP '1970-01-01 00:00:00') HOUR AS INTEGER)"
    text = spark_sql(f"SELECT STREAM {hours} AS h, COUNT(*) AS c FROM Orders GROUP BY {hours}")
    assert "CAST(TIMESTAMPDIFF(HOUR, CAST('1970-01-01 00:00:00' AS TIMESTAMP_NTZ), `rowtime`) AS INT)" in text
    # (testMonotonic) and through arithmetic: / 15 keeps it increasing
    assert msql.check_modality(query(f"SELECT STREAM COUNT(*) FROM Orders GROUP BY {hours} / 15"), kind_of)
    # not a cast: that many units as an interval
    assert "TIMESTAMPDIFF(MINUTE" in spark_sql(
        "SELECT (rowtime - TIMESTAMP '2015-02-15 10:00:00') MINUTE AS m FROM History"
    )
    for sql, code, message in [
        (
            "SELECT STREAM COUNT(*) FROM Orders GROUP BY CAST((rowtime - rowtime) HOUR AS INTEGER)",
            ErrorCode.STREAM_NOT_ALLOWED,
            "Streaming aggregation requires at least one monotonic expression",
        ),
        (
            "SELECT (rowtime - TIMESTAMP '2015-02-15 10:00:00') DAY TO SECOND AS d FROM History",
            ErrorCode.NOT_SUPPORTED,
            "one unit",
        ),
        (
            "SELECT CAST((rowtime - TIMESTAMP '2015-02-15 10:00:00') HOUR AS VARCHAR) FROM History",
            ErrorCode.NOT_SUPPORTED,
            "to a number it is the count of whole units",
        ),
    ]:
        fails(sql, code, message)


def test_emission_order_of_sessions_is_by_their_end() -> None:
    grouped = (
        "SELECT STREAM SESSION_START(rowtime, INTERVAL '20' MINUTE) AS s, productId, "
        "SESSION_END(rowtime, INTERVAL '20' MINUTE) AS e FROM Orders GROUP BY SESSION(rowtime, INTERVAL '20' MINUTE), "
        "productId"
    )
    assert msql.emission_order(query(grouped), kind_of) == (3, 1, 2)
    star = "SELECT STREAM * FROM TABLE(SESSION(TABLE Orders, DESCRIPTOR(rowtime), INTERVAL '20' MINUTE))"
    assert msql.emission_order(query(star), kind_of) == ("`window_end`", "`window_start`", "`rowtime`")
    hop = "SELECT STREAM * FROM TABLE(HOP(TABLE Orders, DESCRIPTOR(rowtime), INTERVAL '5' MINUTE, INTERVAL '1' HOUR))"
    assert msql.emission_order(query(hop), kind_of) is None  # stateless: arrival order
