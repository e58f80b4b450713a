"""Streams (seed 001): ``CREATE STREAM``, and ``SELECT STREAM`` run to the end of the input available now (a
*bounded run*: what a continuously running query would have emitted by now, plus what the end of input
releases).

A bounded run reads each stream through the connector's ``get_stream_splits``: Spark partitions of consecutive commits,
in commit order, the rows of a commit in the order it stored them (sorted by the stream's first monotonic
column). A stateless query (filters, projections, sub-queries) keeps that order, so its rows come back in
arrival order, as a streaming query emits them.
"""

from __future__ import annotations

import datetime
from typing import Any

import attrs

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable, version_of
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.ddl.statements import create_table
from mergekit.execution.scan import scan_stream
from mergekit.result import Result
from mergekit.spi import ColumnHandle, MonotonicColumn, StreamDefinition, sql_type_name

__all__ = ["create_stream", "check_query_modality", "kind_of", "run_stream_query", "stream_table"]


def create_stream(ctx: StatementContext, st: msql.CreateStream) -> Result:
    """CREATE STREAM: a TIMESTAMP column named ``rowtime`` is monotonic unless ``MONOTONIC`` names others (then
    it comes first among them unless declared itself); ``slack`` is an interval (temporal column) or an integer."""
    types = {c.name: c.type_text.lower() for c in st.table.columns}
    declared = list(st.monotonic)
    if "rowtime" in types and types["rowtime"].startswith("timestamp") and "rowtime" not in {n for n, _ in declared}:
        declared.insert(0, ("rowtime", False))
    for name, _ in declared:
        kind = types[name]
        if not (kind.startswith(("timestamp", "date", "int", "bigint", "smallint", "tinyint"))):
            raise MergekitError(
                ErrorCode.TYPE_MISMATCH, f"Monotonic column '{name}' must be a timestamp, date or integer, not {kind}"
            )
    slack = _slack(ctx, st.slack, types[declared[0][0]] if declared else None)
    definition = StreamDefinition(
        monotonic=tuple(MonotonicColumn(name=n, descending=d) for n, d in declared), slack=slack, history=st.history
    )
    return create_table(ctx, st.table, stream=definition)


def _slack(
    ctx: StatementContext, expr: msql.Expression | None, column_type: str | None
) -> datetime.timedelta | int | None:
    if expr is None:
        return None
    if column_type is None:
        raise MergekitError(ErrorCode.INVALID_TABLE_PROPERTY, "Stream option 'slack' needs a monotonic column")
    value = ctx.spark.sql(f"SELECT {ctx.render(expr)}").collect()[0][0]
    temporal = column_type.startswith(("timestamp", "date"))
    if temporal and isinstance(value, datetime.timedelta) and value >= datetime.timedelta(0):
        return value
    if not temporal and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    wanted = "a non-negative INTERVAL" if temporal else "a non-negative integer"
    raise MergekitError(ErrorCode.INVALID_TABLE_PROPERTY, f"Stream option 'slack' must be {wanted}, got {value!r}")


def _kind(ctx: StatementContext, ref: msql.TableRef) -> msql.ObjectInfo:
    if ref.is_change_feed or ".".join(ref.name.parts) in ctx.dataframes:
        return msql.ObjectInfo(msql.ObjectKind.TABLE)
    table = ctx.resolved.get(ref)
    if table is None:
        table = ctx.resolved[ref] = ctx.resolve(ref.name, version=version_of(ref))
    stream = table.metadata.stream or table.metadata.change_stream  # (a table whose change feed is a stream)
    if stream is None:
        return msql.ObjectInfo(msql.ObjectKind.TABLE)
    kind = msql.ObjectKind.BOTH if stream.history else msql.ObjectKind.STREAM
    return msql.ObjectInfo(kind, tuple((m.name, m.descending) for m in stream.monotonic))


kind_of = _kind  # what a table reference is (table, stream, both), for the continuous runs


def check_query_modality(ctx: StatementContext, st: msql.Query) -> bool:
    """The modality rules (``mergekit.sql`` ``check_modality``): True for a streaming query."""
    return msql.check_modality(st, lambda ref: _kind(ctx, ref))


def run_stream_query(ctx: StatementContext, st: msql.Query) -> Result:
    """A bounded run of ``SELECT STREAM``: every stream read from its first retained commit to its latest."""
    commits = 0
    for ref in st.table_refs():
        if ref in ctx.views or _kind(ctx, ref).kind is msql.ObjectKind.TABLE:
            continue
        commits += _bind_stream(ctx, ref, ctx.resolved[ref])
    order = msql.emission_order(st, lambda ref: _kind(ctx, ref))
    # streaming OVER windows: named windows inlined, the implicit ORDER BY (mergekit.sql.streaming.over)
    sql = ctx.render(msql.prepare_stream_query(st, lambda ref: _kind(ctx, ref)))
    if order:  # a stateful query: its rows in the order a running query emits them
        sql = f"SELECT * FROM ({sql}) ORDER BY {', '.join(str(i) for i in order)}"
    df = ctx.spark.sql(sql)
    return Result(statement="SELECT STREAM", table=df.toArrow(), metrics={"scans": list(ctx.scans), "commits": commits})


def stream_table(ctx: StatementContext, table: ResolvedTable) -> ResolvedTable:
    """What a streaming query reads for ``table``: the stream itself, or for a table whose change feed is a stream
    (``ConnectorTableMetadata.change_stream``) its change feed: the handle of ``get_changes_handle`` from version 0
    and that handle's columns, with ``stream`` set to the change stream's definition."""
    change = table.metadata.change_stream
    if table.metadata.stream is not None or change is None:
        return table
    meta = table.connector.get_metadata()
    session = ctx.session(table.catalog)
    handle = meta.get_changes_handle(session=session, table=table.name, from_version=0)
    feed = meta.get_table_metadata(session=session, table_handle=handle)
    return attrs.evolve(table, handle=handle, metadata=attrs.evolve(feed, stream=change, change_stream=None))


def _bind_stream(ctx: StatementContext, ref: msql.TableRef, table: ResolvedTable) -> int:
    table = stream_table(ctx, table)
    meta = table.connector.get_metadata()
    session = ctx.session(table.catalog)
    visible = table.metadata.visible_columns
    handles = meta.get_column_handles(session=session, table_handle=table.handle)
    columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in visible]
    log = meta.get_stream_commits(session=session, table_handle=table.handle)
    splits: list[Any] = []
    if log:
        splits = list(
            meta.get_stream_splits(
                session=session, table_handle=table.handle, columns=columns, after=None, up_to=log[-1].version
            )
        )
    df = scan_stream(ctx.spark, table.connector, session, table.handle, columns, splits)
    ctx.resolved[ref] = table
    ctx.scans.append({"table": table.full_name, "stream": True, "splits": len(splits), "commits": len(log)})
    view = ctx.new_view(df, table.name.table)
    ctx.views[ref] = view
    ctx.schema[view] = {c.name: c.type_name or sql_type_name(c.type) for c in visible}
    return len(log)
