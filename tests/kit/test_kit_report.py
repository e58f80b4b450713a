"""The kit's own report, as an author running it sees it (issue 28, rows 3 and 4): the summary counts exercised,
refused and not-applicable kit tests apart, and a kit test failing on a refusal says which behaviour to opt out of.
A small kit run inside this pytest process (pytester), on the session's Spark."""

from __future__ import annotations

from typing import Any

INNER = '''
from mergekit.testing import BaseConnectorTest, Behavior


class TestAppendOnly(BaseConnectorTest):
    unsupported = {Behavior.MERGE, Behavior.UPDATE, Behavior.DELETE, Behavior.NOT_MATCHED_BY_SOURCE}
    scenario_behaviors = frozenset({Behavior.NOT_MATCHED_BY_SOURCE})
    kit_tests = frozenset({"test_create_and_drop_table", "test_failed_row_level_statements_leave_nothing_behind"})

    def catalog(self, tmp_path):
        return {"connector": "memory", "modifications": "false"}


class TestForgotToOptOut(BaseConnectorTest):
    """csvdir stores no CHECK constraint, and this class does not say so."""

    scenario_behaviors = frozenset()
    kit_tests = frozenset({"test_check_constraint"})

    def catalog(self, tmp_path):
        return {"connector": "csvdir", "root": str(tmp_path)}
'''


def test_the_kit_counts_exercised_refused_and_not_applicable_apart(spark: Any, pytester: Any) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    out = result.stdout.str()
    # TestAppendOnly: 3 scenarios of NOT_MATCHED_BY_SOURCE (refused) and 2 kit tests; TestForgotToOptOut: 1 kit
    # test (its empty scenario list is pytest's one skip)
    result.assert_outcomes(passed=5, failed=1, skipped=1)
    assert " mergekit conformance kit " in out
    lines = {
        line.split(":")[0].strip(): line.split(":", 1)[1].strip() for line in out.splitlines() if "exercised," in line
    }
    assert lines["TestAppendOnly"] == (
        "1 exercised, 3 refused (opted out: the exact NOT_SUPPORTED checked), 1 not applicable, 0 failed"
    )
    assert lines["TestForgotToOptOut"] == (
        "0 exercised, 0 refused (opted out: the exact NOT_SUPPORTED checked), 0 not applicable, 1 failed"
    )
    # the failure names the behaviour to opt out of
    assert "mergekit conformance kit: what to opt out of" in out
    assert "[NOT_SUPPORTED] This connector does not support check constraints" in out
    assert "opt out in your BaseConnectorTest subclass: unsupported = {Behavior.CHECK_CONSTRAINT}" in out
