"""One DML statement (MERGE, UPDATE, DELETE, INSERT), top to bottom, as seed 002 runs it (docs/architecture.md).

:func:`plan_dml` decides everything that can be decided before anything begins, against an empty stand-in for the
target: the logical plan (``mergekit.planner``), analysis of every expression by Spark (types, coercions), and the
physical strategy (``mergekit.planner.physical``) from Spark's estimates. ``EXPLAIN`` prints that plan;
:func:`run_dml` runs it:

1. target scan (the connector's splits or native scan, pruned by the source's keys where the strategy says so)
2. RIGHT (FULL) join with the source, or index lookups per share of the source's keys
3. CASE over the WHEN clauses: the merge row with its operation and case number
4. duplicate-match check, 5. row change processor, 6. redistribution by the connector's layout
7. merge sinks on executors (``begin_merge`` before, ``finish_merge`` after; ``abort_merge`` on any failure)
8. the row count and metrics, per WHEN clause, with the strategy that ran
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.arrow.cases import compile_lookup
from mergekit.execution.context import StatementContext
from mergekit.execution.ddl.evolution import merge_added_columns
from mergekit.execution.failures import translate_error
from mergekit.execution.scan import scan_table
from mergekit.execution.types import spark_sql_type, spark_type, trino_name
from mergekit.metadata import ResolvedTable
from mergekit.planner import (
    JoinKind,
    MergePlan,
    TargetTable,
    apply_defaults,
    check_violation,
    cost,
    insert_storage_defaults,
    insert_with_defaults,
    plan_delete,
    plan_insert,
    plan_merge,
    plan_update,
    source_dedup,
)
from mergekit.planner.physical import IndexLookup, InsertFromSource, MergeStrategy, SparkJoin, TargetScan
from mergekit.result import Result
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    ConnectorMergeTableHandle,
    ConnectorResolvedIndex,
    ConnectorTableHandle,
    Constraint,
    RowChangeParadigm,
    sql_type_name,
)

from .estimates import estimate_source_keys, source_key_values
from .lengths import without_char_columns
from .lookup import KEY, arrow_join_type, binary_collation, run_lookup_merge
from .merge_rows import SRC, MergeQueryBuilder, check_types, q
from .pipeline import DmlStats, run_merge_pipeline
from .row_level import (
    MERGE_NEEDS_MERGE_SPI,
    PlannedPushdown,
    PlannedRowLevel,
    merge_spi_supported,
    plan_pushdown,
    plan_row_level,
    row_level_supported,
    run_row_level,
)

__all__ = ["PlannedDml", "plan_dml", "explain_dml", "resolve_target", "run_dml"]


@attrs.define(kw_only=True)
class _LookupPrepared:
    """What an index lookup needs that was prepared while planning (Spark objects: not part of the plan)."""

    source: DataFrame
    program: Any
    join_type: pa.DataType
    key_handle: ColumnHandle
    handle: ConnectorTableHandle  # the table handle the index was resolved for
    resolved: ConnectorResolvedIndex


@attrs.define(kw_only=True)
class PlannedDml:
    """A DML statement planned and analysed, not begun: what EXPLAIN prints and :func:`run_dml` runs."""

    statement: msql.Statement
    plan: MergePlan
    table: ResolvedTable
    builder: MergeQueryBuilder
    strategy: MergeStrategy
    scan_columns: list[ColumnHandle]
    columns_by_name: Mapping[str, ColumnHandle]
    value_types: Any
    lookup: _LookupPrepared | None = None
    # MERGE WITH SCHEMA EVOLUTION: the source's columns the statement adds to the target (the plan's target has
    # them after its own; the target scan reads NULL in them; begin_merge_adding_columns commits them)
    added_columns: tuple[ColumnMetadata, ...] = ()

    def explain(self) -> str:
        lines = [
            self.plan.explain(),
            *self.strategy.explain(),
            "SPI: merge (begin_merge / ConnectorMergeSink / finish_merge)",
        ]
        if self.added_columns:
            added = ", ".join(f"{c.name} {c.type_name or sql_type_name(c.type)}" for c in self.added_columns)
            lines.append(f"Schema evolution: adds {added} (committed with the rows)")
        return "\n".join(lines)


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
    try:
        row_id = meta.get_merge_row_id_column_handle(session=session, table_handle=table.handle)
        paradigm = meta.get_row_change_paradigm(session=session, table_handle=table.handle)
    except MergekitError as exc:
        # An INSERT changes no existing row: an append-only connector needs neither a row id nor a paradigm.
        # A DELETE / UPDATE may run through the row-level SPI (mergekit.execution.dml.row_level); MERGE may not.
        if exc.code is not ErrorCode.NOT_SUPPORTED:
            raise
        if not insert_only and not (row_level and row_level_supported(meta, session, table.handle, row_level)):
            if row_level_supported(meta, session, table.handle, "DELETE"):
                raise MergekitError(ErrorCode.NOT_SUPPORTED, MERGE_NEEDS_MERGE_SPI) from exc
            raise
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


def _logical_plan(st: msql.Statement, target: TargetTable, source_columns: tuple[str, ...] | None) -> MergePlan:
    if isinstance(st, msql.Merge):
        return plan_merge(st, target, source_columns)
    if isinstance(st, msql.Update):
        return plan_update(st, target)
    if isinstance(st, msql.Delete):
        return plan_delete(st, target)
    assert isinstance(st, msql.Insert)
    return plan_insert(st, target)


def _insert_as_merge(ctx: StatementContext, st: msql.Insert) -> msql.Merge:
    """``INSERT OVERWRITE`` and ``INSERT ... ON CONFLICT`` are the MERGEs of :mod:`mergekit.sql.parse.upsert`, once the
    table's columns (an omitted column list) and primary key are known."""
    table, target = resolve_target(ctx, st.target, insert_only=False)
    st = insert_with_defaults(st, target)  # DEFAULT VALUES, DEFAULT in VALUES rows
    columns = st.columns if st.columns is not None else target.column_names
    if st.overwrite:
        return msql.overwrite_as_merge(st, columns)
    return msql.upsert_as_merge(st, columns, table.metadata.primary_key)


def _check_unambiguous(ctx: StatementContext, st: msql.Delete, target: TargetTable) -> None:
    """``DELETE ... USING``: an unqualified column of the condition must not name both a target column and a USING
    column (PostgreSQL's rule; the EXISTS it runs as would silently read the USING one)."""
    assert st.using is not None
    using = {f.name.lower() for f in ctx.spark.sql(ctx.render(st.using)).schema.fields}
    mine = {c.lower() for c in target.column_names}
    for name in sorted(st.unqualified):
        if name.lower() in using and name.lower() in mine:
            raise MergekitError(ErrorCode.AMBIGUOUS_NAME, f'column reference "{name}" is ambiguous')


def _source(ctx: StatementContext, relation: msql.Relation) -> tuple[str, list[T.StructField]]:
    """A MERGE source as a Spark FROM item, and its columns (Spark analyses it; nothing runs)."""
    ctx.bind(relation.table_refs())
    source_from = relation.to_spark_from_item(tables=ctx.views, schema=ctx.schema)
    probe = f"SELECT * FROM {source_from} AS `$probe`"
    if relation.column_aliases:
        probe += "(" + ", ".join(q(a) for a in relation.column_aliases) + ")"
    return source_from, list(ctx.spark.sql(probe).schema.fields)


def _zones(
    source: msql.Query | msql.Relation, fields: Sequence[T.StructField], ctx: StatementContext
) -> tuple[str | None, ...]:
    """The zone of each source column's timestamps (a user's DataFrame's session zone; None: UTC), as the SQL layer
    types the source; a source it cannot type has none."""
    zones = source.output_zones(tables=ctx.views, schema=ctx.schema)
    if zones is None or len(zones) != len(fields):
        return (None,) * len(fields)
    return zones


def _builder(
    ctx: StatementContext,
    plan: MergePlan,
    target_view: str,
    source: tuple[str, list[T.StructField]] | None = None,
) -> MergeQueryBuilder:
    """The Spark SQL of the merge rows (join, CASE) over ``target_view``; the source is analysed here."""
    column_types = {c.name: spark_type(c.type) for c in plan.target.columns}
    row_id_type = spark_type(plan.target.row_id.type)
    schema = dict(ctx.schema)
    schema[plan.target_alias] = {c.name: c.type_name or sql_type_name(c.type) for c in plan.target.columns}
    source_from = None
    source_columns: tuple[str, ...] = ()
    source_zones: tuple[str | None, ...] = ()
    if plan.join is JoinKind.SOURCE:
        assert isinstance(plan.source, msql.Query)
        source_from = ctx.render(plan.source)
        fields = ctx.spark.sql(source_from).schema.fields
        expected = len(plan.cases[0].set_columns)
        if len(fields) != expected:
            raise MergekitError(
                ErrorCode.TYPE_MISMATCH,
                f"Insert query has mismatched column types: the table has {expected} columns, the query {len(fields)}",
            )
        source_columns = tuple(f"c{i}" for i in range(len(fields)))
        source_zones = _zones(plan.source, fields, ctx)
        schema[SRC] = {
            name: msql.zoned_type_text(trino_name(f.dataType), zone)
            for name, f, zone in zip(source_columns, fields, source_zones, strict=True)
        }
    elif plan.source is not None:
        relation = plan.source
        assert isinstance(relation, msql.Relation)
        source_from, fields = source if source is not None else _source(ctx, relation)
        zones = _zones(relation, fields, ctx)
        schema[plan.source_alias or "$src"] = {
            f.name: msql.zoned_type_text(trino_name(f.dataType), zone) for f, zone in zip(fields, zones, strict=True)
        }
        for f in fields:  # a joined source: a.x is field x of the relation's struct column a
            if f.name in relation.joined and isinstance(f.dataType, T.StructType):
                schema[f.name] = {sub.name: trino_name(sub.dataType) for sub in f.dataType.fields}
    ctx.schema.update(schema)

    def render(expr: msql.Expression) -> str:
        ctx.bind(expr.table_refs())
        return expr.to_spark(tables=ctx.views, schema=ctx.schema)

    computed: list[tuple[str, str]] = []
    layout = plan.target.insert_layout
    for c in layout.computed_columns if layout is not None else ():
        # e.g. a USING partition expression: evaluated by Spark over each merge row's new values
        columns_schema = {col.name: col.type_name or sql_type_name(col.type) for col in plan.target.columns}
        expr_sql = msql.parse_expression(c.expression).to_spark(tables={}, schema={"$rows": columns_schema})
        computed.append((c.name, f"CAST(({expr_sql}) AS {spark_sql_type(spark_type(c.type))})"))
    checks: list[tuple[str, str]] = []
    for name, expr in plan.check_constraints:
        # over each INSERT and UPDATE merge row's new values, as the computed columns (see merge_rows_sql)
        columns_schema = {col.name: col.type_name or sql_type_name(col.type) for col in plan.target.columns}
        checks.append((check_violation(name, expr.sql), expr.to_spark(tables={}, schema={"$rows": columns_schema})))
    join_keys: tuple[tuple[str, str], ...] = ()
    key_columns: tuple[str | None, ...] = ()
    if plan.join in (JoinKind.RIGHT, JoinKind.FULL) and plan.on is not None and plan.source_alias:
        pairs = msql.equi_join_keys(plan.on, plan.target_alias, plan.source_alias)
        # CHAR(n) keys compare without trailing spaces (the ON clause's rendering): so do the semi join and the
        # estimates; the source's values are not handed to the connector, whose stored values are padded
        chars = [any(_is_char(e, ctx.schema) for e in pair) for pair in pairs]
        join_keys = tuple(
            (f"RTRIM({render(a)})", f"RTRIM({render(b)})") if char else (render(a), render(b))
            for (a, b), char in zip(pairs, chars, strict=True)
        )
        key_columns = tuple(None if char else _bare_column(a) for (a, _), char in zip(pairs, chars, strict=True))
    return MergeQueryBuilder(
        computed=tuple(computed),
        checks=tuple(checks),
        plan=plan,
        render=render,
        column_types=column_types,
        row_id_type=row_id_type,
        target_view=target_view,
        source_from=source_from,
        source_columns=source_columns,
        source_zones=source_zones,
        join_keys=join_keys,
        key_columns=key_columns,
    )


def _strategy(
    ctx: StatementContext, planned: PlannedDml
) -> tuple[MergeStrategy, MergeQueryBuilder, _LookupPrepared | None]:
    """The one physical decision (``mergekit.planner.cost`` over Spark's estimates), before anything begins."""
    plan, builder, table = planned.plan, planned.builder, planned.table
    if plan.join is JoinKind.SOURCE:
        return InsertFromSource(), builder, None
    if plan.join is JoinKind.SCAN:
        return TargetScan(), builder, None
    join = "FULL" if plan.join is JoinKind.FULL else "RIGHT"
    if not (builder.join_keys and plan.join is JoinKind.RIGHT) or plan.dedup is not None:
        return SparkJoin(join=join), builder, None
    estimate = estimate_source_keys(ctx.spark.sql(builder.join_keys_sql()))
    value_set_columns: frozenset[str] = frozenset()
    if cost.wants_value_sets(estimate):
        value_set_columns = table.connector.get_metadata().get_value_set_columns(
            session=ctx.session(table.catalog), table_handle=table.handle
        )
    reductions = cost.join_reductions(estimate, key_columns=builder.key_columns, value_set_columns=value_set_columns)
    builder = attrs.evolve(
        builder,
        reduce_target=reductions.reduce_target,
        collect_key_values=reductions.collect_key_values,
        value_set_columns=reductions.value_set_columns,
    )
    spark_join = SparkJoin(join=join, reductions=reductions, estimate=estimate)
    if not cost.lookup_candidate(
        estimate,
        join_keys=len(builder.join_keys),
        on_conjuncts=plan.on.conjunct_count if plan.on is not None else 0,
        key_column=builder.key_columns[0] if builder.key_columns else None,
    ):
        return spark_join, builder, None
    if planned.added_columns:  # the index reads the table's columns, not the ones the statement adds
        return attrs.evolve(spark_join, lookup_declined="the MERGE adds columns (schema evolution)"), builder, None
    prepared, declined = _prepare_lookup(ctx, planned, builder, table.handle)
    if prepared is None:
        return attrs.evolve(spark_join, lookup_declined=declined), builder, None
    strategy = IndexLookup(
        key_column=prepared.key_handle.name, join_type=str(prepared.join_type), estimate=estimate, fallback=spark_join
    )
    return strategy, builder, prepared


def _prepare_lookup(
    ctx: StatementContext, planned: PlannedDml, builder: MergeQueryBuilder, handle: ConnectorTableHandle
) -> tuple[_LookupPrepared | None, str]:
    """A MERGE by index lookups (:mod:`mergekit.execution.dml.lookup`) is possible when the connector has an index on
    the ON clause's target column, the key compares in Arrow as in Spark and every WHEN clause evaluates in Arrow;
    else (None, why not)."""
    plan, table, columns = planned.plan, planned.table, planned.scan_columns
    if plan.target.insert_layout is not None or plan.target.update_layout is not None:
        return None, "writers must receive rows routed by the connector's layout"
    if plan.check_constraints:
        return None, "the table has CHECK constraints (evaluated by the Spark plan)"
    key_name = builder.key_columns[0]
    key_handle = next((c for c in columns if c.name == key_name), None)
    if key_handle is None:
        return None, f"no column handle for {key_name}"
    probe = ctx.spark.sql(f"SELECT *, {builder.join_keys[0][1]} AS {q(KEY)} FROM {builder.source_sub()}")
    fields = [f for f in probe.schema.fields if f.name != "$spresent"]
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        return None, "the source has duplicate column names"
    source_types: dict[str, pa.DataType] = {}
    for f in fields[:-1]:
        if not binary_collation(f.dataType):
            continue  # compares by its collation in Spark: a case reading it runs the Spark plan
        try:
            source_types[f.name] = to_arrow_type(f.dataType)
        except Exception:  # a type Arrow lacks: such a column cannot be read by the cases
            continue
    join_type = arrow_join_type(fields[-1].dataType, key_handle.type)
    if join_type is None:
        return None, f"the key {key_name} does not compare in Arrow as in Spark"
    type_names = {c.name: c.type_name or sql_type_name(c.type) for c in plan.target.columns}
    program = compile_lookup(plan, source_types, columns, type_names)
    if program is None:
        return None, "a WHEN clause does not evaluate in Arrow"
    resolved = table.connector.get_metadata().resolve_index(
        session=ctx.session(table.catalog), table_handle=handle, index_columns=[key_handle], output_columns=columns
    )
    if resolved is None:
        return None, f"the connector has no index on {key_name}"
    spark_join = {pa.int64(): T.LongType(), pa.string(): T.StringType(), pa.date32(): T.DateType()}[join_type]
    source = probe.select(*[F.col(q(c)) for c in program.source_columns], F.col(q(KEY)).cast(spark_join).alias(KEY))
    prepared = _LookupPrepared(
        source=source, program=program, join_type=join_type, key_handle=key_handle, handle=handle, resolved=resolved
    )
    return prepared, ""


def plan_dml(ctx: StatementContext, st: msql.Statement) -> PlannedDml | PlannedRowLevel | PlannedPushdown:
    """Plan and analyse ``st`` against an empty stand-in for the target; choose its strategy. Nothing begins."""
    written_as_merge = True  # MERGE, UPDATE ... FROM; not INSERT OVERWRITE or ON CONFLICT planned as a MERGE
    if isinstance(st, msql.Insert) and (st.overwrite or st.on_conflict is not None):
        st = _insert_as_merge(ctx, st)
        written_as_merge = False
    kind = _statement_kind(st) if isinstance(st, msql.Delete | msql.Update) else ""
    table, target = resolve_target(ctx, st.target, insert_only=isinstance(st, msql.Insert), row_level=kind)  # type: ignore[attr-defined]
    if isinstance(st, msql.Delete) and st.using is not None:
        _check_unambiguous(ctx, st, target)
    source = _source(ctx, st.source) if isinstance(st, msql.Merge) else None
    added: tuple[ColumnMetadata, ...] = ()
    if isinstance(st, msql.Merge) and st.schema_evolution and source is not None:
        # MERGE WITH SCHEMA EVOLUTION: the target as it will be, with the source's new columns after its own
        added = merge_added_columns(target.columns, source[1], st)
        target = attrs.evolve(target, columns=(*target.columns, *added))
    # the source's columns expand UPDATE SET * / INSERT * and tell target columns from source columns
    defaulted: tuple[str, ...] = ()
    if isinstance(st, msql.Insert):
        defaulted = insert_storage_defaults(st, target)  # columns written DEFAULT that the database fills
        st = insert_with_defaults(st, target)  # DEFAULT VALUES, DEFAULT in VALUES rows
    plan = _logical_plan(st, target, tuple(f.name for f in source[1]) if source is not None else None)
    plan = apply_defaults(plan, defaulted)  # DEFAULT as a value; an INSERT's omitted columns take their defaults
    if isinstance(st, msql.Merge) and written_as_merge and plan.join in (JoinKind.RIGHT, JoinKind.FULL):
        plan = attrs.evolve(plan, dedup=source_dedup(ctx.properties))  # SET SESSION merge_duplicate_source
    session = ctx.session(table.catalog)
    columns_by_name = table.connector.get_metadata().get_column_handles(session=session, table_handle=table.handle)
    scan_columns = _scan_columns(plan.target, columns_by_name)
    probe_view = _target_view(ctx, table, scan_columns, None) if plan.join is not JoinKind.SOURCE else ""
    scan_columns = [c for c in scan_columns if c.name not in {a.name for a in added}]  # not in the table yet
    builder = _builder(ctx, plan, probe_view, source)
    probe_sql, keys = builder.probe_sql()
    value_types = check_types(plan, builder, ctx.spark.sql(probe_sql).schema, keys)
    if kind:  # delete pushdown (any connector overriding apply_delete), else the row-level SPI without merge SPI
        meta = table.connector.get_metadata()
        spi = "merge" if merge_spi_supported(meta, session, table.handle) else "row_level"
        pushdown = plan_pushdown(ctx, st, plan, table, spi)
        if pushdown is not None or spi == "row_level":
            return pushdown or plan_row_level(ctx, st, plan, table)
    planned = PlannedDml(
        statement=st,
        plan=plan,
        table=table,
        builder=builder,
        strategy=TargetScan(),
        scan_columns=scan_columns,
        columns_by_name=columns_by_name,
        value_types=value_types,
        added_columns=added,
    )
    planned.strategy, planned.builder, planned.lookup = _strategy(ctx, planned)
    return planned


def explain_dml(ctx: StatementContext, st: msql.Statement) -> str:
    """EXPLAIN of a DML statement: the logical plan and the strategy that will run, with the estimates that chose
    it."""
    return plan_dml(ctx, st).explain()


def run_dml(ctx: StatementContext, st: msql.Statement) -> Result:
    """Run a DML statement: plan, ``begin_merge``, the strategy, ``finish_merge`` (``abort_merge`` on failure)."""
    # Connectors may word errors by statement (MonetDB's "INSERT INTO: ..."): name it in the session.
    catalog, _ = ctx.catalogs.split_name(st.target)  # type: ignore[attr-defined]
    current = ctx.session(catalog)
    ctx.sessions[catalog] = attrs.evolve(current, properties={**current.properties, "statement": _statement_kind(st)})
    planned = plan_dml(ctx, st)
    if not isinstance(planned, PlannedDml):  # seed 003's row-level SPI, or a DELETE the connector runs itself
        return run_row_level(ctx, planned)
    plan, table = planned.plan, planned.table
    session = ctx.session(table.catalog)
    metadata = table.connector.get_metadata()

    def handles(columns: Mapping[int, tuple[str, ...]]) -> dict[int, list[ColumnHandle]]:
        return {
            n: [planned.columns_by_name.get(c) or ColumnHandle(name=c, type=plan.target.column(c).type) for c in cols]  # type: ignore[union-attr]
            for n, cols in columns.items()
        }

    update_case_columns = handles(plan.update_case_columns)
    # only when some INSERT leaves a column to the storage: connectors that report no such column never see it
    defaults = {"insert_case_defaults": handles(plan.insert_case_defaults)} if plan.insert_case_defaults else {}
    if planned.added_columns:  # MERGE WITH SCHEMA EVOLUTION: the columns are committed with the rows
        merge_handle = metadata.begin_merge_adding_columns(
            session=session,
            table_handle=table.handle,
            update_case_columns=update_case_columns,
            added_columns=planned.added_columns,
            **defaults,
        )
    else:
        merge_handle = metadata.begin_merge(
            session=session, table_handle=table.handle, update_case_columns=update_case_columns, **defaults
        )
    try:
        strategy, fragments, stats = _run_strategy(ctx, planned, merge_handle)
        metadata.finish_merge(session=session, merge_handle=merge_handle, fragments=fragments)
    except BaseException as exc:
        try:
            metadata.abort_merge(session=session, merge_handle=merge_handle)
        except Exception:  # report the original failure
            pass
        if isinstance(exc, MergekitError):
            raise
        if isinstance(exc, Exception):
            raise translate_error(exc) from exc
        raise
    metrics = stats.metrics()
    metrics["writer_pids"] = list(stats.writer_pids)
    metrics["scans"] = list(ctx.scans)
    metrics["strategy"] = strategy.name
    if planned.added_columns:
        metrics["added_columns"] = [c.name for c in planned.added_columns]
    return Result(statement=plan.statement, row_count=stats.row_count, metrics=metrics)


def _run_strategy(
    ctx: StatementContext, planned: PlannedDml, merge_handle: ConnectorMergeTableHandle
) -> tuple[MergeStrategy, list[Any], DmlStats]:
    """Steps 1-7 by the planned strategy; returns the strategy that ran, the sinks' fragments and the counts."""
    plan, table, builder, strategy = planned.plan, planned.table, planned.builder, planned.strategy
    session = ctx.session(table.catalog)
    if isinstance(strategy, IndexLookup):
        assert planned.lookup is not None
        looked_up = _run_lookup(ctx, planned, planned.lookup, merge_handle)
        if looked_up is not None:
            return strategy, *looked_up
        strategy = strategy.fallback  # the index went away between planning and begin_merge
    if plan.join is not JoinKind.SOURCE:
        values = source_key_values(ctx.spark, builder)
        target_view = _target_view(
            ctx,
            table,
            planned.scan_columns,
            merge_handle.table_handle,
            without_char_columns(
                _with_values(_target_constraint(planned.statement, plan), values), plan.target.columns
            ),
            values,
            added=planned.added_columns,
        )
        # The connector read only rows with the source's key values: the semi join would keep them all.
        scan = ctx.scans[-1]
        enforced = set(scan.get("enforced", ()))
        reduced = bool(builder.key_columns) and all(c is not None and c in enforced for c in builder.key_columns)
        builder = attrs.evolve(builder, target_view=target_view, reduce_target=builder.reduce_target and not reduced)
        scan["semi_join"] = builder.reduce_target
    rows = ctx.spark.sql(builder.merge_rows_sql(planned.value_types))
    fragments, stats = run_merge_pipeline(
        ctx.spark,
        plan,
        rows,
        provider=table.connector.get_page_sink_provider(),
        session=session,
        merge_handle=merge_handle,
        colocated=builder.colocated,
    )
    return strategy, fragments, stats


def _run_lookup(
    ctx: StatementContext, planned: PlannedDml, prepared: _LookupPrepared, merge_handle: ConnectorMergeTableHandle
) -> tuple[list[Any], DmlStats] | None:
    table = planned.table
    session = ctx.session(table.catalog)
    resolved: ConnectorResolvedIndex | None = prepared.resolved
    if merge_handle.table_handle != prepared.handle:  # begin_merge pinned another snapshot: resolve for it
        resolved = table.connector.get_metadata().resolve_index(
            session=session,
            table_handle=merge_handle.table_handle,
            index_columns=[prepared.key_handle],
            output_columns=planned.scan_columns,
        )
    if resolved is None:
        return None
    stats: dict[str, Any] = {"table": table.full_name, "target": True, "lookup": True}
    ctx.scans.append(stats)
    return run_lookup_merge(
        ctx.spark,
        planned.plan,
        prepared.program,
        prepared.source,
        join_type=prepared.join_type,
        index_provider=table.connector.get_index_provider(),
        index_handle=resolved.index_handle,
        partition_points=resolved.partition_points,
        key_range=resolved.key_range,
        key_column=prepared.key_handle,
        output_columns=planned.scan_columns,
        provider=table.connector.get_page_sink_provider(),
        session=session,
        merge_handle=merge_handle,
        stats=stats,
    )


def _target_view(
    ctx: StatementContext,
    table: ResolvedTable,
    columns: list[ColumnHandle],
    handle: ConnectorTableHandle | None,
    constraint: Constraint | None = None,
    values: Mapping[str, frozenset[Any] | pa.Array] | None = None,
    added: Sequence[ColumnMetadata] = (),
) -> str:
    """The target scan of ``columns`` (see :func:`_scan_columns`). With ``handle`` None, an empty stand-in
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


def _scan_columns(target: TargetTable, handles: Mapping[str, ColumnHandle]) -> list[ColumnHandle]:
    """What a DML target scan reads: the visible columns (the connector's handles) and the row id column."""
    columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in target.columns]
    if target.row_id.name not in {c.name for c in columns}:
        columns.append(target.row_id)
    return columns


def _bare_column(expr: msql.Expression) -> str | None:
    """The column name when ``expr`` is a plain column reference."""
    refs = expr.column_refs()
    if len(refs) == 1 and expr.is_column:
        ((_, name),) = refs
        return name
    return None


def _is_char(expr: msql.Expression, schema: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether ``expr`` is of a ``CHAR(n)`` type (one the SQL layer cannot type is not)."""
    try:
        return expr.trino_type(schema).startswith("char")
    except MergekitError:
        return False


def _with_values(constraint: Constraint | None, values: Mapping[str, frozenset[Any] | pa.Array]) -> Constraint | None:
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


def _statement_kind(st: msql.Statement) -> str:
    return {msql.Insert: "INSERT", msql.Update: "UPDATE", msql.Delete: "DELETE", msql.Merge: "MERGE"}.get(type(st), "")


def spi_constraint(found: Mapping[str, tuple[Any, ...]]) -> Constraint:
    """The SQL layer's simple predicates as the SPI's pruning constraint (IS NULL is not expressible)."""
    equalities = {c: v[1] for c, v in found.items() if v[0] == "values"}
    ranges = {c: (v[1], v[2]) for c, v in found.items() if v[0] == "range"}
    return Constraint(equalities=equalities, ranges=ranges)


def _target_constraint(st: msql.Statement, plan: MergePlan) -> Constraint | None:
    """Predicates every changed target row satisfies: UPDATE/DELETE WHERE, or MERGE ON conjuncts on the
    target (not with WHEN NOT MATCHED BY SOURCE, which changes target rows the ON does not match)."""
    if isinstance(st, msql.Update | msql.Delete) and st.where is not None:
        return spi_constraint(msql.predicate_constraints(st.where, {None, plan.target_alias}))
    if isinstance(st, msql.Merge) and not any(c.kind is msql.MergeCaseKind.NOT_MATCHED_BY_SOURCE for c in st.cases):
        return spi_constraint(msql.predicate_constraints(st.on, {plan.target_alias}))
    return None
