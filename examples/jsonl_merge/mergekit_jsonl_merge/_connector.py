"""The SPI: metadata and the commit protocol (driver), page source and merge sink (executors)."""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import decimal
import json
import math
import os
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import attrs
import pyarrow as pa
import pyarrow.compute

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    PRIMARY_KEY_MESSAGE,
    STREAMS_MESSAGE,
    TIME_TRAVEL_MESSAGE,
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
    Connector,
    ConnectorFactory,
    ConnectorMergeSink,
    ConnectorMergeTableHandle,
    ConnectorMetadata,
    ConnectorPageSinkProvider,
    ConnectorPageSource,
    ConnectorPageSourceProvider,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    Constraint,
    RowChangeParadigm,
    SchemaTableName,
    create_delete_and_insert_pages,
    parse_sql_type,
    sql_type_name,
)

from . import _storage as storage
from ._storage import ColumnSpec, DataFile, Manifest

CONNECTOR_NAME = "jsonl-merge"
OPTIONS = ("root",)
ROW_ID = "$row_id"
ROW_ID_TYPE = pa.struct([("file", pa.string()), ("pos", pa.int64())])
BATCH_ROWS = 8192


def unsupported_type_message(column: str, type_name: str) -> str:
    return f"{CONNECTOR_NAME} cannot store column '{column}' of type {type_name}"


# ---- values that cross the wire (frozen, picklable)


@attrs.frozen(kw_only=True)
class JsonlTableHandle(ConnectorTableHandle):
    """A snapshot of a table: its folder and the manifest read when the statement named it."""

    directory: str
    manifest: Manifest

    def data_columns(self) -> list[tuple[str, pa.DataType]]:
        """The visible columns, in table order: the data channels of merge pages."""
        return [(c.name, parse_sql_type(c.type_name)) for c in self.manifest.columns if not c.hidden]


@attrs.frozen(kw_only=True)
class JsonlMergeHandle(ConnectorMergeTableHandle):
    """``prefix`` starts the name of every file this merge stages, so ``abort_merge`` finds them all."""

    prefix: str


@attrs.frozen(kw_only=True)
class JsonlSplit(ConnectorSplit):
    directory: str
    file: DataFile


@attrs.frozen(kw_only=True)
class JsonlFragment:
    """What one sink staged: a data file of inserted rows, a deletion file, rows deleted per data file."""

    data_file: str | None = None
    rows: int = 0
    stats: tuple[tuple[str, Any, Any], ...] = ()  # the data file's min/max per column (DataFile.stats)
    deletion_file: str | None = None
    deleted: tuple[tuple[str, int], ...] = ()


# ---- helpers


_NAME = re.compile(r"^[^/\\\x00]+$")


def _check_name(kind: str, name: str) -> None:
    if not _NAME.match(name) or name.startswith((".", "_")):
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS,
            f"{CONNECTOR_NAME} cannot store a {kind} named {name!r}: it must not start with '.' or '_' "
            "nor contain '/' or '\\'",
        )


def _file_prefix(query_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_]", "_", query_id)[:64] or "q"
    return f"{safe}-{uuid.uuid4().hex[:8]}"


def _column_spec(column: ColumnMetadata) -> ColumnSpec:
    type_name = column.type_name or sql_type_name(column.type)
    if not storage.is_supported_type(column.type):
        raise MergekitError(ErrorCode.NOT_SUPPORTED, unsupported_type_message(column.name, type_name))
    try:
        parsed = parse_sql_type(type_name)
    except ValueError:
        parsed = None
    if parsed != column.type:  # the stored name must rebuild exactly this Arrow type
        raise MergekitError(ErrorCode.NOT_SUPPORTED, unsupported_type_message(column.name, type_name))
    return ColumnSpec(
        name=column.name,
        type_name=type_name,
        nullable=column.nullable,
        hidden=column.hidden,
        comment=column.comment,
        default=column.default,
    )


def _layout(manifest: Manifest) -> list[tuple[str, str, bool, bool]]:
    """What staged rows depend on: the columns' names, types and nullability (not defaults or comments)."""
    return [(c.name, c.type_name, c.nullable, c.hidden) for c in manifest.columns]


def _conflict(table: SchemaTableName, why: str) -> MergekitError:
    return MergekitError(
        ErrorCode.TRANSACTION_CONFLICT, f"Table {table} was changed by another statement since it was read: {why}"
    )


# ---- driver: metadata and commits


class JsonlMergeMetadata(ConnectorMetadata):
    def __init__(self, root: str) -> None:
        self.root = root

    # -- names

    def _schema_dir(self, schema: str) -> str:
        return os.path.join(self.root, schema)

    def _table_dir(self, table: SchemaTableName) -> str:
        return os.path.join(self.root, table.schema, table.table)

    def list_schemas(self, *, session):
        return sorted(
            name
            for name in os.listdir(self.root)
            if not name.startswith((".", "_")) and os.path.isdir(os.path.join(self.root, name))
        )

    def create_schema(self, *, session, schema, properties):
        _check_name("schema", schema)
        try:
            os.mkdir(self._schema_dir(schema))
        except FileExistsError:
            raise MergekitError(ErrorCode.SCHEMA_ALREADY_EXISTS, f"Schema '{schema}' already exists") from None

    def list_tables(self, *, session, schema):
        schemas = self.list_schemas(session=session) if schema is None else [schema]
        names = []
        for name in schemas:
            folder = self._schema_dir(name)
            if not os.path.isdir(folder):
                continue
            for table in sorted(os.listdir(folder)):
                if not table.startswith((".", "_")) and os.path.isfile(os.path.join(folder, table, storage.MANIFEST)):
                    names.append(SchemaTableName(schema=name, table=table))
        return names

    def get_table_handle(self, *, session, table, version=None):
        if version is not None:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, TIME_TRAVEL_MESSAGE)
        if table.table.startswith((".", "_")) or not _NAME.match(table.table) or not _NAME.match(table.schema):
            return None
        directory = self._table_dir(table)
        manifest = storage.read_manifest(directory)
        if manifest is None:
            return None
        return JsonlTableHandle(table=table, directory=directory, manifest=manifest)

    def get_table_metadata(self, *, session, table_handle):
        manifest = table_handle.manifest
        return ConnectorTableMetadata(
            table=table_handle.table,
            columns=[
                ColumnMetadata(
                    name=c.name,
                    type=parse_sql_type(c.type_name),
                    type_name=c.type_name,
                    nullable=c.nullable,
                    hidden=c.hidden,
                    comment=c.comment,
                    default=c.default,
                )
                for c in manifest.columns
            ],
            comment=manifest.comment,
            check_constraints=[CheckConstraint(name=n, expression=e) for n, e in manifest.check_constraints],
        )

    # -- DDL

    def create_table(self, *, session, table_metadata, ignore_existing):
        table = table_metadata.table
        if table_metadata.primary_key:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, PRIMARY_KEY_MESSAGE)
        if table_metadata.stream is not None:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, STREAMS_MESSAGE)
        _check_name("table", table.table)
        columns = tuple(_column_spec(c) for c in table_metadata.columns)
        schema_dir = self._schema_dir(table.schema)
        if not os.path.isdir(schema_dir):
            raise MergekitError(ErrorCode.SCHEMA_NOT_FOUND, f"Schema '{table.schema}' does not exist")
        directory = self._table_dir(table)
        if os.path.isfile(os.path.join(directory, storage.MANIFEST)):
            if ignore_existing:
                return
            raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{table}' already exists")
        manifest = Manifest(
            version=1,
            columns=columns,
            check_constraints=tuple((c.name, c.expression) for c in table_metadata.check_constraints),
            comment=table_metadata.comment,
        )
        # Build the table in a hidden folder, then rename it into place: atomic, and a concurrent CREATE of
        # the same name loses cleanly.
        building = os.path.join(schema_dir, f".creating-{uuid.uuid4().hex}")
        os.mkdir(building)
        try:
            storage.write_manifest(building, manifest)
            open(os.path.join(building, storage.LOCK), "a").close()
            with contextlib.suppress(OSError):
                os.rmdir(directory)  # an empty leftover folder of a crashed CREATE
            try:
                os.rename(building, directory)
            except OSError:
                if ignore_existing:
                    return
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{table}' already exists") from None
        finally:
            shutil.rmtree(building, ignore_errors=True)

    def drop_table(self, *, session, table_handle):
        directory = table_handle.directory
        dropped = os.path.join(os.path.dirname(directory), f".dropped-{uuid.uuid4().hex}")
        os.rename(directory, dropped)  # the table disappears at once; then its files go
        shutil.rmtree(dropped, ignore_errors=True)

    def _change_manifest(self, table_handle: JsonlTableHandle, change, *, pinned: bool = False) -> None:
        """Apply ``change(current) -> Manifest`` under the lock; ``pinned``: refuse if the table changed."""
        with storage.manifest_lock(table_handle.directory):
            current = storage.read_manifest(table_handle.directory)
            if current is None:
                raise _conflict(table_handle.table, "it was dropped")
            if pinned and current.version != table_handle.manifest.version:
                raise _conflict(table_handle.table, f"version {current.version}, read {table_handle.manifest.version}")
            new = change(current)
            storage.write_manifest(table_handle.directory, attrs.evolve(new, version=current.version + 1))

    def add_column(self, *, session, table_handle, column):
        spec = _column_spec(column)
        self._change_manifest(table_handle, lambda m: attrs.evolve(m, columns=(*m.columns, spec)))

    def set_column_default(self, *, session, table_handle, column, default):
        def change(m: Manifest) -> Manifest:
            if column not in {c.name for c in m.columns}:
                raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{column}' does not exist")
            columns = tuple(attrs.evolve(c, default=default) if c.name == column else c for c in m.columns)
            return attrs.evolve(m, columns=columns)

        self._change_manifest(table_handle, change)

    def add_check_constraint(self, *, session, table_handle, constraint):
        # The engine checked the rows of table_handle's snapshot: refuse if the table changed since.
        self._change_manifest(
            table_handle,
            lambda m: attrs.evolve(
                m, check_constraints=(*m.check_constraints, (constraint.name, constraint.expression))
            ),
            pinned=True,
        )

    def drop_check_constraint(self, *, session, table_handle, name):
        self._change_manifest(
            table_handle,
            lambda m: attrs.evolve(m, check_constraints=tuple(c for c in m.check_constraints if c[0] != name)),
        )

    def truncate_table(self, *, session, table_handle):
        self._change_manifest(table_handle, lambda m: attrs.evolve(m, files=()))

    # -- the merge SPI

    def get_row_change_paradigm(self, *, session, table_handle):
        return RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW

    def get_merge_row_id_column_handle(self, *, session, table_handle):
        return ColumnHandle(name=ROW_ID, type=ROW_ID_TYPE)

    def begin_merge(self, *, session, table_handle, update_case_columns, insert_case_defaults=None):
        if not isinstance(table_handle, JsonlTableHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a {CONNECTOR_NAME} table handle")
        return JsonlMergeHandle(table_handle=table_handle, prefix=_file_prefix(session.query_id))

    def finish_merge(self, *, session, merge_handle, fragments):
        snapshot: JsonlTableHandle = merge_handle.table_handle
        directory = snapshot.directory
        inserted = [f for f in fragments if f.data_file is not None]
        deleted: Counter[str] = Counter()
        deletion_files: dict[str, list[str]] = {}
        for fragment in fragments:
            for name, count in fragment.deleted:
                deleted[name] += count
                deletion_files.setdefault(name, []).append(fragment.deletion_file)
        if not inserted and not deleted:
            return  # nothing changed: no new version
        with storage.manifest_lock(directory):
            current = storage.read_manifest(directory)
            if current is None:
                raise _conflict(snapshot.table, "it was dropped")
            read = snapshot.manifest
            if current.version != read.version:
                # Row ids name rows of the snapshot; a blind INSERT only needs the same columns and checks.
                if deleted:
                    raise _conflict(snapshot.table, f"version {current.version}, read {read.version}")
                if _layout(current) != _layout(read) or current.check_constraints != read.check_constraints:
                    raise _conflict(snapshot.table, "its columns or constraints changed")
            files = []
            for entry in current.files:
                count = deleted.pop(entry.name, 0)
                if count:
                    entry = attrs.evolve(
                        entry,
                        deletes=(*entry.deletes, *deletion_files[entry.name]),
                        deleted=entry.deleted + count,
                    )
                if entry.deleted < entry.rows:
                    files.append(entry)  # a fully deleted file leaves the manifest
            if deleted:
                raise _conflict(snapshot.table, f"rows of {sorted(deleted)} were deleted by another statement")
            files.extend(DataFile(name=f.data_file, rows=f.rows, stats=f.stats) for f in inserted)
            storage.write_manifest(directory, attrs.evolve(current, version=current.version + 1, files=tuple(files)))

    def abort_merge(self, *, session, merge_handle):
        directory = merge_handle.table_handle.directory
        if not os.path.isdir(directory):
            return
        with storage.manifest_lock(directory):
            current = storage.read_manifest(directory)
            referenced = current.referenced_files() if current is not None else set()
            for name in os.listdir(directory):
                if name.startswith(merge_handle.prefix) and name not in referenced:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(directory, name))


class _NoPruning(Exception):
    """A value this connector cannot order against the column's statistics: keep the file."""


def _stat_key(value: Any, arrow_type: pa.DataType) -> Any:
    """A stored min/max (JSON value) as a key comparable with :func:`_bound_key`'s."""
    if pa.types.is_integer(arrow_type) or pa.types.is_decimal(arrow_type):
        return decimal.Decimal(str(value))
    if pa.types.is_string(arrow_type):
        return value
    micros = storage.parse_wide(value, arrow_type)  # days for a date, microseconds for a timestamp
    return micros * 86_400_000_000 if pa.types.is_date32(arrow_type) else micros


def _bound_key(value: Any, arrow_type: pa.DataType) -> Any:
    """A value of the engine's ``Constraint`` as a key: it need not be of the column's type (an INTEGER
    column meets ``Decimal('1.0')``, a DATE column a ``datetime``, a TIMESTAMP column a ``date``)."""
    if pa.types.is_integer(arrow_type) or pa.types.is_decimal(arrow_type):
        if isinstance(value, bool) or not isinstance(value, int | decimal.Decimal | float):
            raise _NoPruning
        if isinstance(value, float) and not math.isfinite(value):
            raise _NoPruning
        return decimal.Decimal(value)
    if pa.types.is_string(arrow_type):
        if not isinstance(value, str):
            raise _NoPruning
        return value
    if isinstance(value, dt.datetime):
        if (value.tzinfo is not None) != (getattr(arrow_type, "tz", None) is not None):
            raise _NoPruning
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        days = storage.days_from_civil(value.year, value.month, value.day)
        seconds = days * 86400 + value.hour * 3600 + value.minute * 60 + value.second
        return seconds * 1_000_000 + value.microsecond
    if isinstance(value, dt.date) and getattr(arrow_type, "tz", None) is None:
        return storage.days_from_civil(value.year, value.month, value.day) * 86_400_000_000
    raise _NoPruning


class _Pruner:
    """The constraint converted once per scan; :meth:`may_match` probes a file's statistics."""

    def __init__(self, constraint: Constraint | None, types: Mapping[str, pa.DataType]) -> None:
        self._types = types
        self._equalities: dict[str, list[Any]] = {}
        self._ranges: dict[str, tuple[Any, Any]] = {}
        if constraint is None:
            return
        for name, values in constraint.equalities.items():
            arrow_type = types.get(name)
            if arrow_type is None or not storage.has_stats(arrow_type) or not values or None in values:
                continue
            with contextlib.suppress(_NoPruning, ValueError, ArithmeticError):
                self._equalities[name] = sorted({_bound_key(v, arrow_type) for v in values})
        for name, (low, high) in constraint.ranges.items():
            arrow_type = types.get(name)
            if arrow_type is None or not storage.has_stats(arrow_type) or (low is None and high is None):
                continue
            with contextlib.suppress(_NoPruning, ValueError, ArithmeticError):
                self._ranges[name] = (
                    None if low is None else _bound_key(low, arrow_type),
                    None if high is None else _bound_key(high, arrow_type),
                )

    def __bool__(self) -> bool:
        return bool(self._equalities or self._ranges)

    def may_match(self, file: DataFile) -> bool:
        for name, low, high in file.stats:
            keys = self._equalities.get(name)
            bounds = self._ranges.get(name)
            if keys is None and bounds is None:
                continue
            if low is None:  # every value NULL: neither = nor a range holds
                return False
            arrow_type = self._types[name]
            low_key, high_key = _stat_key(low, arrow_type), _stat_key(high, arrow_type)
            if keys is not None:
                i = bisect.bisect_left(keys, low_key)
                if i == len(keys) or keys[i] > high_key:
                    return False
            if bounds is not None:
                if bounds[0] is not None and high_key < bounds[0]:
                    return False
                if bounds[1] is not None and low_key > bounds[1]:
                    return False
        return True


class JsonlSplitManager(ConnectorSplitManager):
    def get_splits(self, *, session, table_handle, columns, constraint):
        """One split per live data file, less the files whose statistics rule the constraint out."""
        types = dict(table_handle.data_columns())
        pruner = _Pruner(constraint, types)
        return [
            JsonlSplit(directory=table_handle.directory, file=f)
            for f in table_handle.manifest.files
            if not pruner or pruner.may_match(f)
        ]


# ---- executors: reading


class JsonlPageSource(ConnectorPageSource):
    def __init__(self, split: JsonlSplit, columns: Sequence[ColumnHandle]) -> None:
        self._split = split
        self._columns = list(columns)

    def __iter__(self):
        split = self._split
        deleted = storage.read_positions(split.directory, split.file.deletes, split.file.name)
        schema = pa.schema([pa.field(c.name, c.type) for c in self._columns])
        path = os.path.join(split.directory, split.file.name)
        for positions, rows in storage.read_rows(path, deleted, BATCH_ROWS):
            arrays = []
            for column in self._columns:
                if column.name == ROW_ID:
                    arrays.append(
                        pa.StructArray.from_arrays(
                            [
                                pa.array([split.file.name] * len(positions), pa.string()),
                                pa.array(positions, pa.int64()),
                            ],
                            fields=list(ROW_ID_TYPE),
                        )
                    )
                else:
                    arrays.append(storage.decode_column([row.get(column.name) for row in rows], column.type))
            if arrays:
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
            else:  # no column asked for (count(*)): rows still count
                yield pa.RecordBatch.from_struct_array(pa.array([{}] * len(rows), pa.struct([])))


class JsonlPageSourceProvider(ConnectorPageSourceProvider):
    def create_page_source(self, *, session, split, table_handle, columns):
        return JsonlPageSource(split, columns)


# ---- executors: writing


class JsonlMergeSink(ConnectorMergeSink):
    """One writer task: inserted rows go to one new data file, deleted row ids to one deletion file."""

    def __init__(self, merge_handle: JsonlMergeHandle, sink_id: int) -> None:
        handle: JsonlTableHandle = merge_handle.table_handle
        self._directory = handle.directory
        columns = handle.data_columns()
        self._names = [name for name, _ in columns]
        self._stat_columns = [i for i, (_, arrow_type) in enumerate(columns) if storage.has_stats(arrow_type)]
        self._inserted: dict[int, list[pa.Array]] = {i: [] for i in self._stat_columns}
        stem = f"{merge_handle.prefix}-{sink_id}-{uuid.uuid4().hex}"
        self._data_name = stem + storage.DATA_SUFFIX
        self._deletes_name = stem + storage.DELETES_SUFFIX
        self._data: TextIO | None = None
        self._deletes: TextIO | None = None
        self._rows = 0
        self._deleted: Counter[str] = Counter()

    def _open(self, name: str) -> TextIO:
        return open(os.path.join(self._directory, name), "x", encoding="utf-8")

    def store_merged_rows(self, page):
        n = len(self._names)
        if page.num_columns > n + 3:
            page = page.select(range(n + 3))
        split = create_delete_and_insert_pages(page, n)
        if split.insertions is not None and split.insertions.num_rows:
            if self._data is None:
                self._data = self._open(self._data_name)
            self._data.writelines(storage.encode_lines(split.insertions, self._names))
            self._rows += split.insertions.num_rows
            for i in self._stat_columns:  # statistics of the file, for pruning: a min and a max per page
                low, high = pa.compute.min_max(split.insertions.column(i)).values()
                self._inserted[i].append(pa.array([low, high], split.insertions.column(i).type))
        if split.deletions is not None and split.deletions.num_rows:
            if self._deletes is None:
                self._deletes = self._open(self._deletes_name)
            row_ids = split.deletions.column(ROW_ID)
            files = row_ids.field("file").to_pylist()
            positions = row_ids.field("pos").to_pylist()
            self._deletes.writelines(
                f'{{"file": {json.dumps(file)}, "pos": {pos}}}\n' for file, pos in zip(files, positions, strict=True)
            )
            self._deleted.update(files)

    def _close(self) -> None:
        for f in (self._data, self._deletes):
            if f is not None and not f.closed:
                f.flush()
                os.fsync(f.fileno())
                f.close()

    def finish(self):
        self._close()
        if self._data is None and self._deletes is None:
            return []
        return [
            JsonlFragment(
                data_file=self._data_name if self._data is not None else None,
                rows=self._rows,
                stats=tuple((self._names[i], *storage.min_max(self._inserted[i])) for i in self._stat_columns)
                if self._data is not None
                else (),
                deletion_file=self._deletes_name if self._deletes is not None else None,
                deleted=tuple(sorted(self._deleted.items())),
            )
        ]

    def abort(self):
        for f in (self._data, self._deletes):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
        for name, f in ((self._data_name, self._data), (self._deletes_name, self._deletes)):
            if f is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(self._directory, name))


class JsonlPageSinkProvider(ConnectorPageSinkProvider):
    def create_merge_sink(self, *, session, merge_handle, sink_id):
        return JsonlMergeSink(merge_handle, sink_id)


# ---- the connector and its factory


class JsonlMergeConnector(Connector):
    def __init__(self, root: str) -> None:
        self.root = root
        self._metadata = JsonlMergeMetadata(root)
        self._split_manager = JsonlSplitManager()
        self._page_sources = JsonlPageSourceProvider()
        self._page_sinks = JsonlPageSinkProvider()

    def get_metadata(self):
        return self._metadata

    def get_split_manager(self):
        return self._split_manager

    def get_page_source_provider(self):
        return self._page_sources

    def get_page_sink_provider(self):
        return self._page_sinks


class JsonlMergeConnectorFactory(ConnectorFactory):
    """``{"connector": "jsonl-merge", "root": "/data/lake"}``: tables under ``<root>/<schema>/<table>/``."""

    name = CONNECTOR_NAME

    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: Any = None) -> Connector:
        for option in config:
            if option not in OPTIONS:
                raise MergekitError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"Catalog '{catalog_name}': unknown option '{option}' for connector {CONNECTOR_NAME} "
                    f"(valid options: {', '.join(OPTIONS)})",
                    option=option,
                )
        root = config.get("root")
        if not isinstance(root, str | os.PathLike) or not str(root):
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Catalog '{catalog_name}': connector {CONNECTOR_NAME} needs the option 'root' (a directory)",
                option="root",
            )
        root = os.path.abspath(os.fspath(root))  # executors resolve relative paths in their own directory
        os.makedirs(os.path.join(root, "default"), exist_ok=True)
        return JsonlMergeConnector(root)
