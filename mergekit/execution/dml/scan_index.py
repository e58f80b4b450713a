"""The driver tier's stand-in for an index: the target read whole through its splits, in the engine's process.

A MERGE of a few rows into a small table of a connector without an index (the memory connector, a connector's
first afternoon) is joined by Spark in a job that costs far more than reading the table. On the driver tier
:func:`scan_index` offers such a table as a :class:`~mergekit.spi.ConnectorResolvedIndex` whose lookup reads every
split of the snapshot ``begin_merge`` pinned (``get_splits``, the page source of each, with the row id column) and
keeps the rows whose key is one of the keys looked up, compared as the lookup join compares them. The MERGE then
runs as any MERGE by index lookups (:mod:`.lookup`): the same join, WHEN clauses, duplicate check, processor and
sink. A table Spark reads natively (``get_native_scan``: the journal's and merge tables' files) takes it only when
those files are local and hold at most ``cost.DRIVER_NATIVE_SCAN_MAX_BYTES``, as for a driver-tier query (its
splits describe every row, as the SPI requires); the read stops with :class:`TargetTooLarge` once it passes
``cost.DRIVER_SCAN_MAX_ROWS`` rows, and the statement is planned again for Spark (nothing was written: the
transaction is aborted).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.catalogs import ResolvedTable
from mergekit.execution.context import StatementContext
from mergekit.execution.driver_query import native_scan_bytes, read_splits
from mergekit.planner import cost
from mergekit.spi import (
    ColumnHandle,
    Connector,
    ConnectorIndex,
    ConnectorIndexHandle,
    ConnectorIndexProvider,
    ConnectorPageSource,
    ConnectorResolvedIndex,
    ConnectorSession,
    ConnectorTableHandle,
    Constraint,
)

__all__ = ["ScanIndexHandle", "ScanIndexProvider", "TargetTooLarge", "for_snapshot", "scan_index"]


class TargetTooLarge(Exception):
    """The target holds more rows than the driver tier reads: the statement is planned again, for Spark."""


@attrs.frozen
class ScanIndexHandle(ConnectorIndexHandle):
    """The table (the snapshot ``begin_merge`` pinned) a scan lookup reads, and the predicates every row the
    statement changes satisfies (its splits pruned by them, as the Spark tier's target scan is)."""

    table_handle: ConnectorTableHandle
    constraint: Constraint = Constraint()


@attrs.frozen(eq=False)
class ScanIndexProvider(ConnectorIndexProvider):
    """Lookups that read the whole table through the connector's splits (driver tier only: never pickled)."""

    connector: Connector
    splits: list[int] = attrs.field(factory=list)  # the splits each lookup read (the statement's scan metrics)

    def get_index(
        self,
        *,
        session: ConnectorSession,
        index_handle: ConnectorIndexHandle,
        lookup_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorIndex:
        assert isinstance(index_handle, ScanIndexHandle)
        return _ScanIndex(self, session, index_handle, lookup_columns[0], tuple(output_columns))


def scan_index(
    ctx: StatementContext, table: ResolvedTable, columns: Sequence[ColumnHandle]
) -> tuple[ConnectorResolvedIndex, ScanIndexProvider] | str:
    """The table as a scanned index for the driver tier, or why not (its rows are read by Spark)."""
    metadata = table.connector.get_metadata()
    session = ctx.session(table.catalog)
    try:
        native = metadata.get_native_scan(
            session=session, table_handle=table.handle, columns=list(columns), constraint=Constraint()
        )
    except Exception:
        return "the connector does not say how its rows are read"
    if native is not None:
        size = native_scan_bytes(native)
        if size is None or size > cost.DRIVER_NATIVE_SCAN_MAX_BYTES:
            return "the connector's files are read by Spark (remote, or more than the driver reads)"
    return ConnectorResolvedIndex(index_handle=ScanIndexHandle(table.handle)), ScanIndexProvider(table.connector)


def for_snapshot(
    resolved: ConnectorResolvedIndex, handle: ConnectorTableHandle, constraint: Constraint | None
) -> ConnectorResolvedIndex:
    """The scanned index of the snapshot ``begin_merge`` pinned, its splits pruned by ``constraint``."""
    return attrs.evolve(resolved, index_handle=ScanIndexHandle(handle, constraint or Constraint()))


class _ScanIndex(ConnectorIndex):
    def __init__(
        self,
        provider: ScanIndexProvider,
        session: ConnectorSession,
        handle: ScanIndexHandle,
        key: ColumnHandle,
        output: tuple[ColumnHandle, ...],
    ) -> None:
        self._provider, self._session, self._handle, self._key, self._output = provider, session, handle, key, output

    def lookup(self, keys: pa.Table) -> ConnectorPageSource:
        """The rows with one of ``keys``; with no keys at all, every row (an UPDATE or DELETE of the whole table)."""
        columns, connector, handle = list(self._output), self._provider.connector, self._handle
        splits = connector.get_split_manager().get_splits(
            session=self._session, table_handle=handle.table_handle, columns=columns, constraint=handle.constraint
        )
        self._provider.splits.append(len(splits))
        pages = read_splits(connector, self._session, handle.table_handle, columns, splits)
        if pages is None:
            raise TargetTooLarge()
        if keys.num_rows:
            wanted = keys.column(self._key.name)
            pages = [page.filter(pc.is_in(page.column(self._key.name), value_set=wanted)) for page in pages]
        return _Pages(pages)


class _Pages(ConnectorPageSource):
    def __init__(self, pages: list[pa.RecordBatch]) -> None:
        self._pages = pages

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from self._pages
