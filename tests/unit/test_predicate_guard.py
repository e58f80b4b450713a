"""Which statements keep a scan's row-version filtering below their predicates (``mergekit.sql.predicates_may_fail``)."""

from __future__ import annotations

import pytest

from mergekit import sql as msql


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM t WHERE k = 5 AND b IS NOT NULL OR v LIKE 'a%'",
        "SELECT * FROM t WHERE k IN (1, 2) AND b BETWEEN -3 AND 4 AND NOT (v <> 'x')",
        "SELECT 10 / b FROM t WHERE k = 1",  # the outermost projection runs after every filter
        "UPDATE t SET b = b + 1 WHERE k = 5",
        "DELETE FROM t WHERE k IN (SELECT k FROM s WHERE s.x > 3)",
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED AND s.x > 1 THEN UPDATE SET b = s.x * 2",
        "INSERT INTO t SELECT k, b * 2 FROM s WHERE k > 0",
    ],
)
def test_predicates_that_cannot_fail(sql: str) -> None:
    assert not msql.predicates_may_fail(msql.parse_statement(sql))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM t WHERE 10 / b > 0",
        "SELECT * FROM t WHERE b + 5 > 0",
        "SELECT * FROM t WHERE CAST(v AS INTEGER) = 1",
        "SELECT * FROM t WHERE -b > 0",
        "SELECT * FROM t WHERE length(v) > 2",
        "SELECT * FROM (SELECT k, 10 / b AS x FROM t) d WHERE x > 0",
        "SELECT * FROM t JOIN s ON t.k = s.k AND t.b * 2 > 0",
        "SELECT k FROM t GROUP BY k HAVING sum(b) > 0",
        "UPDATE t SET b = 1 WHERE 10 / b > 0",
        "DELETE FROM t WHERE k IN (SELECT k FROM s WHERE 1 / s.x > 0)",
        "MERGE INTO t USING s ON t.k = s.k AND t.b + 1 > 0 WHEN MATCHED THEN DELETE",
        "MERGE INTO t USING (SELECT k, 10 / x AS x FROM s) s ON t.k = s.x WHEN MATCHED THEN DELETE",
        # a WHEN condition may become a filter of the target alone once Spark folds the join's presence markers
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED AND t.b / 2 > 1 THEN DELETE",
        "EXPLAIN SELECT * FROM t WHERE 10 / b > 0",
    ],
)
def test_predicates_that_may_fail(sql: str) -> None:
    assert msql.predicates_may_fail(msql.parse_statement(sql))
