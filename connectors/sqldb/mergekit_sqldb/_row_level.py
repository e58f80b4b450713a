"""Seed 003's row-level DELETE / UPDATE: updatable page sources that stage what the engine selects, and delete
pushdown (a ``DELETE`` whose ``WHERE`` the database evaluates itself, in one statement, without Spark).

The staging table and its commit are the merge path's (``_write``): ``begin_delete`` / ``begin_update`` create it
and flag the table handle with it; every page source stages ``delete_rows`` / ``update_rows`` under its own
attempt tag; ``finish_*`` applies the tags its fragments name in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import MergekitError
from mergekit.spi import ColumnHandle, DeletePredicate, MergeOperation, UpdatablePageSource

from ._catalog import SqlTableHandle
from ._db import POSTGRESQL, SQLITE, DbConfig, quote
from ._read import SqlPageSource, SqlSplit
from ._write import SqlFragment, Staging, StagingWriter, key_arrays, moved_rows, row_id_fields


def update_row_id_columns(h: SqlTableHandle, updated: Sequence[str]) -> tuple[str, ...]:
    """The columns of an UPDATE's row id: the key, plus every other visible column when the UPDATE assigns a
    key column (a row whose key changes is deleted and inserted whole, so its other values must be staged)."""
    if not set(updated) & set(h.key):
        return h.key
    return h.key + tuple(c.name for c in h.visible if c.name not in h.key and c.name not in updated)


def staging_of(cfg: DbConfig, h: SqlTableHandle) -> Staging:
    """The staging table of a handle ``begin_delete`` / ``begin_update`` flagged."""
    plain = attrs.evolve(h, mode="", stage="", updated=(), row_id_columns=())
    if h.mode == "update" and len(h.row_id_columns) > len(h.key):
        data = tuple(c.name for c in h.visible)  # full rows: some keys change
    else:
        data = h.updated
    # (no INSERT: no insert_defaults)
    return Staging(cfg=cfg, table=plain, stage=h.stage, data_columns=data, set_columns=h.updated)


class SqlUpdatablePageSource(UpdatablePageSource):
    """Reads one split and stages the deletions and updates of its rows under this attempt's tag."""

    def __init__(self, cfg: DbConfig, h: SqlTableHandle, split: SqlSplit, columns: Sequence[ColumnHandle]) -> None:
        self._source = SqlPageSource(cfg, h, split, columns)
        self._pages: Iterator[pa.RecordBatch] | None = None
        self._h = h
        self._staging = staging_of(cfg, h)
        self._writer = StagingWriter(self._staging)
        self._deleted = 0
        self._updated = 0
        self._moved = 0

    def get_next_page(self) -> pa.RecordBatch | None:
        if self._pages is None:
            self._pages = self._source.pages()
        return next(self._pages, None)

    def delete_rows(self, row_ids: pa.Array) -> None:
        n = len(row_ids)
        op = pa.array([int(MergeOperation.DELETE)] * n, pa.int8())
        self._writer.write(op, key_arrays(row_ids, self._h), [])
        self._deleted += n

    def update_rows(self, page: pa.RecordBatch, column_value_and_row_id_channels: Sequence[int]) -> None:
        channels = list(column_value_and_row_id_channels)
        values = {name: page.column(ch) for name, ch in zip(self._h.updated, channels[:-1], strict=False)}
        row_ids = page.column(channels[-1])
        fields = row_id_fields(row_ids, self._h)
        for name in self._h.row_id_columns[len(self._h.key) :]:  # the other columns of a key-changing UPDATE
            values[name] = fields[name]
        keys = key_arrays(row_ids, self._h)
        data = [values[c] for c in self._staging.data_columns]
        op = pa.array([int(MergeOperation.UPDATE)] * page.num_rows, pa.int8())
        self._moved += moved_rows(self._staging, op, keys, data)
        self._writer.write(op, keys, data)
        self._updated += page.num_rows

    def finish(self) -> Sequence[Any]:
        self._writer.commit()
        if not (self._deleted or self._updated):
            return []
        return [SqlFragment(tag=self._writer.tag, deleted=self._deleted, updated=self._updated, moved=self._moved)]

    def abort(self) -> None:
        self._writer.rollback()

    def close(self) -> None:
        self._writer.rollback()
        self._source.close()


# ---- delete pushdown ------------------------------------------------------------------------------------------

_COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")


def _pushable(cfg: DbConfig, h: SqlTableHandle, column: str, op: str) -> bool:
    """Whether the database compares this column exactly as SQL (Trino) defines it."""
    try:
        col = h.column(column)
    except MergekitError:
        return False
    if col.hidden:
        return False
    t = col.type
    if op in ("IS NULL", "IS NOT NULL"):
        return True
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return True
    if pa.types.is_string(t):
        return not col.type_name.startswith("char")  # CHAR(n) compares padded
    if cfg.kind == POSTGRESQL:  # SQLite keeps these as text or REAL numbers: not pushed
        return pa.types.is_decimal(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_binary(t)
    return pa.types.is_binary(t) and op in ("=", "<>", "IN")


def _param(cfg: DbConfig, value: Any) -> Any:
    return int(value) if cfg.kind == SQLITE and isinstance(value, bool) else value


def translate_predicate(
    cfg: DbConfig, h: SqlTableHandle, predicate: DeletePredicate
) -> tuple[str, tuple[Any, ...]] | None:
    """A parameterized WHERE clause selecting exactly the rows of ``predicate``, or None."""
    ph = cfg.ph
    parts: list[str] = []
    params: list[Any] = []
    for column, op, value in predicate.terms:
        if not _pushable(cfg, h, column, op):
            return None
        col = h.column(column)
        ref = quote(col.db_name)
        if cfg.kind == POSTGRESQL and pa.types.is_string(col.type) and op not in ("=", "<>", "IN"):
            ref += ' COLLATE "C"'  # Trino orders strings by code point; so does the C collation on UTF-8
        if op in ("IS NULL", "IS NOT NULL"):
            parts.append(f"{ref} {op}")
        elif op in _COMPARISONS:
            parts.append(f"{ref} {op} {ph}")
            params.append(_param(cfg, value))
        elif op == "IN":
            values = tuple(_param(cfg, v) for v in value)
            if not values:
                parts.append("FALSE")
            else:
                parts.append(f"{ref} IN ({', '.join(ph for _ in values)})")
                params.extend(values)
        else:
            return None
    return " AND ".join(parts), tuple(params)
