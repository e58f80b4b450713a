"""Writes of the partitioned connector: MERGE, UPDATE, DELETE and INSERT into merge tables and their children.

A merge table is written with ``DELETE_ROW_AND_INSERT_ROW``: its row id is ``{leaf, row}`` (the child and the
child's own row id), and its sinks route each inserted row to the child whose bounds hold its partition keys (so
an UPDATE of the key moves the row): the ``ON`` columns' values, or, for a ``USING`` expression, the keys the
insert layout asks the engine to compute. A merge table partitioned ``ON`` columns only has no layout: any
sink takes any row, so a MERGE into it may run by index lookups (``_index``) and on the driver tier.
``begin_merge`` begins a merge on every child; ``finish_merge`` commits every child the statement changed in
one atomic commit of the base connector (``finish_merges``) and aborts the others. A child written directly
(a ``MemberTableHandle``) is the base's merge plus the checks of its bounds at every enclosing level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    ComputedColumn,
    ConnectorMergeTableHandle,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableLayout,
    PartitionMethod,
    RowChangeParadigm,
)

from ._handles import (
    ROW_ID,
    Level,
    MemberTableHandle,
    MergeTableHandle,
    PartitionedFragment,
    PartitionedMergeHandle,
    SystemTableHandle,
    key_column,
)
from ._registry import dumps
from ._tables import TablesMetadata, _err

__all__ = ["WriteMetadata"]


class WriteMetadata(TablesMetadata):
    """Row change paradigm, row ids, layouts and the merge protocol (part of ``PartitionedMetadata``)."""

    def _writable(self, handle: MergeTableHandle, statement: str = "") -> None:
        """A merge table is writable with a PARTITION BY and at least one leaf (MonetDB's errors otherwise)."""
        if handle.scheme is None:
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"MERGE TABLE '{handle.table.table}' has no PARTITION BY clause and is not updatable",
            )
        if not handle.leaves:
            word = "range" if handle.scheme.method is PartitionMethod.RANGE else "list"
            raise _err(
                ErrorCode.PARTITION_NOT_FOUND,
                f"{statement}{word} partitioned table '{handle.table.table}' has no partitions set",
            )

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
        """A merge table: ``DELETE_ROW_AND_INSERT_ROW`` (an update may move a row to another child); a system
        table: ``NOT_SUPPORTED``; any other table: the base's."""
        if isinstance(table_handle, MergeTableHandle):
            self._writable(table_handle, _statement_prefix(session))
            return RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW
        if isinstance(table_handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"Cannot modify system table {table_handle.table}")
        return self.bm.get_row_change_paradigm(session=session, table_handle=self._unwrap(table_handle))

    def _row_id_type(self, session: ConnectorSession, handle: MergeTableHandle) -> pa.DataType:
        """``struct<leaf: int64, row: the children's row id type>``; the children must share that type."""
        types = {
            str(self.bm.get_merge_row_id_column_handle(session=session, table_handle=leaf.handle).type): leaf
            for leaf in handle.leaves
        }
        first = handle.leaves[0]
        base_type = self.bm.get_merge_row_id_column_handle(session=session, table_handle=first.handle).type
        if len(types) > 1:
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"The children of {handle.table} identify rows differently (declare the same key on all of them)",
            )
        return pa.struct([pa.field("leaf", pa.int64()), pa.field("row", base_type)])

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        """A merge table: ``$partition_row_id`` (``{leaf, row}``); any other table: the base's."""
        if isinstance(table_handle, MergeTableHandle):
            self._writable(table_handle, _statement_prefix(session))
            return ColumnHandle(name=ROW_ID, type=self._row_id_type(session, table_handle))
        return self.bm.get_merge_row_id_column_handle(session=session, table_handle=self._unwrap(table_handle))

    def _computed(self, levels: Sequence[Level]) -> list[ComputedColumn]:
        """A computed column per level: its partition key (``key_column(table_id)``), by its key expression."""
        return [
            ComputedColumn(
                name=key_column(lvl.table_id), expression=lvl.scheme.key_expression, type=lvl.scheme.key_type
            )
            for lvl in levels
        ]

    def get_insert_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        """A merge table whose every level (and every merge table enclosing it) is partitioned ``ON`` a column, over
        children whose base takes any row: none, its sinks take any row too (each routes an inserted row to its
        child by the column's value, a deleted one by its row id). Otherwise (a ``USING`` expression, a ``CHAR(n)``
        key whose padding the engine's evaluation decides, a child with a layout of its own): distributed by its top
        level's key, with the keys of its levels and of the merge tables enclosing it computed for routing. A
        member: the base's layout plus the keys of its bounds' checks; any other table: the base's."""
        if isinstance(table_handle, MergeTableHandle):
            levels = [*table_handle.levels, *(lvl for lvl, _ in table_handle.checks)]
            if not any(_computed_key(lvl) for lvl in levels) and not any(
                self.bm.get_insert_layout(session=session, table_handle=leaf.handle) is not None
                or self.bm.get_update_layout(session=session, table_handle=leaf.handle) is not None
                for leaf in table_handle.leaves
            ):
                return None
            computed = self._computed(levels)
            top = key_column(table_handle.table_id)
            return ConnectorTableLayout(partition_columns=(top,), computed_columns=computed)
        if isinstance(table_handle, MemberTableHandle):
            base = self.bm.get_insert_layout(session=session, table_handle=table_handle.base)
            computed = self._computed([lvl for lvl, _ in table_handle.checks])
            names = tuple(c.name for c in computed)
            if base is not None:
                return attrs.evolve(base, computed_columns=(*base.computed_columns, *computed))
            return ConnectorTableLayout(partition_columns=names[:1], computed_columns=computed)
        return self.bm.get_insert_layout(session=session, table_handle=table_handle)

    def get_update_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        """None for merge and system tables; the base's for any other table."""
        if isinstance(table_handle, MergeTableHandle | SystemTableHandle):
            return None
        return self.bm.get_update_layout(session=session, table_handle=self._unwrap(table_handle))

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
    ) -> ConnectorMergeTableHandle:
        """A merge table: a base merge on every leaf (all aborted if one fails), the leaves pinned to those
        merges' handles; a member: the base's merge wrapped with the checks of its bounds; any other table: the base's
        merge handle."""
        return self._begin(session, table_handle, update_case_columns, ())

    def begin_merge_adding_columns(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
        added_columns: Sequence[ColumnMetadata],
    ) -> ConnectorMergeTableHandle:
        """MERGE WITH SCHEMA EVOLUTION. A merge table: every leaf begins a base merge that adds the columns, and
        ``finish_merge`` commits every leaf (the ones without rows too: all children keep one definition) in one
        atomic commit of the base, then records the columns in the registry for the merge table and the merge
        tables nested in it. A member (or a merge table that is itself a child): ``NOT_SUPPORTED``, as for ``ADD
        COLUMN``. Any other table: the base's."""
        if isinstance(table_handle, MemberTableHandle) or (
            isinstance(table_handle, MergeTableHandle)
            and any(c.name == table_handle.table for c in self.registry.children())
        ):
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"MERGE: cannot add column to a PARTITION of a MERGE or REPLICA TABLE '{table_handle.table.table}'",
            )
        if not isinstance(table_handle, MergeTableHandle):
            return self.bm.begin_merge_adding_columns(
                session=session,
                table_handle=table_handle,
                update_case_columns=update_case_columns,
                added_columns=added_columns,
            )
        return self._begin(session, table_handle, update_case_columns, tuple(added_columns))

    def _begin(
        self,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
        added: tuple[ColumnMetadata, ...],
    ) -> ConnectorMergeTableHandle:
        """``begin_merge``; with ``added`` (a merge table only), every leaf's base merge adds those columns."""
        layout = self.get_insert_layout(session=session, table_handle=table_handle)
        computed = tuple(c.name for c in layout.computed_columns) if layout is not None else ()
        meta = self.get_table_metadata(session=session, table_handle=table_handle)
        visible = (*meta.visible_columns, *added)
        if isinstance(table_handle, MemberTableHandle):
            child = self.bm.begin_merge(
                session=session, table_handle=table_handle.base, update_case_columns=update_case_columns
            )
            return PartitionedMergeHandle(
                table_handle=MemberTableHandle(
                    table=table_handle.table, base=child.table_handle, checks=table_handle.checks
                ),
                children=((0, child),),
                computed=computed,
                data_columns=tuple(c.name for c in visible),
                data_types=tuple(c.type for c in visible),
                statement=_statement_prefix(session).rstrip(": ") or "INSERT",
            )
        if not isinstance(table_handle, MergeTableHandle):
            return self.bm.begin_merge(
                session=session, table_handle=table_handle, update_case_columns=update_case_columns
            )
        self._writable(table_handle, _statement_prefix(session))
        row_id_type = self._row_id_type(session, table_handle)
        begun: list[tuple[int, ConnectorMergeTableHandle]] = []
        try:
            for leaf in table_handle.leaves:
                if added:
                    child = self.bm.begin_merge_adding_columns(
                        session=session,
                        table_handle=leaf.handle,
                        update_case_columns=update_case_columns,
                        added_columns=added,
                    )
                else:
                    child = self.bm.begin_merge(
                        session=session, table_handle=leaf.handle, update_case_columns=update_case_columns
                    )
                begun.append((leaf.leaf_id, child))
        except BaseException:
            for _, mh in begun:
                self.bm.abort_merge(session=session, merge_handle=mh)
            raise
        pinned = {leaf_id: mh.table_handle for leaf_id, mh in begun}
        leaves = [attrs.evolve(leaf, handle=pinned[leaf.leaf_id]) for leaf in table_handle.leaves]
        return PartitionedMergeHandle(
            table_handle=attrs.evolve(table_handle, leaves=leaves),
            children=begun,
            computed=computed,
            data_columns=tuple(c.name for c in visible),
            data_types=tuple(c.type for c in visible),
            base_row_id_type=row_id_type.field("row").type,
            statement=_statement_prefix(session).rstrip(": ") or "INSERT",
            added_columns=added,
        )

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        """Commit every child the statement wrote to in one atomic commit (the base's ``finish_merges``, or
        ``finish_merge`` for a single child) and abort the other children's merges; on failure abort them all."""
        if not isinstance(merge_handle, PartitionedMergeHandle):
            self.bm.finish_merge(session=session, merge_handle=merge_handle, fragments=fragments)
            return
        per_leaf: dict[int, list[Any]] = {}
        for f in fragments:
            if not isinstance(f, PartitionedFragment):
                raise _err(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a partitioned fragment: {f!r}")
            per_leaf.setdefault(f.leaf_id, []).extend(f.fragments)
        touched = [(mh, per_leaf[leaf_id]) for leaf_id, mh in merge_handle.children if per_leaf.get(leaf_id)]
        untouched = [mh for leaf_id, mh in merge_handle.children if not per_leaf.get(leaf_id)]
        if merge_handle.added_columns:
            # every child takes the new columns, rows or not, in one commit; then the registry
            touched, untouched = [(mh, per_leaf.get(leaf_id, [])) for leaf_id, mh in merge_handle.children], []
        try:
            if len(touched) > 1:
                # One atomic commit across every child the statement changed.
                self.bm.finish_merges(session=session, merges=touched)
            elif touched:
                self.bm.finish_merge(session=session, merge_handle=touched[0][0], fragments=touched[0][1])
        except BaseException:
            for mh, _ in touched:
                self._abort_quietly(session, mh)
            raise
        finally:
            for mh in untouched:
                self._abort_quietly(session, mh)
        if merge_handle.added_columns:
            self._record_added_columns(merge_handle)

    def _record_added_columns(self, merge_handle: PartitionedMergeHandle) -> None:
        """The merge table and every merge table nested in it take the columns its children took."""
        target = merge_handle.table_handle
        assert isinstance(target, MergeTableHandle)
        merges = {m.table_id: m for m in self.registry.merge_tables()}
        by_name = {m.name: m for m in merges.values()}
        children = self.registry.children()
        pending, seen = [target.table_id], set()
        with self.registry.write() as cur:
            while pending:
                table_id = pending.pop()
                if table_id in seen or table_id not in merges:
                    continue
                seen.add(table_id)
                row = merges[table_id]
                known = {c.name for c in row.columns}
                columns = (*row.columns, *(c for c in merge_handle.added_columns if c.name not in known))
                cur.execute("UPDATE pt_merge_tables SET columns = ? WHERE table_id = ?", (dumps(columns), table_id))
                pending += [by_name[c.name].table_id for c in children if c.parent_id == table_id and c.name in by_name]

    def _abort_quietly(self, session: ConnectorSession, mh: ConnectorMergeTableHandle) -> None:
        """Abort a child's merge, ignoring failures: cleanup only (vacuum removes leftovers)."""
        try:
            self.bm.abort_merge(session=session, merge_handle=mh)
        except Exception:  # cleanup only; vacuum removes leftovers
            pass

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        """Abort every child's merge."""
        if not isinstance(merge_handle, PartitionedMergeHandle):
            self.bm.abort_merge(session=session, merge_handle=merge_handle)
            return
        for _, mh in merge_handle.children:
            self._abort_quietly(session, mh)


def _computed_key(level: Level) -> bool:
    """Whether a level's key is computed by the engine (a ``USING`` expression; a ``CHAR(n)`` column, padded as the
    engine evaluates it) rather than read from its ``ON`` column by the sink."""
    return level.scheme.column is None or level.scheme.key_type_name.lower().startswith("char")


def _statement_prefix(session: ConnectorSession) -> str:
    """MonetDB prefixes errors with the statement (``INSERT INTO: ...``); the engine names the statement in
    the session property ``statement`` when it knows it."""
    statement = str(session.properties.get("statement") or "")
    return {
        "INSERT": "INSERT INTO: ",
        "DELETE": "DELETE FROM: ",
        "UPDATE": "UPDATE: ",
        "MERGE": "MERGE: ",
        "TRUNCATE": "TRUNCATE: ",
    }.get(statement, "")
