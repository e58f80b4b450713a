"""The csvdir connector: mergekit's SPI over the storage format of ``_storage.py``.

Where each piece runs (docs/develop/example-connector.md has the whole story):

* driver: :class:`CsvDirectoryMetadata` (DDL, snapshots, ``begin_merge`` / ``finish_merge`` /
  ``abort_merge``) and :class:`CsvDirectorySplitManager` (one split per data file);
* executors: :class:`CsvDirectoryPageSource` reads a split, :class:`CsvDirectoryMergeSink` stages new CSV
  files. Both are created there by small picklable providers; everything they receive (table handle,
  split, session) is a frozen attrs value, and what a sink returns (:class:`CsvFragment`) is too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    TIME_TRAVEL_MESSAGE,
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
    ConnectorTableMetadata,
    Constraint,
    PropertyMetadata,
    RowChangeParadigm,
    SchemaTableName,
    TableVersion,
    create_delete_and_insert_pages,
    parse_sql_type,
    sql_type_name,
)

from . import _storage as storage

ROW_ID = "$row_id"
#: A row is identified by where it lives: the data file's name and its 0-based position in that file.
ROW_ID_TYPE = pa.struct([pa.field("file", pa.string()), pa.field("pos", pa.int64())])

_STORABLE = (
    pa.types.is_boolean,
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_decimal,
    pa.types.is_string,
    pa.types.is_date32,
    pa.types.is_timestamp,
)


# ---- values that cross the driver/executor boundary (frozen, picklable) -----------------------------------


@attrs.frozen(kw_only=True)
class CsvTableHandle(ConnectorTableHandle):
    """A table *snapshot*: the folder plus the manifest read when the statement started. Scans read
    exactly the files listed here, and ``finish_merge`` compares ``manifest.version`` with the table's
    current version to detect a concurrent commit."""

    directory: str
    manifest: storage.Manifest

    @property
    def data_schema(self) -> pa.Schema:
        """The visible columns, with their Arrow types (what pages and CSV files hold)."""
        return pa.schema([pa.field(c.name, parse_sql_type(c.type_name)) for c in self.manifest.columns])


@attrs.frozen(kw_only=True)
class CsvSplit(ConnectorSplit):
    """One data file to read, with the deletion files that apply to it."""

    file: str
    path: str
    deletes: tuple[str, ...]


@attrs.frozen(kw_only=True)
class CsvFragment:
    """What one merge sink staged: a new data file (or None) and a deletion file (or None) with the number
    of rows it removes from each data file, as ``(file name, count)`` pairs."""

    data_file: storage.DataFile | None
    deletion_file: str | None
    deleted: tuple[tuple[str, int], ...]


# ---- driver: metadata and the commit protocol ------------------------------------------------------------


class CsvDirectoryMetadata(ConnectorMetadata):
    """Catalog operations on ``root``. Runs on the driver only; not pickled."""

    def __init__(self, root: str) -> None:
        self._root = root

    def _table_dir(self, table: SchemaTableName) -> str:
        return os.path.join(self._root, table.schema, table.table)

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        return sorted(e.name for e in os.scandir(self._root) if e.is_dir())

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        try:
            os.mkdir(os.path.join(self._root, schema))
        except FileExistsError:
            raise MergekitError(ErrorCode.SCHEMA_ALREADY_EXISTS, f"Schema '{schema}' already exists") from None

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        schemas = [schema] if schema is not None else self.list_schemas(session=session)
        found = []
        for s in schemas:
            folder = os.path.join(self._root, s)
            if os.path.isdir(folder):
                for entry in os.scandir(folder):
                    if os.path.exists(os.path.join(entry.path, storage.MANIFEST)):
                        found.append(SchemaTableName(schema=s, table=entry.name))
        return sorted(found, key=str)

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        if version is not None:
            # Old manifests are not kept, so there is nothing to travel to: say so with the SPI's message.
            raise MergekitError(ErrorCode.NOT_SUPPORTED, TIME_TRAVEL_MESSAGE)
        directory = self._table_dir(table)
        manifest = storage.read_manifest(directory)
        return None if manifest is None else CsvTableHandle(table=table, directory=directory, manifest=manifest)

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        assert isinstance(table_handle, CsvTableHandle)
        columns = [
            ColumnMetadata(name=c.name, type=parse_sql_type(c.type_name), nullable=c.nullable, type_name=c.type_name)
            for c in table_handle.manifest.columns
        ]
        # The row id is a hidden column: readable by name (the engine asks the scan for it), never in SELECT *.
        columns.append(ColumnMetadata(name=ROW_ID, type=ROW_ID_TYPE, hidden=True))
        return ConnectorTableMetadata(table=table_handle.table, columns=columns)

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        name = table_metadata.table
        if not os.path.isdir(os.path.join(self._root, name.schema)):
            raise MergekitError(ErrorCode.SCHEMA_NOT_FOUND, f"Schema '{name.schema}' does not exist")
        for c in table_metadata.columns:
            if not any(check(c.type) for check in _STORABLE):
                raise MergekitError(
                    ErrorCode.NOT_SUPPORTED, f"csvdir cannot store column '{c.name}' of type {sql_type_name(c.type)}"
                )
        columns = tuple(
            storage.Column(name=c.name, type_name=c.type_name or sql_type_name(c.type), nullable=c.nullable)
            for c in table_metadata.columns
        )
        directory = self._table_dir(name)
        try:
            os.mkdir(directory)  # atomic: of two concurrent CREATE TABLEs exactly one gets here
        except FileExistsError:
            if ignore_existing:
                return
            raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists") from None
        storage.write_manifest(directory, storage.Manifest(version=0, columns=columns))

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        assert isinstance(table_handle, CsvTableHandle)
        # The manifest goes first, so a crash half-way leaves a folder that is no longer a table.
        os.remove(os.path.join(table_handle.directory, storage.MANIFEST))
        shutil.rmtree(table_handle.directory, ignore_errors=True)

    # -- the MERGE protocol --

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
        # Files are immutable, so an UPDATE is a deletion of the old row plus an insertion of the new one.
        return RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        return ColumnHandle(name=ROW_ID, type=ROW_ID_TYPE)

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
    ) -> ConnectorMergeTableHandle:
        # Nothing to reserve: sinks name their files after session.query_id. The handle pins the snapshot
        # that the target scan reads and that finish_merge checks for conflicts.
        assert isinstance(table_handle, CsvTableHandle)
        return ConnectorMergeTableHandle(table_handle=table_handle)

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        base = merge_handle.table_handle
        if not isinstance(base, CsvTableHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merge called without begin_merge")
        with storage.manifest_lock(base.directory):
            current = storage.read_manifest(base.directory)
            if current is None or current.version != base.manifest.version:
                # Row ids name files and positions of the snapshot we read; after another commit they may
                # be stale (a row deleted twice, an update lost). Optimistic concurrency: fail, don't merge.
                raise MergekitError(
                    ErrorCode.TRANSACTION_CONFLICT,
                    f"Table '{base.table}' was changed by another statement (version "
                    f"{base.manifest.version} read, {current.version if current else 'dropped'} now); retry",
                )
            files = {f.name: f for f in current.files}
            for fragment in fragments:
                assert isinstance(fragment, CsvFragment)
                for name, count in fragment.deleted:
                    assert fragment.deletion_file is not None
                    old = files[name]
                    files[name] = attrs.evolve(
                        old, deletes=(*old.deletes, fragment.deletion_file), deleted=old.deleted + count
                    )
                if fragment.data_file is not None:
                    files[fragment.data_file.name] = fragment.data_file
            # A data file whose rows are all deleted leaves the manifest (its files stay on disk until a
            # vacuum would remove them: a reader holding the previous snapshot may still be reading them).
            live = [f for f in files.values() if f.deleted < f.rows]
            storage.write_manifest(
                base.directory, attrs.evolve(current, version=current.version + 1, files=tuple(live))
            )

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        """Remove every file this statement staged: named after its query id and not in the manifest.
        Sinks that were killed never ran their own ``abort``; this catches their files too."""
        base = merge_handle.table_handle
        if not isinstance(base, CsvTableHandle):
            return
        manifest = storage.read_manifest(base.directory)
        referenced: set[str] = set()
        for f in manifest.files if manifest else ():
            referenced.update((f.name, *f.deletes))
        for entry in os.scandir(base.directory):
            if entry.name.startswith(f"{session.query_id}-") and entry.name not in referenced:
                os.remove(entry.path)


# ---- reads: splits on the driver, page sources on executors -------------------------------------------


class CsvDirectorySplitManager(ConnectorSplitManager):
    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        # One split per data file of the snapshot. CSV has no statistics, so ``constraint`` prunes nothing;
        # the engine filters rows again anyway.
        assert isinstance(table_handle, CsvTableHandle)
        d = table_handle.directory
        return [
            CsvSplit(file=f.name, path=os.path.join(d, f.name), deletes=tuple(os.path.join(d, x) for x in f.deletes))
            for f in table_handle.manifest.files
        ]


class CsvDirectoryPageSource(ConnectorPageSource):
    """Streams one data file, drops deleted positions, and adds ``$row_id`` when the scan asks for it."""

    def __init__(self, split: CsvSplit, table_handle: CsvTableHandle, columns: Sequence[ColumnHandle]) -> None:
        self._split = split
        self._schema = table_handle.data_schema
        self._names = [c.name for c in columns]

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        deleted = storage.deleted_positions(self._split.deletes, self._split.file)
        data_columns = [n for n in self._names if n != ROW_ID]
        offset = 0
        for batch in storage.read_batches(self._split.path, self._schema, data_columns):
            # Positions are counted over the file as written, before deletions are applied.
            positions = pa.array(range(offset, offset + batch.num_rows), pa.int64())
            offset += batch.num_rows
            page = batch  # the requested columns, in order (no columns at all for count(*): rows still count)
            if ROW_ID in self._names:
                arrays = {n: batch.column(n) for n in data_columns}
                names = pa.repeat(pa.scalar(self._split.file, pa.string()), batch.num_rows)
                arrays[ROW_ID] = pa.StructArray.from_arrays([names, positions], fields=list(ROW_ID_TYPE))
                page = pa.RecordBatch.from_arrays([arrays[n] for n in self._names], names=self._names)
            if len(deleted):
                page = page.filter(pc.invert(pc.is_in(positions, value_set=deleted)))
            yield page


@attrs.frozen
class CsvDirectoryPageSourceProvider(ConnectorPageSourceProvider):
    """Stateless, hence trivially picklable: everything it needs arrives with the split and the handle."""

    def create_page_source(
        self,
        *,
        session: ConnectorSession,
        split: ConnectorSplit,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
    ) -> ConnectorPageSource:
        assert isinstance(split, CsvSplit) and isinstance(table_handle, CsvTableHandle)
        return CsvDirectoryPageSource(split, table_handle, columns)


# ---- writes: merge sinks on executors ----------------------------------------------------------------


class CsvDirectoryMergeSink(ConnectorMergeSink):
    """One writer task's sink. Inserted rows stream into one new CSV file; deleted row ids are collected
    and written as one deletion file in :meth:`finish`. Nothing is visible until ``finish_merge``."""

    def __init__(self, session: ConnectorSession, table_handle: CsvTableHandle, sink_id: int) -> None:
        self._dir = table_handle.directory
        self._schema = table_handle.data_schema
        self._query_id = session.query_id
        self._sink_id = sink_id
        self._writer: Any = None
        self._data_file: str | None = None
        self._rows = 0
        self._deleted: list[pa.StructArray] = []
        self._staged: list[str] = []

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        # Under DELETE_ROW_AND_INSERT_ROW a page holds INSERT, DELETE, UPDATE_INSERT and UPDATE_DELETE rows;
        # the SPI helper splits them into (data + row id) deletions and (data) insertions.
        merge_page = create_delete_and_insert_pages(page, len(self._schema))
        if merge_page.deletions is not None:
            self._deleted.append(merge_page.deletions.column(ROW_ID))
        if merge_page.insertions is not None:
            if self._writer is None:
                self._data_file = storage.new_file_name(self._query_id, self._sink_id)
                self._staged.append(self._data_file)
                self._writer = storage.open_writer(os.path.join(self._dir, self._data_file), self._schema)
            rows = pa.Table.from_batches([merge_page.insertions]).cast(self._schema)
            self._writer.write_table(rows)
            self._rows += rows.num_rows

    def finish(self) -> Sequence[Any]:
        data_file = None
        if self._writer is not None:
            self._writer.close()
            assert self._data_file is not None
            data_file = storage.DataFile(name=self._data_file, rows=self._rows)
        deletion_file: str | None = None
        counts: tuple[tuple[str, int], ...] = ()
        if self._deleted:
            ids = pa.Table.from_struct_array(pa.chunked_array(self._deleted, ROW_ID_TYPE))
            deletion_file = storage.new_file_name(self._query_id, self._sink_id, ".deletes.csv")
            self._staged.append(deletion_file)
            storage.write_deletions(os.path.join(self._dir, deletion_file), ids)
            counts = tuple((row["values"], row["counts"]) for row in pc.value_counts(ids["file"]).to_pylist())
        if data_file is None and deletion_file is None:
            return []
        return [CsvFragment(data_file=data_file, deletion_file=deletion_file, deleted=counts)]

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
        for name in self._staged:
            try:
                os.remove(os.path.join(self._dir, name))
            except FileNotFoundError:
                pass


@attrs.frozen
class CsvDirectoryPageSinkProvider(ConnectorPageSinkProvider):
    def create_merge_sink(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, sink_id: int
    ) -> ConnectorMergeSink:
        assert isinstance(merge_handle.table_handle, CsvTableHandle)
        return CsvDirectoryMergeSink(session, merge_handle.table_handle, sink_id)


# ---- the plugin: connector and factory ------------------------------------------------------------------


class CsvDirectoryConnector(Connector):
    def __init__(self, root: str) -> None:
        self._metadata = CsvDirectoryMetadata(root)

    def get_metadata(self) -> ConnectorMetadata:
        return self._metadata

    def get_split_manager(self) -> ConnectorSplitManager:
        return CsvDirectorySplitManager()

    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        return CsvDirectoryPageSourceProvider()

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        return CsvDirectoryPageSinkProvider()

    def get_table_properties(self) -> Sequence[PropertyMetadata]:
        # csvdir has no table properties, so the engine refuses every WITH (...) property before create_table.
        # A connector with some declares them here, e.g. PropertyMetadata(name="delimiter", type="varchar",
        # description="Field separator of the data files", default=","), and reads them in create_table.
        return ()


class CsvDirectoryConnectorFactory(ConnectorFactory):
    """Found through the ``mergekit.connectors`` entry point ``csvdir``. Catalog option: ``root`` (required),
    a directory every Spark executor can reach under the same path."""

    name = "csvdir"

    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
        unknown = sorted(set(config) - {"connector", "root"})
        if unknown:  # an option it would ignore is refused by name, as every connector does
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Catalog '{catalog_name}': unknown option '{unknown[0]}' (options: root)",
                option=unknown[0],
            )
        root = config.get("root")
        if not root:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Catalog '{catalog_name}': option 'root' is required")
        # Absolute, because executors resolve paths in their own working directory.
        root = os.path.abspath(str(root))
        os.makedirs(os.path.join(root, "default"), exist_ok=True)
        return CsvDirectoryConnector(root)
