"""Rewrite handlers for Trino's string functions that Spark does not have, or has with other semantics.

chr and codepoint by code point, ends_with, hamming_distance and luhn_check (Spark higher-order functions),
split without regular expressions, split_part returning NULL past the last field, lpad/rpad refusing a negative
size or an empty pad, concat_ws of at least two arguments, replace with an empty search, from_utf8, and typeof
(the type Trino gives a literal, a column or a CAST). Argument errors are Trino's coded errors with its words
(``checked``). Registered in ``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.spark.build import case_when, cast_to, checked, dup, lit, spark_fn, strict_args
from mergekit.sql.spark.rewrite import Out, Rewriter, handler_registry
from mergekit.sql.spark.types import (
    UNKNOWN,
    TrinoType,
    expect_args,
    is_binary,
    is_integral,
    is_string,
    not_supported,
    type_mismatch,
)

HANDLERS, _handles = handler_registry()
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT


def _args(node: exp.Expr) -> list[exp.Expr]:
    return list(node.expressions)


def _arg_types(types: dict[str, Any], key: str = "expressions") -> list[Any]:
    value = types.get(key)
    return list(value) if isinstance(value, list) else []


def _arity(node: exp.Expr, name: str, *allowed: int) -> list[exp.Expr]:
    args = _args(node)
    if len(args) not in allowed:
        raise not_supported(f"function {name}() with {len(args)} arguments is not supported")
    return args


def spark_template(sql: str, **args: exp.Expr) -> exp.Expr:
    """A Spark expression written as SQL text whose ``{name}`` placeholders are the given expressions (each used
    once per occurrence, copied). For constructs easier to read as SQL than as trees: higher-order functions."""
    tree = sqlglot.parse_one(sql.format(**{k: f"__mk_{k}" for k in args}), read="spark")

    def substitute(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith("__mk_"):
            return dup(args[node.name[len("__mk_") :]])
        return node

    return tree.transform(substitute)


# ---- code points


@_handles(exp.Chr)
def _chr(rw: Rewriter, node: exp.Chr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (n,) = _arity(node, "chr", 1)
    expect_args("chr", _arg_types(types), "chr(bigint)", is_integral)
    valid = exp.and_(
        exp.Between(this=dup(n), low=lit(0), high=lit(0x10FFFF)),
        exp.not_(exp.Between(this=dup(n), low=lit(0xD800), high=lit(0xDFFF)), copy=False),
        copy=False,
    )
    message = spark_fn("CONCAT", lit("Not a valid Unicode code point: "), cast_to(dup(n), "STRING"))
    value = spark_fn("FORMAT_STRING", lit("%c"), cast_to(dup(n), "INT"))
    return checked(
        case_when([(valid, value)], exp.Null()), [n], [(exp.not_(valid.copy(), copy=False), _BAD, message)], safe
    )


@_handles("codepoint")
def _codepoint(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (s,) = _arity(node, "codepoint", 1)
    (ts,) = _arg_types(types) or [UNKNOWN]
    if ts.known and ts != UNKNOWN and not (ts.string and ts.p is not None and ts.p <= 1):
        raise type_mismatch(f"Unexpected parameters ({ts}) for function codepoint. Expected: codepoint(varchar(1))")
    single = exp.EQ(this=exp.Length(this=dup(s)), expression=lit(1))
    value = cast_to(spark_fn("ASCII", dup(s)), "INT")
    return checked(
        value, [s], [(exp.not_(single, copy=False), _BAD, "Input string must be a single character string")], safe
    )


@_handles(exp.EndsWith)
def _ends_with(rw: Rewriter, node: exp.EndsWith, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    expect_args(
        "ends_with", [types["this"], types["expression"]], "ends_with(varchar(x), varchar(y))", is_string, is_string
    )
    return spark_fn("ENDSWITH", node.this, node.expression), None


@_handles("hamming_distance")
def _hamming_distance(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    a, b = _arity(node, "hamming_distance", 2)
    expect_args("hamming_distance", _arg_types(types), "hamming_distance(varchar(x), varchar(y))", is_string, is_string)
    distance = spark_template(
        "IF(LENGTH({a}) = 0, CAST(0 AS BIGINT), AGGREGATE(SEQUENCE(1, LENGTH({a})), CAST(0 AS BIGINT), "
        "(mk_acc, mk_i) -> mk_acc + IF(SUBSTRING({a}, mk_i, 1) = SUBSTRING({b}, mk_i, 1), 0, 1)))",
        a=a,
        b=b,
    )
    differ = exp.NEQ(this=exp.Length(this=dup(a)), expression=exp.Length(this=dup(b)))
    return checked(
        distance,
        [a, b],
        [(differ, _BAD, "The input strings to hamming_distance function must have the same length")],
        safe,
    )


@_handles("luhn_check")
def _luhn_check(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (s,) = _arity(node, "luhn_check", 1)
    expect_args("luhn_check", _arg_types(types), "luhn_check(varchar)", is_string)
    # from the right, every second digit doubled (minus 9 above 9); valid when the sum is a multiple of 10
    total = spark_template(
        "AGGREGATE(SEQUENCE(1, LENGTH({s})), 0, (mk_acc, mk_i) -> mk_acc + "
        "IF(mk_i % 2 = 0, IF(2 * CAST(SUBSTRING({s}, -mk_i, 1) AS INT) > 9, 2 * CAST(SUBSTRING({s}, -mk_i, 1) AS INT) - 9, "
        "2 * CAST(SUBSTRING({s}, -mk_i, 1) AS INT)), CAST(SUBSTRING({s}, -mk_i, 1) AS INT)))",
        s=s,
    )
    value = case_when(
        [(exp.EQ(this=exp.Length(this=dup(s)), expression=lit(0)), exp.false())],
        exp.EQ(this=exp.Mod(this=exp.Paren(this=total), expression=lit(10)), expression=lit(0)),
    )
    non_digit = exp.RegexpLike(this=dup(s), expression=lit("[^0-9]"))
    return checked(value, [s], [(non_digit, _BAD, "Input contains non-digit character")], safe)


# ---- splitting


def _quoted(delimiter: exp.Expr) -> exp.Expr:
    """A Java regular expression matching ``delimiter`` literally (Pattern.quote)."""
    if isinstance(delimiter, exp.Literal) and delimiter.is_string:
        return lit("\\Q" + delimiter.this.replace("\\E", "\\E\\\\E\\Q") + "\\E")
    inner = exp.Replace(this=dup(delimiter), expression=lit("\\E"), replacement=lit("\\E\\\\E\\Q"))
    return spark_fn("CONCAT", lit("\\Q"), inner, lit("\\E"))


@_handles(exp.Split)
def _split(rw: Rewriter, node: exp.Split, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's split takes the delimiter literally; Spark's is a regular expression."""
    s, d, limit = node.this, node.expression, node.args.get("limit")
    expect_args("split", [types["this"], types["expression"]], "split(varchar(x), varchar(y))", is_string, is_string)
    checks: list[tuple[exp.Expr, ErrorCode, Any]] = []
    if limit is not None:
        expect_args(
            "split",
            [types["this"], types["expression"], types["limit"]],
            "split(varchar(x), varchar(y), bigint)",
            is_string,
            is_string,
            is_integral,
        )
        checks.append((exp.LTE(this=dup(limit), expression=lit(0)), _BAD, "Limit must be positive"))
        checks.append((exp.GT(this=dup(limit), expression=lit(2**31 - 1)), _BAD, "Limit is too large"))
    checks.append((exp.EQ(this=dup(d), expression=lit("")), _BAD, "The delimiter may not be the empty string"))
    count = cast_to(dup(limit), "INT") if limit is not None else lit(-1)
    value = spark_fn("SPLIT", dup(s), _quoted(d), count)
    return checked(value, [s, d] + ([limit] if limit is not None else []), checks, safe)


@_handles(exp.SplitPart)
def _split_part(rw: Rewriter, node: exp.SplitPart, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """NULL past the last field (Spark: ''); a non-positive index fails (Spark counts negative ones from the end)."""
    s, d, index = node.this, node.args["delimiter"], node.args["part_index"]
    expect_args(
        "split_part",
        [types["this"], types["delimiter"], types["part_index"]],
        "split_part(varchar(x), varchar(y), bigint)",
        is_string,
        is_string,
        is_integral,
    )
    parts = spark_fn("SPLIT", dup(s), _quoted(d), lit(-1))
    by_delimiter = case_when(
        [(exp.GT(this=dup(index), expression=spark_fn("SIZE", parts)), exp.Null())],
        spark_fn("ELEMENT_AT", parts.copy(), cast_to(dup(index), "INT")),
    )
    by_character = case_when(
        [(exp.GT(this=dup(index), expression=exp.Length(this=dup(s))), exp.Null())],
        exp.Substring(this=dup(s), start=dup(index), length=lit(1)),
    )
    value = strict_args(case_when([(exp.EQ(this=dup(d), expression=lit("")), by_character)], by_delimiter), s, d, index)
    bad = exp.LTE(this=dup(index), expression=lit(0))
    return checked(value, [s, d, index], [(bad, _BAD, "Index must be greater than zero")], safe)


# ---- padding, concatenation, replacing


@_handles(exp.Pad)
def _pad(rw: Rewriter, node: exp.Pad, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    s, size, fill = node.this, node.expression, node.args.get("fill_pattern")
    name = "lpad" if node.args.get("is_left") else "rpad"
    if fill is None:
        raise not_supported(f"{name} without a pad string is not supported")
    expect_args(
        name,
        [types["this"], types["expression"], types["fill_pattern"]],
        f"{name}(varchar(x), bigint, varchar(y))",
        is_string,
        is_integral,
        is_string,
    )
    value = spark_fn(name.upper(), dup(s), cast_to(dup(size), "INT"), dup(fill))
    out_of_range = exp.or_(
        exp.LT(this=dup(size), expression=lit(0)), exp.GT(this=dup(size), expression=lit(2**31 - 1)), copy=False
    )
    checks = [
        (out_of_range, _BAD, f"Target length must be in the range [0..{2**31 - 1}]"),
        (exp.EQ(this=dup(fill), expression=lit("")), _BAD, "Padding string must not be empty"),
    ]
    return checked(value, [s, size, fill], checks, safe)


@_handles(exp.ConcatWs)
def _concat_ws(rw: Rewriter, node: exp.ConcatWs, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if len(node.expressions) < 2:
        raise MergekitError(_BAD, "There must be two or more arguments")
    return node, None


@_handles(exp.Replace)
def _replace(rw: Rewriter, node: exp.Replace, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino inserts the replacement before every character and at the end when the search is empty; Spark
    returns the string as it is."""
    s, search, replacement = node.this, node.expression, node.args.get("replacement")
    if replacement is None:
        return spark_fn("REPLACE", s, search, lit("")), None
    escaped = spark_fn("REPLACE", spark_fn("REPLACE", dup(replacement), lit("\\"), lit("\\\\")), lit("$"), lit("\\$"))
    everywhere = spark_fn("REGEXP_REPLACE", dup(s), lit(""), escaped)
    if isinstance(search, exp.Literal) and search.is_string:
        return (everywhere if search.this == "" else spark_fn("REPLACE", s, search, replacement)), None
    plain = spark_fn("REPLACE", dup(s), dup(search), dup(replacement))
    return case_when([(exp.EQ(this=dup(search), expression=lit("")), everywhere)], plain), None


@_handles(exp.Reverse)
def _reverse(rw: Rewriter, node: exp.Reverse, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if is_binary(types["this"]):
        raise not_supported("reverse(varbinary) is not supported on Spark")
    return node, None


@_handles(exp.Decode)
def _from_utf8(rw: Rewriter, node: exp.Decode, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Invalid UTF-8 becomes U+FFFD, as in Trino (Spark's decode raises)."""
    if node.args.get("replace") is not None:
        raise not_supported("from_utf8 with a replacement argument is not supported")
    expect_args("from_utf8", [types["this"]], "from_utf8(varbinary)", is_binary)
    return spark_fn("MAKE_VALID_UTF8", cast_to(node.this, "STRING")), None


# ---- typeof

_TYPEOF_ARGS = (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Cast, exp.TryCast, exp.HexString)


def _trino_type_name(t: TrinoType) -> str:
    if t.name == "array":
        return f"array({_trino_type_name(t.args[0])})"
    if t.name == "map":
        return f"map({_trino_type_name(t.args[0])}, {_trino_type_name(t.args[1])})"
    if t.name == "row":
        return "row(" + ", ".join(f"{n} {_trino_type_name(a)}" for n, a in zip(t.fields, t.args, strict=False)) + ")"
    return str(t)


def typeof_literal(node: exp.Typeof, src: TrinoType) -> exp.Expr:
    """``typeof(x)`` as the literal text of Trino's type of ``x``, known at translation time: only of a literal,
    a column or a CAST, whose inferred types are Trino's exactly (that of a computed expression may be less
    precise, e.g. an unbounded varchar where Trino knows the length). Called on the original tree, before the
    rewrite (``_spark_translate``)."""
    inner = node.this
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if not src.known or not isinstance(inner, _TYPEOF_ARGS):
        raise not_supported("typeof() of a computed expression is not supported (only of a literal, column or CAST)")
    return lit(_trino_type_name(src))


# ---- case mapping: Trino maps code point by code point (Character.toLowerCase/toUpperCase); Spark uses Java's
# String.toLowerCase/toUpperCase, which also applies Unicode's special casing (İ -> i̇, a final Σ -> ς,
# ß -> SS, ligatures and Greek iota forms to several letters).
_SPECIAL_UPPER = (
    "\u0149\u01f0\u0390\u03b0\u0587\u1e96-\u1e9a\u1f50\u1f52\u1f54\u1f56\u1f80-\u1faf\u1fb2-\u1fb4\u1fb6\u1fb7"
    "\u1fbc\u1fc2-\u1fc4\u1fc6\u1fc7\u1fcc\u1fd2\u1fd3\u1fd6\u1fd7\u1fe2-\u1fe4\u1fe6\u1fe7\u1ff2-\u1ff4\u1ff6"
    "\u1ff7\u1ffc\ufb00-\ufb06\ufb13-\ufb17"
)
_PLACEHOLDER = "\ue000"  # a private-use character standing for ß while Spark upper-cases the rest


@_handles(exp.Lower)
def _lower(rw: Rewriter, node: exp.Lower, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """İ and Σ become i and σ first: their per-code-point lower case, which Spark's lower keeps."""
    return spark_fn("LOWER", spark_fn("TRANSLATE", node.this, lit("\u0130\u03a3"), lit("i\u03c3"))), None


@_handles(exp.Upper)
def _upper(rw: Rewriter, node: exp.Upper, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """ß stays ß (a placeholder hides it from Spark's upper); the other special-cased letters, rare, are
    refused when they occur."""
    s = node.this
    hidden = spark_fn("TRANSLATE", dup(s), lit("\u00df"), lit(_PLACEHOLDER))
    value = spark_fn("TRANSLATE", spark_fn("UPPER", hidden), lit(_PLACEHOLDER), lit("\u00df"))
    special = exp.RegexpLike(this=dup(s), expression=lit(f"[{_SPECIAL_UPPER}{_PLACEHOLDER}]"))
    message = "upper() of a letter Unicode upper-cases to several letters (other than ß) is not supported"
    return checked(value, [s], [(special, ErrorCode.NOT_SUPPORTED, message)], safe)


@_handles(exp.Concat)
def _concat(rw: Rewriter, node: exp.Concat, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if len(node.expressions) < 2:
        raise MergekitError(_BAD, "There must be two or more concatenation arguments")
    return node, None


def cast_concat_operands(tree: exp.Expr, type_of: Any) -> None:
    """``||`` and ``concat`` of a number, date, timestamp or boolean operand (an extension: Trino refuses it,
    Calcite's streaming SQL and PostgreSQL take it, ``'An order for ' || units``): the operand becomes
    ``CAST(x AS VARCHAR)``, so it reads as Trino's cast prints it (``1.5E0``, not Spark's implicit ``1.5``).
    Called on the original tree, before the rewrite (``_spark_translate``); an array operand is left alone."""
    for node in list(tree.find_all(exp.DPipe, exp.Concat)):
        if node.args.get("safe") or node.args.get("coalesce"):
            continue
        operands = [node.this, node.expression] if isinstance(node, exp.DPipe) else list(node.expressions)
        types = [type_of(o) for o in operands]
        if any(isinstance(t, TrinoType) and t.name == "array" for t in types):
            continue
        for operand, t in zip(operands, types, strict=True):
            if isinstance(t, TrinoType) and t.known and (t.numeric or t.temporal or t.name == "boolean"):
                cast = exp.Cast(this=exp.Null(), to=exp.DataType.build("varchar"))
                operand.replace(cast)
                cast.set("this", operand)  # (the operand itself: its inferred type stays known)
