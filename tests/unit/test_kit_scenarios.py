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


def test_a_second_configuration_runs_the_scenarios_and_kit_tests_it_names() -> None:
    import pytest

    from mergekit.testing import BaseConnectorTest, Behavior, load_scenarios

    class Second(BaseConnectorTest):
        scenario_behaviors = frozenset({Behavior.DELETE})
        kit_tests = frozenset({"test_types_round_trip"})

    class Whole(BaseConnectorTest):
        pass

    chosen: dict[str, list[str]] = {}

    class Metafunc:  # what pytest_generate_tests reads of pytest's Metafunc, and what it is asked to parametrize
        def __init__(self, cls: type, name: str) -> None:
            self.function, self.cls = getattr(cls, name), cls

        def parametrize(self, argnames: str, values: list, ids: list[str]) -> None:
            chosen[self.cls.__name__] = ids

    for cls in (Second, Whole):
        cls().pytest_generate_tests(Metafunc(cls, "test_scenario"))  # type: ignore[arg-type]
    deletes = [s["id"] for s in load_scenarios() if "delete" in s.get("requires", [])]
    assert chosen["Second"] == deletes and len(deletes) >= 5
    assert chosen["Whole"] == [s["id"] for s in load_scenarios()]
    assert Second.test_types_round_trip is BaseConnectorTest.test_types_round_trip
    assert Second.test_add_column is None and Second.test_check_constraint is None  # not collected
    assert Whole.test_add_column is BaseConnectorTest.test_add_column
    with pytest.raises(TypeError, match="kit_tests names no kit test: test_typo"):
        type("Typo", (BaseConnectorTest,), {"kit_tests": frozenset({"test_typo"})})
