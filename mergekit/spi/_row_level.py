"""The row-level DELETE/UPDATE SPI (seed 003, Trino's older ``UpdatablePageSource`` SPI), in snake_case.

A connector that can change single rows of its storage by an identifier (a SQL database and its primary key; the
seed: "For a JDBC connector, that rowId is usually the primary key for the table") implements ``DELETE`` and
``UPDATE`` with this SPI instead of, or beside, the merge SPI (``begin_merge`` and merge sinks). When a connector
implements both, the engine uses the merge SPI for every statement (Trino's rule: MERGE wins); ``MERGE`` itself
needs the merge SPI. ``EXPLAIN`` names the SPI a statement uses.

The data flow of a ``DELETE`` or ``UPDATE`` (the seed's, with mergekit's places):

1. Driver: :meth:`RowLevelMetadata.get_delete_row_id_column_handle` (or
   :meth:`~RowLevelMetadata.get_update_row_id_column_handle` with the updated columns), then
   :meth:`~RowLevelMetadata.begin_delete` (:meth:`~RowLevelMetadata.begin_update`): the last planning step. It
   returns the table handle the rest of the statement uses, splits included.
2. Driver: ``ConnectorSplitManager.get_splits`` with that handle and the columns the engine reads (the row id
   column among them).
3. Executors, one Spark task per split: ``ConnectorPageSourceProvider.create_page_source`` with that handle
   returns an :class:`UpdatablePageSource`. The engine calls :meth:`~UpdatablePageSource.get_next_page` until it
   returns None; for each page it evaluates the ``WHERE`` clause (and, for ``UPDATE``, the ``SET`` expressions)
   in the same task, with Trino's semantics, and hands the rows it selected back to **the same instance** that
   produced the page: :meth:`~UpdatablePageSource.delete_rows` with their row ids, or
   :meth:`~UpdatablePageSource.update_rows` with a page of the new values and the row ids. After the last page,
   :meth:`~UpdatablePageSource.finish` returns the split's fragments; then the page source is closed.
4. Driver: :meth:`~RowLevelMetadata.finish_delete` (:meth:`~RowLevelMetadata.finish_update`) with the fragments
   of every split: the connector makes the statement's changes visible atomically (commits its transaction).

On any failure (a task, an expression, ``finish_delete`` itself) the engine calls
:meth:`UpdatablePageSource.abort` in the task that failed (when it still can) and
:meth:`~RowLevelMetadata.abort_delete` (:meth:`~RowLevelMetadata.abort_update`) once on the driver. Those two
abort methods are mergekit's addition to the seed: on Spark a task may be killed without running any code,
so what it staged can only be removed from the driver.

**Retries.** Spark may run a task more than once (a retry after a failure, a speculative copy). Each attempt
gets a fresh :class:`UpdatablePageSource`; only the fragments of attempts that succeeded and whose results Spark
kept reach ``finish_*``. A connector that stages rows outside the task (a staging table, files) must tag them
with what the fragments name (the attempt) and apply only those, so a retried task never applies twice.

**Delete pushdown** (Trino's ``applyDelete`` / ``executeDelete``): before planning a row-by-row ``DELETE``, the
engine offers the connector the whole statement when its ``WHERE`` clause is a conjunction of simple
comparisons of a column with a constant (:class:`DeletePredicate`). If
:meth:`~RowLevelMetadata.apply_delete` accepts, :meth:`~RowLevelMetadata.execute_delete` deletes the rows in the
storage itself, atomically, and returns their count: no row flows through Spark and no Spark job runs.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError

from ._read import ConnectorPageSource

if TYPE_CHECKING:
    from ._model import ColumnHandle, ConnectorSession, ConnectorTableHandle

__all__ = [
    "PREDICATE_OPERATORS",
    "INSERT_NEEDS_MERGE_SINK",
    "MERGE_NEEDS_MERGE_SPI",
    "ROW_LEVEL_DELETE_MESSAGE",
    "ROW_LEVEL_UPDATE_MESSAGE",
    "UPDATE_NEEDS_ROW_LEVEL_UPDATE",
    "DeletePredicate",
    "RowLevelMetadata",
    "UpdatablePageSource",
]

#: The ``NOT_SUPPORTED`` messages of the defaults (a connector without row-level ``DELETE`` / ``UPDATE``).
ROW_LEVEL_DELETE_MESSAGE = "This connector does not support deleting rows through the row-level SPI"
ROW_LEVEL_UPDATE_MESSAGE = "This connector does not support updating rows through the row-level SPI"

#: The engine's ``NOT_SUPPORTED`` messages for a statement a connector with only the row-level SPI cannot run (what
#: the conformance kit's ``not_supported_messages`` name for it): a MERGE (and INSERT OVERWRITE, INSERT ... ON
#: CONFLICT, which are planned as MERGEs), an UPDATE on a connector with only the row-level DELETE,
#: an INSERT on one without ``begin_merge``.
MERGE_NEEDS_MERGE_SPI = (
    "This connector does not support MERGE: it implements only row-level DELETE and UPDATE, not the merge SPI "
    "(get_merge_row_id_column_handle, get_row_change_paradigm)"
)
UPDATE_NEEDS_ROW_LEVEL_UPDATE = (
    "This connector does not support UPDATE: it implements the row-level DELETE only; implement "
    "get_update_row_id_column_handle, begin_update and finish_update (the row-level UPDATE), or the merge SPI"
)
INSERT_NEEDS_MERGE_SINK = (
    "This connector does not support INSERT: it implements only row-level DELETE and UPDATE; INSERT needs "
    "begin_merge, finish_merge and a merge sink (the append-only recipe, docs/develop/supporting-merge.md)"
)

#: Operators of a :class:`DeletePredicate` term.
PREDICATE_OPERATORS = ("=", "<>", "<", "<=", ">", ">=", "IN", "IS NULL", "IS NOT NULL")


@attrs.frozen(kw_only=True)
class DeletePredicate:
    """A ``DELETE``'s whole ``WHERE`` clause, when it is a conjunction of ``column op constant`` terms (for delete
    pushdown). An empty ``terms`` is a ``DELETE`` without ``WHERE``: every row.

    Each term is ``(column, operator, value)``: ``column`` a visible column's name, ``operator`` one of
    ``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=`` (``value`` a Python scalar of the column's type, never None),
    ``IN`` (``value`` a tuple of such scalars, none of them None), ``IS NULL`` or ``IS NOT NULL`` (``value``
    None). The engine built each value by evaluating the statement's constant and converting it to the column's
    type exactly (a constant that does not convert exactly, such as ``1.5`` against an integer column, is never
    pushed). A row is deleted when every term is TRUE for it, with SQL's three-valued logic: a NULL column
    value satisfies only ``IS NULL``."""

    terms: tuple[tuple[str, str, Any], ...] = ()


class UpdatablePageSource(ConnectorPageSource):
    """Seed 003's ``UpdatablePageSource``: a page source over one split that also deletes or updates the rows it
    produced. Returned by ``ConnectorPageSourceProvider.create_page_source`` (on an executor, once per split and
    task attempt) when its ``table_handle`` is one that :meth:`RowLevelMetadata.begin_delete` or
    :meth:`RowLevelMetadata.begin_update` returned; the engine fails the statement (``CONNECTOR_CONTRACT_ERROR``)
    when such a handle yields any other page source, or a page without a column it was asked for (the row id
    column among them).

    Every method runs in that one task, in this order: :meth:`get_next_page` until it returns None, each page
    followed by at most one :meth:`delete_rows` or :meth:`update_rows` call with rows of that page; then
    :meth:`finish`; then ``close`` (always, also after a failure). On a failure in the task :meth:`abort` runs
    before ``close``: instead of :meth:`finish`, or after it (the task may still fail once :meth:`finish`
    returned), so it must also discard what :meth:`finish` staged. An exception of the connector's own in any of
    them fails the statement with ``CONNECTOR_ERROR`` naming the method."""

    @abc.abstractmethod
    def get_next_page(self) -> pa.RecordBatch | None:
        """The next page of the split, or None at its end. A page has exactly the columns the engine asked
        ``create_page_source`` for, in order (the row id column among them: the handle of
        :meth:`RowLevelMetadata.get_delete_row_id_column_handle` or
        :meth:`RowLevelMetadata.get_update_row_id_column_handle`). Usually the underlying page source's next page,
        perhaps reformatted. An empty page is allowed and skipped."""

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        """The pages of :meth:`get_next_page` (so the instance also reads like any page source)."""
        while True:
            page = self.get_next_page()
            if page is None:
                return
            yield page

    def delete_rows(self, row_ids: pa.Array) -> None:
        """Delete the rows whose ids are ``row_ids`` (values of the row id column, taken from pages this instance
        produced; never empty, no duplicates). Called after a page, with the rows of that page the ``WHERE``
        clause selected. The deletion becomes visible only at ``finish_delete``: stage it, or write it in a
        transaction the driver commits. Default: ``NOT_SUPPORTED`` (:data:`ROW_LEVEL_DELETE_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, ROW_LEVEL_DELETE_MESSAGE)

    def update_rows(self, page: pa.RecordBatch, column_value_and_row_id_channels: Sequence[int]) -> None:
        """Update rows of pages this instance produced. ``page`` holds one column per updated column (the new
        values, of the column's type, in table column order as ``begin_update`` received them) and, last, the
        row id column. ``column_value_and_row_id_channels`` gives, in that same order (updated columns, then the
        row id), the channel of ``page`` holding each, as seed 003's ``updateRows`` does. The new values already
        passed the engine's NOT NULL and CHECK validation. The update becomes visible only at ``finish_update``.
        Default: ``NOT_SUPPORTED`` (:data:`ROW_LEVEL_UPDATE_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, ROW_LEVEL_UPDATE_MESSAGE)

    @abc.abstractmethod
    def finish(self) -> Sequence[Any]:
        """All pages of the split were processed: return the split's fragments (picklable values, opaque to the
        engine; typically the rows staged and the attempt that staged them). They reach ``finish_delete`` /
        ``finish_update`` on the driver only when Spark keeps this task attempt's result."""

    def abort(self) -> None:
        """The statement failed while this task ran: discard what this instance staged, also what :meth:`finish`
        staged if it already ran. Must not raise for an instance that staged nothing. A killed task never gets here; the driver's ``abort_delete`` /
        ``abort_update`` cleans up after it. Default: nothing to discard."""


class RowLevelMetadata:
    """The row-level methods of :class:`~mergekit.spi.ConnectorMetadata` (a base class of it). All run on the
    driver, once per statement, in the order of the module's data flow. Defaults: ``NOT_SUPPORTED``."""

    def get_delete_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        """The row id column of a ``DELETE``: identifies a row to delete, plus anything else the connector needs
        to delete it (seed 003; a JDBC connector: the primary key). The engine reads it from every page and hands
        its values to :meth:`UpdatablePageSource.delete_rows`. It need not be a declared column; the page source
        must produce it when asked. Default: ``NOT_SUPPORTED`` (:data:`ROW_LEVEL_DELETE_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, ROW_LEVEL_DELETE_MESSAGE)

    def get_update_row_id_column_handle(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        updated_columns: Sequence[ColumnHandle],
    ) -> ColumnHandle:
        """The row id column of an ``UPDATE`` whose ``SET`` assigns ``updated_columns`` (in table column order):
        identifies the row, plus any column the connector needs to perform the update (seed 003: Hive ACID adds
        the values of every column not updated). Default: ``NOT_SUPPORTED`` (:data:`ROW_LEVEL_UPDATE_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, ROW_LEVEL_UPDATE_MESSAGE)

    def begin_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> ConnectorTableHandle:
        """The last step of planning a ``DELETE``, after the statement was analysed (a bad statement never
        begins): start whatever the connector needs (a transaction, a staging area) and return the picklable table
        handle that the splits, every page source and :meth:`finish_delete` receive, usually ``table_handle``
        flagged for a delete. Default: ``NOT_SUPPORTED`` (:data:`ROW_LEVEL_DELETE_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, ROW_LEVEL_DELETE_MESSAGE)

    def finish_delete(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, fragments: Sequence[Any]
    ) -> None:
        """Every split was processed: ``fragments`` is the concatenation of what every successful task's
        :meth:`UpdatablePageSource.finish` returned (no particular order; empty when no row was deleted). Make the
        deletions visible atomically, or raise and leave the table as it was (the engine then calls
        :meth:`abort_delete`). A connector with ``begin_delete`` must implement it: the engine refuses one without
        it before anything begins (``CONNECTOR_CONTRACT_ERROR``, naming it)."""
        raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_delete called without begin_delete")

    def abort_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """The ``DELETE`` begun with ``table_handle`` failed (a task, an expression, the duplicate check, or
        :meth:`finish_delete`): discard everything staged for it, by any task attempt. Called at most once, on the
        driver; its own errors are swallowed. Not in seed 003 (see the module). Default: nothing to discard."""

    def begin_update(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        updated_columns: Sequence[ColumnHandle],
    ) -> ConnectorTableHandle:
        """:meth:`begin_delete` for an ``UPDATE`` assigning ``updated_columns`` (in table column order). Check here
        what the connector cannot update (a key it cannot change) and raise ``NOT_SUPPORTED`` naming it.
        Default: ``NOT_SUPPORTED`` (:data:`ROW_LEVEL_UPDATE_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, ROW_LEVEL_UPDATE_MESSAGE)

    def finish_update(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, fragments: Sequence[Any]
    ) -> None:
        """:meth:`finish_delete` for an ``UPDATE`` (the engine refuses a ``begin_update`` without it)."""
        raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_update called without begin_update")

    def abort_update(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """:meth:`abort_delete` for an ``UPDATE``. Default: nothing to discard."""

    # ---- delete pushdown (Trino's applyDelete / executeDelete) ------------------------------------------------

    def apply_delete(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, predicate: DeletePredicate
    ) -> ConnectorTableHandle | None:
        """Can the storage delete exactly the rows ``predicate`` selects by itself? Return a handle for
        :meth:`execute_delete`, or None (the default) and the engine runs the row-by-row ``DELETE``. Called on the
        driver, before anything begins, only for a ``DELETE`` on this table whose ``WHERE`` clause is entirely a
        :class:`DeletePredicate`. Accept only when every term is enforced exactly as SQL defines it: the engine
        does not filter again."""
        return None

    def execute_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> int:
        """Delete the rows of a handle :meth:`apply_delete` returned, atomically, in the storage; return how many
        were deleted (the statement's row count). Raise to fail the statement with nothing deleted.
        Default: ``NOT_SUPPORTED`` (:data:`ROW_LEVEL_DELETE_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, ROW_LEVEL_DELETE_MESSAGE)
