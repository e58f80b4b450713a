"""The index of a merge table: its children's indexes, each key looked up in the children that may hold it.

``ReadMetadata.resolve_index`` resolves the base connector's index of every leaf on the driver (a merge table has an
index only when all of them have one) into a ``PartitionedIndexHandle``: per leaf, the base's index handle, the
base's handles of the columns asked for (the merge table's row id replaced by the leaf's own) and the leaf's bounds
at every level partitioned ``ON`` the key column. On an executor a lookup sends each key only to the leaves whose
bounds hold it (every leaf, when no level is partitioned on the key) and yields their rows one leaf after the
other, with the row id wrapped as ``{leaf, row}`` exactly as the merge table's scan wraps it (``LeafSource``), so
the merge sink routes a changed row back to its leaf.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ChainedPageSource,
    ColumnHandle,
    ConnectorIndex,
    ConnectorIndexHandle,
    ConnectorIndexProvider,
    ConnectorPageSource,
    ConnectorSession,
    PartitionBounds,
)

from ._handles import ROW_ID
from ._io import LeafSource

__all__ = ["LeafIndex", "PartitionedIndexHandle", "PartitionedIndexProvider"]


@attrs.frozen(kw_only=True)
class LeafIndex:
    """One leaf's part of a merge table's index. ``columns``: the base's handle of each column by the merge table's
    name (``$partition_row_id``: the leaf's own row id); ``routes``: the leaf's bounds at each level partitioned on
    the key column (a key outside any of them is not looked up here)."""

    leaf_id: int
    index_handle: ConnectorIndexHandle
    columns: tuple[tuple[str, ColumnHandle], ...] = attrs.field(converter=tuple)
    routes: tuple[PartitionBounds, ...] = attrs.field(converter=tuple)


@attrs.frozen(kw_only=True)
class PartitionedIndexHandle(ConnectorIndexHandle):
    """A merge table's index on column ``key``: every leaf's."""

    key: str
    leaves: tuple[LeafIndex, ...] = attrs.field(converter=tuple)


class PartitionedIndexProvider(ConnectorIndexProvider):
    """Picklable: the base's provider (None: a base without indexes, whose tables never resolve one)."""

    def __init__(self, base: ConnectorIndexProvider | None) -> None:
        self.base = base

    def get_index(
        self,
        *,
        session: ConnectorSession,
        index_handle: Any,
        lookup_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorIndex:
        """A merge table's index (``PartitionedIndexHandle``), else the base's (a plain table)."""
        if self.base is None:
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "The base connector has no index")
        if isinstance(index_handle, PartitionedIndexHandle):
            return MergeTableIndex(self.base, session, index_handle, output_columns)
        return self.base.get_index(
            session=session, index_handle=index_handle, lookup_columns=lookup_columns, output_columns=output_columns
        )


class MergeTableIndex(ConnectorIndex):
    def __init__(
        self,
        base: ConnectorIndexProvider,
        session: ConnectorSession,
        handle: PartitionedIndexHandle,
        columns: Sequence[ColumnHandle],
    ) -> None:
        self._base = base
        self._session = session
        self._handle = handle
        self._columns = list(columns)

    def lookup(self, keys: pa.Table) -> ConnectorPageSource:
        values = keys.column(0).combine_chunks()
        sources: list[ConnectorPageSource] = []
        for leaf in self._handle.leaves:
            mask = None
            for bounds in leaf.routes:
                inside = bounds.matches(values)
                mask = inside if mask is None else pc.and_(mask, inside)
            wanted = values if mask is None else values.filter(mask)
            if len(wanted):
                sources.append(_LeafLookup(self._base, self._session, self._handle.key, leaf, self._columns, wanted))
        return ChainedPageSource(sources)


class _LeafLookup(ConnectorPageSource):
    """One leaf's rows of some keys: its base index is asked when the pages are first read (``ChainedPageSource``
    opens sources lazily), its row ids wrapped as the merge table's scan wraps them."""

    def __init__(
        self,
        base: ConnectorIndexProvider,
        session: ConnectorSession,
        key: str,
        leaf: LeafIndex,
        columns: Sequence[ColumnHandle],
        keys: pa.Array,
    ) -> None:
        self._base = base
        self._session = session
        self._key = key
        self._leaf = leaf
        self._columns = list(columns)
        self._keys = keys
        self._source: ConnectorPageSource | None = None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        own = dict(self._leaf.columns)
        key = own[self._key]
        index = self._base.get_index(
            session=self._session,
            index_handle=self._leaf.index_handle,
            lookup_columns=(key,),
            output_columns=[own.get(c.name, c) for c in self._columns],
        )
        inner = index.lookup(pa.table({key.name: self._keys.cast(key.type)}))
        self._source = LeafSource(
            inner, self._leaf.leaf_id, self._columns, any(c.name == ROW_ID for c in self._columns)
        )
        yield from self._source

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
