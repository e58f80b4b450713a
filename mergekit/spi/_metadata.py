"""``ConnectorMetadata``: the driver-side half of the SPI (Trino's ``ConnectorMetadata``, snake_case).

Every method runs on the Spark driver, in the engine's process, and may use connections, files and locks.
Arguments are keyword-only so the SPI can grow without breaking implementers. Optional capabilities have a
default that raises ``NOT_SUPPORTED`` with a constant message; a connector overrides only what it supports.

Three methods have no meaningful default and are abstract (a connector must implement them, or it cannot be
instantiated): :meth:`ConnectorMetadata.list_tables`, :meth:`ConnectorMetadata.get_table_handle` and
:meth:`ConnectorMetadata.get_table_metadata`. With those alone a connector is a read-only catalog (plus its
split manager and page source provider on :class:`~mergekit.spi.Connector`).

Groups of optional methods, and what a connector gets by overriding them:

* DDL (``create_table``, ``drop_table``, ``add_column``, ``drop_column``, ``truncate_table``,
  ``create_schema``): the matching statements; ``CREATE TABLE AS`` needs ``create_table`` plus the write path.
* Constraints and defaults (``add_check_constraint``, ``drop_check_constraint``, ``set_column_default``): the
  ``ALTER TABLE`` forms of ``CHECK`` and ``DEFAULT``. The engine enforces and evaluates both; the connector
  stores them (also those ``create_table`` receives) and returns them from ``get_table_metadata``.
* The write path (``begin_merge`` / ``finish_merge`` / ``abort_merge`` plus
  ``Connector.get_page_sink_provider``): ``INSERT`` and ``CREATE TABLE AS``. Adding
  ``get_row_change_paradigm`` and ``get_merge_row_id_column_handle``: ``MERGE``, ``UPDATE`` and ``DELETE``.
* Versions (``get_table_handle(version=...)``, ``get_table_history``, ``get_changes_handle``): time travel,
  ``DESCRIBE HISTORY`` and ``table_changes(...)``.
* Read acceleration (``get_native_scan``, ``get_value_set_columns``, ``resolve_index``): same results, faster.
* Streams (seed 001: ``create_table`` with ``stream`` set, ``get_stream_commits``, ``get_stream_splits``; see
  ``mergekit.spi._streams``): ``CREATE STREAM``, ``INSERT`` into it, ``SELECT STREAM``; with
  ``ConnectorTableMetadata.change_stream``, ``SELECT STREAM`` over a table's change feed.
* Views (``create_view``, ``get_view``, ``drop_view``, ``list_views``; see ``mergekit.spi._views``): ``CREATE
  VIEW``, ``DROP VIEW``, ``SHOW VIEWS`` and views in queries (the engine expands them; no read path).
* Table properties after creation (``set_table_properties``): ``ALTER TABLE ... SET PROPERTIES``.
* Streaming jobs (``get_job_batch``, ``finish_merge`` recording a job's batch id; see ``mergekit.spi._jobs``):
  targets of ``CREATE STREAMING JOB``, exactly once.
* Row-level DELETE and UPDATE (seed 003: ``get_delete_row_id_column_handle``, ``begin_delete``,
  ``finish_delete``, their ``update`` twins, an ``UpdatablePageSource``; delete pushdown by ``apply_delete`` /
  ``execute_delete``; see ``mergekit.spi._row_level``): ``DELETE`` and ``UPDATE`` without the merge SPI.
* Merge tables (seed 004: ``create_merge_table``, ``get_partition_scheme``, ``set_table_partition``,
  ``drop_table_partition``).

Errors: raise :class:`~mergekit.errors.MergekitError` with a code; the statement fails with it unchanged.
Any other exception fails the statement as an internal error (its text kept). Every message constant below is what the
default of an optional method raises, and what the conformance kit expects from a connector that opts out.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError

from ._jobs import JobMetadata
from ._model import (
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
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
from ._row_level import RowLevelMetadata
from ._streams import StreamMetadata
from ._views import ViewMetadata

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
    "CHECK_CONSTRAINT_MESSAGE",
    "PRIMARY_KEY_MESSAGE",
    "SET_DEFAULT_MESSAGE",
    "RENAME_COLUMN_MESSAGE",
    "SET_COLUMN_TYPE_MESSAGE",
    "SCHEMA_EVOLUTION_MESSAGE",
    "SET_PROPERTIES_MESSAGE",
    "MergeFragment",
]

# The constant messages of NOT_SUPPORTED defaults (Trino's ``ConnectorMetadata`` wording where it has one).
# Connectors that opt out of a capability raise the same constant, so users and the kit see one wording.

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
CHECK_CONSTRAINT_MESSAGE = "This connector does not support check constraints"
PRIMARY_KEY_MESSAGE = "This connector does not support primary keys"
SET_DEFAULT_MESSAGE = "This connector does not support setting default values"
RENAME_COLUMN_MESSAGE = "This connector does not support renaming columns"
SET_COLUMN_TYPE_MESSAGE = "This connector does not support setting column types"
SCHEMA_EVOLUTION_MESSAGE = "This connector does not support adding columns in MERGE (schema evolution)"
SET_PROPERTIES_MESSAGE = "This connector does not support setting table properties"

MergeFragment: TypeAlias = Any
"""One fragment a merge sink's ``finish()`` returned: opaque to the engine, which only pickles it back from the
executor and hands it to ``finish_merge``. Any picklable value the connector chooses (a file path, an attrs
class describing a staged file, bytes); ``Any`` because only the connector knows, and it reads its own."""


def _not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


class ConnectorMetadata(StreamMetadata, JobMetadata, ViewMetadata, RowLevelMetadata, abc.ABC):
    """Catalog operations and the MERGE protocol of one connector instance (one catalog).

    Returned by ``Connector.get_metadata()``, on the driver, whenever the engine needs it (it may be asked
    many times per statement, so return the same object). The engine may call it from several threads when an
    embedder runs statements concurrently: guard shared state. It is never pickled.
    """

    # ---- schemas and tables -------------------------------------------------------------------------

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        """Schema names of the catalog. Default: just ``default``.

        Called on the driver by ``SHOW SCHEMAS`` and by ``CREATE SCHEMA IF NOT EXISTS`` (to skip an existing
        schema), once per statement. Returns names in any order; the engine sorts them for display."""
        return ["default"]

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        """``CREATE SCHEMA``, once on the driver. ``properties`` is the statement's property bag (empty today:
        the engine accepts no ``WITH`` clause here). Raise ``SCHEMA_ALREADY_EXISTS`` for an existing schema
        (``IF NOT EXISTS`` is checked by the engine through :meth:`list_schemas` first).
        Default: NOT_SUPPORTED (``CREATE_SCHEMA_MESSAGE``)."""
        raise _not_supported(CREATE_SCHEMA_MESSAGE)

    @abc.abstractmethod
    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """Tables of ``schema`` (all schemas when None).

        Required. Called on the driver by ``SHOW TABLES`` (once per statement) and by tools that list a
        catalog (``mergekit shell``'s ``\\d``, ``mergekit connectors``, ``mergekit rewrite``). Returns the names
        in any order; an unknown schema yields an empty list rather than an error. With ``schema=None`` each
        table once, under its own schema: a schema name that only stands for another (the sqldb connector's
        ``default``, its database's ``public``) adds no second name."""

    def list_companion_tables(
        self, *, session: ConnectorSession, schema: str | None
    ) -> Mapping[SchemaTableName, SchemaTableName]:
        """The tables :meth:`list_tables` lists that the connector created along with another table, as another
        form of it, each mapped to that table: the journal connector's ``<t>_journal`` (every stored version of
        ``t``) to ``t``.

        Optional. Called on the driver by tools that show a catalog to a person: ``mergekit shell``'s ``\\d``
        lists each table once, as its user created it, and names its companions beside it (``SHOW TABLES``
        still lists every name). Same ``schema`` convention as :meth:`list_tables`. Default: none."""
        return {}

    def list_system_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """The tables :meth:`list_tables` lists that describe the catalog itself rather than hold a user's rows:
        the partitioned connector's ``sys.table_partitions``, ``sys.range_partitions`` and ``sys.value_partitions``.

        Optional. Called on the driver by tools that show a catalog to a person: ``mergekit shell``'s ``\\d``
        leaves them out, as psql's does (``\\dS`` lists them, and so does ``SHOW TABLES`` of their schema:
        ``SHOW TABLES FROM sys``). Same ``schema`` convention as :meth:`list_tables`. Default: none."""
        return []

    @abc.abstractmethod
    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        """The handle of an existing table, or None when there is none. ``version`` asks for a snapshot
        (``FOR VERSION AS OF`` / ``FOR TIMESTAMP AS OF``); a connector that does not version raises
        ``NOT_SUPPORTED`` (``TIME_TRAVEL_MESSAGE``) when it is not None.

        Required. Called on the driver once per table reference of every statement, before anything else
        about the table (the engine turns None into ``TABLE_NOT_FOUND``, or skips ``IF EXISTS``), and again
        after a failed ``CREATE TABLE AS`` to drop what was created. Must be cheap: a catalog lookup, no scan.
        A versioning connector pins the handle to the current snapshot, so every read of the statement sees
        the same data."""

    @abc.abstractmethod
    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        """Columns (including hidden ones), key and properties of the table.

        Required. Called on the driver once per table reference, right after :meth:`get_table_handle`, with
        its handle: the columns define what the statement may name, ``DESCRIBE``, ``SELECT *`` and the data
        channels of merge pages (the visible columns, in this order)."""

    def get_column_handles(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> Mapping[str, ColumnHandle]:
        """Handles of every column, hidden ones included, by name. Default: built from the table metadata.

        Called on the driver before every scan and every DML statement; the engine picks the handles of the
        columns it reads and hands them to ``get_splits`` / ``create_page_source`` / ``get_native_scan``, and
        to ``begin_merge`` in ``update_case_columns``. Override it when handles carry more than name and type."""
        meta = self.get_table_metadata(session=session, table_handle=table_handle)
        return {c.name: ColumnHandle(name=c.name, type=c.type) for c in meta.columns}

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        """Create an empty table. Raise ``TABLE_ALREADY_EXISTS`` when it exists and not ``ignore_existing``.

        Called once on the driver by ``CREATE TABLE`` and ``CREATE TABLE AS`` (before its query runs; the rows
        then arrive through the ordinary INSERT path, and the engine drops the table again with
        :meth:`drop_table` if that INSERT fails). ``table_metadata`` holds the columns as declared (the
        statement's or the query's), the primary key and the checked, converted table properties (see
        ``Connector.get_table_properties``). ``ignore_existing`` is ``IF NOT EXISTS``: return quietly then.
        The table must be visible to :meth:`get_table_handle` when this returns.
        Default: NOT_SUPPORTED (``CREATE_TABLE_MESSAGE``)."""
        raise _not_supported(CREATE_TABLE_MESSAGE)

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """``DROP TABLE``, once on the driver, with a handle from :meth:`get_table_handle` (the engine reports
        ``TABLE_NOT_FOUND`` or skips ``IF EXISTS`` itself). Also called to undo a failed ``CREATE TABLE AS``.
        Afterwards :meth:`get_table_handle` must return None. Default: NOT_SUPPORTED (``DROP_TABLE_MESSAGE``)."""
        raise _not_supported(DROP_TABLE_MESSAGE)

    def set_table_properties(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, properties: Mapping[str, Any]
    ) -> None:
        """``ALTER TABLE t SET PROPERTIES name = value, ...`` (Trino's ``setTableProperties``), once on the driver.

        ``properties`` holds only the properties the statement names, each checked against the connector's
        declared ones (``Connector.get_table_properties``) and converted to its type, or None for ``name =
        DEFAULT`` (back to the property's default). The others keep their values. From now on
        ``get_table_metadata`` returns the new values in ``properties`` (and whatever they imply, such as
        ``change_stream``). Default: NOT_SUPPORTED (``SET_PROPERTIES_MESSAGE``)."""
        raise _not_supported(SET_PROPERTIES_MESSAGE)

    def add_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: ColumnMetadata
    ) -> None:
        """``ALTER TABLE ... ADD COLUMN``, once on the driver.

        ``column`` is the new column as declared (name, Arrow type, SQL type name, nullability, comment). The
        engine has already refused a name the table has (``DUPLICATE_COLUMN_NAME``, or nothing under ``IF NOT
        EXISTS``). Existing rows read NULL in the new column. Default: NOT_SUPPORTED (``ADD_COLUMN_MESSAGE``)."""
        raise _not_supported(ADD_COLUMN_MESSAGE)

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """Remove every row in one commit. Default: NOT_SUPPORTED, and the engine falls back to DELETE.

        Called once on the driver by ``TRUNCATE TABLE``. Only the NOT_SUPPORTED code triggers the fallback (a
        ``DELETE`` without ``WHERE``, through the merge SPI or the row-level SPI as any DELETE); any other error
        fails the statement."""
        raise _not_supported(TRUNCATE_MESSAGE)

    def get_changes_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, from_version: int, to_version: int | None = None
    ) -> ConnectorTableHandle:
        """The change feed of commits ``from_version``..``to_version`` (inclusive; None: the latest), for
        ``SELECT * FROM table_changes('t', from[, to])``. Its table metadata lists the table's columns plus
        ``_change_type`` ('insert' | 'update' | 'delete'), ``_commit_version`` and ``_commit_timestamp``;
        it is read like any table handle. Default: NOT_SUPPORTED.

        Called once on the driver per ``table_changes(...)`` reference; the handle returned then goes through
        :meth:`get_table_metadata` and the ordinary read path (splits or a native scan). Raise
        ``INVALID_ARGUMENTS`` for versions the table does not have."""
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

    # ---- CHECK constraints and column defaults -----------------------------------------------------------

    def add_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, constraint: CheckConstraint
    ) -> None:
        """``ALTER TABLE ... ADD CONSTRAINT name CHECK (expression)``, once on the driver.

        Before calling it the engine has checked the expression (it resolves against the table's columns and is
        boolean), refused a name the table already uses (``INVALID_ARGUMENTS``) and scanned the rows of
        ``table_handle`` (a Spark job): a row for which the expression is FALSE fails the statement with
        ``CONSTRAINT_VIOLATION`` and this is never called. The connector records the constraint, after the
        table's existing ones, so that ``get_table_metadata`` returns it from now on. A connector that versions
        raises ``TRANSACTION_CONFLICT`` when the table changed after the snapshot of ``table_handle`` (rows the
        engine did not check), and makes a write that began before the constraint fail at its commit.
        Default: NOT_SUPPORTED (``CHECK_CONSTRAINT_MESSAGE``)."""
        raise _not_supported(CHECK_CONSTRAINT_MESSAGE)

    def drop_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, name: str
    ) -> None:
        """``ALTER TABLE ... DROP CONSTRAINT [IF EXISTS] name``, once on the driver, after the engine found a
        CHECK constraint of that name in the table's metadata (a missing one is ``INVALID_ARGUMENTS``, or
        nothing under ``IF EXISTS``). The connector forgets it: later writes are no longer checked by it. A
        connector may refuse, with its own code, a constraint it cannot drop (one a merge table imposes on its
        children). Default: NOT_SUPPORTED (``CHECK_CONSTRAINT_MESSAGE``)."""
        raise _not_supported(CHECK_CONSTRAINT_MESSAGE)

    def set_column_default(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str, default: str | None
    ) -> None:
        """``ALTER TABLE ... ALTER COLUMN column SET DEFAULT expression`` (``default``: the expression as SQL
        text, already checked by the engine against the column's type) or ``... DROP DEFAULT`` (``default``
        None), once on the driver, after the engine checked that the column exists (``COLUMN_NOT_FOUND``).

        Existing rows keep their values; the connector records the text on the column so that
        :attr:`ColumnMetadata.default` of ``get_table_metadata`` returns it. Trino's ``setDefaultValue`` and
        ``dropDefaultValue`` in one method. Default: NOT_SUPPORTED (``SET_DEFAULT_MESSAGE``)."""
        raise _not_supported(SET_DEFAULT_MESSAGE)

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
        union of its children). Default: NOT_SUPPORTED.

        Called once on the driver. The merge table starts without children; ``ALTER TABLE ... ADD TABLE``
        attaches them (:meth:`set_table_partition`). ``ignore_existing`` is ``IF NOT EXISTS``."""
        raise _not_supported(MERGE_TABLE_MESSAGE)

    def get_partition_scheme(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> PartitionScheme | None:
        """The scheme of a partitioned merge table; None for any other table (the default).

        Called on the driver when the engine plans ``ALTER TABLE ... AS PARTITION`` (to evaluate the bounds in
        the key's type) and when it describes the table."""
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
        """``ALTER TABLE merge_table DROP TABLE child``: detach; the child becomes an ordinary table again.

        Called once on the driver. Raise ``TABLE_NOT_FOUND`` when ``child`` is not a child of ``merge_table``.
        Default: NOT_SUPPORTED (``MERGE_TABLE_MESSAGE``)."""
        raise _not_supported(MERGE_TABLE_MESSAGE)

    def drop_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str) -> None:
        """``ALTER TABLE ... DROP COLUMN``. Default: NOT_SUPPORTED (``DROP_COLUMN_MESSAGE``).

        Called once on the driver after the engine checked that the column exists (``COLUMN_NOT_FOUND``
        otherwise). A connector refuses, with its own code, a column it cannot drop (a key or partition
        column). Rows already stored keep the dropped values in their files, but no read returns them again,
        and a column added later under the same name starts empty (it must not show the dropped values)."""
        raise _not_supported(DROP_COLUMN_MESSAGE)

    # ---- schema evolution: renaming and widening columns (Trino's renameColumn, setColumnType) -------------

    def rename_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, source: str, target: str
    ) -> None:
        """``ALTER TABLE t RENAME COLUMN source TO target``, once on the driver.

        The engine has checked that ``source`` is a visible column of the table (``COLUMN_NOT_FOUND``) and that
        no column is named ``target`` (``DUPLICATE_COLUMN_NAME``). The data stays where it is: files written
        before the rename must read under the new name (map names to column ids or to physical names, as
        Iceberg and Delta's column mapping do), and a column added later under the old name must not read the
        renamed column's values. A connector that versions keeps the old name for reads of earlier versions
        (time travel). Refuse, with its own code, a column it cannot rename (a partition column whose scheme
        names it, a key it cannot remap). Default: NOT_SUPPORTED (``RENAME_COLUMN_MESSAGE``)."""
        raise _not_supported(RENAME_COLUMN_MESSAGE)

    def set_column_type(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        column: str,
        type: pa.DataType,
        type_name: str,
    ) -> None:
        """``ALTER TABLE t ALTER COLUMN column SET DATA TYPE type``, once on the driver.

        ``type`` is the new Arrow type and ``type_name`` the SQL type as written (``bigint``, ``varchar(20)``).
        The engine calls this only for a widening every stored value survives unchanged (it refuses anything
        else with ``NOT_SUPPORTED`` first): a wider integer (``tinyint`` < ``smallint`` < ``integer`` <
        ``bigint``), ``real`` to ``double``, ``decimal(p, s)`` to ``decimal(p2, s)`` with ``p2 >= p``, a
        ``varchar(n)`` to a longer or unbounded ``varchar``; never a change of the same type (nothing to do).
        Files written before the change keep their old type: reads cast them to the new one (Spark's Parquet
        reader widens those types itself). A connector that versions keeps the old type for reads of earlier
        versions. Refuse, with its own code, a change its storage cannot read back.
        Default: NOT_SUPPORTED (``SET_COLUMN_TYPE_MESSAGE``)."""
        raise _not_supported(SET_COLUMN_TYPE_MESSAGE)

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
        read through splits and page sources. ``constraint`` is for pruning, as in ``get_splits``.

        Called on the driver once per scan of the table (a query may scan a table more than once), before
        ``get_splits``; when it returns a scan, Spark reads that instead of the splits. ``get_splits`` must still
        describe every row of the table: the engine reads a small table (local files of at most a few MB) through
        its splits and page sources in its own process, without Spark (the driver tier). ``columns`` are the
        handles the statement reads, in the order the scan must yield them. See docs/develop/spi-overview.md."""
        return None

    def get_value_set_columns(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> frozenset[str]:
        """Columns whose ``Constraint.value_sets`` the table's reads put to use (e.g. reading only the rows of
        those keys). The engine gathers a large MERGE source's key values only for these: it costs a pass over
        the source's keys. Default: none.

        Called on the driver once per MERGE whose source is large, before the target scan is planned."""
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
        """Called once per statement, on the driver, before planning the change. Default: NOT_SUPPORTED.

        Asked for every UPDATE, DELETE and MERGE (and INSERT: there a NOT_SUPPORTED answer is accepted, since
        an INSERT changes no existing row; see "append-only" in docs/develop/supporting-merge.md). The answer
        picks the row change processor (:class:`RowChangeParadigm`) and so the operations sinks receive.
        Default: NOT_SUPPORTED (``MODIFYING_ROWS_MESSAGE``): the connector cannot change rows."""
        raise _not_supported(MODIFYING_ROWS_MESSAGE)

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        """The column that identifies a target row. The engine requests it from the target scan (it need not
        be a declared column) and hands its value back in the ``$row_id`` channel. Default: NOT_SUPPORTED.

        Called once per statement on the driver, with :meth:`get_row_change_paradigm` (INSERT tolerates
        NOT_SUPPORTED here too). The engine reads this column in the target scan, so the page source (or the
        native scan's ``projections``) must produce it; its value must identify the row within the snapshot
        the scan reads. It may be a struct (a composite key). Default: NOT_SUPPORTED (``MODIFYING_ROWS_MESSAGE``)."""
        raise _not_supported(MODIFYING_ROWS_MESSAGE)

    def get_insert_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        """How inserted rows (and, without an update layout, changed rows) must be distributed. Default: None,
        any writer may receive any row.

        Called once per DML statement (INSERT included) on the driver, before planning: the engine then
        repartitions the rows by these columns' new values so that one sink receives every row of a partition."""
        return None

    def get_update_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        """How DELETE, UPDATE and UPDATE_DELETE rows must be distributed, by the *old* row's values. Default:
        None: they are distributed by row id, so all changes to one target row reach one writer.

        Called once per DML statement on the driver, before planning, with :meth:`get_insert_layout`."""
        return None

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
        insert_case_defaults: Mapping[int, Sequence[ColumnHandle]] | None = None,
    ) -> ConnectorMergeTableHandle:
        """Called once on the driver as the last planning step, before any sink exists.

        ``update_case_columns`` maps each UPDATE WHEN-clause number to the columns its SET assigns, in table
        column order (as ``begin_update`` receives them; ``{0: set columns}`` for an UPDATE statement, empty for
        DELETE and INSERT). Check here that the
        table is writable. Default: NOT_SUPPORTED.

        ``insert_case_defaults`` maps an INSERT WHEN-clause number (0 for an INSERT statement) to the columns
        the storage fills for that clause's INSERT rows (``ColumnMetadata.storage_default`` columns it omits or
        writes as ``DEFAULT``): those rows carry NULL there, which the sink must not write. The engine passes
        it only when it is not empty, which needs a ``storage_default`` column: a connector that reports none
        never receives it and need not accept it.

        Every INSERT, UPDATE, DELETE, MERGE and the INSERT of ``CREATE TABLE AS`` begins here, after the
        statement was analysed and type-checked (a bad statement never begins). Returns a picklable handle
        that reaches every merge sink and exactly one of :meth:`finish_merge` or :meth:`abort_merge`. Its
        ``table_handle`` is the one the target scan reads: pin it to a snapshot to detect conflicts at commit.
        Default: NOT_SUPPORTED (``MODIFYING_ROWS_MESSAGE``)."""
        raise _not_supported(MODIFYING_ROWS_MESSAGE)

    def begin_merge_adding_columns(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
        added_columns: Sequence[ColumnMetadata],
        insert_case_defaults: Mapping[int, Sequence[ColumnHandle]] | None = None,
    ) -> ConnectorMergeTableHandle:
        """``MERGE WITH SCHEMA EVOLUTION`` (Delta, Spark 4): :meth:`begin_merge` for a MERGE whose commit also
        adds ``added_columns`` to the table, atomically with its rows.

        Called once on the driver instead of :meth:`begin_merge`, and only when the statement adds at least one
        column (a ``MERGE WITH SCHEMA EVOLUTION`` whose source brings no new column begins with
        :meth:`begin_merge`). ``added_columns`` are new nullable columns (name, Arrow type, SQL type name) the
        source has and the table lacks, in the source's order, none named like a column of the table; they go
        after the table's columns. ``update_case_columns`` may name them (handles built from their name and
        type); ``insert_case_defaults`` is :meth:`begin_merge`'s. From here on the statement's merge pages carry the table's visible columns followed by
        ``added_columns`` (target rows read NULL in them), so the handle returned must tell the sinks that
        layout. :meth:`finish_merge` commits the columns and the rows in one commit, even when no row changed
        (the statement still adds the columns); :meth:`abort_merge`, after any failure, leaves the table
        without them. Until that commit no reader sees the columns, and a read of an earlier version (time
        travel) never does. Default: NOT_SUPPORTED (``SCHEMA_EVOLUTION_MESSAGE``): the statement fails before
        any sink runs and changes nothing."""
        raise _not_supported(SCHEMA_EVOLUTION_MESSAGE)

    def finish_merge(
        self,
        *,
        session: ConnectorSession,
        merge_handle: ConnectorMergeTableHandle,
        fragments: Sequence[MergeFragment],
    ) -> None:
        """Called once on the driver with every sink's fragments: commit atomically, or raise (for example
        ``TRANSACTION_CONFLICT``) and leave the table as it was. Calling it without ``begin_merge`` is an
        internal error.

        ``fragments`` is one flat list: the concatenation of what every sink's ``finish()`` returned, from all
        writer tasks, in no particular order (a task that received no rows created no sink and contributes
        nothing; a statement that changed no row may commit with an empty list). It runs only after every
        writer task succeeded and the duplicate-match check passed; if it raises, the engine calls
        :meth:`abort_merge` with the same handle, so leave staged data for it to remove. The default raises
        ``GENERIC_INTERNAL_ERROR``: a connector that implements :meth:`begin_merge` must implement this."""
        raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merge called without begin_merge")

    def finish_merges(
        self,
        *,
        session: ConnectorSession,
        merges: Sequence[tuple[ConnectorMergeTableHandle, Sequence[MergeFragment]]],
    ) -> None:
        """Commit several merges (of different tables of this catalog, each begun with ``begin_merge``) in
        one atomic commit: all become visible or none does. For connectors that wrap this one, e.g. the
        children of a merge table. Default: NOT_SUPPORTED (the caller must not fall back to separate
        ``finish_merge`` calls if it promises atomicity).

        Not called by the engine itself: a wrapping connector (the partitioned connector, over its base)
        calls it from its own ``finish_merge``, on the driver, once per statement."""
        raise _not_supported(MULTI_TABLE_COMMIT_MESSAGE)

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        """Called on the driver when the statement fails after ``begin_merge``: discard what was staged.
        Must not raise for a merge that staged nothing.

        Called at most once per statement, instead of (or after a failed) :meth:`finish_merge`: when a sink
        failed, the duplicate-match check or a NOT NULL check failed, the statement was cancelled, or
        ``finish_merge`` raised. Sinks' ``abort()`` ran before on the executors that could, but a killed
        worker never runs it, so remove everything staged under the merge handle (e.g. its staging directory)
        here. Its own errors are swallowed (the original failure is reported). Default: nothing to discard."""
