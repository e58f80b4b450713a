"""CHECK constraints and column defaults of the partitioned connector.

A merge table's CHECK constraints are in the registry (``pt_merge_tables.checks``) and hold for every row of every
child, at any depth: the merge table's metadata lists its own constraints and those of the merge tables enclosing
it, and a child's metadata adds the constraints of every merge table above it to its own (``TablesMetadata``), so
the engine checks them on writes through the merge table and on direct writes to a child alike.

``ALTER TABLE m ADD CONSTRAINT`` on a merge table (the engine has checked every child's rows through the merge
table's handle) also records the constraint in every physical child through the base connector, with the child's
handle of that check: a base that versions (the journal) refuses when the child changed after its rows were checked
and fails a write to the child that began before (``TRANSACTION_CONFLICT``). A child that fails undoes the children
already done. ``DROP CONSTRAINT`` removes it from the registry and from the children that hold it.

A child has no constraint of its own that its merge tables lack (``ALTER TABLE ... ADD TABLE`` checks it; a
constraint cannot be added to a child): a write through the merge table, checked against the merge table's
constraints only, could otherwise break it. Defaults belong to each table: a merge table's are on its registry
columns and used for writes through it; a child's are the base connector's.
"""

from __future__ import annotations

import attrs

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import CheckConstraint, ConnectorSession, ConnectorTableHandle

from ._handles import MergeTableHandle, SystemTableHandle
from ._registry import dumps
from ._tables import TablesMetadata, _err

__all__ = ["ConstraintMetadata"]


class ConstraintMetadata(TablesMetadata):
    """CHECK constraints and defaults of merge tables, children and plain tables (part of ``PartitionedMetadata``)."""

    def add_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, constraint: CheckConstraint
    ) -> None:
        """A merge table: recorded in every physical child (through the base, on the handles whose rows the
        engine checked), then in the registry; a child of a merge table: ``NOT_SUPPORTED``; a plain table: the
        base's."""
        if isinstance(table_handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"ALTER TABLE: cannot change system table '{table_handle.table}'")
        if not isinstance(table_handle, MergeTableHandle):
            if self._parent_of(table_handle) is not None:
                raise _err(
                    ErrorCode.NOT_SUPPORTED,
                    f"ALTER TABLE: cannot add a CHECK constraint to '{table_handle.table.table}': it is a PARTITION of "
                    f"MERGE TABLE '{self._parent_of(table_handle)}' (add it to the merge table)",
                )
            self.bm.add_check_constraint(
                session=session, table_handle=self._unwrap(table_handle), constraint=constraint
            )
            return
        row = self._state()[0].get(table_handle.table_id)
        if row is None:
            raise _err(ErrorCode.TABLE_NOT_FOUND, f"Table '{table_handle.table}' does not exist")
        done: list[ConnectorTableHandle] = []
        try:
            for leaf in table_handle.leaves:
                held = self.bm.get_table_metadata(session=session, table_handle=leaf.handle).check_constraints
                if constraint not in held:
                    self.bm.add_check_constraint(session=session, table_handle=leaf.handle, constraint=constraint)
                    done.append(leaf.handle)
        except MergekitError:
            for handle in done:  # undo: the children done so far forget it again
                try:
                    current = self.bm.get_table_handle(session=session, table=handle.table)
                    if current is not None:
                        self.bm.drop_check_constraint(session=session, table_handle=current, name=constraint.name)
                except MergekitError:
                    pass
            raise
        with self.registry.write() as cur:
            cur.execute(
                "UPDATE pt_merge_tables SET checks = ? WHERE table_id = ?",
                (dumps((*row.check_constraints, constraint)), row.table_id),
            )

    def drop_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, name: str
    ) -> None:
        """A merge table: its own constraint ``name`` leaves the registry and every physical child that holds it;
        one inherited from an enclosing merge table, or (on a child) one of a merge table above it: ``NOT_SUPPORTED``;
        a child's or plain table's own: the base's."""
        if isinstance(table_handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"ALTER TABLE: cannot change system table '{table_handle.table}'")
        state = self._state()
        inherited = self._inherited_checks(table_handle.table, state)
        if isinstance(table_handle, MergeTableHandle):
            row = state[0].get(table_handle.table_id)
            own = row.check_constraints if row is not None else ()
        else:
            base = self._unwrap(table_handle)
            own = self.bm.get_table_metadata(session=session, table_handle=base).check_constraints
        mine = next((c for c in own if c.name == name), None)
        if mine is None or mine in inherited:
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"ALTER TABLE: constraint {name} of '{table_handle.table.table}' belongs to a MERGE TABLE it is part "
                "of (drop it from that merge table)",
            )
        if not isinstance(table_handle, MergeTableHandle):
            self.bm.drop_check_constraint(session=session, table_handle=base, name=name)
            return
        for leaf in table_handle.leaves:
            held = self.bm.get_table_metadata(session=session, table_handle=leaf.handle).check_constraints
            if mine in held:
                self.bm.drop_check_constraint(session=session, table_handle=leaf.handle, name=name)
        with self.registry.write() as cur:
            cur.execute(
                "UPDATE pt_merge_tables SET checks = ? WHERE table_id = ?",
                (dumps(tuple(c for c in own if c.name != name)), table_handle.table_id),
            )

    def set_column_default(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str, default: str | None
    ) -> None:
        """A merge table: the default of its registry column (writes through the merge table use it); any other
        table (a child too): the base's."""
        if isinstance(table_handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"ALTER TABLE: cannot change system table '{table_handle.table}'")
        if not isinstance(table_handle, MergeTableHandle):
            self.bm.set_column_default(
                session=session, table_handle=self._unwrap(table_handle), column=column, default=default
            )
            return
        row = self._state()[0].get(table_handle.table_id)
        if row is None:
            raise _err(ErrorCode.TABLE_NOT_FOUND, f"Table '{table_handle.table}' does not exist")
        columns = tuple(attrs.evolve(c, default=default) if c.name == column else c for c in row.columns)
        with self.registry.write() as cur:
            cur.execute("UPDATE pt_merge_tables SET columns = ? WHERE table_id = ?", (dumps(columns), row.table_id))

    def _parent_of(self, table_handle: ConnectorTableHandle) -> str | None:
        """The name of the merge table ``table_handle``'s table is a child of, or None."""
        by_id, _, children = self._state()
        link = next((c for c in children if c.name == table_handle.table), None)
        parent = by_id.get(link.parent_id) if link is not None else None
        return str(parent.name) if parent is not None else None
