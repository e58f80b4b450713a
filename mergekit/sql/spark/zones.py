"""Values of ``timestamp with time zone`` in a zone other than UTC, on Spark.

Spark holds a ``timestamp with time zone`` as an instant and mergekit's statements run with the session zone UTC,
so the zone a Trino value carries is kept per expression instead (``TrinoType.zone``): the zone of a literal
(``TIMESTAMP '2024-05-05 12:00 +02:00'``), of ``AT TIME ZONE`` / ``with_timezone`` / ``at_timezone``, or of a
column of a user's DataFrame (its Spark session's zone: the values are what that session shows). Operations that
depend on the zone (Trino computes them in the value's zone) run on the value's *local* time: Spark's
``from_utc_timestamp`` gives the instant whose UTC wall clock is the local one, every field of which is then read
in UTC; a result with a time zone goes back with ``to_utc_timestamp``. Operations on the instant (comparison,
``to_unixtime``, ``min``, arithmetic with a day-to-second interval, as in Trino) need nothing. Anything else on
a zoned value is refused by name rather than computed in UTC.

A ``timestamp`` from a user's DataFrame carries that session's zone too: the zone it becomes an instant in when
converted to ``timestamp with time zone`` (Trino's rule uses the session zone, and for values the user's session
holds that is the user's).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from .build import cast_to, lit, spark_fn
from .types import MIXED_ZONE, TrinoType, not_supported

__all__ = ["local_time", "from_local_time", "zoned_to_instant", "zone_label", "zone_step"]

# Nodes that read a zoned value's instant only: nothing to do.
_ON_INSTANTS: tuple[type, ...] = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is, exp.Between,
    exp.In, exp.Coalesce, exp.Case, exp.If, exp.Nullif, exp.Greatest, exp.Least, exp.Min, exp.Max, exp.AnyValue,
    exp.ArgMax, exp.ArgMin, exp.Count, exp.CountIf, exp.ApproxDistinct, exp.Lag, exp.Lead, exp.FirstValue,
    exp.LastValue, exp.NthValue, exp.Cast, exp.TryCast, exp.TimeToUnix, exp.AtTimeZone, exp.Array, exp.Struct,
    exp.Distinct, exp.Tuple, exp.Paren, exp.Alias, exp.And, exp.Or, exp.Not,
)  # fmt: skip
_ON_INSTANTS_NAMED = frozenset({"to_unixtime", "to_milliseconds", "with_timezone", "at_timezone", "typeof"})
# Nodes that compare their operands (a wall clock compared with an instant is read in the session's zone).
_COMPARING: tuple[type, ...] = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Between, exp.In,
)  # fmt: skip
# Nodes that read a zoned value's local date-time (fields, truncation, formatting, calendar arithmetic).
_ON_LOCAL_TIME: tuple[type, ...] = (
    exp.Year, exp.Quarter, exp.Month, exp.Day, exp.DayOfMonth, exp.DayOfWeek, exp.DayOfWeekIso, exp.DayOfYear,
    exp.WeekOfYear, exp.YearOfWeek, exp.Hour, exp.Minute, exp.Second, exp.Extract, exp.TimestampTrunc,
    exp.DateTrunc, exp.Date, exp.LastDay, exp.DateAdd, exp.DateDiff,
)  # fmt: skip
_ON_LOCAL_TIME_NAMED = frozenset(
    {"format_datetime", "date_format", "millisecond", "yow", "year_of_week", "day_of_week", "dow", "day_of_year",
     "doy", "week", "week_of_year", "last_day_of_month"}
)  # fmt: skip


def local_time(x: exp.Expr, zone: str) -> exp.Expr:
    """The instant whose UTC wall clock is ``x``'s wall clock in ``zone``."""
    return spark_fn("FROM_UTC_TIMESTAMP", x, lit(zone))


def from_local_time(x: exp.Expr, zone: str) -> exp.Expr:
    """The inverse of :func:`local_time`: the instant of ``x``'s UTC wall clock read in ``zone``."""
    return spark_fn("TO_UTC_TIMESTAMP", x, lit(zone))


def zoned_to_instant(x: exp.Expr, zone: str) -> exp.Expr:
    """A ``timestamp`` (Spark TIMESTAMP_NTZ) as the instant of its wall clock in ``zone``."""
    return from_local_time(cast_to(x, "TIMESTAMP"), zone)


def zone_label(zone: str | None) -> str:
    """How Trino prints a value's zone after its date-time: ``UTC``, ``+02:00``, ``America/New_York``."""
    return zone or "UTC"


def usable_zone(t: TrinoType, what: str) -> str | None:
    """``t``'s zone for an operation that depends on it (None: UTC); NOT_SUPPORTED when the values come from several
    zones (the zone is known per expression, not per value)."""
    if t.zone == MIXED_ZONE:
        raise not_supported(
            f"{what} of TIMESTAMP WITH TIME ZONE values in different time zones is not supported: convert them to "
            "one zone first (AT TIME ZONE)"
        )
    return t.zone


def _interval_is_calendar(t: object) -> bool:
    return isinstance(t, TrinoType) and t.name == "interval year to month"


def zone_step(node: exp.Expr, types: dict[str, object], t: TrinoType, name: str | None) -> str | None:
    """Before ``node`` is translated (its children are): put its zoned ``timestamp with time zone`` operands in
    their local time when the operation reads it, and return the zone the result must go back from (a result
    with a time zone), else None. Refuses an operation not known to be either kind."""
    operands = [
        (key, i, ty)
        for key, value in types.items()
        for i, ty in (enumerate(value) if isinstance(value, list) else [(None, value)])
        if isinstance(ty, TrinoType)
    ]
    if isinstance(node, _COMPARING) and any(ty.name == "timestamp with time zone" for _, _, ty in operands):
        # a wall clock of the caller's compared with an instant: Trino reads it in the (caller's) session zone
        for key, i, ty in operands:
            if ty.name == "timestamp" and ty.zoned:
                _replace(node, key, i, lambda v, z=usable_zone(ty, "a comparison"): zoned_to_instant(v, z))
    zoned = [(key, i, ty) for key, i, ty in operands if ty.zoned and ty.name == "timestamp with time zone"]
    if not zoned:
        return None
    if isinstance(node, _ON_INSTANTS) or (name is not None and name in _ON_INSTANTS_NAMED):
        return None
    if isinstance(node, exp.Add | exp.Sub):
        other = types.get("expression") if zoned[0][0] == "this" else types.get("this")
        if not _interval_is_calendar(other):
            return None  # a day-to-second interval (or the difference of two instants): Trino adds to the instant
    elif not (isinstance(node, _ON_LOCAL_TIME) or (name is not None and name in _ON_LOCAL_TIME_NAMED)):
        what = name or type(node).__name__.lower()
        raise not_supported(
            f"{what}() of a TIMESTAMP WITH TIME ZONE value in zone {zoned[0][2].zone} is not supported: convert it "
            "to TIMESTAMP (CAST) or to UTC (AT TIME ZONE 'UTC') first"
        )
    zones = {usable_zone(ty, name or type(node).__name__.lower()) for _, _, ty in zoned}
    if len(zones) > 1:
        raise not_supported(
            f"{name or type(node).__name__.lower()}() of TIMESTAMP WITH TIME ZONE values in different time zones is "
            "not supported: convert them to one zone first (AT TIME ZONE)"
        )
    for key, i, ty in zoned:
        _replace(node, key, i, lambda v, z=ty.zone: local_time(v, z))
    zone = zones.pop()
    return zone if t.name == "timestamp with time zone" else None


def _replace(node: exp.Expr, key: str, i: int | None, build: Callable[[exp.Expr], exp.Expr]) -> None:
    """``node``'s operand ``key`` (item ``i`` of a list) replaced by ``build(operand)``."""
    value = node.args[key]
    if i is None:
        node.set(key, build(value))
    else:
        items = list(value)
        items[i] = build(items[i])
        node.set(key, items)
