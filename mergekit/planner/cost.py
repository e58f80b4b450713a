"""The physical choices for a MERGE, as pure functions of estimates (no Spark: unit-tested without a JVM).

The execution layer measures (Spark's size estimate of the source's join keys, their row width, whether they are
deterministic; which columns the connector accepts value sets on; whether it has an index) and asks these
functions what to do; :mod:`mergekit.planner.physical` holds the answer, which EXPLAIN prints and the statement
runs. The thresholds are module constants so a test (or an operator) can move them.
"""

from __future__ import annotations

import attrs

__all__ = [
    "SourceEstimate",
    "JoinReductions",
    "join_reductions",
    "lookup_candidate",
    "wants_value_sets",
    "KEY_VALUES_MAX",
    "KEY_VALUES_FILTER_MAX",
    "KEY_VALUES_SLACK",
    "KEY_ARRAY_MAX",
    "LOOKUP_MIN_KEYS",
    "REDUCE_TARGET_MAX_BYTES",
]

# Dynamic pruning: sources with at most this many distinct values per key hand those values to the connector (a
# ``Constraint``). Up to ``KEY_VALUES_FILTER_MAX`` of them also become an IN filter on the target scan (Spark pushes
# it into Parquet row groups); more would only slow Spark's planner, and the semi join does that filtering.
KEY_VALUES_MAX = 100_000
KEY_VALUES_FILTER_MAX = 1000
# Collecting them is a DISTINCT over the source (0.7 s for a 1M-row source on 2 cores), wasted when it finds more:
# it only runs when Spark estimates the source's keys at most ``KEY_VALUES_SLACK`` times the size of
# ``KEY_VALUES_MAX`` keys (estimates of Parquet sources are compressed sizes: below the rows' real size).
KEY_VALUES_SLACK = 1.25
# Larger sources (up to this many rows) hand their keys over as an Arrow array (``Constraint.value_sets``), read
# without a DISTINCT: a connector that reads just those keys' rows (the journal: pyarrow page sources) and says so
# (``NativeScanUnion.enforced``) spares the MERGE its broadcast semi join. 10M/1M: the 1M keys take 0.2 s.
KEY_ARRAY_MAX = 4_000_000
# Sources of more keys than this (up to ``KEY_ARRAY_MAX``: a task holds its share of the source in memory) MERGE by
# index lookups when they can: no scan of the target, no shuffle of its rows, no join in Spark. Faster at every
# size measured (10M-row target: 1 source row 0.4 s against 0.6 s, 10k 0.9 s against 1.1 s, 1M 2.4 s against
# 3.6 s), so every size; tests raise it to pin the Spark plan.
LOOKUP_MIN_KEYS = 0
# MERGE by index lookups of sources estimated at most this many keys runs on the driver tier: the source's rows
# collected, looked up, evaluated and written in the engine's process (no shuffle, no Python workers).
# bench/driver_lookup.py measures where the Spark tier starts to pay for itself.
DRIVER_LOOKUP_MAX_KEYS = 10_000
# An Arrow table the caller registered (``Engine.register_arrow``) is a MERGE source the driver tier reads as it is,
# up to this many rows; the Spark tier would first make a DataFrame of it (bench/driver_lookup.py).
DRIVER_ARROW_MAX_ROWS = 1_000_000
# A query the driver tier may read itself (a scan of one table through page sources) runs there while the table
# holds at most this many rows (counted as the pages arrive); a larger one runs on Spark, which reads it in
# parallel. A 100k-row memory table reads in about 0.05 s on the driver.
DRIVER_SCAN_MAX_ROWS = 100_000
# A table Spark reads natively (``get_native_scan``: the journal's Parquet files) is read on the driver tier instead,
# through the connector's splits, while the files of its native scan hold at most this many bytes (a larger one, or
# one on a remote file system, is left to Spark without reading a row on the driver).
DRIVER_NATIVE_SCAN_MAX_BYTES = 4 * 1024 * 1024
# Source join keys up to this estimated size are broadcast to pre-filter a MERGE target (a 1M-row BIGINT key is
# about 8 MB; Spark's estimates of file sources are rough, so the bound is generous).
REDUCE_TARGET_MAX_BYTES = 64 * 1024 * 1024


@attrs.frozen(kw_only=True)
class SourceEstimate:
    """What Spark estimates of the source's join keys before anything runs."""

    key_bytes: int  # Spark's size estimate of the keys' plan (huge when unknown)
    key_row_width: int  # bytes per row of the keys, from their types
    deterministic: bool  # evaluating the keys twice gives the same rows (no rand())

    @property
    def width(self) -> float:
        return self.key_row_width * KEY_VALUES_SLACK

    @property
    def keys(self) -> float:
        """The estimated number of source keys (an upper bound as rough as Spark's size estimate)."""
        return self.key_bytes / self.width if self.width else float(self.key_bytes)

    def describe(self) -> str:
        return f"source keys ~{self.key_bytes} bytes (~{self.keys:.0f} keys), deterministic={self.deterministic}"


@attrs.frozen(kw_only=True)
class JoinReductions:
    """How a Spark-join MERGE narrows the target before the join.

    ``reduce_target``: a broadcast semi join of the target with the source's keys. ``collect_key_values``: the
    source's key values are collected for the connector's scan, as a set of ``distinct`` values (up to
    ``KEY_VALUES_MAX``) or an ``arrow`` array (value sets, for ``value_set_columns``), or None."""

    reduce_target: bool = False
    collect_key_values: str | None = None
    value_set_columns: frozenset[str] = frozenset()


def join_reductions(
    estimate: SourceEstimate, *, key_columns: tuple[str | None, ...], value_set_columns: frozenset[str]
) -> JoinReductions:
    """Reductions of the target a RIGHT-join MERGE on equality keys takes, given the source's key estimate.

    Both reductions evaluate the source's keys once more, before the join does: only when that evaluation gives the
    same keys (no rand() in a key), else a target row filtered out by one evaluation could be a match in the other
    and be taken for NOT MATCHED. ``value_set_columns`` are the target columns the connector accepts value sets on."""
    reduce = estimate.key_bytes <= REDUCE_TARGET_MAX_BYTES and estimate.deterministic
    if reduce and estimate.key_bytes <= KEY_VALUES_MAX * estimate.width:
        return JoinReductions(reduce_target=True, collect_key_values="distinct")
    if reduce and estimate.key_bytes <= KEY_ARRAY_MAX * estimate.width:
        usable = value_set_columns if value_set_columns.intersection(c for c in key_columns if c) else frozenset()
        return JoinReductions(
            reduce_target=True, collect_key_values="arrow" if usable else None, value_set_columns=usable
        )
    return JoinReductions(reduce_target=reduce)


def wants_value_sets(estimate: SourceEstimate) -> bool:
    """Whether :func:`join_reductions` may choose value sets for this source (then it needs to know the columns the
    connector accepts them on; asking costs the connector a metadata call)."""
    return (
        estimate.deterministic
        and estimate.key_bytes <= REDUCE_TARGET_MAX_BYTES
        and KEY_VALUES_MAX * estimate.width < estimate.key_bytes <= KEY_ARRAY_MAX * estimate.width
    )


def lookup_candidate(estimate: SourceEstimate, *, join_keys: int, on_conjuncts: int, key_column: str | None) -> bool:
    """Whether the MERGE may run by index lookups: a single equality in ON between a bare target column and a source
    expression, and a source of between ``LOOKUP_MIN_KEYS`` and ``KEY_ARRAY_MAX`` keys (a task holds its share)."""
    return (
        LOOKUP_MIN_KEYS * estimate.width < estimate.key_bytes <= KEY_ARRAY_MAX * estimate.width
        and join_keys == 1
        and on_conjuncts == 1
        and key_column is not None
    )


def driver_lookup(estimate: SourceEstimate) -> bool:
    """Whether a MERGE by index lookups runs on the driver tier: a source of at most ``DRIVER_LOOKUP_MAX_KEYS``."""
    return estimate.keys <= DRIVER_LOOKUP_MAX_KEYS
