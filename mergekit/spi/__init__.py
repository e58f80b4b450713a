"""mergekit's connector SPI, modeled on Trino's (``io.trino.spi.connector``) in snake_case.

Imports only pyarrow and attrs (and ``mergekit.errors``). See docs/develop/spi-overview.md.

The whole contract between the engine and a storage plugin. A connector package imports only this package
and ``mergekit.errors``; everything else of mergekit (SQL, planning, Spark) stays on the engine's side.

Where each piece runs, and how often (details in each module):

===============================  ==========  ============================================================
piece                            runs on     called
===============================  ==========  ============================================================
``ConnectorFactory.create``      driver      once per catalog, with a ``ConnectorContext``
``Connector`` getters            driver      whenever the engine needs a part (return the same objects)
``ConnectorMetadata``            driver      per statement: names, DDL, layouts, ``begin_merge`` /
                                             ``finish_merge`` / ``abort_merge`` (once each)
``ConnectorSplitManager``        driver      ``get_splits`` once per scan read through page sources
``ConnectorPageSource``          executors   one per split; iterated for Arrow record batches, then closed
``ConnectorMergeSink``           executors   one per writer task that receives rows; ``store_merged_rows``
                                             per page, then ``finish`` (fragments) or ``abort``
``ConnectorIndex``               executors   one per lookup task of an indexed MERGE
===============================  ==========  ============================================================

Modules: ``_connector`` (factory, connector, context), ``_metadata`` (driver-side operations and the
NOT_SUPPORTED messages), ``_model`` (names, columns, handles, layouts, sessions), ``_read`` (splits, page
sources, native scans, indexes), ``_sink`` (merge sinks, the merge page layout and operations),
``_partitioning`` (merge tables of seed 004), ``_streams`` (streams of seed 001), ``_jobs`` (streaming jobs'
exactly-once commits), ``_views`` (stored view definitions), ``_row_level`` (seed 003's row-level DELETE/UPDATE SPI), ``_properties`` (table properties), ``_types``
(SQL type names).
The private modules are an implementation detail: import from ``mergekit.spi``. Two names are type aliases
for documentation's sake: ``MergeFragment`` (what a sink's ``finish()`` returns, opaque to the engine) and
``Procedure`` (a callable of ``Connector.get_procedures``). ``create_connector`` calls a factory with or
without ``context`` as its signature allows; the engine and ``ConnectorContext`` use it, connectors need not.

What to implement, by capability (each level adds to the one before):

read-only catalog
    ``ConnectorFactory.create``; ``Connector.get_metadata``, ``get_split_manager``,
    ``get_page_source_provider``; ``ConnectorMetadata.list_tables``, ``get_table_handle``,
    ``get_table_metadata`` (the three abstract methods); ``ConnectorSplitManager.get_splits``;
    ``ConnectorPageSourceProvider.create_page_source`` and its ``ConnectorPageSource``.
DDL
    ``create_table`` / ``drop_table`` (and ``add_column``, ``drop_column``, ``rename_column``,
    ``set_column_type``, ``truncate_table``, ``create_schema`` as supported); table properties through
    ``Connector.get_table_properties``.
    ``CHECK`` constraints and column ``DEFAULT`` values are enforced and evaluated by the engine: the
    connector stores what ``create_table`` receives (``ConnectorTableMetadata.check_constraints``,
    ``ColumnMetadata.default``) and, for ``ALTER TABLE``, implements ``add_check_constraint``,
    ``drop_check_constraint`` and ``set_column_default``.
append-only (INSERT, CREATE TABLE AS)
    ``begin_merge`` / ``finish_merge`` / ``abort_merge``, ``Connector.get_page_sink_provider`` and a
    ``ConnectorMergeSink`` that writes the INSERT rows of each page. Leave ``get_row_change_paradigm`` and
    ``get_merge_row_id_column_handle`` at their defaults: UPDATE, DELETE and MERGE then fail with
    ``NOT_SUPPORTED`` (``MODIFYING_ROWS_MESSAGE``) and ``mergekit connectors`` shows "INSERT only".
row changes (UPDATE, DELETE, MERGE)
    additionally ``get_row_change_paradigm`` and ``get_merge_row_id_column_handle`` (the scan must produce
    the row id column), and sinks that handle every operation of :class:`MergeOperation`.
    ``begin_merge_adding_columns`` adds ``MERGE WITH SCHEMA EVOLUTION``: new columns committed with the rows.
row-level DELETE and UPDATE (seed 003), instead of or beside the merge SPI
    ``get_delete_row_id_column_handle`` / ``begin_delete`` / ``finish_delete`` (and ``abort_delete``), their
    ``update`` twins, and a page source provider that returns an :class:`UpdatablePageSource` for the handles
    ``begin_delete`` / ``begin_update`` return; ``apply_delete`` / ``execute_delete`` push a simple ``DELETE``
    down into the storage. The merge SPI wins where both exist; ``MERGE`` needs the merge SPI. ``INSERT`` goes
    through ``begin_merge`` and a merge sink even here (the append-only recipe above). What such a connector cannot
    run fails with the messages a kit's ``not_supported_messages`` names: :data:`MERGE_NEEDS_MERGE_SPI`,
    :data:`UPDATE_NEEDS_ROW_LEVEL_UPDATE` (only the row-level DELETE), :data:`INSERT_NEEDS_MERGE_SINK`; one that
    implements part of a path (``begin_delete`` but not ``finish_delete``) fails with ``CONNECTOR_CONTRACT_ERROR``.
streams (seed 001: ``CREATE STREAM``, ``INSERT`` into it, ``SELECT STREAM``)
    ``create_table`` honouring ``ConnectorTableMetadata.stream`` (:class:`StreamDefinition`: the monotonic
    columns and the slack) and ``get_table_metadata`` returning it; the append-only write path, with the
    monotonicity check inside ``finish_merge``'s commit (``CONSTRAINT_VIOLATION``, :func:`monotonic_violation`);
    ``get_stream_commits`` (:class:`StreamCommit` per commit: version, row count, monotonic low/high) and
    ``get_stream_splits`` (the rows of a version range, read by the page source provider). The engine refuses
    UPDATE, DELETE, MERGE and TRUNCATE on a stream itself. A connector whose state lives in one process
    raises ``NOT_SUPPORTED`` (:data:`STREAMS_MESSAGE`) from ``create_table`` for a stream.
views (``CREATE VIEW``, ``DROP VIEW``, ``SHOW VIEWS``; views in any query)
    ``create_view``, ``get_view``, ``drop_view``, ``list_views`` storing a :class:`ConnectorViewDefinition`
    (the query's text and columns); views and tables share one namespace. The engine expands a view into its
    query wherever a statement reads it, so there is no read path to implement.
faster
    ``get_native_scan``, ``get_value_set_columns``, ``resolve_index`` with ``Connector.get_index_provider``,
    ``get_insert_layout`` / ``get_update_layout`` to route rows to writers.

A read-only connector over one in-memory Arrow table, the smallest complete one::

    class OneTableMetadata(ConnectorMetadata):
        def __init__(self, data: pa.Table) -> None:
            self.data, self.name = data, SchemaTableName(schema="default", table="t")

        def list_tables(self, *, session, schema):
            return [self.name] if schema in (None, "default") else []

        def get_table_handle(self, *, session, table, version=None):
            if version is not None:
                raise MergekitError(ErrorCode.NOT_SUPPORTED, TIME_TRAVEL_MESSAGE)
            return ConnectorTableHandle(table=table) if table == self.name else None

        def get_table_metadata(self, *, session, table_handle):
            columns = [ColumnMetadata(name=f.name, type=f.type) for f in self.data.schema]
            return ConnectorTableMetadata(table=self.name, columns=columns)

    class OneSplit(ConnectorSplitManager):  # one split: the page source reads everything
        def get_splits(self, *, session, table_handle, columns, constraint):
            return [ConnectorSplit()]

Its page source provider returns a page source yielding ``data.select([c.name for c in columns]).to_batches()``
(the provider is pickled to executors with the data: real connectors ship paths, not rows).

Testing: ``mergekit.testing.BaseConnectorTest`` runs the conformance kit against a catalog of the connector;
behaviours default to supported and a connector opts out of what it cannot do (docs/develop/).

Errors: every method may raise ``mergekit.errors.MergekitError(ErrorCode.X, message)``; the statement fails
with that code and message, also when it was raised on an executor (the engine recovers it from the worker's
traceback). Use ``NOT_SUPPORTED`` with the constant messages of this package for a missing capability,
``TRANSACTION_CONFLICT`` when a concurrent commit invalidates this one, ``CONSTRAINT_VIOLATION`` for key
violations (a connector that has no primary keys refuses one in ``create_table`` with ``PRIMARY_KEY_MESSAGE``)
and ``INVALID_ARGUMENTS`` for bad catalog options. Connectors get codes of their own from the
reserved range of ``mergekit.errors.ErrorCode``.

Pickling: everything the engine ships to executors (providers, handles, splits, sessions) is pickled with
cloudpickle, and the fragments sinks return travel back with the standard ``pickle``: define fragment classes
at module level in an importable module (the driver must import it to unpickle them). Keep connections,
locks and open files out of all of these; open them lazily on the executor and close them in ``close()`` /
``finish()`` / ``abort()``. Executors may be other machines: paths in handles must be reachable from them.

Compatibility: arguments are keyword-only, so the SPI can add parameters with defaults without breaking
implementers; a new optional capability arrives as a method whose default raises ``NOT_SUPPORTED``.

See also: docs/develop/spi-overview.md (the pieces), supporting-merge.md (the write path, the merge page,
the append-only recipe), testing-your-connector.md (the kit) and example-connector.md (``examples/csvdir``).
"""

from __future__ import annotations

# The plugin entry (driver): factory, connector, the engine's services.
from ._connector import Connector, ConnectorContext, ConnectorFactory, Procedure, create_connector

# Streaming jobs (seed 001's continuous DML): a micro-batch's id committed with its rows.
from ._jobs import JOB_BATCH_PROPERTY, JOBS_MESSAGE, JobBatch, JobMetadata

# Driver-side operations; the constant messages of their NOT_SUPPORTED defaults.
from ._metadata import (
    ADD_COLUMN_MESSAGE,
    CHANGE_FEED_MESSAGE,
    CHECK_CONSTRAINT_MESSAGE,
    CREATE_SCHEMA_MESSAGE,
    CREATE_TABLE_MESSAGE,
    DROP_COLUMN_MESSAGE,
    DROP_TABLE_MESSAGE,
    HISTORY_MESSAGE,
    MERGE_TABLE_MESSAGE,
    MODIFYING_ROWS_MESSAGE,
    MULTI_TABLE_COMMIT_MESSAGE,
    PRIMARY_KEY_MESSAGE,
    RENAME_COLUMN_MESSAGE,
    SCHEMA_EVOLUTION_MESSAGE,
    SET_COLUMN_TYPE_MESSAGE,
    SET_DEFAULT_MESSAGE,
    SET_PROPERTIES_MESSAGE,
    TIME_TRAVEL_MESSAGE,
    TRUNCATE_MESSAGE,
    ConnectorMetadata,
    MergeFragment,
)

# Values that cross the boundary between driver and executors (frozen attrs, picklable).
from ._model import (
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
    ComputedColumn,
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

# Merge tables (seed 004).
from ._partitioning import (
    PartitionBounds,
    PartitionKind,
    PartitionMethod,
    PartitionScheme,
    RowsCheck,
    format_partition_value,
)

# Table properties of CREATE TABLE ... WITH (...).
from ._properties import PROPERTY_TYPES, PropertyMetadata

# Reads: splits, page sources, native scans, indexes.
from ._read import (
    ALL,
    AntiJoin,
    ChainedPageSource,
    ConnectorIndex,
    ConnectorIndexHandle,
    ConnectorIndexProvider,
    ConnectorPageSource,
    ConnectorPageSourceProvider,
    ConnectorResolvedIndex,
    ConnectorSplit,
    ConnectorSplitManager,
    Constraint,
    NativeScan,
    NativeScanUnion,
)

# Row-level DELETE and UPDATE (seed 003): updatable page sources, delete pushdown. The *_NEEDS_* messages are the
# engine's NOT_SUPPORTED words for a statement a row-level connector cannot run (MERGE without the merge SPI, UPDATE
# with only the row-level DELETE, INSERT without begin_merge): what an author's conformance kit expects for them.
from ._row_level import (
    INSERT_NEEDS_MERGE_SINK,
    MERGE_NEEDS_MERGE_SPI,
    PREDICATE_OPERATORS,
    ROW_LEVEL_DELETE_MESSAGE,
    ROW_LEVEL_UPDATE_MESSAGE,
    UPDATE_NEEDS_ROW_LEVEL_UPDATE,
    DeletePredicate,
    RowLevelMetadata,
    UpdatablePageSource,
)

# Writes: merge sinks, the merge page layout, operation codes.
from ._sink import (
    DELETE_OPERATION_NUMBER,
    INSERT_OPERATION_NUMBER,
    MERGE_NOT_SUPPORTED_MESSAGE,
    MERGE_PAGE_LAYOUT,
    UPDATE_DELETE_OPERATION_NUMBER,
    UPDATE_INSERT_OPERATION_NUMBER,
    UPDATE_OPERATION_NUMBER,
    ConnectorMergeSink,
    ConnectorPageSinkProvider,
    MergeOperation,
    MergePage,
    MergePageLayout,
    create_delete_and_insert_pages,
)

# Streams (seed 001): what makes a table a stream, its commits, the monotonicity message.
from ._streams import (
    STREAMS_MESSAGE,
    MonotonicColumn,
    StreamCommit,
    StreamDefinition,
    StreamMetadata,
    monotonic_violation,
)

# SQL type names <-> Arrow types.
from ._types import parse_sql_type, sql_type_name

# Views: the stored definition (the engine expands views; the connector only stores them).
from ._views import VIEWS_MESSAGE, ConnectorViewDefinition, ViewColumn, ViewMetadata

__all__ = [
    # _row_level
    "INSERT_NEEDS_MERGE_SINK",
    "MERGE_NEEDS_MERGE_SPI",
    "PREDICATE_OPERATORS",
    "ROW_LEVEL_DELETE_MESSAGE",
    "ROW_LEVEL_UPDATE_MESSAGE",
    "UPDATE_NEEDS_ROW_LEVEL_UPDATE",
    "DeletePredicate",
    "RowLevelMetadata",
    "UpdatablePageSource",
    # ---- views: stored definitions (the engine expands them) ----
    "VIEWS_MESSAGE",
    "ConnectorViewDefinition",
    "ViewColumn",
    "ViewMetadata",
    # ---- streams (seed 001) ----
    "STREAMS_MESSAGE",
    "MonotonicColumn",
    "StreamCommit",
    "StreamDefinition",
    "StreamMetadata",
    "monotonic_violation",
    # ---- streaming jobs ----
    "JOB_BATCH_PROPERTY",
    "JOBS_MESSAGE",
    "JobBatch",
    "JobMetadata",
    # ---- plugin entry: found through the ``mergekit.connectors`` entry-point group (driver) ----
    "ConnectorFactory",
    "ConnectorContext",
    "Connector",
    "Procedure",
    "create_connector",
    # ---- driver-side operations and the constant messages of their NOT_SUPPORTED defaults ----
    "ConnectorMetadata",
    "MergeFragment",
    "ADD_COLUMN_MESSAGE",
    "CHANGE_FEED_MESSAGE",
    "CHECK_CONSTRAINT_MESSAGE",
    "PRIMARY_KEY_MESSAGE",
    "CREATE_SCHEMA_MESSAGE",
    "CREATE_TABLE_MESSAGE",
    "DROP_COLUMN_MESSAGE",
    "RENAME_COLUMN_MESSAGE",
    "SCHEMA_EVOLUTION_MESSAGE",
    "SET_COLUMN_TYPE_MESSAGE",
    "DROP_TABLE_MESSAGE",
    "HISTORY_MESSAGE",
    "MERGE_TABLE_MESSAGE",
    "MODIFYING_ROWS_MESSAGE",
    "MULTI_TABLE_COMMIT_MESSAGE",
    "SET_DEFAULT_MESSAGE",
    "SET_PROPERTIES_MESSAGE",
    "TIME_TRAVEL_MESSAGE",
    "TRUNCATE_MESSAGE",
    # ---- values that cross the boundary: frozen attrs, picklable ----
    "CheckConstraint",
    "ColumnHandle",
    "ColumnMetadata",
    "ComputedColumn",
    "ConnectorMergeTableHandle",
    "ConnectorSession",
    "ConnectorTableHandle",
    "ConnectorTableLayout",
    "ConnectorTableMetadata",
    "RowChangeParadigm",
    "SchemaTableName",
    "TableCommit",
    "TableVersion",
    # ---- reads: splits and page sources (executors), native scans, indexes ----
    "ALL",
    "AntiJoin",
    "ChainedPageSource",
    "ConnectorIndex",
    "ConnectorIndexHandle",
    "ConnectorIndexProvider",
    "ConnectorPageSource",
    "ConnectorPageSourceProvider",
    "ConnectorResolvedIndex",
    "ConnectorSplit",
    "ConnectorSplitManager",
    "Constraint",
    "NativeScan",
    "NativeScanUnion",
    # ---- writes: merge sinks (executors), the merge page layout and its operation codes ----
    "ConnectorMergeSink",
    "ConnectorPageSinkProvider",
    "DELETE_OPERATION_NUMBER",
    "INSERT_OPERATION_NUMBER",
    "MERGE_NOT_SUPPORTED_MESSAGE",
    "MERGE_PAGE_LAYOUT",
    "MergeOperation",
    "MergePage",
    "MergePageLayout",
    "UPDATE_DELETE_OPERATION_NUMBER",
    "UPDATE_INSERT_OPERATION_NUMBER",
    "UPDATE_OPERATION_NUMBER",
    "create_delete_and_insert_pages",
    # ---- merge tables (seed 004): partition schemes and bounds ----
    "PartitionBounds",
    "PartitionKind",
    "PartitionMethod",
    "PartitionScheme",
    "RowsCheck",
    "format_partition_value",
    # ---- table properties of CREATE TABLE ... WITH (...) ----
    "PROPERTY_TYPES",
    "PropertyMetadata",
    # ---- SQL type names <-> Arrow types ----
    "parse_sql_type",
    "sql_type_name",
]
