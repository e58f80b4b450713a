"""DATE values and date arithmetic for the differential generator (feature ``dates``; generator.py): target columns of
type DATE, date literals, ``d + n``, ``n + d``, ``d - n`` (``n`` an INTEGER: PostgreSQL has no ``date + bigint``),
``d1 - d2`` (an INTEGER on both sides) and comparisons of dates after arithmetic.

Each function takes the generator's ``Exprs`` (its random numbers, the references in scope, the hazards and tags of
the statement). Every statement with date arithmetic is tagged ``date_arith`` (and ``dates``): a result past DATE's
range is an error on both sides when it is past PostgreSQL's range too (``d + 2147483647``), and the documented
difference ``date_range`` (compare.DELIBERATE) when only mergekit's range is exceeded (mergekit's DATE ends at
9999-12-31, PostgreSQL's at 5874897 AD).
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from tests.differential import operands

# Rare values at the ends of mergekit's DATE range, so that small day counts leave it (only mergekit fails there).
EDGE_DATES = (dt.date(9999, 12, 30), dt.date(1, 1, 2))
BASE = dt.date(2000, 1, 1)


def date_literal(value: dt.date) -> str:
    return f"DATE '{value.isoformat()}'"


def random_date(rng: random.Random) -> dt.date:
    if rng.random() < 0.03:
        return rng.choice(EDGE_DATES)
    return BASE + dt.timedelta(days=rng.randint(-4000, 12000))


def small_days(rng: random.Random) -> str:
    v = rng.randint(-400, 400)
    return f"({v})" if v < 0 else str(v)


def days(ex: Any, depth: int) -> tuple[str, bool]:
    """An INTEGER expression counting days: ``(sql, constant)``."""
    rng = ex.rng
    r = rng.random()
    if depth <= 0 or r < 0.4:
        return small_days(rng), True
    ints = [ref for ref in ex.ints if ref.type == "INTEGER"]
    if r < 0.75 and ints:
        return rng.choice(ints).sql, False
    sql, typ, constant = ex.int_(depth - 1)
    if sql == "NULL":
        return "CAST(NULL AS INTEGER)", True
    if typ == "BIGINT":
        if constant:
            return small_days(rng), True
        ex.raises("overflow")
        sql = f"CAST({sql} AS INTEGER)"
    return sql, constant


def date_(ex: Any, depth: int = 2) -> tuple[str, bool]:
    """A DATE expression: ``(sql, constant)``."""
    rng = ex.rng
    ex.acc.tags.add("dates")
    if depth <= 0 or rng.random() < 0.35:
        return operands.leaf(ex, ex.dates, 0.7, 0.06, "CAST(NULL AS DATE)", lambda: date_literal(random_date(rng)))
    kind = rng.choices(["plus", "minus", "int_plus", "coalesce", "case"], [4, 3, 2, 1, 1])[0]
    if kind == "coalesce":
        a, ca = date_(ex, depth - 1)
        b, cb = date_(ex, depth - 1)
        return f"COALESCE({a}, {b})", ca and a != "CAST(NULL AS DATE)" or (ca and cb)
    if kind == "case":
        c = ex.bool_(depth - 1)
        a, _ = date_(ex, depth - 1)
        b, _ = date_(ex, depth - 1)
        return f"CASE WHEN {c} THEN {a} ELSE {b} END", False
    ex.acc.tags.add("date_arith")
    if kind == "int_plus":  # n + d
        n, cn = days(ex, depth - 1)
        before = ex.raising
        d, cd = date_(ex, depth - 1)
        if cd and cn:  # PostgreSQL folds constants while planning: keep them in range
            n = small_days(rng)
        ex.right_operand(before, cn)
        ex.raises("overflow")
        return ex.binary(n, "+", d), cd and cn
    d, cd = date_(ex, depth - 1)
    before = ex.raising
    n, cn = days(ex, depth - 1)
    if cd and cn:
        n = small_days(rng)
    ex.right_operand(before, cd)
    ex.raises("overflow")
    return ex.binary(d, "+" if kind == "plus" else "-", n), cd and cn


def date_difference(ex: Any, depth: int) -> tuple[str, str, bool]:
    """``d1 - d2``, an INTEGER number of days on both sides: ``(sql, type, constant)``."""
    ex.acc.tags.add("date_arith")
    a, ca = date_(ex, depth - 1)
    before = ex.raising
    b, cb = date_(ex, depth - 1)
    ex.right_operand(before, ca)
    return ex.binary(a, "-", b), "INTEGER", ca and cb


def date_comparison(ex: Any, depth: int, op: str) -> str:
    return operands.compare(ex, lambda: date_(ex, depth), ex.dates, op)


def default_date(rng: random.Random) -> str:
    return rng.choice(["DATE '2000-01-01'", "(DATE '2020-02-28' + 1)", "DATE '1999-12-31'"])
