"""The two databases behind a sqldb catalog: connections, identifiers, type mapping, values and errors.

Everything here is picklable configuration or pure functions: executors open their own connections from a
:class:`DbConfig`. PostgreSQL is reached through psycopg (imported lazily), SQLite through the standard
library's sqlite3.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlparse

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import sql_type_name

POSTGRESQL = "postgresql"
SQLITE = "sqlite"
#: Names of mergekit's own objects in the database; list_tables hides them.
PREFIX = "_mk_"
STAGE_PREFIX = "_mk_stage_"
META_TABLE = "_mk_metadata"
#: The hidden surrogate key of a table mergekit created without a PRIMARY KEY.
SURROGATE_KEY = "_mk_row_id"
#: The row version in a PostgreSQL row id: the row's ``xmin`` when the scan read it (changes with every UPDATE).
XMIN = "_mk_xmin"


@attrs.frozen(kw_only=True)
class DbConfig:
    """A catalog's database, as executors need it (picklable: no connection inside)."""

    catalog: str
    kind: str
    uri: str  # the psycopg conninfo URI, or the SQLite file path
    default_schema: str
    merge: bool = True
    split_rows: int = 250_000
    batch_rows: int = 10_000
    busy_timeout: float = 30.0
    #: tests only: make a sink kill its process or the commit fail (docs/connectors/sqldb.md, "Testing")
    fault_injection: str = ""

    @property
    def ph(self) -> str:
        """The placeholder of a query parameter."""
        return "%s" if self.kind == POSTGRESQL else "?"


def parse_config(catalog: str, config: Any) -> DbConfig:
    def bad(message: str, **details: Any) -> MergekitError:
        return MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Catalog '{catalog}': {message}", **details)

    known = {
        "connector",
        "uri",
        "merge",
        "default_schema",
        "split_rows",
        "batch_rows",
        "busy_timeout",
        "fault_injection",
    }
    unknown = sorted(set(config) - known)
    if unknown:
        raise bad(
            f"unknown option '{unknown[0]}' (options: {', '.join(sorted(known - {'connector'}))})", option=unknown[0]
        )
    uri = config.get("uri")
    if not isinstance(uri, str) or not uri:
        raise bad("option 'uri' is required: postgresql://user@host:port/db or sqlite:///path/to/file.db")
    merge = config.get("merge", True)
    if isinstance(merge, str) and merge.lower() in ("true", "false"):
        merge = merge.lower() == "true"
    if not isinstance(merge, bool):
        raise bad(f"option 'merge' must be true or false, got {merge!r}")
    numbers = {}
    for name, default in (("split_rows", 250_000), ("batch_rows", 10_000), ("busy_timeout", 30)):
        value = config.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise bad(f"option '{name}' must be a positive number, got {value!r}")
        numbers[name] = value
    parsed = urlparse(uri)
    if parsed.scheme in ("postgresql", "postgres"):
        kind, target, schema = POSTGRESQL, uri, "public"
    elif parsed.scheme == "sqlite":
        if not parsed.path or parsed.path == "/":
            raise bad("a sqlite URI names a file: sqlite:///path/to/file.db")
        # absolute: executors (other processes, another working directory) open the same file
        kind, target, schema = SQLITE, os.path.abspath(unquote(uri[len("sqlite:///") :])), "main"
    else:
        raise bad(f"unsupported database URI scheme '{parsed.scheme}' (postgresql:// or sqlite:///)")
    return DbConfig(
        catalog=catalog,
        kind=kind,
        uri=target,
        default_schema=str(config.get("default_schema") or schema),
        merge=merge,
        split_rows=int(numbers["split_rows"]),
        batch_rows=int(numbers["batch_rows"]),
        busy_timeout=float(numbers["busy_timeout"]),
        fault_injection=str(config.get("fault_injection") or ""),
    )


def connect(cfg: DbConfig, *, autocommit: bool = False) -> Any:
    """A new connection. SQLite connections are in autocommit mode: callers ``BEGIN IMMEDIATE`` explicitly."""
    with db_errors(f"Cannot connect to the database of catalog '{cfg.catalog}'"):
        if cfg.kind == POSTGRESQL:
            import psycopg

            conn = psycopg.connect(cfg.uri, autocommit=autocommit)
            conn.execute("SET TIME ZONE 'UTC'")
            if not autocommit:
                conn.commit()
            return conn
        conn = sqlite3.connect(cfg.uri, timeout=cfg.busy_timeout, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        return conn


@contextmanager
def transaction(cfg: DbConfig, conn: Any) -> Iterator[Any]:
    """One database transaction on ``conn`` (not autocommit for PostgreSQL): commit, or roll back and raise."""
    if cfg.kind == SQLITE:
        conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.rollback() if cfg.kind == POSTGRESQL else conn.execute("ROLLBACK")
        raise
    conn.commit() if cfg.kind == POSTGRESQL else conn.execute("COMMIT")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def qualified(schema: str, table: str) -> str:
    return f"{quote(schema)}.{quote(table)}"


# ---- errors ------------------------------------------------------------------------------------------------

_CONFLICT_STATES = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available


def _message(exc: BaseException) -> str:
    """The database's message: PostgreSQL's primary message, DETAIL and HINT, without its CONTEXT (where the
    connector's own statements show: ``COPY _mk_stage_..., line 1``)."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None)
    if not primary:
        return str(exc)
    parts = [primary]
    for label, text in (("DETAIL", diag.message_detail), ("HINT", diag.message_hint)):
        if text:
            parts.append(f"{label}: {text}")
    return " ".join(parts)


def translate(exc: BaseException, what: str) -> MergekitError | None:
    """The coded error of a database error (None for anything else)."""
    if isinstance(exc, MergekitError):
        return None
    detail = " ".join(_message(exc).split())
    state = getattr(exc, "sqlstate", None)
    if isinstance(exc, sqlite3.IntegrityError) or (isinstance(state, str) and state.startswith("23")):
        return MergekitError(ErrorCode.CONSTRAINT_VIOLATION, f"{what}: {detail}")
    locked = isinstance(exc, sqlite3.OperationalError) and ("locked" in detail or "busy" in detail)
    if locked or state in _CONFLICT_STATES:
        return MergekitError(ErrorCode.TRANSACTION_CONFLICT, f"{what}: {detail}")
    if isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("psycopg"):
        return MergekitError(ErrorCode.STORAGE_ERROR, f"{what}: {detail}")
    return None


@contextmanager
def db_errors(what: str) -> Iterator[None]:
    """Turn database errors into coded ``MergekitError`` values: a NOT NULL / key / CHECK violation is
    ``CONSTRAINT_VIOLATION``, a serialization failure, deadlock or locked SQLite file ``TRANSACTION_CONFLICT``,
    anything else the database says ``STORAGE_ERROR``."""
    try:
        yield
    except Exception as exc:
        coded = translate(exc, what)
        if coded is None:
            raise
        raise coded from exc


def not_supported_type(table: str, column: str, type_text: str) -> MergekitError:
    return MergekitError(
        ErrorCode.NOT_SUPPORTED,
        f"Column '{column}' of table {table} has type {type_text}, which the sqldb connector does not support",
    )


# ---- types: database -> Arrow ---------------------------------------------------------------------------------

_PG_SIMPLE: dict[str, tuple[pa.DataType, str]] = {
    "smallint": (pa.int16(), "smallint"),
    "integer": (pa.int32(), "integer"),
    "bigint": (pa.int64(), "bigint"),
    "real": (pa.float32(), "real"),
    "double precision": (pa.float64(), "double"),
    "text": (pa.string(), "varchar"),
    "character varying": (pa.string(), "varchar"),
    "boolean": (pa.bool_(), "boolean"),
    "date": (pa.date32(), "date"),
    "bytea": (pa.binary(), "varbinary"),
}


def pg_type(type_text: str) -> tuple[pa.DataType, str] | None:
    """``format_type()`` text -> (Arrow type, SQL type name); None when unsupported."""
    t = type_text.lower()
    if t in _PG_SIMPLE:
        return _PG_SIMPLE[t]
    m = re.fullmatch(r"numeric\((\d+),(\d+)\)", t)
    if m and 1 <= int(m.group(1)) <= 38:
        p, s = int(m.group(1)), int(m.group(2))
        return pa.decimal128(p, s), f"decimal({p},{s})"
    m = re.fullmatch(r"character varying\((\d+)\)", t)
    if m:
        return pa.string(), f"varchar({m.group(1)})"
    m = re.fullmatch(r"character\((\d+)\)", t)
    if m:
        return pa.string(), f"char({m.group(1)})"
    m = re.fullmatch(r"timestamp(?:\((\d)\))? (with|without) time zone", t)
    if m:
        tz = m.group(2) == "with"
        return pa.timestamp("us", tz="UTC" if tz else None), "timestamp with time zone" if tz else "timestamp"
    return None


_SQLITE_SIMPLE: dict[str, tuple[pa.DataType, str]] = {
    "integer": (pa.int64(), "bigint"),  # SQLite's INTEGER holds 64 bits (and is the rowid's type)
    "int": (pa.int32(), "integer"),
    "tinyint": (pa.int8(), "tinyint"),
    "smallint": (pa.int16(), "smallint"),
    "bigint": (pa.int64(), "bigint"),
    "float": (pa.float32(), "real"),
    "real": (pa.float64(), "double"),  # SQLite's REAL is an 8-byte float
    "double": (pa.float64(), "double"),
    "double precision": (pa.float64(), "double"),
    "text": (pa.string(), "varchar"),
    "clob": (pa.string(), "varchar"),
    "varchar": (pa.string(), "varchar"),
    "boolean": (pa.bool_(), "boolean"),
    "bool": (pa.bool_(), "boolean"),
    "date": (pa.date32(), "date"),
    "timestamp": (pa.timestamp("us"), "timestamp"),
    "datetime": (pa.timestamp("us"), "timestamp"),
    "timestamp with time zone": (pa.timestamp("us", tz="UTC"), "timestamp with time zone"),
    "blob": (pa.binary(), "varbinary"),
    "varbinary": (pa.binary(), "varbinary"),
}


def sqlite_type(declared: str) -> tuple[pa.DataType, str] | None:
    """A declared SQLite column type -> (Arrow type, SQL type name); None when unsupported."""
    t = re.sub(r"\s+", " ", declared.strip().lower())
    t = re.sub(r"\s*\(\s*", "(", re.sub(r"\s*,\s*", ",", re.sub(r"\s*\)", ")", t)))
    if t in _SQLITE_SIMPLE:
        return _SQLITE_SIMPLE[t]
    m = re.fullmatch(r"(?:decimal|numeric)\((\d+),(\d+)\)", t)
    if m and 1 <= int(m.group(1)) <= 38 and int(m.group(2)) <= int(m.group(1)):
        p, s = int(m.group(1)), int(m.group(2))
        return pa.decimal128(p, s), f"decimal({p},{s})"
    m = re.fullmatch(r"(varchar|char|character varying|character)\((\d+)\)", t)
    if m:
        name = "char" if m.group(1) in ("char", "character") else "varchar"
        return pa.string(), f"{name}({m.group(2)})"
    return None


# ---- types: Arrow -> database (CREATE TABLE, ADD COLUMN) ------------------------------------------------------


def column_ddl_type(kind: str, arrow_type: pa.DataType, type_name: str | None) -> str | None:
    """The database type for a mergekit column; None when the database cannot store it."""
    declared = (type_name or "").strip().lower()
    t = arrow_type
    pg = kind == POSTGRESQL
    if pa.types.is_string(t):
        m = re.fullmatch(r"(varchar|char)\s*\(\s*(\d+)\s*\)", declared)
        if m:
            return f"{m.group(1)}({m.group(2)})"
        return "text" if pg else "TEXT"
    if pa.types.is_decimal(t):
        return f"numeric({t.precision},{t.scale})" if pg else f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        if pg:
            return "timestamp(6) with time zone" if t.tz else "timestamp(6) without time zone"
        return "TIMESTAMP WITH TIME ZONE" if t.tz else "TIMESTAMP"
    simple = {
        pa.int8(): ("smallint", "TINYINT"),  # PostgreSQL has no 1-byte integer
        pa.int16(): ("smallint", "SMALLINT"),
        pa.int32(): ("integer", "INT"),
        pa.int64(): ("bigint", "BIGINT"),
        pa.float32(): ("real", "FLOAT"),
        pa.float64(): ("double precision", "DOUBLE"),
        pa.bool_(): ("boolean", "BOOLEAN"),
        pa.date32(): ("date", "DATE"),
        pa.binary(): ("bytea", "BLOB"),
    }
    for arrow, (pg_name, sqlite_name) in simple.items():
        if t == arrow:
            return pg_name if pg else sqlite_name
    return None


def unsupported_column_type(arrow_type: pa.DataType, type_name: str | None) -> MergekitError:
    return MergekitError(
        ErrorCode.NOT_SUPPORTED,
        f"The sqldb connector cannot store type {type_name or sql_type_name(arrow_type)}",
    )


# ---- values: SQLite stores dates, timestamps and decimals as text or numbers ---------------------------------


def sqlite_values(column: pa.Array | pa.ChunkedArray, arrow_type: pa.DataType) -> list[Any]:
    """Python values for sqlite3 parameters: booleans as 0/1, dates and timestamps as ISO text, decimals as
    text (the column's NUMERIC affinity stores them as numbers)."""
    values = column.to_pylist()
    if pa.types.is_boolean(arrow_type):
        return [None if v is None else int(v) for v in values]
    if pa.types.is_timestamp(arrow_type):
        return [None if v is None else v.isoformat(sep=" ", timespec="microseconds") for v in values]
    if pa.types.is_date(arrow_type) or pa.types.is_decimal(arrow_type):
        return [None if v is None else str(v) if pa.types.is_decimal(arrow_type) else v.isoformat() for v in values]
    return values


def _sqlite_decimal(v: Any, scale: int) -> decimal.Decimal:
    d = decimal.Decimal(str(v)) if not isinstance(v, decimal.Decimal) else v
    return d.quantize(decimal.Decimal(1).scaleb(-scale))


def _sqlite_timestamp(v: Any, tz: bool) -> dt.datetime:
    value = dt.datetime.fromisoformat(v) if isinstance(v, str) else v
    if tz:
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    return value


def arrow_column(values: Sequence[Any], arrow_type: pa.DataType, kind: str) -> pa.Array:
    """An Arrow array of ``arrow_type`` from the values a cursor returned."""
    if kind == SQLITE:
        if pa.types.is_boolean(arrow_type):
            values = [None if v is None else bool(v) for v in values]
        elif pa.types.is_date(arrow_type):
            values = [None if v is None else dt.date.fromisoformat(v) if isinstance(v, str) else v for v in values]
        elif pa.types.is_timestamp(arrow_type):
            values = [None if v is None else _sqlite_timestamp(v, bool(arrow_type.tz)) for v in values]
        elif pa.types.is_decimal(arrow_type):
            values = [None if v is None else _sqlite_decimal(v, arrow_type.scale) for v in values]
        elif pa.types.is_floating(arrow_type):
            values = [None if v is None else float(v) for v in values]
        elif pa.types.is_binary(arrow_type):
            values = [None if v is None else bytes(v) if not isinstance(v, str) else v.encode() for v in values]
    elif pa.types.is_binary(arrow_type):
        values = [None if v is None else bytes(v) for v in values]
    return pa.array(values, arrow_type)
