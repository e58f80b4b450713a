"""Planning a DML statement (MERGE, UPDATE, DELETE, INSERT) before anything begins: the logical plan
(``mergekit.planner``), every expression analysed by Spark against an empty stand-in for the target (types,
coercions: Trino's ``typesMatchForInsert``), the Spark SQL of the merge rows (:mod:`.merge_rows`) and the
strategy (:mod:`.strategy`). ``EXPLAIN`` prints the result; :mod:`.run` runs it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.ddl.evolution import merge_added_columns
from mergekit.execution.lazy_pyspark import T
from mergekit.execution.types import spark_sql_type, spark_type, trino_name
from mergekit.planner import (
    JoinKind,
    MergePlan,
    TargetTable,
    apply_defaults,
    check_violation,
    driver_tier_enabled,
    insert_storage_defaults,
    insert_with_defaults,
    plan_delete,
    plan_insert,
    plan_merge,
    plan_update,
    source_dedup,
)
from mergekit.planner.physical import MergeStrategy, TargetScan
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    sql_type_name,
)

from .append import PlannedValues, plan_values_append
from .contract import merge_spi_supported, overrides
from .driver import NOT_IN_ARROW, DriverMerge, bare_column, plan_driver_merge
from .merge_rows import SRC, MergeQueryBuilder, check_types, q
from .row_level import (
    PlannedPushdown,
    PlannedRowLevel,
    plan_pushdown,
    plan_row_level,
)
from .strategy import LookupPrepared, choose_strategy
from .target import resolve_target, scan_columns, scan_target

__all__ = ["PlannedDml", "plan_dml", "explain_dml", "statement_kind"]


@attrs.define(kw_only=True)
class PlannedDml:
    """A DML statement planned and analysed, not begun: what EXPLAIN prints and :func:`run_dml` runs."""

    statement: msql.Statement
    plan: MergePlan
    table: ResolvedTable
    builder: MergeQueryBuilder | None  # None: planned for the driver tier, without Spark (:mod:`.driver`)
    strategy: MergeStrategy
    scan_columns: list[ColumnHandle]
    columns_by_name: Mapping[str, ColumnHandle]
    value_types: Any
    lookup: LookupPrepared | None = None
    # MERGE WITH SCHEMA EVOLUTION: the source's columns the statement adds to the target (the plan's target has
    # them after its own; the target scan reads NULL in them; begin_merge_adding_columns commits them)
    added_columns: tuple[ColumnMetadata, ...] = ()
    driver_declined: str | None = None  # why the driver tier did not plan it (EXPLAIN says so)

    def explain(self) -> str:
        lines = [
            self.plan.explain(),
            *self.strategy.explain(),
            "SPI: merge (begin_merge / ConnectorMergeSink / finish_merge)",
        ]
        if self.driver_declined and self.strategy.tier != "driver":
            lines.append(f"Driver tier: not taken ({self.driver_declined})")
        if self.added_columns:
            added = ", ".join(f"{c.name} {c.type_name or sql_type_name(c.type)}" for c in self.added_columns)
            lines.append(f"Schema evolution: adds {added} (committed with the rows)")
        return "\n".join(lines)


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
        key_columns = tuple(None if char else bare_column(a) for (a, _), char in zip(pairs, chars, strict=True))
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


def _is_char(expr: msql.Expression, schema: Mapping[str, Mapping[str, str]]) -> bool:
    """Whether ``expr`` is of a ``CHAR(n)`` type (one the SQL layer cannot type is not)."""
    try:
        return expr.trino_type(schema).startswith("char")
    except MergekitError:
        return False


def _driver_planned(st: msql.Statement, table: ResolvedTable, driver: DriverMerge) -> PlannedDml:
    return PlannedDml(
        statement=st,
        plan=driver.plan,
        table=table,
        builder=None,
        strategy=driver.strategy,
        scan_columns=driver.scan_columns,
        columns_by_name=driver.columns_by_name,
        value_types=None,
        lookup=driver.lookup,
    )


def _driver_keyed(
    ctx: StatementContext, st: msql.Update | msql.Delete, table: ResolvedTable, target: TargetTable
) -> PlannedDml | str:
    """An UPDATE or DELETE whose WHERE names key values (``k = 1``, ``k IN (1, 2)``) planned for the driver tier as
    the MERGE it means (:func:`mergekit.sql.keyed_as_merge`), by the connector's index on that column; when no such
    MERGE plans for the driver, why (the last candidate's reason). The statement's own plan is made first, so that its errors are worded as
    on the Spark tier."""
    _logical_plan(st, target, None)
    meta = table.connector.get_metadata()
    if not merge_spi_supported(meta, ctx.session(table.catalog), table.handle):
        return "the connector has no merge SPI for this table"
    scan = not (isinstance(st, msql.Delete) and overrides(meta, "apply_delete"))  # the connector's own DELETE first
    candidates = [(merge, {"distinct_keys": True, "scan": scan}) for _, merge in msql.keyed_as_merge(st)]
    whole = msql.whole_as_merge(st) if scan else None  # no key named: every row of a table the driver reads whole
    if whole is not None:
        candidates.append((whole, {"whole": True}))
    why = "DELETE ... USING" if scan else "the connector runs this DELETE itself (apply_delete)"
    for merge, options in candidates:
        driver = plan_driver_merge(ctx, merge, table, target, **options)
        if isinstance(driver, DriverMerge):
            plan = attrs.evolve(driver.plan, statement=statement_kind(st))
            return _driver_planned(st, table, attrs.evolve(driver, plan=plan))
        why = driver
    if why == NOT_IN_ARROW:  # the statement's own words: it has no WHEN clause
        why = (
            "its SET or WHERE does not evaluate in Arrow"
            if isinstance(st, msql.Update)
            else "its WHERE does not evaluate in Arrow"
        )
    return why


def statement_kind(st: msql.Statement) -> str:
    return {msql.Insert: "INSERT", msql.Update: "UPDATE", msql.Delete: "DELETE", msql.Merge: "MERGE"}.get(type(st), "")


def plan_dml(
    ctx: StatementContext, st: msql.Statement
) -> PlannedDml | PlannedRowLevel | PlannedPushdown | PlannedValues:
    """Plan and analyse ``st`` against an empty stand-in for the target; choose its strategy. Nothing begins."""
    written_as_merge = True  # MERGE, UPDATE ... FROM; not INSERT OVERWRITE or ON CONFLICT planned as a MERGE
    if isinstance(st, msql.Insert) and (st.overwrite or st.on_conflict is not None):
        st = _insert_as_merge(ctx, st)
        written_as_merge = False
    kind = statement_kind(st) if isinstance(st, msql.Delete | msql.Update) else ""
    table, target = resolve_target(ctx, st.target, insert_only=isinstance(st, msql.Insert), row_level=kind)  # type: ignore[attr-defined]
    declined: str | None = None  # why the driver tier did not plan it
    if isinstance(st, msql.Merge) and written_as_merge and driver_tier_enabled(ctx.properties):
        driver = plan_driver_merge(ctx, st, table, target)  # the driver tier: a VALUES source, planned without Spark
        if isinstance(driver, DriverMerge):
            return _driver_planned(st, table, driver)
        declined = driver
    if kind and driver_tier_enabled(ctx.properties):
        keyed = _driver_keyed(ctx, st, table, target)  # the driver tier: UPDATE / DELETE of rows named by key
        if not isinstance(keyed, str):
            return keyed
        declined = keyed
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
    if isinstance(st, msql.Insert) and not defaulted and driver_tier_enabled(ctx.properties):
        values = plan_values_append(table, target, plan, st)  # the driver tier: VALUES of constants, no Spark job
        if isinstance(values, PlannedValues):
            return values
    if isinstance(st, msql.Merge) and written_as_merge and plan.join in (JoinKind.RIGHT, JoinKind.FULL):
        plan = attrs.evolve(plan, dedup=source_dedup(ctx.properties))  # SET SESSION merge_duplicate_source
    session = ctx.session(table.catalog)
    columns_by_name = table.connector.get_metadata().get_column_handles(session=session, table_handle=table.handle)
    columns = scan_columns(plan.target, columns_by_name)
    probe_view = scan_target(ctx, table, columns, None) if plan.join is not JoinKind.SOURCE else ""
    columns = [c for c in columns if c.name not in {a.name for a in added}]  # not in the table yet
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
        scan_columns=columns,
        columns_by_name=columns_by_name,
        value_types=value_types,
        added_columns=added,
        driver_declined=declined,
    )
    planned.strategy, planned.builder, planned.lookup = choose_strategy(ctx, planned)
    return planned


def explain_dml(ctx: StatementContext, st: msql.Statement) -> str:
    """EXPLAIN of a DML statement: the logical plan and the strategy that will run, with the estimates that chose
    it."""
    return plan_dml(ctx, st).explain()
