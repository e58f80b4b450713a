"""Helpers shared by the test modules: loading conformance cases and comparing result rows as users see them.

Row comparison is the conformance kit's own (``mergekit.testing``), so the project's tests and connector
authors' tests judge results the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mergekit.testing import assert_same_rows as assert_rows
from mergekit.testing import normalize

# Copies of ../shared/conformance/ (where they come from; tests read only what the repository carries).
CONFORMANCE = Path(__file__).resolve().parent / "fixtures" / "conformance"

__all__ = ["CONFORMANCE", "assert_rows", "load_cases", "normalize"]


def load_cases(name: str) -> list[dict[str, Any]]:
    return json.loads((CONFORMANCE / name).read_text())
