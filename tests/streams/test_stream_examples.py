"""The streaming cases of Calcite's test suites (tests/fixtures/conformance/stream_examples.json)
as bounded runs on the journal catalog: rows in emission order, errors by code and Calcite's text.

Every case is built: :data:`BUILT` lists them all, each run and checked (rows, or the error's code and text).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from tests.helpers import load_cases

pytestmark = pytest.mark.spark

CASES = {c["id"]: c for c in load_cases("stream_examples.json")}

BUILT = [
    "S01", "S04", "S07", "S10", "S13", "S16", "S19", "S22", "S25", "S28", "S31", "S34", "S37", "S40", "S43", "S46",
    "S49", "S52", "S55",
]  # fmt: skip

# Calcite's stream.iq reads ORDERS relationally through a window table function (S07, S10): its ORINOCO orders
# is both a stream and a table. A mergekit stream is a relation only when it keeps its history, so these cases
# create it WITH (history = true) rather than weaken the modality rules (a relational query over a stream without
# history fails: Cannot convert stream 'ORDERS' to relation).
WITH_HISTORY = {"S07", "S10"}


def test_every_case_is_accounted_for() -> None:
    assert sorted(BUILT) == sorted(CASES)


def _setup(case: dict) -> list[str]:
    if case["id"] not in WITH_HISTORY:
        return case["setup"]
    return [f"{s} WITH (history = true)" if s.upper().startswith("CREATE STREAM") else s for s in case["setup"]]


def _engine(spark, tmp_path: Path, setup: list[str]) -> Engine:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path)}})
    for sql in setup:
        engine.execute(sql.replace(" STRING", " VARCHAR"))  # Spark's STRING: VARCHAR in Trino's dialect
    return engine


def _value(v: object) -> object:
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    return v


@pytest.mark.parametrize("case_id", BUILT)
def test_case(spark, tmp_path: Path, case_id: str) -> None:
    case = CASES[case_id]
    engine = _engine(spark, tmp_path, _setup(case))
    try:
        if case["expected_error"] is not None:
            with pytest.raises(MergekitError) as caught:
                engine.execute(case["statement"])
            assert caught.value.code is ErrorCode.STREAM_NOT_ALLOWED
            assert case["expected_error"] in str(caught.value)
            return
        rows = [[_value(v) for v in row] for row in engine.execute(case["statement"]).rows()]
        expected = case["expected_rows"]
        if "multiset" in (case.get("notes") or "").lower():
            assert sorted(rows, key=repr) == sorted(expected, key=repr)
        else:
            assert rows == expected
    finally:
        engine.close()
