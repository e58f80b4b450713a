"""DDL of the journal connector: schemas, ``CREATE TABLE`` (a table and its journal), ``DROP TABLE``,
``ALTER TABLE ... ADD COLUMN`` and ``TRUNCATE``.

A table's definition (``TableSpec``: columns, key, version fields and type, the journal's column order) is one
JSON value in ``mk_tables``. Adding a column or truncating writes no data file: it records a commit without
files (``_commit_meta``), so time travel and the change feed see the table as it was before, and a concurrent
MERGE that started before it fails with ``TRANSACTION_CONFLICT`` (``_commit``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnMetadata, ConnectorSession, ConnectorTableHandle, ConnectorTableMetadata, SchemaTableName

from ._catalog import Cursor
from ._config import normalize_version_type
from ._handles import HIDDEN_ROW_ID, TableSpec
from ._snapshots import SnapshotMetadata, _now_us
from ._storage import filesystem, join_path

__all__ = ["DdlMetadata"]


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
        with both version fields (the seed's convention) creates the same pair from the journal's shape."""
        cfg = self.config
        name = table_metadata.table
        columns = [c for c in table_metadata.columns if not c.hidden]
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Duplicate column names in table {name}")
        suffix = cfg.journal_suffix
        journal_style = (
            suffix
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
        listed, configured_key = cfg.declared_key(logical.table)
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
        )
        location = join_path(logical.schema, f"{logical.table}-{uuid.uuid4().hex[:12]}")
        now = _now_us()
        with self.catalog.write() as cur:
            if self._lookup(cur, logical) is not None or self._lookup(cur, name) is not None:
                if ignore_existing:
                    return
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists")
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
            for t in ("mk_files", "mk_commits", "mk_tables"):
                cur.execute(f"DELETE FROM {t} WHERE table_id = ?", (h.table_id,))
        # The catalog no longer references the files, so readers cannot see them; remove them now.
        fs, base = filesystem(self.config.warehouse)
        try:
            fs.delete_dir(join_path(base, h.location))
        except (FileNotFoundError, OSError):
            pass

    def add_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: ColumnMetadata
    ) -> None:
        """Append a nullable column (after the data columns, before the version fields of the journal); a commit
        without files, so earlier versions read it as NULL and a concurrent MERGE conflicts."""
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot add a column to {h.table}")
        if not column.nullable:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                "A column added to a journal table must be nullable: existing versions have no value for it",
            )
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            row = self._table_row(cur, h.logical.schema, h.logical.table)
            if row is None:
                raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{h.logical}' does not exist")
            spec = TableSpec.from_json(row[2])
            if column.name in {c.name for c in spec.columns} | {spec.version_field, spec.subsequent_field}:
                raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{column.name}' already exists")
            data = [c for c in spec.columns if not c.hidden]
            hidden = [c for c in spec.columns if c.hidden]
            order = list(spec.journal_order)
            last_data = max(order.index(c.name) for c in data) if data else -1
            order.insert(last_data + 1, column.name)
            spec = attrs.evolve(spec, columns=[*data, column, *hidden], journal_order=order)
            seq = self._commit_meta(cur, h.table_id, "add_column")
            cur.execute(
                "UPDATE mk_tables SET spec = ?, schema_seq = ? WHERE table_id = ?", (spec.to_json(), seq, h.table_id)
            )

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """Metadata only: the next version simply has no files (history and time travel keep them)."""
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot truncate {h.table}")
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
