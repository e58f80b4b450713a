"""Every case of shared/conformance/trino_examples.json on a journal catalog (the engine's own module runs them on
the memory connector). Journal tables are keyless here, as in Trino's tests: each gets a hidden row id as its key."""

from __future__ import annotations

import re

import pytest

from mergekit import Engine, MergekitError
from tests.helpers import assert_rows, load_cases

pytestmark = pytest.mark.spark

CASES = load_cases("trino_examples.json")


@pytest.fixture
def engine(spark, tmp_path) -> Engine:
    e = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "warehouse")}})
    yield e
    e.close()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_trino_case_on_journal(engine, case) -> None:
    for statement in case["setup"]:
        engine.execute(statement)
    expected_error = case["expected_error"]
    if expected_error is not None:
        with pytest.raises(MergekitError) as info:
            engine.execute(case["statement"])
        assert expected_error in str(info.value)
        assert re.match(r"^\[[A-Z_]+\] ", str(info.value))
        result_rows = None
    else:
        result = engine.execute(case["statement"])
        if case["expected_count"] is not None:
            assert result.row_count == case["expected_count"]
        result_rows = result.rows()
    if case["check_query"] is not None:
        rows = engine.execute(case["check_query"]).rows()
    else:
        rows = result_rows
    ordered = bool(case["check_query"] and re.search(r"(?i)\border\s+by\b", case["check_query"]))
    assert_rows(rows, case["expected_rows"], ordered=ordered)
