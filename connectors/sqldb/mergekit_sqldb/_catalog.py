"""The catalog side of the connector: the database's own tables as mergekit tables, and DDL.

A table's columns, types and primary key come from the database's catalog on every ``get_table_handle`` (so a
table created or altered outside mergekit is seen at once). What the database cannot hold in mergekit's dialect
(CHECK expressions and DEFAULT expressions, which the engine enforces and evaluates) lives in the side table
``_mk_metadata`` of the default schema, created on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    TIME_TRAVEL_MESSAGE,
    CheckConstraint,
    ColumnMetadata,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    SchemaTableName,
    TableVersion,
)

from ._db import (
    META_TABLE,
    POSTGRESQL,
    PREFIX,
    SQLITE,
    SURROGATE_KEY,
    XMIN,
    DbConfig,
    column_ddl_type,
    connect,
    db_errors,
    not_supported_type,
    pg_type,
    qualified,
    quote,
    sqlite_type,
    unsupported_column_type,
)


@attrs.frozen(kw_only=True)
class SqlColumn:
    """A column as the database declares it: ``db_type`` is the database's type text (for staging tables)."""

    name: str
    db_type: str
    type: pa.DataType
    type_name: str
    nullable: bool = True
    hidden: bool = False


@attrs.frozen(kw_only=True)
class SqlTableHandle(ConnectorTableHandle):
    """A table of the database: ``db_schema`` / ``db_table`` its physical name, ``key`` its primary key columns
    (the hidden surrogate ``_mk_row_id`` of a table mergekit created without a key; empty when the table has
    none). ``unsupported`` names a column whose type cannot be read (reads refuse it).

    The row-level SPI flags the handle: ``mode`` (``delete`` / ``update``), the statement's ``stage`` table and
    its ``updated`` columns; delete pushdown stores the predicate's SQL in ``where`` / ``params``."""

    db_schema: str
    db_table: str
    columns: tuple[SqlColumn, ...]
    key: tuple[str, ...] = ()
    unsupported: tuple[str, str] | None = None
    mode: str = ""
    stage: str = ""
    updated: tuple[str, ...] = ()
    row_id_columns: tuple[str, ...] = ()
    where: str = ""
    params: tuple[Any, ...] = ()
    #: PostgreSQL: the row id carries the row's version (``xmin``), checked when the statement is applied
    versioned: bool = False

    @property
    def qualified(self) -> str:
        return qualified(self.db_schema, self.db_table)

    def column(self, name: str) -> SqlColumn:
        for c in self.columns:
            if c.name == name:
                return c
        raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{name}' of table {self.table} does not exist")

    @property
    def rid_names(self) -> tuple[str, ...]:
        """The fields of ``$row_id``: the key (and ``row_id_columns``' extras), then the row version."""
        return (self.row_id_columns or self.key) + ((XMIN,) if self.versioned else ())

    @property
    def visible(self) -> tuple[SqlColumn, ...]:
        return tuple(c for c in self.columns if not c.hidden)

    def check_readable(self) -> None:
        if self.unsupported is not None:
            raise not_supported_type(str(self.table), *self.unsupported)


class Catalog:
    """The driver's view of the database: one autocommit connection, guarded by a lock (the engine may call
    from several threads)."""

    def __init__(self, cfg: DbConfig) -> None:
        self.cfg = cfg
        self._lock = threading.RLock()
        self._conn: Any = None

    @contextmanager
    def conn(self) -> Iterator[Any]:
        with self._lock:
            if self._conn is None or (self.cfg.kind == POSTGRESQL and self._conn.closed):
                self._conn = connect(self.cfg, autocommit=True)
            try:
                yield self._conn
            except Exception:
                if self.cfg.kind == POSTGRESQL and self._conn.broken:
                    self._conn = None
                raise

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.conn() as c, db_errors(f"Catalog '{self.cfg.catalog}'"):
            cursor = c.execute(sql, tuple(params)) if params else c.execute(sql)
            return list(cursor.fetchall()) if cursor.description else []

    # ---- schemas and tables -------------------------------------------------------------------------------

    def list_schemas(self) -> list[str]:
        if self.cfg.kind == SQLITE:
            names = [r[1] for r in self.rows("PRAGMA database_list") if r[1] != "temp"]
        else:
            names = [
                r[0]
                for r in self.rows(
                    "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'"
                )
            ]
        return sorted({*names, "default"})

    def create_schema(self, schema: str) -> None:
        if self.cfg.kind == SQLITE:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, "SQLite catalogs have one schema, 'main' (alias 'default')")
        if schema in self.list_schemas():
            raise MergekitError(ErrorCode.SCHEMA_ALREADY_EXISTS, f"Schema '{schema}' already exists")
        self.rows(f"CREATE SCHEMA {quote(schema)}")

    def list_tables(self, schema: str | None) -> list[SchemaTableName]:
        ph = self.cfg.ph
        if self.cfg.kind == SQLITE:
            physical = self.cfg.physical_schema(schema) if schema else "main"
            rows = [
                (physical, r[0])
                for r in self.rows(f"SELECT name FROM {quote(physical)}.sqlite_master WHERE type = 'table'")
            ]
        elif schema is None:
            rows = self.rows(
                "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"
            )
        else:
            rows = self.rows(
                "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                f"WHERE c.relkind IN ('r', 'p') AND n.nspname = {ph}",
                (self.cfg.physical_schema(schema),),
            )
        out = [
            SchemaTableName(schema=schema or s, table=t)
            for s, t in rows
            if not t.startswith(PREFIX) and not t.startswith("sqlite_")
        ]
        return sorted(out, key=str)

    def handle(self, table: SchemaTableName, version: TableVersion | None = None) -> SqlTableHandle | None:
        if version is not None:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, TIME_TRAVEL_MESSAGE)
        schema = self.cfg.physical_schema(table.schema)
        if table.table.startswith(PREFIX):
            return None
        if self.cfg.kind == SQLITE:
            return self._sqlite_handle(table, schema)
        return self._pg_handle(table, schema)

    def _pg_handle(self, table: SchemaTableName, schema: str) -> SqlTableHandle | None:
        rows = self.rows(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
            "coalesce(array_position(i.indkey::int2[], a.attnum) + 1, 0) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
            "LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary "
            "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p') ORDER BY a.attnum",
            (schema, table.table),
        )
        described = [
            (name, type_text, pg_type(type_text), bool(not_null), key_pos)
            for name, type_text, not_null, key_pos in rows
        ]
        return _table_handle(table, schema, described, versioned=True)

    def _sqlite_handle(self, table: SchemaTableName, schema: str) -> SqlTableHandle | None:
        if schema not in [r[1] for r in self.rows("PRAGMA database_list")]:
            return None
        rows = self.rows(f"PRAGMA {quote(schema)}.table_info({quote(table.table)})")
        described = [
            (
                name,
                declared or "",
                sqlite_type(declared or ""),
                # an INTEGER PRIMARY KEY is SQLite's rowid: never NULL
                bool(not_null) or bool(key_pos and (declared or "").upper() == "INTEGER"),
                key_pos,
            )
            for _cid, name, declared, not_null, _default, key_pos in rows
        ]
        return _table_handle(table, schema, described, versioned=False)

    # ---- the side table of CHECK constraints and DEFAULT expressions ----------------------------------------

    @property
    def _meta(self) -> str:
        return qualified(self.cfg.default_schema, META_TABLE)

    def _meta_exists(self) -> bool:
        if self.cfg.kind == SQLITE:
            return bool(
                self.rows(f"SELECT 1 FROM {quote(self.cfg.default_schema)}.sqlite_master WHERE name = ?", (META_TABLE,))
            )
        return self.rows("SELECT to_regclass(%s)", (self._meta,))[0][0] is not None

    def _ensure_meta(self) -> None:
        if not self._meta_exists():
            self.rows(
                f"CREATE TABLE IF NOT EXISTS {self._meta} (schema_name TEXT NOT NULL, table_name TEXT NOT NULL, "
                "kind TEXT NOT NULL, name TEXT NOT NULL, value TEXT, pos INTEGER NOT NULL)"
            )

    def _meta_rows(self, h: SqlTableHandle) -> list[tuple[str, str, str]]:
        if not self._meta_exists():
            return []
        ph = self.cfg.ph
        return [
            (r[0], r[1], r[2])
            for r in self.rows(
                f"SELECT kind, name, value FROM {self._meta} WHERE schema_name = {ph} AND table_name = {ph} ORDER BY pos",
                (h.db_schema, h.db_table),
            )
        ]

    def _set_meta(self, h: SqlTableHandle, kind: str, name: str, value: str | None) -> None:
        self._ensure_meta()
        ph = self.cfg.ph
        self.rows(
            f"DELETE FROM {self._meta} WHERE schema_name = {ph} AND table_name = {ph} AND kind = {ph} AND name = {ph}",
            (h.db_schema, h.db_table, kind, name),
        )
        if value is not None:
            pos = len(self._meta_rows(h))
            self.rows(
                f"INSERT INTO {self._meta} VALUES ({ph}, {ph}, {ph}, {ph}, {ph}, {ph})",
                (h.db_schema, h.db_table, kind, name, value, pos),
            )

    def _drop_meta(self, schema: str, table: str) -> None:
        if self._meta_exists():
            ph = self.cfg.ph
            self.rows(f"DELETE FROM {self._meta} WHERE schema_name = {ph} AND table_name = {ph}", (schema, table))

    def metadata(self, h: SqlTableHandle) -> ConnectorTableMetadata:
        side = self._meta_rows(h)
        defaults = {name: value for kind, name, value in side if kind == "default"}
        checks = tuple(CheckConstraint(name=name, expression=value) for kind, name, value in side if kind == "check")
        columns = tuple(
            ColumnMetadata(
                name=c.name,
                type=c.type,
                nullable=c.nullable,
                hidden=c.hidden,
                type_name=c.type_name,
                default=defaults.get(c.name),
            )
            for c in h.columns
        )
        key = () if h.key == (SURROGATE_KEY,) else h.key
        return ConnectorTableMetadata(table=h.table, columns=columns, primary_key=key, check_constraints=checks)

    # ---- DDL ----------------------------------------------------------------------------------------------

    def _column_sql(self, c: ColumnMetadata) -> str:
        ddl_type = column_ddl_type(self.cfg.kind, c.type, c.type_name)
        if ddl_type is None:
            raise unsupported_column_type(c.type, c.type_name)
        return f"{quote(c.name)} {ddl_type}{'' if c.nullable else ' NOT NULL'}"

    def create_table(self, meta: ConnectorTableMetadata, ignore_existing: bool) -> None:
        name = meta.table
        if meta.stream is not None:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, "The sqldb connector does not support streams")
        if name.table.startswith(PREFIX):
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Table names starting with {PREFIX} are the connector's own")
        schema = self.cfg.physical_schema(name.schema)
        if self.handle(name) is not None:
            if ignore_existing:
                return
            raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists")
        if schema not in self.list_schemas():
            raise MergekitError(ErrorCode.SCHEMA_NOT_FOUND, f"Schema '{name.schema}' does not exist")
        parts = [self._column_sql(c) for c in meta.columns if not c.hidden]
        if meta.primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(quote(k) for k in meta.primary_key)})")
        elif self.cfg.kind == POSTGRESQL:  # a stable row id for UPDATE, DELETE and MERGE (see docs: not ctid)
            parts.insert(0, f"{quote(SURROGATE_KEY)} bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        else:  # an alias of the rowid, which VACUUM then keeps
            parts.insert(0, f"{quote(SURROGATE_KEY)} INTEGER PRIMARY KEY")
        self.rows(f"CREATE TABLE {qualified(schema, name.table)} ({', '.join(parts)})")
        h = self.handle(name)
        assert h is not None
        self._drop_meta(h.db_schema, h.db_table)  # leftovers of a table dropped outside mergekit
        for col in meta.columns:
            if col.default is not None:
                self._set_meta(h, "default", col.name, col.default)
        for check in meta.check_constraints:
            self._set_meta(h, "check", check.name, check.expression)

    def drop_table(self, h: SqlTableHandle) -> None:
        self.rows(f"DROP TABLE {h.qualified}")
        self._drop_meta(h.db_schema, h.db_table)

    def add_column(self, h: SqlTableHandle, column: ColumnMetadata) -> None:
        if any(c.name == column.name for c in h.columns):
            raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{column.name}' already exists")
        self.rows(f"ALTER TABLE {h.qualified} ADD COLUMN {self._column_sql(column)}")
        if column.default is not None:
            self._set_meta(h, "default", column.name, column.default)

    def truncate(self, h: SqlTableHandle) -> None:
        self.rows(f"DELETE FROM {h.qualified}" if self.cfg.kind == SQLITE else f"TRUNCATE {h.qualified}")

    def set_check(self, h: SqlTableHandle, constraint: CheckConstraint | None, drop: str | None = None) -> None:
        if constraint is not None:
            self._set_meta(h, "check", constraint.name, constraint.expression)
        if drop is not None:
            self._set_meta(h, "check", drop, None)

    def set_default(self, h: SqlTableHandle, column: str, default: str | None) -> None:
        h.column(column)
        self._set_meta(h, "default", column, default)


def sql_handle(table_handle: ConnectorTableHandle) -> SqlTableHandle:
    if not isinstance(table_handle, SqlTableHandle):
        raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a sqldb table handle: {table_handle!r}")
    return table_handle


def _table_handle(
    table: SchemaTableName,
    schema: str,
    described: list[tuple[str, str, tuple[pa.DataType, str] | None, bool, int]],
    *,
    versioned: bool,
) -> SqlTableHandle | None:
    """The handle of a table the database described column by column: (name, the database's type, its mapping or
    None when unsupported, NOT NULL, 1-based position in the primary key or 0); None for no columns (no table)."""
    if not described:
        return None
    columns, keyed, unsupported = [], [], None
    for name, type_text, mapped, not_null, key_pos in described:
        if mapped is None:
            unsupported = unsupported or (name, type_text or "(none)")
            mapped = (pa.null(), type_text)
        columns.append(
            SqlColumn(
                name=name,
                db_type=type_text,
                type=mapped[0],
                type_name=mapped[1],
                nullable=not not_null,
                hidden=name == SURROGATE_KEY,
            )
        )
        if key_pos:
            keyed.append((key_pos, name))
    return SqlTableHandle(
        table=table,
        db_schema=schema,
        db_table=table.table,
        columns=tuple(columns),
        key=tuple(n for _, n in sorted(keyed)),
        unsupported=unsupported,
        versioned=versioned,
    )
