"""The journal's index on its key: the latest rows of a share of a MERGE source's keys, read on an executor.

The driver resolves the index once per statement (``JournalMetadata.resolve_index``): the snapshot's files with
their key ranges. A lookup then plans, in the task, exactly what a keyed scan plans on the driver
(``keyed_splits``: base files read plainly for the wanted keys their ranges can hold, the keys the deltas touch
resolved in the deltas) and runs those splits' page sources one after the other. Nothing about the source's
keys goes through the driver, and the target rows never leave the task that joins them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnHandle,
    ConnectorIndex,
    ConnectorIndexHandle,
    ConnectorIndexProvider,
    ConnectorPageSource,
    ConnectorSession,
)

from ._handles import JournalTableHandle
from ._metadata import FileRow, keyed_splits
from ._read import JournalPageSource

__all__ = ["JournalIndexHandle", "JournalIndexProvider", "JournalIndex", "partition_points", "key_range"]


@attrs.frozen(kw_only=True)
class JournalIndexHandle(ConnectorIndexHandle):
    """The snapshot's files (catalog rows with key ranges) of a table with a single-column key."""

    table_handle: JournalTableHandle
    files: tuple[FileRow, ...] = attrs.field(converter=tuple)


class JournalIndexProvider(ConnectorIndexProvider):
    """Picklable: holds only the warehouse URI."""

    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse

    def get_index(
        self,
        *,
        session: ConnectorSession,
        index_handle: Any,
        lookup_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorIndex:
        if not isinstance(index_handle, JournalIndexHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a journal index handle: {index_handle!r}")
        return JournalIndex(self.warehouse, index_handle, output_columns)


class JournalIndex(ConnectorIndex):
    def __init__(self, warehouse: str, handle: JournalIndexHandle, columns: Sequence[ColumnHandle]) -> None:
        self._warehouse = warehouse
        self._handle = handle
        self._columns = list(columns)

    def lookup(self, keys: pa.Table) -> ConnectorPageSource:
        spec = self._handle.table_handle.spec
        values = keys.column(0).combine_chunks()
        splits = keyed_splits(self._warehouse, spec, self._handle.files, values) if len(values) else []
        return _Lookup(
            [JournalPageSource(self._warehouse, s, self._handle.table_handle, self._columns) for s in splits]
        )


class _Lookup(ConnectorPageSource):
    def __init__(self, sources: list[JournalPageSource]) -> None:
        self._sources = sources

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for source in self._sources:
            try:
                yield from source
            finally:
                source.close()


def partition_points(files: Sequence[FileRow]) -> tuple[Any, ...]:
    """Where to cut the key space between files: the lowest key of each file after the first, when the
    files' key ranges (in key order) do not overlap; else none. Files of a bulk load or a compaction are
    disjoint ranges of about the same size, so lookups of keys between two points read one file."""
    ranged = sorted((f for f in files if f.key_min is not None and f.row_count), key=lambda f: f.key_min)
    points: list[Any] = []
    for before, after in zip(ranged, ranged[1:], strict=False):
        if not after.key_min > before.key_max:
            return ()
        points.append(after.key_min)
    return tuple(points)


def key_range(files: Sequence[FileRow]) -> tuple[Any, Any] | None:
    """Bounds of the first key column over every file (tombstones included: a lookup of a deleted key
    reads its file too), or None when a file with rows has no statistics."""
    ranged = [f for f in files if f.row_count]
    if not ranged or any(f.key_min is None or f.key_max is None for f in ranged):
        return None
    return min(f.key_min for f in ranged), max(f.key_max for f in ranged)
