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

from ._spark_build import _case, _cast, _checked, _dup, _fn, _lit
from ._spark_rewrite import _Handler, _need, _Out, _registrar, _Rewriter
from ._spark_types import _T, BIGINT, INTEGER, SMALLINT, TINYINT, _not_supported, expect_args, is_binary, is_integral

HANDLERS: dict[Any, _Handler] = {}
_handles = _registrar(HANDLERS)
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT


def _one(node: exp.Expr, name: str) -> exp.Expr:
    args = list(node.expressions) if isinstance(node, exp.Anonymous) else [node.this]
    if len(args) != 1:
        raise _not_supported(f"function {name}() with {len(args)} arguments is not supported")
    return args[0]


def _first_type(types: dict[str, Any]) -> Any:
    """The type of the first argument: ``this``, or an anonymous call's first of ``expressions``."""
    if isinstance(types.get("this"), _T):
        return types["this"]
    value = types.get("expressions")
    return value[0] if isinstance(value, list) and value else None


def _binary_arg(node: exp.Expr, types: dict[str, Any], name: str) -> exp.Expr:
    x = _one(node, name)
    expect_args(name, [_first_type(types)], f"{name}(varbinary)", is_binary)
    return x


# ---- hashes


@_handles(exp.MD5Digest)
def _md5(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.expressions:
        raise _not_supported("md5 with more than one argument is not supported")
    return _fn("UNHEX", _fn("MD5", _binary_arg(node, types, "md5"))), None


@_handles(exp.SHA)
def _sha1(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _fn("UNHEX", _fn("SHA1", _binary_arg(node, types, "sha1"))), None


@_handles(exp.SHA2Digest)
def _sha2(rw: _Rewriter, node: exp.SHA2Digest, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    bits = node.args.get("length")
    if bits is None or bits.name not in ("256", "512"):
        raise _not_supported("only sha256 and sha512 are supported")
    return _fn("UNHEX", _fn("SHA2", _binary_arg(node, types, f"sha{bits.name}"), _lit(int(bits.name)))), None


@_handles("crc32")
def _crc32(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _fn("CRC32", _binary_arg(node, types, "crc32")), None


# ---- hex and base64


@_handles(exp.Hex)
def _to_hex(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _fn("HEX", _binary_arg(node, types, "to_hex")), None


def _text(x: exp.Expr, t: Any, name: str) -> exp.Expr:
    """The text argument of a decoding function (Trino also takes the bytes of a varbinary)."""
    expect_args(name, [t], f"{name}(varchar(x))", lambda u: u.string or u.name == "varbinary")
    return _cast(x, "STRING") if isinstance(t, _T) and t.name == "varbinary" else x


@_handles(exp.Unhex)
def _from_hex(rw: _Rewriter, node: exp.Unhex, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.args.get("expression") is not None:
        raise _not_supported("from_hex with more than one argument is not supported")
    s = _text(node.this, types["this"], "from_hex")
    odd = exp.EQ(this=exp.Mod(this=_fn("OCTET_LENGTH", _dup(s)), expression=_lit(2)), expression=_lit(1))
    bad_digit = _fn("REGEXP_EXTRACT", _dup(s), _lit("[^0-9A-Fa-f]"), _lit(0))
    checks = [
        (odd, _BAD, _fn("CONCAT", _lit("invalid input length "), _cast(_fn("OCTET_LENGTH", _dup(s)), "STRING"))),
        (
            exp.RegexpLike(this=_dup(s), expression=_lit("[^0-9A-Fa-f]")),
            _BAD,
            _fn(
                "CONCAT",
                _lit('not a hexadecimal digit: "'),
                bad_digit,
                _lit('" = '),
                _cast(_fn("ASCII", bad_digit.copy()), "STRING"),
            ),
        ),
    ]
    return _checked(_fn("UNHEX", _dup(s)), [s], checks, safe)


def _base64(x: exp.Expr) -> exp.Expr:
    """Spark's base64 without the MIME line breaks it inserts every 76 characters (Java's basic encoder)."""
    return _fn("REPLACE", _fn("BASE64", x), _lit("\r\n"), _lit(""))


# Java's basic (and URL-safe) decoder: groups of four, the last one of two or three characters with or without
# its padding; anything else (a stray character, one character too many, padding inside) is an error.
_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$"
_BASE64URL = _BASE64.replace("+/", "_-")


def _decode64(s: exp.Expr, pattern: str, safe: bool) -> _Out:
    invalid = exp.not_(exp.RegexpLike(this=_dup(s), expression=_lit(pattern)), copy=False)
    standard = _dup(s) if pattern == _BASE64 else _fn("TRANSLATE", _dup(s), _lit("-_"), _lit("+/"))
    return _checked(_fn("UNBASE64", standard), [s], [(invalid, _BAD, "Illegal base64 input")], safe)


@_handles(exp.ToBase64)
def _to_base64(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _base64(_binary_arg(node, types, "to_base64")), None


@_handles("to_base64url")
def _to_base64url(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _fn("TRANSLATE", _base64(_binary_arg(node, types, "to_base64url")), _lit("+/"), _lit("-_")), None


@_handles(exp.FromBase64)
def _from_base64(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _decode64(_text(node.this, types["this"], "from_base64"), _BASE64, safe)


@_handles("from_base64url")
def _from_base64url(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x = _one(node, "from_base64url")
    return _decode64(_text(x, _first_type(types), "from_base64url"), _BASE64URL, safe)


# ---- big-endian encodings


@_handles("to_big_endian_32")
def _to_big_endian_32(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x = _one(node, "to_big_endian_32")
    expect_args(
        "to_big_endian_32", [_first_type(types)], "to_big_endian_32(integer)", lambda u: u.integral and u != BIGINT
    )
    digits = _fn("RIGHT", _fn("HEX", _cast(x, "BIGINT")), _lit(8))
    return _fn("UNHEX", _fn("LPAD", digits, _lit(8), _lit("0"))), None


@_handles("to_big_endian_64")
def _to_big_endian_64(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x = _one(node, "to_big_endian_64")
    expect_args("to_big_endian_64", [_first_type(types)], "to_big_endian_64(bigint)", is_integral)
    return _fn("UNHEX", _fn("LPAD", _fn("HEX", _cast(x, "BIGINT")), _lit(16), _lit("0"))), None


def _from_big_endian(node: exp.Expr, types: dict[str, Any], safe: bool, size: int) -> _Out:
    name = f"from_big_endian_{size * 8}"
    x = _binary_arg(node, types, name)
    # CONV to a negative base reads the hex digits as a signed 64-bit number
    signed64 = _cast(_fn("CONV", _fn("HEX", _dup(x)), _lit(16), _lit(-10)), "BIGINT")
    if size == 8:
        value = signed64
    else:
        unsigned = _cast(_fn("CONV", _fn("HEX", _dup(x)), _lit(16), _lit(10)), "BIGINT")
        wrapped = _case(
            [(exp.GTE(this=unsigned, expression=_lit(2**31)), exp.Sub(this=unsigned.copy(), expression=_lit(2**32)))],
            unsigned.copy(),
        )
        value = _cast(wrapped, "INT")
    wrong = exp.NEQ(this=exp.Length(this=_dup(x)), expression=_lit(size))
    message = _fn(
        "CONCAT", _lit(f"expected {size}-byte input, but got instead: "), _cast(exp.Length(this=_dup(x)), "STRING")
    )
    return _checked(value, [x], [(wrong, _BAD, message)], safe)


@_handles("from_big_endian_32")
def _from_big_endian_32(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _from_big_endian(node, types, safe, 4)


@_handles("from_big_endian_64")
def _from_big_endian_64(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _from_big_endian(node, types, safe, 8)


# ---- bitwise


def _bigints(name: str, args: list[exp.Expr], types: list[Any]) -> list[exp.Expr]:
    expect_args(name, types, f"{name}(" + ", ".join("bigint" for _ in args) + ")", *([is_integral] * len(args)))
    return [_cast(a, "BIGINT") for a in args]


@_handles(exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor)
def _bitwise(rw: _Rewriter, node: exp.Binary, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    name = {exp.BitwiseAnd: "bitwise_and", exp.BitwiseOr: "bitwise_or", exp.BitwiseXor: "bitwise_xor"}[type(node)]
    a, b = _bigints(name, [node.this, node.expression], [types["this"], types["expression"]])
    return type(node)(this=exp.Paren(this=a), expression=exp.Paren(this=b)), None


@_handles(exp.BitwiseNot)
def _bitwise_not(rw: _Rewriter, node: exp.BitwiseNot, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    (x,) = _bigints("bitwise_not", [node.this], [types["this"]])
    return exp.BitwiseNot(this=exp.Paren(this=x)), None


def _anon_args(node: exp.Expr, name: str, count: int) -> list[exp.Expr]:
    args = list(node.expressions)
    if len(args) != count:
        raise _not_supported(f"function {name}() with {len(args)} arguments is not supported")
    return args


@_handles("bit_count")
def _bit_count(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x, bits = _bigints("bit_count", _anon_args(node, "bit_count", 2), list(types["expressions"]))
    low = exp.BitwiseNot(this=_fn("SHIFTLEFT", _lit(-1), _cast(exp.Sub(this=_dup(bits), expression=_lit(1)), "INT")))
    mask = exp.BitwiseNot(this=_fn("SHIFTLEFT", _lit(-1), _cast(_dup(bits), "INT")))
    value = _cast(
        _case(
            [(exp.EQ(this=_dup(bits), expression=_lit(64)), _fn("BIT_COUNT", _dup(x)))],
            _fn("BIT_COUNT", exp.BitwiseAnd(this=exp.Paren(this=_dup(x)), expression=exp.Paren(this=mask))),
        ),
        "BIGINT",
    )
    out_of_bits = exp.and_(
        exp.NEQ(this=_dup(bits), expression=_lit(64)),
        exp.or_(exp.LTE(this=_dup(bits), expression=_lit(1)), exp.GT(this=_dup(bits), expression=_lit(64)), copy=False),
        copy=False,
    )
    unrepresentable = exp.and_(
        exp.Between(this=_dup(bits), low=_lit(2), high=_lit(63)),
        exp.or_(
            exp.GT(this=_dup(x), expression=low),
            exp.LT(this=_dup(x), expression=exp.BitwiseNot(this=exp.Paren(this=low.copy()))),
            copy=False,
        ),
        copy=False,
    )
    checks = [
        (
            out_of_bits,
            _BAD,
            _fn(
                "CONCAT",
                _lit("Bits specified in bit_count must be between 2 and 64, got "),
                _cast(_dup(bits), "STRING"),
            ),
        ),
        (
            unrepresentable,
            _BAD,
            _fn(
                "CONCAT",
                _lit("Number must be representable with the bits specified. "),
                _cast(_dup(x), "STRING"),
                _lit(" cannot be represented with "),
                _cast(_dup(bits), "STRING"),
                _lit(" bits"),
            ),
        ),
    ]
    return _checked(value, [x, bits], checks, safe)


_WIDTH = {TINYINT: 8, SMALLINT: 16, INTEGER: 32, BIGINT: 64}


def _shift_operands(node: exp.Expr, types: dict[str, Any], name: str) -> tuple[exp.Expr, exp.Expr, _T]:
    value, shift = _anon_args(node, name, 2)
    tv, ts = list(types["expressions"])
    expect_args(name, [tv, ts], f"{name}(bigint, integer)", is_integral, lambda u: u.integral and u != BIGINT)
    _need(tv, name)
    return _cast(value, "BIGINT"), _cast(shift, "INT"), tv


def _narrow(v: exp.Expr, bits: int, spark: str) -> exp.Expr:
    """The low ``bits`` bits of a BIGINT as a signed number of that width (Java's narrowing cast)."""
    low = exp.BitwiseAnd(this=exp.Paren(this=v), expression=_lit(2**bits - 1))
    flipped = exp.Paren(this=exp.BitwiseXor(this=exp.Paren(this=low), expression=_lit(2 ** (bits - 1))))
    signed = exp.Sub(this=flipped, expression=_lit(2 ** (bits - 1)))
    return _cast(signed, spark)


def _fits_integer(r: exp.Expr, value: exp.Expr, name: str, safe: bool, operands: list[exp.Expr]) -> _Out:
    """``value`` when Trino's long result ``r`` of an integer shift fits an integer; beyond, Trino's result is
    not defined by its sources (the integer block refuses the long), so refuse it."""
    outside = exp.not_(exp.Between(this=r, low=_lit(-(2**31)), high=_lit(2**31 - 1)), copy=False)
    message = f"{name} of an integer whose result does not fit in integer is not supported (cast it to bigint)"
    return _checked(value, operands, [(outside, ErrorCode.NOT_SUPPORTED, message)], safe)


@_handles("bitwise_left_shift")
def _left_shift(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino shifts the value as a long (a count of 64 or more gives 0) and keeps the low bits of its type."""
    v, s, tv = _shift_operands(node, types, "bitwise_left_shift")
    far = exp.GTE(this=_dup(s), expression=_lit(64))
    shifted = _fn("SHIFTLEFT", _dup(v), _dup(s))
    if tv == INTEGER:  # Trino's sign test looks at bit 39 (its INTEGER_SIGNED_BIT constant), not bit 31
        bit39 = exp.NEQ(this=exp.BitwiseAnd(this=exp.Paren(this=shifted), expression=_lit(2**39)), expression=_lit(0))
        r = _fn(
            "IF",
            bit39,
            exp.BitwiseOr(this=exp.Paren(this=shifted.copy()), expression=exp.BitwiseNot(this=_lit(2**32 - 1))),
            exp.BitwiseAnd(this=exp.Paren(this=shifted.copy()), expression=_lit(2**32 - 1)),
        )
        r = _case([(far, _lit(0))], r)
        return _fits_integer(r, _cast(r.copy(), "INT"), "bitwise_left_shift", safe, [v, s])
    value = shifted if tv == BIGINT else _narrow(shifted, _WIDTH[tv], _spark(tv))
    return _case([(far, _cast(_lit(0), _spark(tv)))], value), None


@_handles("bitwise_right_shift")
def _right_shift(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Logical: the value's bits of its type, shifted as a long; a count of 64 or more gives 0, 0 the value."""
    v, s, tv = _shift_operands(node, types, "bitwise_right_shift")
    bits = _WIDTH[tv]
    operand = _dup(v) if tv == BIGINT else exp.BitwiseAnd(this=exp.Paren(this=_dup(v)), expression=_lit(2**bits - 1))
    shifted = _fn("SHIFTRIGHTUNSIGNED", operand, _dup(s))
    whens: list[tuple[exp.Expr, exp.Expr]] = [(exp.GTE(this=_dup(s), expression=_lit(64)), _lit(0))]
    if tv != BIGINT:
        whens.append((exp.EQ(this=_dup(s), expression=_lit(0)), _dup(v)))
    r = _case(whens, shifted)
    if tv == INTEGER:
        return _fits_integer(r, _cast(r.copy(), "INT"), "bitwise_right_shift", safe, [v, s])
    return _cast(r, _spark(tv)), None


@_handles("bitwise_right_shift_arithmetic")
def _right_shift_arithmetic(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    v, s, tv = _shift_operands(node, types, "bitwise_right_shift_arithmetic")
    far = _fn("IF", exp.GTE(this=_dup(v), expression=_lit(0)), _lit(0), _lit(-1))
    value = _case([(exp.GTE(this=_dup(s), expression=_lit(64)), far)], _fn("SHIFTRIGHT", v, s))
    return _cast(value, _spark(tv)), None


def _spark(t: _T) -> str:
    return {TINYINT: "TINYINT", SMALLINT: "SMALLINT", INTEGER: "INT", BIGINT: "BIGINT"}[t]
