"""Trino's string and regular expression functions through the Engine on Spark: values, NULL arguments, empty
strings, and the coded errors Trino gives for invalid arguments (see functions_kit for the table and the rules)."""

from __future__ import annotations

import pytest

from mergekit.errors import ErrorCode

from .functions_kit import check_error, check_nulls, check_values, error_ids

BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT
REFUSED = ErrorCode.NOT_SUPPORTED
MISMATCH = ErrorCode.TYPE_MISMATCH

VALUES = [
    ("chr(65)", "A"),
    ("chr(128512)", "\U0001f600"),
    ("codepoint('a')", 97),
    ("codepoint('\U0001f600')", 128512),
    ("concat(s, 'x')", "abcx"),
    ("concat(s, e)", "abc"),
    ("concat(b, X'01')", b"\n\xff\x01"),
    ("concat_ws(',', s, NULL, 'd')", "abc,d"),
    ("concat_ws(',', e, e)", ","),
    ("concat_ws(',', ARRAY['a', NULL, 'b'])", "a,b"),
    ("ends_with(s, 'bc')", True),
    ("ends_with(s, e)", True),
    ("ends_with(e, 'a')", False),
    ("hamming_distance(s, 'abd')", 1),
    ("hamming_distance(e, e)", 0),
    ("length(s)", 3),
    ("length(e)", 0),
    ("length('\U0001f600')", 1),
    ("length(b)", 2),
    ("levenshtein_distance('kitten', 'sitting')", 3),
    ("levenshtein_distance(e, s)", 3),
    ("lower('AbC')", "abc"),
    ("lower(e)", ""),
    ("upper('aBc')", "ABC"),
    ("upper('stra\u00dfe')", "STRA\u00dfE"),
    ("lower('\u0130\u0391\u03a3 \u0391\u03a3')", "i\u03b1\u03c3 \u03b1\u03c3"),
    ("upper(e)", ""),
    ("lpad(s, 5, '0')", "00abc"),
    ("lpad(s, 2, '0')", "ab"),
    ("lpad(s, 6, 'xy')", "xyxabc"),
    ("lpad(e, 2, 'x')", "xx"),
    ("lpad(s, 0, 'x')", ""),
    ("rpad(s, 6, 'xy')", "abcxyx"),
    ("rpad(s, 1, 'x')", "a"),
    ("ltrim('  a ')", "a "),
    ("rtrim(' a  ')", " a"),
    ("trim(' \t a \n')", "a"),
    ("trim(e)", ""),
    ("trim(BOTH '$' FROM '$var$')", "var"),
    ("trim(TRAILING 'ER' FROM upper('worker'))", "WORK"),
    ("luhn_check('79927398713')", True),
    ("luhn_check('79927398714')", False),
    ("luhn_check(e)", False),
    ("position('b' IN s)", 2),
    ("position(e IN s)", 1),
    ("position('z' IN s)", 0),
    ("replace(s, 'b', 'X')", "aXc"),
    ("replace(s, 'b')", "ac"),
    ("replace(s, e, '-')", "-a-b-c-"),
    ("replace(e, e, '-')", "-"),
    ("replace(s, e, '$1\\')", "$1\\a$1\\b$1\\c$1\\"),
    ("reverse(s)", "cba"),
    ("reverse(e)", ""),
    ("split('a,b,,', ',')", ["a", "b", "", ""]),
    ("split(s, 'b')", ["a", "c"]),
    ("split(e, ',')", [""]),
    ("split('a.b.c', '.', 2)", ["a", "b.c"]),
    ("split('a.b', '.', 5)", ["a", "b"]),
    ("split('a\\Eb', '\\E')", ["a", "b"]),
    ("split_part('a,b,c', ',', 2)", "b"),
    ("split_part(s, ',', 1)", "abc"),
    ("split_part(s, ',', 2)", None),
    ("split_part('a,', ',', 2)", ""),
    ("split_part(s, e, 2)", "b"),
    ("split_part(s, e, 4)", None),
    ("starts_with(s, 'ab')", True),
    ("starts_with(s, e)", True),
    ("strpos(s, 'c')", 3),
    ("strpos(s, e)", 1),
    ("substr(s, 2)", "bc"),
    ("substr(s, 2, 1)", "b"),
    ("substr(s, -1)", "c"),
    ("substr(s, 0)", ""),
    ("substr(s, 4)", ""),
    ("substr(e, 1)", ""),
    ("substring(s, 5, 1)", ""),
    ("substring(s FROM 2 FOR 1)", "b"),
    ("substr(b, 2)", b"\xff"),
    ("translate('abcd', 'a', 'z')", "zbcd"),
    ("translate('abcd', 'ac', 'z')", "zbd"),
    ("translate('abcd', '', '')", "abcd"),
    ("translate(e, 'a', 'b')", ""),
    ("to_utf8(s)", b"abc"),
    ("to_utf8(e)", b""),
    ("from_utf8(to_utf8('\u00e9'))", "\u00e9"),
    ("from_utf8(X'61ff62')", "a\ufffdb"),
    ("from_utf8(X'')", ""),
    # regular expressions (Trino's documentation examples and edge cases)
    ("regexp_like(s, 'b')", True),
    ("regexp_like(s, '^b')", False),
    ("regexp_like(e, '')", True),
    ("regexp_count('1a 2b 14m', '\\s*[a-z]+\\s*')", 3),
    ("regexp_count(s, e)", 4),
    ("regexp_count(e, 'a')", 0),
    ("regexp_extract('1a 2b 14m', '\\d+')", "1"),
    ("regexp_extract('1a 2b 14m', '(\\d+)([a-z]+)', 2)", "a"),
    ("regexp_extract(s, 'x')", None),
    ("regexp_extract(e, '')", ""),
    ("regexp_extract_all('1a 2b 14m', '\\d+')", ["1", "2", "14"]),
    ("regexp_extract_all('1a 2b 14m', '(\\d+)([a-z]+)', 2)", ["a", "b", "m"]),
    ("regexp_extract_all(s, 'x')", []),
    ("regexp_extract_all(s, e)", ["", "", "", ""]),
    ("regexp_position('I have 23 apples, 5 pears and 13 oranges', '\\b\\d+\\b')", 8),
    ("regexp_position(s, 'x')", -1),
    ("regexp_position(e, '')", -1),
    ("regexp_position('\U0001f600b', 'b')", 2),
    ("regexp_replace('1a 2b 14m', '\\d+[ab] ')", "14m"),
    ("regexp_replace('1a 2b 14m', '(\\d+)([ab]) ', '3c$2 ')", "3ca 3cb 14m"),
    ("regexp_replace(s, 'b', '\\$')", "a$c"),
    ("regexp_replace(s, e, '-')", "-a-b-c-"),
    ("regexp_replace(e, 'a', 'b')", ""),
    ("regexp_split('1a 2b 14m', '\\s*[a-z]+\\s*')", ["1", "2", "14", ""]),
    ("regexp_split(s, ',')", ["abc"]),
    ("regexp_split(e, ',')", [""]),
]

NULLS = [
    "chr(n)", "codepoint(CAST(s AS varchar(1)))", "concat(s, 'x')", "concat_ws(s, 'a')", "ends_with(s, 'a')",
    "hamming_distance(s, 'a')", "length(s)", "levenshtein_distance(s, 'a')", "lower(s)", "upper(s)",
    "lpad(s, 3, 'x')", "lpad('a', n, 'x')", "rpad(s, 3, 'x')", "ltrim(s)", "rtrim(s)", "trim(s)", "luhn_check(s)",
    "position('a' IN s)", "replace(s, 'a', 'b')", "replace('a', s, 'b')", "reverse(s)", "split(s, ',')",
    "split('a', s)", "split_part(s, ',', 1)", "split_part('a', ',', n)", "starts_with(s, 'a')", "strpos(s, 'a')",
    "substr(s, 2)", "substring('abc', n)", "translate(s, 'a', 'b')", "to_utf8(s)", "from_utf8(b)",
    "regexp_like(s, 'a')", "regexp_like('a', s)", "regexp_count(s, 'a')", "regexp_extract(s, 'a')",
    "regexp_extract_all(s, 'a')", "regexp_position(s, 'a')", "regexp_replace(s, 'a', 'b')",
    "regexp_replace(s, 'a')", "regexp_split(s, 'a')",
]  # fmt: skip

ERRORS = [
    ("chr(-1)", BAD, "Not a valid Unicode code point: -1"),
    ("chr(1114112)", BAD, "Not a valid Unicode code point: 1114112"),
    ("chr(55296)", BAD, "Not a valid Unicode code point: 55296"),
    ("codepoint('')", BAD, "Input string must be a single character string"),
    ("codepoint('ab')", MISMATCH, "Expected: codepoint(varchar(1))"),
    ("codepoint(s)", MISMATCH, "Expected: codepoint(varchar(1))"),
    ("concat_ws(',')", BAD, "There must be two or more arguments"),
    ("hamming_distance(s, 'ab')", BAD, "The input strings to hamming_distance function must have the same length"),
    ("lpad(s, -1, 'x')", BAD, "Target length must be in the range [0..2147483647]"),
    ("lpad(s, 5, e)", BAD, "Padding string must not be empty"),
    ("rpad(s, 5, e)", BAD, "Padding string must not be empty"),
    ("luhn_check('12a')", BAD, "Input contains non-digit character"),
    ("split(s, e)", BAD, "The delimiter may not be the empty string"),
    ("split(s, ',', 0)", BAD, "Limit must be positive"),
    ("split_part(s, ',', 0)", BAD, "Index must be greater than zero"),
    ("strpos(s, 'a', 2)", REFUSED, "instance"),
    ("reverse(b)", REFUSED, "reverse(varbinary)"),
    ("length(n)", MISMATCH, "for function length"),
    ("upper('\ufb00')", REFUSED, "upper()"),
    ("concat(s)", BAD, "There must be two or more concatenation arguments"),
    ("regexp_extract(s, '(a)', 2)", BAD, "Pattern has 1 groups. Cannot access group 2"),
    ("regexp_extract(s, 'a', -1)", BAD, "Group cannot be negative"),
    ("regexp_extract_all(s, '(a)', 3)", BAD, "Pattern has 1 groups. Cannot access group 3"),
    ("regexp_extract(s, '(x)?c', 1)", REFUSED, "may not take part in a match"),
    ("regexp_extract_all(s, '(a)|(b)', 1)", REFUSED, "may not take part in a match"),
    ("regexp_replace(s, 'b', '$2')", BAD, "Illegal replacement sequence: unknown group 2"),
    ("regexp_replace(s, 'b', '$')", BAD, "Illegal replacement sequence"),
    ("regexp_replace(s, 'b', 'x\\')", BAD, "Illegal replacement sequence"),
    ("regexp_count('\U0001f600', '')", REFUSED, "outside the BMP"),
    ("regexp_split(s, '\\b')", REFUSED, "empty string at the start"),
    ("regexp_split(s, e)", REFUSED, "empty string at the start"),
    ("regexp_position(s, 'a', 2)", REFUSED, "start or occurrence"),
    ("regexp_position(s, s)", REFUSED, "constant pattern"),
    ("regexp_like(s, '(')", BAD, "Invalid regular expression"),
    ("regexp_replace(s, '*x', 'y')", BAD, "Invalid regular expression"),
    ("regexp_like('a', s || '(')", BAD, "Invalid regular expression: Unclosed group"),  # the pattern is data
]


def test_values(fn_engine) -> None:
    check_values(fn_engine, VALUES)


def test_null_arguments(fn_engine) -> None:
    check_nulls(fn_engine, NULLS)


def test_try_turns_argument_errors_into_null(fn_engine) -> None:
    check_values(
        fn_engine,
        [
            ("try(chr(-1))", None),
            ("try(split(s, e))", None),
            ("try(lpad(s, -1, 'x'))", None),
            ("coalesce(try(split_part(s, ',', 0)), 'z')", "z"),
            ("try(regexp_extract(s, 'a', -1))", None),
            ("try(regexp_replace(s, 'b', '$2'))", None),
        ],
    )


@pytest.mark.parametrize(("expression", "code", "words"), ERRORS, ids=error_ids(ERRORS))
def test_errors(fn_engine, expression: str, code: ErrorCode, words: str) -> None:
    check_error(fn_engine, expression, code, words)
