"""Timestamps with and without time zones for the differential generator (feature ``zones``; generator.py).

PostgreSQL runs in a session set to ``America/New_York`` (runner.Postgres), mergekit in a Spark session set to
``Asia/Kolkata`` (test_differential.py): neither is UTC, and mergekit's SQL must not notice its session's zone.
What the two compute alike is generated:

- ``TIMESTAMP(6) WITH TIME ZONE`` values from literals with an explicit zone (an offset or a region, written
  ``CAST('2024-05-05 12:00:00+02:00' AS TIMESTAMP(6) WITH TIME ZONE)``, one spelling both accept), compared with
  each other, shifted by hours or minutes (the instant moves alike), ``COALESCE`` / ``CASE`` of them;
- ``TIMESTAMP(6)`` values (wall clocks): literals, day and hour arithmetic, comparisons;
- ``CAST(<a literal in America/New_York> AS TIMESTAMP(6))``: PostgreSQL reads it in its session's zone, mergekit in
  the literal's (Trino's rule); the session's zone is the literal's, so both keep the literal's wall clock.

What they compute differently is not generated; docs/sql.md lists it ("Time zones" and "Differences from
PostgreSQL"): PostgreSQL casts and reads a stored ``timestamptz`` in its session's zone (mergekit in UTC, the zone
of a stored value), interprets a ``timestamp`` as a ``timestamptz`` in its session's zone (mergekit's session is
UTC), and adds a day to a ``timestamptz`` in its session's calendar (mergekit adds 24 hours, as Trino).
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from tests.differential import operands

TSTZ = "TIMESTAMP(6) WITH TIME ZONE"
TS = "TIMESTAMP(6)"
PG_ZONE = "America/New_York"  # PostgreSQL's session zone (runner.Postgres)
# zones written in literals: offsets of both signs, a half hour, UTC, and the PostgreSQL session's region
_ZONES = ("+02:00", "-05:00", "+05:30", "+00:00", "-03:30", PG_ZONE)
_BASE = dt.datetime(2024, 1, 1)


def random_wall(rng: random.Random) -> dt.datetime:
    """A wall clock in 2023-2025 (across DST changes), to the microsecond now and then."""
    value = _BASE + dt.timedelta(minutes=rng.randint(-525_600, 525_600))
    return value.replace(microsecond=rng.choice([0, 0, 0, 123456, 500000]))


def random_instant(rng: random.Random) -> dt.datetime:
    """A zoned value as stored in a table (an aware datetime in one of the offsets)."""
    offset = rng.choice([2, -5, 0, 5.5, -3.5])
    return random_wall(rng).replace(tzinfo=dt.timezone(dt.timedelta(hours=offset)))


def literal(value: dt.datetime) -> str:
    """A timestamp value as an SQL literal both dialects read alike."""
    if value.tzinfo is None:
        return f"CAST('{value.isoformat(sep=' ')}' AS {TS})"
    return f"CAST('{value.isoformat(sep=' ')}' AS {TSTZ})"


def zoned_literal(rng: random.Random, zone: str | None = None) -> str:
    zone = zone or rng.choice(_ZONES)
    wall = random_wall(rng).isoformat(sep=" ")
    text = f"{wall} {zone}" if "/" in zone else f"{wall}{zone}"
    return f"CAST('{text}' AS {TSTZ})"


def _interval(rng: random.Random, units: tuple[str, ...]) -> str:
    return f"INTERVAL '{rng.randint(1, 100)}' {rng.choice(units)}"


def tstz_(ex: Any, depth: int = 2) -> tuple[str, bool]:
    """A ``TIMESTAMP(6) WITH TIME ZONE`` expression: ``(sql, constant)``."""
    rng = ex.rng
    ex.acc.tags.add("zones")
    if depth <= 0 or rng.random() < 0.4:
        return operands.leaf(ex, ex.tstzs, 0.6, 0.05, f"CAST(NULL AS {TSTZ})", lambda: zoned_literal(rng))
    kind = rng.choices(["shift", "coalesce", "case"], [4, 1, 1])[0]
    if kind == "shift":  # hours and minutes move the instant alike on both sides (days do not: the module's notes)
        x, cx = tstz_(ex, depth - 1)
        return f"({x} {rng.choice('+-')} {_interval(rng, ('HOUR', 'MINUTE'))})", cx
    a, ca = tstz_(ex, depth - 1)
    b, cb = tstz_(ex, depth - 1)
    if kind == "coalesce":
        return f"COALESCE({a}, {b})", ca and cb
    return f"CASE WHEN {ex.bool_(depth - 1)} THEN {a} ELSE {b} END", False


def ts_(ex: Any, depth: int = 2) -> tuple[str, bool]:
    """A ``TIMESTAMP(6)`` expression: ``(sql, constant)``."""
    rng = ex.rng
    ex.acc.tags.add("zones")
    if depth <= 0 or rng.random() < 0.4:
        return operands.leaf(ex, ex.tss, 0.6, 0.05, f"CAST(NULL AS {TS})", lambda: literal(random_wall(rng)))
    kind = rng.choices(["shift", "local", "coalesce"], [4, 2, 1])[0]
    if kind == "shift":
        x, cx = ts_(ex, depth - 1)
        return f"({x} {rng.choice('+-')} {_interval(rng, ('DAY', 'HOUR', 'MINUTE'))})", cx
    if kind == "local":  # the wall clock of a value in PostgreSQL's session zone: Trino's and PostgreSQL's agree
        ex.acc.tags.add("zone_cast")
        return f"CAST({zoned_literal(rng, PG_ZONE)} AS {TS})", True
    a, ca = ts_(ex, depth - 1)
    b, cb = ts_(ex, depth - 1)
    return f"COALESCE({a}, {b})", ca and cb


def comparison(ex: Any, depth: int, op: str) -> str:
    """Two values of one timestamp type compared (mixing the types is a documented difference)."""
    pick = tstz_ if (ex.tstzs and not ex.tss) or (ex.rng.random() < 0.5 and not (ex.tss and not ex.tstzs)) else ts_
    a, ca = pick(ex, depth)
    b, cb = pick(ex, depth)
    refs = ex.tstzs if pick is tstz_ else ex.tss
    if ca and cb and refs:
        a = ex.rng.choice(refs).sql
    return f"{a} {op} {b}"


def default_value(rng: random.Random, typ: str) -> str:
    return zoned_literal(rng) if typ == TSTZ else literal(random_wall(rng))
