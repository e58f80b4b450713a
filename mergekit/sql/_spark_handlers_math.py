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

from ._function_catalog import written_name
from ._spark_build import (
    _DOUBLE_INF,
    _DOUBLE_NAN,
    _TWO_POW_52,
    _case,
    _cast,
    _checked,
    _dup,
    _fn,
    _int_value,
    _lit,
    _strict,
)
from ._spark_handlers_strings import spark_template
from ._spark_rewrite import _Handler, _need, _Out, _registrar, _Rewriter
from ._spark_types import _T, REAL, _not_supported, _spark_type, expect_args, is_integral, is_number, is_string

HANDLERS: dict[Any, _Handler] = {}
_handles = _registrar(HANDLERS)
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT


# ---- logarithms


def java_ln(x: exp.Expr) -> exp.Expr:
    """Java's Math.log: -Infinity at 0, NaN below 0 (Spark's LN is NULL there)."""
    return _case(
        [
            (exp.EQ(this=_dup(x), expression=_lit(0)), exp.Neg(this=_DOUBLE_INF.copy())),
            (exp.LT(this=_dup(x), expression=_lit(0)), _DOUBLE_NAN.copy()),
        ],
        _fn("LN", _dup(x)),
    )


def ieee_divide(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    """``a / b`` of doubles as IEEE 754 divides (Spark's ANSI mode raises on a zero divisor): ±Infinity or
    NaN, with the sign of a zero divisor counting."""
    negative_zero = _fn("STARTSWITH", _cast(_dup(b), "STRING"), _lit("-"))
    inf = _fn("IF", negative_zero, exp.Neg(this=_DOUBLE_INF.copy()), _DOUBLE_INF.copy())
    return _case(
        [(exp.EQ(this=_dup(b), expression=_lit(0)), exp.Mul(this=exp.Paren(this=_dup(a)), expression=inf))],
        exp.Div(this=exp.Paren(this=_dup(a)), expression=exp.Paren(this=_dup(b)), typed=False, safe=False),
    )


@_handles(exp.Log)
def _log(rw: _Rewriter, node: exp.Log, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """log2 is Spark's LOG2 (``ln(x) / ln(2)`` in both), log10 LOG10, log(b, x) ``ln(x) / ln(b)``. sqlglot's own
    Trino dialect parses log2 and log(2, x) alike; without the written name a literal base 2 or 10 is read as
    log2 or log10."""
    base, x = node.this, node.expression
    if x is None:
        raise _not_supported("log with one argument is not supported (use ln)")
    name = written_name(node)
    if name is None and base.is_int and base.name in ("2", "10"):
        name = "log2" if base.name == "2" else "log10"
    if name in ("log2", "log10"):
        fn = "LOG2" if name == "log2" else "LOG10"
        return _case([(exp.LTE(this=_dup(x), expression=_lit(0)), java_ln(x))], _fn(fn, _dup(x))), None
    expect_args("log", [types["this"], types["expression"]], "log(double, double)", is_number, is_number)
    return ieee_divide(java_ln(x), java_ln(base)), None


# ---- rounding toward zero, buckets


@_handles(exp.Trunc)
def _truncate(rw: _Rewriter, node: exp.Trunc, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x, d = node.this, node.args.get("decimals")
    src = _need(types["this"], "truncate")
    if src.decimal:
        assert src.p is not None and src.s is not None
        if d is None:  # decimal(max(1, p - s), 0), toward zero
            whole = _fn("IF", exp.LT(this=_dup(x), expression=_lit(0)), _fn("CEIL", _dup(x)), _fn("FLOOR", _dup(x)))
            return _cast(whole, f"DECIMAL({max(1, src.p - src.s)},0)"), None
        digits = _int_value(d)
        if digits is None:
            raise _not_supported("truncate(decimal, d) needs a constant d on Spark")
        scaled = _fn(
            "IF",
            exp.LT(this=_dup(x), expression=_lit(0)),
            _fn("CEIL", _dup(x), _lit(digits)),
            _fn("FLOOR", _dup(x), _lit(digits)),
        )
        return _cast(scaled, _spark_type(src)), None
    if d is not None:
        raise _not_supported(f"truncate({src}, d) is not supported (only of decimals)")
    if not src.floating:
        raise _not_supported(f"truncate({src}) is not supported")
    # Trino: signum(x) * floor(abs(x)), so -0.5 truncates to -0.0
    v = _cast(x, "DOUBLE") if src == REAL else x
    whole = exp.Mul(this=_fn("SIGN", _dup(v)), expression=_fn("ABS", _cast(_cast(_dup(v), "BIGINT"), "DOUBLE")))
    big = exp.or_(_fn("ISNAN", _dup(v)), exp.GTE(this=_fn("ABS", _dup(v)), expression=_lit(_TWO_POW_52)), copy=False)
    value = _case([(big, _dup(v))], whole)
    return (_cast(value, "FLOAT") if src == REAL else value), None


@_handles(exp.WidthBucket)
def _width_bucket(rw: _Rewriter, node: exp.WidthBucket, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x, b1, b2, n = (node.args.get(k) for k in ("this", "min_value", "max_value", "num_buckets"))
    if b2 is None or n is None:
        raise _not_supported("width_bucket(x, bins) is not supported")
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
    x, b1, b2 = (_cast(e, "DOUBLE") for e in (x, b1, b2))
    n = _cast(n, "BIGINT")
    lower, upper = _fn("LEAST", _dup(b1), _dup(b2)), _fn("GREATEST", _dup(b1), _dup(b2))
    inside = _cast(
        exp.Add(
            this=exp.Div(
                this=exp.Mul(
                    this=_cast(_dup(n), "DOUBLE"), expression=exp.Paren(this=exp.Sub(this=_dup(x), expression=lower))
                ),
                expression=exp.Paren(this=exp.Sub(this=upper, expression=lower.copy())),
                typed=False,
                safe=False,
            ),
            expression=_lit(1),
        ),
        "BIGINT",
    )
    bucket = _case(
        [
            (exp.LT(this=_dup(x), expression=lower.copy()), _lit(0)),
            (exp.GTE(this=_dup(x), expression=upper.copy()), exp.Add(this=_dup(n), expression=_lit(1))),
        ],
        inside,
    )
    descending = exp.GT(this=_dup(b1), expression=_dup(b2))
    value = _case(
        [(descending, exp.Add(this=exp.Sub(this=_dup(n), expression=exp.Paren(this=bucket)), expression=_lit(1)))],
        bucket.copy(),
    )

    def finite(b: exp.Expr) -> exp.Expr:
        return exp.and_(
            exp.not_(_fn("ISNAN", _dup(b)), copy=False),
            exp.LT(this=_fn("ABS", _dup(b)), expression=_DOUBLE_INF.copy()),
            copy=False,
        )

    checks = [
        (exp.LTE(this=_dup(n), expression=_lit(0)), _BAD, "bucketCount must be greater than 0"),
        (_fn("ISNAN", _dup(x)), _BAD, "operand must not be NaN"),
        (exp.not_(finite(b1), copy=False), _BAD, "first bound must be finite"),
        (exp.not_(finite(b2), copy=False), _BAD, "second bound must be finite"),
        (exp.EQ(this=_dup(b1), expression=_dup(b2)), _BAD, "bounds cannot equal each other"),
    ]
    return _checked(value, [x, b1, b2, n], checks, safe)


# ---- random


@_handles(exp.Rand)
def _random(rw: _Rewriter, node: exp.Rand, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """random() is Spark's rand(); random(n) and random(m, n) of integers draw from [0, n) and [m, n) in the
    argument's type (Spark's rand(n) takes a seed)."""
    first, second = node.args.get("this"), node.args.get("lower")
    if first is None:
        return _fn("RAND"), None
    tfirst = _need(types["this"], "random(n)")
    if not tfirst.integral:
        raise _not_supported(f"random({tfirst}) is not supported (only of integers)")
    spark = _spark_type(t if t.known and t.integral else tfirst)
    if second is None:
        value = _cast(_fn("FLOOR", exp.Mul(this=_fn("RAND"), expression=_dup(first))), spark)
        return _checked(
            value, [first], [(exp.LTE(this=_dup(first), expression=_lit(0)), _BAD, "bound must be positive")], safe
        )
    span = exp.Paren(this=exp.Sub(this=_cast(_dup(second), "DOUBLE"), expression=_cast(_dup(first), "DOUBLE")))
    value = _cast(exp.Add(this=_dup(first), expression=_fn("FLOOR", exp.Mul(this=_fn("RAND"), expression=span))), spark)
    check = (exp.GTE(this=_dup(first), expression=_dup(second)), _BAD, "start value must be less than stop value")
    return _checked(value, [first, second], [check], safe)


# ---- bases


def _radix_check(radix: exp.Expr) -> tuple[exp.Expr, ErrorCode, str]:
    bad = exp.or_(
        exp.LT(this=_dup(radix), expression=_lit(2)), exp.GT(this=_dup(radix), expression=_lit(36)), copy=False
    )
    return bad, _BAD, "Radix must be between 2 and 36"


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


@_handles(exp.FromBase)
def _from_base(rw: _Rewriter, node: exp.FromBase, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Java's Long.parseLong: an optional sign and at least one digit of the radix; out of bigint range fails."""
    s, radix = node.this, node.expression
    expect_args(
        "from_base", [types["this"], types["expression"]], "from_base(varchar(x), bigint)", is_string, is_integral
    )
    r = _int_value(radix)
    if r is None:
        raise _not_supported("from_base needs a constant radix on Spark")
    if not 2 <= r <= 36:
        return _checked(exp.Null(), [s], [(exp.true(), _BAD, "Radix must be between 2 and 36")], safe)
    top = _DIGITS[r - 1]
    valid = f"^[+-]?[0-{_DIGITS[min(r, 10) - 1]}" + (f"a-{top}A-{top.upper()}" if r > 10 else "") + "]+$"
    magnitude = _fn("REGEXP_REPLACE", _dup(s), _lit("^[+-]?0*"), _lit(""))
    longest = len(_to_base(2**63, r))
    value = spark_template(
        "IF(LENGTH({m}) = 0, CAST(0 AS DECIMAL(38,0)), AGGREGATE(SEQUENCE(1, LENGTH({m})), CAST(0 AS DECIMAL(38,0)), "
        "(mk_acc, mk_i) -> CAST(mk_acc * {r} + (INSTR('"
        + _DIGITS
        + "', LOWER(SUBSTRING({m}, mk_i, 1))) - 1) AS DECIMAL(38,0))))",
        m=magnitude,
        r=_lit(r),
    )
    negative = _fn("STARTSWITH", _dup(s), _lit("-"))
    signed = _fn("IF", negative, exp.Neg(this=exp.Paren(this=value)), value.copy())
    too_big = exp.or_(
        exp.GT(this=exp.Length(this=magnitude.copy()), expression=_lit(longest)),
        exp.GT(this=signed.copy(), expression=_lit(2**63 - 1)),
        exp.LT(this=signed.copy(), expression=exp.Neg(this=_lit(2**63))),
        copy=False,
    )
    invalid = exp.or_(exp.not_(exp.RegexpLike(this=_dup(s), expression=_lit(valid)), copy=False), too_big, copy=False)
    message = _fn("CONCAT", _lit(f"Not a valid base-{r} number: "), _dup(s))
    safe_value = _case([(invalid.copy(), exp.Null())], _cast(signed, "BIGINT"))
    return _checked(safe_value, [s], [(invalid, _BAD, message)], safe)


def _to_base(value: int, radix: int) -> str:
    out = ""
    while value:
        value, d = divmod(value, radix)
        out = _DIGITS[d] + out
    return out or "0"


@_handles("to_base")
def _to_base_handler(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Java's Long.toString(x, radix): lower-case digits, a minus sign for negative numbers."""
    args = list(node.expressions)
    if len(args) != 2:
        raise _not_supported("to_base takes two arguments")
    x, radix = args
    expect_args("to_base", list(types["expressions"]), "to_base(bigint, bigint)", is_integral, is_integral)
    text = _fn(
        "LOWER",
        _fn("CONV", _cast(_cast(_dup(x), "BIGINT"), "STRING"), _lit(10), exp.Neg(this=_cast(_dup(radix), "INT"))),
    )
    return _checked(text, [x, radix], [_radix_check(radix)], safe)


# ---- aggregates


@_handles(exp.Max, exp.Min)
def _min_max(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.expressions or node.args.get("count") is not None:
        raise _not_supported(f"{node.key}(x, n) is not supported on Spark")
    return node, None


@_handles(exp.AnyValue)
def _any_value(rw: _Rewriter, node: exp.AnyValue, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino's any_value/arbitrary return a non-NULL value when there is one; Spark's may return a NULL."""
    return _fn("ANY_VALUE", node.this, exp.true()), None


@_handles(exp.IsNan)
def _is_nan(rw: _Rewriter, node: exp.IsNan, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """NULL of NULL (Spark's isnan(NULL) is false)."""
    return _strict(_fn("ISNAN", _dup(node.this)), node.this), None
