"""The merge sink: turns merge pages into one new, immutable Parquet file per writer task.

A sink never decides versions and never touches the catalog. It writes rows with the operation that
produced them (``__mk_op``) into ``<table>/data/<merge_id>/``; ``finish_merge`` on the driver later gives
the whole file one commit version. That is how one statement writes exactly one version number although
its rows are written by many tasks in parallel, and why nothing is visible before the commit.

Row changes (paradigm CHANGE_ONLY_UPDATED_COLUMNS, row id = the key):

* INSERT (1): the row as given (a table without a declared key gets a fresh hidden ``_row_id``);
* DELETE (2): a tombstone: the row under its key, read later with ``subsequent_version_number`` equal to
  its version (the seed's DELETE);
* UPDATE (3) keeping the key: the new row; UPDATE changing a key column: a tombstone under the old key
  (operation 5) plus the new row under the new key (operation 4), so the old key disappears instead of
  staying live as it does in the seed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ConnectorMergeSink, ConnectorPageSinkProvider, ConnectorSession, MergeOperation

from .._handles import (
    ARRIVAL_OPS,
    HIDDEN_ROW_ID,
    OP_COLUMN,
    TOMBSTONE_OPS,
    JournalFragment,
    JournalMergeHandle,
    JournalTableHandle,
)
from .storage import ROW_GROUP_ROWS, dictionary_columns, filesystem, join_path

__all__ = ["JournalPageSinkProvider", "JournalMergeSink"]


class JournalPageSinkProvider(ConnectorPageSinkProvider):
    """Picklable: holds only the warehouse URI and the file size."""

    def __init__(self, warehouse: str, rows_per_file: int = 1_000_000) -> None:
        self.warehouse = warehouse
        self.rows_per_file = rows_per_file

    def create_merge_sink(self, *, session: ConnectorSession, merge_handle: Any, sink_id: int) -> ConnectorMergeSink:
        if not isinstance(merge_handle, JournalMergeHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a journal merge handle: {merge_handle!r}")
        return JournalMergeSink(self.warehouse, merge_handle, sink_id, getattr(self, "rows_per_file", 1_000_000))


def _min_max(arr: pa.Array | pa.ChunkedArray) -> tuple[Any, Any]:
    if len(arr) == 0 or arr.null_count == len(arr):
        return None, None
    mm = pc.min_max(arr)
    return mm["min"].as_py(), mm["max"].as_py()


def _widen(lo: Any, hi: Any, new_lo: Any, new_hi: Any) -> tuple[Any, Any]:
    if new_lo is None:
        return lo, hi
    if lo is None:
        return new_lo, new_hi
    return min(lo, new_lo), max(hi, new_hi)


class JournalMergeSink(ConnectorMergeSink):
    def __init__(
        self, warehouse: str, handle: JournalMergeHandle, sink_id: int, rows_per_file: int = 1_000_000
    ) -> None:
        table_handle = handle.table_handle
        assert isinstance(table_handle, JournalTableHandle)
        self._warehouse = warehouse
        self._handle = handle
        self._spec = table_handle.spec
        self._sink_id = sink_id
        self._raw = handle.raw_journal
        self._schema = self._spec.explicit_file_schema if self._raw else self._spec.file_schema
        self._rows_per_file = max(1, rows_per_file)
        self._relpath = ""
        self._writer: pq.ParquetWriter | None = None
        self._stream: Any = None
        self._fragments: list[JournalFragment] = []
        self._counts = {"inserts": 0, "updates": 0, "deletes": 0, "moves": 0}  # raw journal rows only
        self._version_range: tuple[Any, Any] = (None, None)
        self._next_row_id = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._new_file_state()

    def _new_file_state(self) -> None:
        self._row_count = 0
        self._ops = [0] * 6  # rows per operation in the current file
        self._key_range: tuple[Any, Any] = (None, None)
        self._sup_range: tuple[Any, Any] = (None, None)
        # a stream: [low, high, null count] of each monotonic column over the current file's rows
        monotonic = self._spec.stream.monotonic if self._spec.stream is not None else ()
        self._monotonic: dict[str, list[Any]] = {m.name: [None, None, 0] for m in monotonic}

    # -- page handling ------------------------------------------------------------------------------------

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        if page.num_rows == 0:
            return
        if self._raw:
            self._write(self._raw_rows(page))
            return
        spec = self._spec
        visible = [c.name for c in spec.visible]
        n = len(visible)
        if page.num_columns != n + 3:
            raise MergekitError(
                ErrorCode.GENERIC_INTERNAL_ERROR,
                f"Merge page has {page.num_columns} channels, expected {n + 3} for {self._handle.table_handle.table}",
            )
        ops = page.column(n).cast(pa.int8())
        bad = pc.invert(pc.is_in(ops, value_set=pa.array(list(MergeOperation), pa.int8())))
        if pc.any(bad).as_py():
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "Invalid merge operation in journal sink")
        if spec.stream is not None and not pc.all(pc.equal(ops, MergeOperation.INSERT)).as_py():
            raise MergekitError(
                ErrorCode.STREAM_NOT_ALLOWED, f"Stream '{self._handle.table_handle.table.table.upper()}' is append-only"
            )
        parts: list[pa.Table] = []
        inserts = page.filter(pc.is_in(ops, value_set=pa.array(ARRIVAL_OPS, pa.int8())))
        if inserts.num_rows:
            parts.append(self._rows(inserts, n, from_row_id=False))
        deletes = page.filter(pc.is_in(ops, value_set=pa.array(TOMBSTONE_OPS, pa.int8())))
        if deletes.num_rows:
            parts.append(self._rows(deletes, n, from_row_id=True))
        updates = page.filter(pc.equal(ops, MergeOperation.UPDATE))
        if updates.num_rows:
            parts.extend(self._update_rows(updates, n))
        for part in parts:
            self._write(part)

    def _key_from_row_id(self, page: pa.RecordBatch, n: int) -> dict[str, pa.Array]:
        row_id = page.column(n + 2)
        if isinstance(row_id, pa.ChunkedArray):
            row_id = row_id.combine_chunks()
        return {k: row_id.field(k) for k in self._spec.key}

    def _rows(self, page: pa.RecordBatch, n: int, *, from_row_id: bool, op: int | None = None) -> pa.Table:
        """Rows in file layout. ``from_row_id`` takes the key from the row id (the *old* key)."""
        spec = self._spec
        cols: dict[str, Any] = {c.name: page.column(i) for i, c in enumerate(spec.visible)}
        if from_row_id or spec.hidden_key and op == MergeOperation.UPDATE:
            cols.update(self._key_from_row_id(page, n))
        elif spec.hidden_key:
            cols[HIDDEN_ROW_ID] = self._new_row_ids(page.num_rows)
        if not from_row_id:
            for k in spec.key:
                if cols[k].null_count:
                    raise MergekitError(
                        ErrorCode.CONSTRAINT_VIOLATION,
                        f"NULL value not allowed in key column {k} of table {self._handle.table_handle.table}",
                    )
        ops = pa.repeat(pa.scalar(op, pa.int8()), page.num_rows) if op is not None else page.column(n)
        arrays = [cols[c.name] for c in spec.columns] + [ops]
        return pa.Table.from_arrays(arrays, names=self._schema.names).cast(self._schema)

    def _update_rows(self, updates: pa.RecordBatch, n: int) -> list[pa.Table]:
        spec = self._spec
        if spec.hidden_key:
            return [self._rows(updates, n, from_row_id=False, op=3)]
        old = self._key_from_row_id(updates, n)
        names = [c.name for c in spec.visible]
        same = None
        for k in spec.key:
            eq = pc.fill_null(pc.equal(updates.column(names.index(k)), old[k].cast(spec.column(k).type)), False)
            same = eq if same is None else pc.and_(same, eq)
        assert same is not None
        out = []
        in_place = updates.filter(same)
        if in_place.num_rows:
            out.append(self._rows(in_place, n, from_row_id=False, op=3))
        moved = updates.filter(pc.invert(same))
        if moved.num_rows:
            # A key move: tombstone the old key (with the row's other values) and insert under the new key.
            out.append(self._rows(moved, n, from_row_id=True, op=5))
            out.append(self._rows(moved, n, from_row_id=False, op=4))
        return out

    def _raw_rows(self, page: pa.RecordBatch) -> pa.Table:
        """A raw INSERT into ``<t>_journal``: the rows carry their own version fields."""
        spec = self._spec
        handle = self._handle.table_handle
        assert isinstance(handle, JournalTableHandle)
        names = list(spec.journal_order)
        n = len(names)
        ops = page.column(n)
        if not pc.all(pc.equal(ops, MergeOperation.INSERT)).as_py():
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                f"{handle.table} only accepts INSERT; change rows through {handle.logical}",
            )
        cols = {name: page.column(i) for i, name in enumerate(names)}
        if spec.hidden_key:
            cols[HIDDEN_ROW_ID] = self._new_row_ids(page.num_rows)
        version = cols[spec.version_field].cast(spec.version_arrow_type).cast(pa.int64())
        subsequent = cols[spec.subsequent_field].cast(spec.version_arrow_type).cast(pa.int64())
        op = pc.if_else(pc.is_null(subsequent), pa.scalar(1, pa.int8()), pa.scalar(2, pa.int8()))
        self._version_range = _widen(*self._version_range, *_min_max(version))
        self._counts["inserts"] += page.num_rows
        arrays = [cols[c.name] for c in spec.columns] + [op, version, subsequent]
        return pa.Table.from_arrays(arrays, names=self._schema.names).cast(self._schema)

    def _new_row_ids(self, count: int) -> pa.Array:
        """``<statement>-<sink>-<n>``: unique without coordination, because the catalog hands out statement
        numbers and the engine sink ids (which may be large, so they are not packed into an int64)."""
        start = self._next_row_id
        self._next_row_id += count
        counter = pa.array(range(start, start + count), pa.int64()).cast(pa.string())
        prefix = pa.scalar(f"{self._handle.statement_id}-{self._sink_id}-", pa.string())
        return pc.binary_join_element_wise(prefix, counter, "")

    def _write(self, table: pa.Table) -> None:
        """Buffer rows in file layout; they reach the file in row groups of about ``ROW_GROUP_ROWS`` (a row
        group per merge page would leave thousands of tiny row groups, slow to write and to read), and a new
        file starts after ``rows_per_file`` rows (a bulk load becomes files with narrow key ranges, which
        readers can skip by range)."""
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_rows = [], 0
        while table.num_rows:
            room = self._rows_per_file - self._row_count
            chunk, table = table.slice(0, room), table.slice(room)
            self._write_chunk(chunk)
            if self._row_count >= self._rows_per_file:
                self._close_file()

    def _write_chunk(self, table: pa.Table) -> None:
        if self._writer is None:
            self._relpath = join_path(
                self._handle.table_handle.location,
                "data",
                self._handle.merge_id,
                f"part-{self._sink_id:05d}-{uuid.uuid4().hex[:12]}.parquet",
            )
            fs, base = filesystem(self._warehouse)
            full = join_path(base, self._relpath)
            fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
            self._stream = fs.open_output_stream(full)
            self._writer = pq.ParquetWriter(
                self._stream,
                self._schema,
                use_dictionary=dictionary_columns(self._schema, [self._spec.physical(k) for k in self._spec.key]),
            )
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)  # a page of a million rows too (insert_arrow)
        self._row_count += table.num_rows
        first_key = self._spec.physical(self._spec.key[0])  # the file's name of the first key column
        self._key_range = _widen(*self._key_range, *_min_max(table.column(first_key)))
        ops = table.column(OP_COLUMN)
        for entry in pc.value_counts(ops).to_pylist():
            if entry["values"] is not None and 0 <= entry["values"] < 6:
                self._ops[entry["values"]] += entry["counts"]
        superseding = table.filter(
            pc.is_in(ops, value_set=pa.array([*TOMBSTONE_OPS, MergeOperation.UPDATE], pa.int8()))
        )
        if self._raw:
            superseding = table  # raw rows may supersede anything
        self._sup_range = _widen(*self._sup_range, *_min_max(superseding.column(first_key)))
        for name, stats in self._monotonic.items():  # a stream: what finish_merge checks, without reading the file
            values = table.column(self._spec.physical(name))
            stats[0], stats[1] = _widen(stats[0], stats[1], *_min_max(values))
            stats[2] += values.null_count

    def _close_file(self) -> None:
        assert self._writer is not None
        self._writer.close()
        self._stream.close()
        self._writer = None
        fs, base = filesystem(self._warehouse)
        size = fs.get_file_info(join_path(base, self._relpath)).size or 0
        if self._raw:
            counts, self._counts = self._counts, {"inserts": 0, "updates": 0, "deletes": 0, "moves": 0}
        else:
            ops = self._ops
            counts = {"inserts": ops[1], "updates": ops[3] + ops[4], "deletes": ops[2], "moves": ops[5]}
        self._fragments.append(
            JournalFragment(
                path=self._relpath,
                row_count=self._row_count,
                size_bytes=size,
                key_min=self._key_range[0],
                key_max=self._key_range[1],
                sup_min=self._sup_range[0],
                sup_max=self._sup_range[1],
                explicit_versions=self._raw,
                min_explicit_version=self._version_range[0],
                max_explicit_version=self._version_range[1],
                monotonic=tuple((name, lo, hi, nulls) for name, (lo, hi, nulls) in self._monotonic.items()),
                **counts,
            )
        )
        self._new_file_state()

    # -- completion ---------------------------------------------------------------------------------------

    def finish(self) -> Sequence[Any]:
        self._flush()
        if self._writer is not None:
            self._close_file()
        return list(self._fragments)

    def abort(self) -> None:
        fs, base = filesystem(self._warehouse)
        try:
            if self._writer is not None:
                self._writer.close()
                self._stream.close()
        finally:
            self._writer = None
            paths = [f.path for f in self._fragments] + ([self._relpath] if self._relpath else [])
            for path in dict.fromkeys(paths):
                try:
                    fs.delete_file(join_path(base, path))
                except (FileNotFoundError, OSError):
                    pass
