"""Value classes that cross the SPI boundary: names, columns, handles, layouts, sessions.

All of them are frozen attrs classes with keyword-only arguments: immutable, hashable and picklable, because
handles travel from the driver to Spark executors (inside splits and merge handles) and fragments travel back.
Connectors subclass the handle bases to carry what they need; subclasses must stay picklable.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import pyarrow as pa

__all__ = [
    "SchemaTableName",
    "ColumnMetadata",
    "ConnectorTableMetadata",
    "ConnectorTableHandle",
    "ColumnHandle",
    "ConnectorTableLayout",
    "ConnectorMergeTableHandle",
    "ConnectorSession",
    "RowChangeParadigm",
    "TableVersion",
]


def _columns(values: Iterable[ColumnMetadata]) -> tuple[ColumnMetadata, ...]:
    return tuple(values)


def _names(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _anys(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(values)


def _freeze_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


@attrs.frozen(kw_only=True)
class SchemaTableName:
    """A table's name inside one catalog. Unquoted SQL identifiers arrive lower-cased."""

    schema: str
    table: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"


@attrs.frozen(kw_only=True)
class ColumnMetadata:
    """One column of a table as the user sees it.

    ``type`` is the Arrow type of the column's values in pages. ``type_name`` is the SQL type as declared
    (``varchar(16)``, ``timestamp(3) with time zone``); the engine derives it from ``type`` when it is None.
    A ``hidden`` column (a row id, a version number) is readable by name but not part of ``SELECT *`` and not
    part of merge pages.
    """

    name: str
    type: pa.DataType
    nullable: bool = True
    hidden: bool = False
    comment: str | None = None
    type_name: str | None = None


@attrs.frozen(kw_only=True)
class ConnectorTableMetadata:
    """What ``CREATE TABLE`` asks a connector to create, and what ``get_table_metadata`` answers.

    ``primary_key`` lists key columns in declaration order (empty when none was declared). ``properties``
    holds the ``WITH (...)`` table properties, values already evaluated to Python scalars or lists; in
    ``create_table`` only properties the connector declares (``Connector.get_table_properties``), converted to
    their declared type, plus the defaults of those the statement did not set.
    """

    table: SchemaTableName
    columns: tuple[ColumnMetadata, ...] = attrs.field(converter=_columns)
    primary_key: tuple[str, ...] = attrs.field(default=(), converter=_names)
    properties: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze_mapping, eq=False, hash=False)
    comment: str | None = None

    @property
    def visible_columns(self) -> tuple[ColumnMetadata, ...]:
        return tuple(c for c in self.columns if not c.hidden)

    def column(self, name: str) -> ColumnMetadata:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


@attrs.frozen(kw_only=True)
class TableVersion:
    """A point in a table's history for time travel: exactly one of ``version`` or ``timestamp``."""

    version: int | None = None
    timestamp: datetime | None = None


@attrs.frozen(kw_only=True)
class TableCommit:
    """One commit of a table, as ``DESCRIBE HISTORY`` shows it (Delta's statement; Iceberg's ``$history``).

    ``version`` is the number ``FOR VERSION AS OF`` accepts; ``committed_at`` is in UTC; ``operation`` is the
    connector's name for what the commit did (``create``, ``write``, ``compact``, ...); ``metrics`` holds
    what the connector recorded about it (rows inserted, files added, ...), values of JSON-compatible types.
    """

    version: int
    committed_at: datetime
    operation: str
    metrics: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze_mapping, eq=False, hash=False)


@attrs.frozen(kw_only=True)
class ConnectorTableHandle:
    """Opaque to the engine: identifies a table (and, for a connector that versions, a snapshot of it).

    Connectors subclass it. The engine only reads ``table`` for messages.
    """

    table: SchemaTableName


@attrs.frozen(kw_only=True)
class ColumnHandle:
    """Identifies a column in scans and layouts. ``name`` is the column name in pages; ``type`` its Arrow type."""

    name: str
    type: pa.DataType


@attrs.frozen(kw_only=True)
class ConnectorTableLayout:
    """How rows must be distributed to writers.

    The engine hashes ``partition_columns`` (column names, in order) of each row to pick the writer task, so
    all rows with equal values reach one merge sink. An UPDATE that changes those columns is routed by the
    *new* values for its insert half and by the update layout (or the row id) for its delete half.
    """

    partition_columns: tuple[str, ...] = attrs.field(converter=_names)
    computed_columns: tuple[Any, ...] = attrs.field(default=(), converter=_anys)
    """:class:`~mergekit.spi.ComputedColumn` values the engine evaluates per merge row (SQL text over the
    new column values, e.g. a ``USING`` partition expression) and appends to every merge page after
    ``$row_id``, in this order. ``partition_columns`` may name them."""


@attrs.frozen(kw_only=True)
class ConnectorMergeTableHandle:
    """Returned by ``begin_merge``; handed to every merge sink and back to ``finish_merge`` / ``abort_merge``.

    ``table_handle`` is the table handle the target scan must use (it may differ from the one passed to
    ``begin_merge``, for example pinned to a snapshot). Connectors subclass it to add a transaction id,
    a staging location, the columns each UPDATE case sets, and so on.
    """

    table_handle: ConnectorTableHandle


class RowChangeParadigm(enum.Enum):
    """How a connector represents a row change (Trino's ``RowChangeParadigm``).

    ``CHANGE_ONLY_UPDATED_COLUMNS``: sinks receive UPDATE rows (operation 3) with the full new row and its row id.
    ``DELETE_ROW_AND_INSERT_ROW``: the engine turns every UPDATE into an UPDATE_DELETE (5) of the old row and
    an UPDATE_INSERT (4) of the new one, routed independently, before the sink sees them.
    """

    CHANGE_ONLY_UPDATED_COLUMNS = "CHANGE_ONLY_UPDATED_COLUMNS"
    DELETE_ROW_AND_INSERT_ROW = "DELETE_ROW_AND_INSERT_ROW"


def _utcnow() -> datetime:
    return datetime.now(UTC)


@attrs.frozen(kw_only=True)
class ConnectorSession:
    """Per-statement context. Picklable; the same session object reaches executors.

    ``query_id`` is unique per statement (use it to name staged files). ``properties`` holds session and
    catalog properties the connector may read. ``start_time`` is the statement's start, in UTC.
    """

    query_id: str = attrs.field(factory=lambda: uuid.uuid4().hex)
    user: str = "mergekit"
    catalog: str = ""
    start_time: datetime = attrs.field(factory=_utcnow)
    time_zone: str = "UTC"
    properties: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze_mapping, eq=False, hash=False)
