"""Helpers shared by the test modules: loading conformance cases, comparing result rows as users see them, the
error a statement raises, and an Engine on a journal warehouse.

Row comparison is the conformance kit's own (``mergekit.testing``), so the project's tests and connector
authors' tests judge results the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.testing import assert_same_rows as assert_rows
from mergekit.testing import normalize

# Copies of ../shared/conformance/ (where they come from; tests read only what the repository carries).
CONFORMANCE = Path(__file__).resolve().parent / "fixtures" / "conformance"

__all__ = ["CONFORMANCE", "assert_rows", "error_of", "fails", "journal_engine", "load_cases", "normalize"]


def load_cases(name: str) -> list[dict[str, Any]]:
    return json.loads((CONFORMANCE / name).read_text())


def error_of(engine: Engine, sql: str) -> MergekitError:
    """The error ``engine.execute(sql)`` raises (the test fails when it raises none)."""
    with pytest.raises(MergekitError) as raised:
        engine.execute(sql)
    return raised.value


def fails(engine: Engine, sql: str, code: ErrorCode, text: str) -> MergekitError:
    """``sql`` fails with ``code`` and a message containing ``text``; the error, for more checks."""
    err = error_of(engine, sql)
    assert err.code is code, err
    assert text in str(err), err
    return err


def journal_engine(spark: Any, warehouse: str, **options: Any) -> Engine:
    """An Engine whose catalog ``lake`` is the journal connector on ``warehouse``; ``options``: more of the
    catalog's settings (``version_type``, ...)."""
    return Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": warehouse, **options}})
