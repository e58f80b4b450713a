"""The modality and streaming rules of seed 001 with Calcite's messages, decided before any Spark work
(``mergekit.sql.check_modality``), over Calcite's validator schema: ORDERS and SHIPMENTS are streams (ROWTIME
monotonic), PRODUCTS, SUPPLIERS and EMP are tables."""

from __future__ import annotations

import pytest

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError

STREAMS = {"orders": (("rowtime", False),), "shipments": (("rowtime", False),), "history": (("rowtime", False),)}


def kind_of(ref: msql.TableRef) -> msql.ObjectInfo:
    name = ref.name.parts[-1]
    if name == "history":  # a stream that is also a table (WITH (history = true))
        return msql.ObjectInfo(msql.ObjectKind.BOTH, STREAMS[name])
    if name in STREAMS:
        return msql.ObjectInfo(msql.ObjectKind.STREAM, STREAMS[name])
    return msql.ObjectInfo(msql.ObjectKind.TABLE)


def modality(sql: str) -> bool:
    st = msql.parse_statement(sql)
    assert isinstance(st, msql.Query)
    return msql.check_modality(st, kind_of)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT STREAM * FROM Orders",
        "SELECT STREAM * FROM Orders WHERE units > 3",
        "SELECT STREAM rowtime, 'An order for ' || CAST(units AS VARCHAR) AS d FROM Orders",
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS rowtime, productId, COUNT(*) AS c FROM Orders "
        "GROUP BY FLOOR(rowtime TO HOUR), productId HAVING COUNT(*) > 2",
        "SELECT STREAM rowtime, productId FROM (SELECT FLOOR(rowtime TO HOUR) AS rowtime, productId, COUNT(*) AS c "
        "FROM Orders GROUP BY FLOOR(rowtime TO HOUR), productId) WHERE c > 2",
        "WITH t (rowtime, productId, c) AS (SELECT FLOOR(rowtime TO HOUR), productId, COUNT(*) FROM Orders "
        "GROUP BY FLOOR(rowtime TO HOUR), productId) SELECT STREAM rowtime, productId FROM t WHERE c > 2",
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS rowtime, productId FROM Orders ORDER BY FLOOR(rowtime TO HOUR), "
        "productId DESC",
        "SELECT STREAM * FROM Orders WHERE productId = 10 UNION ALL SELECT STREAM * FROM Orders WHERE productId = 30 "
        "ORDER BY rowtime",
        "SELECT STREAM o.rowtime, p.name FROM Orders AS o JOIN Products AS p ON o.productId = p.productId",
        "SELECT STREAM productId FROM Orders GROUP BY productId, TUMBLE(rowtime, INTERVAL '1' HOUR)",
        "SELECT STREAM CAST(rowtime AS DATE) AS d, COUNT(*) FROM Orders GROUP BY CAST(rowtime AS DATE)",
        "SELECT STREAM * FROM (SELECT STREAM * FROM Orders) AS x",  # STREAM in a sub-query: no effect
        # GROUPING SETS: valid when every set has a monotonic expression (Calcite's stream.md)
        "SELECT STREAM productId, COUNT(*) FROM Orders "
        "GROUP BY GROUPING SETS ((FLOOR(rowtime TO HOUR), productId), (FLOOR(rowtime TO HOUR)))",
        "SELECT STREAM productId, COUNT(*) FROM Orders GROUP BY FLOOR(rowtime TO HOUR), GROUPING SETS ((productId), ())",
    ],
)
def test_streaming_queries_the_seed_accepts(sql: str) -> None:
    assert modality(sql) is True


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM Products",
        "SELECT * FROM History",  # a stream with history is also a relation
        "SELECT max(units) FROM (SELECT STREAM * FROM History) AS h",
    ],
)
def test_relational_queries(sql: str) -> None:
    assert modality(sql) is False


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM Shipments", "Cannot convert stream 'SHIPMENTS' to relation"),
        (
            "SELECT orderId FROM Orders UNION ALL SELECT orderId FROM Shipments",
            "Cannot convert stream 'ORDERS' to relation",
        ),
        (
            "SELECT e.empno FROM Emp AS e JOIN Shipments AS s ON e.empno = s.orderId",
            "Cannot convert stream 'SHIPMENTS'",
        ),
        ("SELECT STREAM * FROM Products", "Cannot convert table 'PRODUCTS' to stream"),
        ("SELECT STREAM * FROM Emp AS e", "Cannot convert table 'E' to stream"),
        ("SELECT STREAM * FROM (VALUES (1, 'abc'))", "Cannot stream VALUES"),
        ("SELECT STREAM 1", "Cannot stream VALUES"),
        (
            "SELECT STREAM * FROM Products JOIN Suppliers ON Products.productId = Suppliers.supplierId",
            "Cannot stream results of a query with no streaming inputs: 'PRODUCTS, SUPPLIERS'. At least one input "
            "should be convertible to a stream",
        ),
        (
            "SELECT STREAM orderId FROM Orders UNION ALL VALUES 1",
            "Set operator cannot combine streaming and non-streaming",
        ),
        ("SELECT STREAM * FROM Orders UNION ALL SELECT * FROM Orders", "Set operator cannot combine streaming"),
        ("SELECT STREAM productId, COUNT(*) FROM Orders GROUP BY productId", "Streaming aggregation requires at least"),
        (
            "SELECT STREAM COUNT(*) AS c FROM Orders GROUP BY ()",
            "Streaming aggregation requires at least one monotonic",
        ),
        ("SELECT STREAM COUNT(*) AS c FROM Orders", "Streaming aggregation requires at least one monotonic"),
        (
            "SELECT STREAM productId, COUNT(*) FROM Orders "
            "GROUP BY GROUPING SETS ((FLOOR(rowtime TO HOUR), productId), (productId))",
            "Streaming aggregation requires at least one monotonic",
        ),
        (
            "SELECT STREAM productId FROM Orders GROUP BY productId, TUMBLE(TIMESTAMP '1990-03-04 12:34:56', "
            "INTERVAL '2' HOUR)",
            "Streaming aggregation requires at least one monotonic expression in GROUP BY clause",
        ),
        ("SELECT STREAM productId FROM Orders ORDER BY productId", "Streaming ORDER BY must start with monotonic"),
        ("SELECT STREAM rowtime FROM Orders ORDER BY rowtime DESC", "Streaming ORDER BY must start with monotonic"),
        ("SELECT STREAM * FROM Orders UNION ALL SELECT STREAM * FROM Orders ORDER BY units", "Streaming ORDER BY"),
    ],
)
def test_the_seeds_errors_with_calcites_messages(sql: str, message: str) -> None:
    with pytest.raises(MergekitError) as caught:
        modality(sql)
    assert caught.value.code is ErrorCode.STREAM_NOT_ALLOWED
    assert message in str(caught.value)


def test_stream_is_a_keyword_only_before_a_select_list() -> None:
    for sql in [
        "SELECT stream FROM t",
        "SELECT stream, a FROM t",
        'SELECT "stream" FROM t',
        "SELECT stream AS s FROM t",
        "SELECT stream + 1 FROM t",
        "SELECT stream - 1 FROM t",
        "SELECT stream * 2 FROM t",
        "SELECT stream || 'x' FROM t",
        "SELECT stream = 2 FROM t",
        "SELECT stream",
    ]:
        st = msql.parse_statement(sql)
        assert isinstance(st, msql.Query) and st.stream_selects == (False,), sql
    for sql in ["SELECT STREAM stream FROM t", "SELECT STREAM * FROM t", "SELECT STREAM *, a FROM t"]:
        st = msql.parse_statement(sql)
        assert isinstance(st, msql.Query) and st.stream_selects == (True,), sql


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        (
            "SELECT TUMBLE(rowtime, INTERVAL '1' HOUR) FROM t GROUP BY TUMBLE(rowtime, INTERVAL '1' HOUR)",
            ErrorCode.SYNTAX_ERROR,
            "Group function '$TUMBLE' can only appear in GROUP BY clause",
        ),
        (
            "SELECT TUMBLE_END(rowtime, INTERVAL '1' HOUR, TIME '00:00:00') FROM t "
            "GROUP BY TUMBLE(rowtime, INTERVAL '1' HOUR)",
            ErrorCode.SYNTAX_ERROR,
            "Call to auxiliary group function 'TUMBLE_END' must have matching call to group function '$TUMBLE' in "
            "GROUP BY clause",
        ),
        ("SELECT TUMBLE_START(rowtime, INTERVAL '1' HOUR) FROM t", ErrorCode.SYNTAX_ERROR, "must have matching call"),
        (
            "SELECT HOP_END(rowtime, INTERVAL '1' HOUR, INTERVAL '3' HOUR) FROM t "
            "GROUP BY HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '2' HOUR)",
            ErrorCode.SYNTAX_ERROR,
            "Call to auxiliary group function 'HOP_END' must have matching call to group function '$HOP' in GROUP BY "
            "clause",
        ),
        (
            "SELECT COUNT(*) FROM t GROUP BY TUMBLE(rowtime, INTERVAL '0' HOUR)",
            ErrorCode.NOT_SUPPORTED,
            "positive INTERVAL literal",
        ),
    ],
)
def test_group_window_rules(sql: str, code: ErrorCode, message: str) -> None:
    st = msql.parse_statement(sql)
    assert isinstance(st, msql.Query)
    with pytest.raises(MergekitError) as caught:
        st.to_spark(tables={}, schema={"t": {"rowtime": "timestamp(3)"}})
    assert caught.value.code is code
    assert message in str(caught.value)
