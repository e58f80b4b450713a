"""The catalog side of the connector: the database's own tables as mergekit tables, and DDL.

A table's columns, types and primary key come from the database's catalog on every ``get_table_handle`` (so a
table created or altered outside mergekit is seen at once). Names: the engine folds identifiers to lower case and
keeps the spelling of quoted ones (``SchemaTableName.quoted_table``); :func:`match_name` finds the database's
name a statement means, and columns are the database's columns under lower-cased names (``SqlColumn.db_name``
is the database's spelling, which every SQL text uses). What the database cannot hold in mergekit's dialect
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
    """A column as the database declares it: ``name`` the engine's (lower-cased) name, ``db_name`` the
    database's spelling, ``db_type`` the database's type text (for staging tables)."""

    name: str
    db_name: str
    db_type: str
    type: pa.DataType
    type_name: str
    nullable: bool = True
    hidden: bool = False
    #: the database fills the column when an INSERT omits it (a DEFAULT, a sequence, an identity, SQLite's rowid)
    db_default: bool = False


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

    @property
    def db_name(self) -> str:
        """``schema.table`` as the database names it, for messages."""
        return f"{self.db_schema}.{self.db_table}"

    def column(self, name: str) -> SqlColumn:
        for c in self.columns:
            if c.name == name:
                return c
        raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{name}' of table {self.db_name} does not exist")

    def db_column(self, name: str) -> str:
        """The quoted database name of column ``name`` (the engine's name), for SQL text."""
        return quote(self.column(name).db_name)

    @property
    def rid_names(self) -> tuple[str, ...]:
        """The fields of ``$row_id``: the key (and ``row_id_columns``' extras), then the row version."""
        return (self.row_id_columns or self.key) + ((XMIN,) if self.versioned else ())

    @property
    def visible(self) -> tuple[SqlColumn, ...]:
        return tuple(c for c in self.columns if not c.hidden)

    def check_readable(self) -> None:
        if self.unsupported is not None:
            raise not_supported_type(self.db_name, *self.unsupported)


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

    def _db_schemas(self) -> list[str]:
        if self.cfg.kind == SQLITE:
            return [r[1] for r in self.rows("PRAGMA database_list") if r[1] != "temp"]
        return [
            r[0]
            for r in self.rows(
                "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'"
            )
        ]

    def list_schemas(self) -> list[str]:
        return sorted({*self._db_schemas(), "default"})

    def db_schema(self, table: SchemaTableName) -> str | None:
        """The database schema ``table`` names (the engine's ``default`` is the catalog's ``default_schema``)."""
        if table.schema == "default" and table.quoted_schema in (None, "default"):
            return self.cfg.default_schema
        return match_name(self._db_schemas(), table.schema, self._exact(table.quoted_schema), "Schema")

    def _db_tables(self, schema: str) -> list[str]:
        """The names of the tables of database schema ``schema``, as the database spells them."""
        if self.cfg.kind == SQLITE:
            return [r[0] for r in self.rows(f"SELECT name FROM {quote(schema)}.sqlite_master WHERE type = 'table'")]
        return [
            r[0]
            for r in self.rows(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND n.nspname = %s",
                (schema,),
            )
        ]

    def db_table(self, schema: str, table: SchemaTableName) -> str | None:
        """The database's name of the table ``table`` names in database schema ``schema`` (see :func:`match_name`);
        the exact folded name is looked up first, so the whole catalog is read only for other spellings."""
        if table.quoted_table is None and self.cfg.kind == POSTGRESQL:
            exact = self.rows(
                "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND n.nspname = %s AND c.relname = %s",
                (schema, table.table),
            )
            if exact:
                return table.table
        return match_name(self._db_tables(schema), table.table, self._exact(table.quoted_table), "Table")

    def _exact(self, quoted: str | None) -> str | None:
        """A quoted name to find exactly: on PostgreSQL; SQLite's names ignore case even when quoted."""
        return quoted if self.cfg.kind == POSTGRESQL else None

    def create_schema(self, schema: str) -> None:
        if self.cfg.kind == SQLITE:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, "SQLite catalogs have one schema, 'main' (alias 'default')")
        if schema in self.list_schemas():
            raise MergekitError(ErrorCode.SCHEMA_ALREADY_EXISTS, f"Schema '{schema}' already exists")
        self.rows(f"CREATE SCHEMA {quote(schema)}")

    def list_tables(self, schema: str | None) -> list[SchemaTableName]:
        """Tables as the database spells them (``SHOW TABLES`` lists ``MixedCase``), each found exactly again
        (``quoted_table``)."""
        if self.cfg.kind == SQLITE:
            physical = self.db_schema(SchemaTableName(schema=schema, table="")) if schema else "main"
            rows = [(physical, t) for t in self._db_tables(physical)] if physical else []
        elif schema is None:
            rows = self.rows(
                "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"
            )
        else:
            physical = self.db_schema(SchemaTableName(schema=schema, table=""))
            rows = [(physical, t) for t in self._db_tables(physical)] if physical else []
        out = [
            SchemaTableName(schema=schema or s, table=t, quoted_schema=None if schema else s, quoted_table=t)
            for s, t in rows
            if not t.startswith(PREFIX) and not t.startswith("sqlite_")
        ]
        return sorted(out, key=str)

    def handle(self, table: SchemaTableName, version: TableVersion | None = None) -> SqlTableHandle | None:
        if version is not None:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, TIME_TRAVEL_MESSAGE)
        schema = self.db_schema(table)
        name = self.db_table(schema, table) if schema is not None else None
        if schema is None or name is None or name.startswith(PREFIX):
            return None
        if self.cfg.kind == SQLITE:
            return self._sqlite_handle(table, schema, name)
        return self._pg_handle(table, schema, name)

    def _pg_handle(self, table: SchemaTableName, schema: str, name: str) -> SqlTableHandle | None:
        rows = self.rows(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
            "coalesce(array_position(i.indkey::int2[], a.attnum) + 1, 0), "
            # the database fills the column when an INSERT omits it: a DEFAULT (serial's nextval), an identity
            "a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '' "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
            "LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary "
            "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p') ORDER BY a.attnum",
            (schema, name),
        )
        described = [
            (column, type_text, pg_type(type_text), bool(not_null), key_pos, bool(filled))
            for column, type_text, not_null, key_pos, filled in rows
        ]
        return _table_handle(table, schema, name, described, versioned=True)

    def _sqlite_handle(self, table: SchemaTableName, schema: str, name: str) -> SqlTableHandle | None:
        rows = self.rows(f"PRAGMA {quote(schema)}.table_info({quote(name)})")
        # an INTEGER PRIMARY KEY is SQLite's rowid: never NULL, and the next rowid when an INSERT omits it
        rowid = (
            [r[1] for r in rows if r[5] and (r[2] or "").upper() == "INTEGER"]
            if sum(bool(r[5]) for r in rows) == 1
            else []
        )
        described = [
            (
                column,
                declared or "",
                sqlite_type(declared or ""),
                bool(not_null) or column in rowid,
                key_pos,
                default is not None or column in rowid,
            )
            for _cid, column, declared, not_null, default, key_pos in rows
        ]
        return _table_handle(table, schema, name, described, versioned=False)

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
                storage_default=c.db_default,
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
        schema = self.db_schema(name)
        if schema is None:
            raise MergekitError(
                ErrorCode.SCHEMA_NOT_FOUND, f"Schema '{name.quoted_schema or name.schema}' does not exist"
            )
        if self.handle(name) is not None:
            if ignore_existing:
                return
            raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists")
        parts = [self._column_sql(c) for c in meta.columns if not c.hidden]
        if meta.primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(quote(k) for k in meta.primary_key)})")
        elif self.cfg.kind == POSTGRESQL:  # a stable row id for UPDATE, DELETE and MERGE (see docs: not ctid)
            parts.insert(0, f"{quote(SURROGATE_KEY)} bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        else:  # an alias of the rowid, which VACUUM then keeps
            parts.insert(0, f"{quote(SURROGATE_KEY)} INTEGER PRIMARY KEY")
        # a quoted name is created as written, an unquoted one lower-cased (as PostgreSQL does)
        self.rows(f"CREATE TABLE {qualified(schema, name.quoted_table or name.table)} ({', '.join(parts)})")
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


def match_name(stored: Sequence[str], name: str, quoted: str | None, what: str) -> str | None:
    """The database's name a statement's name means, of the names ``stored``: a ``quoted`` name exactly as written
    (PostgreSQL's rule); an unquoted one, which the engine lower-cased, the stored name equal to it (PostgreSQL's
    folding), else the one stored name equal to it ignoring case (Trino's case-insensitive name matching; SQLite's
    rule, where names that differ only in case cannot coexist); ``AMBIGUOUS_NAME`` when several are (PostgreSQL's
    ``"Orders"`` and ``"ORDERS"``, no ``orders``). None: no such name."""
    if quoted is not None:
        return quoted if quoted in stored else None
    if name in stored:
        return name
    matches = sorted({s for s in stored if s.lower() == name.lower()})
    if len(matches) > 1:
        raise MergekitError(
            ErrorCode.AMBIGUOUS_NAME,
            f"{what} name {name} matches {' and '.join(quote(m) for m in matches)} in the database, which differ "
            "only in case: quote the name to choose one",
        )
    return matches[0] if matches else None


def _table_handle(
    table: SchemaTableName,
    schema: str,
    name: str,
    described: list[tuple[str, str, tuple[pa.DataType, str] | None, bool, int, bool]],
    *,
    versioned: bool,
) -> SqlTableHandle | None:
    """The handle of table ``schema.name`` (database names; ``table`` the engine's) the database described column
    by column: (name, the database's type, its mapping or None when unsupported, NOT NULL, 1-based position in
    the primary key or 0, whether the database fills it when an INSERT omits it); None for no columns (no table). Columns get lower-cased names; two whose names differ
    only in case make the table unusable (``AMBIGUOUS_NAME``): mergekit's column names ignore case."""
    if not described:
        return None
    columns, keyed, unsupported = [], [], None
    seen: dict[str, str] = {}
    for db_name, type_text, mapped, not_null, key_pos, filled in described:
        column = db_name.lower()
        if column in seen:
            raise MergekitError(
                ErrorCode.AMBIGUOUS_NAME,
                f"Table {schema}.{name} has columns {quote(seen[column])} and {quote(db_name)}, whose names differ "
                "only in case: mergekit's column names ignore case, so it cannot tell them apart",
            )
        seen[column] = db_name
        if mapped is None:
            unsupported = unsupported or (db_name, type_text or "(none)")
            mapped = (pa.null(), type_text)
        columns.append(
            SqlColumn(
                name=column,
                db_name=db_name,
                db_type=type_text,
                type=mapped[0],
                type_name=mapped[1],
                nullable=not not_null,
                hidden=column == SURROGATE_KEY,
                db_default=filled,
            )
        )
        if key_pos:
            keyed.append((key_pos, column))
    return SqlTableHandle(
        table=table,
        db_schema=schema,
        db_table=name,
        columns=tuple(columns),
        key=tuple(n for _, n in sorted(keyed)),
        unsupported=unsupported,
        versioned=versioned,
    )
