"""mergekit's connector SPI, modeled on Trino's (``io.trino.spi.connector``) in snake_case.

Imports only pyarrow and attrs (and ``mergekit.errors``). See docs/develop/spi-overview.md.
"""

from __future__ import annotations

from ._connector import Connector, ConnectorFactory
from ._metadata import (
    ADD_COLUMN_MESSAGE,
    CREATE_SCHEMA_MESSAGE,
    CREATE_TABLE_MESSAGE,
    DROP_TABLE_MESSAGE,
    MODIFYING_ROWS_MESSAGE,
    TIME_TRAVEL_MESSAGE,
    TRUNCATE_MESSAGE,
    ConnectorMetadata,
)
from ._model import (
    ColumnHandle,
    ColumnMetadata,
    ConnectorMergeTableHandle,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableLayout,
    ConnectorTableMetadata,
    RowChangeParadigm,
    SchemaTableName,
    TableVersion,
)
from ._read import (
    ALL,
    ConnectorPageSource,
    ConnectorPageSourceProvider,
    ConnectorSplit,
    ConnectorSplitManager,
    Constraint,
    NativeScan,
)
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
from ._types import sql_type_name, parse_sql_type

__all__ = [
    "ADD_COLUMN_MESSAGE",
    "ALL",
    "CREATE_SCHEMA_MESSAGE",
    "CREATE_TABLE_MESSAGE",
    "ColumnHandle",
    "ColumnMetadata",
    "Connector",
    "ConnectorFactory",
    "ConnectorMergeSink",
    "ConnectorMergeTableHandle",
    "ConnectorMetadata",
    "ConnectorPageSinkProvider",
    "ConnectorPageSource",
    "ConnectorPageSourceProvider",
    "ConnectorSession",
    "ConnectorSplit",
    "ConnectorSplitManager",
    "ConnectorTableHandle",
    "ConnectorTableLayout",
    "ConnectorTableMetadata",
    "Constraint",
    "DELETE_OPERATION_NUMBER",
    "DROP_TABLE_MESSAGE",
    "INSERT_OPERATION_NUMBER",
    "MERGE_NOT_SUPPORTED_MESSAGE",
    "MERGE_PAGE_LAYOUT",
    "MODIFYING_ROWS_MESSAGE",
    "MergeOperation",
    "MergePage",
    "MergePageLayout",
    "NativeScan",
    "RowChangeParadigm",
    "SchemaTableName",
    "TIME_TRAVEL_MESSAGE",
    "TRUNCATE_MESSAGE",
    "TableVersion",
    "UPDATE_DELETE_OPERATION_NUMBER",
    "UPDATE_INSERT_OPERATION_NUMBER",
    "UPDATE_OPERATION_NUMBER",
    "create_delete_and_insert_pages",
    "parse_sql_type",
    "sql_type_name",
]
