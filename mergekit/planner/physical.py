"""The physical strategy of a DML statement: which of the engine's paths runs it (no Spark).

One decision, made before the statement begins (``mergekit.execution.dml.plan.plan_dml``): ``EXPLAIN`` prints this
strategy, the statement runs it, and ``Result.metrics["strategy"]`` names it.

- :class:`InsertFromSource`: INSERT (and CREATE TABLE AS): the source's rows all take the INSERT case; no target read.
- :class:`TargetScan`: UPDATE and DELETE: the target is scanned (pruned by the WHERE's simple predicates) and every
  row that passes the WHERE takes the case.
- :class:`SparkJoin`: MERGE as Trino plans it: the target scan RIGHT (or FULL) joined to the source in Spark, with
  the reductions :func:`mergekit.planner.cost.join_reductions` chose.
- :class:`IndexLookup`: MERGE by index lookups: each task looks up the target rows of its share of the source's keys
  in the connector's index, joins and evaluates the WHEN clauses in Arrow (``mergekit.execution.dml.lookup``); for a
  small source (``cost.driver_lookup``) on the driver tier: one share, in the engine's process.
"""

from __future__ import annotations

import attrs

from .cost import JoinReductions, SourceEstimate

__all__ = ["MergeStrategy", "InsertFromSource", "TargetScan", "SparkJoin", "IndexLookup"]


class MergeStrategy:
    """Base of the strategies; ``name`` is what ``Result.metrics["strategy"]`` and EXPLAIN show."""

    name: str = ""
    tier: str = "spark"  # where it runs: "spark", or "driver" (the engine's process, no Spark job)

    def explain(self) -> list[str]:
        """EXPLAIN's lines for the strategy: its name, then what chose it."""
        return [f"Strategy: {self.name}"]


@attrs.frozen(kw_only=True)
class InsertFromSource(MergeStrategy):
    name = "insert_from_source"


@attrs.frozen(kw_only=True)
class TargetScan(MergeStrategy):
    name = "target_scan"


@attrs.frozen(kw_only=True)
class SparkJoin(MergeStrategy):
    join: str  # "RIGHT" | "FULL"
    reductions: JoinReductions = JoinReductions()
    estimate: SourceEstimate | None = None  # None: no equality keys in ON (nothing to estimate)
    lookup_declined: str | None = None  # why an index lookup was considered and not taken

    name = "spark_join"

    def explain(self) -> list[str]:
        r = self.reductions
        lines = [f"Strategy: {self.name} ({self.join} JOIN in Spark)"]
        if self.estimate is not None:
            lines.append(f"  Estimate: {self.estimate.describe()}")
        lines.append(f"  Semi join of the target on the source's keys: {'yes' if r.reduce_target else 'no'}")
        if r.collect_key_values == "distinct":
            lines.append("  Dynamic pruning: the source's distinct key values go to the connector's scan")
        elif r.collect_key_values == "arrow":
            lines.append(
                f"  Dynamic pruning: the source's keys go to the connector as value sets on {sorted(r.value_set_columns)}"
            )
        if self.lookup_declined:
            lines.append(f"  Index lookup not taken: {self.lookup_declined}")
        return lines


@attrs.frozen(kw_only=True)
class IndexLookup(MergeStrategy):
    key_column: str
    join_type: str  # the Arrow type keys are compared in
    estimate: SourceEstimate
    fallback: SparkJoin  # what runs if the connector's index is gone when the statement begins
    tier: str = "spark"  # "driver": a small source, looked up and written in the engine's process
    scanned: bool = False  # the driver tier reads the whole table (a connector without an index on the key)

    name = "index_lookup"

    def explain(self) -> list[str]:
        tier = (
            "driver (the source's rows collected, then looked up, evaluated and written in the engine's process)"
            if self.tier == "driver"
            else "spark (the source shuffled to tasks by key; each looks up, evaluates and writes its share)"
        )
        index = (
            f"the table read whole through its splits, its rows matched on {self.key_column}"
            if self.scanned
            else f"the connector's index on {self.key_column}"
        )
        return [
            f"Strategy: {self.name} ({index}; join and WHEN clauses in Arrow)",
            f"  Estimate: {self.estimate.describe()}",
            f"  Key compared as {self.join_type}",
            f"  Tier: {tier}",
        ]
