"""Trino's conditional, comparison, conversion, JSON and array functions through the Engine on Spark: values,
NULL arguments, and Trino's coded errors (see functions_kit; ``j`` is
``{"a": {"b": [10, "x", true, null]}, "n": 1.5}``)."""

from __future__ import annotations

from mergekit.errors import ErrorCode

from .functions_kit import chapter_tests

BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT
REFUSED = ErrorCode.NOT_SUPPORTED

VALUES = [
    ("if(n > 0, 'y', 'n')", "y"),
    ("if(n < 0, 'y')", None),
    ("if(NULL, 1, 2)", 2),
    ("if(n > 0, 1, n / 0)", 1),
    ("coalesce(NULL, n, 1)", 5),
    ("coalesce(e, 'x')", ""),
    ("coalesce(n, n / 0)", 5),
    ("nullif(n, 5)", None),
    ("nullif(s, e)", "abc"),
    ("try(n / 0)", None),
    ("try(CAST(s AS integer))", None),
    ("try(n + 1)", 6),
    ("greatest(1, n, 3)", 5),
    ("least(1, n, 3)", 1),
    ("greatest(s, 'b')", "b"),
    ("greatest(1, NULL)", None),
    ("least(d, 1e0)", 1.0),
    ("CAST(n AS varchar)", "5"),
    ("CAST(d AS integer)", 3),
    ("try_cast(s AS integer)", None),
    ("try_cast('12' AS integer)", 12),
    ("typeof(n)", "bigint"),
    ("typeof(s)", "varchar"),
    ("typeof('cat')", "varchar(3)"),
    ("typeof(e)", "varchar"),
    ("typeof(1.50)", "decimal(3,2)"),
    ("typeof(NULL)", "unknown"),
    ("typeof(CAST(1 AS real))", "real"),
    ("typeof(ts6)", "timestamp(6)"),
    ("typeof(tz)", "timestamp(3) with time zone"),
    ("typeof(b)", "varbinary"),
    ("typeof(dt)", "date"),
    ("typeof(1e0)", "double"),
    ("typeof(9999999999)", "bigint"),
    ("typeof(CAST(NULL AS array(integer)))", "array(integer)"),
    ("json_array_length('[1, [2, 3], {}]')", 3),
    ("json_array_length('[]')", 0),
    ("json_array_length(e)", None),
    ("json_array_length('{}')", None),
    ("json_array_length('[1,')", None),
    ("json_extract_scalar(j, '$.a.b[0]')", "10"),
    ("json_extract_scalar(j, '$.a.b[1]')", "x"),
    ("json_extract_scalar(j, '$.a.b.2')", "true"),
    ("json_extract_scalar(j, '$.a.b[3]')", None),
    ("json_extract_scalar(j, '$.a')", None),
    ("json_extract_scalar(j, '$.missing')", None),
    ("json_extract_scalar(j, '$.a.b[9]')", None),
    ('json_extract_scalar(j, \'$["a"]["b"][1]\')', "x"),
    ("json_extract_scalar('[1, 2]', '$[1]')", "2"),
    ("json_extract_scalar('{\"0\": \"k\"}', '$[0]')", "k"),
    ('json_extract_scalar(\'{"a b": "s\\u00e9"}\', \'$["a b"]\')', "s\u00e9"),
    ("json_extract_scalar('\"top\"', '$')", "top"),
    ("json_extract_scalar('12345678901234567890123', '$')", "12345678901234567890123"),
    ("json_extract_scalar('{\"a\": -7}', '$.a')", "-7"),
    ("json_extract_scalar('[1]', '$.a')", None),
    ("json_extract_scalar('5', '$.a')", None),
    ("sequence(1, 3)", [1, 2, 3]),
    ("sequence(3, 1)", [3, 2, 1]),
    ("sequence(1, 5, 2)", [1, 3, 5]),
    ("sequence(1, 10000)", list(range(1, 10001))),
    ("sequence(-3, 3, 4)", [-3, 1]),
    ("sequence(n, 2)", [5, 4, 3, 2]),
]

NULLS = [
    "if(n > 0, 1)", "coalesce(s, e)", "nullif(s, 'a')", "try(n / 1)", "greatest(n, 1)", "least(n, 1)",
    "CAST(n AS varchar)", "try_cast(s AS integer)", "json_array_length(j)", "json_extract_scalar(j, '$.a')",
    "json_extract_scalar('{}', NULL)", "sequence(n, 3)",
]  # fmt: skip

ERRORS = [
    ("json_extract_scalar(j, '$.n')", REFUSED, "non-integer number"),
    ("json_extract_scalar('{\"a\": 1, \"a\": 2}', '$.a')", REFUSED, "cannot parse as JSON"),
    ("json_extract_scalar('{\"a\": 1', '$.a')", REFUSED, "cannot parse as JSON"),
    ("json_extract_scalar('{\"a\": -0}', '$.a')", REFUSED, "-0"),
    ("json_extract_scalar(j, 'a')", BAD, "Invalid JSON path: 'a'"),
    ("json_extract_scalar(j, '$.')", BAD, "Invalid JSON path: '$.'"),
    ("json_extract_scalar(j, '$[\"a')", BAD, "Invalid JSON path"),
    ("json_extract_scalar(j, s)", REFUSED, "constant path"),
    ("json_extract_scalar(n, '$')", ErrorCode.TYPE_MISMATCH, "json_extract_scalar"),
    ("typeof(n + 1)", REFUSED, "typeof() of a computed expression"),
    ("sequence(1, 5, 0)", BAD, "step must not be zero"),
    ("sequence(5, 1, 1)", BAD, "sequence stop value should be greater than or equal to start value"),
    ("sequence(1, 10001)", BAD, "result of sequence function must not have more than 10000 entries"),
    ("sequence(-5000, 5001, 1)", BAD, "result of sequence function must not have more than 10000 entries"),
    ("CAST(s AS integer)", ErrorCode.INVALID_CAST_ARGUMENT, "Cannot cast 'abc' to INT"),
    ("json_value(j, 'lax $.a')", REFUSED, "json_value"),
    ("soundex(s)", REFUSED, "soundex"),
    ("no_such_function(s)", ErrorCode.FUNCTION_NOT_FOUND, "Function 'no_such_function' not registered"),
    ("char_length(s)", ErrorCode.FUNCTION_NOT_FOUND, "Function 'char_length' not registered"),
]


test_values, test_null_arguments, test_errors = chapter_tests(VALUES, NULLS, ERRORS)


# Trino's result type of each function, as the Arrow type of the result column
RESULT_TYPES = [
    ("length(s)", "int64"), ("length(b)", "int64"), ("strpos(s, 'a')", "int64"), ("position('a' IN s)", "int64"),
    ("levenshtein_distance(s, 'a')", "int64"), ("hamming_distance(s, 'abc')", "int64"), ("codepoint('a')", "int32"),
    ("chr(65)", "string"), ("luhn_check('1')", "bool"), ("crc32(b)", "int64"), ("from_big_endian_32(b)", "int32"),
    ("from_big_endian_64(b)", "int64"), ("bit_count(n, 64)", "int64"), ("bitwise_and(i, 1)", "int64"),
    ("bitwise_left_shift(i, 1)", "int32"), ("bitwise_left_shift(CAST(1 AS smallint), 1)", "int16"),
    ("regexp_count(s, 'a')", "int64"), ("regexp_position(s, 'a')", "int32"), ("from_base(s, 10)", "int64"),
    ("to_base(n, 2)", "string"), ("width_bucket(d, 0, 1, 2)", "int64"), ("truncate(d)", "double"),
    ("truncate(r)", "float"), ("truncate(c)", "decimal128(8, 0)"), ("random(i)", "int32"), ("log(2, d)", "double"),
    ("to_unixtime(ts)", "double"), ("from_unixtime(d)", "timestamp[us, tz=UTC]"), ("date_parse(s, '%Y')", "timestamp[us]"),
    ("millisecond(ts)", "int64"), ("year_of_week(dt)", "int64"), ("yow(dt)", "int64"), ("year(dt)", "int64"),
    ("to_milliseconds(INTERVAL '1' DAY)", "int64"), ("json_array_length(j)", "int64"), ("date(ts)", "date32[day]"),
    ("with_timezone(ts, 'UTC')", "timestamp[us, tz=UTC]"), ("md5(b)", "binary"), ("to_hex(b)", "string"),
    ("split(s, ',')", "list<element: string not null>"), ("sequence(1, 3)", "list<element: int64 not null>"),
    ("row_number() OVER ()", "int64"), ("rank() OVER (ORDER BY i)", "int64"), ("dense_rank() OVER ()", "int64"),
    ("ntile(2) OVER (ORDER BY i)", "int64"), ("percent_rank() OVER ()", "double"), ("count(*) OVER ()", "int64"),
    ("approx_distinct(i) OVER ()", "int64"), ("count_if(i > 0) OVER ()", "int64"),
]  # fmt: skip


def test_result_types(fn_engine) -> None:
    result = fn_engine.execute(f"SELECT {', '.join(e for e, _ in RESULT_TYPES)} FROM fn_t WHERE k = 2")
    got = [str(t) for t in result.schema.types]
    assert [(e, g) for (e, want), g in zip(RESULT_TYPES, got, strict=True) if g != want] == []


def test_ranking_without_order_by(fn_engine) -> None:
    """Trino ranks without ORDER BY (all rows are peers); Spark needs an ordered window."""
    rows = fn_engine.execute(
        "SELECT rank() OVER (), dense_rank() OVER (), percent_rank() OVER (), cume_dist() OVER (), "
        "row_number() OVER () BETWEEN 1 AND 2, lag(k) OVER () IS NULL OR k IS NOT NULL FROM fn_t"
    ).rows()
    assert rows == [(1, 1, 0.0, 1.0, True, True), (1, 1, 0.0, 1.0, True, True)]
