"""Page sources: read the files of one split on an executor.

The split's ``mode`` (chosen by the split manager on the driver from catalog statistics) decides how much
work a read does. ``plain`` splits hold files no later commit can have superseded, so they are read file by
file, dropping tombstones, with no version resolution at all: that is the whole cost of reading a table
that was only ever inserted into, or was just compacted. Only ``resolve`` splits pay for the seed's
``MAX(version_number) OVER (PARTITION BY key)``, and only over the files that may hold several versions of
a key.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnHandle, ConnectorPageSource, ConnectorPageSourceProvider, ConnectorSession

from .._handles import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    OP_COLUMN,
    ROW_KEY,
    JournalSplit,
    JournalTableHandle,
    TableSpec,
)
from .storage import KeyFilter, S, V, concat, empty_table, live_rows, read_versioned

__all__ = ["JournalPageSourceProvider", "JournalPageSource", "project"]

_BATCH_ROWS = 65536
_CHANGE_NAMES = {1: "insert", 4: "insert", 3: "update", 2: "delete", 5: "delete"}
_LIVE_OPS = [1, 3, 4]  # the operations whose rows a change stream holds: inserts, updates' new rows, moved keys


class JournalPageSourceProvider(ConnectorPageSourceProvider):
    """Picklable: holds only the warehouse URI."""

    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse

    def create_page_source(
        self,
        *,
        session: ConnectorSession,
        split: Any,
        table_handle: Any,
        columns: Sequence[ColumnHandle],
    ) -> ConnectorPageSource:
        if not isinstance(split, JournalSplit) or not isinstance(table_handle, JournalTableHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "Not a journal split or table handle")
        return JournalPageSource(self.warehouse, split, table_handle, columns)


def _stored_columns(spec: TableSpec, columns: Sequence[ColumnHandle]) -> list[str]:
    """The file columns needed to produce ``columns`` (key columns always: resolution needs them)."""
    stored = {c.name for c in spec.columns}
    needed = [c.name for c in columns if c.name in stored]
    return list(dict.fromkeys([*spec.key, *needed]))


def _version_values(spec: TableSpec, values: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    return values.cast(spec.version_arrow_type)


def project(
    table: pa.Table,
    spec: TableSpec,
    columns: Sequence[ColumnHandle],
    *,
    change_type: pa.ChunkedArray | pa.Array | None = None,
    commit_version: int | None = None,
    committed_at: int | None = None,
) -> pa.Table:
    """Build exactly the requested columns, in order, from a versioned table (see ``read_versioned``)."""
    n = table.num_rows
    arrays = []
    for handle in columns:
        name = handle.name
        if name == ROW_KEY:
            arr: Any = pa.StructArray.from_arrays(
                [table.column(k).combine_chunks() for k in spec.key], names=list(spec.key)
            )
        elif name == spec.version_field:
            arr = _version_values(spec, table.column(V))
        elif name == spec.subsequent_field:
            arr = _version_values(spec, table.column(S))
        elif name == CHANGE_TYPE:
            arr = change_type if change_type is not None else pa.nulls(n, pa.string())
        elif name == COMMIT_VERSION:
            arr = pa.repeat(pa.scalar(commit_version, pa.int64()), n)
        elif name == COMMIT_TIMESTAMP:
            arr = pa.repeat(pa.scalar(committed_at, pa.int64()), n).cast(pa.timestamp("us", tz="UTC"))
        elif name in table.column_names:
            arr = table.column(name)
        else:
            raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{name}' cannot be resolved")
        if arr.type != handle.type:
            arr = arr.cast(handle.type)
        arrays.append(arr)
    schema = pa.schema([pa.field(c.name, c.type) for c in columns])
    return pa.Table.from_arrays(arrays, schema=schema)


def _change_types(ops: pa.ChunkedArray) -> pa.Array:
    keys = pa.array(list(_CHANGE_NAMES), pa.int8())
    names = pa.array(list(_CHANGE_NAMES.values()), pa.string())
    return pc.take(names, pc.index_in(ops, value_set=keys))


class JournalPageSource(ConnectorPageSource):
    def __init__(
        self, warehouse: str, split: JournalSplit, handle: JournalTableHandle, columns: Sequence[ColumnHandle]
    ) -> None:
        self._warehouse = warehouse
        self._split = split
        self._handle = handle
        self._columns = list(columns)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for table in self._tables():
            if table.num_rows:
                yield from table.combine_chunks().to_batches(max_chunksize=_BATCH_ROWS)

    def _tables(self) -> Iterator[pa.Table]:
        split, spec = self._split, self._handle.spec
        stored = _stored_columns(spec, self._columns)
        label = None
        if split.change_label is not None:
            label = {
                "change_type": None,
                "commit_version": split.change_seq,
                "committed_at": split.change_committed_at,
            }
        keys = None
        if split.key_values is not None:
            keys = KeyFilter(spec.key[0], split.key_values, exclude=split.exclude_keys)
        if split.mode == "plain":
            for ref in split.files:
                t = read_versioned(self._warehouse, spec, ref, stored, filter_live=True, keys=keys, threads=False)
                yield self._labelled(t, label)
        elif split.mode == "resolve":
            t = concat(
                self._bucketed(read_versioned(self._warehouse, spec, ref, stored, keys=keys, threads=False))
                for ref in split.files
            )
            if t is not None:
                yield self._labelled(live_rows(t, spec.key), label)
        elif split.mode == "journal":
            for ref in split.files:
                t = read_versioned(self._warehouse, spec, ref, stored)
                yield project(t, spec, self._columns)
        elif split.mode == "stream":
            yield self._stream_commit()
        elif split.mode in ("changes", "feed"):
            for ref in split.files:
                t = read_versioned(self._warehouse, spec, ref, stored)
                if split.mode == "feed":  # a change stream: the rows the commit made live (``_streams.change_feed``)
                    t = t.filter(pc.is_in(t.column(OP_COLUMN), value_set=pa.array(_LIVE_OPS, pa.int8())))
                yield project(
                    t,
                    spec,
                    self._columns,
                    change_type=_change_types(t.column(OP_COLUMN)),
                    commit_version=ref.seq,
                    committed_at=ref.committed_at,
                )
        else:
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Unknown journal split mode {split.mode}")

    def _stream_commit(self) -> pa.Table:
        """The rows of one commit of a stream (all its files, in the order its sinks wrote them), sorted stably
        by the stream's first monotonic column: a commit's sinks each sort nothing, so this is where a commit's
        rows are put in order."""
        spec = self._handle.spec
        first = spec.stream.monotonic[0] if spec.stream is not None and spec.stream.monotonic else None
        stored = {c.name for c in spec.columns}
        needed = [c.name for c in self._columns if c.name in stored]
        if first is not None:
            needed.append(first.name)
        if any(c.name == ROW_KEY for c in self._columns):
            needed.extend(spec.key)
        needed = list(dict.fromkeys(needed))
        t = concat(read_versioned(self._warehouse, spec, ref, needed, threads=False) for ref in self._split.files)
        if t is None:
            t = empty_table(spec, [*needed, V, S])
        elif first is not None and t.num_rows > 1:
            order = "descending" if first.descending else "ascending"
            t = t.take(pc.sort_indices(t, sort_keys=[(first.name, order)]))  # a stable sort
        return project(t, spec, self._columns)

    def _bucketed(self, t: pa.Table) -> pa.Table:
        """The rows of this split's key bucket (all rows without a bucket)."""
        if self._split.bucket is None or not t.num_rows:
            return t
        index, count = self._split.bucket
        keys = t.column(self._handle.spec.key[0]).cast(pa.int64())
        remainder = pc.abs(pc.subtract(keys, pc.multiply(pc.divide(keys, count), count)))  # |key mod count|
        return t.filter(pc.equal(remainder, index))

    def _labelled(self, t: pa.Table, label: dict[str, Any] | None) -> pa.Table:
        if label is None:
            return project(t, self._handle.spec, self._columns)
        change = pa.repeat(pa.scalar(self._split.change_label, pa.string()), t.num_rows)
        return project(
            t,
            self._handle.spec,
            self._columns,
            change_type=change,
            commit_version=label["commit_version"],
            committed_at=label["committed_at"],
        )
