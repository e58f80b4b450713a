"""Rewrite handlers for ``CAST`` and ``TRY_CAST`` with Trino's semantics on Spark.

Typed literals kept exact, rounding (not truncating) to integers, timestamps rounded to a lower precision
half up, and Trino's text of every type (``varchar(n)`` refused when the value does not fit, REAL/DOUBLE as
``1.5E0``). Registered in ``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from mergekit.sql.spark.build import case_when, cast_to, dup, failed, lit, spark_fn
from mergekit.sql.spark.rewrite import Out, Rewriter, handler_registry, need_type
from mergekit.sql.spark.types import UNKNOWN, TrinoType, not_supported, spark_type, typed_decimal_literal, with_zone
from mergekit.sql.spark.zones import local_time, usable_zone, zone_label, zoned_to_instant

HANDLERS, _handles = handler_registry()


@_handles(exp.Cast, exp.TryCast)
def _cast_node(rw: Rewriter, node: exp.Cast, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    src = types["this"]
    try_cast = isinstance(node, exp.TryCast)
    x = node.this
    literal = typed_decimal_literal(node)
    if literal is None and isinstance(x, exp.Literal) and x.is_string and t.name.startswith("timestamp"):
        fraction = _FRACTION.search(x.this)
        if (len(fraction.group(1)) if fraction else 0) <= (t.p or 0):
            literal = t  # a TIMESTAMP '...' literal: exact as written, no rounding
    if literal is not None:
        if t.name.startswith("timestamp") and isinstance(x, exp.Literal) and x.is_string:
            x = exp.Literal.string(_NO_SECONDS.sub(r"\1:00\2", x.this))  # Trino's seconds are optional, Spark's not
        value = cast_to(x, spark_type(literal), safe or try_cast)
        return value, (failed(value, x) if safe else None)
    value, fail = convert_value(x, src, t, safe or try_cast)
    if try_cast and not safe:
        return value, None
    return value, fail


def convert_value(x: exp.Expr, src: TrinoType, dst: TrinoType, safe: bool) -> tuple[exp.Expr, exp.Expr | None]:
    """Spark expression computing Trino's ``CAST(x AS dst)`` for ``x`` of type ``src``."""
    if src == UNKNOWN:
        return cast_to(x, spark_type(dst)), None
    label = "UTC"
    if src.zoned and src.name == "timestamp with time zone" and dst.name != src.name:
        # Trino keeps the value's local date-time (and prints its zone): read it in the value's zone
        zone = usable_zone(src, "CAST")
        if zone is not None:
            x, src, label = local_time(x, zone), with_zone(src, None), zone_label(zone)
    elif src.zoned and src.name == "timestamp" and dst.name == "timestamp with time zone":
        # a user's TIMESTAMP becomes an instant in the zone of the session it came from
        zone = usable_zone(src, "CAST")
        if zone is not None:
            x, src = zoned_to_instant(x, zone), with_zone(TrinoType("timestamp with time zone", src.p), None)
    if dst.name in ("varchar", "char"):
        return _to_varchar(x, src, dst, safe, label)
    spark = spark_type(dst)
    if dst.integral and not src.known:
        need_type(src, f"CAST(... AS {dst})")  # a DOUBLE/DECIMAL operand must be rounded first
    if dst.integral and (src.floating or src.decimal):
        # Trino rounds half away from zero; Spark's CAST truncates.
        value = cast_to(spark_fn("ROUND", x), spark, safe)
    elif dst.name.startswith("timestamp") and dst.p is not None and dst.p < 6 and _may_be_finer(src, dst.p):
        value = round_timestamp(cast_to(x, spark, safe), dst.p, tz=dst.name != "timestamp")
    elif dst.name in ("array", "map", "row", "interval day to second", "interval year to month") and src != dst:
        raise not_supported(f"CAST from {src} to {dst} is not supported")
    else:
        value = cast_to(x, spark, safe)
    return value, (failed(value, x) if safe else None)


_FRACTION = re.compile(r":\d\d\.(\d+)")
_NO_SECONDS = re.compile(r"^(\s*[+-]?\d+-\d{1,2}-\d{1,2}[ T]\d{1,2}:\d{2})(?![:\d])(.*)$")


def round_timestamp(ts: exp.Expr, p: int, tz: bool) -> exp.Expr:
    """Round a Spark timestamp to ``p`` fractional digits the way Trino does (half up, toward +inf)."""
    factor = 10 ** (6 - p)
    ltz = ts if tz else cast_to(ts, "TIMESTAMP")
    shifted = exp.Add(this=spark_fn("UNIX_MICROS", ltz), expression=lit(factor // 2))
    floored = exp.Sub(
        this=exp.Paren(this=shifted), expression=spark_fn("PMOD", exp.Paren(this=shifted.copy()), lit(factor))
    )
    out = spark_fn("TIMESTAMP_MICROS", exp.Paren(this=floored))
    return out if tz else cast_to(out, "TIMESTAMP_NTZ")


def _may_be_finer(src: TrinoType, p: int) -> bool:
    """Whether values of ``src`` may carry more fractional seconds than ``p`` (so a CAST must round)."""
    if src.name.startswith("timestamp"):
        return src.p is None or src.p > p
    return src.name != "date"


def _to_varchar(
    x: exp.Expr, src: TrinoType, dst: TrinoType, safe: bool, zone: str = "UTC"
) -> tuple[exp.Expr, exp.Expr | None]:
    n = dst.p
    if src.string:
        value: exp.Expr = x if n is None else exp.Substring(this=x, start=lit(1), length=lit(n))
        if dst.name == "char":
            value = exp.Pad(this=value, expression=lit(n or 1), fill_pattern=lit(" "), is_left=False)
        return value, None
    need_type(src, f"CAST(... AS {dst})")
    if src.floating:
        text = _float_to_varchar(x, src)
    elif src.name == "timestamp":
        text = spark_fn("DATE_FORMAT", x, lit(_ts_pattern(src.p)))
    elif src.name == "timestamp with time zone":
        text = exp.DPipe(
            this=spark_fn("DATE_FORMAT", x, lit(_ts_pattern(src.p))), expression=lit(" " + zone), safe=False
        )
    elif src.exact or src.name in ("boolean", "date", "varbinary"):
        text = cast_to(x, "STRING")
    else:
        raise not_supported(f"CAST from {src} to {dst} is not supported")
    if n is None:
        return text, None
    # Trino refuses (rather than truncates) a non-string value that does not fit varchar(n).
    too_long = exp.GT(this=exp.Length(this=dup(text)), expression=lit(n))
    if safe:
        value = case_when([(too_long, exp.Null())], text)
        return value, exp.Coalesce(this=too_long.copy(), expressions=[exp.false()])
    message = f"[INVALID_CAST_ARGUMENT] Value cannot be represented as {dst}"
    value = case_when([(too_long, spark_fn("RAISE_ERROR", lit(message)))], text)
    if dst.name == "char":
        value = exp.Pad(this=value, expression=lit(n), fill_pattern=lit(" "), is_left=False)
    return value, None


def _ts_pattern(p: int | None) -> str:
    p = 3 if p is None else min(p, 6)
    return "yyyy-MM-dd HH:mm:ss" + ("." + "S" * p if p else "")


def _float_to_varchar(x: exp.Expr, src: TrinoType) -> exp.Expr:
    """Trino formats REAL/DOUBLE as ``DecimalFormat("0.0###...E0")``: 1.5E0, 1.0E2, -1.25E-3, 0E0.

    Spark's CAST prints Java's shortest round-trip digits, plainly for 1e-3 <= |x| < 1e7 and as
    ``d.dddE±n`` otherwise; the plain form is re-normalised to a mantissa and exponent here."""
    s = cast_to(x, "STRING")
    absval = exp.Paren(this=spark_fn("REGEXP_REPLACE", s.copy(), lit("^-"), lit("")))
    sign = spark_fn("IF", spark_fn("STARTSWITH", s.copy(), lit("-")), lit("-"), lit(""))
    int_part = spark_fn("SUBSTRING_INDEX", absval.copy(), lit("."), lit(1))
    frac_part = spark_fn("SUBSTRING_INDEX", absval.copy(), lit("."), lit(-1))
    digits = exp.DPipe(this=int_part.copy(), expression=frac_part.copy(), safe=False)
    significant = spark_fn(
        "REGEXP_REPLACE", spark_fn("REGEXP_REPLACE", digits, lit("^0+"), lit("")), lit("0+$"), lit("")
    )
    exponent = spark_fn(
        "IF",
        exp.NEQ(this=int_part.copy(), expression=lit("0")),
        exp.Sub(this=exp.Length(this=int_part.copy()), expression=lit(1)),
        exp.Neg(
            this=exp.Paren(
                this=exp.Add(
                    this=exp.Sub(
                        this=exp.Length(this=frac_part.copy()),
                        expression=exp.Length(this=spark_fn("REGEXP_REPLACE", frac_part.copy(), lit("^0+"), lit(""))),
                    ),
                    expression=lit(1),
                )
            )
        ),
    )
    mantissa = exp.DPipe(
        this=exp.DPipe(this=spark_fn("LEFT", significant, lit(1)), expression=lit("."), safe=False),
        expression=spark_fn(
            "IF",
            exp.GT(this=exp.Length(this=significant.copy()), expression=lit(1)),
            exp.Substring(this=significant.copy(), start=lit(2)),
            lit("0"),
        ),
        safe=False,
    )
    plain = exp.DPipe(
        this=exp.DPipe(this=exp.DPipe(this=sign, expression=mantissa, safe=False), expression=lit("E"), safe=False),
        expression=cast_to(exponent, "STRING"),
        safe=False,
    )
    return case_when(
        [
            (spark_fn("ISNAN", x.copy()), lit("NaN")),
            (
                exp.EQ(this=x.copy(), expression=lit(0)),
                spark_fn("IF", spark_fn("STARTSWITH", s.copy(), lit("-")), lit("-0E0"), lit("0E0")),
            ),
            (
                exp.Or(
                    this=spark_fn("CONTAINS", s.copy(), lit("E")),
                    expression=spark_fn("CONTAINS", s.copy(), lit("Infinity")),
                ),
                s.copy(),
            ),
        ],
        plain,
    )
