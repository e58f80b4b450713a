"""``Engine.insert_arrow``: an INSERT of rows the caller already holds in Arrow, on the driver, without a Spark job.

An ``INSERT INTO t (columns) VALUES ...`` of an Arrow table needs none of the MERGE plan's steps but the last: no
target scan, no join, no CASE, no redistribution when the connector asks for none. When every value reaches the
table unchanged (:func:`driver_append_plan`), the engine writes the rows through the connector's merge SPI in its
own process: ``begin_merge``, one merge sink (``sink_id`` 0) fed the whole table as INSERT pages, ``finish_merge``
(``abort_merge`` on any failure). The connector's own checks run as for any INSERT (a stream's monotonicity, a
key); the engine checks NOT NULL here. That is what makes a producer that commits many small batches into a stream
fast: a commit costs the connector's write and its catalog transaction, not a Spark job.

Anything the engine would evaluate in Spark is left to the ordinary INSERT (:func:`driver_append_plan` says why):
a CHECK constraint, a column DEFAULT for an omitted column (a column the storage fills, ``storage_default``, stays
on the driver: it is named in ``begin_merge``'s ``insert_case_defaults``), a type that needs a conversion other
than an integer's (range-checked), a float's widening or a timestamp's (time zones read as the caller's session
would: :func:`_timestamps`), a connector that routes inserted rows (an insert layout). A ``varchar(n)`` /
``char(n)`` column stays on the driver: its values get the store assignment every writer applies (``lengths``).
The caller then runs ``INSERT INTO t (columns) SELECT columns FROM <the data as a DataFrame>``: same rows, same
errors, with a Spark job.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable, Sequence

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.arrow.values import ValuesProgram, compile_values
from mergekit.execution.context import StatementContext
from mergekit.planner import MergePlan, TargetTable, not_null_violation
from mergekit.result import Result
from mergekit.spi import MERGE_PAGE_LAYOUT, ColumnHandle, MergeOperation

from .lengths import bounded_columns, fit_page
from .target import resolve_target
from .transaction import aborted_on_failure

__all__ = [
    "DRIVER_APPEND",
    "DriverAppend",
    "PlannedValues",
    "arrow_zones",
    "check_arrow",
    "driver_append_plan",
    "insert_columns",
    "plan_values_append",
    "run_driver_append",
    "run_values_append",
]

DRIVER_APPEND = "driver_append"  # the strategy's name in EXPLAIN and Result.metrics["strategy"]


@attrs.frozen
class DriverAppend:
    """An INSERT that runs on the driver: the table, and for each target column the data column feeding it
    (None: NULL, or the storage's default for the ``storage_defaults`` columns, which ``data`` leaves out)."""

    table: ResolvedTable
    target: TargetTable
    sources: tuple[str | None, ...]
    storage_defaults: tuple[str, ...] = ()


def insert_columns(data: pa.Table, target: TargetTable) -> list[tuple[str, str]]:
    """(data column, target column) pairs: data columns matched to the table's columns by name, ignoring case as
    SQL identifiers do. ``COLUMN_NOT_FOUND`` for a name the table lacks, ``DUPLICATE_COLUMN_NAME`` for two data
    columns naming one table column."""
    by_name = {c.name.lower(): c.name for c in target.columns}
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name in data.column_names:
        column = by_name.get(name.lower())
        if column is None:
            raise MergekitError(
                ErrorCode.COLUMN_NOT_FOUND, f"Insert column name does not exist in target table: {name}"
            )
        if column in seen:
            raise MergekitError(
                ErrorCode.DUPLICATE_COLUMN_NAME, f"Insert column name is specified more than once: {name}"
            )
        seen.add(column)
        pairs.append((name, column))
    return pairs


def _convertible(source: pa.DataType, target: pa.DataType) -> bool:
    """Does every value of ``source`` become a ``target`` value here as the INSERT would make it (or fail as it
    would)? Integers narrow with a range check (Trino's store assignment), timestamps by :func:`_timestamps`."""
    if source == target or pa.types.is_null(source):
        return True
    if pa.types.is_integer(source) and pa.types.is_signed_integer(target):
        return True
    if pa.types.is_floating(source) and pa.types.is_floating(target):
        return source.bit_width <= target.bit_width
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return True
    strings = (pa.types.is_string, pa.types.is_large_string)
    return any(f(source) for f in strings) and any(f(target) for f in strings)


_INTEGER_NAMES = {8: "tinyint", 16: "smallint", 32: "integer", 64: "bigint"}


def _integers(values: pa.Array, target: pa.DataType, column: str) -> pa.Array:
    """Integers into a narrower integer column: every value in range, or NUMERIC_VALUE_OUT_OF_RANGE naming the
    first that is not (Trino's ``Out of range for integer: 3000000000``); nothing is written then."""
    try:
        return values.cast(target)  # a safe cast: refuses a value out of range
    except pa.ArrowInvalid:
        low, high = -(2 ** (target.bit_width - 1)), 2 ** (target.bit_width - 1) - 1
        bad = next(v for v in values.to_pylist() if v is not None and not low <= v <= high)  # the error path only
        raise MergekitError(
            ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE,
            f"Out of range for {_INTEGER_NAMES[target.bit_width]}: {bad} (column {column})",
        ) from None


def _timestamps(values: pa.Array, target: pa.DataType, user_zone: str | None) -> pa.Array:
    """Arrow timestamps as the table's: a value with a zone into a ``timestamp`` column keeps its wall clock in that
    zone (Trino's cast); one without a zone into a ``timestamp with time zone`` column is the wall clock of the
    caller's session zone (as the caller's Spark session reads it); otherwise the value as it is."""
    source = values.type
    if source.tz is not None and target.tz is None:
        values = pc.local_timestamp(values)
    elif source.tz is None and target.tz is not None:
        values = wall_clocks_in(values, user_zone or "UTC")
    return values.cast(target)


def wall_clocks_in(values: pa.Array, zone: str) -> pa.Array:
    """Wall clocks (timestamps without a zone) as the instants they are in ``zone``, as Spark (java.time) reads them:
    a wall clock a daylight-saving change skips (02:30 on a spring-forward night) or repeats (01:30 on a fall-back
    night) takes the offset in force before the change (02:30 EST is 07:30 UTC; 01:30 EDT is 05:30 UTC)."""
    try:
        return pc.assume_timezone(values, zone, ambiguous="earliest", nonexistent="raise")
    except pa.ArrowInvalid:  # a skipped wall clock: Python's zoneinfo (fold 0) reads it as java.time does
        tz = zoneinfo.ZoneInfo(zone)
        instants = [None if v is None else v.replace(tzinfo=tz) for v in values.to_pylist()]
        return pa.array(instants, pa.timestamp(values.type.unit, tz="UTC")).cast(
            pa.timestamp(values.type.unit, tz=zone)
        )


def arrow_zones(schema: pa.Schema) -> dict[str, str | None]:
    """The zone of each Arrow timestamp column that has one (its values are that zone's wall clocks)."""
    return {f.name: _zone(f.type.tz) for f in schema if pa.types.is_timestamp(f.type) and f.type.tz is not None}


def _zone(tz: str) -> str | None:
    return None if tz.upper() in ("UTC", "Z", "+00:00", "ETC/UTC", "GMT") else tz


def driver_append_plan(ctx: StatementContext, name: msql.QualifiedName, data: pa.Table) -> DriverAppend | str:
    """The driver-side INSERT of ``data`` into table ``name``, or why it must run as an ordinary INSERT."""
    table, target = resolve_target(ctx, name, insert_only=True)
    return _append_plan(table, target, data.schema)


def _append_plan(table: ResolvedTable, target: TargetTable, data: pa.Schema) -> DriverAppend | str:
    pairs = dict((column, source) for source, column in insert_columns(data.empty_table(), target))
    if target.check_constraints:
        return "the table has CHECK constraints"
    if target.insert_layout is not None:
        return "the connector routes inserted rows (insert layout)"
    sources: list[str | None] = []
    filled = tuple(c.name for c in target.columns if c.name not in pairs and target.storage_fills(c.name))
    for column in target.columns:
        source = pairs.get(column.name)
        if source is None and column.default is not None:
            return f"column {column.name} takes its DEFAULT"
        if source is not None and not _convertible(data.field(source).type, column.type):
            return f"column {column.name} needs a conversion from {data.field(source).type}"
        sources.append(source)
    return DriverAppend(table=table, target=target, sources=tuple(sources), storage_defaults=filled)


@attrs.frozen
class PlannedValues:
    """``INSERT INTO t [(columns)] VALUES ...`` of constants on the driver tier (no Spark job): the append, the
    inserted columns' names and the VALUES program. What EXPLAIN prints and :func:`run_values_append` runs."""

    plan: MergePlan
    append: DriverAppend
    columns: tuple[str, ...]
    program: ValuesProgram

    def explain(self) -> str:
        return "\n".join(
            [
                self.plan.explain(),
                f"Strategy: {DRIVER_APPEND} (the VALUES rows evaluated in Arrow and written on the driver: no Spark job)",
                "SPI: merge (begin_merge / ConnectorMergeSink / finish_merge)",
            ]
        )


def plan_values_append(
    table: ResolvedTable, target: TargetTable, plan: MergePlan, st: msql.Insert
) -> PlannedValues | str:
    """The driver tier's INSERT of ``st``'s VALUES rows, or why it runs on Spark: the source must be a bare VALUES
    list of constants the Arrow compiler evaluates exactly as Spark does (:func:`compile_values`), into columns the
    driver append writes unchanged (:func:`driver_append_plan`'s rules)."""
    rows = st.source.values_rows()  # (INSERT OVERWRITE and ON CONFLICT come here planned as MERGEs)
    if rows is None:
        return "the source is not a VALUES list"
    by_name = {c.name.lower(): c for c in target.columns}
    names = st.columns if st.columns is not None else target.column_names
    columns = [by_name.get(n.lower()) for n in names]
    if None in columns or len({n.lower() for n in names}) != len(names):
        return "the column list names a column twice or one the table lacks"  # Spark's analysis words it
    program = compile_values(rows, [c.type for c in columns])  # type: ignore[union-attr]
    if isinstance(program, str):
        return program
    schema = pa.schema([pa.field(c.name, c.type) for c in columns])  # type: ignore[union-attr]
    append = _append_plan(table, target, schema)
    if isinstance(append, str):
        return append
    return PlannedValues(plan=plan, append=append, columns=tuple(schema.names), program=program)


def run_values_append(ctx: StatementContext, planned: PlannedValues) -> Result:
    """Evaluate the VALUES rows, then the driver append (``begin_merge``, one sink, ``finish_merge``)."""
    return run_driver_append(ctx, planned.append, planned.program.table(planned.columns))


def _page(plan: DriverAppend, data: pa.Table, user_zone: Callable[[], str | None]) -> pa.RecordBatch:
    """The INSERT merge page: the table's columns, then operation, case number 0 and a NULL row id."""
    n = data.num_rows
    columns: list[pa.Array] = []
    for column, source in zip(plan.target.columns, plan.sources, strict=True):
        values = data.column(source).combine_chunks() if source is not None else pa.nulls(n, column.type)
        if pa.types.is_timestamp(values.type) and pa.types.is_timestamp(column.type):
            values = _timestamps(values, column.type, user_zone())  # (read only for timestamps)
        elif pa.types.is_integer(values.type) and values.type != column.type:
            values = _integers(values, column.type, column.name)
        else:
            values = values.cast(column.type)
        if not column.nullable and values.null_count and column.name not in plan.storage_defaults:
            raise MergekitError(ErrorCode.CONSTRAINT_VIOLATION, not_null_violation(column.name))
        columns.append(values)
    data_schema = pa.schema([pa.field(c.name, c.type) for c in plan.target.columns])
    schema = MERGE_PAGE_LAYOUT.schema(data_schema, plan.target.row_id.type)
    columns.append(pa.array([int(MergeOperation.INSERT)] * n, MERGE_PAGE_LAYOUT.operation_type))
    columns.append(pa.array([0] * n, MERGE_PAGE_LAYOUT.case_number_type))
    columns.append(pa.nulls(n, plan.target.row_id.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def run_driver_append(ctx: StatementContext, plan: DriverAppend, data: pa.Table) -> Result:
    """``begin_merge``, one sink on the driver, ``finish_merge``; ``abort_merge`` on any failure."""
    table = plan.table
    session = ctx.session(table.catalog)
    session = attrs.evolve(session, properties={**session.properties, "statement": "INSERT"})
    page = _page(plan, data, lambda: ctx.user_zone)  # NOT NULL and value ranges are checked before anything begins
    # VARCHAR(n) / CHAR(n): the store assignment every writer applies (trailing spaces cut, padding, or the error)
    page = fit_page(page, bounded_columns(plan.target.columns), MERGE_PAGE_LAYOUT.operation, "INSERT")
    metadata = table.connector.get_metadata()
    defaults = {}
    if plan.storage_defaults:  # the columns ``data`` leaves out that the storage fills (only then: see the SPI)
        handles = [ColumnHandle(name=c.name, type=c.type) for c in plan.target.columns]
        defaults["insert_case_defaults"] = {0: [h for h in handles if h.name in plan.storage_defaults]}
    merge_handle = metadata.begin_merge(session=session, table_handle=table.handle, update_case_columns={}, **defaults)
    with aborted_on_failure(metadata, session, merge_handle):
        fragments: Sequence[object] = []
        if page.num_rows:
            sink = table.connector.get_page_sink_provider().create_merge_sink(
                session=session, merge_handle=merge_handle, sink_id=0
            )
            try:
                sink.store_merged_rows(page)
                fragments = list(sink.finish())
            except BaseException:
                try:
                    sink.abort()
                except Exception:  # the original failure matters more
                    pass
                raise
        metadata.finish_merge(session=session, merge_handle=merge_handle, fragments=fragments)
    n = page.num_rows
    metrics = {
        "inserted": n,
        "updated": 0,
        "deleted": 0,
        "unchanged": 0,
        "per_case": {0: {"inserted": n, "updated": 0, "deleted": 0}} if n else {},
        "sinks": int(bool(n)),
        "scans": [],
        "strategy": DRIVER_APPEND,
        "tier": "driver",
    }
    return Result(statement="INSERT", row_count=n, metrics=metrics)


def check_arrow(data: object, method: str = "insert_arrow") -> pa.Table:
    """``data`` as an Arrow table (a table or a record batch); ``INVALID_ARGUMENTS`` for anything else."""
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return data
    raise MergekitError(
        ErrorCode.INVALID_ARGUMENTS, f"{method} takes a pyarrow Table or RecordBatch, not {type(data).__name__}"
    )
