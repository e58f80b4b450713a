"""``ConnectorMetadata``: the driver-side half of the SPI (Trino's ``ConnectorMetadata``, snake_case).

Every method runs on the Spark driver, in the engine's process, and may use connections, files and locks.
Arguments are keyword-only so the SPI can grow without breaking implementers. Optional capabilities have a
default that raises ``NOT_SUPPORTED`` with a constant message; a connector overrides only what it supports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mergekit.errors import ErrorCode, MergekitError

from ._model import (
    ColumnHandle,
    ConnectorMergeTableHandle,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableLayout,
    ConnectorTableMetadata,
    RowChangeParadigm,
    SchemaTableName,
    TableCommit,
    TableVersion,
)
from ._partitioning import PartitionBounds, PartitionScheme, RowsCheck
from ._read import ALL, ConnectorResolvedIndex, Constraint, NativeScan, NativeScanUnion

__all__ = [
    "ConnectorMetadata",
    "MODIFYING_ROWS_MESSAGE",
    "CREATE_TABLE_MESSAGE",
    "DROP_TABLE_MESSAGE",
    "CREATE_SCHEMA_MESSAGE",
    "TIME_TRAVEL_MESSAGE",
    "TRUNCATE_MESSAGE",
    "ADD_COLUMN_MESSAGE",
    "CHANGE_FEED_MESSAGE",
    "MERGE_TABLE_MESSAGE",
    "DROP_COLUMN_MESSAGE",
    "MULTI_TABLE_COMMIT_MESSAGE",
    "HISTORY_MESSAGE",
]

MODIFYING_ROWS_MESSAGE = "This connector does not support modifying table rows"
CREATE_TABLE_MESSAGE = "This connector does not support creating tables"
DROP_TABLE_MESSAGE = "This connector does not support dropping tables"
CREATE_SCHEMA_MESSAGE = "This connector does not support creating schemas"
TIME_TRAVEL_MESSAGE = "This connector does not support versioned tables"
TRUNCATE_MESSAGE = "This connector does not support truncating tables"
ADD_COLUMN_MESSAGE = "This connector does not support adding columns"
CHANGE_FEED_MESSAGE = "This connector does not support change feeds"
MERGE_TABLE_MESSAGE = "This connector does not support merge tables"
DROP_COLUMN_MESSAGE = "This connector does not support dropping columns"
HISTORY_MESSAGE = "This connector does not support table history"
MULTI_TABLE_COMMIT_MESSAGE = "This connector does not support committing several tables atomically"


def _not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


class ConnectorMetadata:
    """Catalog operations and the MERGE protocol of one connector instance (one catalog)."""

    # ---- schemas and tables -------------------------------------------------------------------------

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        """Schema names of the catalog. Default: just ``default``."""
        return ["default"]

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        raise _not_supported(CREATE_SCHEMA_MESSAGE)

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """Tables of ``schema`` (all schemas when None)."""
        raise NotImplementedError

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        """The handle of an existing table, or None when there is none. ``version`` asks for a snapshot
        (``FOR VERSION AS OF`` / ``FOR TIMESTAMP AS OF``); a connector that does not version raises
        ``NOT_SUPPORTED`` (``TIME_TRAVEL_MESSAGE``) when it is not None."""
        raise NotImplementedError

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        """Columns (including hidden ones), key and properties of the table."""
        raise NotImplementedError

    def get_column_handles(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> Mapping[str, ColumnHandle]:
        """Handles of every column, hidden ones included, by name. Default: built from the table metadata."""
        meta = self.get_table_metadata(session=session, table_handle=table_handle)
        return {c.name: ColumnHandle(name=c.name, type=c.type) for c in meta.columns}

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        """Create an empty table. Raise ``TABLE_ALREADY_EXISTS`` when it exists and not ``ignore_existing``."""
        raise _not_supported(CREATE_TABLE_MESSAGE)

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        raise _not_supported(DROP_TABLE_MESSAGE)

    def add_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: Any) -> None:
        """``ALTER TABLE ... ADD COLUMN``; ``column`` is a ``ColumnMetadata``."""
        raise _not_supported(ADD_COLUMN_MESSAGE)

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """Remove every row in one commit. Default: NOT_SUPPORTED, and the engine falls back to DELETE."""
        raise _not_supported(TRUNCATE_MESSAGE)

    def get_changes_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, from_version: int, to_version: int | None = None
    ) -> ConnectorTableHandle:
        """The change feed of commits ``from_version``..``to_version`` (inclusive; None: the latest), for
        ``SELECT * FROM table_changes('t', from[, to])``. Its table metadata lists the table's columns plus
        ``_change_type`` ('insert' | 'update' | 'delete'), ``_commit_version`` and ``_commit_timestamp``;
        it is read like any table handle. Default: NOT_SUPPORTED."""
        raise _not_supported(CHANGE_FEED_MESSAGE)

    def get_table_history(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> Sequence[TableCommit]:
        """The table's commits up to the handle's snapshot, newest first, for ``DESCRIBE HISTORY t``.

        Called once per statement, on the driver, with a handle from ``get_table_handle``. Reads the catalog
        only; it must not block writers. A connector without versions keeps the default, which raises
        NOT_SUPPORTED (``HISTORY_MESSAGE``) and the statement fails with it.
        """
        raise _not_supported(HISTORY_MESSAGE)

    # ---- merge tables (seed 004; value classes in _partitioning.py) --------------------------------------

    def create_merge_table(
        self,
        *,
        session: ConnectorSession,
        table_metadata: ConnectorTableMetadata,
        scheme: PartitionScheme | None,
        ignore_existing: bool,
    ) -> None:
        """``CREATE MERGE TABLE``: a table made of child tables, partitioned by ``scheme`` (None: a read-only
        union of its children). Default: NOT_SUPPORTED."""
        raise _not_supported(MERGE_TABLE_MESSAGE)

    def get_partition_scheme(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> PartitionScheme | None:
        """The scheme of a partitioned merge table; None for any other table (the default)."""
        return None

    def set_table_partition(
        self,
        *,
        session: ConnectorSession,
        merge_table: SchemaTableName,
        child: SchemaTableName,
        bounds: PartitionBounds | None,
        bound_values: Sequence[Any] | None,
        replace: bool,
        check_rows: RowsCheck,
    ) -> None:
        """``ALTER TABLE merge_table {ADD | SET} TABLE child [AS PARTITION ...]`` (``replace`` for SET).

        ``bounds`` holds the evaluated clause (None without AS PARTITION). ``bound_values`` lists the values
        as evaluated, in order and including NULLs and duplicates, for the connector's own checks. Before
        recording anything the connector validates membership, schemas, overlaps and then the child's
        existing rows through ``check_rows`` (which runs a Spark job). Default: NOT_SUPPORTED."""
        raise _not_supported(MERGE_TABLE_MESSAGE)

    def drop_table_partition(
        self, *, session: ConnectorSession, merge_table: SchemaTableName, child: SchemaTableName
    ) -> None:
        """``ALTER TABLE merge_table DROP TABLE child``: detach; the child becomes an ordinary table again."""
        raise _not_supported(MERGE_TABLE_MESSAGE)

    def drop_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str) -> None:
        """``ALTER TABLE ... DROP COLUMN``. Default: NOT_SUPPORTED."""
        raise _not_supported(DROP_COLUMN_MESSAGE)

    # ---- reads ------------------------------------------------------------------------------------------

    def get_native_scan(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint = ALL,
    ) -> NativeScan | NativeScanUnion | None:
        """A scan Spark can run by itself (or a union of such scans and splits), or None (the default) to
        read through splits and page sources. ``constraint`` is for pruning, as in ``get_splits``."""
        return None

    def get_value_set_columns(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> frozenset[str]:
        """Columns whose ``Constraint.value_sets`` the table's reads put to use (e.g. reading only the rows of
        those keys). The engine gathers a large MERGE source's key values only for these: it costs a pass over
        the source's keys. Default: none."""
        return frozenset()

    def resolve_index(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        index_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorResolvedIndex | None:
        """An index that finds the table's rows by ``index_columns`` (Trino's ``resolveIndex``), or None (the
        default). A MERGE whose ON clause is an equality on those columns may then look up the target rows of
        each share of the source's keys in the task that joins them (``ConnectorIndex.lookup``), instead of
        scanning the target and shuffling it to a join. Called on the driver, on the handle the statement
        reads (for MERGE: ``begin_merge``'s)."""
        return None

    # ---- MERGE, UPDATE, DELETE, INSERT ------------------------------------------------------------------

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
        """Called once per statement, on the driver, before planning the change. Default: NOT_SUPPORTED."""
        raise _not_supported(MODIFYING_ROWS_MESSAGE)

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        """The column that identifies a target row. The engine requests it from the target scan (it need not
        be a declared column) and hands its value back in the ``$row_id`` channel. Default: NOT_SUPPORTED."""
        raise _not_supported(MODIFYING_ROWS_MESSAGE)

    def get_insert_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        """How inserted rows (and, without an update layout, changed rows) must be distributed. Default: None,
        any writer may receive any row."""
        return None

    def get_update_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        """How DELETE, UPDATE and UPDATE_DELETE rows must be distributed, by the *old* row's values. Default:
        None: they are distributed by row id, so all changes to one target row reach one writer."""
        return None

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
    ) -> ConnectorMergeTableHandle:
        """Called once on the driver as the last planning step, before any sink exists.

        ``update_case_columns`` maps each UPDATE WHEN-clause number to the columns its SET assigns
        (``{0: set columns}`` for an UPDATE statement, empty for DELETE and INSERT). Check here that the
        table is writable. Default: NOT_SUPPORTED."""
        raise _not_supported(MODIFYING_ROWS_MESSAGE)

    def finish_merge(
        self,
        *,
        session: ConnectorSession,
        merge_handle: ConnectorMergeTableHandle,
        fragments: Sequence[Any],
    ) -> None:
        """Called once on the driver with every sink's fragments: commit atomically, or raise (for example
        ``TRANSACTION_CONFLICT``) and leave the table as it was. Calling it without ``begin_merge`` is an
        internal error."""
        raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merge called without begin_merge")

    def finish_merges(
        self,
        *,
        session: ConnectorSession,
        merges: Sequence[tuple[ConnectorMergeTableHandle, Sequence[Any]]],
    ) -> None:
        """Commit several merges (of different tables of this catalog, each begun with ``begin_merge``) in
        one atomic commit: all become visible or none does. For connectors that wrap this one, e.g. the
        children of a merge table. Default: NOT_SUPPORTED (the caller must not fall back to separate
        ``finish_merge`` calls if it promises atomicity)."""
        raise _not_supported(MULTI_TABLE_COMMIT_MESSAGE)

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        """Called on the driver when the statement fails after ``begin_merge``: discard what was staged.
        Must not raise for a merge that staged nothing."""
