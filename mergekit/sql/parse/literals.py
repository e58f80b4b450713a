"""Typed literals (``DATE '2024-02-30'``, ``TIMESTAMP '2024-13-45 00:00:00'``) checked as Trino checks them.

Trino's analyzer evaluates every typed literal and refuses one that is not a value of its type with
``INVALID_LITERAL``: ``'2024-13-45 00:00:00' is not a valid timestamp literal``. Spark would fail later, or in
the middle of its own SQL (a VALUES row), with a position in text the user never wrote. The rules are Trino's:

- ``TIMESTAMP`` (with or without a zone) and ``TIME``: ``io.trino.type.DateTimes``' patterns, then the field
  ranges of ``java.time.LocalDateTime.of`` (month 1-12, a day of that month, hour 0-23, minute and second 0-59),
  at most 12 fractional digits; a zone is an offset (``+02:00``), ``Z``, ``UTC``/``GMT`` or a region
  (``Europe/Berlin``); a TIME's offset is at most 14 hours.
- ``DATE``: ``yyyy-mm-dd`` (one or two digits for month and day) naming a day of the calendar.
- ``DECIMAL``, the integer types, ``REAL``, ``DOUBLE``, ``BOOLEAN``: what Trino's cast from varchar accepts
  (``'%s' is not a valid integer literal``).

The dialect marks the casts that were written as typed literals (``meta["typed_literal"]``, ``_dialect``);
``CAST('2024-13-45' AS TIMESTAMP)`` is a cast, and fails when evaluated with ``INVALID_CAST_ARGUMENT``.
"""

from __future__ import annotations

import re
import zoneinfo
from functools import cache

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["check_typed_literals"]

# io.trino.type.DateTimes.DATETIME_PATTERN and TIME_PATTERN
_DATETIME = re.compile(
    r"(?P<year>[-+]?\d{4,})-(?P<month>\d{1,2})-(?P<day>\d{1,2})"
    r"( (?:(?P<hour>\d{1,2}):(?P<minute>\d{1,2})(?::(?P<second>\d{1,2})(?:\.(?P<fraction>\d+))?)?)?"
    r"\s*(?P<timezone>.+)?)?"
)
_TIME = re.compile(
    r"(?P<hour>\d{1,2}):(?P<minute>\d{1,2})(?::(?P<second>\d{1,2})(?:\.(?P<fraction>\d+))?)?"
    r"\s*((?P<sign>[+-])(?P<offset_hour>\d\d):(?P<offset_minute>\d\d))?"
)
_DATE = re.compile(r"\s*(?P<year>[-+]?\d{1,9})-(?P<month>\d{1,2})-(?P<day>\d{1,2})\s*")
_MAX_FRACTION = 12  # Trino's largest TIMESTAMP and TIME precision

_OFFSET = re.compile(r"[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?")
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*")

# Java's Long.parseLong and Double.parseDouble (decimal forms), Trino's Decimals.parse, Trino's varchar->boolean
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_DOUBLE = re.compile(r"\s*[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)\s*")
_DECIMAL = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)\s*")
_BOOLEAN = frozenset({"true", "false", "t", "f", "1", "0"})
_INTEGER_RANGE = {
    exp.DType.TINYINT: ("tinyint", 2**7),
    exp.DType.SMALLINT: ("smallint", 2**15),
    exp.DType.INT: ("integer", 2**31),
    exp.DType.BIGINT: ("bigint", 2**63),
}


def check_typed_literals(tree: exp.Expr) -> None:
    """INVALID_LITERAL, in Trino's words, for the first typed literal in ``tree`` that is not a value of its type."""
    for cast in tree.find_all(exp.Cast):
        if cast.meta.get("typed_literal") and isinstance(cast.this, exp.Literal) and cast.this.is_string:
            kind = _invalid(cast.this.name, cast.to)
            if kind is not None:
                position = cast.this.meta
                raise MergekitError(
                    ErrorCode.INVALID_LITERAL,
                    f"'{cast.this.name}' is not a valid {kind} literal",
                    line=int(position.get("line") or 0),
                    column=max(int(position.get("col") or 0) - len(cast.this.name) - 1, 0),
                )


def _invalid(text: str, to: exp.DataType) -> str | None:
    """The name of the literal's kind (as Trino's message says it) when ``text`` is not a value of ``to``."""
    kind = to.this
    if kind in (exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ):
        return None if _valid_timestamp(text) else "timestamp"
    if kind in (exp.DType.TIME, exp.DType.TIMETZ):
        return None if _valid_time(text) else "time"
    if kind is exp.DType.DATE:
        m = _DATE.fullmatch(text)
        return None if m and _valid_day(int(m["year"]), int(m["month"]), int(m["day"])) else "date"
    if kind is exp.DType.DECIMAL:
        return None if _DECIMAL.fullmatch(text) else "decimal"
    if kind in _INTEGER_RANGE:
        name, bound = _INTEGER_RANGE[kind]
        return None if _INTEGER.fullmatch(text) and -bound <= int(text) < bound else name
    if kind in (exp.DType.FLOAT, exp.DType.DOUBLE):
        return None if _DOUBLE.fullmatch(text) else ("real" if kind is exp.DType.FLOAT else "double")
    if kind is exp.DType.BOOLEAN:
        return None if text.lower() in _BOOLEAN else "boolean"
    return None


def _valid_day(year: int, month: int, day: int) -> bool:
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if month == 2 and leap else (28 if month == 2 else 30 if month in (4, 6, 9, 11) else 31)
    return 1 <= day <= days


def _valid_clock(hour: str | None, minute: str | None, second: str | None, fraction: str | None) -> bool:
    return (
        int(hour or 0) <= 23
        and int(minute or 0) <= 59
        and int(second or 0) <= 59
        and len(fraction or "") <= _MAX_FRACTION
    )


def _valid_timestamp(text: str) -> bool:
    m = _DATETIME.fullmatch(text)
    if m is None or abs(int(m["year"])) > 999_999_999:
        return False
    if not _valid_day(int(m["year"]), int(m["month"]), int(m["day"])):
        return False
    if not _valid_clock(m["hour"], m["minute"], m["second"], m["fraction"]):
        return False
    return m["timezone"] is None or _valid_zone(m["timezone"])


def _valid_time(text: str) -> bool:
    m = _TIME.fullmatch(text)
    if m is None or not _valid_clock(m["hour"], m["minute"], m["second"], m["fraction"]):
        return False
    if m["sign"] is None:
        return True
    hours, minutes = int(m["offset_hour"]), int(m["offset_minute"])
    return (hours == 14 and minutes == 0) or (hours < 14 and minutes <= 59)


def _valid_zone(zone: str) -> bool:
    """Whether Java's ``ZoneId.of`` reads ``zone``: an offset, ``Z``, ``UTC``/``GMT``/``UT`` with an optional
    offset, or a region of the time-zone database."""
    if zone == "Z" or _OFFSET.fullmatch(zone):
        return True
    prefix = re.fullmatch(r"(?:UTC|GMT|UT)(.*)", zone)
    if prefix is not None:
        return not prefix.group(1) or bool(_OFFSET.fullmatch(prefix.group(1)))
    if not _ZONE_NAME.fullmatch(zone):
        return False
    if not _zone_database():  # no time-zone database to ask: Spark decides
        return True
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    return True


@cache
def _zone_database() -> bool:
    return bool(zoneinfo.available_timezones())
