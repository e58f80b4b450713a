"""The journal's index on its key: the latest rows of a share of a MERGE source's keys, read on an executor.

The driver resolves the index once per statement (``JournalMetadata.resolve_index``): the snapshot's files with
their key ranges (``_index_handle``). A lookup then plans, in the task, exactly what a keyed scan plans on the driver
(``keyed_splits``: base files read plainly for the wanted keys their ranges can hold, the keys the deltas touch
resolved in the deltas) and runs those splits' page sources one after the other. Nothing about the source's
keys goes through the driver, and the target rows never leave the task that joins them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ChainedPageSource,
    ColumnHandle,
    ConnectorIndex,
    ConnectorIndexProvider,
    ConnectorPageSource,
    ConnectorSession,
)

from ._files.page_source import JournalPageSource
from ._index_handle import JournalIndexHandle
from ._scan_planning import keyed_splits

__all__ = ["JournalIndexProvider", "JournalIndex"]


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
        return ChainedPageSource(
            [JournalPageSource(self._warehouse, s, self._handle.table_handle, self._columns) for s in splits]
        )
