"""Rewrite handlers for numbers: arithmetic, numeric functions, aggregates and windows.

Integer and decimal division and modulus with Trino's result types (and IEEE results for floating point
division by zero), decimal precision kept the way Trino keeps it, overflow inside TRY, date arithmetic (an
extension: days added to or between dates, within DATE's range), rounding half away from zero, floor/ceil/sign/ln, and the decimal results of ``sum``/``avg``. Registered in
``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode
from mergekit.sql.spark.build import (
    DOUBLE_INF,
    DOUBLE_NAN,
    TWO_POW_52,
    atom,
    case_when,
    cast_to,
    checked,
    dup,
    failed,
    func_name,
    is_null,
    lit,
    spark_fn,
)
from mergekit.sql.spark.rewrite import Out, Rewriter, handler_registry, need_type
from mergekit.sql.spark.types import (
    BIGINT,
    DATE,
    DATE_DAYS,
    DATE_OVERFLOW_PREFIX,
    DOUBLE,
    INT_MIN,
    MAX_PRECISION,
    REAL,
    UNKNOWN,
    TrinoType,
    as_decimal,
    date_arithmetic_type,
    decimal_type,
    not_supported,
    spark_type,
)

HANDLERS, _handles = handler_registry()


# ---- arithmetic


@_handles(exp.Div)
def _div(rw: Rewriter, node: exp.Div, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    a, b = node.this, node.expression
    ta, tb = types["this"], types["expression"]
    if ta == UNKNOWN or tb == UNKNOWN:
        return _typed_null(t), None
    need_type(t, f"the division {node.sql('trino')}")
    if t.integral:
        return _int_div(a, b, t, safe)
    if t.decimal:
        return _decimal_div(a, b, as_decimal(ta), as_decimal(tb), t, safe)
    if t.floating:
        # IEEE division (x/0 is ±Infinity or NaN on Trino; Spark's ANSI mode raises instead). The sign of
        # a zero divisor counts (1/-0.0 is -Infinity); Spark prints -0.0 with its sign.
        inf = DOUBLE_INF.copy() if t == DOUBLE else cast_to(lit("Infinity"), "FLOAT")
        negative_zero = spark_fn("STARTSWITH", cast_to(dup(b), "STRING"), lit("-"))
        signed_inf = spark_fn("IF", negative_zero, exp.Neg(this=inf.copy()), inf)
        by_zero = exp.Mul(this=dup(a), expression=signed_inf)
        div = exp.Div(this=atom(a), expression=atom(b), typed=False, safe=False)
        return case_when([(exp.EQ(this=dup(b), expression=lit(0)), by_zero)], div), None
    raise not_supported(f"division of {ta} by {tb}")


def _typed_null(t: TrinoType) -> exp.Expr:
    """NULL with Trino's result type (``NULL / 2`` is an INTEGER NULL)."""
    return cast_to(exp.Null(), spark_type(t)) if t.known and t != UNKNOWN else exp.Null()


def _int_div(a: exp.Expr, b: exp.Expr, t: TrinoType, safe: bool) -> Out:
    idiv = exp.IntDiv(this=atom(a), expression=atom(b))
    spark = spark_type(t)
    if not safe:
        return (idiv if t == BIGINT else cast_to(exp.Paren(this=idiv), spark)), None
    guard: exp.Expr = exp.EQ(this=dup(b), expression=lit(0))
    if t == BIGINT:  # Long.MIN_VALUE / -1 overflows inside DIV itself
        overflow = exp.and_(
            exp.EQ(this=dup(a), expression=lit(INT_MIN["bigint"])),
            exp.EQ(this=dup(b), expression=lit(-1)),
            copy=False,
        )
        guard = exp.or_(guard, overflow, copy=False)
    value = case_when([(guard, exp.Null())], cast_to(exp.Paren(this=idiv), spark, safe=True))
    return value, failed(value, a, b)


def _spark_decimal_div_scale(p1: int, s1: int, p2: int, s2: int) -> int:
    """Scale of Spark's decimal division result (spark.sql.decimalOperations.allowPrecisionLoss=true)."""
    scale = max(6, s1 + p2 + 1)
    precision = p1 - s1 + s2 + scale
    if precision <= MAX_PRECISION:
        return scale
    int_digits = precision - scale
    return max(MAX_PRECISION - int_digits, min(scale, 6))


def _decimal_div(a: exp.Expr, b: exp.Expr, da: TrinoType, db: TrinoType, t: TrinoType, safe: bool) -> Out:
    """Trino's decimal division: scale max(s1, s2), HALF_UP. Spark divides with a wider scale; widening
    the dividend first makes that scale at least ``s + p2`` so that rounding it again to ``s`` is exact."""
    assert da.p is not None and da.s is not None and db.p is not None and db.s is not None
    assert t.p is not None and t.s is not None
    extra = max(0, db.s - 1 - da.s)
    if extra and da.p + extra <= MAX_PRECISION:
        a = cast_to(a, f"DECIMAL({da.p + extra},{da.s + extra})")
        da = decimal_type(da.p + extra, da.s + extra)
    assert da.p is not None and da.s is not None
    if _spark_decimal_div_scale(da.p, da.s, db.p, db.s) < t.s:
        raise not_supported(
            f"decimal division {da} / {db}: Spark cannot compute the {t.s} fractional digits Trino returns"
        )
    spark = spark_type(t)
    if not safe:
        return cast_to(exp.Div(this=atom(a), expression=atom(b), typed=False, safe=False), spark), None
    value = cast_to(spark_fn("TRY_DIVIDE", a, b), spark, safe=True)
    return value, failed(value, a, b)


@_handles(exp.Mod)
def _mod(rw: Rewriter, node: exp.Mod, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    a, b = node.this, node.expression
    if types["this"] == UNKNOWN or types["expression"] == UNKNOWN:
        return _typed_null(t), None
    need_type(t, f"the modulus {node.sql('trino')}")
    if t.floating:
        nan = DOUBLE_NAN.copy() if t == DOUBLE else cast_to(lit("NaN"), "FLOAT")
        mod = exp.Mod(this=atom(a), expression=atom(b))
        return case_when([(exp.EQ(this=dup(b), expression=lit(0)), exp.Mul(this=dup(a), expression=nan))], mod), None
    if not t.exact:
        raise not_supported(f"modulus of {types['this']} by {types['expression']}")
    if not safe:
        return node, None  # Java remainder semantics on both engines; ANSI raises on zero
    value = spark_fn("TRY_MOD", a, b)
    return value, failed(value, a, b)


@_handles(exp.Add, exp.Sub, exp.Mul)
def _add_sub_mul(rw: Rewriter, node: exp.Binary, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    a, b = node.this, node.expression
    if date_arithmetic_type(type(node), types["this"], types["expression"]) is not None:
        return _date_arithmetic(node, types["this"] == DATE, types["expression"] == DATE, safe)
    if t.decimal:
        a, b = _fit_decimal_operands(type(node), a, b, types["this"], types["expression"], safe)
        node.set("this", a)
        node.set("expression", b)
    if not safe or not t.exact:
        return node, None  # ANSI mode raises on integer/decimal overflow, as Trino does
    name = {exp.Add: "TRY_ADD", exp.Sub: "TRY_SUBTRACT", exp.Mul: "TRY_MULTIPLY"}[type(node)]
    value = spark_fn(name, a, b)
    return value, failed(value, a, b)


def _date_arithmetic(node: exp.Binary, a_date: bool, b_date: bool, safe: bool) -> Out:
    """Date arithmetic (an extension, ``date_arithmetic_type``): ``date - date`` is Spark's DATEDIFF; ``date ± n``
    adds days, and a result outside DATE's range (``DATE_DAYS``) fails with NUMERIC_VALUE_OUT_OF_RANGE where
    Spark's DATE_ADD would silently wrap around. The range is tested on ``n`` against the bounds less the date's
    day number, so nothing overflows on the way; the value's TRY_CAST cannot fail where Spark's constant folding
    computes it for constants out of range."""
    if a_date and b_date:
        return spark_fn("DATEDIFF", node.this, node.expression), None
    date, n = (node.expression, node.this) if b_date else (node.this, node.expression)
    subtract = isinstance(node, exp.Sub)
    day = spark_fn("UNIX_DATE", dup(date))
    low, high = (lit(DATE_DAYS[0]), lit(DATE_DAYS[1]))
    # date + n in range: low - day <= n <= high - day; date - n in range: day - high <= n <= day - low
    first, last = ((day, high), (day.copy(), low)) if subtract else ((low, day), (high, day.copy()))
    count = cast_to(dup(n), "BIGINT")
    out_of_range = exp.or_(
        exp.LT(this=count, expression=exp.Paren(this=exp.Sub(this=first[0], expression=first[1]))),
        exp.GT(this=count.copy(), expression=exp.Paren(this=exp.Sub(this=last[0], expression=last[1]))),
        copy=False,
    )
    # in range, n fits an INT; TRY_CAST (unlike TRY_ADD) still raises what computing n itself raises
    value = spark_fn("DATE_SUB" if subtract else "DATE_ADD", dup(date), cast_to(dup(n), "INT", safe=True))
    if b_date:  # n + date: like any Spark operator, a NULL left operand is NULL without computing the right one
        value = case_when([(is_null(n), exp.Null())], value)
    message = spark_fn(
        "CONCAT",
        lit(DATE_OVERFLOW_PREFIX),
        cast_to(dup(date), "STRING"),
        lit(" - " if subtract else " + "),
        cast_to(dup(n), "STRING"),
    )
    checks = [(out_of_range, ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message)]
    return checked(value, [node.this, node.expression], checks, safe)  # operands tested in the written order


def _fit_decimal_operands(
    op: type[exp.Expr], a: exp.Expr, b: exp.Expr, ta: TrinoType, tb: TrinoType, safe: bool
) -> tuple[exp.Expr, exp.Expr]:
    """Keep Spark from trading fractional digits for integer digits.

    Beyond 38 digits of precision Spark (``allowPrecisionLoss``) shrinks a result scale above 6, silently
    rounding e.g. decimal(38,10) + decimal(38,10) to 9 digits, while Trino keeps the scale and caps the
    precision at 38. Narrowing the operands' integer digits first gives Spark exactly Trino's result type;
    a value too large for a narrowed operand raises an overflow error instead of losing digits."""
    if not (ta.exact and tb.exact):
        return a, b
    sa, sb = _spark_decimal(ta), _spark_decimal(tb)
    int_a, int_b, s1, s2 = sa[0] - sa[1], sb[0] - sb[1], sa[1], sb[1]
    if op is exp.Mul:
        scale, raw = s1 + s2, int_a + int_b + s1 + s2 + 1
    else:
        scale, raw = max(s1, s2), max(int_a, int_b) + max(s1, s2) + 1
    if raw <= MAX_PRECISION or max(MAX_PRECISION - (raw - scale), min(scale, 6)) >= scale:
        return a, b  # Spark keeps the full scale
    budget = MAX_PRECISION - 1 - scale  # integer digits Spark can keep without touching the scale
    if budget < 0:
        raise not_supported(f"decimal arithmetic on {ta} and {tb}: scale {scale} is too large for Spark")
    if op is exp.Mul:
        if int_a + int_b > budget:
            half = budget // 2
            if int_a <= half:
                int_b = budget - int_a
            elif int_b <= budget - half:
                int_a = budget - int_b
            else:
                int_a, int_b = half, budget - half
    else:
        int_a, int_b = min(int_a, budget), min(int_b, budget)
    if ta.integral or int_a + s1 < sa[0]:
        a = cast_to(a, f"DECIMAL({max(int_a + s1, 1)},{s1})", safe)
    if tb.integral or int_b + s2 < sb[0]:
        b = cast_to(b, f"DECIMAL({max(int_b + s2, 1)},{s2})", safe)
    return a, b


def _spark_decimal(t: TrinoType) -> tuple[int, int]:
    """(precision, scale) Spark gives an exact operand in decimal arithmetic (a BIGINT takes 20 digits)."""
    if t.integral:
        return {"tinyint": 3, "smallint": 5, "integer": 10, "bigint": 20}[t.name], 0
    assert t.p is not None and t.s is not None
    return t.p, t.s


@_handles(exp.Neg)
def _neg(rw: Rewriter, node: exp.Neg, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if not safe or not t.integral:
        return node, None
    value = spark_fn("TRY_SUBTRACT", cast_to(lit(0), spark_type(t)), node.this)
    return value, failed(value, node.this)


@_handles(exp.Abs)
def _abs(rw: Rewriter, node: exp.Abs, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if not safe or not t.integral:
        return node, None
    overflow = exp.EQ(this=dup(node.this), expression=cast_to(lit(INT_MIN[t.name]), spark_type(t)))
    return case_when([(overflow, exp.Null())], node), exp.Coalesce(this=overflow.copy(), expressions=[exp.false()])


# ---- numbers


@_handles(exp.Round)
def _round(rw: Rewriter, node: exp.Round, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x, d = node.this, node.args.get("decimals")
    src = need_type(types["this"], f"{node.sql('trino')}")
    if src.integral:
        return (x if d is None else node), None
    if src.decimal:
        if d is not None and not (d.is_int or (isinstance(d, exp.Neg) and d.this.is_int)):
            raise not_supported("round(decimal, n) needs a constant n on Spark")
        return cast_to(node, spark_type(t)), None
    if src.floating:
        return _round_float(x, d, src), None
    raise not_supported(f"round({src})")


def _round_float(x: exp.Expr, d: exp.Expr | None, src: TrinoType) -> exp.Expr:
    """Trino's round(double, d): ``Math.round(|x| * 10^d) / 10^d`` with x's sign (half away from zero,
    computed in binary floating point, so round(2.675, 2) = 2.67). Spark rounds the decimal text."""
    v = cast_to(x, "DOUBLE") if src == REAL else atom(x)
    factor = spark_fn("POWER", lit(10), d) if d is not None else None

    def scaled(e: exp.Expr) -> exp.Expr:
        return exp.Mul(this=atom(e), expression=factor.copy()) if factor is not None else e

    def unscaled(e: exp.Expr) -> exp.Expr:
        return (
            exp.Div(this=atom(e), expression=factor.copy(), typed=False, safe=False)
            if factor is not None
            else cast_to(e, "DOUBLE")
        )

    def half_up(e: exp.Expr) -> exp.Expr:
        return spark_fn("FLOOR", exp.Add(this=atom(e), expression=lit(0.5)))

    neg = exp.Neg(this=exp.Paren(this=unscaled(half_up(scaled(exp.Neg(this=v.copy()))))))
    pos = unscaled(half_up(scaled(v.copy())))
    big = exp.GTE(this=spark_fn("ABS", scaled(v.copy())), expression=lit(TWO_POW_52))
    value = case_when(
        [
            (exp.or_(spark_fn("ISNAN", v.copy()), big, copy=False), v.copy()),
            (exp.LT(this=v.copy(), expression=lit(0)), neg),
        ],
        pos,
    )
    return cast_to(value, "FLOAT") if src == REAL else value


@_handles(exp.Floor, exp.Ceil)
def _floor(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    src = need_type(types["this"], f"{node.sql('trino')}")
    if node.args.get("decimals") is not None:
        raise not_supported(f"{func_name(node)} with a scale is not supported")
    if node.args.get("to") is not None:  # FLOOR/CEIL(ts TO unit): Calcite's (seed 001) whole-unit windows
        return cast_to(_floor_to(node), spark_type(src)), None  # date_trunc's result is a TIMESTAMP (LTZ)
    if src.integral:
        return node.this, None
    if src.floating:
        # Spark's FLOOR/CEIL of a DOUBLE is a BIGINT (and overflows); Trino keeps the floating type.
        x = node.this
        whole = exp.or_(
            spark_fn("ISNAN", x.copy()), exp.GTE(this=spark_fn("ABS", x.copy()), expression=lit(TWO_POW_52)), copy=False
        )
        return case_when([(whole, x.copy())], cast_to(node, spark_type(src))), None
    return node, None


_FLOOR_UNITS = ("SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR")


def _floor_to(node: exp.Expr) -> exp.Expr:
    """``FLOOR(ts TO unit)``: ``date_trunc``; ``CEIL(ts TO unit)``: the next boundary unless ``ts`` is one."""
    unit = str(node.args["to"].name).upper()
    if unit not in _FLOOR_UNITS:
        raise not_supported(f"{func_name(node)}(... TO {unit}) is not supported")
    x = node.this
    floor = spark_fn("DATE_TRUNC", lit(unit), x.copy())
    if isinstance(node, exp.Floor):
        return floor
    quarter = unit == "QUARTER"
    step = exp.Interval(this=lit("3" if quarter else "1"), unit=exp.var("MONTH" if quarter else unit))
    return case_when([(exp.EQ(this=floor.copy(), expression=x.copy()), x.copy())], exp.Add(this=floor, expression=step))


@_handles(exp.Sign)
def _sign(rw: Rewriter, node: exp.Sign, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    src = need_type(types["this"], f"{node.sql('trino')}")
    if src == DOUBLE:
        return node, None
    return cast_to(node, spark_type(t)), None


@_handles(exp.Ln)
def _ln(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino: ln(0) = -Infinity, ln(-1) = NaN (Java Math.log); Spark returns NULL for both. (log, log2 and
    log10: ``_spark_handlers_math``.)"""
    x, fn = node.this, "LN"
    neg_inf = exp.Neg(this=DOUBLE_INF.copy())
    return (
        case_when(
            [
                (exp.EQ(this=dup(x), expression=lit(0)), neg_inf),
                (exp.LT(this=dup(x), expression=lit(0)), DOUBLE_NAN.copy()),
            ],
            spark_fn(fn, x),
        ),
        None,
    )


# ---- aggregates


@_handles(exp.Sum)
def _sum(rw: Rewriter, node: exp.Sum, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if t.decimal and not isinstance(node.this, exp.Distinct):
        node.set("this", cast_to(node.this, spark_type(t)))  # Trino sums decimals as decimal(38, s)
    return node, None


@_handles(exp.Avg)
def _avg(rw: Rewriter, node: exp.Avg, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if t.decimal:
        return cast_to(node, spark_type(t)), None  # Spark widens the scale by 4
    return node, None


# Ranking and offset functions Spark only computes over an ordered window; Trino also without ORDER BY (all
# rows are peers), which ordering by a constant gives. The ranking ones are INT on Spark, bigint on Trino.
_NEED_ORDER = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile, exp.PercentRank, exp.CumeDist, exp.Lag, exp.Lead)
_RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)


@_handles(exp.Window, exp.Filter)
def _window(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """An aggregate whose result was wrapped (``CAST(avg(x) AS ...)``) must keep OVER/FILTER next to it:
    the wrapper moves outside, ``CAST(avg(x) OVER (...) AS ...)``."""
    inner = node.this
    if isinstance(inner, exp.Cast) and isinstance(inner.this, (exp.AggFunc, exp.Filter)):
        node.set("this", inner.this)
        inner.set("this", node)
        return inner, None
    if isinstance(node, exp.Window) and isinstance(inner, _NEED_ORDER):
        if node.args.get("order") is None:
            node.set("order", exp.Order(expressions=[exp.Ordered(this=lit(1), nulls_first=False)]))
        if isinstance(inner, _RANKS):
            return cast_to(node, "BIGINT"), None
    return node, None


@_handles(exp.Length, exp.Levenshtein)
def _bigint_count(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's length and levenshtein_distance are bigint; Spark's INT."""
    return cast_to(node, "BIGINT"), None


@_handles(exp.Grouping)
def _grouping(rw: Rewriter, node: exp.Grouping, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if len(node.expressions) > 1:
        return spark_fn("GROUPING_ID", *node.expressions), None
    return node, None
