"""Value classes that cross the SPI boundary: names, columns, handles, layouts, sessions.

All of them are frozen attrs classes with keyword-only arguments: immutable, hashable and picklable, because
handles travel from the driver to Spark executors (inside splits and merge handles) and fragments travel back.
Connectors subclass the handle bases to carry what they need; subclasses must stay picklable.

Who builds what:

* the engine builds :class:`SchemaTableName` (from the statement's resolved names), :class:`ConnectorSession`
  (one per statement and catalog), :class:`ColumnMetadata` and :class:`ConnectorTableMetadata` for
  ``CREATE TABLE`` and ``ALTER TABLE ... ADD COLUMN``, :class:`CheckConstraint` for ``CHECK`` in ``CREATE
  TABLE`` and ``ALTER TABLE ... ADD CONSTRAINT``, and :class:`TableVersion` for time travel;
* the connector builds its subclasses of :class:`ConnectorTableHandle` and :class:`ConnectorMergeTableHandle`,
  its :class:`ColumnHandle` values, :class:`ConnectorTableLayout` (with :class:`ComputedColumn` values),
  :class:`TableCommit` for ``DESCRIBE HISTORY``, and chooses a :class:`RowChangeParadigm`.

A subclass of a handle must itself be ``@attrs.frozen(kw_only=True)``, hold only picklable values (no open
files, connections or locks: keep those on the connector, which stays on the driver) and keep equality by
value, because the engine compares handles and pickles them into Spark tasks.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import pyarrow as pa

from ._streams import StreamDefinition

__all__ = [
    "SchemaTableName",
    "ColumnMetadata",
    "CheckConstraint",
    "ConnectorTableMetadata",
    "ConnectorTableHandle",
    "ColumnHandle",
    "ComputedColumn",
    "ConnectorTableLayout",
    "ConnectorMergeTableHandle",
    "ConnectorSession",
    "RowChangeParadigm",
    "TableCommit",
    "TableVersion",
]


# Typed attrs converters: ``converter=tuple`` would defeat type checkers, and a list given by a connector must
# not stay mutable inside a frozen value (a handle is hashed, and shared between threads of the driver).


def _columns(values: Iterable[ColumnMetadata]) -> tuple[ColumnMetadata, ...]:
    return tuple(values)


def _names(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


def _computed(values: Iterable[ComputedColumn]) -> tuple[ComputedColumn, ...]:
    return tuple(values)


def _freeze_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    # A copy, so that a caller mutating its dict afterwards cannot change a frozen value; None reads as empty.
    return dict(value or {})


@attrs.frozen(kw_only=True)
class SchemaTableName:
    """A table's name inside one catalog.

    Built by the engine from the statement's names after it resolved the catalog (the catalog itself is not
    part of the name: each connector instance serves one catalog, whose name is in
    :attr:`ConnectorSession.catalog`). ``schema`` and ``table`` are lower-cased, quoted or not (Trino folds
    identifiers), and names compare by them alone. ``str()`` gives ``schema.table``, the form the engine uses
    in messages.

    ``quoted_schema`` / ``quoted_table`` keep the exact spelling of a part the statement quoted
    (``pg.public."MixedCase"``: table ``mixedcase``, quoted_table ``MixedCase``), and are None for an unquoted
    part or a name the engine built itself. They take no part in equality. A connector that stores names
    case-insensitively ignores them; one over a case-sensitive store (a SQL database's catalog) finds a quoted
    part exactly as written, and may return the names of ``list_tables`` as the store spells them, with
    ``quoted_table`` set, so that they are listed and found as stored.
    """

    schema: str
    table: str
    quoted_schema: str | None = attrs.field(default=None, eq=False, repr=False)
    quoted_table: str | None = attrs.field(default=None, eq=False, repr=False)

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"


@attrs.frozen(kw_only=True)
class ColumnMetadata:
    """One column of a table as the user sees it.

    ``type`` is the Arrow type of the column's values in pages. ``type_name`` is the SQL type as declared
    (``varchar(16)``, ``timestamp(3) with time zone``); the engine derives it from ``type`` when it is None.
    A ``hidden`` column (a row id, a version number) is readable by name but not part of ``SELECT *`` and not
    part of merge pages.

    The engine builds one for every column of ``CREATE TABLE`` and for ``ALTER TABLE ... ADD COLUMN``; the
    connector returns them from ``get_table_metadata``. ``nullable`` False is a ``NOT NULL`` constraint the
    engine enforces on every INSERT and UPDATE before a merge sink sees the row (the statement then fails with
    ``CONSTRAINT_VIOLATION``); the connector only has to remember it. ``comment`` is shown by ``DESCRIBE``.

    ``default`` is the column's ``DEFAULT`` expression as SQL text in mergekit's dialect (Trino's
    ``ColumnMetadata.defaultValue``), or None when it has none (an omitted value is then NULL). The engine
    checks the expression when a statement declares it (a constant-ish expression: literals, arithmetic,
    ``current_date``; no column or subquery; of a type the column takes) and evaluates it itself for every
    INSERT that omits the column and every ``DEFAULT`` written as a value, so the connector only stores the
    text and returns it unchanged from ``get_table_metadata``.

    ``storage_default`` True says that the storage itself fills the column when an INSERT leaves it out (a SQL
    database's ``DEFAULT now()``, a sequence, an identity column), for a column without ``default``. An INSERT
    statement or a MERGE ``WHEN NOT MATCHED THEN INSERT`` that omits the column (or writes ``DEFAULT`` for it)
    sends NULL in its channel for those rows, does not check its ``NOT NULL``, and names the column in
    ``begin_merge``'s ``insert_case_defaults``: the sink must let the storage fill it. An explicit NULL stays a
    NULL (and fails a ``NOT NULL``). ``UPDATE ... SET c = DEFAULT`` of such a column is refused
    (``NOT_SUPPORTED``). Never set by the engine: connectors report it for columns the storage describes.
    """

    name: str
    type: pa.DataType
    nullable: bool = True
    hidden: bool = False
    comment: str | None = None
    type_name: str | None = None
    default: str | None = None
    storage_default: bool = False


@attrs.frozen(kw_only=True)
class CheckConstraint:
    """A ``CHECK`` constraint of a table (Trino's ``ConnectorTableMetadata.checkConstraints``, with a name).

    ``expression`` is SQL text in mergekit's dialect over the table's visible column names (unqualified), of
    type boolean; ``name`` is unique within the table (the statement's ``CONSTRAINT name``, or one the engine
    generates PostgreSQL's way: ``<table>_<column>_check``).

    The engine enforces it, not the connector: every row an INSERT, UPDATE or MERGE produces must make the
    expression TRUE or NULL (NULL passes, as in SQL), else the statement fails with ``CONSTRAINT_VIOLATION``
    (``Check constraint violation: (<expression>)``, naming the constraint) before anything is committed. The
    connector stores the constraints it receives in ``create_table`` or ``add_check_constraint`` and returns
    them, in order, from ``get_table_metadata``.
    """

    name: str
    expression: str


def _checks(values: Iterable[CheckConstraint]) -> tuple[CheckConstraint, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True)
class ConnectorTableMetadata:
    """What ``CREATE TABLE`` asks a connector to create, and what ``get_table_metadata`` answers.

    ``primary_key`` lists key columns in declaration order (empty when none was declared: a ``PRIMARY KEY``
    clause, or the engine's ``primary_key`` table property), which the connector enforces on every write (a
    duplicate fails the statement with ``CONSTRAINT_VIOLATION``); a connector without primary keys raises
    ``NOT_SUPPORTED`` with ``PRIMARY_KEY_MESSAGE``, and one that ignores the key (``get_table_metadata`` returns
    none) is caught by the engine as for CHECK below. ``properties`` holds the ``WITH (...)`` table properties, values already evaluated to Python scalars or lists; in
    ``create_table`` only properties the connector declares (``Connector.get_table_properties``), converted to
    their declared type, plus the defaults of those the statement did not set.

    ``columns`` are in table order, hidden ones included; the engine shows the visible ones in ``DESCRIBE``
    and ``SELECT *`` in that order. ``properties`` takes no part in equality or hashing (values may be lists).

    ``check_constraints`` are the table's :class:`CheckConstraint` values, in declaration order: in
    ``create_table`` the ones the statement declares (a connector that cannot store them raises
    ``NOT_SUPPORTED`` with ``CHECK_CONSTRAINT_MESSAGE``; one that ignores them is caught by the engine, which
    reads the table back, drops it and refuses the statement), from ``get_table_metadata`` the ones it stored.

    ``stream``: the object is a stream (``CREATE STREAM``): in ``create_table`` the engine asks for one (a
    connector that cannot store streams raises ``NOT_SUPPORTED`` with ``STREAMS_MESSAGE``; one that ignores it
    is caught as for CHECK), and ``get_table_metadata`` must return it for as long as the stream exists.

    ``change_stream``: only from ``get_table_metadata`` of a table (not a stream): the table is also a stream of
    its change feed (``SELECT STREAM * FROM t``; seed 001's "both a stream and a table"), described by this
    definition, whose monotonic columns are columns of the change feed (``_commit_version``, ...). The engine
    then reads the stream through the change feed's handle (``get_changes_handle`` from version 0), passed to
    ``get_stream_commits`` and ``get_stream_splits``; the rows and columns are those that handle's splits yield
    (see ``mergekit.spi._streams``). None (the default): ``SELECT STREAM`` over the table is refused.
    """

    table: SchemaTableName
    columns: tuple[ColumnMetadata, ...] = attrs.field(converter=_columns)
    primary_key: tuple[str, ...] = attrs.field(default=(), converter=_names)
    properties: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze_mapping, eq=False, hash=False)
    comment: str | None = None
    check_constraints: tuple[CheckConstraint, ...] = attrs.field(default=(), converter=_checks)
    # set when the object is a stream (``CREATE STREAM``; see mergekit.spi._streams): rows only arrive
    stream: StreamDefinition | None = None
    # set when the table's change feed is also a stream (``SELECT STREAM * FROM t``): that stream's definition
    change_stream: StreamDefinition | None = None

    @property
    def visible_columns(self) -> tuple[ColumnMetadata, ...]:
        """The columns of ``SELECT *`` and of merge pages, in table order (every column not ``hidden``)."""
        return tuple(c for c in self.columns if not c.hidden)

    def column(self, name: str) -> ColumnMetadata:
        """The column named ``name`` (exact, case-sensitive), hidden ones included; ``KeyError`` when absent."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)


@attrs.frozen(kw_only=True)
class TableVersion:
    """A point in a table's history for time travel: exactly one of ``version`` or ``timestamp``.

    Built by the engine for ``FOR VERSION AS OF n`` (``version``: a number ``DESCRIBE HISTORY`` lists) and
    ``FOR TIMESTAMP AS OF ts`` (``timestamp``: the table as of the latest commit at or before it) and passed
    to ``ConnectorMetadata.get_table_handle``. A connector that versions raises ``INVALID_ARGUMENTS`` for a
    version that does not exist or a timestamp before the first commit; one that does not raises
    ``NOT_SUPPORTED`` with ``TIME_TRAVEL_MESSAGE``.
    """

    version: int | None = None
    timestamp: datetime | None = None


@attrs.frozen(kw_only=True)
class TableCommit:
    """One commit of a table, as ``DESCRIBE HISTORY`` shows it (Delta's statement; Iceberg's ``$history``).

    ``version`` is the number ``FOR VERSION AS OF`` accepts; ``committed_at`` is in UTC; ``operation`` is the
    connector's name for what the commit did (``create``, ``write``, ``compact``, ...); ``metrics`` holds
    what the connector recorded about it (rows inserted, files added, ...), values of JSON-compatible types.
    Returned, newest first, by ``ConnectorMetadata.get_table_history``.
    """

    version: int
    committed_at: datetime
    operation: str
    metrics: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze_mapping, eq=False, hash=False)


@attrs.frozen(kw_only=True)
class ConnectorTableHandle:
    """Opaque to the engine: identifies a table (and, for a connector that versions, a snapshot of it).

    Connectors subclass it. The engine only reads ``table`` for messages. Returned by
    ``ConnectorMetadata.get_table_handle`` on the driver, once per table reference of a statement; handed back
    to every metadata call about that table during the statement, and pickled to executors with the page
    source provider's calls. A handle pinned to a snapshot makes all reads of one statement consistent.
    """

    table: SchemaTableName


@attrs.frozen(kw_only=True)
class ColumnHandle:
    """Identifies a column in scans and layouts. ``name`` is the column name in pages; ``type`` its Arrow type.

    The default ``ConnectorMetadata.get_column_handles`` builds one per column of the table metadata; a
    connector subclasses it to carry more (a physical column name, a field id). Hidden columns have handles
    too, and the row id handle of ``get_merge_row_id_column_handle`` need not be a declared column at all.
    """

    name: str
    type: pa.DataType


@attrs.frozen(kw_only=True)
class ComputedColumn:
    """A value the engine computes per merge row and appends to merge pages, after ``$row_id``.

    ``expression`` is SQL text (mergekit's dialect) over the table's visible column names; ``type`` the
    Arrow type of the result (the engine casts to it). Its value is meaningful on INSERT and UPDATE_INSERT
    rows (the new row); on delete rows it may hold anything. ``name`` is the channel's name in the page.

    Declared in :attr:`ConnectorTableLayout.computed_columns` by a connector that needs a value it cannot
    compute itself (connectors do not evaluate SQL): the partitioned connector's ``PARTITION BY ... USING
    (expr)`` key. The engine analyses the expression while it plans the statement, so an expression that does
    not resolve fails the statement before ``begin_merge``.
    """

    name: str
    expression: str
    type: pa.DataType


@attrs.frozen(kw_only=True)
class ConnectorTableLayout:
    """How rows must be distributed to writers.

    The engine hashes ``partition_columns`` (column names, in order) of each row to pick the writer task, so
    all rows with equal values reach one merge sink. An UPDATE that changes those columns is routed by the
    *new* values for its insert half and by the update layout (or the row id) for its delete half.

    Returned by ``ConnectorMetadata.get_insert_layout`` / ``get_update_layout`` on the driver, once per
    statement, before planning. The number of writer tasks is the engine's choice (Spark's shuffle
    partitions): a layout guarantees that rows with equal values meet in one task, not one task per value.
    """

    partition_columns: tuple[str, ...] = attrs.field(converter=_names)
    computed_columns: tuple[ComputedColumn, ...] = attrs.field(default=(), converter=_computed)
    """:class:`ComputedColumn` values the engine evaluates per merge row (SQL text over the new column values,
    e.g. a ``USING`` partition expression) and appends to every merge page after ``$row_id``, in this order.
    ``partition_columns`` may name them."""


@attrs.frozen(kw_only=True)
class ConnectorMergeTableHandle:
    """Returned by ``begin_merge``; handed to every merge sink and back to ``finish_merge`` / ``abort_merge``.

    ``table_handle`` is the table handle the target scan must use (it may differ from the one passed to
    ``begin_merge``, for example pinned to a snapshot). Connectors subclass it to add a transaction id,
    a staging location, the columns each UPDATE case sets, and so on.

    Created once per statement on the driver, pickled to every writer task (``create_merge_sink``) and given
    back on the driver to ``finish_merge`` (success) or ``abort_merge`` (failure). It is the place for what
    the sinks and the commit must agree on: keep the statement's identity in it (a staging directory named
    after :attr:`ConnectorSession.query_id`) rather than on the connector object.
    """

    table_handle: ConnectorTableHandle


class RowChangeParadigm(enum.Enum):
    """How a connector represents a row change (Trino's ``RowChangeParadigm``).

    ``CHANGE_ONLY_UPDATED_COLUMNS``: sinks receive UPDATE rows (operation 3) with the full new row and its row id.
    ``DELETE_ROW_AND_INSERT_ROW``: the engine turns every UPDATE into an UPDATE_DELETE (5) of the old row and
    an UPDATE_INSERT (4) of the new one, routed independently, before the sink sees them.

    Returned by ``ConnectorMetadata.get_row_change_paradigm`` once per UPDATE, DELETE and MERGE statement, on
    the driver. A connector whose insert layout's columns may change in an UPDATE needs
    ``DELETE_ROW_AND_INSERT_ROW``: only then can the new row reach another writer than the old one.
    """

    CHANGE_ONLY_UPDATED_COLUMNS = "CHANGE_ONLY_UPDATED_COLUMNS"
    DELETE_ROW_AND_INSERT_ROW = "DELETE_ROW_AND_INSERT_ROW"


def _utcnow() -> datetime:
    # A module-level function rather than a lambda keeps the default factory picklable by reference.
    return datetime.now(UTC)


@attrs.frozen(kw_only=True)
class ConnectorSession:
    """Per-statement context. Picklable; the same session object reaches executors.

    ``query_id`` is unique per statement (use it to name staged files). ``properties`` holds session and
    catalog properties the connector may read. ``start_time`` is the statement's start, in UTC.

    Built by the engine once per statement and catalog and passed to every SPI call of that statement, on the
    driver and (pickled) on executors. ``catalog`` is the name of the catalog the connector was created for;
    ``user`` the engine's user name; ``time_zone`` the session time zone. For INSERT, UPDATE, DELETE and
    MERGE, ``properties["statement"]`` names the statement (``"INSERT"``, ``"UPDATE"``, ``"DELETE"``,
    ``"MERGE"``), e.g. for the operation of a commit in ``DESCRIBE HISTORY``. During a streaming job's
    micro-batch, ``properties[JOB_BATCH_PROPERTY]`` holds its ``JobBatch`` (``mergekit.spi._jobs``: record it
    in the commit). A connector must not rely on any other key being present.
    """

    query_id: str = attrs.field(factory=lambda: uuid.uuid4().hex)
    user: str = "mergekit"
    catalog: str = ""
    start_time: datetime = attrs.field(factory=_utcnow)
    time_zone: str = "UTC"
    properties: Mapping[str, Any] = attrs.field(factory=dict, converter=_freeze_mapping, eq=False, hash=False)
