"""Rewrite handlers for Trino's mathematical functions that Spark computes differently or lacks.

Logarithms as Java's ``Math.log`` (``-Infinity`` at 0, NaN below; Spark returns NULL) with ``log(b, x)``
computed as ``ln(x) / ln(b)`` in IEEE arithmetic, truncate, width_bucket with Trino's argument errors,
``random(n)`` and ``random(m, n)`` of integers, from_base/to_base with Java's ``Long.parseLong`` and
``Long.toString``, any_value skipping NULLs, and the two-argument min/max (top-n arrays), which are refused. Registered in ``HANDLERS``
(see ``_spark_rewrite``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode
from mergekit.sql.spark.build import (
    DOUBLE_INF,
    DOUBLE_NAN,
    TWO_POW_52,
    case_when,
    cast_to,
    checked,
    dup,
    int_value,
    lit,
    spark_fn,
    strict_args,
)
from mergekit.sql.spark.function_catalog import written_name
from mergekit.sql.spark.rewrite import Out, Rewriter, call_args, handler_registry, need_type
from mergekit.sql.spark.types import (
    REAL,
    TrinoType,
    expect_args,
    is_integral,
    is_number,
    is_string,
    not_supported,
    spark_type,
)

from .strings import spark_template

HANDLERS, _handles = handler_registry()
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT


# ---- logarithms


def java_ln(x: exp.Expr) -> exp.Expr:
    """Java's Math.log: -Infinity at 0, NaN below 0 (Spark's LN is NULL there)."""
    return case_when(
        [
            (exp.EQ(this=dup(x), expression=lit(0)), exp.Neg(this=DOUBLE_INF.copy())),
            (exp.LT(this=dup(x), expression=lit(0)), DOUBLE_NAN.copy()),
        ],
        spark_fn("LN", dup(x)),
    )


def ieee_divide(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    """``a / b`` of doubles as IEEE 754 divides (Spark's ANSI mode raises on a zero divisor): ±Infinity or
    NaN, with the sign of a zero divisor counting."""
    negative_zero = spark_fn("STARTSWITH", cast_to(dup(b), "STRING"), lit("-"))
    inf = spark_fn("IF", negative_zero, exp.Neg(this=DOUBLE_INF.copy()), DOUBLE_INF.copy())
    return case_when(
        [(exp.EQ(this=dup(b), expression=lit(0)), exp.Mul(this=exp.Paren(this=dup(a)), expression=inf))],
        exp.Div(this=exp.Paren(this=dup(a)), expression=exp.Paren(this=dup(b)), typed=False, safe=False),
    )


@_handles(exp.Log)
def _log(rw: Rewriter, node: exp.Log, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """log2 is Spark's LOG2 (``ln(x) / ln(2)`` in both), log10 LOG10, log(b, x) ``ln(x) / ln(b)``. sqlglot's own
    Trino dialect parses log2 and log(2, x) alike; without the written name a literal base 2 or 10 is read as
    log2 or log10."""
    base, x = node.this, node.expression
    if x is None:
        raise not_supported("log with one argument is not supported (use ln)")
    name = written_name(node)
    if name is None and base.is_int and base.name in ("2", "10"):
        name = "log2" if base.name == "2" else "log10"
    if name in ("log2", "log10"):
        fn = "LOG2" if name == "log2" else "LOG10"
        return case_when([(exp.LTE(this=dup(x), expression=lit(0)), java_ln(x))], spark_fn(fn, dup(x))), None
    expect_args("log", [types["this"], types["expression"]], "log(double, double)", is_number, is_number)
    return ieee_divide(java_ln(x), java_ln(base)), None


# ---- rounding toward zero, buckets


@_handles(exp.Trunc)
def _truncate(rw: Rewriter, node: exp.Trunc, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x, d = node.this, node.args.get("decimals")
    src = need_type(types["this"], "truncate")
    if src.decimal:
        assert src.p is not None and src.s is not None
        if d is None:  # decimal(max(1, p - s), 0), toward zero
            whole = spark_fn(
                "IF", exp.LT(this=dup(x), expression=lit(0)), spark_fn("CEIL", dup(x)), spark_fn("FLOOR", dup(x))
            )
            return cast_to(whole, f"DECIMAL({max(1, src.p - src.s)},0)"), None
        digits = int_value(d)
        if digits is None:
            raise not_supported("truncate(decimal, d) needs a constant d on Spark")
        scaled = spark_fn(
            "IF",
            exp.LT(this=dup(x), expression=lit(0)),
            spark_fn("CEIL", dup(x), lit(digits)),
            spark_fn("FLOOR", dup(x), lit(digits)),
        )
        return cast_to(scaled, spark_type(src)), None
    if d is not None:
        raise not_supported(f"truncate({src}, d) is not supported (only of decimals)")
    if not src.floating:
        raise not_supported(f"truncate({src}) is not supported")
    # Trino: signum(x) * floor(abs(x)), so -0.5 truncates to -0.0
    v = cast_to(x, "DOUBLE") if src == REAL else x
    whole = exp.Mul(
        this=spark_fn("SIGN", dup(v)), expression=spark_fn("ABS", cast_to(cast_to(dup(v), "BIGINT"), "DOUBLE"))
    )
    big = exp.or_(
        spark_fn("ISNAN", dup(v)), exp.GTE(this=spark_fn("ABS", dup(v)), expression=lit(TWO_POW_52)), copy=False
    )
    value = case_when([(big, dup(v))], whole)
    return (cast_to(value, "FLOAT") if src == REAL else value), None


@_handles(exp.WidthBucket)
def _width_bucket(rw: Rewriter, node: exp.WidthBucket, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x, b1, b2, n = (node.args.get(k) for k in ("this", "min_value", "max_value", "num_buckets"))
    if b2 is None or n is None:
        raise not_supported("width_bucket(x, bins) is not supported")
    expect_args(
        "width_bucket",
        [types["this"], types["min_value"], types["max_value"], types["num_buckets"]],
        "width_bucket(double, double, double, bigint)",
        is_number,
        is_number,
        is_number,
        is_integral,
    )
    assert x is not None and b1 is not None
    x, b1, b2 = (cast_to(e, "DOUBLE") for e in (x, b1, b2))
    n = cast_to(n, "BIGINT")
    lower, upper = spark_fn("LEAST", dup(b1), dup(b2)), spark_fn("GREATEST", dup(b1), dup(b2))
    inside = cast_to(
        exp.Add(
            this=exp.Div(
                this=exp.Mul(
                    this=cast_to(dup(n), "DOUBLE"), expression=exp.Paren(this=exp.Sub(this=dup(x), expression=lower))
                ),
                expression=exp.Paren(this=exp.Sub(this=upper, expression=lower.copy())),
                typed=False,
                safe=False,
            ),
            expression=lit(1),
        ),
        "BIGINT",
    )
    bucket = case_when(
        [
            (exp.LT(this=dup(x), expression=lower.copy()), lit(0)),
            (exp.GTE(this=dup(x), expression=upper.copy()), exp.Add(this=dup(n), expression=lit(1))),
        ],
        inside,
    )
    descending = exp.GT(this=dup(b1), expression=dup(b2))
    value = case_when(
        [(descending, exp.Add(this=exp.Sub(this=dup(n), expression=exp.Paren(this=bucket)), expression=lit(1)))],
        bucket.copy(),
    )

    def finite(b: exp.Expr) -> exp.Expr:
        return exp.and_(
            exp.not_(spark_fn("ISNAN", dup(b)), copy=False),
            exp.LT(this=spark_fn("ABS", dup(b)), expression=DOUBLE_INF.copy()),
            copy=False,
        )

    checks = [
        (exp.LTE(this=dup(n), expression=lit(0)), _BAD, "bucketCount must be greater than 0"),
        (spark_fn("ISNAN", dup(x)), _BAD, "operand must not be NaN"),
        (exp.not_(finite(b1), copy=False), _BAD, "first bound must be finite"),
        (exp.not_(finite(b2), copy=False), _BAD, "second bound must be finite"),
        (exp.EQ(this=dup(b1), expression=dup(b2)), _BAD, "bounds cannot equal each other"),
    ]
    return checked(value, [x, b1, b2, n], checks, safe)


# ---- random


@_handles(exp.Rand)
def _random(rw: Rewriter, node: exp.Rand, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """random() is Spark's rand(); random(n) and random(m, n) of integers draw from [0, n) and [m, n) in the
    argument's type (Spark's rand(n) takes a seed)."""
    first, second = node.args.get("this"), node.args.get("lower")
    if first is None:
        return spark_fn("RAND"), None
    tfirst = need_type(types["this"], "random(n)")
    if not tfirst.integral:
        raise not_supported(f"random({tfirst}) is not supported (only of integers)")
    spark = spark_type(t if t.known and t.integral else tfirst)
    if second is None:
        value = cast_to(spark_fn("FLOOR", exp.Mul(this=spark_fn("RAND"), expression=dup(first))), spark)
        return checked(
            value, [first], [(exp.LTE(this=dup(first), expression=lit(0)), _BAD, "bound must be positive")], safe
        )
    span = exp.Paren(this=exp.Sub(this=cast_to(dup(second), "DOUBLE"), expression=cast_to(dup(first), "DOUBLE")))
    value = cast_to(
        exp.Add(this=dup(first), expression=spark_fn("FLOOR", exp.Mul(this=spark_fn("RAND"), expression=span))), spark
    )
    check = (exp.GTE(this=dup(first), expression=dup(second)), _BAD, "start value must be less than stop value")
    return checked(value, [first, second], [check], safe)


# ---- bases


def _radix_check(radix: exp.Expr) -> tuple[exp.Expr, ErrorCode, str]:
    bad = exp.or_(exp.LT(this=dup(radix), expression=lit(2)), exp.GT(this=dup(radix), expression=lit(36)), copy=False)
    return bad, _BAD, "Radix must be between 2 and 36"


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


@_handles(exp.FromBase)
def _from_base(rw: Rewriter, node: exp.FromBase, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Java's Long.parseLong: an optional sign and at least one digit of the radix; out of bigint range fails."""
    s, radix = node.this, node.expression
    expect_args(
        "from_base", [types["this"], types["expression"]], "from_base(varchar(x), bigint)", is_string, is_integral
    )
    r = int_value(radix)
    if r is None:
        raise not_supported("from_base needs a constant radix on Spark")
    if not 2 <= r <= 36:
        return checked(exp.Null(), [s], [(exp.true(), _BAD, "Radix must be between 2 and 36")], safe)
    top = _DIGITS[r - 1]
    valid = f"^[+-]?[0-{_DIGITS[min(r, 10) - 1]}" + (f"a-{top}A-{top.upper()}" if r > 10 else "") + "]+$"
    magnitude = spark_fn("REGEXP_REPLACE", dup(s), lit("^[+-]?0*"), lit(""))
    longest = len(_to_base(2**63, r))
    value = spark_template(
        "IF(LENGTH({m}) = 0, CAST(0 AS DECIMAL(38,0)), AGGREGATE(SEQUENCE(1, LENGTH({m})), CAST(0 AS DECIMAL(38,0)), "
        "(mk_acc, mk_i) -> CAST(mk_acc * {r} + (INSTR('"
        + _DIGITS
        + "', LOWER(SUBSTRING({m}, mk_i, 1))) - 1) AS DECIMAL(38,0))))",
        m=magnitude,
        r=lit(r),
    )
    negative = spark_fn("STARTSWITH", dup(s), lit("-"))
    signed = spark_fn("IF", negative, exp.Neg(this=exp.Paren(this=value)), value.copy())
    too_big = exp.or_(
        exp.GT(this=exp.Length(this=magnitude.copy()), expression=lit(longest)),
        exp.GT(this=signed.copy(), expression=lit(2**63 - 1)),
        exp.LT(this=signed.copy(), expression=exp.Neg(this=lit(2**63))),
        copy=False,
    )
    invalid = exp.or_(exp.not_(exp.RegexpLike(this=dup(s), expression=lit(valid)), copy=False), too_big, copy=False)
    message = spark_fn("CONCAT", lit(f"Not a valid base-{r} number: "), dup(s))
    safe_value = case_when([(invalid.copy(), exp.Null())], cast_to(signed, "BIGINT"))
    return checked(safe_value, [s], [(invalid, _BAD, message)], safe)


def _to_base(value: int, radix: int) -> str:
    out = ""
    while value:
        value, d = divmod(value, radix)
        out = _DIGITS[d] + out
    return out or "0"


@_handles("to_base")
def _to_base_handler(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Java's Long.toString(x, radix): lower-case digits, a minus sign for negative numbers."""
    x, radix = call_args(node, "to_base", 2)
    expect_args("to_base", list(types["expressions"]), "to_base(bigint, bigint)", is_integral, is_integral)
    text = spark_fn(
        "LOWER",
        spark_fn(
            "CONV", cast_to(cast_to(dup(x), "BIGINT"), "STRING"), lit(10), exp.Neg(this=cast_to(dup(radix), "INT"))
        ),
    )
    return checked(text, [x, radix], [_radix_check(radix)], safe)


# ---- aggregates


@_handles(exp.Max, exp.Min)
def _min_max(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if node.expressions or node.args.get("count") is not None:
        raise not_supported(f"{node.key}(x, n) is not supported on Spark")
    return node, None


@_handles(exp.AnyValue)
def _any_value(rw: Rewriter, node: exp.AnyValue, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's any_value/arbitrary return a non-NULL value when there is one; Spark's may return a NULL."""
    return spark_fn("ANY_VALUE", node.this, exp.true()), None


@_handles(exp.IsNan)
def _is_nan(rw: Rewriter, node: exp.IsNan, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """NULL of NULL (Spark's isnan(NULL) is false)."""
    return strict_args(spark_fn("ISNAN", dup(node.this)), node.this), None
