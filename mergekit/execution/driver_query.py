"""Queries on the driver tier: a scan of one table read through the connector in the engine's process, without a
Spark job (docs/architecture.md, "The driver tier").

:func:`plan_driver_query` takes what ``Query.simple_scan`` recognised (columns or ``count(*)``, a WHERE, an ORDER BY
of columns) and declines, with the reason, whatever it cannot compute exactly as the Spark plan does:

- a table read natively by Spark (``get_native_scan``: the journal's and the partitioned connector's files) whose
  files hold more than ``cost.DRIVER_NATIVE_SCAN_MAX_BYTES`` or are not local (a smaller one is read through its
  splits, which describe every row of the table, as the SPI requires), a stream, a caller's DataFrame registered
  under the name;
- a column of a type whose values Spark's round trip changes (``char(n)``: padding; timestamps of another unit
  or zone than microseconds in UTC; nested types), which the query returns; a timestamp in a WHERE or an ORDER BY
  (comparisons across zones and units are Spark's);
- a WHERE outside the Arrow compiler's subset (``Expression.lowered``), compiled over the table's columns;
- an ORDER BY key that Arrow does not order as Spark does (fractions: NaN; decimals), or keys with different NULL
  placements.

:func:`run_driver_query` reads every split (``get_splits``, then the page source of each, in order: the order in
which the Spark plan's single partition of a small table returns them), filters, sorts by Trino's rules (NULLs last
unless ``NULLS FIRST``; strings by code point) and returns the columns with the Arrow types the Spark tier's result
has. ``Result.metrics``: ``scans`` as the Spark tier reports them, and ``tier``. The connectors give no row
estimate, so the read stops once it passes ``cost.DRIVER_SCAN_MAX_ROWS`` rows and the query runs on Spark (which
reads the table in parallel). A query read lazily (``Engine.execute(stream=True)``, the CLI) runs here too: its rows
are at most ``cost.DRIVER_SCAN_MAX_ROWS``, held by the result; a larger one is read from Spark a partition at a time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.errors import MergekitError
from mergekit.planner import cost
from mergekit.result import Result
from mergekit.spi import (
    ColumnHandle,
    Connector,
    ConnectorSession,
    ConnectorSplit,
    ConnectorTableHandle,
    Constraint,
    NativeScan,
    NativeScanUnion,
)

from .arrow.compiler import ArrowCompiler, Compiled, Unsupported, mask_of, spark_not_null, value_family
from .arrow.rows import PageColumns
from .arrow.values import compile_constants
from .context import StatementContext
from .dml.lengths import without_char_columns
from .dml.target import spi_constraint
from .scan import conform_page
from .types import through_spark

__all__ = [
    "DriverQuery",
    "plain_type",
    "driver_constants_plan",
    "plan_driver_query",
    "run_driver_query",
    "run_driver_constants",
]

_SORTABLE = ("integer", "string", "date", "boolean")


def plain_type(t: pa.DataType) -> bool:
    """A type whose values reach the caller unchanged through Spark (integers, floats, strings, booleans, dates,
    decimals, binary)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date32(t)
        or pa.types.is_decimal(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _timestamp_as_stored(t: pa.DataType) -> bool:
    """A TIMESTAMP (no zone) or TIMESTAMP WITH TIME ZONE (UTC instants) column of microseconds: its values reach
    the caller unchanged through Spark (mergekit's statements run in UTC; the result's type is the column's), so a
    query may return it from the driver. Its comparisons and order are left to Spark (the WHERE and ORDER BY take
    only :func:`plain_type` columns)."""
    return pa.types.is_timestamp(t) and t.unit == "us" and t.tz in (None, "UTC")


@attrs.frozen
class DriverQuery:
    """A query the driver tier runs: the table, the columns read, the output columns (empty for ``count(*)``), the
    compiled WHERE, the sort keys and NULL placement."""

    table: ResolvedTable
    constraint: Constraint
    read: tuple[ColumnHandle, ...]
    output: tuple[str, ...]
    count: str | None
    where: Compiled | None
    sort: tuple[tuple[str, str], ...]
    nulls: str
    splits: tuple[ConnectorSplit, ...] | None = None  # the native scan's own splits (known keys), else get_splits

    def explain(self, st: msql.Query) -> str:
        """EXPLAIN's text: what is read, filtered and sorted, and the tier (``st``: the query, for its WHERE)."""
        scan = st.simple_scan()
        shown = f"count(*) AS {self.count}" if self.count is not None else ", ".join(self.output)
        lines = [f"Scan {self.table.full_name}: {shown}"]
        if scan is not None and scan.where is not None:
            lines.append(f"  where: {scan.where.sql}")
        if self.sort:
            keys = ", ".join(f"{c} {'DESC' if d == 'descending' else 'ASC'}" for c, d in self.sort)
            lines.append(f"  order by: {keys} (NULLs {'first' if self.nulls == 'at_start' else 'last'})")
        if self.splits is not None:
            lines.append(f"  splits: {len(self.splits)} (the rows of the keys the WHERE names)")
        lines.append(
            "Tier: driver (read through the connector, filtered and sorted in Arrow in the engine's process: no Spark "
            f"job; a table of more than {cost.DRIVER_SCAN_MAX_ROWS:,} rows is found while reading and left to Spark)"
        )
        return "\n".join(lines)


def plan_driver_query(ctx: StatementContext, st: msql.Query) -> DriverQuery | str:
    """The driver tier's plan of ``st``, or why it runs on Spark."""
    scan = st.simple_scan()
    if scan is None:
        return "not a scan of one table"
    if ".".join(scan.table.name.parts) in ctx.dataframes:
        return "a caller's DataFrame"
    try:
        table = ctx.resolve(scan.table.name)
    except MergekitError:
        return "the table does not resolve (Spark's analysis words the error)"
    if table.metadata.stream is not None:
        return "a stream"
    visible = table.metadata.visible_columns
    by_name = {c.name.lower(): c for c in visible}
    names = (
        [c.name for c in visible] if scan.columns is None else [by_name[n].name for n in scan.columns if n in by_name]
    )
    if scan.columns is not None and len(names) != len(scan.columns):
        return "a column the table lacks"
    plain = {c.name for c in visible if plain_type(c.type) and not (c.type_name or "").lower().startswith("char")}
    returned = plain | {c.name for c in visible if _timestamp_as_stored(c.type)}
    session = ctx.session(table.catalog)
    metadata = table.connector.get_metadata()
    handles = metadata.get_column_handles(session=session, table_handle=table.handle)
    read = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in visible]
    where: Compiled | None = None
    if scan.where is not None:
        lowered = scan.where.lowered()
        if lowered is None:
            return "a WHERE outside the Arrow compiler's subset"
        columns = PageColumns({c.name: c.type for c in read if c.name in plain}, scan.qualifiers)
        try:
            where = ArrowCompiler(columns).compile(lowered)
        except Unsupported as why:
            return f"the WHERE reads {why}"
        if value_family(where.type) not in ("boolean", "null"):
            return "a WHERE that is not a condition"
    sort: list[tuple[str, str]] = []
    placements = {first for _, _, first in scan.order_by}
    for name, descending, _ in scan.order_by:
        column = by_name.get(name)
        if column is None or column.name not in plain or value_family(column.type) not in _SORTABLE:
            return f"an ORDER BY of {name}"
        sort.append((column.name, "descending" if descending else "ascending"))
    if len(placements) > 1:
        return "ORDER BY keys with different NULL placements"
    if scan.count is not None and sort:
        return "count(*) with ORDER BY"
    if any(n not in returned for n in names):
        return (
            "a column whose values Spark's round trip changes (char(n), a timestamp not in microseconds, a nested type)"
        )
    # the WHERE's simple predicates, for the connector to prune by (as the Spark tier hands them over)
    found = msql.scan_constraints(st).get(scan.table)
    constraint = without_char_columns(spi_constraint(found), table.metadata.columns) if found else None
    constraint = constraint or Constraint()
    native = metadata.get_native_scan(session=session, table_handle=table.handle, columns=read, constraint=constraint)
    if native is not None:
        size = native_scan_bytes(native)
        if size is None or size > cost.DRIVER_NATIVE_SCAN_MAX_BYTES:
            return "the connector's files are read by Spark (remote, or more than the driver reads)"
    return DriverQuery(
        table=table,
        constraint=constraint,
        read=tuple(read),
        output=tuple(names) if scan.count is None else (),
        count=scan.count,
        where=where,
        sort=tuple(sort),
        nulls="at_start" if placements == {True} else "at_end",
        # a native scan of splits only (the journal's read of known keys: those keys' rows) is read as it is
        splits=tuple(native.splits) if isinstance(native, NativeScanUnion) and not native.scans else None,
    )


def driver_constants_plan(st: msql.Query) -> str | None:
    """EXPLAIN's text for a SELECT of constants the driver tier evaluates, or None (Spark evaluates it). A value
    that fails is explained, not raised: it fails the statement on this tier as it would on Spark."""
    found = st.constant_select()
    if found is None:
        return None
    names, values = found
    try:
        if isinstance(compile_constants(values), str):
            return None
    except MergekitError:
        pass
    listed = ", ".join(f"{value.sql} AS {name}" for name, value in zip(names, values, strict=True))
    return f"SELECT {listed}\nTier: driver (constants evaluated in Arrow in the engine's process: no Spark job)"


def run_driver_constants(st: msql.Query) -> Result | None:
    """``SELECT 1, 'a' AS x`` (no FROM) evaluated in this process, or None when Spark evaluates it (a value outside
    the Arrow compiler's subset). The columns are named and typed as the Spark tier's result (``_colN``)."""
    found = st.constant_select()
    if found is None:
        return None
    names, values = found
    arrays = compile_constants(values)
    if isinstance(arrays, str):
        return None
    fields = []
    for name, value, array in zip(names, values, arrays, strict=True):
        lowered = value.lowered()
        never_null = lowered is not None and spark_not_null(lowered) and not pa.types.is_null(array.type)
        fields.append(pa.field(name, through_spark(array.type), nullable=not never_null))
    schema = pa.schema(fields)
    table = pa.Table.from_arrays([a.cast(f.type) for a, f in zip(arrays, schema, strict=True)], schema=schema)
    return Result(statement="SELECT", table=table, metrics={"scans": [], "tier": "driver"})


def native_scan_bytes(native: NativeScan | NativeScanUnion) -> int | None:
    """The bytes of the files ``native`` reads (its anti joins' included); None when a path is not a local file
    (a plain path or a ``file://`` URI)."""
    scans = list(native.scans) if isinstance(native, NativeScanUnion) else [native]
    total = 0
    while scans:
        scan = scans.pop()
        if scan.anti_join is not None:
            scans.append(scan.anti_join.scan)
        for uri in scan.paths:
            path = uri.removeprefix("file://")
            if "://" in path or not os.path.isfile(path):
                return None
            total += os.path.getsize(path)
    return total


def run_driver_query(ctx: StatementContext, q: DriverQuery) -> Result | None:
    """The query's result, or None when the table holds more than ``cost.DRIVER_SCAN_MAX_ROWS`` rows (found while
    reading: the connector gives no estimate), which Spark then reads in parallel."""
    table = q.table
    session = ctx.session(table.catalog)
    columns = list(q.read)
    splits = q.splits
    if splits is None:
        splits = table.connector.get_split_manager().get_splits(
            session=session, table_handle=table.handle, columns=columns, constraint=q.constraint
        )
    schema = pa.schema([pa.field(c.name, c.type) for c in columns])
    pages = read_splits(table.connector, session, table.handle, columns, splits)
    if pages is None:
        return None
    ctx.scans.append({"table": table.full_name, "splits": len(splits)})
    rows = _one_batch(pages, schema)
    if q.where is not None and rows.num_rows:
        rows = rows.filter(pa.array(mask_of(q.where.fn(rows), rows.num_rows)))
    metrics = {"scans": list(ctx.scans), "tier": "driver"}
    if q.count is not None:
        field = pa.field(q.count, pa.int64(), nullable=False)
        return Result(
            statement="SELECT",
            table=pa.table([pa.array([rows.num_rows], pa.int64())], schema=pa.schema([field])),
            metrics=metrics,
        )
    if q.sort and rows.num_rows:
        rows = rows.take(_sort_indices(rows, q.sort, q.nulls))
    out = pa.Table.from_batches([rows]).select(list(q.output))
    return Result(statement="SELECT", table=out.cast(_result_schema(out.schema)), metrics=metrics)


def read_splits(
    connector: Connector,
    session: ConnectorSession,
    handle: ConnectorTableHandle,
    columns: Sequence[ColumnHandle],
    splits: Sequence[ConnectorSplit],
) -> list[pa.RecordBatch] | None:
    """Every non-empty page of ``splits``, in order, with exactly ``columns``; None once more than
    ``cost.DRIVER_SCAN_MAX_ROWS`` rows were read (the connectors give no estimate: Spark reads such a table)."""
    schema = pa.schema([pa.field(c.name, c.type) for c in columns])
    provider = connector.get_page_source_provider()
    pages: list[pa.RecordBatch] = []
    read = 0
    for split in splits:
        source = provider.create_page_source(session=session, split=split, table_handle=handle, columns=list(columns))
        try:
            for page in source:
                read += page.num_rows
                if read > cost.DRIVER_SCAN_MAX_ROWS:
                    return None
                if page.num_rows:
                    pages.append(conform_page(page, schema))
        finally:
            source.close()
    return pages


def _sort_indices(rows: pa.RecordBatch, keys: Sequence[tuple[str, str]], nulls: str) -> pa.Array:
    """The order of ``rows`` by ``keys`` with NULLs ``nulls`` (pyarrow 25 places NULLs per key; older ones once)."""
    if int(pa.__version__.split(".")[0]) >= 25:
        return pc.sort_indices(rows, sort_keys=[(name, order, nulls) for name, order in keys])
    return pc.sort_indices(rows, sort_keys=list(keys), null_placement=nulls)


def _one_batch(pages: Sequence[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    if not pages:
        return pa.RecordBatch.from_pylist([], schema)
    if len(pages) == 1:
        return pages[0]
    return pa.Table.from_batches(pages, schema).combine_chunks().to_batches()[0]


def _result_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow types the Spark tier's result has (the connector's types through Spark's)."""
    return pa.schema([pa.field(f.name, through_spark(f.type)) for f in schema])
