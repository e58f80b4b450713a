"""The physical choices of a MERGE, from estimates alone (no Spark)."""

from __future__ import annotations

import pytest

from mergekit.planner import cost
from mergekit.planner.cost import JoinReductions, SourceEstimate


def estimate(keys: float, *, width: int = 8, deterministic: bool = True) -> SourceEstimate:
    return SourceEstimate(
        key_bytes=int(keys * width * cost.KEY_VALUES_SLACK), key_row_width=width, deterministic=deterministic
    )


def test_small_source_collects_distinct_keys_and_semi_joins() -> None:
    r = cost.join_reductions(estimate(1000), key_columns=("id",), value_set_columns=frozenset({"id"}))
    assert r == JoinReductions(reduce_target=True, collect_key_values="distinct")


def test_large_source_hands_value_sets_only_for_columns_the_connector_accepts() -> None:
    big = estimate(cost.KEY_VALUES_MAX * 10)
    assert cost.wants_value_sets(big)
    r = cost.join_reductions(big, key_columns=("id",), value_set_columns=frozenset({"id"}))
    assert r == JoinReductions(reduce_target=True, collect_key_values="arrow", value_set_columns=frozenset({"id"}))
    r = cost.join_reductions(big, key_columns=("id",), value_set_columns=frozenset({"other"}))
    assert r == JoinReductions(reduce_target=True, collect_key_values=None)
    assert not cost.wants_value_sets(estimate(1000))


def test_no_reduction_for_non_deterministic_or_huge_sources() -> None:
    assert cost.join_reductions(
        estimate(10, deterministic=False), key_columns=("id",), value_set_columns=frozenset()
    ) == (JoinReductions())
    huge = SourceEstimate(key_bytes=1 << 62, key_row_width=8, deterministic=True)
    assert cost.join_reductions(huge, key_columns=("id",), value_set_columns=frozenset({"id"})) == JoinReductions()
    assert not cost.lookup_candidate(huge, join_keys=1, on_conjuncts=1, key_column="id")


@pytest.mark.parametrize(
    ("join_keys", "on_conjuncts", "key_column", "expected"),
    [(1, 1, "id", True), (2, 2, "id", False), (1, 2, "id", False), (1, 1, None, False)],
)
def test_lookup_needs_one_equality_on_a_bare_column(join_keys, on_conjuncts, key_column, expected) -> None:
    assert (
        cost.lookup_candidate(estimate(10), join_keys=join_keys, on_conjuncts=on_conjuncts, key_column=key_column)
        is expected
    )


def test_lookup_threshold_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "LOOKUP_MIN_KEYS", 10**9)
    assert not cost.lookup_candidate(estimate(10), join_keys=1, on_conjuncts=1, key_column="id")
    monkeypatch.setattr(cost, "LOOKUP_MIN_KEYS", 0)
    assert cost.lookup_candidate(estimate(10), join_keys=1, on_conjuncts=1, key_column="id")
