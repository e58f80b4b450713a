"""Schema evolution of the partitioned connector: ``RENAME COLUMN``, ``DROP COLUMN`` and ``SET DATA TYPE`` on merge
tables (every child, at every depth, and the registry) and on plain tables (the base connector's).

A merge table and its children must keep one definition (``ALTER TABLE ... ADD TABLE`` checks it), so a column
change of a merge table is made in every physical child through the base connector, in every nested merge table
and in the merge table itself (one registry transaction). A child of a merge table cannot be changed on its own
(MonetDB's rule for every ALTER of a partition). A column the partition key depends on cannot be dropped; it can be
renamed when the key is the column itself (``PARTITION BY ... ON (column)`` follows the new name) but not when an
expression (``USING (...)``) reads it, and widening it widens the key's type.

Everything that can fail is checked before anything changes. The children are then changed one by one, each in
its own commit of the base connector: if one of them fails (a storage or catalog error), the renames already made
are undone; a widening or a drop cannot be undone through the SPI, so such a failure leaves the children that were
changed changed and names them in the error.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnMetadata,
    ConnectorSession,
    ConnectorTableHandle,
    PartitionScheme,
    SchemaTableName,
)

from ._handles import MemberTableHandle, MergeTableHandle, SystemTableHandle
from ._registry import MergeTableRow, dumps
from ._tables import TablesMetadata, _err

__all__ = ["EvolutionMetadata"]

# What a merge table's registry row becomes: its columns, key and scheme after the change.
_RowChange = Callable[[MergeTableRow], tuple[tuple[ColumnMetadata, ...], tuple[str, ...], PartitionScheme | None]]


class EvolutionMetadata(TablesMetadata):
    """Column renames, drops and widenings (part of ``PartitionedMetadata``)."""

    def rename_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, source: str, target: str
    ) -> None:
        """A merge table: renamed in every child and in the registry (its ``ON (column)`` too); a member or a
        system table: ``NOT_SUPPORTED``; any other table: the base's."""
        if not isinstance(table_handle, MergeTableHandle):
            self._plain(table_handle, "rename column of")
            self.bm.rename_column(session=session, table_handle=table_handle, source=source, target=target)
            return

        def change(m: MergeTableRow) -> tuple[tuple[ColumnMetadata, ...], tuple[str, ...], PartitionScheme | None]:
            scheme = m.scheme
            if scheme is not None and source in scheme.expression_columns:
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"ALTER TABLE: cannot rename column '{source}': the expression used in '{m.name.table}' "
                    "depends on it",
                )
            if scheme is not None and scheme.column == source:
                scheme = attrs.evolve(scheme, column=target)
            columns = tuple(attrs.evolve(c, name=target) if c.name == source else c for c in m.columns)
            return columns, tuple(target if k == source else k for k in m.primary_key), scheme

        def undo(child: ConnectorTableHandle) -> None:
            self.bm.rename_column(session=session, table_handle=child, source=target, target=source)

        self._alter_merge_table(
            session,
            table_handle,
            change,
            lambda child: self.bm.rename_column(session=session, table_handle=child, source=source, target=target),
            undo,
        )

    def set_column_type(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        column: str,
        type: pa.DataType,
        type_name: str,
    ) -> None:
        """A merge table: widened in every child and in the registry (an ``ON (column)`` key's type too; a column a
        ``USING`` expression reads: ``INVALID_PARTITION``); a member or a system table: ``NOT_SUPPORTED``; any other
        table: the base's."""
        if not isinstance(table_handle, MergeTableHandle):
            self._plain(table_handle, "alter column of")
            self.bm.set_column_type(
                session=session, table_handle=table_handle, column=column, type=type, type_name=type_name
            )
            return

        def change(m: MergeTableRow) -> tuple[tuple[ColumnMetadata, ...], tuple[str, ...], PartitionScheme | None]:
            scheme = m.scheme
            if scheme is not None and column in scheme.expression_columns:
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"ALTER TABLE: cannot change the type of column '{column}': the expression used in "
                    f"'{m.name.table}' depends on it",
                )
            if scheme is not None and scheme.column == column:
                scheme = attrs.evolve(scheme, key_type=type, key_type_name=type_name)
            columns = tuple(
                attrs.evolve(c, type=type, type_name=type_name) if c.name == column else c for c in m.columns
            )
            return columns, m.primary_key, scheme

        self._alter_merge_table(
            session,
            table_handle,
            change,
            lambda child: self.bm.set_column_type(
                session=session, table_handle=child, column=column, type=type, type_name=type_name
            ),
        )

    def drop_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str) -> None:
        """A merge table: dropped from every child and from the registry, unless the partition key depends on it
        (MonetDB's errors name the partition column or the expression); a member or a system table:
        ``NOT_SUPPORTED``; any other table: the base's."""
        if not isinstance(table_handle, MergeTableHandle):
            self._plain(table_handle, "drop column of")
            self.bm.drop_column(session=session, table_handle=table_handle, column=column)
            return

        def change(m: MergeTableRow) -> tuple[tuple[ColumnMetadata, ...], tuple[str, ...], PartitionScheme | None]:
            scheme, name = m.scheme, m.name.table
            if scheme is not None and scheme.column == column:
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"ALTER TABLE: cannot drop column '{column}': is the partitioned column on the table '{name}'",
                )
            if scheme is not None and column in scheme.expression_columns:
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"ALTER TABLE: cannot drop column '{column}': the expression used in '{name}' depends on it",
                )
            if column in m.primary_key:
                raise _err(
                    ErrorCode.NOT_SUPPORTED,
                    f"ALTER TABLE: cannot drop column '{column}': it is part of the primary key of '{name}'",
                )
            return tuple(c for c in m.columns if c.name != column), m.primary_key, scheme

        self._alter_merge_table(
            session,
            table_handle,
            change,
            lambda child: self.bm.drop_column(session=session, table_handle=child, column=column),
        )

    # ---- helpers ----------------------------------------------------------------------------------------------

    def _plain(self, handle: ConnectorTableHandle, what: str) -> None:
        """A member of a merge table or a system table cannot have its columns changed on their own."""
        if isinstance(handle, MemberTableHandle):
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"ALTER TABLE: cannot {what} a PARTITION of a MERGE or REPLICA TABLE '{handle.table.table}'",
            )
        if isinstance(handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"ALTER TABLE: cannot change system table '{handle.table}'")

    def _alter_merge_table(
        self,
        session: ConnectorSession,
        handle: MergeTableHandle,
        change: _RowChange,
        apply: Callable[[ConnectorTableHandle], None],
        undo: Callable[[ConnectorTableHandle], None] | None = None,
    ) -> None:
        """Change merge table ``handle``, every merge table nested in it and every physical child: the registry
        rows' new definitions are computed first (``change`` raises for what cannot change), then each child is
        changed through the base connector (``apply``; ``undo`` reverts one when a later child fails), then the
        registry in one transaction."""
        by_id, by_name, children = state = self._state()
        row = by_id.get(handle.table_id)
        if row is None:
            raise _err(ErrorCode.TABLE_NOT_FOUND, f"Table '{handle.table}' does not exist")
        if any(c.name == row.name for c in children):
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"ALTER TABLE: cannot change a column of '{row.name.table}': it is a PARTITION of a MERGE TABLE "
                "(change the merge table it belongs to)",
            )
        merges: list[MergeTableRow] = []
        tables: list[tuple[SchemaTableName, ConnectorTableHandle]] = []

        def walk(m: MergeTableRow, seen: frozenset[int]) -> None:
            merges.append(m)
            for c in children:
                if c.parent_id != m.table_id:
                    continue
                nested = by_name.get(c.name)
                if nested is not None:
                    if nested.table_id not in seen:
                        walk(nested, seen | {nested.table_id})
                    continue
                child = self.bm.get_table_handle(session=session, table=c.name)
                if child is not None:
                    tables.append((c.name, child))

        walk(row, frozenset({row.table_id}))
        del state
        updates = [(m.table_id, change(m)) for m in merges]
        done: list[tuple[SchemaTableName, ConnectorTableHandle]] = []
        try:
            for name, child in tables:
                apply(child)
                done.append((name, child))
        except MergekitError as exc:
            if done and undo is not None:
                for _, child in reversed(done):
                    undo(child)
                raise
            if done:
                names = ", ".join(str(n) for n, _ in done)
                raise MergekitError(
                    exc.code, f"{exc.message} (the change was already made in {names}, the merge table is unchanged)"
                ) from exc
            raise
        with self.registry.write() as cur:
            for table_id, (columns, key, scheme) in updates:
                cur.execute(
                    "UPDATE pt_merge_tables SET columns = ?, primary_key = ?, scheme = ? WHERE table_id = ?",
                    (dumps(tuple(columns)), dumps(tuple(key)), dumps(scheme) if scheme is not None else None, table_id),
                )
