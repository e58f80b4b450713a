"""Trino's mathematical functions through the Engine on Spark: values (IEEE results where Trino returns them:
Infinity, NaN, the sign of zero), NULL arguments, and the coded errors Trino gives (see functions_kit)."""

from __future__ import annotations

import math
from decimal import Decimal

from mergekit.errors import ErrorCode

from .functions_kit import INF, NAN, chapter_tests, try_test

BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT
REFUSED = ErrorCode.NOT_SUPPORTED
MISMATCH = ErrorCode.TYPE_MISMATCH

VALUES = [
    ("abs(-3)", 3),
    ("abs(DECIMAL '-1.50')", Decimal("1.50")),
    ("abs(-2.5e0)", 2.5),
    ("cbrt(27e0)", 3.0),
    ("cbrt(-8e0)", -2.0),
    ("ceil(2.1e0)", 3.0),
    ("ceiling(DECIMAL '-2.5')", Decimal("-2")),
    ("ceil(i)", 7),
    ("degrees(pi())", 180.0),
    ("e()", math.e),
    ("exp(0e0)", 1.0),
    ("exp(1000e0)", INF),
    ("floor(-2.5e0)", -3.0),
    ("floor(c)", Decimal("7")),
    ("ln(1e0)", 0.0),
    ("ln(0e0)", -INF),
    ("ln(-1e0)", NAN),
    ("log(2, 8)", 3.0),
    ("log(10, 1000)", math.log(1000) / math.log(10)),
    ("log(1, 5)", INF),
    ("log(2, 0)", -INF),
    ("log2(8)", 3.0),
    ("log2(0)", -INF),
    ("log2(-1)", NAN),
    ("log10(1000e0)", 3.0),
    ("log10(-1)", NAN),
    ("mod(-7, 3)", -1),
    ("mod(7.5e0, 2)", 1.5),
    ("mod(c, 2)", Decimal("1.25")),
    ("pi()", math.pi),
    ("pow(2, 10)", 1024.0),
    ("power(0, -1)", INF),
    ("radians(180)", math.pi),
    ("rand() >= 0 AND rand() < 1", True),
    ("random(5) BETWEEN 0 AND 4", True),
    ("random(3, 4)", 3),
    ("round(2.5e0)", 3.0),
    ("round(-2.5e0)", -3.0),
    ("round(DECIMAL '2.55', 1)", Decimal("2.60")),
    ("round(1234, -2)", 1200),
    ("round(d)", 3.0),
    ("sign(-5)", -1),
    ("sign(2.5e0)", 1.0),
    ("sign(DECIMAL '-1.5')", Decimal("-1")),
    ("sign(0e0)", 0.0),
    ("sign(-0e0)", -0.0),
    ("sqrt(16e0)", 4.0),
    ("sqrt(-1e0)", NAN),
    ("truncate(-2.7e0)", -2.0),
    ("truncate(2.7e0)", 2.0),
    ("truncate(-0.5e0)", -0.0),
    ("truncate(DECIMAL '-2.75')", Decimal("-2")),
    ("truncate(DECIMAL '2.75', 1)", Decimal("2.70")),
    ("truncate(DECIMAL '12.75', -1)", Decimal("10.00")),
    ("truncate(REAL '1.5')", 1.0),
    ("width_bucket(5.3, 0.2, 10.6, 5)", 3),
    ("width_bucket(-1, 0, 10, 5)", 0),
    ("width_bucket(10, 0, 10, 5)", 6),
    ("width_bucket(2, 10, 0, 5)", 4),
    ("width_bucket(infinity(), 0, 10, 5)", 6),
    ("acos(1e0)", 0.0),
    ("acos(2e0)", NAN),
    ("asin(0e0)", 0.0),
    ("atan(0e0)", 0.0),
    ("atan2(1e0, 1e0)", math.atan2(1, 1)),
    ("cos(0e0)", 1.0),
    ("cosh(0e0)", 1.0),
    ("sin(0e0)", 0.0),
    ("sinh(0e0)", 0.0),
    ("tan(0e0)", 0.0),
    ("tanh(0e0)", 0.0),
    ("infinity()", INF),
    ("nan()", NAN),
    ("is_finite(d)", True),
    ("is_finite(infinity())", False),
    ("is_infinite(-1e0 / 0)", True),
    ("is_infinite(d)", False),
    ("is_nan(nan())", True),
    ("is_nan(d)", False),
    ("from_base('ff', 16)", 255),
    ("from_base('-7fffffffffffffff', 16)", -9223372036854775807),
    ("from_base('-8000000000000000', 16)", -9223372036854775808),
    ("from_base('+101', 2)", 5),
    ("from_base('zz', 36)", 1295),
    ("from_base('00FF', 16)", 255),
    ("to_base(255, 16)", "ff"),
    ("to_base(-255, 2)", "-11111111"),
    ("to_base(0, 2)", "0"),
    ("to_base(n, 36)", "5"),
    ("to_base(-9223372036854775807 - 1, 16)", "-8000000000000000"),
]

NULLS = [
    "abs(n)", "cbrt(d)", "ceil(d)", "ceiling(c)", "degrees(d)", "exp(d)", "floor(d)", "ln(d)", "log(2, d)",
    "log(d, 2)", "log2(d)", "log10(d)", "mod(n, 2)", "mod(2, n)", "pow(d, 2)", "power(2, d)", "radians(d)",
    "rand(n)", "random(n)", "round(d)", "round(d, i)", "sign(d)", "sqrt(d)", "truncate(d)", "truncate(c)",
    "width_bucket(d, 0, 10, 5)", "width_bucket(1, 0, 10, n)", "acos(d)", "asin(d)", "atan(d)", "atan2(d, 1)",
    "cos(d)", "cosh(d)", "sin(d)", "sinh(d)", "tan(d)", "tanh(d)", "is_finite(d)", "is_infinite(d)", "is_nan(d)",
    "from_base(s, 16)", "to_base(n, 16)", "to_base(5, n)",
]  # fmt: skip

ERRORS = [
    ("mod(5, 0)", ErrorCode.DIVISION_BY_ZERO, "Division by zero"),
    ("width_bucket(1, 2, 2, 3)", BAD, "bounds cannot equal each other"),
    ("width_bucket(nan(), 0, 1, 3)", BAD, "operand must not be NaN"),
    ("width_bucket(1, 0, 1, 0)", BAD, "bucketCount must be greater than 0"),
    ("width_bucket(1, infinity(), 1, 3)", BAD, "first bound must be finite"),
    ("width_bucket(1, 0, nan(), 3)", BAD, "second bound must be finite"),
    ("width_bucket(d, ARRAY[1.0])", REFUSED, "width_bucket(x, bins)"),
    ("random(0)", BAD, "bound must be positive"),
    ("random(4, 3)", BAD, "start value must be less than stop value"),
    ("random(2.5e0)", REFUSED, "only of integers"),
    ("from_base('12', 2)", BAD, "Not a valid base-2 number: 12"),
    ("from_base('8000000000000000', 16)", BAD, "Not a valid base-16 number: 8000000000000000"),
    ("from_base(e, 10)", BAD, "Not a valid base-10 number:"),
    ("from_base('-', 10)", BAD, "Not a valid base-10 number: -"),
    ("from_base('ff', 37)", BAD, "Radix must be between 2 and 36"),
    ("from_base(s, i)", REFUSED, "constant radix"),
    ("to_base(5, 1)", BAD, "Radix must be between 2 and 36"),
    ("truncate(DECIMAL '1.5', i)", REFUSED, "constant d"),
    ("truncate(i)", REFUSED, "truncate(integer)"),
    ("max(n, 2)", REFUSED, "max(x, n)"),
]

TRIES = [("try(from_base('12', 2))", None), ("try(width_bucket(1, 2, 2, 3))", None), ("try(random(0))", None)]

test_values, test_null_arguments, test_errors = chapter_tests(VALUES, NULLS, ERRORS)
test_try_turns_argument_errors_into_null = try_test(TRIES)


def test_random_keeps_the_integer_type(fn_engine) -> None:
    result = fn_engine.execute("SELECT random(CAST(5 AS tinyint)), random(n), random(3, i) FROM fn_t WHERE k = 1")
    assert [str(t) for t in result.schema.types] == ["int8", "int64", "int32"]
    (row,) = result.rows()
    assert 0 <= row[0] < 5 and 0 <= row[1] < 5 and 3 <= row[2] < 7
