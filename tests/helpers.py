"""Helpers shared by the test modules: loading conformance cases and comparing result rows as users see them."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections import Counter
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CONFORMANCE = SHARED / "conformance"


def load_cases(name: str) -> list[dict[str, Any]]:
    return json.loads((CONFORMANCE / name).read_text())


def normalize(value: Any) -> Any:
    """Values as the conformance files write them: dates and timestamps as strings, decimals as numbers."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def normalize_rows(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [tuple(normalize(v) for v in row) for row in rows]


def assert_rows(actual: list[Any], expected: list[Any], *, ordered: bool = False) -> None:
    a = normalize_rows(actual)
    e = normalize_rows(expected)
    if ordered:
        assert a == e, f"rows differ:\n actual   {a}\n expected {e}"
    else:
        assert Counter(a) == Counter(e), (
            f"rows differ (as multisets):\n actual   {sorted(map(repr, a))}\n expected {sorted(map(repr, e))}"
        )
