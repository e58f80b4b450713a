"""The kit's scenarios carry every case of shared/conformance/trino_examples.json unchanged, so running the kit
against a connector runs all of Trino's cases on it."""

from __future__ import annotations

from mergekit.testing import load_scenarios
from tests.helpers import load_cases

FIELDS = ("setup", "statement", "expected_count", "expected_error", "check_query", "expected_rows")


def test_every_trino_case_is_a_kit_scenario() -> None:
    scenarios = {s["id"]: s for s in load_scenarios()}
    for case in load_cases("trino_examples.json"):
        assert case["id"] in scenarios, case["id"]
        for field in FIELDS:
            assert scenarios[case["id"]][field] == case[field], (case["id"], field)


def test_scenario_ids_are_unique_and_requirements_known() -> None:
    from mergekit.testing import Behavior

    scenarios = load_scenarios()
    assert len({s["id"] for s in scenarios}) == len(scenarios)
    for s in scenarios:
        for b in s.get("requires", []):
            Behavior(b)
