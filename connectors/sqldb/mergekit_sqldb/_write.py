"""Writes: one staging table per statement, filled by the executors, applied in one database transaction.

``begin_merge`` (and the row-level ``begin_delete`` / ``begin_update``) creates ``_mk_stage_<uuid>`` next to
the target table (UNLOGGED in PostgreSQL): an attempt tag, the operation, the old key (``_mk_rid_<i>``) and the
new row's columns. Every sink (one per executor task attempt) stages its rows under a fresh uuid, the attempt
tag: PostgreSQL with ``COPY ... FROM STDIN (FORMAT csv)`` in one transaction committed by ``finish()``, SQLite
with ``executemany`` per page. Its fragment names the tag and the row counts. ``finish_*`` applies only the
rows of those tags, set-based, in ONE transaction that also drops the staging table:

1. ``DELETE`` the target rows of DELETE rows, and of UPDATE rows whose key changed;
2. ``UPDATE ... FROM`` the rows of the other UPDATE rows;
3. ``INSERT ... SELECT`` the INSERT rows and the new rows of key-changing UPDATEs.

A retried or speculative task staged under another tag, which no fragment names: it is never applied. A
constraint the database enforces (key, NOT NULL, CHECK, foreign key) fails the statement with
``CONSTRAINT_VIOLATION``; fewer target rows than staged changes (a concurrent writer deleted some, or changed
some: PostgreSQL row ids carry the row's ``xmin``) with
``TRANSACTION_CONFLICT``, as do serialization failures and deadlocks.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from collections.abc import Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    MERGE_PAGE_LAYOUT,
    ConnectorMergeSink,
    ConnectorMergeTableHandle,
    ConnectorPageSinkProvider,
    ConnectorSession,
    MergeOperation,
)

from ._catalog import Catalog, SqlTableHandle
from ._db import POSTGRESQL, SQLITE, STAGE_PREFIX, XMIN, DbConfig, connect, db_errors, quote, sqlite_values, transaction

TAG, OP = "_mk_tag", "_mk_op"


def rid(i: int) -> str:
    return f"_mk_rid_{i}"


@attrs.frozen(kw_only=True)
class Staging:
    """What sinks and the commit agree on: the staging table and the target's layout (picklable)."""

    cfg: DbConfig
    table: SqlTableHandle
    stage: str
    data_columns: tuple[str, ...]  # the page's data channels: the visible columns, in table order

    @property
    def qualified(self) -> str:
        return f"{quote(self.table.db_schema)}.{quote(self.stage)}"

    @property
    def columns(self) -> list[str]:
        version = [XMIN] if self.table.versioned else []
        return [TAG, OP] + [rid(i) for i in range(len(self.table.key))] + version + list(self.data_columns)


@attrs.frozen(kw_only=True)
class SqlMergeTableHandle(ConnectorMergeTableHandle):
    staging: Staging


@attrs.frozen(kw_only=True)
class SqlFragment:
    """One sink attempt's staged rows: its tag and how many rows of each operation it staged."""

    tag: str
    inserted: int = 0
    deleted: int = 0
    updated: int = 0
    moved: int = 0  # of the updated rows, those whose key changes (deleted and inserted whole)


def fault(cfg: DbConfig, where: str) -> str | None:
    """The catalog's ``fault_injection`` option for ``where`` (tests only): ``<where>[:<argument>]``."""
    spec = cfg.fault_injection
    if spec and spec.split(":", 1)[0] == where:
        return spec.split(":", 1)[1] if ":" in spec else ""
    return None


# ---- the staging table ---------------------------------------------------------------------------------------


def create_staging(catalog: Catalog, h: SqlTableHandle, data_columns: Sequence[str]) -> Staging:
    cfg = catalog.cfg
    st = Staging(cfg=cfg, table=h, stage=f"{STAGE_PREFIX}{uuid.uuid4().hex}", data_columns=tuple(data_columns))
    keys = [h.column(k) for k in h.key]
    defs = [f"{TAG} TEXT NOT NULL", f"{OP} SMALLINT NOT NULL"]
    defs += [f"{rid(i)} {k.db_type}" for i, k in enumerate(keys)]
    defs += [f"{XMIN} BIGINT"] if h.versioned else []
    defs += [f"{quote(c)} {h.column(c).db_type}" for c in data_columns]
    unlogged = "UNLOGGED " if cfg.kind == POSTGRESQL else ""
    catalog.rows(f"CREATE {unlogged}TABLE {st.qualified} ({', '.join(defs)})")
    return st


def drop_staging(catalog: Catalog, st: Staging) -> None:
    with catalog.conn() as c, db_errors(f"Cannot drop staging table {st.stage}"):
        if catalog.cfg.kind == POSTGRESQL:
            c.execute("SET lock_timeout = '30s'")
        c.execute(f"DROP TABLE IF EXISTS {st.qualified}")


# ---- sinks: stage rows under the attempt's tag ------------------------------------------------------------------


def _pg_csv(columns: list[pa.Array], names: list[str]) -> bytes:
    fixed = []
    for col in columns:
        if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
            col = pa.array([None if v is None else "\\x" + v.hex() for v in col.to_pylist()], pa.string())
        fixed.append(col)
    buf = io.BytesIO()
    pacsv.write_csv(pa.Table.from_arrays(fixed, names=names), buf, pacsv.WriteOptions(include_header=False))
    return buf.getvalue()


class StagingWriter:
    """Writes rows of one attempt into the staging table (on an executor). PostgreSQL: one transaction that
    :meth:`commit` ends (a killed task's rows vanish with it); SQLite: a short transaction per batch."""

    def __init__(self, st: Staging) -> None:
        self.st = st
        self.tag = uuid.uuid4().hex
        self._conn: Any = None
        self.pages = 0

    def _connection(self) -> Any:
        if self._conn is None:
            self._conn = connect(self.st.cfg)
        return self._conn

    def write(self, op: pa.Array, row_ids: list[pa.Array], data: list[pa.Array]) -> None:
        """Stage ``len(op)`` rows: their operations, old key columns and new values (one array per column)."""
        n = len(op)
        if n == 0:
            return
        self.pages += 1
        spec = fault(self.st.cfg, "sink_exit")
        if spec is not None:
            page, _, marker = spec.partition(":")
            if self.pages >= int(page or 1) and (not marker or not os.path.exists(marker)):
                if marker:
                    open(marker, "w").close()
                os._exit(17)  # a killed executor process: no abort, no rollback from this side
        st = self.st
        columns = [pa.array([self.tag] * n, pa.string()), op.cast(pa.int16()), *row_ids, *data]
        with db_errors(f"Cannot stage rows for table {st.table.db_name}"):
            conn = self._connection()
            if st.cfg.kind == POSTGRESQL:
                names = [quote(c) for c in st.columns]
                with conn.cursor() as cur:
                    with cur.copy(f"COPY {st.qualified} ({', '.join(names)}) FROM STDIN (FORMAT csv)") as copy:
                        copy.write(_pg_csv(columns, st.columns))
            else:
                types = [c.type for c in columns]
                values = [sqlite_values(col, t) for col, t in zip(columns, types, strict=False)]
                marks = ", ".join("?" for _ in columns)
                with transaction(st.cfg, conn):
                    conn.executemany(f"INSERT INTO {st.qualified} VALUES ({marks})", list(zip(*values, strict=False)))

    def commit(self) -> None:
        if self._conn is not None:
            with db_errors(f"Cannot stage rows for table {self.st.table.db_name}"):
                if self.st.cfg.kind == POSTGRESQL:
                    self._conn.commit()
                self._conn.close()
            self._conn = None

    def rollback(self) -> None:
        if self._conn is not None:
            try:
                if self.st.cfg.kind == POSTGRESQL:
                    self._conn.rollback()
                else:  # committed batches stay; abort_* drops the whole staging table
                    pass
                self._conn.close()
            finally:
                self._conn = None


def moved_rows(st: Staging, op: pa.Array, keys: list[pa.Array], data: list[pa.Array]) -> int:
    """How many UPDATE rows change their key (the key columns' new values differ from the row id's)."""
    columns = dict(zip(st.data_columns, data, strict=True))
    changed = None
    for i, k in enumerate(st.table.key):
        if k not in columns:
            continue
        differs = pc.fill_null(pc.not_equal(columns[k], keys[i]), True)
        changed = differs if changed is None else pc.or_(changed, differs)
    if changed is None:
        return 0
    return int(pc.sum(pc.and_(pc.equal(op, int(MergeOperation.UPDATE)), changed)).as_py() or 0)


def row_id_fields(row_ids: pa.Array, h: SqlTableHandle) -> dict[str, pa.Array]:
    """The fields of ``$row_id`` values by name (:attr:`SqlTableHandle.rid_names`); a null row id (an INSERT
    row) reads null in every field."""
    if isinstance(row_ids, pa.ChunkedArray):
        row_ids = row_ids.combine_chunks()
    return dict(zip(h.rid_names, row_ids.flatten(), strict=True))


def key_arrays(row_ids: pa.Array, h: SqlTableHandle) -> list[pa.Array]:
    """What the staging table's row id columns receive: the key fields, then the row version."""
    if row_ids.null_count == len(row_ids):  # INSERT rows only (an INSERT sends placeholder row ids of any type)
        types = [h.column(k).type for k in h.key] + ([pa.int64()] if h.versioned else [])
        return [pa.nulls(len(row_ids), t) for t in types]
    fields = row_id_fields(row_ids, h)
    return [fields[k] for k in h.key] + ([fields[XMIN]] if h.versioned else [])


class SqlMergeSink(ConnectorMergeSink):
    def __init__(self, st: Staging) -> None:
        self._writer = StagingWriter(st)
        self._n_data = len(st.data_columns)
        self._counts = {MergeOperation.INSERT: 0, MergeOperation.DELETE: 0, MergeOperation.UPDATE: 0}
        self._moved = 0

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        ops = page.column(MERGE_PAGE_LAYOUT.operation)
        valid = pc.is_in(ops, value_set=pa.array([1, 2, 3], pa.int8()))
        if not pc.all(valid).as_py():
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "sqldb sink received an operation other than 1-3")
        for op in self._counts:
            self._counts[op] += int(pc.sum(pc.equal(ops, int(op))).as_py() or 0)
        row_ids = key_arrays(page.column(MERGE_PAGE_LAYOUT.row_id), self._writer.st.table)
        data = [page.column(i) for i in range(self._n_data)]
        if self._counts[MergeOperation.UPDATE]:
            self._moved += moved_rows(self._writer.st, ops, row_ids, data)
        self._writer.write(ops, row_ids, data)

    def finish(self) -> Sequence[Any]:
        self._writer.commit()
        c = self._counts
        return [
            SqlFragment(
                tag=self._writer.tag,
                inserted=c[MergeOperation.INSERT],
                deleted=c[MergeOperation.DELETE],
                updated=c[MergeOperation.UPDATE],
                moved=self._moved,
            )
        ]

    def abort(self) -> None:
        self._writer.rollback()


@attrs.frozen
class SqlPageSinkProvider(ConnectorPageSinkProvider):
    def create_merge_sink(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, sink_id: int
    ) -> ConnectorMergeSink:
        assert isinstance(merge_handle, SqlMergeTableHandle)
        return SqlMergeSink(merge_handle.staging)


# ---- the commit: apply the fragments' rows in one transaction ---------------------------------------------------


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
    set_columns = [c for c in st.data_columns if c not in keys] or [c for c in st.data_columns][:1]
    assignments = ", ".join(f"{col(c)} = s.{quote(c)}" for c in set_columns)
    update_match = " AND ".join(f"t.{col(k)} = s.{rid(i)}" for i, k in enumerate(keys))
    not_moved = f" AND NOT {key_changed}" if moved else ""
    update = (
        f"UPDATE {target} AS t SET {assignments} FROM {stage} s "
        f"WHERE {tag_filter} AND s.{OP} = 3{not_moved} AND {update_match}{version}"
    )
    columns = ", ".join(col(c) for c in st.data_columns)
    insert = (
        f"INSERT INTO {target} ({columns}) SELECT {', '.join('s.' + quote(c) for c in st.data_columns)} "
        f"FROM {stage} s WHERE {tag_filter} AND (s.{OP} = 1 OR (s.{OP} = 3 AND {key_changed}))"
    )
    changed = 0
    has_deletes = any(f.deleted for f in frags) or moved > 0
    has_updates = sum(f.updated for f in frags) > moved and bool(set_columns)
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
                conn.execute(insert, (tag_param,))
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
    return changed


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
