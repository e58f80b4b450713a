"""Helpers shared by the test modules: loading and running conformance cases, comparing result rows as users see
them, the error a statement raises, and an Engine on a journal warehouse.

Row comparison is the conformance kit's own (``mergekit.testing``), so the project's tests and connector
authors' tests judge results the same way."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.testing import assert_same_rows as assert_rows
from mergekit.testing import normalize

# Copies of ../shared/conformance/ (where they come from; tests read only what the repository carries).
CONFORMANCE = Path(__file__).resolve().parent / "fixtures" / "conformance"

__all__ = [
    "CONFORMANCE",
    "assert_rows",
    "error_of",
    "fails",
    "journal_engine",
    "load_cases",
    "normalize",
    "run_case",
]


def load_cases(name: str) -> list[dict[str, Any]]:
    return json.loads((CONFORMANCE / name).read_text())


def run_case(engine: Engine, case: dict[str, Any], setup: Iterable[str], *, coded_error: bool = False) -> None:
    """One conformance case on ``engine``: its ``setup`` statements (as given: the case's own, or rewritten), its
    statement, then the error it expects (``coded_error``: a message that also starts with ``[CODE] ``) or its
    count, and its rows (the statement's, or ``check_query``'s where it has one)."""
    for statement in setup:
        engine.execute(statement)
    expected_error = case["expected_error"]
    result_rows = None
    if expected_error is not None:
        with pytest.raises(MergekitError) as info:
            engine.execute(case["statement"])
        assert expected_error in str(info.value), str(info.value)
        if coded_error:
            assert re.match(r"^\[[A-Z_]+\] ", str(info.value)), str(info.value)
    else:
        result = engine.execute(case["statement"])
        if case["expected_count"] is not None:
            assert result.row_count == case["expected_count"], (result.row_count, case["expected_count"])
        result_rows = result.rows()
    rows = engine.execute(case["check_query"]).rows() if case["check_query"] is not None else result_rows
    if rows is not None or case["expected_rows"] is not None:
        ordered = bool(case["check_query"] and re.search(r"(?i)\border\s+by\b", case["check_query"]))
        assert_rows(rows, case["expected_rows"], ordered=ordered)


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
