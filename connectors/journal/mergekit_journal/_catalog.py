"""The metadata catalog: tables, commits and the files each commit added or removed.

Data files are immutable and never name a version; the catalog is the only source of truth for which files
make up a snapshot and which commit (hence which ``version_number``) each file belongs to. A commit is one
catalog transaction, so readers see either all of a statement's files or none of them.

Two backends share one schema and one set of statements (written with ``?`` placeholders):

* SQLite (default, ``<warehouse>/_catalog.sqlite``): WAL mode so readers never block the writer; write
  transactions start with ``BEGIN IMMEDIATE`` so two writers serialise on the lock instead of failing at
  commit time, and ``database is locked`` is retried with backoff (another process may hold the lock longer
  than ``busy_timeout``).
* PostgreSQL (``catalog_uri`` starting with ``postgresql://``), through psycopg 3, imported only then. Write
  transactions lock the table's row (``SELECT ... FOR UPDATE``), which serialises commits per table.

The catalog is used on the driver only; executors get file lists inside splits and merge handles.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["Catalog", "Cursor", "open_catalog"]

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS mk_schemas (
        schema_name TEXT PRIMARY KEY
    )""",
    """CREATE TABLE IF NOT EXISTS mk_tables (
        table_id {serial} PRIMARY KEY,
        schema_name TEXT NOT NULL,
        table_name TEXT NOT NULL,
        location TEXT NOT NULL,
        spec TEXT NOT NULL,
        current_seq BIGINT NOT NULL,
        last_row_version BIGINT NOT NULL,
        last_committed_at BIGINT NOT NULL,
        schema_seq BIGINT NOT NULL,
        next_statement BIGINT NOT NULL,
        UNIQUE (schema_name, table_name)
    )""",
    """CREATE TABLE IF NOT EXISTS mk_commits (
        table_id BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        row_version BIGINT NOT NULL,
        committed_at BIGINT NOT NULL,
        operation TEXT NOT NULL,
        merge_id TEXT,
        files_added BIGINT NOT NULL,
        summary TEXT,
        PRIMARY KEY (table_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS mk_files (
        file_id {serial} PRIMARY KEY,
        table_id BIGINT NOT NULL,
        path TEXT NOT NULL,
        added_seq BIGINT NOT NULL,
        removed_seq BIGINT,
        row_count BIGINT NOT NULL,
        size_bytes BIGINT NOT NULL,
        key_min TEXT,
        key_max TEXT,
        min_version BIGINT NOT NULL,
        max_version BIGINT NOT NULL,
        explicit_versions INTEGER NOT NULL,
        supersedes INTEGER NOT NULL,
        vacuumed INTEGER NOT NULL DEFAULT 0,
        order_seq BIGINT
    )""",
    # The table's definition as of each version that changed it (RENAME/DROP COLUMN, SET DATA TYPE, ADD COLUMN,
    # MERGE WITH SCHEMA EVOLUTION), so time travel reads a version under the columns it had.
    """CREATE TABLE IF NOT EXISTS mk_table_specs (
        table_id BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        spec TEXT NOT NULL,
        PRIMARY KEY (table_id, seq)
    )""",
    # A stream's commits (``_streams.tables``): row count, low/high of each monotonic column and the stream's high-water
    # mark after the commit (JSON lists in the definition's order, values as ``encode_value`` writes them).
    """CREATE TABLE IF NOT EXISTS mk_stream_commits (
        table_id BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        row_count BIGINT NOT NULL,
        low TEXT NOT NULL,
        high TEXT NOT NULL,
        water TEXT NOT NULL,
        PRIMARY KEY (table_id, seq)
    )""",
    # The last micro-batch each streaming job committed into a table (``_streams.jobs``), written in the commit's
    # transaction.
    """CREATE TABLE IF NOT EXISTS mk_job_batches (
        table_id BIGINT NOT NULL,
        job TEXT NOT NULL,
        batch_id BIGINT NOT NULL,
        PRIMARY KEY (table_id, job)
    )""",
    # Views (``_views``): the definition as JSON (SQL text, columns, comment, default catalog and schema), a version
    # counting CREATE OR REPLACE, and when it was created or last replaced (microseconds since the epoch).
    """CREATE TABLE IF NOT EXISTS mk_views (
        schema_name TEXT NOT NULL,
        view_name TEXT NOT NULL,
        definition TEXT NOT NULL,
        version BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (schema_name, view_name)
    )""",
    "CREATE INDEX IF NOT EXISTS mk_files_live ON mk_files (table_id, removed_seq, added_seq)",
    "CREATE INDEX IF NOT EXISTS mk_files_added ON mk_files (table_id, added_seq)",
    "CREATE INDEX IF NOT EXISTS mk_commits_merge ON mk_commits (merge_id)",
]

# Columns added after a catalog's tables may have been created: (table, column, type), added where missing.
# ``mk_files.order_seq``: where a file sits in the table's commit order when that is not its commit (a compaction
# rebased over commits that landed while it ran, ``_compaction``); NULL: its ``added_seq``.
_ADDED_COLUMNS = [("mk_files", "order_seq", "BIGINT")]


class Cursor:
    """A thin cursor that always takes ``?`` placeholders and returns lists of tuples."""

    def __init__(self, raw: Any, placeholder: str) -> None:
        self._raw = raw
        self._placeholder = placeholder

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._placeholder != "?":
            sql = sql.replace("?", self._placeholder)
        self._raw.execute(sql, tuple(params))
        if self._raw.description is None:
            return []
        return [tuple(r) for r in self._raw.fetchall()]

    def insert_returning_id(self, sql: str, params: Sequence[Any]) -> int:
        rows = self.execute(sql + " RETURNING " + ("table_id" if "mk_tables" in sql else "file_id"), params)
        return int(rows[0][0])


class Catalog:
    """Backend-neutral catalog access. ``read()`` and ``write()`` are context managers yielding a Cursor."""

    uri: str

    @contextlib.contextmanager
    def read(self) -> Iterator[Cursor]:
        raise NotImplementedError
        yield  # pragma: no cover

    @contextlib.contextmanager
    def write(self, lock_table_id: int | None = None) -> Iterator[Cursor]:
        raise NotImplementedError
        yield  # pragma: no cover

    def lock_tables(self, cur: Cursor, table_ids: Sequence[int]) -> None:
        """Inside ``write()``: lock several tables' rows for a multi-table commit (ids in ascending order).
        SQLite needs nothing: ``BEGIN IMMEDIATE`` already holds the database's write lock."""

    def close(self) -> None:
        pass


def _is_locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class SqliteCatalog(Catalog):
    """SQLite in WAL mode. One connection per catalog object, guarded by a lock (the driver may be threaded)."""

    RETRIES = 60

    def __init__(self, path: str) -> None:
        import os

        self.uri = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
        self._retry(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self.write() as cur:
            for stmt in _SCHEMA:
                cur.execute(stmt.format(serial="INTEGER"))
            for table, column, sql_type in _ADDED_COLUMNS:
                if column not in {r[1] for r in cur.execute(f"PRAGMA table_info({table})")}:
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}")

    def _retry(self, fn: Any) -> Any:
        for attempt in range(self.RETRIES):
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _is_locked(exc) or attempt == self.RETRIES - 1:
                    raise
                time.sleep(min(0.5, 0.01 * (2 ** min(attempt, 6))) * (0.5 + random.random()))
        return None  # pragma: no cover

    @contextlib.contextmanager
    def read(self) -> Iterator[Cursor]:
        with self._lock:
            if self._conn.in_transaction:  # nested inside another read or write: same snapshot
                yield Cursor(self._conn.cursor(), "?")
                return
            # A deferred transaction gives the reads inside it one consistent snapshot (WAL).
            self._retry(lambda: self._conn.execute("BEGIN"))
            try:
                yield Cursor(self._conn.cursor(), "?")
            finally:
                self._conn.execute("COMMIT")

    @contextlib.contextmanager
    def write(self, lock_table_id: int | None = None) -> Iterator[Cursor]:
        with self._lock:
            if self._conn.in_transaction:
                raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "Nested journal catalog write transaction")
            self._retry(lambda: self._conn.execute("BEGIN IMMEDIATE"))
            try:
                yield Cursor(self._conn.cursor(), "?")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                try:
                    self._retry(lambda: self._conn.execute("COMMIT"))
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("The journal catalog lives on the driver and is not picklable")


class PostgresCatalog(Catalog):
    """PostgreSQL through psycopg 3 (imported lazily: only this backend needs it)."""

    def __init__(self, uri: str) -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MergekitError(
                ErrorCode.PLUGIN_LOAD_ERROR,
                "A postgresql:// catalog_uri needs psycopg 3: pip install 'psycopg[binary]'",
            ) from exc
        self.uri = uri
        self._psycopg = psycopg
        self._lock = threading.RLock()
        self._conn = psycopg.connect(uri, autocommit=True)
        with self.write() as cur:
            # Concurrent first connections would race on CREATE TABLE IF NOT EXISTS; serialise them.
            cur.execute("SELECT pg_advisory_xact_lock(7311031)")
            for stmt in _SCHEMA:
                cur.execute(stmt.format(serial="BIGSERIAL"))
            for table, column, sql_type in _ADDED_COLUMNS:
                cur.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {sql_type}")

    @contextlib.contextmanager
    def read(self) -> Iterator[Cursor]:
        with self._lock, self._conn.transaction():
            cur = self._conn.cursor()
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield Cursor(cur, "%s")

    @contextlib.contextmanager
    def write(self, lock_table_id: int | None = None) -> Iterator[Cursor]:
        with self._lock, self._conn.transaction():
            cur = Cursor(self._conn.cursor(), "%s")
            if lock_table_id is not None:
                cur.execute("SELECT table_id FROM mk_tables WHERE table_id = ? FOR UPDATE", (lock_table_id,))
            yield cur

    def lock_tables(self, cur: Cursor, table_ids: Sequence[int]) -> None:
        for table_id in sorted(table_ids):
            cur.execute("SELECT table_id FROM mk_tables WHERE table_id = ? FOR UPDATE", (table_id,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("The journal catalog lives on the driver and is not picklable")


def open_catalog(uri: str) -> Catalog:
    """``postgresql://...`` -> PostgreSQL; anything else is a SQLite file path (``sqlite:///`` accepted)."""
    if uri.startswith(("postgresql://", "postgres://")):
        return PostgresCatalog(uri)
    if uri.startswith("sqlite:///"):
        uri = uri[len("sqlite://") :]
    try:
        return SqliteCatalog(uri)
    except sqlite3.Error as exc:
        raise MergekitError(ErrorCode.STORAGE_ERROR, f"Cannot open journal catalog {uri}: {exc}") from exc
