"""Trino SQL translated to Spark SQL must compute what Trino computes.

Each case is (Trino SQL, rows Trino returns); the expected rows follow Trino's documented semantics. The
translated SQL runs on the shared real Spark session (ANSI mode, UTC)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest
import sqlglot

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.spark.translate import to_spark_sql
from mergekit.sql.spark.types import spark_type_sql

# Temp views created once for this module; named with a prefix other test modules will not use.
SCHEMA: dict[str, dict[str, str]] = {
    "sptr_ints": {"i": "integer", "b": "bigint", "ti": "tinyint", "si": "smallint"},
    "sptr_edge": {"i": "integer", "b": "bigint", "ti": "tinyint"},
    "sptr_data": {
        "s": "varchar",
        "d": "double",
        "r": "real",
        "c": "decimal(10,2)",
        "dt": "date",
        "ts": "timestamp(3)",
        "tz": "timestamp(3) with time zone",
    },
    "sptr_weird": {"$path": "varchar", "select": "integer", "from": "integer"},
}
VIEWS = {
    "sptr_ints": (
        "SELECT CAST(i AS INT) i, CAST(b AS BIGINT) b, CAST(ti AS TINYINT) ti, CAST(si AS SMALLINT) si "
        "FROM VALUES (7, 2, 7, 2), (-7, 2, -7, 2) AS v(i, b, ti, si)"
    ),
    "sptr_edge": (
        "SELECT CAST(i AS INT) i, CAST(b AS BIGINT) b, CAST(ti AS TINYINT) ti "
        "FROM VALUES (2147483647, 9223372036854775807, 127) AS v(i, b, ti)"
    ),
    "sptr_data": (
        "SELECT CAST(s AS STRING) s, CAST(d AS DOUBLE) d, CAST(r AS FLOAT) r, CAST(c AS DECIMAL(10,2)) c, "
        "CAST(dt AS DATE) dt, CAST(ts AS TIMESTAMP_NTZ) ts, CAST(tz AS TIMESTAMP) tz "
        "FROM VALUES (' \t pad \n', 2.5, 1.5, 7.25, '2020-05-17', '2020-05-17 10:37:12.345', '2020-05-17 10:37:12.345') "
        "AS v(s, d, r, c, dt, ts, tz)"
    ),
    "sptr_weird": "SELECT 'p' AS `$path`, 1 AS `select`, 2 AS `from`",
}


@pytest.fixture(scope="module")
def views(spark):
    for name, query in VIEWS.items():
        spark.sql(f"CREATE OR REPLACE TEMP VIEW `{name}` AS {query}")
    yield spark
    for name in VIEWS:
        spark.catalog.dropTempView(name)


def translate(trino_sql: str, schema: dict[str, dict[str, str]] | None = None) -> str:
    return to_spark_sql(sqlglot.parse_one(trino_sql, read="trino"), schema=SCHEMA if schema is None else schema)


def run(spark, trino_sql: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in spark.sql(translate(trino_sql)).collect()]


def same(actual: Any, expected: Any) -> bool:
    """Equality that also checks the type (DATE vs TIMESTAMP, decimal scale) and treats NaN as equal."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    if isinstance(expected, Decimal):
        return isinstance(actual, Decimal) and str(actual) == str(expected)
    if expected is not None and type(actual) is not type(expected):
        return False
    return bool(actual == expected)


def assert_rows(actual: list[tuple[Any, ...]], expected: list[tuple[Any, ...]]) -> None:
    assert len(actual) == len(expected), (actual, expected)
    for got, want in zip(actual, expected, strict=False):
        assert len(got) == len(want) and all(same(g, w) for g, w in zip(got, want, strict=False)), (got, want)


D = dt.date
T = dt.datetime
INF = float("inf")
NAN = float("nan")

CASES: list[tuple[str, str, list[tuple[Any, ...]]]] = [
    # ---- integer division truncates toward zero and keeps the operand type
    ("int_div_literals", "SELECT 7/2, -7/2, 7/-2, -7/-2, 1/3", [(3, -3, -3, 3, 0)]),
    (
        "int_div_columns",
        "SELECT i / b, i / 2, ti / ti, b / ti FROM sptr_ints ORDER BY i",
        [(-3, -3, 1, 0), (3, 3, 1, 0)],
    ),
    ("int_div_precedence", "SELECT 7 / 2 * 2, 1 + 7 / 2, -(7 / 2), 10 - 9 / 2", [(6, 4, -3, 6)]),
    (
        "modulus_sign_of_dividend",
        "SELECT 7 % 3, -7 % 3, 7 % -3, mod(-7, 3), i % 4 FROM sptr_ints ORDER BY i",
        [(1, -1, 1, -1, -3), (1, -1, 1, -1, 3)],
    ),
    # ---- decimal division: scale max(s1, s2), rounded half up
    (
        "decimal_div",
        "SELECT 1.0 / 3, DECIMAL '10.00' / 4, 5 / 2.0, DECIMAL '2.00' / 3, DECIMAL '-2.00' / 3, c / 3 FROM sptr_data",
        [(Decimal("0.3"), Decimal("2.50"), Decimal("2.5"), Decimal("0.67"), Decimal("-0.67"), Decimal("2.42"))],
    ),
    (
        "wide_decimal_arithmetic_keeps_scale",
        (
            "SELECT CAST('1.0000000001' AS decimal(38,10)) + CAST('2.0000000002' AS decimal(38,10)), "
            "CAST('1.5' AS decimal(20,10)) * CAST('1.5' AS decimal(20,10)), TRY(CAST('1.0000000001' AS decimal(38,10)) + 1)"
        ),
        [(Decimal("3.0000000003"), Decimal("2.25000000000000000000"), Decimal("2.0000000001"))],
    ),
    ("decimal_div_wide_divisor_scale", "SELECT DECIMAL '1' / DECIMAL '0.003'", [(Decimal("333.333"),)]),
    # ---- floating division follows IEEE 754 (no error on zero)
    (
        "double_div",
        "SELECT 7e0 / 2, 1e0 / 0, -1e0 / 0, 0e0 / 0, d / 2, 5e0 % 0, 1e0 / -0e0, REAL '1' / 0 FROM sptr_data",
        [(3.5, INF, -INF, NAN, 1.25, NAN, -INF, INF)],
    ),
    # ---- TRY
    (
        "try_basic",
        "SELECT TRY(5/0), CAST(TRY(5/0) AS VARCHAR), TRY(2147483647 + 1), TRY(CAST('x' AS integer)), TRY(10/2)",
        [(None, None, None, None, 5)],
    ),
    ("try_error_inside_coalesce", "SELECT TRY(coalesce(5/0, 1)), coalesce(TRY(5/0), 1)", [(None, 1)]),
    (
        "try_lazy_case",
        "SELECT TRY(CASE WHEN i < 0 THEN 0 ELSE 10 / (i - 7) END) FROM sptr_ints ORDER BY i",
        [(0,), (None,)],
    ),
    (
        "try_short_circuit",
        "SELECT TRY(true OR 1/0 > 0), TRY(false AND 1/0 > 0), TRY(1/0 > 0 AND true)",
        [(True, False, None)],
    ),
    (
        "try_overflow_columns",
        "SELECT TRY(i + 1), TRY(-(i + 1)), TRY(b * 2), TRY(ti + ti), TRY(abs(i)), TRY(i / 0) FROM sptr_edge",
        [(None, None, None, None, 2147483647, None)],
    ),
    (
        "try_decimal",
        "SELECT TRY(DECIMAL '1.0' / 0), TRY(DECIMAL '1.0' / 4), TRY(CAST('1.5x' AS decimal(3,1)))",
        [(None, Decimal("0.3"), None)],
    ),
    (
        "try_cast_function",
        "SELECT try_cast('12' AS integer), try_cast('x' AS integer), try_cast(2.5e0 AS integer)",
        [(12, None, 3)],
    ),
    (
        "try_lazy_if_between_nested_coalesce",
        (
            "SELECT TRY(IF(i < 0, 0, 10 / (i - 7))), TRY(i BETWEEN 1 AND 10 / (i - 7)), TRY(TRY(1/0) + 1), "
            "TRY(coalesce(NULL, i / (i - 7), 5)) FROM sptr_ints ORDER BY i"
        ),
        [(0, False, None, 0), (None, None, None, None)],
    ),
    ("try_varchar_too_long", "SELECT TRY(CAST(12345 AS VARCHAR(3))), TRY(CAST(123 AS VARCHAR(3)))", [(None, "123")]),
    # ---- strings
    (
        "concat_null",
        "SELECT 'a' || NULL, concat('a', NULL, 'b'), 'a' || 'b', concat('x', 'y', 'z'), concat_ws(',', 'a', NULL, 'b')",
        [(None, None, "ab", "xyz", "a,b")],
    ),
    (
        "cast_to_varchar",
        (
            "SELECT CAST(12 AS VARCHAR), CAST(1.50 AS VARCHAR), CAST(true AS VARCHAR), CAST(DATE '2020-01-02' AS VARCHAR), "
            "CAST('abcdef' AS VARCHAR(3)), CAST(TIMESTAMP '2020-01-02 03:04:05.600' AS VARCHAR), "
            "CAST(TIMESTAMP '2020-01-02 03:04:05' AS VARCHAR), CAST(ts AS VARCHAR), CAST(tz AS VARCHAR) FROM sptr_data"
        ),
        [
            (
                "12",
                "1.50",
                "true",
                "2020-01-02",
                "abc",
                "2020-01-02 03:04:05.600",
                "2020-01-02 03:04:05",
                "2020-05-17 10:37:12.345",
                "2020-05-17 10:37:12.345 UTC",
            )
        ],
    ),
    (
        "cast_double_to_varchar",
        (
            "SELECT CAST(1.5e0 AS VARCHAR), CAST(123.456e0 AS VARCHAR), CAST(1e7 AS VARCHAR), CAST(0.001e0 AS VARCHAR), "
            "CAST(-0.00012e0 AS VARCHAR), CAST(0e0 AS VARCHAR), CAST(REAL '1.5' AS VARCHAR), CAST(1e0 / 0 AS VARCHAR), "
            "CAST(100e0 AS VARCHAR), CAST(-2.5e-10 AS VARCHAR)"
        ),
        [("1.5E0", "1.23456E2", "1.0E7", "1.0E-3", "-1.2E-4", "0E0", "1.5E0", "Infinity", "1.0E2", "-2.5E-10")],
    ),
    (
        "like_has_no_default_escape",
        (
            r"SELECT 'a\b' LIKE 'a\b', 'a%' LIKE 'a\%', 'a\%' LIKE 'a\%', 'abc' LIKE 'a%', 'a_c' LIKE 'a!_c' ESCAPE '!', "
            r"'abc' LIKE 'a!_c' ESCAPE '!', 'abc' NOT LIKE '_b_'"
        ),
        [(True, False, True, True, True, False, False)],
    ),
    ("string_literals", r"SELECT 'it''s', 'back\slash', length('a\b')", [("it's", "back\\slash", 3)]),
    (
        "is_distinct_from",
        "SELECT 1 IS DISTINCT FROM NULL, NULL IS DISTINCT FROM NULL, 1 IS NOT DISTINCT FROM 1, 1 IS DISTINCT FROM 1",
        [(True, False, True, False)],
    ),
    (
        "substr",
        (
            "SELECT length('hello'), substr('hello', 2), substr('hello', 2, 3), substr('hello', 0, 2), substr('hello', -3), "
            "substr('hello', -3, 2), substr('hello', -10, 2), substring('hello' FROM 2 FOR 2), lower('AbC'), upper('AbC')"
        ),
        [(5, "ello", "ell", "", "llo", "ll", "", "el", "abc", "ABC")],
    ),
    (
        "trim_whitespace",
        "SELECT trim(s), ltrim('  a '), rtrim(' a  '), trim('  a b  ') FROM sptr_data",
        [("pad", "a ", " a", "a b")],
    ),
    (
        "string_functions",
        (
            "SELECT strpos('hello', 'l'), strpos('hello', 'z'), replace('hello', 'l', 'L'), replace('hello', 'l'), reverse('abc'), "
            "lpad('7', 3, '0'), rpad('ab', 4, '-'), starts_with('hello', 'he'), position('l' IN 'hello')"
        ),
        [(3, 0, "heLLo", "heo", "cba", "007", "ab--", True, 3)],
    ),
    # ---- numeric functions
    (
        "round",
        (
            "SELECT round(2.5e0), round(-2.5e0), round(1.005e0, 2), round(DECIMAL '2.55', 1), round(DECIMAL '2.5'), "
            "round(DECIMAL '-2.5'), round(7), round(1234, -2), round(REAL '2.5')"
        ),
        [(3.0, -3.0, 1.0, Decimal("2.60"), Decimal(3), Decimal(-3), 7, 1200, 3.0)],
    ),
    (
        "abs_sign_floor_ceil",
        (
            "SELECT abs(-3), abs(DECIMAL '-1.50'), abs(-2.5e0), sign(-5), sign(2.5e0), floor(2.5e0), ceil(2.1e0), floor(-2.5e0), "
            "floor(DECIMAL '2.5'), ceil(DECIMAL '-2.5'), floor(5), floor(1e300)"
        ),
        [(3, Decimal("1.50"), 2.5, -1, 1.0, 2.0, 3.0, -3.0, Decimal(2), Decimal(-2), 5, 1e300)],
    ),
    (
        "logarithms",
        "SELECT ln(0e0), ln(-1e0), ln(1e0), log10(100e0), power(2, 10), sqrt(16e0)",
        [(-INF, NAN, 0.0, 2.0, 1024.0, 4.0)],
    ),
    (
        "math_and_string_extras",
        (
            "SELECT nan(), infinity(), is_finite(1e0 / 0), is_infinite(-1e0 / 0), is_finite(NULL), cbrt(27e0), "
            "last_day_of_month(DATE '2020-02-10'), levenshtein_distance('kitten', 'sitting'), translate('abc', 'ab', 'x'), "
            "regexp_replace('a1b22', '(\\d+)', '<$1>')"
        ),
        [(NAN, INF, False, True, None, 3.0, D(2020, 2, 29), 3, "xc", "a<1>b<22>")],
    ),
    (
        "greatest_least_null",
        "SELECT greatest(1, 2, 3), greatest(1, NULL, 3), least(2, 1), least(NULL, 1)",
        [(3, None, 1, None)],
    ),
    (
        "conditionals",
        (
            "SELECT CASE WHEN 1 > 2 THEN 'a' ELSE 'b' END, CASE 2 WHEN 1 THEN 'x' WHEN 2 THEN 'y' END, coalesce(NULL, 2, 3), "
            "if(1 > 2, 'x'), if(1 < 2, 'x', 'y'), nullif(1, 1), nullif(1, 2)"
        ),
        [("b", "y", 2, None, "x", None, 1)],
    ),
    # ---- casts
    (
        "cast_rounds_to_integer",
        (
            "SELECT CAST(2.5e0 AS integer), CAST(-2.5e0 AS integer), CAST(DECIMAL '2.5' AS integer), CAST(2.4e0 AS bigint), "
            "CAST('12' AS integer), CAST(DECIMAL '1.005' AS DECIMAL(3,2)), CAST(1 AS boolean), CAST('2020-01-02' AS DATE), "
            "CAST(d AS integer), CAST(r AS smallint), CAST(c AS tinyint) FROM sptr_data"
        ),
        [(3, -3, 3, 2, 12, Decimal("1.01"), True, D(2020, 1, 2), 3, 2, 7)],
    ),
    (
        "cast_timestamp_precision",
        (
            "SELECT CAST(TIMESTAMP '2020-01-01 00:00:00.123456' AS TIMESTAMP(3)), CAST(TIMESTAMP '2020-01-01 00:00:00.1235' AS TIMESTAMP(3)), "
            "CAST(TIMESTAMP '2020-01-01 00:00:00.5' AS TIMESTAMP(0)), CAST(DATE '2020-01-01' AS TIMESTAMP)"
        ),
        [(T(2020, 1, 1, 0, 0, 0, 123000), T(2020, 1, 1, 0, 0, 0, 124000), T(2020, 1, 1, 0, 0, 1), T(2020, 1, 1))],
    ),
    # ---- literals
    (
        "typed_literals",
        (
            "SELECT DATE '2020-01-01', TIMESTAMP '2020-01-01 01:02:03.456', DECIMAL '1.50', DECIMAL '-0.5', REAL '1.5', DOUBLE '2.5', "
            "TIMESTAMP '2020-01-01 10:00:00 +02:00' = TIMESTAMP '2020-01-01 08:00:00 UTC', X'0102'"
        ),
        [
            (
                D(2020, 1, 1),
                T(2020, 1, 1, 1, 2, 3, 456000),
                Decimal("1.50"),
                Decimal("-0.5"),
                1.5,
                2.5,
                True,
                b"\x01\x02",
            )
        ],
    ),
    (
        "intervals",
        (
            "SELECT DATE '2020-01-31' + INTERVAL '1' MONTH, TIMESTAMP '2020-01-01 00:00:00' + INTERVAL '90' MINUTE, "
            "DATE '2020-01-01' - INTERVAL '1' DAY, TIMESTAMP '2020-01-01 00:00:00' + INTERVAL '1 02:00:00' DAY TO SECOND"
        ),
        [(D(2020, 2, 29), T(2020, 1, 1, 1, 30), D(2019, 12, 31), T(2020, 1, 2, 2, 0))],
    ),
    # ---- date and time functions
    (
        "date_add",
        (
            "SELECT date_add('day', 1, DATE '2020-01-31'), date_add('month', 1, DATE '2020-01-31'), date_add('year', -1, DATE '2020-02-29'), "
            "date_add('week', 2, DATE '2020-01-01'), date_add('hour', 25, TIMESTAMP '2020-01-01 00:00:00'), "
            "date_add('month', 1, TIMESTAMP '2020-01-31 10:00:00'), date_add('quarter', 1, dt) FROM sptr_data"
        ),
        [
            (
                D(2020, 2, 1),
                D(2020, 2, 29),
                D(2019, 2, 28),
                D(2020, 1, 15),
                T(2020, 1, 2, 1, 0),
                T(2020, 2, 29, 10, 0),
                D(2020, 8, 17),
            )
        ],
    ),
    (
        "date_diff",
        (
            "SELECT date_diff('day', DATE '2020-01-01', DATE '2020-03-01'), date_diff('month', DATE '2020-01-31', DATE '2020-02-29'), "
            "date_diff('hour', TIMESTAMP '2020-01-01 00:00:00', TIMESTAMP '2020-01-02 01:30:00'), date_diff('day', DATE '2020-01-10', DATE '2020-01-01')"
        ),
        [(60, 0, 25, -9)],
    ),
    (
        "date_trunc",
        (
            "SELECT date_trunc('month', DATE '2020-05-17'), date_trunc('week', DATE '2020-05-17'), "
            "date_trunc('hour', TIMESTAMP '2020-05-17 10:37:12.345'), date_trunc('quarter', dt), date_trunc('year', ts), "
            "date_trunc('second', ts) FROM sptr_data"
        ),
        [(D(2020, 5, 1), D(2020, 5, 11), T(2020, 5, 17, 10), D(2020, 4, 1), T(2020, 1, 1), T(2020, 5, 17, 10, 37, 12))],
    ),
    (
        "date_parts",
        (
            "SELECT year(DATE '2020-05-17'), month(dt), day(dt), day_of_week(DATE '2020-05-17'), day_of_week(DATE '2020-05-18'), "
            "day_of_year(DATE '2020-02-01'), extract(hour FROM ts), week(DATE '2021-01-01'), quarter(dt), second(ts), "
            "extract(dow FROM dt) FROM sptr_data"
        ),
        [(2020, 5, 17, 7, 1, 32, 10, 53, 2, 12, 7)],
    ),
    ("current_date", "SELECT date_diff('day', current_date, current_date), current_date IS NOT NULL", [(0, True)]),
    # ---- relations and query structure
    (
        "values_relation",
        "SELECT a, b FROM (VALUES (1, 'x'), (2, 'y')) AS v(a, b) ORDER BY a DESC",
        [(2, "y"), (1, "x")],
    ),
    ("values_top_level", "VALUES (1, 'a'), (2, 'b')", [(1, "a"), (2, "b")]),
    (
        "aggregates",
        (
            "SELECT count(*), count(x), count(DISTINCT x), approx_distinct(x), sum(x), avg(x), min(x), max(x), count_if(x > 1) "
            "FROM (VALUES 1, 2, 2, NULL) AS v(x)"
        ),
        [(4, 3, 2, 2, 5, 5 / 3, 1, 2, 2)],
    ),
    (
        "decimal_aggregates",
        "SELECT sum(c), avg(c) FROM (VALUES DECIMAL '1.00', DECIMAL '2.00', DECIMAL '2.00') AS v(c)",
        [(Decimal("5.00"), Decimal("1.67"))],
    ),
    (
        "windowed_decimal_aggregates",
        "SELECT avg(c) OVER (), avg(c) FILTER (WHERE c > 0) OVER (), sum(c) OVER (ORDER BY c) FROM sptr_data",
        [(Decimal("7.25"), Decimal("7.25"), Decimal("7.25"))],
    ),
    ("null_operands", "SELECT NULL / 2, 3 % NULL, -9223372036854775808", [(None, None, -9223372036854775808)]),
    (
        "unnest_sequence",
        "SELECT x, x / 2 FROM UNNEST(sequence(1, 4)) AS u(x) UNION ALL SELECT x, 0 FROM UNNEST(sequence(6, 5)) AS u(x)",
        [(1, 0), (2, 1), (3, 1), (4, 2), (6, 0), (5, 0)],
    ),
    (
        "unnest_lateral_and_zip",
        (
            "SELECT i, u.x, z.a, z.b FROM sptr_ints CROSS JOIN UNNEST(sequence(1, 2)) AS u(x) "
            "CROSS JOIN UNNEST(ARRAY[10, 20], ARRAY['p']) AS z(a, b) WHERE i > 0 ORDER BY x, a"
        ),
        [(7, 1, 10, "p"), (7, 1, 20, None), (7, 2, 10, "p"), (7, 2, 20, None)],
    ),
    (
        "group_by_having",
        "SELECT x, count(*) FROM (VALUES 1, 2, 2, 3, 3, 3) AS v(x) GROUP BY x HAVING count(*) > 1 ORDER BY 2 DESC",
        [(3, 3), (2, 2)],
    ),
    (
        "window_functions",
        (
            "SELECT x, row_number() OVER (ORDER BY x DESC), rank() OVER (ORDER BY x), "
            "sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), lag(x) OVER (ORDER BY x) "
            "FROM (VALUES 1, 2, NULL) AS v(x) ORDER BY x"
        ),
        [(1, 2, 1, 1, None), (2, 1, 2, 3, 1), (None, 3, 3, 2, 2)],
    ),
    (
        "set_operations_default_to_distinct",
        (
            "WITH c AS (SELECT * FROM (VALUES 1, 2, 2, 3) AS v(x)) "
            "SELECT 'u', x FROM (SELECT x FROM c UNION SELECT x FROM c) AS u "
            "UNION ALL SELECT 'i', x FROM (SELECT x FROM c INTERSECT SELECT x FROM (VALUES 2, 2, 3, 4) AS w(x)) AS i "
            "UNION ALL SELECT 'e', x FROM (SELECT x FROM c EXCEPT SELECT 3) AS e ORDER BY 1, 2"
        ),
        [("e", 1), ("e", 2), ("i", 2), ("i", 3), ("u", 1), ("u", 2), ("u", 3)],
    ),
    (
        "set_operations_all",
        (
            "WITH c AS (SELECT * FROM (VALUES 1, 2, 2, 3) AS v(x)) "
            "SELECT 'u', x FROM (SELECT x FROM c UNION ALL SELECT 2) AS u "
            "UNION ALL SELECT 'i', x FROM (SELECT x FROM c INTERSECT ALL SELECT x FROM (VALUES 2, 2, 3) AS w(x)) AS i "
            "UNION ALL SELECT 'e', x FROM (SELECT x FROM c EXCEPT ALL SELECT 2) AS e ORDER BY 1, 2"
        ),
        [("e", 1), ("e", 2), ("e", 3), ("i", 2), ("i", 2), ("i", 3), ("u", 1), ("u", 2), ("u", 2), ("u", 2), ("u", 3)],
    ),
    ("setop_precedence", "SELECT 1 UNION SELECT 2 INTERSECT SELECT 3", [(1,)]),
    ("order_nulls_last_desc", "SELECT x FROM (VALUES 2, NULL, 1) AS v(x) ORDER BY x DESC", [(2,), (1,), (None,)]),
    (
        "order_nulls_in_every_direction",
        (
            "SELECT x, row_number() OVER (ORDER BY x), row_number() OVER (ORDER BY x NULLS FIRST), "
            "row_number() OVER (ORDER BY x DESC NULLS FIRST) FROM (VALUES 2, NULL, 1) AS v(x) ORDER BY x NULLS FIRST"
        ),
        [(None, 3, 1, 1), (1, 1, 2, 3), (2, 2, 3, 2)],
    ),
    (
        "order_by_repeated_expression",
        "SELECT DISTINCT x % 2 FROM (VALUES 1, 2, 3) AS v(x) ORDER BY x % 2 DESC",
        [(1,), (0,)],
    ),
    ("offset_limit", "SELECT x FROM (VALUES 1, 2, 3, 4, 5) AS v(x) ORDER BY x OFFSET 1 LIMIT 2", [(2,), (3,)]),
    ("fetch_first", "SELECT x FROM (VALUES 1, 2, 3, 4, 5) AS v(x) ORDER BY x FETCH FIRST 2 ROWS ONLY", [(1,), (2,)]),
    ("offset_only", "SELECT x FROM (VALUES 1, 2, 3, 4, 5) AS v(x) ORDER BY x OFFSET 3 ROWS", [(4,), (5,)]),
    (
        "in_subquery",
        "SELECT x FROM (VALUES 1, 2, 3) v(x) WHERE x IN (SELECT y FROM (VALUES 2, 3) w(y)) ORDER BY x",
        [(2,), (3,)],
    ),
    ("not_in_with_null", "SELECT x FROM (VALUES 1, 2) v(x) WHERE x NOT IN (SELECT y FROM (VALUES 2, NULL) w(y))", []),
    (
        "eq_any",
        "SELECT x FROM (VALUES 1, 2, 3) v(x) WHERE x = ANY (SELECT y FROM (VALUES 1, 3) w(y)) ORDER BY x",
        [(1,), (3,)],
    ),
    (
        "correlated_exists",
        "SELECT x FROM (VALUES 1, 2, 3) v(x) WHERE EXISTS (SELECT 1 FROM (VALUES 2, 3) w(y) WHERE w.y = v.x + 1) ORDER BY x",
        [(1,), (2,)],
    ),
    (
        "correlated_scalar",
        "SELECT x, (SELECT max(y) FROM (VALUES 1, 2, 3) w(y) WHERE w.y < v.x) FROM (VALUES 1, 3) v(x) ORDER BY x",
        [(1, None), (3, 2)],
    ),
    (
        "correlated_division_types",
        "SELECT i, (SELECT max(v.y) / 2 FROM (VALUES 5, 7) v(y) WHERE v.y > sptr_ints.i) FROM sptr_ints ORDER BY i",
        [(-7, 3), (7, None)],
    ),
    (
        "joins",
        "SELECT a.x, b.y FROM (VALUES 1, 2) a(x) LEFT JOIN (VALUES 2) b(y) ON a.x = b.y ORDER BY a.x",
        [(1, None), (2, 2)],
    ),
    ("identifiers", 'SELECT "$path", "select", "FROM", w."select" / 2 FROM sptr_weird AS w', [("p", 1, 2, 0)]),
]


@pytest.mark.parametrize(("trino_sql", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_translation_matches_trino(views, trino_sql: str, expected: list[tuple[Any, ...]]) -> None:
    assert_rows(run(views, trino_sql), expected)


ERRORS: list[tuple[str, str, str]] = [
    ("int_div_by_zero", "SELECT 1/0", "DIVIDE_BY_ZERO"),
    ("int_column_div_by_zero", "SELECT i / (i - i) FROM sptr_ints", "DIVIDE_BY_ZERO"),
    ("decimal_div_by_zero", "SELECT c / 0 FROM sptr_data", "DIVIDE_BY_ZERO"),
    ("mod_by_zero", "SELECT 5 % 0", "REMAINDER_BY_ZERO"),
    ("int_literal_overflow", "SELECT 2147483647 + 1", "ARITHMETIC_OVERFLOW"),
    ("int_column_overflow", "SELECT i + 1 FROM sptr_edge", "ARITHMETIC_OVERFLOW"),
    ("int_column_multiply_overflow", "SELECT i * 2 FROM sptr_edge", "ARITHMETIC_OVERFLOW"),
    ("tinyint_overflow", "SELECT ti + ti FROM sptr_edge", "ARITHMETIC_OVERFLOW"),
    ("bigint_overflow", "SELECT b + 1 FROM sptr_edge", "ARITHMETIC_OVERFLOW"),
    ("int_min_div_minus_one", "SELECT (-i - 1) / -1 FROM sptr_edge", "CAST_OVERFLOW"),
    ("invalid_cast", "SELECT CAST('abc' AS integer)", "CAST_INVALID_INPUT"),
    ("varchar_too_short", "SELECT CAST(12345 AS VARCHAR(3))", "INVALID_CAST_ARGUMENT"),
]


@pytest.mark.parametrize(("trino_sql", "error"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors_like_trino(views, trino_sql: str, error: str) -> None:
    with pytest.raises(Exception, match=error):
        run(views, trino_sql)


def test_result_types_follow_trino(views) -> None:
    df = views.sql(
        translate("SELECT i / i, ti / ti, si / si, b / i, i % ti, 1.0 / 3, round(DECIMAL '2.55', 1) FROM sptr_ints")
    )
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "int", "tinyint", "smallint", "bigint", "int", "decimal(2,1)", "decimal(4,2)",
    ]  # fmt: skip


def test_output_names_follow_trino(views) -> None:
    df = views.sql(
        translate('SELECT i, i + 1, b AS bb, (ti), 7 / 2, 1 AS Foo, "Bar" FROM sptr_ints CROSS JOIN (SELECT 1 AS bar)')
    )
    assert df.columns == ["i", "_col1", "bb", "ti", "_col4", "foo", "bar"]
    assert views.sql(translate("VALUES (1, 'a')")).columns == ["_col0", "_col1"]


def test_lone_expression_with_schema(views) -> None:
    schema = {"l": {"x": "integer"}, "r": {"y": "integer"}}
    expression = translate("l.x / r.y + TRY(l.x / 0)", schema)
    assert "DIV" in expression
    rows = views.sql(f"SELECT {expression} FROM (SELECT 7 AS x) AS l CROSS JOIN (SELECT 2 AS y) AS r").collect()
    assert [tuple(r) for r in rows] == [(None,)]
    condition = translate("x / y = 3 AND x IS DISTINCT FROM y", schema)
    rows = views.sql(f"SELECT {condition} FROM (SELECT 7 AS x) CROSS JOIN (SELECT 2 AS y)").collect()
    assert [tuple(r) for r in rows] == [(True,)]


def test_input_tree_is_not_mutated() -> None:
    tree = sqlglot.parse_one(
        "SELECT TRY(7 / 2), x FROM (VALUES 1) v(x) ORDER BY x FETCH FIRST 1 ROWS ONLY", read="trino"
    )
    before = tree.copy()
    to_spark_sql(tree, schema=SCHEMA)
    assert tree == before
    assert tree.sql("trino") == before.sql("trino")


def test_ordering_is_explicit() -> None:
    sql = translate("SELECT x FROM (VALUES 1) v(x) ORDER BY x, x DESC, x NULLS FIRST")
    assert "ORDER BY `x` ASC NULLS LAST, `x` DESC NULLS LAST, `x` ASC NULLS FIRST" in sql


NOT_SUPPORTED = [
    ("unsupported_function", "SELECT soundex('a')"),
    ("random_of_a_double", "SELECT random(2.5e0)"),
    ("regexp_extract_of_an_optional_group", "SELECT regexp_extract('abc', '(x)?c', 1)"),
    ("fetch_with_ties", "SELECT x FROM (VALUES 1) v(x) ORDER BY x FETCH FIRST 1 ROWS WITH TIES"),
    ("division_of_untyped_columns", "SELECT x / 2 FROM unknown_table"),
    ("cast_untyped_to_integer", "SELECT CAST(x AS integer) FROM unknown_table"),
    ("groups_frame", "SELECT sum(x) OVER (ORDER BY x GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM (VALUES 1) v(x)"),
    ("recursive_cte", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r"),
    ("time_travel", "SELECT * FROM sptr_ints FOR VERSION AS OF 3"),
    ("unnest_with_ordinality", "SELECT x FROM UNNEST(ARRAY[1, 2]) WITH ORDINALITY AS u(x, n)"),
    ("left_join_unnest", "SELECT i, x FROM sptr_ints LEFT JOIN UNNEST(sequence(1, i)) AS u(x) ON true"),
    ("quantified_greater_all", "SELECT 1 > ALL (SELECT 1)"),
    ("timestamp_nanos", "SELECT TIMESTAMP '2020-01-01 00:00:00.123456789'"),
    ("unsafe_function_in_try", "SELECT TRY(date_parse('2020', '%Y'))"),
    ("at_time_zone_of_a_column", "SELECT tz AT TIME ZONE s FROM sptr_data"),
    ("decimal_division_beyond_spark_scale", "SELECT CAST(1 AS decimal(38,10)) / CAST(3 AS decimal(38,10))"),
    ("statement", "DELETE FROM sptr_ints WHERE i = 1"),
]


@pytest.mark.parametrize("trino_sql", [c[1] for c in NOT_SUPPORTED], ids=[c[0] for c in NOT_SUPPORTED])
def test_untranslatable_raises_not_supported(trino_sql: str) -> None:
    with pytest.raises(MergekitError) as info:
        translate(trino_sql)
    assert info.value.code is ErrorCode.NOT_SUPPORTED


def test_date_field_errors_are_invalid_function_arguments() -> None:
    with pytest.raises(MergekitError) as info:
        translate("SELECT date_add('hour', 1, DATE '2020-01-01')")
    assert info.value.code is ErrorCode.INVALID_FUNCTION_ARGUMENT
    assert info.value.message == "'hour' is not a valid DATE field"


@pytest.mark.parametrize(
    ("trino_type", "spark_type"),
    [
        ("boolean", "BOOLEAN"),
        ("tinyint", "TINYINT"),
        ("smallint", "SMALLINT"),
        ("integer", "INT"),
        ("INT", "INT"),
        ("bigint", "BIGINT"),
        ("real", "FLOAT"),
        ("double", "DOUBLE"),
        ("decimal(10,2)", "DECIMAL(10,2)"),
        ("decimal", "DECIMAL(38,0)"),
        ("varchar", "STRING"),
        ("varchar(16)", "STRING"),
        ("char(3)", "STRING"),
        ("varbinary", "BINARY"),
        ("date", "DATE"),
        ("timestamp", "TIMESTAMP_NTZ"),
        ("timestamp(6)", "TIMESTAMP_NTZ"),
        ("timestamp with time zone", "TIMESTAMP"),
        ("timestamp(3) with time zone", "TIMESTAMP"),
        ("interval day to second", "INTERVAL DAY TO SECOND"),
        ("interval year to month", "INTERVAL YEAR TO MONTH"),
        ("array(integer)", "ARRAY<INT>"),
        ("map(varchar, double)", "MAP<STRING, DOUBLE>"),
        ("row(a integer, b varchar)", "STRUCT<`a`: INT, `b`: STRING>"),
    ],
)
def test_spark_type_sql(trino_type: str, spark_type: str) -> None:
    assert spark_type_sql(trino_type) == spark_type


@pytest.mark.parametrize("trino_type", ["time", "timestamp(9)", "json", "uuid", "no such type("])
def test_spark_type_sql_refuses(trino_type: str) -> None:
    with pytest.raises(MergekitError) as info:
        spark_type_sql(trino_type)
    assert info.value.code is ErrorCode.NOT_SUPPORTED
