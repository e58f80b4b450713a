"""Rewrite handlers for Trino's binary and bitwise functions.

Hashes return varbinary (Spark's return hex text), hex and base64 decoding fail on malformed input as Trino's
strict decoders do (Spark's are lenient: an odd hex digit count gets a leading zero, base64 skips unknown
characters), base64 text has no line breaks (Spark's ``base64`` wraps at 76 characters), the big-endian
encodings, and the bitwise functions with Trino's rules for shift counts of 64 and more. Registered in
``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode
from mergekit.sql.spark.build import case_when, cast_to, checked, dup, lit, spark_fn
from mergekit.sql.spark.rewrite import Out, Rewriter, handler_registry, need_type
from mergekit.sql.spark.types import (
    BIGINT,
    INTEGER,
    SMALLINT,
    TINYINT,
    TrinoType,
    expect_args,
    is_binary,
    is_integral,
    not_supported,
)

HANDLERS, _handles = handler_registry()
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT


def _one(node: exp.Expr, name: str) -> exp.Expr:
    args = list(node.expressions) if isinstance(node, exp.Anonymous) else [node.this]
    if len(args) != 1:
        raise not_supported(f"function {name}() with {len(args)} arguments is not supported")
    return args[0]


def _first_type(types: dict[str, Any]) -> Any:
    """The type of the first argument: ``this``, or an anonymous call's first of ``expressions``."""
    if isinstance(types.get("this"), TrinoType):
        return types["this"]
    value = types.get("expressions")
    return value[0] if isinstance(value, list) and value else None


def _binary_arg(node: exp.Expr, types: dict[str, Any], name: str) -> exp.Expr:
    x = _one(node, name)
    expect_args(name, [_first_type(types)], f"{name}(varbinary)", is_binary)
    return x


# ---- hashes


@_handles(exp.MD5Digest)
def _md5(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if node.expressions:
        raise not_supported("md5 with more than one argument is not supported")
    return spark_fn("UNHEX", spark_fn("MD5", _binary_arg(node, types, "md5"))), None


@_handles(exp.SHA)
def _sha1(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return spark_fn("UNHEX", spark_fn("SHA1", _binary_arg(node, types, "sha1"))), None


@_handles(exp.SHA2Digest)
def _sha2(rw: Rewriter, node: exp.SHA2Digest, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    bits = node.args.get("length")
    if bits is None or bits.name not in ("256", "512"):
        raise not_supported("only sha256 and sha512 are supported")
    return spark_fn("UNHEX", spark_fn("SHA2", _binary_arg(node, types, f"sha{bits.name}"), lit(int(bits.name)))), None


@_handles("crc32")
def _crc32(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return spark_fn("CRC32", _binary_arg(node, types, "crc32")), None


# ---- hex and base64


@_handles(exp.Hex)
def _to_hex(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return spark_fn("HEX", _binary_arg(node, types, "to_hex")), None


def _text(x: exp.Expr, t: Any, name: str) -> exp.Expr:
    """The text argument of a decoding function (Trino also takes the bytes of a varbinary)."""
    expect_args(name, [t], f"{name}(varchar(x))", lambda u: u.string or u.name == "varbinary")
    return cast_to(x, "STRING") if isinstance(t, TrinoType) and t.name == "varbinary" else x


@_handles(exp.Unhex)
def _from_hex(rw: Rewriter, node: exp.Unhex, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if node.args.get("expression") is not None:
        raise not_supported("from_hex with more than one argument is not supported")
    s = _text(node.this, types["this"], "from_hex")
    odd = exp.EQ(this=exp.Mod(this=spark_fn("OCTET_LENGTH", dup(s)), expression=lit(2)), expression=lit(1))
    bad_digit = spark_fn("REGEXP_EXTRACT", dup(s), lit("[^0-9A-Fa-f]"), lit(0))
    checks = [
        (
            odd,
            _BAD,
            spark_fn("CONCAT", lit("invalid input length "), cast_to(spark_fn("OCTET_LENGTH", dup(s)), "STRING")),
        ),
        (
            exp.RegexpLike(this=dup(s), expression=lit("[^0-9A-Fa-f]")),
            _BAD,
            spark_fn(
                "CONCAT",
                lit('not a hexadecimal digit: "'),
                bad_digit,
                lit('" = '),
                cast_to(spark_fn("ASCII", bad_digit.copy()), "STRING"),
            ),
        ),
    ]
    return checked(spark_fn("UNHEX", dup(s)), [s], checks, safe)


def _base64(x: exp.Expr) -> exp.Expr:
    """Spark's base64 without the MIME line breaks it inserts every 76 characters (Java's basic encoder)."""
    return spark_fn("REPLACE", spark_fn("BASE64", x), lit("\r\n"), lit(""))


# Java's basic (and URL-safe) decoder: groups of four, the last one of two or three characters with or without
# its padding; anything else (a stray character, one character too many, padding inside) is an error.
_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$"
_BASE64URL = _BASE64.replace("+/", "_-")


def _decode64(s: exp.Expr, pattern: str, safe: bool) -> Out:
    invalid = exp.not_(exp.RegexpLike(this=dup(s), expression=lit(pattern)), copy=False)
    standard = dup(s) if pattern == _BASE64 else spark_fn("TRANSLATE", dup(s), lit("-_"), lit("+/"))
    return checked(spark_fn("UNBASE64", standard), [s], [(invalid, _BAD, "Illegal base64 input")], safe)


@_handles(exp.ToBase64)
def _to_base64(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return _base64(_binary_arg(node, types, "to_base64")), None


@_handles("to_base64url")
def _to_base64url(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return spark_fn("TRANSLATE", _base64(_binary_arg(node, types, "to_base64url")), lit("+/"), lit("-_")), None


@_handles(exp.FromBase64)
def _from_base64(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return _decode64(_text(node.this, types["this"], "from_base64"), _BASE64, safe)


@_handles("from_base64url")
def _from_base64url(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x = _one(node, "from_base64url")
    return _decode64(_text(x, _first_type(types), "from_base64url"), _BASE64URL, safe)


# ---- big-endian encodings


@_handles("to_big_endian_32")
def _to_big_endian_32(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x = _one(node, "to_big_endian_32")
    expect_args(
        "to_big_endian_32", [_first_type(types)], "to_big_endian_32(integer)", lambda u: u.integral and u != BIGINT
    )
    digits = spark_fn("RIGHT", spark_fn("HEX", cast_to(x, "BIGINT")), lit(8))
    return spark_fn("UNHEX", spark_fn("LPAD", digits, lit(8), lit("0"))), None


@_handles("to_big_endian_64")
def _to_big_endian_64(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x = _one(node, "to_big_endian_64")
    expect_args("to_big_endian_64", [_first_type(types)], "to_big_endian_64(bigint)", is_integral)
    return spark_fn("UNHEX", spark_fn("LPAD", spark_fn("HEX", cast_to(x, "BIGINT")), lit(16), lit("0"))), None


def _from_big_endian(node: exp.Expr, types: dict[str, Any], safe: bool, size: int) -> Out:
    name = f"from_big_endian_{size * 8}"
    x = _binary_arg(node, types, name)
    # CONV to a negative base reads the hex digits as a signed 64-bit number
    signed64 = cast_to(spark_fn("CONV", spark_fn("HEX", dup(x)), lit(16), lit(-10)), "BIGINT")
    if size == 8:
        value = signed64
    else:
        unsigned = cast_to(spark_fn("CONV", spark_fn("HEX", dup(x)), lit(16), lit(10)), "BIGINT")
        wrapped = case_when(
            [(exp.GTE(this=unsigned, expression=lit(2**31)), exp.Sub(this=unsigned.copy(), expression=lit(2**32)))],
            unsigned.copy(),
        )
        value = cast_to(wrapped, "INT")
    wrong = exp.NEQ(this=exp.Length(this=dup(x)), expression=lit(size))
    message = spark_fn(
        "CONCAT", lit(f"expected {size}-byte input, but got instead: "), cast_to(exp.Length(this=dup(x)), "STRING")
    )
    return checked(value, [x], [(wrong, _BAD, message)], safe)


@_handles("from_big_endian_32")
def _from_big_endian_32(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return _from_big_endian(node, types, safe, 4)


@_handles("from_big_endian_64")
def _from_big_endian_64(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return _from_big_endian(node, types, safe, 8)


# ---- bitwise


def _bigints(name: str, args: list[exp.Expr], types: list[Any]) -> list[exp.Expr]:
    expect_args(name, types, f"{name}(" + ", ".join("bigint" for _ in args) + ")", *([is_integral] * len(args)))
    return [cast_to(a, "BIGINT") for a in args]


@_handles(exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor)
def _bitwise(rw: Rewriter, node: exp.Binary, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    name = {exp.BitwiseAnd: "bitwise_and", exp.BitwiseOr: "bitwise_or", exp.BitwiseXor: "bitwise_xor"}[type(node)]
    a, b = _bigints(name, [node.this, node.expression], [types["this"], types["expression"]])
    return type(node)(this=exp.Paren(this=a), expression=exp.Paren(this=b)), None


@_handles(exp.BitwiseNot)
def _bitwise_not(rw: Rewriter, node: exp.BitwiseNot, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (x,) = _bigints("bitwise_not", [node.this], [types["this"]])
    return exp.BitwiseNot(this=exp.Paren(this=x)), None


def _anon_args(node: exp.Expr, name: str, count: int) -> list[exp.Expr]:
    args = list(node.expressions)
    if len(args) != count:
        raise not_supported(f"function {name}() with {len(args)} arguments is not supported")
    return args


@_handles("bit_count")
def _bit_count(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x, bits = _bigints("bit_count", _anon_args(node, "bit_count", 2), list(types["expressions"]))
    low = exp.BitwiseNot(
        this=spark_fn("SHIFTLEFT", lit(-1), cast_to(exp.Sub(this=dup(bits), expression=lit(1)), "INT"))
    )
    mask = exp.BitwiseNot(this=spark_fn("SHIFTLEFT", lit(-1), cast_to(dup(bits), "INT")))
    value = cast_to(
        case_when(
            [(exp.EQ(this=dup(bits), expression=lit(64)), spark_fn("BIT_COUNT", dup(x)))],
            spark_fn("BIT_COUNT", exp.BitwiseAnd(this=exp.Paren(this=dup(x)), expression=exp.Paren(this=mask))),
        ),
        "BIGINT",
    )
    out_of_bits = exp.and_(
        exp.NEQ(this=dup(bits), expression=lit(64)),
        exp.or_(exp.LTE(this=dup(bits), expression=lit(1)), exp.GT(this=dup(bits), expression=lit(64)), copy=False),
        copy=False,
    )
    unrepresentable = exp.and_(
        exp.Between(this=dup(bits), low=lit(2), high=lit(63)),
        exp.or_(
            exp.GT(this=dup(x), expression=low),
            exp.LT(this=dup(x), expression=exp.BitwiseNot(this=exp.Paren(this=low.copy()))),
            copy=False,
        ),
        copy=False,
    )
    checks = [
        (
            out_of_bits,
            _BAD,
            spark_fn(
                "CONCAT",
                lit("Bits specified in bit_count must be between 2 and 64, got "),
                cast_to(dup(bits), "STRING"),
            ),
        ),
        (
            unrepresentable,
            _BAD,
            spark_fn(
                "CONCAT",
                lit("Number must be representable with the bits specified. "),
                cast_to(dup(x), "STRING"),
                lit(" cannot be represented with "),
                cast_to(dup(bits), "STRING"),
                lit(" bits"),
            ),
        ),
    ]
    return checked(value, [x, bits], checks, safe)


_WIDTH = {TINYINT: 8, SMALLINT: 16, INTEGER: 32, BIGINT: 64}


def _shift_operands(node: exp.Expr, types: dict[str, Any], name: str) -> tuple[exp.Expr, exp.Expr, TrinoType]:
    value, shift = _anon_args(node, name, 2)
    tv, ts = list(types["expressions"])
    expect_args(name, [tv, ts], f"{name}(bigint, integer)", is_integral, lambda u: u.integral and u != BIGINT)
    need_type(tv, name)
    return cast_to(value, "BIGINT"), cast_to(shift, "INT"), tv


def _narrow(v: exp.Expr, bits: int, spark: str) -> exp.Expr:
    """The low ``bits`` bits of a BIGINT as a signed number of that width (Java's narrowing cast)."""
    low = exp.BitwiseAnd(this=exp.Paren(this=v), expression=lit(2**bits - 1))
    flipped = exp.Paren(this=exp.BitwiseXor(this=exp.Paren(this=low), expression=lit(2 ** (bits - 1))))
    signed = exp.Sub(this=flipped, expression=lit(2 ** (bits - 1)))
    return cast_to(signed, spark)


def _fits_integer(r: exp.Expr, value: exp.Expr, name: str, safe: bool, operands: list[exp.Expr]) -> Out:
    """``value`` when Trino's long result ``r`` of an integer shift fits an integer; beyond, Trino's result is
    not defined by its sources (the integer block refuses the long), so refuse it."""
    outside = exp.not_(exp.Between(this=r, low=lit(-(2**31)), high=lit(2**31 - 1)), copy=False)
    message = f"{name} of an integer whose result does not fit in integer is not supported (cast it to bigint)"
    return checked(value, operands, [(outside, ErrorCode.NOT_SUPPORTED, message)], safe)


@_handles("bitwise_left_shift")
def _left_shift(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino shifts the value as a long (a count of 64 or more gives 0) and keeps the low bits of its type."""
    v, s, tv = _shift_operands(node, types, "bitwise_left_shift")
    far = exp.GTE(this=dup(s), expression=lit(64))
    shifted = spark_fn("SHIFTLEFT", dup(v), dup(s))
    if tv == INTEGER:  # Trino's sign test looks at bit 39 (its INTEGER_SIGNED_BIT constant), not bit 31
        bit39 = exp.NEQ(this=exp.BitwiseAnd(this=exp.Paren(this=shifted), expression=lit(2**39)), expression=lit(0))
        r = spark_fn(
            "IF",
            bit39,
            exp.BitwiseOr(this=exp.Paren(this=shifted.copy()), expression=exp.BitwiseNot(this=lit(2**32 - 1))),
            exp.BitwiseAnd(this=exp.Paren(this=shifted.copy()), expression=lit(2**32 - 1)),
        )
        r = case_when([(far, lit(0))], r)
        return _fits_integer(r, cast_to(r.copy(), "INT"), "bitwise_left_shift", safe, [v, s])
    value = shifted if tv == BIGINT else _narrow(shifted, _WIDTH[tv], _spark(tv))
    return case_when([(far, cast_to(lit(0), _spark(tv)))], value), None


@_handles("bitwise_right_shift")
def _right_shift(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Logical: the value's bits of its type, shifted as a long; a count of 64 or more gives 0, 0 the value."""
    v, s, tv = _shift_operands(node, types, "bitwise_right_shift")
    bits = _WIDTH[tv]
    operand = dup(v) if tv == BIGINT else exp.BitwiseAnd(this=exp.Paren(this=dup(v)), expression=lit(2**bits - 1))
    shifted = spark_fn("SHIFTRIGHTUNSIGNED", operand, dup(s))
    whens: list[tuple[exp.Expr, exp.Expr]] = [(exp.GTE(this=dup(s), expression=lit(64)), lit(0))]
    if tv != BIGINT:
        whens.append((exp.EQ(this=dup(s), expression=lit(0)), dup(v)))
    r = case_when(whens, shifted)
    if tv == INTEGER:
        return _fits_integer(r, cast_to(r.copy(), "INT"), "bitwise_right_shift", safe, [v, s])
    return cast_to(r, _spark(tv)), None


@_handles("bitwise_right_shift_arithmetic")
def _right_shift_arithmetic(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    v, s, tv = _shift_operands(node, types, "bitwise_right_shift_arithmetic")
    far = spark_fn("IF", exp.GTE(this=dup(v), expression=lit(0)), lit(0), lit(-1))
    value = case_when([(exp.GTE(this=dup(s), expression=lit(64)), far)], spark_fn("SHIFTRIGHT", v, s))
    return cast_to(value, _spark(tv)), None


def _spark(t: TrinoType) -> str:
    return {TINYINT: "TINYINT", SMALLINT: "SMALLINT", INTEGER: "INT", BIGINT: "BIGINT"}[t]
