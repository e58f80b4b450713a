"""Running one DML statement (MERGE, UPDATE, DELETE, INSERT) as seed 002's MERGE plan, top to bottom.

UPDATE, DELETE and INSERT are planned as MERGEs (``mergekit.planner``), so one path runs them all. :func:`run_dml`
reads as Trino's ``QueryPlanner.plan(Merge)`` and ``createMergePipeline`` do, one call a step, in order
(docs/architecture.md names each step's function):

0. :func:`~.plan.plan_dml`: the logical plan, every expression analysed, the strategy (what EXPLAIN prints)
1. :func:`scan_target_of`: the target table scan, pruned by the statement's predicates and the source's keys
2. :func:`join_source`: a unique id for every target row and the RIGHT (FULL) join with the source
3. (in the same query) the searched CASE over the WHEN clauses: each joined row's merge row
4. :class:`~.pipeline.DuplicateCheck`: mark distinct (target row, case) and raise on a second match
5. :func:`~.pipeline.row_change_processor`: the connector's paradigm turns merge rows into changes
6. :func:`~.pipeline.redistribution`: the partitioning of the changes by the connector's layout
7. :class:`~.pipeline.MergeWriter`: the merge sinks on executors, inside :func:`merge_transaction`
   (``begin_merge`` before, ``finish_merge`` after, ``abort_merge`` on any failure)
8. :func:`row_count`: the rows changed, with metrics per operation and per WHEN clause

Steps 4-7 run in :func:`~.pipeline.run_merge_pipeline`. MERGE by index lookups (:mod:`.lookup`) runs steps 1-3 in
Arrow per share of the source's keys instead of a scan and a join, then the same 4-7.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from mergekit import sql as msql
from mergekit.execution.context import StatementContext
from mergekit.planner import JoinKind
from mergekit.planner.physical import IndexLookup, MergeStrategy
from mergekit.result import Result
from mergekit.spi import (
    ColumnHandle,
    ConnectorMergeTableHandle,
    ConnectorResolvedIndex,
)

from .append import PlannedValues, run_values_append
from .estimates import source_key_values
from .lengths import without_char_columns
from .lookup import run_lookup_merge
from .pipeline import DmlStats, run_merge_pipeline
from .plan import PlannedDml, plan_dml, statement_kind
from .row_level import run_row_level
from .scan_index import ScanIndexProvider, TargetTooLarge, for_snapshot
from .strategy import LookupPrepared
from .target import scan_target, target_constraint, with_values
from .transaction import Replan, aborted_on_failure

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "aborted_on_failure",
    "run_dml",
    "write_merge_rows",
    "merge_transaction",
    "join_source",
    "merge_by_index_lookups",
    "row_count",
]


def run_dml(ctx: StatementContext, st: msql.Statement) -> Result:
    """Run a DML statement: plan it, then seed 002's steps in one transaction of the connector's."""
    name_the_statement(ctx, st)
    planned = plan_dml(ctx, st)  # 0. plan, analyse, choose the strategy: nothing has begun
    if isinstance(planned, PlannedValues):  # the driver tier: VALUES rows of constants, written without Spark
        return run_values_append(ctx, planned)
    if not isinstance(planned, PlannedDml):  # seed 003's row-level SPI, or a DELETE the connector runs itself
        return run_row_level(ctx, planned)
    try:
        with merge_transaction(ctx, planned) as merge:  # begin_merge; abort_merge on any failure
            strategy, fragments, stats = write_merge_rows(ctx, planned, merge.handle)  # 1-7
            merge.commit(fragments)  # finish_merge
    except Replan:  # a driver-tier plan that cannot run as planned: nothing began; plan it for Spark
        ctx.properties["driver_tier"] = "off"
        return run_dml(ctx, st)
    return row_count(ctx, planned, strategy, stats)  # 8


def write_merge_rows(
    ctx: StatementContext, planned: PlannedDml, merge_handle: ConnectorMergeTableHandle
) -> tuple[MergeStrategy, list[Any], DmlStats]:
    """Steps 1-7 by the planned strategy: the strategy that ran, the sinks' fragments and the counts."""
    strategy = planned.strategy
    if isinstance(strategy, IndexLookup):
        assert planned.lookup is not None
        done = merge_by_index_lookups(ctx, planned, planned.lookup, merge_handle)  # 1-3 in Arrow, then 4-7
        if done is not None:
            return strategy, *done
        if planned.builder is None:  # planned for the driver tier without Spark: plan it again, for Spark
            raise Replan()
        strategy = strategy.fallback  # the index went away between planning and begin_merge
    target = scan_target_of(ctx, planned, merge_handle)  # 1. the target scan
    rows = join_source(ctx, planned, target)  # 2-3. unique id, RIGHT (FULL) join, CASE
    fragments, stats = run_merge_pipeline(  # 4-7. mark distinct and raise, processor, partitioning, sinks
        ctx.spark,
        planned.plan,
        rows,
        provider=planned.table.connector.get_page_sink_provider(),
        session=ctx.session(planned.table.catalog),
        merge_handle=merge_handle,
        colocated=planned.builder.colocated,
        conditions_may_fail=ctx.guard_scans,
    )
    return strategy, fragments, stats


def name_the_statement(ctx: StatementContext, st: msql.Statement) -> None:
    """Connectors may word errors by statement (MonetDB's ``INSERT INTO: ...``): the session names it."""
    catalog, _ = ctx.catalogs.split_name(st.target)  # type: ignore[attr-defined]
    current = ctx.session(catalog)
    ctx.sessions[catalog] = attrs.evolve(current, properties={**current.properties, "statement": statement_kind(st)})


@attrs.define
class MergeTransaction:
    """The connector's side of the statement: the handle ``begin_merge`` returned, committed once."""

    ctx: StatementContext
    planned: PlannedDml
    handle: ConnectorMergeTableHandle

    def commit(self, fragments: list[Any]) -> None:
        table = self.planned.table
        table.connector.get_metadata().finish_merge(
            session=self.ctx.session(table.catalog), merge_handle=self.handle, fragments=fragments
        )


@contextmanager
def merge_transaction(ctx: StatementContext, planned: PlannedDml) -> Iterator[MergeTransaction]:
    """``begin_merge`` (``begin_merge_adding_columns`` for MERGE WITH SCHEMA EVOLUTION); on any failure inside,
    ``abort_merge``, and the failure as a coded error: nothing becomes visible."""
    plan, table = planned.plan, planned.table
    session = ctx.session(table.catalog)
    metadata = table.connector.get_metadata()

    def handles(columns: Mapping[int, tuple[str, ...]]) -> dict[int, list[ColumnHandle]]:
        return {
            n: [planned.columns_by_name.get(c) or ColumnHandle(name=c, type=plan.target.column(c).type) for c in cols]  # type: ignore[union-attr]
            for n, cols in columns.items()
        }

    order = {name: i for i, name in enumerate(plan.target.column_names)}  # table column order, as begin_update's
    update_case_columns = handles(
        {n: tuple(sorted(cols, key=order.__getitem__)) for n, cols in plan.update_case_columns.items()}
    )
    # only when some INSERT leaves a column to the storage: connectors that report no such column never see it
    defaults = {"insert_case_defaults": handles(plan.insert_case_defaults)} if plan.insert_case_defaults else {}
    if planned.added_columns:  # MERGE WITH SCHEMA EVOLUTION: the columns are committed with the rows
        handle = metadata.begin_merge_adding_columns(
            session=session,
            table_handle=table.handle,
            update_case_columns=update_case_columns,
            added_columns=planned.added_columns,
            **defaults,
        )
    else:
        handle = metadata.begin_merge(
            session=session, table_handle=table.handle, update_case_columns=update_case_columns, **defaults
        )
    with aborted_on_failure(metadata, session, handle):
        yield MergeTransaction(ctx, planned, handle)


def scan_target_of(ctx: StatementContext, planned: PlannedDml, merge_handle: ConnectorMergeTableHandle) -> str:
    """Step 1: the target scan of the snapshot ``begin_merge`` pinned, pruned by the statement's predicates and by
    the source's key values (collected now when the strategy pays for it); a Spark view name."""
    plan, builder = planned.plan, planned.builder
    if plan.join is JoinKind.SOURCE:  # an INSERT reads no target rows
        return ""
    values = source_key_values(ctx.spark, builder)
    view = scan_target(
        ctx,
        planned.table,
        planned.scan_columns,
        merge_handle.table_handle,
        without_char_columns(with_values(target_constraint(planned.statement, plan), values), plan.target.columns),
        values,
        added=planned.added_columns,
    )
    # The connector read only rows with the source's key values: the semi join would keep them all.
    scan = ctx.scans[-1]
    enforced = set(scan.get("enforced", ()))
    reduced = bool(builder.key_columns) and all(c is not None and c in enforced for c in builder.key_columns)
    planned.builder = attrs.evolve(builder, reduce_target=builder.reduce_target and not reduced)
    scan["semi_join"] = planned.builder.reduce_target
    return view


def join_source(ctx: StatementContext, planned: PlannedDml, target_view: str) -> DataFrame:
    """Steps 2-3: a unique id for every target row, the RIGHT (FULL) join with the source, and the searched CASE
    over the WHEN clauses, as one Spark query (:class:`~.merge_rows.MergeQueryBuilder`): the merge rows."""
    builder = planned.builder if not target_view else attrs.evolve(planned.builder, target_view=target_view)
    return ctx.spark.sql(builder.merge_rows_sql(planned.value_types))


def merge_by_index_lookups(
    ctx: StatementContext, planned: PlannedDml, prepared: LookupPrepared, merge_handle: ConnectorMergeTableHandle
) -> tuple[list[Any], DmlStats] | None:
    """Steps 1-7 by index lookups (:mod:`.lookup`): each task looks up the target rows of its share of the source's
    keys, joins and evaluates the WHEN clauses in Arrow, then checks, processes and writes as the Spark plan does.
    None when the index is gone in the snapshot ``begin_merge`` pinned (the Spark plan runs instead)."""
    table = planned.table
    session = ctx.session(table.catalog)
    resolved: ConnectorResolvedIndex | None = prepared.resolved
    scanned = prepared.index_provider is not None  # the driver tier reads the whole table (.scan_index)
    if scanned:  # the snapshot begin_merge pinned, pruned by the statement's predicates as the target scan is
        constraint = target_constraint(planned.statement, planned.plan)
        resolved = for_snapshot(
            prepared.resolved,
            merge_handle.table_handle,
            constraint and without_char_columns(constraint, planned.plan.target.columns),
        )
    elif merge_handle.table_handle != prepared.handle:  # begin_merge pinned another snapshot: resolve for it
        resolved = table.connector.get_metadata().resolve_index(
            session=session,
            table_handle=merge_handle.table_handle,
            index_columns=[prepared.key_handle],
            output_columns=planned.scan_columns,
        )
    if resolved is None:
        return None
    stats: dict[str, Any] = {"table": table.full_name, "target": True, "lookup": not scanned, "scan": scanned}
    ctx.scans.append(stats)
    try:
        done = run_lookup_merge(
            ctx.spark if planned.builder is not None else None,  # (the driver tier's own plan: no Spark at all)
            planned.plan,
            prepared.program,
            prepared.source,
            join_type=prepared.join_type,
            index_provider=prepared.index_provider or table.connector.get_index_provider(),
            index_handle=resolved.index_handle,
            partition_points=resolved.partition_points,
            key_range=resolved.key_range,
            key_column=prepared.key_handle,
            output_columns=planned.scan_columns,
            provider=table.connector.get_page_sink_provider(),
            session=session,
            merge_handle=merge_handle,
            stats=stats,
            driver=planned.strategy.tier == "driver",
            whole=prepared.whole,
        )
    except TargetTooLarge:  # more rows than the driver reads: aborted, and planned again for Spark
        ctx.scans.remove(stats)
        return None
    if isinstance(prepared.index_provider, ScanIndexProvider):  # the splits read, counted as a target scan's
        stats.update(splits=sum(prepared.index_provider.splits), files=0)
    return done


def row_count(ctx: StatementContext, planned: PlannedDml, strategy: MergeStrategy, stats: DmlStats) -> Result:
    """Step 8: inserted + updated + deleted target rows, metrics per operation and WHEN clause, and what ran."""
    metrics = stats.metrics()
    metrics["writer_pids"] = list(stats.writer_pids)
    metrics["scans"] = list(ctx.scans)
    metrics["strategy"] = strategy.name
    metrics["tier"] = strategy.tier
    if planned.added_columns:
        metrics["added_columns"] = [c.name for c in planned.added_columns]
    return Result(statement=planned.plan.statement, row_count=stats.row_count, metrics=metrics)
