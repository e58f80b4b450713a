from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    MERGE_PAGE_LAYOUT,
    STREAMS_MESSAGE,
    TIME_TRAVEL_MESSAGE,
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
    Connector,
    ConnectorContext,
    ConnectorFactory,
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
    ConnectorTableLayout,
    ConnectorTableMetadata,
    ConnectorViewDefinition,
    Constraint,
    MergeOperation,
    PropertyMetadata,
    RowChangeParadigm,
    SchemaTableName,
    TableVersion,
)

ROW_ID = "$row_id"
ROW_ID_TYPE = pa.int64()
#: The table properties of ``CREATE TABLE ... WITH (...)`` (docs/connectors/memory.md).
TABLE_PROPERTIES = (
    PropertyMetadata(
        name="partitioned_by",
        description="Columns whose values pick the writer task of a row: the table's insert layout",
        type="array(varchar)",
    ),
)
_SPLIT_ROWS = 4096


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


@attrs.frozen(kw_only=True)
class MemoryTableHandle(ConnectorTableHandle):
    version: int


@attrs.frozen(kw_only=True)
class MemoryMergeTableHandle(ConnectorMergeTableHandle):
    paradigm: RowChangeParadigm
    data_schema: pa.Schema
    fail_sink_on: str | None
    partition_columns: tuple[str, ...] = ()
    added_columns: tuple[ColumnMetadata, ...] = ()  # MERGE WITH SCHEMA EVOLUTION: added by finish_merge


@attrs.frozen(kw_only=True)
class MemorySplit(ConnectorSplit):
    data: bytes


@attrs.frozen(kw_only=True)
class MemoryFragment:
    """What one sink wrote: rows to delete (by row id), rows to insert, rows to update, and where it ran."""

    deleted_row_ids: bytes
    inserted: bytes
    updated: bytes
    pid: int
    sink_id: int
    partitions_seen: tuple[Any, ...] = ()


@attrs.define
class _Table:
    metadata: ConnectorTableMetadata
    data: pa.Table
    next_row_id: int = 0
    version: int = 0


class MemoryMetadata(ConnectorMetadata):
    def __init__(self, connector: MemoryConnector) -> None:
        self._c = connector

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        return sorted(self._c.schemas)

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        if schema in self._c.schemas:
            raise MergekitError(ErrorCode.SCHEMA_ALREADY_EXISTS, f"Schema '{schema}' already exists")
        self._c.schemas.add(schema)

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        return sorted((n for n in self._c.tables if schema is None or n.schema == schema), key=str)

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        if version is not None:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, TIME_TRAVEL_MESSAGE)
        t = self._c.tables.get(table)
        return None if t is None else MemoryTableHandle(table=table, version=t.version)

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        return self._c.table(table_handle).metadata

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        name = table_metadata.table
        if table_metadata.stream is not None:  # its state lives in this process; a streaming source runs in another
            raise MergekitError(ErrorCode.NOT_SUPPORTED, STREAMS_MESSAGE)
        if name.schema not in self._c.schemas:
            raise MergekitError(ErrorCode.SCHEMA_NOT_FOUND, f"Schema '{name.schema}' does not exist")
        with self._c.lock:
            if name in self._c.tables or name in self._c.views:  # (views share the namespace)
                if ignore_existing:
                    return
                what = "View" if name in self._c.views else "Table"
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"{what} '{name}' already exists")
            partitioned_by = tuple(table_metadata.properties.get("partitioned_by", ()) or ())
            names = [c.name for c in table_metadata.columns]
            for p in partitioned_by:
                if p not in names:
                    raise MergekitError(
                        ErrorCode.INVALID_TABLE_PROPERTY,
                        f"Table property 'partitioned_by': partition column '{p}' is not a column of table {name}",
                    )
            columns = (*table_metadata.columns, ColumnMetadata(name=ROW_ID, type=ROW_ID_TYPE, hidden=True))
            meta = attrs.evolve(table_metadata, columns=columns)
            schema = pa.schema([pa.field(c.name, c.type) for c in columns])
            self._c.tables[name] = _Table(metadata=meta, data=schema.empty_table())

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        with self._c.lock:
            self._c.tables.pop(table_handle.table, None)

    # Views live in this process, like the tables they read (a view over a memory table is useless elsewhere).

    def create_view(
        self, *, session: ConnectorSession, name: SchemaTableName, definition: ConnectorViewDefinition, replace: bool
    ) -> None:
        if name.schema not in self._c.schemas:
            raise MergekitError(ErrorCode.SCHEMA_NOT_FOUND, f"Schema '{name.schema}' does not exist")
        with self._c.lock:
            if name in self._c.tables:
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists")
            if name in self._c.views and not replace:
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"View '{name}' already exists")
            self._c.views[name] = definition

    def get_view(self, *, session: ConnectorSession, name: SchemaTableName) -> ConnectorViewDefinition | None:
        return self._c.views.get(name)

    def drop_view(self, *, session: ConnectorSession, name: SchemaTableName) -> None:
        with self._c.lock:
            if self._c.views.pop(name, None) is None:
                raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"View '{name}' does not exist")

    def list_views(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        return sorted((n for n in self._c.views if schema is None or n.schema == schema), key=str)

    def add_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: ColumnMetadata
    ) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            self._add_columns(t, [column])
            t.version += 1

    def add_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, constraint: CheckConstraint
    ) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            checks = (*t.metadata.check_constraints, constraint)
            t.metadata = attrs.evolve(t.metadata, check_constraints=checks)

    def drop_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, name: str
    ) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            checks = tuple(c for c in t.metadata.check_constraints if c.name != name)
            t.metadata = attrs.evolve(t.metadata, check_constraints=checks)

    def set_column_default(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str, default: str | None
    ) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            cols = tuple(attrs.evolve(c, default=default) if c.name == column else c for c in t.metadata.columns)
            t.metadata = attrs.evolve(t.metadata, columns=cols)

    def _add_columns(self, t: _Table, columns: Sequence[ColumnMetadata]) -> None:
        """Append nullable ``columns`` (before the hidden row id); existing rows read NULL in them."""
        cols = list(t.metadata.columns)
        for column in columns:
            if any(c.name == column.name for c in cols):
                raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{column.name}' already exists")
            cols.insert(len(cols) - 1, column)
            t.data = t.data.add_column(t.data.num_columns - 1, column.name, pa.nulls(t.data.num_rows, column.type))
        t.metadata = attrs.evolve(t.metadata, columns=tuple(cols))

    def rename_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, source: str, target: str
    ) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            if any(c.name == target for c in t.metadata.columns):
                raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{target}' already exists")
            cols = tuple(attrs.evolve(c, name=target) if c.name == source else c for c in t.metadata.columns)
            props = dict(t.metadata.properties)
            if "partitioned_by" in props:
                props["partitioned_by"] = [target if p == source else p for p in props["partitioned_by"] or ()]
            key = tuple(target if k == source else k for k in t.metadata.primary_key)
            t.metadata = attrs.evolve(t.metadata, columns=cols, primary_key=key, properties=props)
            t.data = t.data.rename_columns([target if n == source else n for n in t.data.column_names])
            t.version += 1

    def set_column_type(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        column: str,
        type: pa.DataType,
        type_name: str,
    ) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            cols = tuple(
                attrs.evolve(c, type=type, type_name=type_name) if c.name == column else c for c in t.metadata.columns
            )
            i = t.data.schema.get_field_index(column)
            t.data = t.data.set_column(i, column, t.data.column(i).cast(type))
            t.metadata = attrs.evolve(t.metadata, columns=cols)
            t.version += 1

    def drop_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            if column in (t.metadata.properties.get("partitioned_by") or ()):
                raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot drop partition column '{column}'")
            cols = tuple(c for c in t.metadata.columns if c.name != column)
            key = tuple(k for k in t.metadata.primary_key if k != column)
            t.metadata = attrs.evolve(t.metadata, columns=cols, primary_key=key)
            t.data = t.data.drop_columns([column])
            t.version += 1

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        with self._c.lock:
            t = self._c.table(table_handle)
            t.data = t.data.schema.empty_table()
            t.version += 1

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
        if not self._c.modifications:
            return super().get_row_change_paradigm(session=session, table_handle=table_handle)
        return self._c.paradigm

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        if not self._c.modifications:
            return super().get_merge_row_id_column_handle(session=session, table_handle=table_handle)
        return ColumnHandle(name=ROW_ID, type=ROW_ID_TYPE)

    def get_insert_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        partitioned_by = self._c.table(table_handle).metadata.properties.get("partitioned_by")
        return ConnectorTableLayout(partition_columns=tuple(partitioned_by)) if partitioned_by else None

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
    ) -> ConnectorMergeTableHandle:
        t = self._c.table(table_handle)
        data_schema = pa.schema([pa.field(c.name, c.type) for c in t.metadata.visible_columns])
        self._c.begun.add(session.query_id)
        return MemoryMergeTableHandle(
            table_handle=table_handle,
            paradigm=self._c.paradigm,
            data_schema=data_schema,
            fail_sink_on=self._c.fail_sink_on,
            partition_columns=tuple(t.metadata.properties.get("partitioned_by") or ()),
        )

    def begin_merge_adding_columns(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
        added_columns: Sequence[ColumnMetadata],
    ) -> ConnectorMergeTableHandle:
        """MERGE WITH SCHEMA EVOLUTION: sinks receive the added columns after the table's; ``finish_merge`` adds
        them to the table under the same lock as the rows."""
        handle = self.begin_merge(session=session, table_handle=table_handle, update_case_columns=update_case_columns)
        assert isinstance(handle, MemoryMergeTableHandle)
        schema = handle.data_schema
        for c in added_columns:
            schema = schema.append(pa.field(c.name, c.type))
        return attrs.evolve(handle, data_schema=schema, added_columns=tuple(added_columns))

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        assert isinstance(merge_handle, MemoryMergeTableHandle)
        if session.query_id not in self._c.begun:
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merge called without begin_merge")
        with self._c.lock:
            t = self._c.table(merge_handle.table_handle)
            if merge_handle.added_columns:
                before = (t.metadata, t.data)
                try:
                    self._add_columns(t, merge_handle.added_columns)
                except MergekitError as exc:
                    t.metadata, t.data = before
                    raise MergekitError(ErrorCode.TRANSACTION_CONFLICT, f"{exc.message} (added concurrently)") from exc
            frags = [f for f in fragments if isinstance(f, MemoryFragment)]
            self._c.last_fragments = frags
            data = t.data
            deleted = [_from_ipc(f.deleted_row_ids).column(0) for f in frags]
            updated = [_from_ipc(f.updated) for f in frags]
            inserted = [_from_ipc(f.inserted) for f in frags]
            gone = [c for c in deleted if len(c)] + [u.column(ROW_ID) for u in updated if u.num_rows]
            if gone:
                gone_ids = pa.chunked_array(gone).combine_chunks()
                data = data.filter(pc.invert(pc.is_in(data.column(ROW_ID), value_set=gone_ids)))
            pieces = [data]
            for u in updated:
                if u.num_rows:
                    pieces.append(u.select(data.schema.names).cast(data.schema))
            for ins in inserted:
                if ins.num_rows:
                    ids = pa.array(range(t.next_row_id, t.next_row_id + ins.num_rows), ROW_ID_TYPE)
                    t.next_row_id += ins.num_rows
                    pieces.append(ins.append_column(ROW_ID, ids).select(data.schema.names).cast(data.schema))
            t.data = pa.concat_tables(pieces).combine_chunks()
            t.version += 1
            self._c.begun.discard(session.query_id)

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        self._c.aborted.append(session.query_id)
        self._c.begun.discard(session.query_id)


class MemorySplitManager(ConnectorSplitManager):
    def __init__(self, connector: MemoryConnector) -> None:
        self._c = connector

    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        data = self._c.table(table_handle).data.select([c.name for c in columns])
        return [
            MemorySplit(data=_ipc(data.slice(offset, _SPLIT_ROWS))) for offset in range(0, data.num_rows, _SPLIT_ROWS)
        ]


class _MemoryPageSource(ConnectorPageSource):
    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from self._table.to_batches()


@attrs.frozen
class MemoryPageSourceProvider(ConnectorPageSourceProvider):
    def create_page_source(
        self,
        *,
        session: ConnectorSession,
        split: ConnectorSplit,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
    ) -> ConnectorPageSource:
        assert isinstance(split, MemorySplit)
        return _MemoryPageSource(_from_ipc(split.data))


class MemoryMergeSink(ConnectorMergeSink):
    def __init__(self, handle: MemoryMergeTableHandle, sink_id: int) -> None:
        self._handle = handle
        self._sink_id = sink_id
        self._deleted: list[pa.Array] = []
        self._inserted: list[pa.RecordBatch] = []
        self._updated: list[pa.RecordBatch] = []
        self._partitions: set[Any] = set()

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        n = len(self._handle.data_schema)
        if self._handle.fail_sink_on is not None:
            for col in page.columns[:n]:
                if pa.types.is_string(col.type) and pc.any(pc.equal(col, self._handle.fail_sink_on)).as_py():
                    raise RuntimeError(f"memory sink asked to fail on {self._handle.fail_sink_on!r}")
        ops = page.column(MERGE_PAGE_LAYOUT.operation)
        row_ids = page.column(MERGE_PAGE_LAYOUT.row_id)
        data = page.select(list(range(n)))
        is_delete = pc.is_in(ops, value_set=pa.array([MergeOperation.DELETE, MergeOperation.UPDATE_DELETE], pa.int8()))
        is_insert = pc.is_in(ops, value_set=pa.array([MergeOperation.INSERT, MergeOperation.UPDATE_INSERT], pa.int8()))
        is_update = pc.equal(ops, MergeOperation.UPDATE.value)
        if self._handle.paradigm is RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW and pc.any(is_update).as_py():
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "UPDATE operation under DELETE_ROW_AND_INSERT_ROW")
        self._deleted.append(row_ids.filter(is_delete))
        inserted = data.filter(is_insert)
        self._inserted.append(inserted)
        if self._handle.partition_columns and inserted.num_rows:
            keys = inserted.select(list(self._handle.partition_columns)).to_pylist()
            self._partitions.update(tuple(k.values()) for k in keys)
        updated = data.filter(is_update)
        if updated.num_rows:
            self._updated.append(updated.append_column(ROW_ID, row_ids.filter(is_update)))

    def finish(self) -> Sequence[Any]:
        schema = self._handle.data_schema
        deleted = pa.table({"id": pa.chunked_array(self._deleted, ROW_ID_TYPE)})
        inserted = pa.Table.from_batches(self._inserted, schema) if self._inserted else schema.empty_table()
        upd_schema = schema.append(pa.field(ROW_ID, ROW_ID_TYPE))
        updated = pa.Table.from_batches(self._updated, upd_schema) if self._updated else upd_schema.empty_table()
        return [
            MemoryFragment(
                deleted_row_ids=_ipc(deleted),
                inserted=_ipc(inserted),
                updated=_ipc(updated),
                pid=os.getpid(),
                sink_id=self._sink_id,
                partitions_seen=tuple(sorted(self._partitions, key=repr)),
            )
        ]


@attrs.frozen
class MemoryPageSinkProvider(ConnectorPageSinkProvider):
    def create_merge_sink(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, sink_id: int
    ) -> ConnectorMergeSink:
        assert isinstance(merge_handle, MemoryMergeTableHandle)
        return MemoryMergeSink(merge_handle, sink_id)


class MemoryConnector(Connector):
    def __init__(
        self, *, paradigm: RowChangeParadigm, fail_sink_on: str | None = None, modifications: bool = True
    ) -> None:
        self.paradigm = paradigm
        self.modifications = modifications
        self.fail_sink_on = fail_sink_on
        self.lock = threading.RLock()
        self.schemas: set[str] = {"default"}
        self.tables: dict[SchemaTableName, _Table] = {}
        self.views: dict[SchemaTableName, ConnectorViewDefinition] = {}
        self.begun: set[str] = set()
        self.aborted: list[str] = []
        self.last_fragments: list[MemoryFragment] = []
        self._metadata = MemoryMetadata(self)

    def table(self, handle: ConnectorTableHandle) -> _Table:
        t = self.tables.get(handle.table)
        if t is None:
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{handle.table}' does not exist")
        return t

    def get_metadata(self) -> ConnectorMetadata:
        return self._metadata

    def get_split_manager(self) -> ConnectorSplitManager:
        return MemorySplitManager(self)

    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        return MemoryPageSourceProvider()

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        return MemoryPageSinkProvider()

    def get_table_properties(self) -> Sequence[PropertyMetadata]:
        return TABLE_PROPERTIES


# The catalog options: ``paradigm`` (the RowChangeParadigm), ``modifications`` (false: INSERT only),
# ``fail_sink_on`` (tests: a value whose row makes a merge sink fail)
_OPTIONS = frozenset({"paradigm", "modifications", "fail_sink_on"})


class MemoryConnectorFactory(ConnectorFactory):
    name = "memory"

    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
        unknown = sorted(set(config) - _OPTIONS - {"connector"})
        if unknown:  # the name in details too: the partitioned connector retries without its own ``warehouse``
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Catalog '{catalog_name}': unknown option '{unknown[0]}' (options: {', '.join(sorted(_OPTIONS))})",
                option=unknown[0],
            )
        raw = str(config.get("paradigm", RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW.value)).upper()
        try:
            paradigm = RowChangeParadigm[raw]
        except KeyError:
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Catalog '{catalog_name}': paradigm must be one of "
                f"{', '.join(p.name for p in RowChangeParadigm)}, got {raw!r}",
            ) from None
        modifications = str(config.get("modifications", "true")).lower() not in ("false", "0", "no")
        return MemoryConnector(paradigm=paradigm, fail_sink_on=config.get("fail_sink_on"), modifications=modifications)
