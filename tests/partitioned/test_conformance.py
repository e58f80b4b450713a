"""Every case of shared/conformance/partition_examples.json (MonetDB's merge-partition tests and seed 004)."""

from __future__ import annotations

import re

import pytest

from mergekit import MergekitError
from tests.helpers import assert_rows, load_cases

CASES = load_cases("partition_examples.json")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_partition_case(engine, case) -> None:
    for statement in case["setup"]:
        engine.execute(statement)
    expected_error = case["expected_error"]
    result_rows = None
    if expected_error is not None:
        with pytest.raises(MergekitError) as info:
            engine.execute(case["statement"])
        assert expected_error in str(info.value)
        assert re.match(r"^\[[A-Z_]+\] ", str(info.value))
    else:
        result = engine.execute(case["statement"])
        if case["expected_count"] is not None:
            assert result.row_count == case["expected_count"]
        result_rows = result.rows()
    rows = engine.execute(case["check_query"]).rows() if case["check_query"] is not None else result_rows
    if rows is not None or case["expected_rows"] is not None:
        ordered = bool(case["check_query"] and re.search(r"(?i)\border\s+by\b", case["check_query"]))
        assert_rows(rows, case["expected_rows"], ordered=ordered)
