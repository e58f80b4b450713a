"""A test connector that implements ONLY the row-level DELETE/UPDATE SPI (seed 003), plus reads and INSERT.

Storage survives Spark's Python workers: each table is a folder under the catalog's root with ``meta.pickle``
(its ``ConnectorTableMetadata`` and the next row id) and ``data.arrow`` (an Arrow IPC file; the hidden column
``$rid`` is the row id). ``begin_delete`` / ``begin_update`` create a staging folder for the statement; every
``UpdatablePageSource`` (one per split and task attempt, with its own uuid) stages what it received in one file
named after that uuid, and returns a fragment naming the file, the row ids it produced and those it received.
``finish_*`` applies exactly the files the fragments name and replaces ``data.arrow`` atomically (``os.replace``);
``abort_*`` removes the staging folder. ``finish_*`` appends every fragment to ``finished.log`` (pickled lines)
so tests can check that each instance received only rows it produced.

INSERT goes through ``begin_merge`` (the engine accepts it without a row change paradigm); the connector has no
merge row id and no paradigm, so MERGE fails with the engine's NOT_SUPPORTED.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import cloudpickle

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
    Connector,
    ConnectorMergeSink,
    ConnectorMergeTableHandle,
    ConnectorMetadata,
    ConnectorPageSinkProvider,
    ConnectorPageSource,
    ConnectorPageSourceProvider,
    ConnectorSession,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    Constraint,
    DeletePredicate,
    SchemaTableName,
    TableVersion,
    UpdatablePageSource,
    create_delete_and_insert_pages,
)

# Spark's Python workers cannot import the tests package: ship this module's classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROW_ID = "$rid"
PAGE_ROWS = 3  # small pages: a split yields several, each followed by its own delete_rows / update_rows
SPLIT_ROWS = 8


@attrs.frozen(kw_only=True)
class RLTableHandle(ConnectorTableHandle):
    directory: str
    mode: str = "read"  # read | delete | update | pushdown
    statement: str = ""  # the staging folder's name (begin_delete / begin_update)
    updated: tuple[str, ...] = ()
    predicate: DeletePredicate | None = None

    @property
    def staging(self) -> str:
        return os.path.join(self.directory, "_staging", self.statement)


@attrs.frozen(kw_only=True)
class RLSplit(ConnectorSplit):
    start: int
    stop: int


@attrs.frozen(kw_only=True)
class RLFragment:
    instance: str
    file: str | None
    produced: tuple[int, ...]
    received: tuple[int, ...]


def _read(directory: str) -> pa.Table:
    with pa.memory_map(os.path.join(directory, "data.arrow")) as source:
        return pa.ipc.open_file(source).read_all()


def _write(directory: str, table: pa.Table, name: str = "data.arrow") -> None:
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}")
    with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, os.path.join(directory, name))  # atomic: readers see the old file or the new one


def _load_meta(directory: str) -> dict[str, Any]:
    with open(os.path.join(directory, "meta.pickle"), "rb") as f:
        return pickle.load(f)


def _save_meta(directory: str, meta: dict[str, Any]) -> None:
    tmp = os.path.join(directory, ".meta.tmp")
    with open(tmp, "wb") as f:
        pickle.dump(meta, f)
    os.replace(tmp, os.path.join(directory, "meta.pickle"))


def _schema(metadata: ConnectorTableMetadata) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type) for c in metadata.columns] + [pa.field(ROW_ID, pa.int64())])


class RLMetadata(ConnectorMetadata):
    def __init__(self, root: str) -> None:
        self.root = root
        self.pushdown = False  # accept apply_delete (tests switch it on)
        self.pushed: list[DeletePredicate] = []

    def _dir(self, table: SchemaTableName) -> str:
        return os.path.join(self.root, table.schema, table.table)

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        return sorted(e.name for e in os.scandir(self.root) if e.is_dir() and not e.name.startswith("_"))

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        out = []
        for s in [schema] if schema else self.list_schemas(session=session):
            folder = os.path.join(self.root, s)
            for e in os.scandir(folder) if os.path.isdir(folder) else ():
                if os.path.exists(os.path.join(e.path, "meta.pickle")):
                    out.append(SchemaTableName(schema=s, table=e.name))
        return sorted(out, key=str)

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        directory = self._dir(table)
        if not os.path.exists(os.path.join(directory, "meta.pickle")):
            return None
        return RLTableHandle(table=table, directory=directory)

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        assert isinstance(table_handle, RLTableHandle)
        metadata = _load_meta(table_handle.directory)["metadata"]
        return attrs.evolve(
            metadata, columns=(*metadata.columns, ColumnMetadata(name=ROW_ID, type=pa.int64(), hidden=True))
        )

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        directory = self._dir(table_metadata.table)
        try:
            os.makedirs(directory)
        except FileExistsError:
            if ignore_existing:
                return
            raise MergekitError(
                ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{table_metadata.table}' already exists"
            ) from None
        _write(directory, _schema(table_metadata).empty_table())
        _save_meta(directory, {"metadata": table_metadata, "next": 0})

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        assert isinstance(table_handle, RLTableHandle)
        os.remove(os.path.join(table_handle.directory, "meta.pickle"))
        shutil.rmtree(table_handle.directory, ignore_errors=True)

    def _evolve_metadata(self, table_handle: ConnectorTableHandle, **changes: Any) -> None:
        assert isinstance(table_handle, RLTableHandle)
        meta = _load_meta(table_handle.directory)
        _save_meta(table_handle.directory, {**meta, "metadata": attrs.evolve(meta["metadata"], **changes)})

    def _metadata_of(self, table_handle: ConnectorTableHandle) -> ConnectorTableMetadata:
        assert isinstance(table_handle, RLTableHandle)
        return _load_meta(table_handle.directory)["metadata"]

    def add_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, constraint: CheckConstraint
    ) -> None:
        checks = self._metadata_of(table_handle).check_constraints
        self._evolve_metadata(table_handle, check_constraints=(*checks, constraint))

    def drop_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, name: str
    ) -> None:
        checks = self._metadata_of(table_handle).check_constraints
        self._evolve_metadata(table_handle, check_constraints=tuple(c for c in checks if c.name != name))

    def set_column_default(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str, default: str | None
    ) -> None:
        columns = self._metadata_of(table_handle).columns
        new = tuple(attrs.evolve(c, default=default) if c.name == column else c for c in columns)
        self._evolve_metadata(table_handle, columns=new)

    def add_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: ColumnMetadata
    ) -> None:
        assert isinstance(table_handle, RLTableHandle)
        metadata = self._metadata_of(table_handle)
        data = _read(table_handle.directory)
        data = data.add_column(len(metadata.columns), column.name, pa.nulls(data.num_rows, column.type))
        _write(table_handle.directory, data)
        self._evolve_metadata(table_handle, columns=(*metadata.columns, column))

    # -- INSERT through begin_merge (no row change paradigm, no merge row id: not the merge SPI's row changes) --

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
    ) -> ConnectorMergeTableHandle:
        assert isinstance(table_handle, RLTableHandle)
        statement = uuid.uuid4().hex
        os.makedirs(os.path.join(table_handle.directory, "_staging", statement))
        return ConnectorMergeTableHandle(table_handle=attrs.evolve(table_handle, mode="insert", statement=statement))

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        handle = merge_handle.table_handle
        assert isinstance(handle, RLTableHandle)
        meta = _load_meta(handle.directory)
        current = _read(handle.directory)
        parts = [current]
        next_id = meta["next"]
        for path in fragments:
            with pa.memory_map(path) as source:
                rows = pa.ipc.open_file(source).read_all()
            ids = pa.array(range(next_id, next_id + rows.num_rows), pa.int64())
            next_id += rows.num_rows
            parts.append(rows.append_column(ROW_ID, ids).cast(current.schema))
        _write(handle.directory, pa.concat_tables(parts))
        _save_meta(handle.directory, {**meta, "next": next_id})
        shutil.rmtree(handle.staging, ignore_errors=True)

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        handle = merge_handle.table_handle
        if isinstance(handle, RLTableHandle) and handle.statement:
            shutil.rmtree(handle.staging, ignore_errors=True)

    # -- the row-level SPI --

    def get_delete_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        return ColumnHandle(name=ROW_ID, type=pa.int64())

    def get_update_row_id_column_handle(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        updated_columns: Sequence[ColumnHandle],
    ) -> ColumnHandle:
        return ColumnHandle(name=ROW_ID, type=pa.int64())

    def _begin(self, table_handle: ConnectorTableHandle, mode: str, updated: tuple[str, ...] = ()) -> RLTableHandle:
        assert isinstance(table_handle, RLTableHandle)
        handle = attrs.evolve(table_handle, mode=mode, statement=uuid.uuid4().hex, updated=updated)
        os.makedirs(handle.staging)
        return handle

    def begin_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> ConnectorTableHandle:
        return self._begin(table_handle, "delete")

    def begin_update(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        updated_columns: Sequence[ColumnHandle],
    ) -> ConnectorTableHandle:
        return self._begin(table_handle, "update", tuple(c.name for c in updated_columns))

    def _finish(self, handle: ConnectorTableHandle, fragments: Sequence[Any]) -> None:
        assert isinstance(handle, RLTableHandle) and handle.mode in ("delete", "update")
        with open(os.path.join(self.root, "_finished.log"), "ab") as log:
            pickle.dump((handle.mode, list(fragments)), log)
        table = _read(handle.directory)
        for fragment in fragments:
            assert isinstance(fragment, RLFragment)
            if fragment.file is None:
                continue
            assert os.path.dirname(fragment.file) == handle.staging
            with pa.memory_map(fragment.file) as source:
                staged = pa.ipc.open_file(source).read_all()
            ids = staged.column(ROW_ID)
            hit = pc.is_in(table.column(ROW_ID), value_set=ids)
            if handle.mode == "delete":
                table = table.filter(pc.invert(hit))
                continue
            # updated rows: take the new values by row id
            position = pc.index_in(table.column(ROW_ID), value_set=ids)
            for name in handle.updated:
                new = staged.column(name).take(pc.fill_null(position, 0))
                old = table.column(name)
                table = table.set_column(
                    table.schema.get_field_index(name), name, pc.if_else(hit, new.cast(old.type), old)
                )
        _write(handle.directory, table)
        shutil.rmtree(handle.staging, ignore_errors=True)

    def finish_delete(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, fragments: Sequence[Any]
    ) -> None:
        self._finish(table_handle, fragments)

    def finish_update(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, fragments: Sequence[Any]
    ) -> None:
        self._finish(table_handle, fragments)

    def abort_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        assert isinstance(table_handle, RLTableHandle)
        shutil.rmtree(table_handle.staging, ignore_errors=True)

    def abort_update(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        self.abort_delete(session=session, table_handle=table_handle)

    def apply_delete(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, predicate: DeletePredicate
    ) -> ConnectorTableHandle | None:
        if not self.pushdown:
            return None
        assert isinstance(table_handle, RLTableHandle)
        return attrs.evolve(table_handle, mode="pushdown", predicate=predicate)

    def execute_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> int:
        assert isinstance(table_handle, RLTableHandle) and table_handle.predicate is not None
        self.pushed.append(table_handle.predicate)
        table = _read(table_handle.directory)
        keep = [not _matches(row, table_handle.predicate) for row in table.to_pylist()]
        _write(table_handle.directory, table.filter(pa.array(keep, pa.bool_())))
        return keep.count(False)


def _matches(row: Mapping[str, Any], predicate: DeletePredicate) -> bool:
    for column, op, value in predicate.terms:
        v = row[column]
        if op == "IS NULL":
            ok = v is None
        elif op == "IS NOT NULL":
            ok = v is not None
        elif v is None:
            ok = False
        elif op == "IN":
            ok = v in value
        else:
            ok = {"=": v == value, "<>": v != value, "<": v < value, "<=": v <= value, ">": v > value}.get(
                op, v >= value
            )
        if not ok:
            return False
    return True


class RLSplitManager(ConnectorSplitManager):
    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        assert isinstance(table_handle, RLTableHandle)
        n = _read(table_handle.directory).num_rows
        return [RLSplit(start=s, stop=min(s + SPLIT_ROWS, n)) for s in range(0, n, SPLIT_ROWS)]


def _pages(handle: RLTableHandle, split: RLSplit, columns: Sequence[ColumnHandle]) -> Iterator[pa.RecordBatch]:
    rows = _read(handle.directory).slice(split.start, split.stop - split.start)
    rows = rows.select([c.name for c in columns])
    yield from rows.to_batches(max_chunksize=PAGE_ROWS)


class RLPageSource(ConnectorPageSource):
    def __init__(self, handle: RLTableHandle, split: RLSplit, columns: Sequence[ColumnHandle]) -> None:
        self._pages = _pages(handle, split, columns)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self._pages


class RLUpdatablePageSource(UpdatablePageSource):
    """One split and task attempt: records the row ids it produced and received; stages into one file."""

    def __init__(self, handle: RLTableHandle, split: RLSplit, columns: Sequence[ColumnHandle]) -> None:
        self._handle = handle
        self._pages = _pages(handle, split, columns)
        self.instance = uuid.uuid4().hex
        self._produced: list[int] = []
        self._last_page: set[int] = set()
        self._received: list[int] = []
        self._staged: list[pa.Table] = []
        self._file: str | None = None
        self._calls_after_page = 0

    def get_next_page(self) -> pa.RecordBatch | None:
        page = next(self._pages, None)
        if page is not None:
            ids = page.column(ROW_ID).to_pylist()
            self._produced.extend(ids)
            self._last_page = set(ids)
            self._calls_after_page = 0
        return page

    def _receive(self, ids: list[int]) -> None:
        self._calls_after_page += 1
        if self._calls_after_page > 1 or not ids or len(set(ids)) != len(ids) or not set(ids) <= self._last_page:
            raise AssertionError("rows not of the last page this instance produced, or a second call for it")
        self._received.extend(ids)

    def delete_rows(self, row_ids: pa.Array) -> None:
        assert self._handle.mode == "delete"
        self._receive(row_ids.to_pylist())
        self._staged.append(pa.table({ROW_ID: row_ids}))

    def update_rows(self, page: pa.RecordBatch, column_value_and_row_id_channels: Sequence[int]) -> None:
        assert self._handle.mode == "update"
        channels = list(column_value_and_row_id_channels)
        names = [*self._handle.updated, ROW_ID]
        assert len(channels) == len(names)
        self._receive(page.column(channels[-1]).to_pylist())
        self._staged.append(pa.table({n: page.column(c) for n, c in zip(names, channels, strict=True)}))

    def finish(self) -> Sequence[Any]:
        if self._staged:
            self._file = os.path.join(self._handle.staging, f"{self.instance}.arrow")
            table = pa.concat_tables(self._staged)
            with pa.OSFile(self._file, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
        return [
            RLFragment(
                instance=self.instance,
                file=self._file,
                produced=tuple(self._produced),
                received=tuple(self._received),
            )
        ]

    def abort(self) -> None:
        if self._file is not None and os.path.exists(self._file):
            os.remove(self._file)


@attrs.frozen
class RLPageSourceProvider(ConnectorPageSourceProvider):
    def create_page_source(
        self,
        *,
        session: ConnectorSession,
        split: ConnectorSplit,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
    ) -> ConnectorPageSource:
        assert isinstance(table_handle, RLTableHandle) and isinstance(split, RLSplit)
        if table_handle.mode in ("delete", "update"):
            return RLUpdatablePageSource(table_handle, split, columns)
        return RLPageSource(table_handle, split, columns)


class RLInsertSink(ConnectorMergeSink):
    def __init__(self, handle: RLTableHandle, data_columns: int, sink_id: int) -> None:
        self._handle = handle
        self._n = data_columns
        self._pages: list[pa.RecordBatch] = []
        self._sink_id = sink_id

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        split = create_delete_and_insert_pages(page.select(list(range(self._n + 3))), self._n)
        assert split.deletions is None
        if split.insertions is not None:
            self._pages.append(split.insertions)

    def finish(self) -> Sequence[Any]:
        if not self._pages:
            return []
        path = os.path.join(self._handle.staging, f"insert-{uuid.uuid4().hex}.arrow")
        table = pa.Table.from_batches(self._pages)
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return [path]


@attrs.frozen
class RLPageSinkProvider(ConnectorPageSinkProvider):
    def create_merge_sink(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, sink_id: int
    ) -> ConnectorMergeSink:
        handle = merge_handle.table_handle
        assert isinstance(handle, RLTableHandle)
        n = len(_load_meta(handle.directory)["metadata"].columns)
        return RLInsertSink(handle, n, sink_id)


class RowLevelConnector(Connector):
    def __init__(self, root: str) -> None:
        os.makedirs(os.path.join(root, "default"), exist_ok=True)
        self.root = root
        self._metadata = RLMetadata(root)

    def get_metadata(self) -> RLMetadata:
        return self._metadata

    def get_split_manager(self) -> ConnectorSplitManager:
        return RLSplitManager()

    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        return RLPageSourceProvider()

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        return RLPageSinkProvider()

    def finished(self) -> list[tuple[str, list[RLFragment]]]:
        """Every ``finish_delete`` / ``finish_update`` call's fragments, in order."""
        out = []
        path = os.path.join(self.root, "_finished.log")
        if os.path.exists(path):
            with open(path, "rb") as f:
                while True:
                    try:
                        out.append(pickle.load(f))
                    except EOFError:
                        break
        return out
