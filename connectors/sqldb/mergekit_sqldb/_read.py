"""Reads: primary-key range splits, and page sources that SELECT their range on the executors.

A table with a single integer key is cut into key ranges of about ``split_rows`` rows (from the key's min and
max and the table's estimated row count); any other table is one split. When the engine hands the MERGE source's
keys (``Constraint.value_sets``, see ``get_value_set_columns``) or a few key values (``equalities``), the splits
read only those keys: a MERGE of 1M rows into a 10M-row table reads 1M target rows, by the primary key index.
PostgreSQL splits are read with ``COPY (SELECT ...) TO STDOUT`` as CSV, parsed by Arrow; SQLite splits through a
cursor, ``batch_rows`` rows per Arrow batch.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from mergekit.spi import (
    ChainedPageSource,
    ColumnHandle,
    ConnectorIndex,
    ConnectorIndexHandle,
    ConnectorIndexProvider,
    ConnectorPageSource,
    ConnectorSession,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
    Constraint,
)

from ._catalog import Catalog, SqlTableHandle, sql_handle
from ._db import POSTGRESQL, XMIN, DbConfig, arrow_column, connect, db_errors, quote

#: The row id channel: a struct of the primary key's columns (named as the engine names them, so that the engine
#: names a row by its key in messages) and, on PostgreSQL, the row version.
ROW_ID = "$row_id"
#: Key values per split when a scan reads only given keys.
_KEYS_PER_SPLIT = 100_000
_MAX_SPLITS = 64
#: Bytes of COPY output parsed as one Arrow batch.
_COPY_BLOCK_BYTES = 4 << 20


def row_id_type(h: SqlTableHandle) -> pa.DataType:
    """The type of ``$row_id``: a struct of the key columns (and, for an UPDATE of a key through the row-level
    SPI, of the other columns too: ``row_id_columns``), then the row version on PostgreSQL."""
    return pa.struct([pa.field(n, pa.int64() if n == XMIN else h.column(n).type) for n in h.rid_names])


@attrs.frozen(kw_only=True)
class SqlSplit(ConnectorSplit):
    """One SELECT: ``where`` is a SQL condition with placeholders (empty: the whole table), ``params`` its
    values."""

    where: str = ""
    params: tuple[Any, ...] = ()


def _key_values(h: SqlTableHandle, constraint: Constraint) -> list[Any] | None:
    """The key values the scan is restricted to, when the engine gave them for a single-column key."""
    if len(h.key) != 1:
        return None
    key = h.column(h.key[0])
    if not (pa.types.is_integer(key.type) or pa.types.is_string(key.type)):
        return None
    values = constraint.value_sets.get(key.name)
    if values is not None:
        try:
            return list(pc.cast(values, key.type).to_pylist())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None  # values outside the key's type: read everything, the engine filters
    equal = constraint.equalities.get(key.name)
    if equal is not None and all(isinstance(v, int if pa.types.is_integer(key.type) else str) for v in equal):
        if not any(isinstance(v, bool) for v in equal):
            return sorted(equal)
    return None


def key_splits(cfg: DbConfig, key: str, db_type: str, keys: list[Any]) -> list[SqlSplit]:
    """Splits reading the rows of ``keys`` (values of the single key column ``key``, its database name, of the
    database type
    ``db_type``) by the primary key index. PostgreSQL receives each share of the keys as one array literal (text
    cast to ``db_type[]``): psycopg would adapt a list of 100k values one by one, in Python."""
    k = quote(key)
    chunks = (keys[i : i + _KEYS_PER_SPLIT] for i in range(0, len(keys), _KEYS_PER_SPLIT))
    if cfg.kind == POSTGRESQL:
        where = f"{k} = ANY(%s::{db_type}[])"
        return [SqlSplit(where=where, params=(pg_array_literal(c),)) for c in chunks]
    where = f"{k} IN (SELECT value FROM json_each(?))"
    return [SqlSplit(where=where, params=(json.dumps(c),)) for c in chunks]


def pg_array_literal(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal of integers or strings (``{1,2}``, ``{"a","b\\"c"}``)."""
    if values and isinstance(values[0], int):  # the values of one typed key column: all alike
        return "{" + ",".join(map(str, values)) + "}"
    quoted = ('"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "{" + ",".join(quoted) + "}"


def plan_splits(catalog: Catalog, h: SqlTableHandle, constraint: Constraint) -> list[SqlSplit]:
    cfg = catalog.cfg
    keys = _key_values(h, constraint)
    if keys is not None:
        return key_splits(cfg, h.column(h.key[0]).db_name, h.column(h.key[0]).db_type, keys)
    if len(h.key) != 1 or not pa.types.is_integer(h.column(h.key[0]).type):
        return [SqlSplit()]
    k = h.db_column(h.key[0])
    low, high = catalog.rows(f"SELECT min({k}), max({k}) FROM {h.qualified}")[0]
    if low is None:
        return []
    if cfg.kind == POSTGRESQL:
        estimate = catalog.rows("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", (h.qualified,))
        rows = int(estimate[0][0]) if estimate and estimate[0][0] is not None and estimate[0][0] >= 0 else -1
        if rows < 0:
            rows = int(catalog.rows(f"SELECT count(*) FROM {h.qualified}")[0][0])
    else:
        rows = int(catalog.rows(f"SELECT count(*) FROM {h.qualified}")[0][0])
    n = max(1, min(_MAX_SPLITS, math.ceil(rows / cfg.split_rows), high - low + 1))
    if n == 1:
        return [SqlSplit()]
    bounds = [low + (high - low + 1) * i // n for i in range(1, n)]
    ph = cfg.ph
    splits = [SqlSplit(where=f"{k} < {ph}", params=(bounds[0],))]
    splits += [
        SqlSplit(where=f"{k} >= {ph} AND {k} < {ph}", params=(a, b)) for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    splits.append(SqlSplit(where=f"{k} >= {ph}", params=(bounds[-1],)))
    return splits


class SqlSplitManager(ConnectorSplitManager):
    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        h = sql_handle(table_handle)
        h.check_readable()
        return plan_splits(self._catalog, h, constraint)


class SqlPageSource(ConnectorPageSource):
    """SELECTs one split on an executor: PostgreSQL through COPY parsed by Arrow (:meth:`_copy_pages`), SQLite (and
    a scan without columns) through a cursor, ``batch_rows`` rows per Arrow batch."""

    def __init__(self, cfg: DbConfig, h: SqlTableHandle, split: SqlSplit, columns: Sequence[ColumnHandle]) -> None:
        self._cfg, self._h, self._split = cfg, h, split
        self._names = [c.name for c in columns]
        self._conn: Any = None
        # the physical columns to select, and where each requested channel comes from
        physical: list[str] = []
        self._rid = h.rid_names
        for name in self._names:
            for col in self._rid if name == ROW_ID else (name,):
                if col not in physical:
                    physical.append(col)
        self._physical = physical
        self._types = {c.name: c.type for c in h.columns}
        self._types[XMIN] = pa.int64()
        self._as_text = set()
        if cfg.kind == POSTGRESQL:
            for name in physical:
                t = self._types[name]
                if pa.types.is_decimal(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
                    self._as_text.add(name)

    def _batch(self, rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
        cols = list(zip(*rows, strict=False))
        arrays = {name: self._column(name, cols[i]) for i, name in enumerate(self._physical)}
        return self._assemble(arrays)

    def _select(self, name: str) -> str:
        """PostgreSQL sends decimals, dates and timestamps as text, which Arrow parses faster than Python builds
        ``Decimal`` and ``datetime`` objects (timestamps with time zone as UTC wall-clock time)."""
        t = self._types[name]
        if name == XMIN:
            return "xmin::text::bigint"
        column = self._h.db_column(name)
        if self._cfg.kind != POSTGRESQL or name not in self._as_text:
            return column
        if pa.types.is_timestamp(t) and t.tz is not None:
            return f"({column} AT TIME ZONE 'UTC')::text"
        return f"{column}::text"

    def _column(self, name: str, values: Sequence[Any]) -> pa.Array:
        t = self._types[name]
        if name in self._as_text:
            text = pa.array(values, pa.string())
            return text.cast(pa.timestamp("us")).cast(t) if pa.types.is_timestamp(t) else text.cast(t)
        return arrow_column(values, t, self._cfg.kind)

    def _assemble(self, arrays: dict[str, pa.Array]) -> pa.RecordBatch:
        out = []
        for name in self._names:
            if name != ROW_ID:
                out.append(arrays[name])
            else:
                out.append(pa.StructArray.from_arrays([arrays[k] for k in self._rid], names=list(self._rid)))
        return pa.RecordBatch.from_arrays(out, names=self._names)

    def pages(self) -> Iterator[pa.RecordBatch]:
        h, cfg = self._h, self._cfg
        select = ", ".join(self._select(c) for c in self._physical) or "1"
        sql = f"SELECT {select} FROM {h.qualified}" + (f" WHERE {self._split.where}" if self._split.where else "")
        if cfg.kind == POSTGRESQL and self._physical:
            yield from self._copy_pages(sql)
            return
        with db_errors(f"Cannot read table {h.db_name}"):
            self._conn = connect(cfg)
            if cfg.kind == POSTGRESQL:
                cursor = self._conn.cursor(name=f"mk_{uuid.uuid4().hex}")
                cursor.itersize = cfg.batch_rows
            else:
                cursor = self._conn.cursor()
                cursor.arraysize = cfg.batch_rows
            cursor.execute(sql, self._split.params) if self._split.params else cursor.execute(sql)
            while True:
                rows = cursor.fetchmany(cfg.batch_rows)
                if not rows:
                    break
                # a scan without columns (count(*)) selects a constant: only the row count matters
                yield self._batch(rows) if self._physical else pa.record_batch([pa.nulls(len(rows))], ["_"]).select([])

    def _copy_pages(self, sql: str) -> Iterator[pa.RecordBatch]:
        """PostgreSQL: ``COPY (<the SELECT>) TO STDOUT`` as CSV, parsed by Arrow a block of whole rows at a time
        (building a Python tuple per row costs several times more). NULL is an unquoted empty field and the empty
        string a quoted one; booleans are ``t`` / ``f``; decimals, dates, timestamps and row versions come as text
        (see :meth:`_select`) and bytea as ``\\x`` hex.

        PostgreSQL sends a COPY row per message, so a block ends at a row's end. The blocks are parsed here, on the
        thread that reads the connection: Arrow's streaming CSV reader would read ahead on a thread of its own, and
        a scan stopped early (``LIMIT``) would then cancel the COPY while that thread took the server's answer,
        leaving the connection waiting for it and the session open."""
        h = self._h
        read_options = pacsv.ReadOptions(column_names=self._physical, use_threads=False)
        parse_options = pacsv.ParseOptions(newlines_in_values=True)
        convert_options = pacsv.ConvertOptions(
            column_types={name: self._csv_type(name) for name in self._physical},
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=["t"],
            false_values=["f"],
        )

        def parse(rows: list[bytes]) -> pa.RecordBatch:
            block = pa.py_buffer(b"".join(rows))
            table = pacsv.read_csv(
                pa.BufferReader(block),
                read_options=read_options,
                parse_options=parse_options,
                convert_options=convert_options,
            ).combine_chunks()
            return self._assemble(
                {n: self._from_csv(n, table.column(i).chunk(0)) for i, n in enumerate(self._physical)}
            )

        with db_errors(f"Cannot read table {h.db_name}"):
            self._conn = connect(self._cfg)
            with (
                self._conn.cursor() as cur,
                cur.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv)", self._split.params or None) as copy,
            ):
                rows: list[bytes] = []
                size = 0
                for row in copy:
                    rows.append(bytes(row))
                    size += len(row)
                    if size >= _COPY_BLOCK_BYTES:
                        yield parse(rows)
                        rows, size = [], 0
                if rows:
                    yield parse(rows)

    def _csv_type(self, name: str) -> pa.DataType:
        t = self._types[name]
        if name in self._as_text or pa.types.is_binary(t):
            return pa.string()
        return t

    def _from_csv(self, name: str, column: pa.Array) -> pa.Array:
        t = self._types[name]
        if name in self._as_text:
            return column.cast(pa.timestamp("us")).cast(t) if pa.types.is_timestamp(t) else column.cast(t)
        if pa.types.is_binary(t):
            return pa.array([None if v is None else bytes.fromhex(v[2:]) for v in column.to_pylist()], t)
        return column

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from self.pages()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


# ---- index lookups: a MERGE's target rows by key, in the task that joins a share of the source ---------------


@attrs.frozen(kw_only=True)
class SqlIndexHandle(ConnectorIndexHandle):
    table: SqlTableHandle


@attrs.frozen
class SqlIndexProvider(ConnectorIndexProvider):
    cfg: DbConfig

    def get_index(
        self,
        *,
        session: ConnectorSession,
        index_handle: ConnectorIndexHandle,
        lookup_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorIndex:
        assert isinstance(index_handle, SqlIndexHandle)
        return SqlIndex(self.cfg, index_handle.table, list(output_columns))


class SqlIndex(ConnectorIndex):
    """The primary key index: ``SELECT ... WHERE key = ANY(<the task's keys>)``."""

    def __init__(self, cfg: DbConfig, h: SqlTableHandle, columns: list[ColumnHandle]) -> None:
        self._cfg, self._h, self._columns = cfg, h, columns

    def lookup(self, keys: pa.Table) -> ConnectorPageSource:
        key = self._h.column(self._h.key[0])
        values = keys.column(0).combine_chunks().cast(key.type).to_pylist()
        splits = key_splits(self._cfg, key.db_name, key.db_type, values)
        return ChainedPageSource([SqlPageSource(self._cfg, self._h, s, self._columns) for s in splits])
