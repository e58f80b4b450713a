"""docs/develop/testing-your-connector.md names every kit test and every behaviour (issue 28, row 4): an author
reads there what a failing kit test needs and what to opt out of."""

from __future__ import annotations

from pathlib import Path

from mergekit.testing import BaseConnectorTest, Behavior
from mergekit.testing._report import _TEST_BEHAVIORS

DOC = (Path(__file__).parents[2] / "docs" / "develop" / "testing-your-connector.md").read_text()


def test_the_testing_doc_lists_every_kit_test_and_behaviour() -> None:
    tests = [name for name in dir(BaseConnectorTest) if name.startswith("test_")]
    assert len(tests) >= 13
    missing = [t for t in tests if f"`{t}`" not in DOC and f"`{t[: -len('_by_create_table_as')]}`" not in DOC]
    assert not missing, f"kit tests the doc does not list: {missing}"
    unnamed = [b.name for b in Behavior if f"`{b.name}`" not in DOC]
    assert not unnamed, f"behaviours the doc does not name: {unnamed}"


def test_the_opt_out_advice_knows_every_kit_test_that_needs_a_behaviour() -> None:
    tests = {name for name in dir(BaseConnectorTest) if name.startswith("test_")}
    assert set(_TEST_BEHAVIORS) <= tests
    for needs in _TEST_BEHAVIORS.values():
        assert all(name in Behavior.__members__ for name in needs)
