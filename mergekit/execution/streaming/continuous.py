"""Continuous runs of ``SELECT STREAM`` (``Engine.stream``, ``mergekit sql --follow``): the slice executor.

Spark Structured Streaming drives the micro-batches (:mod:`.source`: offsets are the streams' commit versions,
kept in a checkpoint); each micro-batch, in ``foreachBatch`` on the driver, evaluates the query as an ordinary
batch Spark query over a *slice* of the streams' logs (``mergekit.sql.continuous_shape`` tells which):

* stateless: each stream is bound to the rows of the commits the batch brings;
* keyed (a streaming aggregation or ORDER BY on a monotonic key ``key(m)``): with ``W`` the watermark (the
  stream's highest ``m`` so far minus its slack) before and after the batch, the batch emits the keys ``k`` with
  ``key(W_before) <= k < key(W_after)``: the stream is bound to just the rows with those keys, read from the
  first commit that still holds one (a commit whose highest value has a key below ``key(W_before)`` was fully
  emitted). A key is emitted once, when a later row shows that no more rows can have it.

A micro-batch's output depends only on its offsets, so a replayed batch emits the same rows (what makes streaming
jobs exactly once, :mod:`.jobs`).
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.lazy_pyspark import F
from mergekit.execution.scan import scan_stream
from mergekit.execution.types import spark_schema
from mergekit.execution.views import expand_statement_views
from mergekit.spi import ColumnHandle, ConnectorSession, StreamCommit, sql_type_name

from .streams import kind_of, stream_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["ContinuousQuery", "StreamHandle", "batch_ranges", "register_source", "start_commits_query"]

_registered: set[int] = set()
_register_lock = threading.Lock()


def register_source(spark: Any) -> None:
    """Register the ``mergekit_commits`` source with the session (once per Spark session)."""
    from .source import CommitsSource  # (a pyspark DataSource: imported when a stream first starts)

    with _register_lock:
        if id(spark) not in _registered:
            spark.dataSource.register(CommitsSource)
            _registered.add(id(spark))


@attrs.define
class _Stream:
    ref: msql.TableRef
    table: ResolvedTable
    session: ConnectorSession
    columns: list[ColumnHandle]


class ContinuousQuery:
    """A ``SELECT STREAM`` prepared for micro-batches: its shape and its streams (bound in the order of
    :attr:`streams`, the order of the source's ``stream`` numbers)."""

    def __init__(self, ctx: StatementContext, query: msql.Query) -> None:
        expanded = expand_statement_views(ctx, query)  # views become their queries (execution.views)
        assert isinstance(expanded, msql.Query)
        query = expanded
        if not msql.check_modality(query, lambda ref: kind_of(ctx, ref)):
            raise MergekitError(ErrorCode.STREAM_NOT_ALLOWED, "A continuous run needs a SELECT STREAM query")
        self.query = query
        self.shape = msql.continuous_shape(query, lambda ref: kind_of(ctx, ref))
        self.order = msql.emission_order(query, lambda ref: kind_of(ctx, ref))
        self._key_query: msql.Query | None = None  # keyed: each value's emission key (parsed once)
        self.streams: list[_Stream] = []
        for ref in query.table_refs():
            if ref in ctx.views or kind_of(ctx, ref).kind is msql.ObjectKind.TABLE:
                continue
            table = stream_table(ctx, ctx.resolved[ref])  # a table whose change feed is a stream: that feed
            session = ctx.session(table.catalog)
            meta = table.connector.get_metadata()
            handles = meta.get_column_handles(session=session, table_handle=table.handle)
            columns = [
                handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in table.metadata.visible_columns
            ]
            self.streams.append(_Stream(ref, table, session, columns))
        if not self.streams:
            raise MergekitError(ErrorCode.STREAM_NOT_ALLOWED, "A continuous run needs a stream to read")

    def payload(self, catalogs: Any) -> str:
        """The streaming source's option: how its worker reaches each stream (:mod:`.source`)."""
        specs = []
        for s in self.streams:
            spec = catalogs.spec(s.table.catalog)
            specs.append((s.table.catalog, spec if spec is not None else s.table.connector, s.session, s.table.handle))
        from .source import encode_streams

        try:
            return encode_streams(specs)
        except Exception as exc:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                "A continuous run needs its streams' catalogs configured by name and options (Engine(catalogs="
                f"{{'lake': {{'connector': ..., ...}}}})), or connectors that pickle: {exc}",
            ) from exc

    def emit(self, ctx: StatementContext, ranges: dict[int, tuple[int, int]]) -> DataFrame | None:
        """The rows one micro-batch emits (``ranges``: stream number -> (after, up_to) versions), or None."""
        if self.shape.keyed:
            return self._emit_keyed(ctx, ranges)
        for i, s in enumerate(self.streams):
            after, up_to = ranges.get(i, (0, 0))
            self._bind(ctx, s, after if after >= 0 else None, up_to, reading=up_to > after)
        return ctx.spark.sql(ctx.render(self.query))

    def _bind(
        self,
        ctx: StatementContext,
        s: _Stream,
        after: int | None,
        up_to: int,
        *,
        reading: bool = True,
        rows: Callable[[DataFrame], DataFrame] | None = None,
    ) -> None:
        meta = s.table.connector.get_metadata()
        splits: list[Any] = []
        if reading:
            splits = list(
                meta.get_stream_splits(
                    session=s.session, table_handle=s.table.handle, columns=s.columns, after=after, up_to=up_to
                )
            )
        df = scan_stream(ctx.spark, s.table.connector, s.session, s.table.handle, s.columns, splits)
        if rows is not None:
            df = rows(df)
        ctx.resolved[s.ref] = s.table
        ctx.scans.append({"table": s.table.full_name, "stream": True, "splits": len(splits)})
        view = ctx.new_view(df, s.table.name.table)
        ctx.views[s.ref] = view
        ctx.schema[view] = _schema(s)

    def _emit_keyed(self, ctx: StatementContext, ranges: dict[int, tuple[int, int]]) -> DataFrame | None:
        s = self.streams[0]
        if s.ref != self.shape.stream or 0 not in ranges:
            return None
        after, up_to = ranges[0]
        column = self.shape.column
        assert column is not None
        stream = s.table.metadata.stream
        slack = stream.slack if stream is not None else None
        commits = list(
            s.table.connector.get_metadata().get_stream_commits(
                session=s.session, table_handle=s.table.handle, up_to=up_to
            )
        )
        w_before = _watermark([c for c in commits if c.version <= after], column, slack)
        w_after = _watermark(commits, column, slack)
        if w_after is None:
            return None
        keys = self._keys(ctx, s, column, w_before, w_after, commits)
        k_before = keys.get("before")
        k_after = keys["after"]
        if k_before is not None and not k_after > k_before:
            return None  # no key closed
        first = next(
            (i for i, c in enumerate(commits) if k_before is None or _pending(keys.get(f"c{c.version}"), k_before)),
            len(commits),
        )
        read_after = commits[first - 1].version if first > 0 else None

        def only_emitted(rows: DataFrame) -> DataFrame:
            mapping = self._key_mapping(ctx, s, rows)
            key_type = mapping.schema["mk_k"].dataType
            cond = mapping["mk_k"] < F.lit(k_after).cast(key_type)
            if k_before is not None:
                cond = cond & (mapping["mk_k"] >= F.lit(k_before).cast(key_type))
            wanted = mapping.where(cond).select("mk_m")
            return rows.join(wanted, rows[column].eqNullSafe(wanted["mk_m"]), "left_semi")

        self._bind(ctx, s, read_after, up_to, rows=only_emitted)
        sql = ctx.render(self.query)
        if self.order:
            sql = f"SELECT * FROM ({sql}) ORDER BY {', '.join(str(i) for i in self.order)}"
        return ctx.spark.sql(sql)

    def _key_mapping(self, ctx: StatementContext, s: _Stream, values: DataFrame) -> DataFrame:
        """``(mk_m, mk_k)``: each distinct value of the monotonic column in ``values`` (a DataFrame with the
        stream's columns, or some of them) and its emission key, computed by the query's own key expression."""
        if self._key_query is None:
            column = self.shape.column
            query = msql.parse_statement(
                f'SELECT "{column}" AS mk_m, {self.shape.key_value} AS mk_k FROM mk_keys '
                f'GROUP BY "{column}", {self.shape.key_group}'
            )
            assert isinstance(query, msql.Query)
            self._key_query = query
        inner = StatementContext(ctx.spark, ctx.catalogs)
        view = ctx.new_view(values, "keys")  # dropped with the statement's other views
        inner.views[msql.TableRef(name=msql.QualifiedName(("mk_keys",)))] = view
        inner.schema[view] = _schema(s)
        return ctx.spark.sql(inner.render(self._key_query))

    def _keys(
        self,
        ctx: StatementContext,
        s: _Stream,
        column: str,
        w_before: Any,
        w_after: Any,
        commits: list[StreamCommit],
    ) -> dict[str, Any]:
        """The key of each value that decides emission: the watermarks before and after, each commit's highest."""
        col = next(c for c in s.columns if c.name == column)
        tags = (["before"] if w_before is not None else []) + ["after"] + [f"c{c.version}" for c in commits]
        values = ([w_before] if w_before is not None else []) + [w_after] + [c.high.get(column) for c in commits]
        table = pa.table({"mk_tag": pa.array(tags, pa.string()), column: pa.array(values, col.type)})
        bounds = _arrow_frame(ctx, table)
        mapping = self._key_mapping(ctx, s, bounds.select(column))
        joined = bounds.join(mapping, bounds[column].eqNullSafe(mapping["mk_m"])).select("mk_tag", "mk_k")
        return {row["mk_tag"]: row["mk_k"] for row in joined.collect()}


def batch_ranges(df: DataFrame) -> dict[int, tuple[int, int]]:
    """A micro-batch of the commits source (:mod:`.source`): stream number -> (after, up_to) versions."""
    return {int(r["stream"]): (int(r["after"]), int(r["up_to"])) for r in df.collect()}


def _pending(key: Any, emitted_below: Any) -> bool:
    """Whether a commit whose highest value has ``key`` may still hold rows not emitted yet (keys below
    ``emitted_below`` were all emitted); a commit without rows of the column is read to be safe."""
    return key is None or key >= emitted_below


def _schema(s: _Stream) -> dict[str, str]:
    """The SQL types of a stream's columns, for rendering a query over a view of it."""
    return {c.name: c.type_name or sql_type_name(c.type) for c in s.table.metadata.visible_columns}


def _arrow_frame(ctx: StatementContext, table: pa.Table) -> DataFrame:
    batches = table.to_batches()

    def produce(_: Any) -> Any:
        yield from batches

    return ctx.spark.range(1, numPartitions=1).mapInArrow(produce, spark_schema(table.schema))


def _watermark(commits: list[StreamCommit], column: str, slack: Any) -> Any:
    highs = [c.high.get(column) for c in commits if c.high.get(column) is not None]
    if not highs:
        return None
    high = max(highs)
    if slack:
        if isinstance(high, datetime.datetime | datetime.date) and not isinstance(slack, datetime.timedelta):
            return high
        return high - slack
    return high


@attrs.define
class StreamHandle:
    """A running continuous query or streaming job (``Engine.stream``, ``START STREAMING JOB``).

    ``stop()`` stops it (the micro-batch under way finishes first); ``await_termination(timeout)`` waits for it to
    stop (True when it has); ``process_all_available()`` waits until every commit available now is processed;
    ``progress`` lists one dict per micro-batch run (``batch``, ``commits``, ``rows`` and, for jobs, the
    statement's ``metrics``); ``rows()`` the rows emitted so far when no ``on_batch`` callback takes them;
    ``exception`` the error that stopped it, as a :class:`MergekitError`, or None."""

    name: str
    query: Any
    progress: list[dict[str, Any]] = attrs.field(factory=list)
    emitted: list[pa.Table] = attrs.field(factory=list)
    failure: list[BaseException] = attrs.field(factory=list)
    cleanup: Callable[[], None] | None = None  # removes a temporary checkpoint once stopped

    def stop(self) -> None:
        self.query.stop()
        self._cleanup()

    def await_termination(self, timeout: float | None = None) -> bool:
        try:
            if timeout is None:
                self.query.awaitTermination()
                done = True
            else:
                done = bool(self.query.awaitTermination(timeout))
        except Exception as exc:
            raise self._error(exc) from exc
        if done:
            self._cleanup()
        return done

    def _cleanup(self) -> None:
        if self.cleanup is not None and not self.query.isActive:
            self.cleanup()
            self.cleanup = None

    def process_all_available(self) -> None:
        try:
            self.query.processAllAvailable()
        except Exception as exc:
            raise self._error(exc) from exc

    @property
    def is_active(self) -> bool:
        return bool(self.query.isActive)

    @property
    def exception(self) -> MergekitError | None:
        if self.failure:
            return self._error(self.failure[-1])
        if self.query is not None and not self.query.isActive:  # died outside a batch (its source, Spark)
            died = self.query.exception()
            if died is not None:
                return self._error(died)
        return None

    def rows(self) -> pa.Table | None:
        if not self.emitted:
            return None
        return pa.concat_tables(self.emitted)

    def _error(self, exc: BaseException) -> MergekitError:
        if self.failure:
            exc = self.failure[-1]
        if isinstance(exc, MergekitError):
            return exc
        from mergekit.execution.failures import translate_error

        return translate_error(exc)


def start_commits_query(
    spark: Any,
    payload: str,
    on_batch: Callable[[DataFrame, int], None],
    *,
    checkpoint: str,
    trigger: str | None,
    name: str,
    max_commits: int | None = None,
) -> Any:
    """Start the Spark streaming query over the commits source: ``trigger`` a processing-time interval ("1
    second"), or None for everything available now, then stop (``Trigger.AvailableNow``); ``max_commits``: at
    most that many commits of each stream per micro-batch (Spark's ``maxFilesPerTrigger`` for commits)."""
    from .source import SOURCE_NAME

    register_source(spark)
    reader = spark.readStream.format(SOURCE_NAME).option("payload", payload)
    if max_commits:
        reader = reader.option("max_commits", str(int(max_commits)))
    df = reader.load()
    writer = df.writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint).queryName(name)
    writer = writer.trigger(availableNow=True) if trigger is None else writer.trigger(processingTime=trigger)
    return writer.start()
