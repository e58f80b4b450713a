"""The commit of a statement: the staged rows of the tags the fragments name, applied to the target in one
database transaction that also drops the staging table (``finish_merge``, ``finish_delete``, ``finish_update``).

Deleted rows and rows whose key changes go first (``DELETE ... USING staging``), then the other updated rows
(``UPDATE ... FROM staging``), then inserted rows and the new versions of moved rows (``INSERT ... SELECT``). The
columns an INSERT case leaves to the database (``Staging.insert_defaults``: a ``DEFAULT now()``, a sequence, an
identity) are left out of the INSERT of that case's rows, so the database fills them as it does for psql.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mergekit.errors import ErrorCode, MergekitError

from ._catalog import Catalog
from ._db import POSTGRESQL, SQLITE, XMIN, DbConfig, db_errors, quote, transaction
from ._staging import end_lease
from ._write import CASE, OP, TAG, SqlFragment, Staging, drop_staging, fault, rid


def apply_staged(catalog: Catalog, st: Staging, fragments: Sequence[Any]) -> int:
    """Apply the staged rows of ``fragments``' tags to the target and drop the staging table, in one
    transaction; returns the number of target rows changed."""
    frags = [f for f in fragments if isinstance(f, SqlFragment)]
    cfg, h = catalog.cfg, st.table
    if not frags:
        drop_staging(catalog, st)
        return 0
    tags = [f.tag for f in frags]
    expected_changed = sum(f.deleted + f.updated for f in frags)
    if cfg.kind == POSTGRESQL:
        tag_filter, tag_param = f"s.{TAG} = ANY(%s)", tags
    else:
        tag_filter, tag_param = f"s.{TAG} IN (SELECT value FROM json_each(?))", json.dumps(tags)
    keys = list(h.key)
    moved = sum(f.moved for f in frags)
    key_changed = " OR ".join(f"s.{quote(k)} IS NOT s.{rid(i)}" for i, k in enumerate(keys) if k in st.data_columns)
    if cfg.kind == POSTGRESQL:
        key_changed = key_changed.replace(" IS NOT ", " IS DISTINCT FROM ")
    key_changed = f"({key_changed})" if moved and key_changed else "FALSE"
    target, stage = h.qualified, st.qualified
    col = h.db_column  # the target's columns by their database names; the staging table's are the engine's
    # PostgreSQL: a row changed by another writer since the scan read it has another xmin: it is not found, so the
    # counts below differ and the statement fails (no lost update)
    version = f" AND t.xmin::text::bigint = s.{XMIN}" if h.versioned else ""
    deleted_ops = f"(s.{OP} = 2 OR (s.{OP} = 3 AND {key_changed}))"
    if cfg.kind == POSTGRESQL:
        match = " AND ".join(f"t.{col(k)} = s.{rid(i)}" for i, k in enumerate(keys))
        delete = f"DELETE FROM {target} t USING {stage} s WHERE {tag_filter} AND {deleted_ops} AND {match}{version}"
    else:
        tuple_keys = ", ".join(col(k) for k in keys)
        rids = ", ".join(f"s.{rid(i)}" for i in range(len(keys)))
        delete = (
            f"DELETE FROM {target} WHERE ({tuple_keys}) IN "
            f"(SELECT {rids} FROM {stage} s WHERE {tag_filter} AND {deleted_ops})"
        )
    assigned = [c for c in st.data_columns if c not in keys and (not st.set_columns or c in st.set_columns)]
    # an UPDATE that assigns only key columns still matches its rows (they are counted): the key to itself
    assignments = ", ".join(f"{col(c)} = s.{quote(c)}" for c in assigned) or (
        f"{col(keys[0])} = s.{rid(0)}" if keys else ""
    )
    update_match = " AND ".join(f"t.{col(k)} = s.{rid(i)}" for i, k in enumerate(keys))
    not_moved = f" AND NOT {key_changed}" if moved else ""
    update = (
        f"UPDATE {target} AS t SET {assignments} FROM {stage} s "
        f"WHERE {tag_filter} AND s.{OP} = 3{not_moved} AND {update_match}{version}"
    )
    changed = 0
    has_deletes = any(f.deleted for f in frags) or moved > 0
    has_updates = sum(f.updated for f in frags) > moved
    has_inserts = any(f.inserted for f in frags) or moved > 0
    with catalog.conn() as conn, db_errors(f"Cannot apply the statement to table {h.db_name}"):
        with transaction_on(cfg, conn):
            if cfg.kind == POSTGRESQL:  # a row locked by another writer for too long is a conflict, not a hang
                conn.execute(f"SET LOCAL lock_timeout = '{int(cfg.busy_timeout * 1000)}ms'")
                conn.execute(f"ANALYZE {stage}")
            if has_deletes and keys:
                changed += conn.execute(delete, (tag_param,)).rowcount
            if has_updates and keys:
                changed += conn.execute(update, (tag_param,)).rowcount
            if has_inserts:
                for columns, rows, moved_rows in _insert_groups(st, frags, key_changed):
                    where = f"FROM {stage} s WHERE {tag_filter} AND {rows}"
                    _insert(conn, st, columns, where, tag_param, moved_rows)
            if changed != expected_changed:
                raise MergekitError(
                    ErrorCode.TRANSACTION_CONFLICT,
                    f"Table {h.db_name}: {expected_changed - changed} of the {expected_changed} rows this statement "
                    "changes were deleted or changed concurrently",
                )
            if fault(cfg, "finish") is not None:
                raise MergekitError(
                    ErrorCode.GENERIC_INTERNAL_ERROR, "sqldb: finish fails on purpose (fault_injection)"
                )
            conn.execute(f"DROP TABLE {stage}")
    end_lease(catalog, st.stage)
    return changed


def _insert_groups(
    st: Staging, frags: Sequence[SqlFragment], key_changed: str
) -> list[tuple[tuple[str, ...], str, bool]]:
    """The INSERTs of the apply, only those that have rows: (the columns written, the staged rows, whether the row
    keeps its identity value): the inserted rows that write every column, the new versions of rows whose key
    changed (which keep their values, ``GENERATED ALWAYS`` identity included), and one per set of columns the
    database fills for the rows of some INSERT cases. (PostgreSQL refuses an INSERT that names a ``GENERATED
    ALWAYS`` column, rows or not.)"""
    inserted: dict[int, int] = {}
    for f in frags:
        for number, n in f.insert_cases:
            inserted[number] = inserted.get(number, 0) + n
    listed = [n for n, _ in st.insert_defaults]
    out = []
    if not st.insert_defaults and any(f.inserted for f in frags):
        out.append((st.data_columns, f"s.{OP} = 1", False))
    elif any(n not in listed for n in inserted):
        out.append((st.data_columns, f"s.{OP} = 1 AND s.{CASE} NOT IN ({', '.join(map(str, listed))})", False))
    if sum(f.moved for f in frags):
        out.append((st.data_columns, f"s.{OP} = 3 AND {key_changed}", True))
    groups: dict[tuple[str, ...], list[int]] = {}
    for number, filled in st.insert_defaults:
        if inserted.get(number):
            groups.setdefault(filled, []).append(number)
    for filled, numbers in groups.items():
        written = tuple(c for c in st.data_columns if c not in filled)
        out.append((written, f"s.{OP} = 1 AND s.{CASE} IN ({', '.join(map(str, numbers))})", False))
    return out


def _insert(conn: Any, st: Staging, columns: tuple[str, ...], rows: str, tag_param: Any, moved: bool) -> None:
    """``INSERT INTO target (columns) SELECT columns <rows>`` (a moved row keeps its identity value: ``OVERRIDING
    SYSTEM VALUE``); with no column to write (the database fills them all), one ``INSERT ... DEFAULT VALUES`` per
    staged row, which no set-based form expresses."""
    target = st.table.qualified
    if columns:
        names = ", ".join(st.table.db_column(c) for c in columns)
        values = ", ".join(f"s.{quote(c)}" for c in columns)
        overriding = " OVERRIDING SYSTEM VALUE" if moved and st.cfg.kind == POSTGRESQL else ""
        conn.execute(f"INSERT INTO {target} ({names}){overriding} SELECT {values} {rows}", (tag_param,))
        return
    (count,) = conn.execute(f"SELECT count(*) {rows}", (tag_param,)).fetchone()
    for _ in range(int(count)):
        conn.execute(f"INSERT INTO {target} DEFAULT VALUES")


class transaction_on:
    """A transaction on the driver's autocommit connection (PostgreSQL) or the SQLite connection."""

    def __init__(self, cfg: DbConfig, conn: Any) -> None:
        self._cfg, self._conn = cfg, conn
        self._tx: Any = None

    def __enter__(self) -> Any:
        if self._cfg.kind == SQLITE:
            self._tx = transaction(self._cfg, self._conn)
        else:
            self._tx = self._conn.transaction()
        return self._tx.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._tx.__exit__(*exc)
