"""Rewrite handlers for ``CAST`` and ``TRY_CAST`` with Trino's semantics on Spark.

Typed literals kept exact, rounding (not truncating) to integers, timestamps rounded to a lower precision
half up, and Trino's text of every type (``varchar(n)`` refused when the value does not fit, REAL/DOUBLE as
``1.5E0``). Registered in ``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from ._spark_build import _case, _cast, _dup, _failed, _fn, _lit
from ._spark_rewrite import _Handler, _need, _Out, _registrar, _Rewriter
from ._spark_types import _T, UNKNOWN, _not_supported, _spark_type, _typed_decimal_literal, with_zone
from ._spark_zones import local_time, usable_zone, zone_label, zoned_to_instant

HANDLERS: dict[type, _Handler] = {}
_handles = _registrar(HANDLERS)


@_handles(exp.Cast, exp.TryCast)
def _cast_node(rw: _Rewriter, node: exp.Cast, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    src = types["this"]
    try_cast = isinstance(node, exp.TryCast)
    x = node.this
    literal = _typed_decimal_literal(node)
    if literal is None and isinstance(x, exp.Literal) and x.is_string and t.name.startswith("timestamp"):
        fraction = _FRACTION.search(x.this)
        if (len(fraction.group(1)) if fraction else 0) <= (t.p or 0):
            literal = t  # a TIMESTAMP '...' literal: exact as written, no rounding
    if literal is not None:
        value = _cast(x, _spark_type(literal), safe or try_cast)
        return value, (_failed(value, x) if safe else None)
    value, fail = _convert(x, src, t, safe or try_cast)
    if try_cast and not safe:
        return value, None
    return value, fail


def _convert(x: exp.Expr, src: _T, dst: _T, safe: bool) -> tuple[exp.Expr, exp.Expr | None]:
    """Spark expression computing Trino's ``CAST(x AS dst)`` for ``x`` of type ``src``."""
    if src == UNKNOWN:
        return _cast(x, _spark_type(dst)), None
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
            x, src = zoned_to_instant(x, zone), with_zone(_T("timestamp with time zone", src.p), None)
    if dst.name in ("varchar", "char"):
        return _to_varchar(x, src, dst, safe, label)
    spark = _spark_type(dst)
    if dst.integral and not src.known:
        _need(src, f"CAST(... AS {dst})")  # a DOUBLE/DECIMAL operand must be rounded first
    if dst.integral and (src.floating or src.decimal):
        # Trino rounds half away from zero; Spark's CAST truncates.
        value = _cast(_fn("ROUND", x), spark, safe)
    elif dst.name.startswith("timestamp") and dst.p is not None and dst.p < 6 and _may_be_finer(src, dst.p):
        value = _round_timestamp(_cast(x, spark, safe), dst.p, tz=dst.name != "timestamp")
    elif dst.name in ("array", "map", "row", "interval day to second", "interval year to month") and src != dst:
        raise _not_supported(f"CAST from {src} to {dst} is not supported")
    else:
        value = _cast(x, spark, safe)
    return value, (_failed(value, x) if safe else None)


_FRACTION = re.compile(r":\d\d\.(\d+)")


def _round_timestamp(ts: exp.Expr, p: int, tz: bool) -> exp.Expr:
    """Round a Spark timestamp to ``p`` fractional digits the way Trino does (half up, toward +inf)."""
    factor = 10 ** (6 - p)
    ltz = ts if tz else _cast(ts, "TIMESTAMP")
    shifted = exp.Add(this=_fn("UNIX_MICROS", ltz), expression=_lit(factor // 2))
    floored = exp.Sub(
        this=exp.Paren(this=shifted), expression=_fn("PMOD", exp.Paren(this=shifted.copy()), _lit(factor))
    )
    out = _fn("TIMESTAMP_MICROS", exp.Paren(this=floored))
    return out if tz else _cast(out, "TIMESTAMP_NTZ")


def _may_be_finer(src: _T, p: int) -> bool:
    """Whether values of ``src`` may carry more fractional seconds than ``p`` (so a CAST must round)."""
    if src.name.startswith("timestamp"):
        return src.p is None or src.p > p
    return src.name != "date"


def _to_varchar(x: exp.Expr, src: _T, dst: _T, safe: bool, zone: str = "UTC") -> tuple[exp.Expr, exp.Expr | None]:
    n = dst.p
    if src.string:
        value: exp.Expr = x if n is None else exp.Substring(this=x, start=_lit(1), length=_lit(n))
        if dst.name == "char":
            value = exp.Pad(this=value, expression=_lit(n or 1), fill_pattern=_lit(" "), is_left=False)
        return value, None
    _need(src, f"CAST(... AS {dst})")
    if src.floating:
        text = _float_to_varchar(x, src)
    elif src.name == "timestamp":
        text = _fn("DATE_FORMAT", x, _lit(_ts_pattern(src.p)))
    elif src.name == "timestamp with time zone":
        text = exp.DPipe(this=_fn("DATE_FORMAT", x, _lit(_ts_pattern(src.p))), expression=_lit(" " + zone), safe=False)
    elif src.exact or src.name in ("boolean", "date", "varbinary"):
        text = _cast(x, "STRING")
    else:
        raise _not_supported(f"CAST from {src} to {dst} is not supported")
    if n is None:
        return text, None
    # Trino refuses (rather than truncates) a non-string value that does not fit varchar(n).
    too_long = exp.GT(this=exp.Length(this=_dup(text)), expression=_lit(n))
    if safe:
        value = _case([(too_long, exp.Null())], text)
        return value, exp.Coalesce(this=too_long.copy(), expressions=[exp.false()])
    message = f"[INVALID_CAST_ARGUMENT] Value cannot be represented as {dst}"
    value = _case([(too_long, _fn("RAISE_ERROR", _lit(message)))], text)
    if dst.name == "char":
        value = exp.Pad(this=value, expression=_lit(n), fill_pattern=_lit(" "), is_left=False)
    return value, None


def _ts_pattern(p: int | None) -> str:
    p = 3 if p is None else min(p, 6)
    return "yyyy-MM-dd HH:mm:ss" + ("." + "S" * p if p else "")


def _float_to_varchar(x: exp.Expr, src: _T) -> exp.Expr:
    """Trino formats REAL/DOUBLE as ``DecimalFormat("0.0###...E0")``: 1.5E0, 1.0E2, -1.25E-3, 0E0.

    Spark's CAST prints Java's shortest round-trip digits, plainly for 1e-3 <= |x| < 1e7 and as
    ``d.dddE±n`` otherwise; the plain form is re-normalised to a mantissa and exponent here."""
    s = _cast(x, "STRING")
    absval = exp.Paren(this=_fn("REGEXP_REPLACE", s.copy(), _lit("^-"), _lit("")))
    sign = _fn("IF", _fn("STARTSWITH", s.copy(), _lit("-")), _lit("-"), _lit(""))
    int_part = _fn("SUBSTRING_INDEX", absval.copy(), _lit("."), _lit(1))
    frac_part = _fn("SUBSTRING_INDEX", absval.copy(), _lit("."), _lit(-1))
    digits = exp.DPipe(this=int_part.copy(), expression=frac_part.copy(), safe=False)
    significant = _fn("REGEXP_REPLACE", _fn("REGEXP_REPLACE", digits, _lit("^0+"), _lit("")), _lit("0+$"), _lit(""))
    exponent = _fn(
        "IF",
        exp.NEQ(this=int_part.copy(), expression=_lit("0")),
        exp.Sub(this=exp.Length(this=int_part.copy()), expression=_lit(1)),
        exp.Neg(
            this=exp.Paren(
                this=exp.Add(
                    this=exp.Sub(
                        this=exp.Length(this=frac_part.copy()),
                        expression=exp.Length(this=_fn("REGEXP_REPLACE", frac_part.copy(), _lit("^0+"), _lit(""))),
                    ),
                    expression=_lit(1),
                )
            )
        ),
    )
    mantissa = exp.DPipe(
        this=exp.DPipe(this=_fn("LEFT", significant, _lit(1)), expression=_lit("."), safe=False),
        expression=_fn(
            "IF",
            exp.GT(this=exp.Length(this=significant.copy()), expression=_lit(1)),
            exp.Substring(this=significant.copy(), start=_lit(2)),
            _lit("0"),
        ),
        safe=False,
    )
    plain = exp.DPipe(
        this=exp.DPipe(this=exp.DPipe(this=sign, expression=mantissa, safe=False), expression=_lit("E"), safe=False),
        expression=_cast(exponent, "STRING"),
        safe=False,
    )
    return _case(
        [
            (_fn("ISNAN", x.copy()), _lit("NaN")),
            (
                exp.EQ(this=x.copy(), expression=_lit(0)),
                _fn("IF", _fn("STARTSWITH", s.copy(), _lit("-")), _lit("-0E0"), _lit("0E0")),
            ),
            (
                exp.Or(
                    this=_fn("CONTAINS", s.copy(), _lit("E")), expression=_fn("CONTAINS", s.copy(), _lit("Infinity"))
                ),
                s.copy(),
            ),
        ],
        plain,
    )
