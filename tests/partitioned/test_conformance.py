"""Every case of shared/conformance/partition_examples.json (MonetDB's merge-partition tests and seed 004)."""

from __future__ import annotations

import pytest

from tests.helpers import load_cases, run_case

CASES = load_cases("partition_examples.json")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_partition_case(engine, case) -> None:
    run_case(engine, case, case["setup"], coded_error=True)
