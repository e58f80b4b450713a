"""Rewrite handlers for string, conditional and date/time functions.

LIKE without an implicit escape, substring/trim/strpos edge cases, greatest/least returning NULL on a NULL
argument, IF without ELSE, date_add/date_diff/date_trunc with Trino's units, extract and the date-part
functions, and ``sequence()`` of integers as array(bigint) with Trino's checks (at most 10,000 entries).
Registered in ``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.spark.build import case_when, cast_to, checked, dup, is_null, lit, spark_fn
from mergekit.sql.spark.rewrite import Out, Rewriter, handler_registry, need_type
from mergekit.sql.spark.types import DATE, NOTYPE, TrinoType, common_type, not_supported

from .casts import round_timestamp

HANDLERS, _handles = handler_registry()


# ---- strings


@_handles(exp.Like)
def _like(rw: Rewriter, node: exp.Like, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's LIKE has no escape character unless ESCAPE is given; Spark's default is backslash."""
    if isinstance(node.parent, exp.Escape):
        return node, None
    pattern = node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        node.set("expression", exp.Literal.string(pattern.this.replace("\\", "\\\\")))
    else:
        node.set("expression", exp.Replace(this=pattern, expression=lit("\\"), replacement=lit("\\\\")))
    return node, None


@_handles(exp.Substring)
def _substring(rw: Rewriter, node: exp.Substring, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino returns '' for start 0 or a negative start before the beginning; Spark clamps both."""
    start = node.args.get("start")
    if start is None or (start.is_int and int(start.name) > 0):
        return node, None
    length = node.args.get("length")
    s = node.this
    empty = exp.Substring(
        this=dup(s),
        start=lit(1),
        length=exp.Mul(this=dup(length), expression=lit(0)) if length is not None else lit(0),
    )
    before_start = exp.or_(
        exp.EQ(this=dup(start), expression=lit(0)),
        exp.LT(this=dup(start), expression=exp.Neg(this=exp.Length(this=dup(s)))),
        copy=False,
    )
    return case_when([(before_start, empty)], node), None


_WS = r"\p{javaWhitespace}"


@_handles(exp.Trim)
def _trim(rw: Rewriter, node: exp.Trim, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's one-argument trim removes all whitespace (Character.isWhitespace); Spark's only spaces."""
    if node.args.get("expression") is not None:
        return node, None
    position = (node.args.get("position") or "BOTH").upper()
    pattern = {"LEADING": f"^{_WS}+", "TRAILING": f"{_WS}+$"}.get(position, f"^{_WS}+|{_WS}+$")
    return spark_fn("REGEXP_REPLACE", node.this, lit(pattern), lit("")), None


@_handles(exp.StrPosition)
def _strpos(rw: Rewriter, node: exp.StrPosition, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """bigint (Spark: INT)."""
    if node.args.get("occurrence") is not None or node.args.get("position") is not None:
        raise not_supported("strpos with an instance argument is not supported")
    return cast_to(node, "BIGINT"), None


@_handles(exp.Greatest, exp.Least)
def _greatest(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's greatest/least return NULL when any argument is NULL; Spark's skip NULLs."""
    args = [node.this] + list(node.expressions)
    any_null = exp.or_(*[is_null(a) for a in args], copy=False)
    return case_when([(any_null, exp.Null())], node), None


@_handles(exp.If)
def _if(rw: Rewriter, node: exp.If, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if not isinstance(node.parent, exp.Case) and node.args.get("false") is None:
        node.set("false", exp.Null())
    return node, None


# ---- date and time

_DATE_UNITS = {"DAY", "WEEK", "MONTH", "QUARTER", "YEAR"}
_TIME_UNITS = {"MILLISECOND", "SECOND", "MINUTE", "HOUR"} | _DATE_UNITS


def _field_kind(src: TrinoType) -> str:
    """How Trino's message names the unit's type: 'DATE' or 'TIMESTAMP'."""
    return "DATE" if src == DATE else "TIMESTAMP"


def _unit(node: exp.Expr) -> str:
    unit = node.args.get("unit")
    name = (unit.name if unit is not None else "DAY").upper()
    return {"MILLISECONDS": "MILLISECOND"}.get(name, name)


@_handles(exp.DateAdd)
def _date_add(rw: Rewriter, node: exp.DateAdd, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    unit, x, n = _unit(node), node.this, node.expression
    src = need_type(types["this"], f"{node.sql('trino')}")
    if src == DATE:
        if unit not in _DATE_UNITS:
            raise MergekitError(ErrorCode.INVALID_FUNCTION_ARGUMENT, f"'{unit.lower()}' is not a valid DATE field")
        count = cast_to(n, "INT")
        if unit == "DAY":
            return spark_fn("DATE_ADD", x, count), None
        if unit == "WEEK":
            return spark_fn("DATE_ADD", x, exp.Mul(this=count, expression=lit(7))), None
        months = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit]
        return spark_fn("ADD_MONTHS", x, count if months == 1 else exp.Mul(this=count, expression=lit(months))), None
    if src.name.startswith("timestamp"):
        if unit not in _TIME_UNITS:
            raise MergekitError(ErrorCode.INVALID_FUNCTION_ARGUMENT, f"'{unit.lower()}' is not a valid TIMESTAMP field")
        return spark_fn("TIMESTAMPADD", exp.var(unit), n, x), None
    raise not_supported(f"date_add on {src}")


@_handles(exp.DateDiff)
def _date_diff(rw: Rewriter, node: exp.DateDiff, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    unit = _unit(node)
    src = common_type(need_type(types["this"], node.sql("trino")), need_type(types["expression"], node.sql("trino")))
    allowed = _DATE_UNITS if src == DATE else _TIME_UNITS
    if unit not in allowed:
        raise MergekitError(
            ErrorCode.INVALID_FUNCTION_ARGUMENT, f"'{unit.lower()}' is not a valid {_field_kind(src)} field"
        )
    return spark_fn("TIMESTAMPDIFF", exp.var(unit), node.expression, node.this), None


@_handles(exp.TimestampTrunc, exp.DateTrunc)
def _date_trunc(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    unit = _unit(node)
    src = need_type(types["this"], f"{node.sql('trino')}")
    allowed = _DATE_UNITS if src == DATE else _TIME_UNITS
    if unit not in allowed:
        raise MergekitError(
            ErrorCode.INVALID_FUNCTION_ARGUMENT, f"'{unit.lower()}' is not a valid {_field_kind(src)} field"
        )
    truncated = spark_fn("DATE_TRUNC", lit(unit), node.this)
    if src == DATE:
        return cast_to(truncated, "DATE"), None
    if src.name == "timestamp":
        return cast_to(truncated, "TIMESTAMP_NTZ"), None
    return truncated, None


_EXTRACT: dict[str, Callable[[exp.Expr], exp.Expr]] = {
    "YEAR": lambda x: spark_fn("YEAR", x),
    "QUARTER": lambda x: spark_fn("QUARTER", x),
    "MONTH": lambda x: spark_fn("MONTH", x),
    "WEEK": lambda x: spark_fn("WEEKOFYEAR", x),
    "DAY": lambda x: spark_fn("DAY", x),
    "DAY_OF_MONTH": lambda x: spark_fn("DAY", x),
    "DAY_OF_WEEK": lambda x: exp.Add(this=spark_fn("WEEKDAY", x), expression=lit(1)),
    "DOW": lambda x: exp.Add(this=spark_fn("WEEKDAY", x), expression=lit(1)),
    "DAY_OF_YEAR": lambda x: spark_fn("DAYOFYEAR", x),
    "DOY": lambda x: spark_fn("DAYOFYEAR", x),
    "YEAR_OF_WEEK": lambda x: exp.Extract(this=exp.var("YEAROFWEEK"), expression=x),
    "YOW": lambda x: exp.Extract(this=exp.var("YEAROFWEEK"), expression=x),
    "HOUR": lambda x: spark_fn("HOUR", x),
    "MINUTE": lambda x: spark_fn("MINUTE", x),
    "SECOND": lambda x: spark_fn("SECOND", x),
}
_EXTRACT_NODES: dict[type[exp.Expr], str] = {
    exp.Year: "YEAR", exp.Quarter: "QUARTER", exp.Month: "MONTH", exp.Day: "DAY", exp.DayOfMonth: "DAY",
    exp.DayOfWeekIso: "DAY_OF_WEEK", exp.DayOfYear: "DAY_OF_YEAR", exp.WeekOfYear: "WEEK", exp.Hour: "HOUR",
    exp.Minute: "MINUTE", exp.Second: "SECOND",
}  # fmt: skip


def _extract_field(field_name: str, x: exp.Expr, src: TrinoType) -> exp.Expr:
    build = _EXTRACT.get(field_name)
    if build is None:
        raise not_supported(f"extract({field_name.lower()} ...) is not supported")
    if src == DATE and field_name in ("HOUR", "MINUTE", "SECOND"):
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"cannot extract {field_name.lower()} from a date")
    return cast_to(build(x), "BIGINT")


@_handles(*_EXTRACT_NODES)
def _date_part(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return _extract_field(_EXTRACT_NODES[type(node)], node.this, types["this"]), None


@_handles(exp.Extract)
def _extract(rw: Rewriter, node: exp.Extract, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return _extract_field(node.this.name.upper(), node.expression, types["expression"]), None


@_handles(exp.Localtimestamp, exp.CurrentTimestamp)
def _now(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's current_timestamp and localtimestamp have 3 fractional digits unless given a precision,
    rounded (Spark's have 6)."""
    precision = node.args.get("this")
    p = 3 if precision is None else int(precision.name) if precision.is_int else -1
    if not 0 <= p <= 6:
        raise not_supported(f"{node.sql('trino')} is not supported (Spark timestamps have microseconds)")
    zoned = isinstance(node, exp.CurrentTimestamp)
    now = spark_fn("CURRENT_TIMESTAMP" if zoned else "LOCALTIMESTAMP")
    return (now if p == 6 else round_timestamp(now, p, tz=zoned)), None


@_handles(exp.GenerateSeries)
def _sequence(rw: Rewriter, node: exp.GenerateSeries, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino's sequence() of integers is array(bigint) (Spark's keeps the argument type), with Trino's checks:
    a zero step, a step away from the stop, more than 10,000 entries (``SequenceFunction.getLength``)."""
    integral = all(
        types.get(key, NOTYPE).integral for key in ("start", "end", "step") if node.args.get(key) is not None
    )
    for key in ("start", "end", "step"):
        value = node.args.get(key)
        if value is not None and types.get(key, NOTYPE).integral:
            node.set(key, cast_to(value, "BIGINT"))
    if not integral:
        return node, None
    start, stop = node.args["start"], node.args["end"]
    step = node.args.get("step")
    if step is None:  # the default step goes toward the stop
        step = spark_fn("IF", exp.GTE(this=dup(stop), expression=dup(start)), lit(1), lit(-1))
        node.set("step", step.copy())
    return checked(node, [start, stop, step], _sequence_checks(start, stop, step), safe)


_MAX_ENTRIES = 10_000


def _sequence_checks(start: exp.Expr, stop: exp.Expr, step: exp.Expr) -> list[tuple[exp.Expr, ErrorCode, str]]:
    def div(a: exp.Expr, b: exp.Expr) -> exp.Expr:  # Java's long division truncates, as Spark's DIV
        return exp.Paren(this=exp.IntDiv(this=exp.Paren(this=a), expression=dup(b)))

    def outside(length: exp.Expr) -> exp.Expr:
        return exp.not_(exp.Between(this=length, low=lit(-_MAX_ENTRIES), high=lit(_MAX_ENTRIES)), copy=False)

    span = exp.Sub(this=dup(stop), expression=dup(start))
    same_sign = exp.or_(
        exp.and_(exp.GT(this=dup(start), expression=lit(0)), exp.GT(this=dup(stop), expression=lit(0)), copy=False),
        exp.and_(exp.LT(this=dup(start), expression=lit(0)), exp.LT(this=dup(stop), expression=lit(0)), copy=False),
        copy=False,
    )
    unit = exp.In(this=dup(step), expressions=[lit(1), lit(-1)])
    first, last = div(dup(start), step), div(dup(stop), step)
    remain_start = exp.Mod(this=dup(start), expression=dup(step))
    remain_stop = exp.Mod(this=dup(stop), expression=dup(step))
    two = spark_fn(
        "IF",
        exp.GT(this=dup(step), expression=lit(0)),
        exp.LTE(this=exp.Add(this=remain_start, expression=dup(step)), expression=remain_stop),
        exp.GTE(this=exp.Add(this=remain_start.copy(), expression=dup(step)), expression=remain_stop.copy()),
    )
    total = exp.Add(
        this=exp.Add(this=spark_fn("ABS", first.copy()), expression=spark_fn("ABS", last.copy())),
        expression=spark_fn("IF", two, lit(2), lit(1)),
    )
    too_long = case_when(
        [
            (
                same_sign,
                exp.or_(
                    outside(div(span, step)),
                    outside(exp.Add(this=div(span.copy(), step), expression=lit(1))),
                    copy=False,
                ),
            ),
            (
                unit,
                exp.or_(
                    outside(dup(start)),
                    outside(dup(stop)),
                    outside(exp.Add(this=div(span.copy(), step), expression=lit(1))),
                    copy=False,
                ),
            ),
        ],
        exp.or_(outside(first), outside(last), outside(total), copy=False),
    )
    wrong_way = exp.not_(
        spark_fn(
            "IF",
            exp.GT(this=dup(step), expression=lit(0)),
            exp.GTE(this=dup(stop), expression=dup(start)),
            exp.LTE(this=dup(stop), expression=dup(start)),
        ),
        copy=False,
    )
    bad = ErrorCode.INVALID_FUNCTION_ARGUMENT
    return [
        (exp.EQ(this=dup(step), expression=lit(0)), bad, "step must not be zero"),
        (
            wrong_way,
            bad,
            "sequence stop value should be greater than or equal to start value if step is greater than zero "
            "otherwise stop should be less than or equal to start",
        ),
        (too_long, bad, f"result of sequence function must not have more than {_MAX_ENTRIES} entries"),
    ]
