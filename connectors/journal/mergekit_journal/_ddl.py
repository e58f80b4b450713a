"""DDL of the journal connector: schemas, ``CREATE TABLE`` (a table and its journal), ``DROP TABLE``,
``ALTER TABLE ... ADD | DROP | RENAME COLUMN``, ``SET DATA TYPE`` (``_evolution``) and ``TRUNCATE``.

A table's definition (``TableSpec``: columns, key, version fields and type, the journal's column order) is one
JSON value in ``mk_tables``. Adding a column or truncating writes no data file: it records a commit without
files (``_commit_meta``), so time travel and the change feed see the table as it was before, and a concurrent
MERGE that started before it fails with ``TRANSACTION_CONFLICT`` (``_commit``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnMetadata, ConnectorSession, ConnectorTableHandle, ConnectorTableMetadata, SchemaTableName

from ._catalog import Cursor
from ._config import normalize_version_type
from ._evolution import dropped, renamed, retyped, with_columns
from ._files.storage import filesystem, join_path
from ._handles import (
    AUTO_COMPACT_FILES,
    AUTO_COMPACT_FILES_PROPERTY,
    AUTO_COMPACT_PROPERTY,
    CHANGE_STREAM_PROPERTY,
    HIDDEN_ROW_ID,
    TableSpec,
)
from ._snapshots import SnapshotMetadata, _now_us
from ._streams.tables import append_only, check_definition, check_stream_alter, renamed_stream
from ._views import view_named

__all__ = ["DdlMetadata"]


def _compaction_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """The ``TableSpec`` fields of the compaction properties set in ``properties`` (a property set to DEFAULT
    arrives as None: the default)."""
    fields: dict[str, Any] = {}
    if AUTO_COMPACT_PROPERTY in properties:
        value = properties[AUTO_COMPACT_PROPERTY]
        fields["auto_compact"] = True if value is None else bool(value)
    if AUTO_COMPACT_FILES_PROPERTY in properties:
        value = properties[AUTO_COMPACT_FILES_PROPERTY]
        files = AUTO_COMPACT_FILES if value is None else int(value)
        if files < 2:
            raise MergekitError(
                ErrorCode.INVALID_TABLE_PROPERTY,
                f"Table property '{AUTO_COMPACT_FILES_PROPERTY}' must be at least 2, not {files}",
            )
        fields["auto_compact_files"] = files
    return fields


def _stream_property(table: str) -> MergekitError:
    return MergekitError(
        ErrorCode.INVALID_TABLE_PROPERTY,
        f"Table property '{CHANGE_STREAM_PROPERTY}' applies to tables: '{table}' is a stream already",
    )


class DdlMetadata(SnapshotMetadata):
    """Creating, changing and dropping schemas and tables (part of ``JournalMetadata``)."""

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        """Record a schema name (tables create theirs implicitly); ``SCHEMA_ALREADY_EXISTS`` if it exists."""
        if schema in self.list_schemas(session=session):
            raise MergekitError(ErrorCode.SCHEMA_ALREADY_EXISTS, f"Schema '{schema}' already exists")
        with self.catalog.write() as cur:
            cur.execute("INSERT INTO mk_schemas (schema_name) VALUES (?)", (schema,))

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        """``CREATE TABLE t (...)`` creates ``t`` and its journal ``t_journal``; ``CREATE TABLE t_journal``
        with both version fields (the seed's convention) creates the same pair from the journal's shape.
        ``table_metadata.stream`` set: a stream (``_streams.tables``), without a key and without a journal twin."""
        cfg = self.config
        name = table_metadata.table
        stream = table_metadata.stream
        if stream is not None and table_metadata.primary_key:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, "A stream cannot have a primary key")
        change_stream = bool(table_metadata.properties.get(CHANGE_STREAM_PROPERTY))
        if stream is not None and change_stream:
            raise _stream_property(str(name))
        columns = [c for c in table_metadata.columns if not c.hidden]
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Duplicate column names in table {name}")
        suffix = cfg.journal_suffix
        journal_style = (
            stream is None
            and suffix
            and name.table.endswith(suffix)
            and cfg.version_field in names
            and cfg.subsequent_version_field in names
        )
        version_type = cfg.version_type
        if journal_style:
            logical = SchemaTableName(schema=name.schema, table=name.table[: -len(suffix)])
            version_col = columns[names.index(cfg.version_field)]
            declared = version_col.type_name or (
                "bigint" if pa.types.is_integer(version_col.type) else "timestamp with time zone"
            )
            try:
                version_type = normalize_version_type(declared)
            except MergekitError:
                raise MergekitError(
                    ErrorCode.TYPE_MISMATCH,
                    f"Column '{cfg.version_field}' must be BIGINT or TIMESTAMP, not {declared}",
                ) from None
            journal_order = tuple(names)
            data_columns = [c for c in columns if c.name not in (cfg.version_field, cfg.subsequent_version_field)]
            declared_key = tuple(k for k in table_metadata.primary_key if k != cfg.version_field)
        else:
            logical = name
            for reserved in (cfg.version_field, cfg.subsequent_version_field):
                if reserved in names:
                    raise MergekitError(
                        ErrorCode.INVALID_ARGUMENTS,
                        f"Column name '{reserved}' is reserved for the journal's version fields",
                    )
            data_columns = columns
            journal_order = (*names, cfg.version_field, cfg.subsequent_version_field)
            declared_key = tuple(table_metadata.primary_key)
        listed, configured_key = cfg.declared_key(logical.table) if stream is None else (False, None)
        key = declared_key or configured_key or ()
        if not key and listed:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"No primary key given for table: {logical.table}")
        data_names = [c.name for c in data_columns]
        for k in key:
            if k not in data_names:
                raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Key column '{k}' is not a column of table {logical}")
        hidden_key = not key
        stored = list(data_columns)
        if hidden_key:
            if HIDDEN_ROW_ID in data_names:
                raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Column name '{HIDDEN_ROW_ID}' is reserved")
            stored.append(ColumnMetadata(name=HIDDEN_ROW_ID, type=pa.string(), nullable=False, hidden=True))
            key = (HIDDEN_ROW_ID,)
        spec = TableSpec(
            columns=stored,
            key=key,
            hidden_key=hidden_key,
            version_field=cfg.version_field,
            subsequent_field=cfg.subsequent_version_field,
            version_type=version_type,
            journal_order=journal_order,
            check_constraints=table_metadata.check_constraints,
            stream=stream,
            change_stream=change_stream,
            **_compaction_properties(table_metadata.properties),
        )
        if stream is not None:
            check_definition(spec, str(logical))
        location = join_path(logical.schema, f"{logical.table}-{uuid.uuid4().hex[:12]}")
        now = _now_us()
        with self.catalog.write() as cur:
            if self._lookup(cur, logical) is not None or self._lookup(cur, name) is not None:
                if ignore_existing:
                    return
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists")
            twin = (
                SchemaTableName(schema=logical.schema, table=logical.table + suffix)
                if suffix and not stream
                else logical
            )
            for taken in {name, logical, twin}:  # views share the namespace (``_views``)
                if view_named(cur, taken) is not None:
                    if ignore_existing:
                        return
                    raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"View '{taken}' already exists")
            table_id = cur.insert_returning_id(
                "INSERT INTO mk_tables (schema_name, table_name, location, spec, current_seq, last_row_version, "
                "last_committed_at, schema_seq, next_statement) VALUES (?, ?, ?, ?, 0, 0, ?, 0, 1)",
                (logical.schema, logical.table, location, spec.to_json(), now),
            )
            cur.execute(
                "INSERT INTO mk_commits (table_id, seq, row_version, committed_at, operation, merge_id, files_added, "
                "summary) VALUES (?, 0, 0, ?, 'create', NULL, 0, NULL)",
                (table_id, now),
            )

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """Delete the table's catalog rows in one transaction, then its directory of data files."""
        h = self._handle(table_handle)
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            for t in ("mk_files", "mk_commits", "mk_table_specs", "mk_stream_commits", "mk_tables"):
                cur.execute(f"DELETE FROM {t} WHERE table_id = ?", (h.table_id,))
        # The catalog no longer references the files, so readers cannot see them; remove them now.
        fs, base = filesystem(self.config.warehouse)
        try:
            fs.delete_dir(join_path(base, h.location))
        except (FileNotFoundError, OSError):
            pass

    def set_table_properties(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, properties: Mapping[str, Any]
    ) -> None:
        """``ALTER TABLE t SET PROPERTIES change_feed_stream = true | false | DEFAULT``, ``auto_compact = ...``,
        ``auto_compact_files = n``: a commit without files recording the new definition (so it shows in
        ``DESCRIBE HISTORY``). A stream cannot take ``change_feed_stream``."""
        known = (CHANGE_STREAM_PROPERTY, AUTO_COMPACT_PROPERTY, AUTO_COMPACT_FILES_PROPERTY)
        for name in properties:
            if name not in known:
                raise MergekitError(ErrorCode.INVALID_TABLE_PROPERTY, f"Table property '{name}' does not exist")
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot set the properties of {h.table}")
        compaction = _compaction_properties(properties)

        def change(spec: TableSpec, table: str) -> TableSpec:
            if CHANGE_STREAM_PROPERTY in properties:
                if spec.stream is not None:
                    raise _stream_property(table)
                spec = attrs.evolve(spec, change_stream=bool(properties.get(CHANGE_STREAM_PROPERTY)))
            return attrs.evolve(spec, **compaction)

        self._alter(table_handle, "set_properties", change)

    def add_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: ColumnMetadata
    ) -> None:
        """Append a nullable column (after the data columns, before the version fields of the journal); a commit
        without files, so the versions before it read without the column (time travel) and a concurrent MERGE
        conflicts."""
        if not column.nullable:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                "A column added to a journal table must be nullable: existing versions have no value for it",
            )
        self._alter(table_handle, "add_column", lambda spec, table: with_columns(spec, [column]))

    def rename_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, source: str, target: str
    ) -> None:
        """Rename a business column (a key column too): a commit without files; data files keep the column's
        physical name (``_evolution``), and earlier versions read under the old name."""
        self._alter(
            table_handle,
            "rename_column",
            lambda spec, table: renamed_stream(renamed(spec, source, target, table), source, target),
        )

    def set_column_type(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        column: str,
        type: pa.DataType,
        type_name: str,
    ) -> None:
        """Widen a column's type: a commit without files; older files keep the narrower type and are cast on
        read, and earlier versions read under the old type."""
        self._alter(table_handle, "set_column_type", lambda spec, table: retyped(spec, column, type, type_name, table))

    def drop_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str) -> None:
        """Drop a business column other than a key column: a commit without files; its values stay in the data
        files, unread (a column added later under the name starts empty), and earlier versions still show it."""
        self._alter(table_handle, "drop_column", lambda spec, table: dropped(spec, column, table))

    def _alter(
        self, table_handle: ConnectorTableHandle, operation: str, change: Callable[[TableSpec, str], TableSpec]
    ) -> None:
        """Change the table's definition under its lock: ``change`` gets the current spec (not the handle's: a
        concurrent change is seen) and returns the new one, recorded with a commit without files."""
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot change the columns of {h.table}")
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            row = self._table_row(cur, h.logical.schema, h.logical.table)
            if row is None:
                raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{h.logical}' does not exist")
            old = TableSpec.from_json(row[2])
            spec = change(old, str(h.logical))
            check_stream_alter(old, spec, str(h.logical))
            seq = self._commit_meta(cur, h.table_id, operation)
            self._record_spec(cur, h.table_id, spec, seq)

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """Metadata only: the next version simply has no files (history and time travel keep them)."""
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot truncate {h.table}")
        if h.spec.stream is not None:
            raise append_only(h.logical.table)
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            seq = self._commit_meta(cur, h.table_id, "truncate")
            cur.execute(
                "UPDATE mk_files SET removed_seq = ? WHERE table_id = ? AND removed_seq IS NULL", (seq, h.table_id)
            )

    def _commit_meta(self, cur: Cursor, table_id: int, operation: str) -> int:
        """Record a commit without data files; returns its version."""
        rows = cur.execute(
            "SELECT current_seq, last_row_version, last_committed_at FROM mk_tables WHERE table_id = ?", (table_id,)
        )
        if not rows:
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, "Table was dropped")
        current, last_rv, last_at = rows[0]
        seq = current + 1
        committed_at = max(_now_us(), last_at + 1)
        cur.execute(
            "INSERT INTO mk_commits (table_id, seq, row_version, committed_at, operation, merge_id, files_added, "
            "summary) VALUES (?, ?, ?, ?, ?, NULL, 0, NULL)",
            (table_id, seq, last_rv, committed_at, operation),
        )
        cur.execute(
            "UPDATE mk_tables SET current_seq = ?, last_committed_at = ? WHERE table_id = ?",
            (seq, committed_at, table_id),
        )
        return seq
