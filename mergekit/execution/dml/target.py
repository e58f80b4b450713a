"""The target of a DML statement: the table it changes (its row id, paradigm, layouts, constraints), and the scan
that reads it (step 1 of the MERGE plan), pruned by what the statement's predicates and the source's keys allow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.lazy_pyspark import F, T
from mergekit.execution.scan import scan_table
from mergekit.execution.types import spark_type
from mergekit.planner import (
    MergePlan,
    TargetTable,
    cost,
)
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    ConnectorTableHandle,
    Constraint,
    RowChangeParadigm,
)

from .contract import check_row_level_methods, overrides, refuse_insert, refuse_without_spi, row_level_supported
from .merge_rows import q

__all__ = [
    "refuse_stream_change",
    "resolve_target",
    "scan_target",
    "scan_columns",
    "with_values",
    "spi_constraint",
    "target_constraint",
]


def refuse_stream_change(table: ResolvedTable) -> None:
    """STREAM_NOT_ALLOWED for a statement that would change or remove rows of a stream (seed 001: rows only
    arrive)."""
    if table.metadata.stream is not None:
        raise MergekitError(ErrorCode.STREAM_NOT_ALLOWED, f"Stream '{table.name.table.upper()}' is append-only")


def resolve_target(
    ctx: StatementContext, name: msql.QualifiedName, *, insert_only: bool, row_level: str = ""
) -> tuple[ResolvedTable, TargetTable]:
    """The target table; ``row_level``: "DELETE" / "UPDATE" when the statement may use the row-level SPI."""
    table = ctx.resolve(name)
    if not insert_only:
        refuse_stream_change(table)
    meta = table.connector.get_metadata()
    session = ctx.session(table.catalog)

    def offers() -> dict[str, bool]:  # which row-level statements the connector offers (asked only when needed)
        return {k: row_level_supported(meta, session, table.handle, k) for k in ("DELETE", "UPDATE")}

    if insert_only and not overrides(meta, "begin_merge"):
        refuse_insert(offers())  # a row-level connector without begin_merge: what INSERT needs
    try:
        row_id = meta.get_merge_row_id_column_handle(session=session, table_handle=table.handle)
        paradigm = meta.get_row_change_paradigm(session=session, table_handle=table.handle)
    except MergekitError as exc:
        # An INSERT changes no existing row: an append-only connector needs neither a row id nor a paradigm.
        # A DELETE / UPDATE may run through the row-level SPI (mergekit.execution.dml.row_level); MERGE may not.
        if exc.code is not ErrorCode.NOT_SUPPORTED:
            raise
        if not insert_only:
            offered = offers()
            if not (row_level and offered[row_level]):
                if offered["DELETE"]:  # a row-level connector: what the statement needs
                    raise refuse_without_spi(row_level or "MERGE", offered) from exc
                # (else the connector's own reason: "Table log has no primary key")
                raise
            check_row_level_methods(meta, row_level)  # begin_delete without finish_delete: refused before it begins
        row_id = ColumnHandle(name="$row_id", type=pa.int64())
        paradigm = RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW
    target = TargetTable(
        name=table.full_name,
        columns=table.metadata.visible_columns,
        row_id=row_id,
        paradigm=paradigm,
        insert_layout=meta.get_insert_layout(session=session, table_handle=table.handle),
        update_layout=meta.get_update_layout(session=session, table_handle=table.handle),
        check_constraints=tuple(
            (c.name, msql.parse_expression(c.expression)) for c in table.metadata.check_constraints
        ),
        primary_key=tuple(table.metadata.primary_key),
    )
    return table, target


def scan_target(
    ctx: StatementContext,
    table: ResolvedTable,
    columns: list[ColumnHandle],
    handle: ConnectorTableHandle | None,
    constraint: Constraint | None = None,
    values: Mapping[str, frozenset[Any] | pa.Array] | None = None,
    added: Sequence[ColumnMetadata] = (),
) -> str:
    """The target scan of ``columns`` (see :func:`scan_columns`). With ``handle`` None, an empty stand-in
    with the right schema (enough for analysis, and nothing is read). ``values``: columns whose values
    are known to lie in a set (dynamic pruning), filtered right at the scan so Spark can push them down.
    ``added``: columns a MERGE WITH SCHEMA EVOLUTION adds, NULL in every target row."""
    if handle is None:
        schema = T.StructType([T.StructField(c.name, spark_type(c.type), True) for c in columns])
        return ctx.new_view(ctx.spark.createDataFrame([], schema), "target_probe")
    stats: dict[str, Any] = {"table": table.full_name, "target": True}
    df = scan_table(
        ctx.spark,
        table.connector,
        ctx.session(table.catalog),
        handle,
        columns,
        constraint,
        stats=stats,
        guard=ctx.guard_scans,
    )
    ctx.scans.append(stats)
    for c in added:
        df = df.withColumn(c.name, F.lit(None).cast(spark_type(c.type)))
    for column, vals in (values or {}).items():
        if isinstance(vals, frozenset) and len(vals) <= cost.KEY_VALUES_FILTER_MAX:
            # more: the semi join on the source's keys filters the rows
            df = df.where(F.col(q(column)).isin(sorted(vals, key=repr)))
    return ctx.new_view(df, "target")


def scan_columns(target: TargetTable, handles: Mapping[str, ColumnHandle]) -> list[ColumnHandle]:
    """What a DML target scan reads: the visible columns (the connector's handles) and the row id column."""
    columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in target.columns]
    if target.row_id.name not in {c.name for c in columns}:
        columns.append(target.row_id)
    return columns


def with_values(constraint: Constraint | None, values: Mapping[str, frozenset[Any] | pa.Array]) -> Constraint | None:
    if not values:
        return constraint
    base = constraint or Constraint()
    equalities = dict(base.equalities)
    value_sets = dict(base.value_sets)
    for column, vals in values.items():
        if not isinstance(vals, frozenset):
            value_sets[column] = vals
        else:
            equalities[column] = frozenset(equalities[column]) & vals if column in equalities else vals
    return Constraint(equalities=equalities, ranges=base.ranges, value_sets=value_sets)


def spi_constraint(found: Mapping[str, tuple[Any, ...]]) -> Constraint:
    """The SQL layer's simple predicates as the SPI's pruning constraint (IS NULL is not expressible)."""
    equalities = {c: v[1] for c, v in found.items() if v[0] == "values"}
    ranges = {c: (v[1], v[2]) for c, v in found.items() if v[0] == "range"}
    return Constraint(equalities=equalities, ranges=ranges)


def target_constraint(st: msql.Statement, plan: MergePlan) -> Constraint | None:
    """Predicates every changed target row satisfies: UPDATE/DELETE WHERE, or MERGE ON conjuncts on the
    target (not with WHEN NOT MATCHED BY SOURCE, which changes target rows the ON does not match)."""
    if isinstance(st, msql.Update | msql.Delete) and st.where is not None:
        return spi_constraint(msql.predicate_constraints(st.where, {None, plan.target_alias}))
    if isinstance(st, msql.Merge) and not any(c.kind is msql.MergeCaseKind.NOT_MATCHED_BY_SOURCE for c in st.cases):
        return spi_constraint(msql.predicate_constraints(st.on, {plan.target_alias}))
    return None
