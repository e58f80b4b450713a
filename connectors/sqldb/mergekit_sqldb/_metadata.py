"""``ConnectorMetadata`` of a sqldb catalog: names and DDL (``_catalog``), the merge SPI (``_write``), the
row-level SPI and delete pushdown (``_row_level``). Everything here runs on the driver."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    MODIFYING_ROWS_MESSAGE,
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
    ConnectorMergeTableHandle,
    ConnectorMetadata,
    ConnectorResolvedIndex,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    DeletePredicate,
    RowChangeParadigm,
    SchemaTableName,
    TableVersion,
)

from ._apply import apply_staged, transaction_on
from ._catalog import Catalog, SqlTableHandle, sql_handle
from ._db import db_errors
from ._read import ROW_ID, SqlIndexHandle, row_id_type
from ._row_level import staging_of, translate_predicate, update_row_id_columns
from ._write import SqlMergeTableHandle, create_staging, drop_staging


def no_key_message(h: SqlTableHandle) -> str:
    return (
        f"Table {h.db_name} has no primary key: the sqldb connector identifies rows by their primary key, so it "
        "cannot update, delete or merge rows of this table (add a PRIMARY KEY in the database)"
    )


class SqlDbMetadata(ConnectorMetadata):
    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._cfg = catalog.cfg

    # ---- names and DDL ---------------------------------------------------------------------------------------

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        return self._catalog.list_schemas()

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        self._catalog.create_schema(schema)

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        return self._catalog.list_tables(schema)

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        return self._catalog.handle(table, version)

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        return self._catalog.metadata(sql_handle(table_handle))

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        self._catalog.create_table(table_metadata, ignore_existing)

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        self._catalog.drop_table(sql_handle(table_handle))

    def add_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: ColumnMetadata
    ) -> None:
        self._catalog.add_column(sql_handle(table_handle), column)

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        self._catalog.truncate(sql_handle(table_handle))

    def add_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, constraint: CheckConstraint
    ) -> None:
        self._catalog.set_check(sql_handle(table_handle), constraint)

    def drop_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, name: str
    ) -> None:
        self._catalog.set_check(sql_handle(table_handle), None, drop=name)

    def set_column_default(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str, default: str | None
    ) -> None:
        self._catalog.set_default(sql_handle(table_handle), column, default)

    # ---- reads -----------------------------------------------------------------------------------------------

    def get_value_set_columns(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> frozenset[str]:
        """A single-column key: a large MERGE reads only the target rows of the source's keys (by the index)."""
        h = sql_handle(table_handle)
        return frozenset(h.key) if len(h.key) == 1 and not h.column(h.key[0]).hidden else frozenset()

    def resolve_index(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        index_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorResolvedIndex | None:
        """The primary key index of a single-column integer or string key: a MERGE may look its target rows up
        per task (``key = ANY(...)``) instead of scanning and shuffling the target."""
        h = sql_handle(table_handle)
        if h.unsupported is not None or len(h.key) != 1 or [c.name for c in index_columns] != list(h.key):
            return None
        key = h.column(h.key[0])
        if key.hidden or not (pa.types.is_integer(key.type) or pa.types.is_string(key.type)):
            return None
        return ConnectorResolvedIndex(index_handle=SqlIndexHandle(table=h))

    # ---- the merge SPI ---------------------------------------------------------------------------------------

    def _keyed(self, table_handle: ConnectorTableHandle) -> SqlTableHandle:
        h = sql_handle(table_handle)
        if not self._cfg.merge:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, MODIFYING_ROWS_MESSAGE)
        if not h.key:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, no_key_message(h))
        h.check_readable()
        return h

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
        self._keyed(table_handle)
        return RowChangeParadigm.CHANGE_ONLY_UPDATED_COLUMNS

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        return ColumnHandle(name=ROW_ID, type=row_id_type(self._keyed(table_handle)))

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
        insert_case_defaults: Mapping[int, Sequence[ColumnHandle]] | None = None,
    ) -> ConnectorMergeTableHandle:
        """``insert_case_defaults``: the columns the database fills (its DEFAULT, sequence or identity) for the
        INSERT rows of each case; the commit leaves them out of those rows' INSERT."""
        h = sql_handle(table_handle)
        if update_case_columns and not h.key:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, no_key_message(h))
        defaults = {n: [c.name for c in cols] for n, cols in (insert_case_defaults or {}).items()}
        assigned = {c.name for cols in update_case_columns.values() for c in cols}
        set_columns = [c.name for c in h.visible if c.name in assigned]
        staging = create_staging(self._catalog, h, [c.name for c in h.visible], defaults, set_columns)
        return SqlMergeTableHandle(table_handle=h, staging=staging)

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        if not isinstance(merge_handle, SqlMergeTableHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merge called without begin_merge")
        apply_staged(self._catalog, merge_handle.staging, fragments)

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        if isinstance(merge_handle, SqlMergeTableHandle):
            drop_staging(self._catalog, merge_handle.staging)

    # ---- the row-level SPI (seed 003) ------------------------------------------------------------------------

    def _row_level(self, table_handle: ConnectorTableHandle) -> SqlTableHandle:
        h = sql_handle(table_handle)
        if not h.key:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, no_key_message(h))
        h.check_readable()
        return h

    def get_delete_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        return ColumnHandle(name=ROW_ID, type=row_id_type(self._row_level(table_handle)))

    def get_update_row_id_column_handle(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        updated_columns: Sequence[ColumnHandle],
    ) -> ColumnHandle:
        h = self._row_level(table_handle)
        rid = update_row_id_columns(h, [c.name for c in updated_columns])
        return ColumnHandle(name=ROW_ID, type=row_id_type(attrs.evolve(h, row_id_columns=rid)))

    def begin_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> ConnectorTableHandle:
        h = self._row_level(table_handle)
        staging = create_staging(self._catalog, h, [])
        return attrs.evolve(h, mode="delete", stage=staging.stage, row_id_columns=h.key)

    def begin_update(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        updated_columns: Sequence[ColumnHandle],
    ) -> ConnectorTableHandle:
        h = self._row_level(table_handle)
        updated = tuple(c.name for c in updated_columns)
        rid = update_row_id_columns(h, updated)
        full = len(rid) > len(h.key)
        staging = create_staging(self._catalog, h, [c.name for c in h.visible] if full else updated)
        return attrs.evolve(h, mode="update", stage=staging.stage, updated=updated, row_id_columns=rid)

    def _finish_row_level(self, table_handle: ConnectorTableHandle, fragments: Sequence[Any], mode: str) -> None:
        h = sql_handle(table_handle)
        if h.mode != mode:
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"finish_{mode} called without begin_{mode}")
        apply_staged(self._catalog, staging_of(self._cfg, h), fragments)

    def finish_delete(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, fragments: Sequence[Any]
    ) -> None:
        self._finish_row_level(table_handle, fragments, "delete")

    def finish_update(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, fragments: Sequence[Any]
    ) -> None:
        self._finish_row_level(table_handle, fragments, "update")

    def abort_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        h = sql_handle(table_handle)
        if h.stage:
            drop_staging(self._catalog, staging_of(self._cfg, h))

    def abort_update(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        self.abort_delete(session=session, table_handle=table_handle)

    # ---- delete pushdown -------------------------------------------------------------------------------------

    def apply_delete(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, predicate: DeletePredicate
    ) -> ConnectorTableHandle | None:
        h = sql_handle(table_handle)
        if h.unsupported is not None:
            return None
        translated = translate_predicate(self._cfg, h, predicate)
        if translated is None:
            return None
        where, params = translated
        return attrs.evolve(h, mode="pushdown", where=where, params=params)

    def execute_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> int:
        h = sql_handle(table_handle)
        if h.mode != "pushdown":
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "execute_delete called without apply_delete")
        sql = f"DELETE FROM {h.qualified}" + (f" WHERE {h.where}" if h.where else "")
        with self._catalog.conn() as conn, db_errors(f"Cannot delete from table {h.db_name}"):
            with transaction_on(self._cfg, conn):
                count = (conn.execute(sql, h.params) if h.params else conn.execute(sql)).rowcount
        return int(count)


__all__ = ["SqlDbMetadata"]
