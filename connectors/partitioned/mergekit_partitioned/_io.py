"""Executor side: reading children (page sources) and routing merge pages to children's sinks.

The merge sink of a merge table owns one base merge sink per child it writes to. For every page it

* routes INSERT and UPDATE_INSERT rows by their partition keys (the ``ON`` column's values, or the computed
  channels the engine appended for ``USING`` expressions): a row goes to the leaf whose bounds hold its key at
  every level; a row no leaf holds fails the whole statement with ``PARTITION_NOT_FOUND`` (MonetDB's wording);
* routes DELETE and UPDATE_DELETE rows by their row id ``{leaf, row}`` to the leaf they were read from,
  with the base's own row id;

so an UPDATE that changes the partition key deletes the row in its old child and inserts it in the new
one, and ``finish_merge`` commits both children in one atomic commit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnHandle,
    ConnectorMergeSink,
    ConnectorPageSinkProvider,
    ConnectorPageSource,
    ConnectorPageSourceProvider,
    ConnectorSession,
    MergeOperation,
    PartitionBounds,
    PartitionMethod,
)

from ._handles import (
    ROW_ID,
    Level,
    MemberTableHandle,
    MergeTableHandle,
    PartitionedFragment,
    PartitionedMergeHandle,
    PartitionedSplit,
    SystemSplit,
    key_column,
)

__all__ = ["LeafSource", "PartitionedPageSourceProvider", "PartitionedPageSinkProvider"]


# ---- reads ---------------------------------------------------------------------------------------------


class _Batches(ConnectorPageSource):
    def __init__(self, batches: Sequence[pa.RecordBatch]) -> None:
        self._batches = batches

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from self._batches


class LeafSource(ConnectorPageSource):
    """A child's pages (a split's or an index lookup's), with the child's row id wrapped as ``{leaf, row}`` when
    ``wrap`` (the merge table's row id was asked for)."""

    def __init__(self, inner: ConnectorPageSource, leaf_id: int, columns: Sequence[ColumnHandle], wrap: bool) -> None:
        self._inner = inner
        self._leaf_id = leaf_id
        self._columns = list(columns)
        self._wrap = wrap

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for page in self._inner:
            if not self._wrap:
                yield page
                continue
            arrays = []
            for i, c in enumerate(self._columns):
                col = page.column(i)
                if c.name == ROW_ID:
                    leaf = pa.repeat(pa.scalar(self._leaf_id, pa.int64()), page.num_rows)
                    col = pa.StructArray.from_arrays([leaf, col], fields=list(c.type))
                arrays.append(col)
            yield pa.RecordBatch.from_arrays(
                arrays, schema=pa.schema([pa.field(c.name, c.type) for c in self._columns])
            )

    def close(self) -> None:
        self._inner.close()


class PartitionedPageSourceProvider(ConnectorPageSourceProvider):
    def __init__(self, base: ConnectorPageSourceProvider) -> None:
        self.base = base

    def create_page_source(
        self, *, session: ConnectorSession, split: Any, table_handle: Any, columns: Sequence[ColumnHandle]
    ) -> ConnectorPageSource:
        if isinstance(split, SystemSplit):
            table = pa.ipc.open_stream(split.rows).read_all()
            table = table.select([c.name for c in columns])
            return _Batches(table.to_batches())
        if isinstance(split, PartitionedSplit):
            base_columns = [split.base_row_id if c.name == ROW_ID else c for c in columns]
            inner = self.base.create_page_source(
                session=session, split=split.base_split, table_handle=split.base_handle, columns=base_columns
            )
            return LeafSource(inner, split.leaf_id, columns, split.base_row_id is not None)
        if isinstance(table_handle, MemberTableHandle):
            table_handle = table_handle.base
        return self.base.create_page_source(session=session, split=split, table_handle=table_handle, columns=columns)


# ---- writes ----------------------------------------------------------------------------------------------


def _domain(level: Level) -> str:
    return (
        "partition range (NB higher limit exclusive) of values"
        if level.scheme.method is PartitionMethod.RANGE
        else "partition list of values"
    )


class PartitionedPageSinkProvider(ConnectorPageSinkProvider):
    def __init__(self, base: ConnectorPageSinkProvider) -> None:
        self.base = base

    def create_merge_sink(self, *, session: ConnectorSession, merge_handle: Any, sink_id: int) -> ConnectorMergeSink:
        if not isinstance(merge_handle, PartitionedMergeHandle):
            return self.base.create_merge_sink(session=session, merge_handle=merge_handle, sink_id=sink_id)
        return PartitionedMergeSink(self.base, session, merge_handle, sink_id)


class PartitionedMergeSink(ConnectorMergeSink):
    def __init__(
        self, base: ConnectorPageSinkProvider, session: ConnectorSession, handle: PartitionedMergeHandle, sink_id: int
    ) -> None:
        self._base = base
        self._session = session
        self._handle = handle
        self._sink_id = sink_id
        self._children = dict(handle.children)
        self._sinks: dict[int, ConnectorMergeSink] = {}
        target = handle.table_handle
        self._target = target
        self._n = len(handle.data_columns)
        levels = list(target.levels) if isinstance(target, MergeTableHandle) else []
        levels += [lvl for lvl, _ in target.checks] if isinstance(target, MergeTableHandle | MemberTableHandle) else []
        self._schemes = {lvl.table_id: lvl.scheme for lvl in levels}

    def _sink(self, leaf_id: int) -> ConnectorMergeSink:
        sink = self._sinks.get(leaf_id)
        if sink is None:
            sink = self._base.create_merge_sink(
                session=self._session, merge_handle=self._children[leaf_id], sink_id=self._sink_id
            )
            self._sinks[leaf_id] = sink
        return sink

    def _key(self, page: pa.RecordBatch, table_id: int) -> pa.Array:
        """The partition key of merge table ``table_id`` for every row: its computed channel when the insert
        layout declared one (a ``USING`` expression), else the ``ON`` column's new values."""
        name = key_column(table_id)
        if name in page.schema.names:
            return page.column(name)
        scheme = self._schemes[table_id]
        assert scheme.column is not None  # the layout computes every other key
        return page.column(scheme.column).cast(scheme.key_type)

    def _check_enclosing(self, page: pa.RecordBatch, mask: pa.Array, what: str) -> None:
        """Rows written straight into a child (or nested merge table) must fit its bounds at every level above."""
        for level, bounds in self._target.checks:  # type: ignore[union-attr]
            fits = bounds.matches(self._key(page, level.table_id))
            bad = pc.and_(mask, pc.invert(fits))
            if pc.any(bad).as_py():
                kind = "range" if level.scheme.method is PartitionMethod.RANGE else "list"
                if what == "UPDATE":
                    raise MergekitError(
                        ErrorCode.PARTITION_NOT_FOUND,
                        f"UPDATE: Update on the partitioned column is not possible at the moment: table "
                        f"{self._target.table} is part of merge table {level.name} and the new values violate the "
                        f"partition {kind} of values (update through {level.name} to move rows between partitions)",
                    )
                raise MergekitError(
                    ErrorCode.PARTITION_NOT_FOUND,
                    f"INSERT: table {self._target.table} is part of merge table {level.name} and the insert violates "
                    f"the partition {kind} of values",
                )

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        if page.num_rows == 0:
            return
        n = self._n
        ops = page.column(n)
        data_and_trailing = page.select(list(range(n + 3)))
        if isinstance(self._target, MemberTableHandle):
            self._check_enclosing(page, pc.equal(ops, MergeOperation.INSERT), "INSERT")
            self._check_enclosing(
                page,
                pc.is_in(ops, value_set=pa.array([MergeOperation.UPDATE, MergeOperation.UPDATE_INSERT], pa.int8())),
                "UPDATE",
            )
            self._sink(0).store_merged_rows(data_and_trailing)
            return
        target = self._target
        assert isinstance(target, MergeTableHandle)
        inserts = pc.is_in(ops, value_set=pa.array([MergeOperation.INSERT, MergeOperation.UPDATE_INSERT], pa.int8()))
        self._check_enclosing(page, pc.equal(ops, MergeOperation.INSERT), "INSERT")
        self._check_enclosing(page, pc.is_in(ops, value_set=pa.array([4], pa.int8())), "UPDATE")
        leaf_of = pa.nulls(page.num_rows, pa.int64())
        bounds_cache: dict[tuple[int, int], pa.Array] = {}
        for leaf in target.leaves:
            mask = inserts
            for table_id, bounds in leaf.path:
                key = (table_id, id(bounds))
                if key not in bounds_cache:
                    bounds_cache[key] = _fits(bounds, self._key(page, table_id))
                mask = pc.and_(mask, bounds_cache[key])
            leaf_of = pc.if_else(mask, pa.scalar(leaf.leaf_id, pa.int64()), leaf_of)
        unrouted = pc.and_(inserts, pc.is_null(leaf_of))
        if pc.any(unrouted).as_py():
            top = next(lvl for lvl in target.levels if lvl.table_id == target.table_id)
            moved = pc.any(pc.and_(unrouted, pc.equal(ops, MergeOperation.UPDATE_INSERT))).as_py()
            verb = "UPDATE: the update" if moved else "INSERT: the insert"
            raise MergekitError(ErrorCode.PARTITION_NOT_FOUND, f"{verb} violates the {_domain(top)}")
        deletes = pc.invert(inserts)
        row_id = page.column(n + 2)
        if isinstance(row_id, pa.ChunkedArray):
            row_id = row_id.combine_chunks()
        if pc.any(deletes).as_py():
            leaf_of = pc.if_else(deletes, row_id.field("leaf"), leaf_of)
        base_row_ids = row_id.field("row")
        base_type = self._handle.base_row_id_type or base_row_ids.type
        arrays = [data_and_trailing.column(i) for i in range(n + 2)]
        arrays.append(pc.if_else(deletes, base_row_ids, pa.nulls(page.num_rows, base_type)).cast(base_type))
        names = [*data_and_trailing.schema.names]
        child_page = pa.RecordBatch.from_arrays(arrays, names=names)
        for leaf_id in pc.unique(leaf_of).to_pylist():
            if leaf_id is None:
                continue
            part = child_page.filter(pc.equal(leaf_of, leaf_id))
            if part.num_rows:
                self._sink(leaf_id).store_merged_rows(part)

    def finish(self) -> Sequence[Any]:
        out = []
        for leaf_id, sink in self._sinks.items():
            out.append(PartitionedFragment(leaf_id=leaf_id, fragments=tuple(sink.finish())))
        return out

    def abort(self) -> None:
        for sink in self._sinks.values():
            try:
                sink.abort()
            except Exception:  # abort every child even if one fails
                pass


def _fits(bounds: PartitionBounds, keys: pa.Array | pa.ChunkedArray) -> pa.Array:
    return bounds.matches(keys)
