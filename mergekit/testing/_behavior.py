"""What the kit's tests need from a connector (Trino's ``TestingConnectorBehavior``), and the exact message a
connector that opts out of a behaviour must fail with."""

from __future__ import annotations

import enum

from mergekit.spi import (
    ADD_COLUMN_MESSAGE,
    CHECK_CONSTRAINT_MESSAGE,
    CREATE_TABLE_MESSAGE,
    DROP_TABLE_MESSAGE,
    SET_DEFAULT_MESSAGE,
)

__all__ = ["Behavior", "DEFAULT_MESSAGES", "TYPE_BEHAVIORS"]


class Behavior(enum.StrEnum):
    """What a scenario or a kit test needs from the connector. Every behaviour defaults to supported."""

    INSERT = "insert"
    MERGE = "merge"
    UPDATE = "update"
    DELETE = "delete"
    NOT_MATCHED_BY_SOURCE = "not_matched_by_source"
    # DDL
    CREATE_TABLE = "create_table"
    DROP_TABLE = "drop_table"
    ADD_COLUMN = "add_column"
    CHECK_CONSTRAINT = "check_constraint"  # CHECK in CREATE TABLE, ALTER TABLE ADD/DROP CONSTRAINT (stored)
    COLUMN_DEFAULT = "column_default"  # DEFAULT in CREATE TABLE, ALTER COLUMN SET/DROP DEFAULT (stored)
    # column types beyond INTEGER, BIGINT, VARCHAR and BOOLEAN (which every connector must store)
    TYPE_DECIMAL = "type_decimal"
    TYPE_DATE = "type_date"
    TYPE_TIMESTAMP = "type_timestamp"
    TYPE_VARBINARY = "type_varbinary"


#: The SQL type each type behaviour stands for, as the kit declares its columns.
TYPE_BEHAVIORS: dict[Behavior, str] = {
    Behavior.TYPE_DECIMAL: "DECIMAL(12,2)",
    Behavior.TYPE_DATE: "DATE",
    Behavior.TYPE_TIMESTAMP: "TIMESTAMP",
    Behavior.TYPE_VARBINARY: "VARBINARY",
}

#: The message an opted-out behaviour fails with unless the connector says otherwise
#: (``BaseConnectorTest.not_supported_messages``): the SPI's constants, which the defaults of the optional
#: ``ConnectorMetadata`` methods raise. Row changes (INSERT, MERGE, UPDATE, DELETE) use
#: ``BaseConnectorTest.not_supported_message``. A type has no SPI constant: a connector that opts out of one must
#: state its message.
DEFAULT_MESSAGES: dict[Behavior, str] = {
    Behavior.CREATE_TABLE: CREATE_TABLE_MESSAGE,
    Behavior.DROP_TABLE: DROP_TABLE_MESSAGE,
    Behavior.ADD_COLUMN: ADD_COLUMN_MESSAGE,
    Behavior.CHECK_CONSTRAINT: CHECK_CONSTRAINT_MESSAGE,
    Behavior.COLUMN_DEFAULT: SET_DEFAULT_MESSAGE,
}
