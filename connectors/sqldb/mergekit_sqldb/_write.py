"""Writes: one staging table per statement, filled by the executors, applied in one database transaction.

``begin_merge`` (and the row-level ``begin_delete`` / ``begin_update``) creates ``_mk_stage_<uuid>`` next to
the target table (UNLOGGED in PostgreSQL): an attempt tag, the operation, the old key (``_mk_rid_<i>``) and the
new row's columns. Every sink (one per executor task attempt) stages its rows under a fresh uuid, the attempt
tag: PostgreSQL with ``COPY ... FROM STDIN (FORMAT csv)`` in one transaction committed by ``finish()``, SQLite
with ``executemany`` per page. Its fragment names the tag and the row counts. ``finish_*`` applies only the
rows of those tags, set-based, in ONE transaction that also drops the staging table (``_apply``).

A retried or speculative task staged under another tag, which no fragment names: it is never applied. A
constraint the database enforces (key, NOT NULL, CHECK, foreign key) fails the statement with
``CONSTRAINT_VIOLATION``; fewer target rows than staged changes (a concurrent writer deleted some, or changed
some: PostgreSQL row ids carry the row's ``xmin``) with
``TRANSACTION_CONFLICT``, as do serialization failures and deadlocks.
"""

from __future__ import annotations

import io
import os
import uuid
from collections.abc import Mapping, Sequence
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
from ._db import POSTGRESQL, XMIN, DbConfig, connect, db_errors, quote, sqlite_values, transaction
from ._staging import end_lease, new_stage_name, take_lease

TAG, OP, CASE = "_mk_tag", "_mk_op", "_mk_case"


def rid(i: int) -> str:
    return f"_mk_rid_{i}"


@attrs.frozen(kw_only=True)
class Staging:
    """What sinks and the commit agree on: the staging table and the target's layout (picklable)."""

    cfg: DbConfig
    table: SqlTableHandle
    stage: str
    data_columns: tuple[str, ...]  # the page's data channels: the visible columns, in table order
    #: (case number, columns): the columns the database fills for that INSERT case's rows (begin_merge's
    #: insert_case_defaults); when there are any, the staging table keeps each row's case number
    insert_defaults: tuple[tuple[int, tuple[str, ...]], ...] = ()
    #: the columns the statement's UPDATEs assign (begin_merge's update_case_columns): the only ones the apply's
    #: UPDATE sets (PostgreSQL refuses to set a GENERATED ALWAYS column, even to its own value)
    set_columns: tuple[str, ...] = ()

    @property
    def qualified(self) -> str:
        return f"{quote(self.table.db_schema)}.{quote(self.stage)}"

    @property
    def columns(self) -> list[str]:
        version = [XMIN] if self.table.versioned else []
        case = [CASE] if self.insert_defaults else []
        keys = [rid(i) for i in range(len(self.table.key))]
        return [TAG, OP, *case, *keys, *version, *self.data_columns]


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
    #: (case number, INSERT rows) when the database fills columns of some INSERT case (Staging.insert_defaults)
    insert_cases: tuple[tuple[int, int], ...] = ()


def fault(cfg: DbConfig, where: str) -> str | None:
    """The catalog's ``fault_injection`` option for ``where`` (tests only): ``<where>[:<argument>]``."""
    spec = cfg.fault_injection
    if spec and spec.split(":", 1)[0] == where:
        return spec.split(":", 1)[1] if ":" in spec else ""
    return None


# ---- the staging table ---------------------------------------------------------------------------------------


def create_staging(
    catalog: Catalog,
    h: SqlTableHandle,
    data_columns: Sequence[str],
    insert_defaults: Mapping[int, Sequence[str]] | None = None,
    set_columns: Sequence[str] = (),
) -> Staging:
    cfg = catalog.cfg
    st = Staging(
        cfg=cfg,
        table=h,
        stage=new_stage_name(cfg.kind),
        data_columns=tuple(data_columns),
        insert_defaults=tuple(sorted((n, tuple(cols)) for n, cols in (insert_defaults or {}).items() if cols)),
        set_columns=tuple(set_columns),
    )
    keys = [h.column(k) for k in h.key]
    defs = [f"{TAG} TEXT NOT NULL", f"{OP} SMALLINT NOT NULL"] + ([f"{CASE} INTEGER"] if st.insert_defaults else [])
    defs += [f"{rid(i)} {k.db_type}" for i, k in enumerate(keys)]
    defs += [f"{XMIN} BIGINT"] if h.versioned else []
    defs += [f"{quote(c)} {h.column(c).db_type}" for c in data_columns]
    unlogged = "UNLOGGED " if cfg.kind == POSTGRESQL else ""
    take_lease(catalog, st.stage)  # before the table exists: no cleaner may take it for abandoned
    try:
        catalog.rows(f"CREATE {unlogged}TABLE {st.qualified} ({', '.join(defs)})")
    except BaseException:
        end_lease(catalog, st.stage)
        raise
    return st


def drop_staging(catalog: Catalog, st: Staging) -> None:
    with catalog.conn() as c, db_errors(f"Cannot drop staging table {st.stage}"):
        if catalog.cfg.kind == POSTGRESQL:
            c.execute("SET lock_timeout = '30s'")
        c.execute(f"DROP TABLE IF EXISTS {st.qualified}")
    end_lease(catalog, st.stage)


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

    def write(self, op: pa.Array, row_ids: list[pa.Array], data: list[pa.Array], case: pa.Array | None = None) -> None:
        """Stage ``len(op)`` rows: their operations, old key columns and new values (one array per column), and
        their case numbers when the staging table keeps them."""
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
        cases = [case.cast(pa.int32()) if case is not None else pa.nulls(n, pa.int32())] if st.insert_defaults else []
        columns = [pa.array([self.tag] * n, pa.string()), op.cast(pa.int16()), *cases, *row_ids, *data]
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
        self._insert_cases: dict[int, int] = {}

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
        cases = page.column(MERGE_PAGE_LAYOUT.case_number)
        if self._writer.st.insert_defaults and self._counts[MergeOperation.INSERT]:
            inserted = cases.filter(pc.equal(ops, int(MergeOperation.INSERT)))
            for item in pc.value_counts(inserted).to_pylist():
                self._insert_cases[item["values"]] = self._insert_cases.get(item["values"], 0) + item["counts"]
        self._writer.write(ops, row_ids, data, cases)

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
                insert_cases=tuple(sorted(self._insert_cases.items())),
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
