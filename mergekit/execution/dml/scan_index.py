"""The driver tier's stand-in for an index: the target read whole through its splits, in the engine's process.

A MERGE of a few rows into a small table of a connector without an index (the memory connector, a connector's
first afternoon) is joined by Spark in a job that costs far more than reading the table. On the driver tier
:func:`scan_index` offers such a table as a :class:`~mergekit.spi.ConnectorResolvedIndex` whose lookup reads every
split of the snapshot ``begin_merge`` pinned (``get_splits``, the page source of each, with the row id column) and
keeps the rows whose key is one of the keys looked up, compared as the lookup join compares them. The MERGE then
runs as any MERGE by index lookups (:mod:`.lookup`): the same join, WHEN clauses, duplicate check, processor and
sink. Only connectors whose tables are read through page sources take it (no ``get_native_scan``); the read stops
with :class:`TargetTooLarge` once it passes ``cost.DRIVER_SCAN_MAX_ROWS`` rows, and the statement is planned again
for Spark (nothing was written: the transaction is aborted).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.catalogs import ResolvedTable
from mergekit.execution.context import StatementContext
from mergekit.execution.driver_query import read_splits
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
    """The table (the snapshot ``begin_merge`` pinned) a scan lookup reads."""

    table_handle: ConnectorTableHandle


@attrs.frozen(eq=False)
class ScanIndexProvider(ConnectorIndexProvider):
    """Lookups that read the whole table through the connector's splits (driver tier only: never pickled)."""

    connector: Connector

    def get_index(
        self,
        *,
        session: ConnectorSession,
        index_handle: ConnectorIndexHandle,
        lookup_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorIndex:
        assert isinstance(index_handle, ScanIndexHandle)
        return _ScanIndex(self.connector, session, index_handle.table_handle, lookup_columns[0], tuple(output_columns))


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
        return "the connector's rows are read natively by Spark"
    return ConnectorResolvedIndex(index_handle=ScanIndexHandle(table.handle)), ScanIndexProvider(table.connector)


def for_snapshot(resolved: ConnectorResolvedIndex, handle: ConnectorTableHandle) -> ConnectorResolvedIndex:
    """The scanned index of the snapshot ``begin_merge`` pinned."""
    return attrs.evolve(resolved, index_handle=ScanIndexHandle(handle))


class _ScanIndex(ConnectorIndex):
    def __init__(
        self,
        connector: Connector,
        session: ConnectorSession,
        handle: ConnectorTableHandle,
        key: ColumnHandle,
        output: tuple[ColumnHandle, ...],
    ) -> None:
        self._connector, self._session, self._handle, self._key, self._output = connector, session, handle, key, output

    def lookup(self, keys: pa.Table) -> ConnectorPageSource:
        """The rows with one of ``keys``; with no keys at all, every row (an UPDATE or DELETE of the whole table)."""
        columns = list(self._output)
        splits = self._connector.get_split_manager().get_splits(
            session=self._session, table_handle=self._handle, columns=columns, constraint=Constraint()
        )
        pages = read_splits(self._connector, self._session, self._handle, columns, splits)
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
