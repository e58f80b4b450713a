"""The partition registry: merge tables, their schemes and their children, in a small SQLite database.

Children's rows live in the base connector; this registry only says which base tables make up which merge
table and which keys each holds. Every DDL statement is one SQLite transaction. Ids come from one
sequence, like MonetDB's object ids, and appear in the system tables.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import attrs

from mergekit.spi import CheckConstraint, ColumnMetadata, PartitionBounds, PartitionScheme, SchemaTableName

__all__ = ["Registry", "MergeTableRow", "ChildRow"]

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS pt_ids (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT)",
    """CREATE TABLE IF NOT EXISTS pt_merge_tables (
        table_id INTEGER PRIMARY KEY, schema_name TEXT NOT NULL, table_name TEXT NOT NULL,
        columns BLOB NOT NULL, primary_key BLOB NOT NULL, scheme BLOB, scheme_id INTEGER, column_id INTEGER,
        UNIQUE (schema_name, table_name))""",
    # CHECK constraints of merge tables (a pickled tuple of CheckConstraint); added to registries made before them
    "ALTER TABLE pt_merge_tables ADD COLUMN checks BLOB",
    """CREATE TABLE IF NOT EXISTS pt_children (
        child_id INTEGER PRIMARY KEY, schema_name TEXT NOT NULL, table_name TEXT NOT NULL,
        parent_id INTEGER NOT NULL, bounds BLOB, UNIQUE (schema_name, table_name))""",
]


@attrs.frozen(kw_only=True)
class MergeTableRow:
    table_id: int
    name: SchemaTableName
    columns: tuple[ColumnMetadata, ...]
    primary_key: tuple[str, ...]
    scheme: PartitionScheme | None
    scheme_id: int | None
    column_id: int | None
    check_constraints: tuple[CheckConstraint, ...] = ()


@attrs.frozen(kw_only=True)
class ChildRow:
    child_id: int
    name: SchemaTableName
    parent_id: int
    bounds: PartitionBounds | None


class Registry:
    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        self._conn.execute("PRAGMA journal_mode=WAL")
        with self.write() as cur:
            for stmt in _SCHEMA:
                if stmt.startswith("ALTER TABLE pt_merge_tables ADD COLUMN checks"):
                    have = {row[1] for row in cur.execute("PRAGMA table_info(pt_merge_tables)").fetchall()}
                    if "checks" in have:
                        continue
                cur.execute(stmt)

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Cursor]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn.cursor()
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def next_id(self, cur: sqlite3.Cursor, what: str) -> int:
        cur.execute("INSERT INTO pt_ids (what) VALUES (?)", (what,))
        return int(cur.lastrowid or 0)

    # -- reads (each a consistent snapshot under the lock) ---------------------------------------------------

    def merge_tables(self) -> list[MergeTableRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT table_id, schema_name, table_name, columns, primary_key, scheme, scheme_id, column_id, "
                "checks FROM pt_merge_tables ORDER BY table_id"
            ).fetchall()
        return [_merge_row(r) for r in rows]

    def children(self) -> list[ChildRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT child_id, schema_name, table_name, parent_id, bounds FROM pt_children ORDER BY child_id"
            ).fetchall()
        return [
            ChildRow(
                child_id=r[0],
                name=SchemaTableName(schema=r[1], table=r[2]),
                parent_id=r[3],
                bounds=pickle.loads(r[4]) if r[4] is not None else None,
            )
            for r in rows
        ]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("The partition registry lives on the driver and is not picklable")


def _merge_row(r: tuple[Any, ...]) -> MergeTableRow:
    return MergeTableRow(
        table_id=r[0],
        name=SchemaTableName(schema=r[1], table=r[2]),
        columns=pickle.loads(r[3]),
        primary_key=pickle.loads(r[4]),
        scheme=pickle.loads(r[5]) if r[5] is not None else None,
        scheme_id=r[6],
        column_id=r[7],
        check_constraints=pickle.loads(r[8]) if r[8] is not None else (),
    )


def dumps(value: Any) -> bytes:
    return pickle.dumps(value)
