"""Every case of shared/conformance/trino_examples.json, under both row change paradigms."""

from __future__ import annotations

import re

import pytest

from mergekit import MergekitError
from tests.helpers import assert_rows, load_cases

CASES = load_cases("trino_examples.json")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_trino_case(engine, case) -> None:
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
