"""The driver tier's MERGE: a MERGE of a VALUES list of constants (or of a table the driver reads) into a table
with an index (or one the driver reads whole, :mod:`.scan_index`), planned and run in the engine's process without
Spark (docs/architecture.md, "The driver tier").

``MERGE INTO t USING (VALUES ...) AS s(k, v) ON t.k = s.k WHEN ...``, the commonest small MERGE (an API write, a
corrected row, a statement typed at the CLI), needs none of Spark: :func:`plan_driver_merge` types the VALUES rows
as Spark's analysis would (:func:`~mergekit.execution.arrow.values.compile_source`), plans the statement with the
same logical planner, compiles the WHEN clauses with the one Arrow compiler (:func:`compile_lookup`) and resolves
the connector's index on the ON clause's target column; :func:`~.run.run_dml` then runs the plan as any MERGE by
index lookups (``begin_merge``, the lookup, the WHEN clauses, duplicate check, processor and sink in one task,
``finish_merge``), the task in this process. Anything outside that shape is declined (with the reason, for tests
and EXPLAIN's sake) and planned as before, by Spark's analysis, which also words every analysis error.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pyarrow as pa

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.execution.arrow.cases import compile_lookup
from mergekit.execution.arrow.compiler import ArrowCompiler, Compiled, Unsupported, column_of, value_family
from mergekit.execution.arrow.values import SourceColumns, ValuesProgram, compile_source
from mergekit.execution.context import StatementContext
from mergekit.execution.driver_query import DriverQuery, plain_type, plan_driver_query, run_driver_query
from mergekit.execution.types import kept_by_spark, through_spark
from mergekit.execution.user_frames import UserFrame
from mergekit.planner import JoinKind, MergePlan, TargetTable, apply_defaults, cost, plan_merge, source_dedup
from mergekit.planner.cost import SourceEstimate
from mergekit.planner.physical import IndexLookup, SparkJoin
from mergekit.spi import sql_type_name

from .lookup import KEY
from .scan_index import TargetTooLarge, scan_index
from .strategy import LookupPrepared
from .target import scan_columns

__all__ = ["NOT_IN_ARROW", "DriverSource", "DriverMerge", "bare_column", "plan_driver_merge"]

# the Arrow type a key of each family is compared in (as the lookup task and the Spark plan compare them)
_JOIN_TYPES = {"integer": pa.int64(), "string": pa.string(), "date": pa.date32()}


def bare_column(expr: msql.Expression) -> str | None:
    """The column name when ``expr`` is a plain column reference."""
    refs = expr.column_refs()
    if len(refs) == 1 and expr.is_column:
        ((_, name),) = refs
        return name
    return None


@attrs.frozen
class DriverSource:
    """A MERGE source the driver evaluates: the VALUES rows, their column names, the join key over them and the
    columns the WHEN clauses read. :meth:`table` is what a lookup task receives (those columns and ``$key``)."""

    program: ValuesProgram | TableRows | ArrowRows
    names: tuple[str, ...]
    key: Compiled
    join_type: pa.DataType
    columns: tuple[str, ...]
    distinct_keys: bool = False  # rows with a key already seen are dropped (the keys an UPDATE's WHERE names)

    def table(self) -> pa.Table:
        rows = self.program.table(self.names)
        key = column_of(self.key.fn(rows), rows.num_rows, self.key.type).cast(self.join_type)
        table = pa.table({**{c: rows.column(c) for c in self.columns}, KEY: key})
        if self.distinct_keys:
            first: dict = {}
            for i, value in enumerate(key.to_pylist()):
                first.setdefault(value, i)
            table = table.take(list(first.values()))
        return table


@attrs.frozen
class DriverMerge:
    """What :func:`plan_driver_merge` prepared, for :class:`~.plan.PlannedDml`."""

    plan: MergePlan
    strategy: IndexLookup
    scan_columns: list
    columns_by_name: dict
    lookup: LookupPrepared


#: why the driver tier declines a MERGE whose WHEN clauses (an UPDATE's SET, a WHERE) its Arrow compiler cannot evaluate
NOT_IN_ARROW = "a WHEN clause does not evaluate in Arrow"


def plan_driver_merge(
    ctx: StatementContext,
    st: msql.Merge,
    table: ResolvedTable,
    target: TargetTable,
    *,
    distinct_keys: bool = False,
    scan: bool = True,
    whole: bool = False,
) -> DriverMerge | str:
    """The driver tier's plan of ``st``, or why it is planned by Spark. ``distinct_keys``: the source's rows are
    the keys an UPDATE or DELETE names (:func:`mergekit.sql.keyed_as_merge`), each looked up once. ``scan``: a
    table without an index may be read whole instead (:mod:`.scan_index`). ``whole``: ``st`` is an UPDATE or DELETE
    as :func:`mergekit.sql.whole_as_merge` writes it, run over every row of a table the driver reads whole."""
    if st.schema_evolution:
        return "MERGE WITH SCHEMA EVOLUTION"
    if source_dedup(ctx.properties) is not None:
        return "the session's merge_duplicate_source policy"
    relation = st.source
    rows = relation.values_rows()
    program: ValuesProgram | TableRows | ArrowRows
    if rows is not None:
        names = tuple(relation.column_aliases)
        if not _named(names):
            return "the VALUES source's columns are not named (in lower case, once each)"
        values = compile_source(rows, names)
        if isinstance(values, str):
            return values
        program, source_rows = values, len(rows)
    else:
        found = _table_source(ctx, relation, table)
        if isinstance(found, str):
            return found
        program, names = found
        source_rows = program.arrow.num_rows if isinstance(program, ArrowRows) else cost.DRIVER_SCAN_MAX_ROWS
        if source_rows > cost.DRIVER_ARROW_MAX_ROWS:
            return f"the source has more than {cost.DRIVER_ARROW_MAX_ROWS:,} rows"
    if target.insert_layout is not None or target.update_layout is not None:
        return "writers must receive rows routed by the connector's layout"
    if target.check_constraints:
        return "the table has CHECK constraints"
    plan = apply_defaults(plan_merge(st, target, names), ())
    if plan.join is JoinKind.ANTI:  # insert only: the lookup's RIGHT join, its matched rows taken by no case
        plan = attrs.evolve(plan, join=JoinKind.RIGHT)
    if plan.join is not JoinKind.RIGHT or plan.on is None or plan.source_alias is None:
        return "the MERGE is not a RIGHT join on an ON clause"
    if whole:  # ON TRUE, one source row (msql.whole_as_merge): every target row, matched by its row id
        key_name, key_expr = target.row_id.name, msql.Expression.column(plan.source_alias, names[0])
    else:
        if plan.on.conjunct_count != 1:
            return "the ON clause is not one equality"
        pairs = msql.equi_join_keys(plan.on, plan.target_alias, plan.source_alias)
        key_name = bare_column(pairs[0][0]) if len(pairs) == 1 else None
        if key_name is None:
            return "the ON clause is not one equality of a target column"
        key_expr = pairs[0][1]
    session = ctx.session(table.catalog)
    metadata = table.connector.get_metadata()
    columns_by_name = dict(metadata.get_column_handles(session=session, table_handle=table.handle))
    columns = scan_columns(plan.target, columns_by_name)
    key_handle = next((c for c in columns if c.name == key_name), None)
    if key_handle is None:
        return f"no column handle for {key_name}"
    source_types = dict(zip(names, program.types, strict=True))
    type_names = {c.name: c.type_name or sql_type_name(c.type) for c in plan.target.columns}
    lookup_program = compile_lookup(plan, source_types, columns, type_names)
    if lookup_program is None:
        return NOT_IN_ARROW
    key = _key(key_expr, plan.source_alias.lower(), source_types)
    family = value_family(key.type) if key is not None else None
    if key is None or family not in _JOIN_TYPES or (family != value_family(key_handle.type) and not whole):
        return f"the key {key_name} does not compare in Arrow as in Spark"
    resolved = (
        None
        if whole
        else metadata.resolve_index(
            session=session, table_handle=table.handle, index_columns=[key_handle], output_columns=columns
        )
    )
    provider = None
    if resolved is None:
        scanned = scan_index(ctx, table, columns) if scan else "the statement is the connector's to run"
        if isinstance(scanned, str):
            return f"the connector has no index on {key_name} ({scanned})"
        resolved, provider = scanned
    join_type = _JOIN_TYPES[family]
    source = DriverSource(program, names, key, join_type, lookup_program.source_columns, distinct_keys)
    estimate = SourceEstimate(key_bytes=8 * source_rows, key_row_width=8, deterministic=True)
    strategy = IndexLookup(
        key_column=key_name,
        join_type=str(join_type),
        estimate=estimate,
        fallback=SparkJoin(join="RIGHT"),
        tier="driver",
        scanned=provider is not None,
    )
    prepared = LookupPrepared(
        source=source,  # type: ignore[arg-type]
        program=lookup_program,
        join_type=join_type,
        key_handle=key_handle,
        handle=table.handle,
        resolved=resolved,
        index_provider=provider,
        whole=whole,
    )
    return DriverMerge(plan, strategy, columns, columns_by_name, prepared)


def _named(names: tuple[str, ...]) -> bool:
    """Source columns the WHEN clauses can name: lower case, each once."""
    return bool(names) and len(set(names)) == len(names) and all(n == n.lower() for n in names)


@attrs.frozen(eq=False)
class TableRows:
    """A MERGE source that is a table the driver tier reads (:func:`~mergekit.execution.driver_query.
    plan_driver_query`): read when the statement runs, after ``begin_merge``, as the Spark plan reads it."""

    ctx: StatementContext
    query: DriverQuery
    types: tuple[pa.DataType, ...]

    def table(self, names: Sequence[str]) -> pa.Table:
        result = run_driver_query(self.ctx, self.query)
        if result is None:  # more rows than the driver reads
            raise TargetTooLarge()
        assert result.table is not None
        return result.table.rename_columns(list(names))


@attrs.frozen(eq=False)
class ArrowRows:
    """A MERGE source that is the caller's Arrow table (``Engine.register_arrow``), read as it is."""

    arrow: pa.Table

    @property
    def types(self) -> tuple[pa.DataType, ...]:
        return tuple(self.arrow.schema.types)

    def table(self, names: Sequence[str]) -> pa.Table:
        return self.arrow.rename_columns(list(names))


def _arrow_source(frame: UserFrame, relation: msql.Relation) -> tuple[ArrowRows, tuple[str, ...]] | str:
    """The caller's Arrow table as the driver tier reads it (every column of a type the WHEN clauses compare in
    Arrow as Spark compares them, already of the type Spark reads it as), or why Spark reads it."""
    arrow = frame.arrow
    if arrow is None:
        return "the source is a caller's DataFrame"
    if not all(kept_by_spark(t) for t in arrow.schema.types):  # (each of them a plain type)
        return "the source's Arrow columns are not all of types the driver tier compares as Spark (e.g. a timestamp)"
    names = tuple(relation.column_aliases) or tuple(arrow.column_names)
    if len(names) != arrow.num_columns or not _named(names):
        return "the source's columns are not named in lower case, once each"
    return ArrowRows(arrow), names


def _table_source(
    ctx: StatementContext, relation: msql.Relation, target: ResolvedTable
) -> tuple[TableRows | ArrowRows, tuple[str, ...]] | str:
    """A source table the driver tier reads, and its column names (as the MERGE names them), or why not."""
    scan = relation.table_scan()
    if scan is None or relation.table is None:
        return "the source is not a VALUES list or a table"
    frame = ctx.dataframes.get(".".join(relation.table.name.parts))
    if frame is not None:
        return _arrow_source(frame, relation)
    query = plan_driver_query(ctx, scan)
    if isinstance(query, str):
        return f"the source table is read by Spark ({query})"
    if query.table.full_name == target.full_name:
        return "the source is the target"
    visible = query.table.metadata.visible_columns
    if any(not plain_type(c.type) or (c.type_name or "").lower().startswith("char") for c in visible):
        return "the source table has a column the WHEN clauses compare only in Spark (char(n), a timestamp, ...)"
    names = tuple(relation.column_aliases) or tuple(c.name for c in visible)
    if len(names) != len(visible) or not _named(names):
        return "the source table's columns are not named in lower case, once each"
    types = tuple(through_spark(c.type) for c in visible)
    return TableRows(ctx, query, types), names


def _key(expr: msql.Expression, alias: str, types: dict[str, pa.DataType]) -> Compiled | None:
    lowered = expr.lowered()
    if lowered is None:
        return None
    try:
        return ArrowCompiler(SourceColumns(alias, types)).compile(lowered)
    except Unsupported:
        return None
