"""Shared by tests/sql/test_functions_*.py: Trino functions evaluated through ``Engine`` on Spark.

Every chapter module lists
- ``VALUES``: (expression, what Trino returns) evaluated on the first row of ``fn_t`` (all in one SELECT, one
  Spark job), the expected values taken from Trino's documentation and sources;
- ``NULLS``: expressions whose arguments are NULL (the columns of the second row of ``fn_t`` are all NULL, or a
  NULL literal), which Trino returns as NULL;
- ``ERRORS``: (expression, coded error, words of the message) for invalid arguments, one statement each;
- ``TRIES`` (most chapters): (expression, value) where ``try(...)`` of an argument error is NULL (or what a
  ``coalesce`` makes of that NULL).

and runs the same tests on them, made here: ``chapter_tests`` (``test_values``, ``test_null_arguments``,
``test_errors``) and ``try_test`` (``test_try_turns_argument_errors_into_null``).

``fn_t`` has one row of values and one of NULLs: ``k`` 1 and 2; ``s`` 'abc', ``e`` '' (empty), ``n`` bigint 5,
``i`` integer 7, ``d`` double 2.5, ``r`` real 1.5, ``c`` decimal(10,2) 7.25, ``b`` varbinary X'0aff',
``dt`` date 2020-05-17, ``ts`` timestamp(3) 2020-05-17 10:37:12.345, ``tz`` the same instant with time zone,
``ts6`` timestamp(6) 2020-05-17 10:37:12.345678, ``j`` a JSON document.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError

TABLE = (
    "CREATE TABLE fn_t (k integer, s varchar, e varchar, n bigint, i integer, d double, r real, c decimal(10,2), "
    "b varbinary, dt date, ts timestamp(3), tz timestamp(3) with time zone, ts6 timestamp(6), j varchar)"
)
ROWS = (
    "INSERT INTO fn_t VALUES (1, 'abc', '', 5, 7, 2.5e0, REAL '1.5', DECIMAL '7.25', X'0aff', DATE '2020-05-17', "
    "TIMESTAMP '2020-05-17 10:37:12.345', TIMESTAMP '2020-05-17 10:37:12.345 UTC', "
    'TIMESTAMP \'2020-05-17 10:37:12.345678\', \'{"a": {"b": [10, "x", true, null]}, "n": 1.5}\'), '
    "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
)

D = dt.date
T = dt.datetime
UTC = dt.UTC
INF = float("inf")
NAN = float("nan")


def make_engine(spark: Any) -> Engine:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute(TABLE)
    engine.execute(ROWS)
    return engine


def same(actual: Any, expected: Any) -> bool:
    """Equality that also checks the type (DATE vs TIMESTAMP, int vs float, decimal scale), NaN equal to NaN and
    the sign of a floating zero."""
    if isinstance(expected, float):
        if not isinstance(actual, float):
            return False
        if math.isnan(expected):
            return math.isnan(actual)
        return actual == expected and math.copysign(1, actual) == math.copysign(1, expected)
    if isinstance(expected, Decimal):
        return isinstance(actual, Decimal) and str(actual) == str(expected)
    if isinstance(expected, dt.datetime) and isinstance(actual, dt.datetime):
        if (expected.tzinfo is None) != (actual.tzinfo is None):
            return False
        return actual == expected
    if expected is not None and type(actual) is not type(expected):
        return False
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(same(a, e) for a, e in zip(actual, expected, strict=True))
    return bool(actual == expected)


def check_values(engine: Engine, cases: list[tuple[str, Any]]) -> None:
    """All cases in one SELECT on the first row; every mismatch is reported."""
    select = ", ".join(expr for expr, _ in cases)
    (row,) = engine.execute(f"SELECT {select} FROM fn_t WHERE k = 1").rows()
    wrong = [(expr, got, want) for (expr, want), got in zip(cases, row, strict=True) if not same(got, want)]
    assert wrong == [], wrong


def check_nulls(engine: Engine, expressions: list[str]) -> None:
    select = ", ".join(expressions)
    (row,) = engine.execute(f"SELECT {select} FROM fn_t WHERE k = 2").rows()
    wrong = [(expr, got) for expr, got in zip(expressions, row, strict=True) if got is not None]
    assert wrong == [], wrong


def check_error(engine: Engine, expression: str, code: ErrorCode, words: str) -> None:
    with pytest.raises(MergekitError) as raised:
        engine.execute(f"SELECT {expression} FROM fn_t WHERE k = 1").rows()
    assert raised.value.code is code, str(raised.value)
    assert words in raised.value.message


def error_ids(errors: list[tuple[str, ErrorCode, str]]) -> list[str]:
    return [expr[:60] for expr, _, _ in errors]


def chapter_tests(values: list[tuple[str, Any]], nulls: list[str], errors: list[tuple[str, ErrorCode, str]]) -> tuple:
    """A chapter's ``test_values``, ``test_null_arguments`` and ``test_errors`` (one test per error case), for the
    module to bind under those names, which pytest collects:
    ``test_values, test_null_arguments, test_errors = chapter_tests(VALUES, NULLS, ERRORS)``."""

    def test_values(fn_engine: Engine) -> None:
        check_values(fn_engine, values)

    def test_null_arguments(fn_engine: Engine) -> None:
        check_nulls(fn_engine, nulls)

    @pytest.mark.parametrize(("expression", "code", "words"), errors, ids=error_ids(errors))
    def test_errors(fn_engine: Engine, expression: str, code: ErrorCode, words: str) -> None:
        check_error(fn_engine, expression, code, words)

    return test_values, test_null_arguments, test_errors


def try_test(tries: list[tuple[str, Any]]) -> Any:
    """A chapter's ``test_try_turns_argument_errors_into_null``: its ``TRIES`` evaluated as ``VALUES`` are."""

    def test_try_turns_argument_errors_into_null(fn_engine: Engine) -> None:
        check_values(fn_engine, tries)

    return test_try_turns_argument_errors_into_null
