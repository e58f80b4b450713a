"""The write side of the SPI: merge sinks, the merge page layout and the operation codes.

Lifecycle of one MERGE, UPDATE, DELETE or INSERT (Trino's, seed 002):

1. Driver: ``ConnectorMetadata.begin_merge`` returns a :class:`ConnectorMergeTableHandle`.
2. Executors: for every writer task that receives rows the engine calls
   ``ConnectorPageSinkProvider.create_merge_sink(session=..., merge_handle=..., sink_id=...)`` (lazily, with
   the task's first non-empty page: a task without rows creates no sink), then
   ``store_merged_rows(page)`` once per Arrow record batch, then ``finish()`` once. ``finish()`` returns
   fragments: picklable values (bytes, attrs classes, dicts) describing what the sink wrote.
   If the task fails, the engine calls ``abort()`` on that sink (best effort: a killed process cannot).
3. Driver: ``ConnectorMetadata.finish_merge(session=..., merge_handle=..., fragments=...)`` with the fragments of
   all sinks (one flat list, in no particular order), which makes the change visible atomically. On any
   failure before that, or in it, ``ConnectorMetadata.abort_merge`` runs instead and nothing may become
   visible.

Which operations a sink sees depends on the statement and the connector's :class:`~mergekit.spi.RowChangeParadigm`:
INSERT and ``CREATE TABLE AS`` send only INSERT rows; DELETE only DELETE rows; UPDATE sends UPDATE rows
(``CHANGE_ONLY_UPDATED_COLUMNS``) or UPDATE_DELETE plus UPDATE_INSERT rows (``DELETE_ROW_AND_INSERT_ROW``); MERGE
any mix. Spark may retry a failed task: the retry creates a new sink with the same ``sink_id``, and only the
fragments of the successful attempt reach ``finish_merge``, so give staged files unique names (a uuid) and
let ``finish_merge`` commit exactly the files its fragments name.

Pages are ``pyarrow.RecordBatch`` laid out as :data:`MERGE_PAGE_LAYOUT` says.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError

from ._model import ConnectorMergeTableHandle, ConnectorSession

__all__ = [
    "MergeOperation",
    "INSERT_OPERATION_NUMBER",
    "DELETE_OPERATION_NUMBER",
    "UPDATE_OPERATION_NUMBER",
    "UPDATE_INSERT_OPERATION_NUMBER",
    "UPDATE_DELETE_OPERATION_NUMBER",
    "MergePageLayout",
    "MERGE_PAGE_LAYOUT",
    "MergePage",
    "create_delete_and_insert_pages",
    "ConnectorMergeSink",
    "ConnectorPageSinkProvider",
    "MERGE_NOT_SUPPORTED_MESSAGE",
]

# What ``Connector.get_page_sink_provider`` and ``create_merge_sink`` raise by default (Trino's wording).
MERGE_NOT_SUPPORTED_MESSAGE = "This connector does not support SQL MERGE operations"


class MergeOperation(enum.IntEnum):
    """The operation column of a merge page (Trino's ``ConnectorMergeSink`` constants).

    The numbers are part of the contract (tested): a sink may compare the int8 ``$operation`` channel with
    them directly, e.g. ``pc.equal(page.column("$operation"), MergeOperation.INSERT)``.
    """

    INSERT = 1
    DELETE = 2
    UPDATE = 3  # only with CHANGE_ONLY_UPDATED_COLUMNS
    UPDATE_INSERT = 4  # new version of an updated row, DELETE_ROW_AND_INSERT_ROW
    UPDATE_DELETE = 5  # old version of an updated row, DELETE_ROW_AND_INSERT_ROW


# Trino's constant names, for connectors ported from Java.
INSERT_OPERATION_NUMBER = MergeOperation.INSERT.value
DELETE_OPERATION_NUMBER = MergeOperation.DELETE.value
UPDATE_OPERATION_NUMBER = MergeOperation.UPDATE.value
UPDATE_INSERT_OPERATION_NUMBER = MergeOperation.UPDATE_INSERT.value
UPDATE_DELETE_OPERATION_NUMBER = MergeOperation.UPDATE_DELETE.value


@attrs.frozen(kw_only=True)
class MergePageLayout:
    """The channels of a page given to ``ConnectorMergeSink.store_merged_rows``.

    ``n`` data columns (every non-hidden table column, in table order, named as the table names them), then
    three trailing channels:

    * ``$operation`` (int8): a :class:`MergeOperation` value;
    * ``$case_number`` (int32): the 0-based WHEN clause that produced the row; -1 on UPDATE_DELETE rows and
      0 on UPDATE_INSERT rows (Trino's dummy values);
    * ``$row_id``: the value of the column returned by ``get_merge_row_id_column_handle`` for the target
      row, of that handle's type; null for INSERT and UPDATE_INSERT rows.

    When the connector's insert layout declares computed columns (``ConnectorTableLayout.computed_columns``,
    e.g. a partition expression), the engine appends one channel per computed column after ``$row_id``, in
    declaration order, holding its value over the row's new values; otherwise pages have exactly n + 3.

    Data channels carry the column's Arrow type exactly as the table metadata declares it (the engine casts),
    and a ``NOT NULL`` column never holds a null on INSERT, UPDATE or UPDATE_INSERT rows (the engine checked).

    DELETE and UPDATE_DELETE rows carry nulls in data columns, except the columns of the insert layout,
    which carry the *old* row's values (so a partitioned sink knows where the deleted row lives).
    Rows arrive in no particular order.
    """

    operation: str = "$operation"
    case_number: str = "$case_number"
    row_id: str = "$row_id"
    operation_type: pa.DataType = pa.int8()
    case_number_type: pa.DataType = pa.int32()

    @property
    def trailing_channels(self) -> tuple[str, str, str]:
        """The names of the three channels after the data columns, in order."""
        return (self.operation, self.case_number, self.row_id)

    def schema(self, data_schema: pa.Schema, row_id_type: pa.DataType) -> pa.Schema:
        """The page schema for a table whose visible columns are ``data_schema``.

        ``row_id_type`` is the type of the row id handle (``get_merge_row_id_column_handle``); computed
        columns of the insert layout, if any, follow these channels and are not part of this schema."""
        return pa.schema(
            [*data_schema]
            + [
                pa.field(self.operation, self.operation_type, nullable=False),
                pa.field(self.case_number, self.case_number_type, nullable=False),
                pa.field(self.row_id, row_id_type),
            ]
        )


# The one layout the engine produces; a test checks the engine's pages against it.
MERGE_PAGE_LAYOUT = MergePageLayout()


@attrs.frozen(kw_only=True)
class MergePage:
    """A merge page split in two (Trino's ``MergePage``).

    ``deletions``: rows with operation DELETE or UPDATE_DELETE, as the data columns plus ``$row_id``.
    ``insertions``: rows with operation INSERT or UPDATE_INSERT, as the data columns only.
    Either is None when the page has no such rows.
    """

    deletions: pa.RecordBatch | None
    insertions: pa.RecordBatch | None


def create_delete_and_insert_pages(page: pa.RecordBatch, data_column_count: int) -> MergePage:
    """Split a merge page of a DELETE_ROW_AND_INSERT_ROW sink into deletions and insertions.

    ``page`` must have ``data_column_count + 3`` columns laid out as :data:`MERGE_PAGE_LAYOUT`. An operation
    other than 1, 2, 4 or 5 raises ``ValueError("Invalid merge operation: <op>")``.

    Called by a sink (on the executor) in ``store_merged_rows``; pure pyarrow, no copy of unchanged buffers
    beyond the filter. An empty page raises ``ValueError`` too (the engine never sends one). With computed
    columns in the layout, select the first ``data_column_count + 3`` channels first.
    """
    if page.num_columns != data_column_count + 3:
        raise ValueError(
            f"Merge page has {page.num_columns} channels, expected {data_column_count + 3} "
            f"({data_column_count} data columns + operation, case number, row id)"
        )
    if page.num_rows == 0:
        raise ValueError("Merge page has no rows")
    # UPDATE (3) rows belong to CHANGE_ONLY_UPDATED_COLUMNS sinks, which must not split pages this way
    ops = page.column(data_column_count)
    valid = pc.is_in(
        ops,
        value_set=pa.array(
            [MergeOperation.INSERT, MergeOperation.DELETE, MergeOperation.UPDATE_INSERT, MergeOperation.UPDATE_DELETE],
            pa.int8(),
        ),
    )
    if not pc.all(valid).as_py():
        bad = pc.filter(ops, pc.invert(valid))[0].as_py()
        raise ValueError(f"Invalid merge operation: {bad}")
    is_delete = pc.or_(pc.equal(ops, MergeOperation.DELETE), pc.equal(ops, MergeOperation.UPDATE_DELETE))
    is_insert = pc.invert(is_delete)
    data_idx = list(range(data_column_count))
    deletions = page.filter(is_delete).select([*data_idx, data_column_count + 2])
    insertions = page.filter(is_insert).select(data_idx)
    return MergePage(
        deletions=deletions if deletions.num_rows else None,
        insertions=insertions if insertions.num_rows else None,
    )


class ConnectorMergeSink(abc.ABC):
    """Writes the merged rows of one writer task. Lives on a Spark executor, in a Python worker.

    Created by ``ConnectorPageSinkProvider.create_merge_sink``; never pickled itself (it may hold open files).

    One sink per writer task, used by one thread: the engine calls :meth:`store_merged_rows` for each page,
    then exactly one of :meth:`finish` (success) or :meth:`abort` (failure, best effort). Between the last
    page and :meth:`finish` the engine runs the duplicate-match check of the task's rows, so a sink may have
    stored every page and still be aborted (``MERGE_TARGET_ROW_MULTIPLE_MATCHES``).
    """

    @abc.abstractmethod
    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        """Called once per Arrow batch, on the executor. ``page`` follows :data:`MERGE_PAGE_LAYOUT`.

        Must not make anything visible to readers: that is ``finish_merge``'s job on the driver.
        Raising fails the statement; the engine then calls :meth:`abort` and ``abort_merge``.

        Pages are never empty. A sink may write each page at once (a staged file per page) or buffer and
        write in :meth:`finish`; a large statement sends many pages to one sink, so buffering everything in
        memory does not scale. Raise ``MergekitError`` (e.g. ``CONSTRAINT_VIOLATION``) to fail with a code.
        """

    @abc.abstractmethod
    def finish(self) -> Sequence[Any]:
        """Called once after the last page, on the executor. Returns picklable fragments for ``finish_merge``.

        The engine creates a sink only when its task has a first non-empty page, so a sink always received at
        least one page; it may still return no fragment. Fragments are pickled with the standard ``pickle``:
        use values of module-level classes. Raising fails the statement as :meth:`store_merged_rows` does.
        """

    def abort(self) -> None:
        """Called on the executor when the task fails after the sink was created. Best effort: remove what
        was staged. A crashed process never gets here, so ``abort_merge`` and ``vacuum`` must cope anyway."""


class ConnectorPageSinkProvider:
    """Creates merge sinks on executors. Must be picklable: the engine ships it to every writer task.

    Returned by ``Connector.get_page_sink_provider`` on the driver, once per statement. The default
    :meth:`create_merge_sink` raises NOT_SUPPORTED, so a read-only connector need not subclass it.
    """

    def create_merge_sink(
        self,
        *,
        session: ConnectorSession,
        merge_handle: ConnectorMergeTableHandle,
        sink_id: int,
    ) -> ConnectorMergeSink:
        """Called on an executor, once per writer task. ``sink_id`` is unique within the statement.

        Called with the task's first non-empty page (a task without rows creates no sink). ``merge_handle`` is
        the one ``begin_merge`` returned, unpickled; ``session`` the statement's. ``sink_id`` differs between
        the tasks of a statement but not between attempts of a retried task: name staged files with a uuid
        too, so a failed attempt's leftovers never collide with the retry's files. Default: NOT_SUPPORTED (``MERGE_NOT_SUPPORTED_MESSAGE``)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, MERGE_NOT_SUPPORTED_MESSAGE)
