"""Trino's binary (hashes, hex, base64, big-endian) and bitwise functions through the Engine on Spark: values,
NULL arguments, empty input, and the coded errors Trino gives (see functions_kit)."""

from __future__ import annotations

import base64
import hashlib
import zlib

from mergekit.errors import ErrorCode

from .functions_kit import chapter_tests, try_test

BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT
REFUSED = ErrorCode.NOT_SUPPORTED
MISMATCH = ErrorCode.TYPE_MISMATCH

VALUES = [
    ("md5(to_utf8('a'))", hashlib.md5(b"a").digest()),
    ("md5(X'')", hashlib.md5(b"").digest()),
    ("sha1(b)", hashlib.sha1(b"\n\xff").digest()),
    ("sha1(X'')", hashlib.sha1(b"").digest()),
    ("sha256(to_utf8('abc'))", hashlib.sha256(b"abc").digest()),
    ("sha256(X'')", hashlib.sha256(b"").digest()),
    ("sha512(b)", hashlib.sha512(b"\n\xff").digest()),
    ("crc32(to_utf8('a'))", zlib.crc32(b"a")),
    ("crc32(X'')", 0),
    ("to_hex(b)", "0AFF"),
    ("to_hex(X'')", ""),
    ("to_hex(md5(X''))", hashlib.md5(b"").hexdigest().upper()),
    ("from_hex('0aff')", b"\n\xff"),
    ("from_hex('0AFF')", b"\n\xff"),
    ("from_hex(e)", b""),
    ("from_hex(to_utf8('0a'))", b"\n"),
    ("to_base64(to_utf8('ab'))", "YWI="),
    ("to_base64(X'')", ""),
    ("to_base64(to_utf8(lpad('', 100, 'a')))", base64.b64encode(b"a" * 100).decode()),
    ("from_base64('YWI=')", b"ab"),
    ("from_base64('YWI')", b"ab"),
    ("from_base64(e)", b""),
    ("to_base64url(X'fbff')", "-_8="),
    ("from_base64url('-_8=')", b"\xfb\xff"),
    ("from_base64url('-_8')", b"\xfb\xff"),
    ("to_big_endian_32(i)", b"\x00\x00\x00\x07"),
    ("to_big_endian_32(-1)", b"\xff\xff\xff\xff"),
    ("to_big_endian_64(n)", b"\x00\x00\x00\x00\x00\x00\x00\x05"),
    ("to_big_endian_64(-2)", b"\xff\xff\xff\xff\xff\xff\xff\xfe"),
    ("from_big_endian_32(X'ffffffff')", -1),
    ("from_big_endian_32(to_big_endian_32(123456))", 123456),
    ("from_big_endian_64(X'8000000000000000')", -9223372036854775808),
    ("from_big_endian_64(to_big_endian_64(n))", 5),
    # bitwise (Trino's documentation examples and shift counts of 64 and more)
    ("bitwise_and(12, 10)", 8),
    ("bitwise_or(12, 10)", 14),
    ("bitwise_xor(12, 10)", 6),
    ("bitwise_not(0)", -1),
    ("bitwise_and(n, 3)", 1),
    ("bit_count(9, 64)", 2),
    ("bit_count(9, 8)", 2),
    ("bit_count(-7, 64)", 62),
    ("bit_count(-7, 8)", 6),
    ("bitwise_left_shift(1, 2)", 4),
    ("bitwise_left_shift(-1, 3)", -8),
    ("bitwise_left_shift(CAST(1 AS bigint), 63)", -9223372036854775808),
    ("bitwise_left_shift(CAST(1 AS bigint), 64)", 0),
    ("bitwise_left_shift(CAST(1 AS tinyint), 7)", -128),
    ("bitwise_left_shift(CAST(1 AS smallint), 15)", -32768),
    ("bitwise_right_shift(8, 3)", 1),
    ("bitwise_right_shift(-8, 1)", 2147483644),
    ("bitwise_right_shift(CAST(-1 AS bigint), 60)", 15),
    ("bitwise_right_shift(CAST(-1 AS bigint), 64)", 0),
    ("bitwise_right_shift(CAST(-1 AS tinyint), 1)", 127),
    ("bitwise_right_shift(CAST(-1 AS tinyint), 0)", -1),
    ("bitwise_right_shift_arithmetic(-8, 1)", -4),
    ("bitwise_right_shift_arithmetic(CAST(-8 AS bigint), 70)", -1),
    ("bitwise_right_shift_arithmetic(CAST(8 AS bigint), 70)", 0),
]

NULLS = [
    "md5(b)", "sha1(b)", "sha256(b)", "sha512(b)", "crc32(b)", "to_hex(b)", "from_hex(s)", "to_base64(b)",
    "from_base64(s)", "to_base64url(b)", "from_base64url(s)", "to_big_endian_32(i)", "from_big_endian_32(b)",
    "to_big_endian_64(n)", "from_big_endian_64(b)", "bitwise_and(n, 1)", "bitwise_or(n, 1)", "bitwise_xor(n, 1)",
    "bitwise_not(n)", "bit_count(n, 64)", "bit_count(1, n)", "bitwise_left_shift(n, 1)", "bitwise_right_shift(n, 1)",
    "bitwise_right_shift_arithmetic(n, 1)", "bitwise_left_shift(1, i)",
]  # fmt: skip

ERRORS = [
    ("md5(s)", MISMATCH, "Unexpected parameters (varchar) for function md5"),
    ("sha256(s)", MISMATCH, "for function sha256"),
    ("to_hex(s)", MISMATCH, "for function to_hex"),
    ("from_hex('abc')", BAD, "invalid input length 3"),
    ("from_hex('zz')", BAD, 'not a hexadecimal digit: "z"'),
    ("from_base64('Y Q==')", BAD, "base64"),
    ("from_base64('Y')", BAD, "base64"),
    ("from_base64('YQ=')", BAD, "base64"),
    ("from_base64url('+/')", BAD, "base64"),
    ("from_big_endian_32(X'01')", BAD, "expected 4-byte input, but got instead: 1"),
    ("from_big_endian_64(b)", BAD, "expected 8-byte input, but got instead: 2"),
    ("to_big_endian_32(n)", MISMATCH, "Expected: to_big_endian_32(integer)"),
    ("bit_count(1, 1)", BAD, "Bits specified in bit_count must be between 2 and 64, got 1"),
    ("bit_count(1, 65)", BAD, "Bits specified in bit_count must be between 2 and 64, got 65"),
    (
        "bit_count(128, 8)",
        BAD,
        "Number must be representable with the bits specified. 128 cannot be represented with 8 bits",
    ),
    ("bitwise_and(d, 1)", MISMATCH, "for function bitwise_and"),
    ("bitwise_left_shift(1, 31)", REFUSED, "does not fit in integer"),
    ("bitwise_left_shift(n, n)", MISMATCH, "for function bitwise_left_shift"),
]

TRIES = [("try(from_hex('zz'))", None), ("try(from_base64('Y'))", None), ("try(bit_count(1, 1))", None)]

test_values, test_null_arguments, test_errors = chapter_tests(VALUES, NULLS, ERRORS)
test_try_turns_argument_errors_into_null = try_test(TRIES)
