"""The write side of the SPI: merge sinks, the merge page layout and the operation codes.

Lifecycle of one MERGE, UPDATE, DELETE or INSERT (Trino's, seed 002):

1. Driver: ``ConnectorMetadata.begin_merge`` returns a :class:`ConnectorMergeTableHandle`.
2. Executors: for every writer task the engine calls
   ``ConnectorPageSinkProvider.create_merge_sink(session=..., merge_handle=..., sink_id=...)``, then
   ``store_merged_rows(page)`` once per Arrow record batch, then ``finish()`` once. ``finish()`` returns
   fragments: picklable values (bytes, attrs classes, dicts) describing what the sink wrote.
   If the task fails, the engine calls ``abort()`` on that sink (best effort: a killed process cannot).
3. Driver: ``ConnectorMetadata.finish_merge(session=..., merge_handle=..., fragments=...)`` with the fragments of
   all sinks, which makes the change visible atomically. On any failure before that,
   ``ConnectorMetadata.abort_merge`` runs instead and nothing may become visible.

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

MERGE_NOT_SUPPORTED_MESSAGE = "This connector does not support SQL MERGE operations"


class MergeOperation(enum.IntEnum):
    """The operation column of a merge page (Trino's ``ConnectorMergeSink`` constants)."""

    INSERT = 1
    DELETE = 2
    UPDATE = 3  # only with CHANGE_ONLY_UPDATED_COLUMNS
    UPDATE_INSERT = 4  # new version of an updated row, DELETE_ROW_AND_INSERT_ROW
    UPDATE_DELETE = 5  # old version of an updated row, DELETE_ROW_AND_INSERT_ROW


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
        return (self.operation, self.case_number, self.row_id)

    def schema(self, data_schema: pa.Schema, row_id_type: pa.DataType) -> pa.Schema:
        """The page schema for a table whose visible columns are ``data_schema``."""
        return pa.schema(
            [*data_schema]
            + [
                pa.field(self.operation, self.operation_type, nullable=False),
                pa.field(self.case_number, self.case_number_type, nullable=False),
                pa.field(self.row_id, row_id_type),
            ]
        )


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
    """
    if page.num_columns != data_column_count + 3:
        raise ValueError(
            f"Merge page has {page.num_columns} channels, expected {data_column_count + 3} "
            f"({data_column_count} data columns + operation, case number, row id)"
        )
    if page.num_rows == 0:
        raise ValueError("Merge page has no rows")
    ops = page.column(data_column_count)
    valid = pc.is_in(ops, value_set=pa.array([1, 2, 4, 5], pa.int8()))
    if not pc.all(valid).as_py():
        bad = pc.filter(ops, pc.invert(valid))[0].as_py()
        raise ValueError(f"Invalid merge operation: {bad}")
    is_delete = pc.or_(pc.equal(ops, 2), pc.equal(ops, 5))
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
    """

    @abc.abstractmethod
    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        """Called once per Arrow batch, on the executor. ``page`` follows :data:`MERGE_PAGE_LAYOUT`.

        Must not make anything visible to readers: that is ``finish_merge``'s job on the driver.
        Raising fails the statement; the engine then calls :meth:`abort` and ``abort_merge``.
        """

    @abc.abstractmethod
    def finish(self) -> Sequence[Any]:
        """Called once after the last page, on the executor. Returns picklable fragments for ``finish_merge``.

        A sink that received no page is still finished (it may return no fragment).
        """

    def abort(self) -> None:
        """Called on the executor when the task fails after the sink was created. Best effort: remove what
        was staged. A crashed process never gets here, so ``abort_merge`` and ``vacuum`` must cope anyway."""


class ConnectorPageSinkProvider:
    """Creates merge sinks on executors. Must be picklable: the engine ships it to every writer task."""

    def create_merge_sink(
        self,
        *,
        session: ConnectorSession,
        merge_handle: ConnectorMergeTableHandle,
        sink_id: int,
    ) -> ConnectorMergeSink:
        """Called on an executor, once per writer task. ``sink_id`` is unique within the statement."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, MERGE_NOT_SUPPORTED_MESSAGE)
