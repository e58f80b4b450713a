"""CHECK constraints and column defaults of the journal connector: ``ALTER TABLE ... ADD | DROP CONSTRAINT`` and
``ALTER TABLE ... ALTER COLUMN ... SET | DROP DEFAULT``.

Both live in the table's definition (``TableSpec``: ``check_constraints``, and each column's ``default`` text), so
they survive the process and are versioned like the columns: each change is a commit without files
(``add_constraint``, ``drop_constraint``, ``set_default`` in ``DESCRIBE HISTORY``) whose definition is recorded
(``_record_spec``), time travel reads a version with the constraints it had, and a write that began before the
change fails at its commit with ``TRANSACTION_CONFLICT`` (``_commit._check_conflicts``): it was planned, and its
rows checked, without it. The engine enforces and evaluates both; this module only records them.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import CheckConstraint, ConnectorSession, ConnectorTableHandle

from ._ddl import DdlMetadata
from ._handles import TableSpec

__all__ = ["ConstraintMetadata"]


class ConstraintMetadata(DdlMetadata):
    """CHECK constraints and column defaults (part of ``JournalMetadata``)."""

    def add_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, constraint: CheckConstraint
    ) -> None:
        """Record ``constraint`` after the table's others. The engine checked the rows of the handle's version: a
        commit after it (rows it did not check) fails this with ``TRANSACTION_CONFLICT``."""

        def add(spec: TableSpec) -> TableSpec:
            if constraint.name in {c.name for c in spec.check_constraints}:
                raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f'constraint "{constraint.name}" already exists')
            return attrs.evolve(spec, check_constraints=(*spec.check_constraints, constraint))

        self._change(table_handle, "add_constraint", add, pinned=True)

    def drop_check_constraint(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, name: str
    ) -> None:
        """Forget the CHECK constraint ``name`` (``INVALID_ARGUMENTS`` when the table has none of that name)."""

        def drop(spec: TableSpec) -> TableSpec:
            if name not in {c.name for c in spec.check_constraints}:
                raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f'constraint "{name}" does not exist')
            return attrs.evolve(spec, check_constraints=tuple(c for c in spec.check_constraints if c.name != name))

        self._change(table_handle, "drop_constraint", drop)

    def set_column_default(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str, default: str | None
    ) -> None:
        """Record (or, with None, remove) the DEFAULT text of a business column; existing rows are unchanged."""

        def set_default(spec: TableSpec) -> TableSpec:
            if column not in {c.name for c in spec.visible}:
                raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{column}' does not exist")
            columns = [attrs.evolve(c, default=default) if c.name == column else c for c in spec.columns]
            return attrs.evolve(spec, columns=columns)

        self._change(table_handle, "set_default", set_default)

    def _change(
        self,
        table_handle: ConnectorTableHandle,
        operation: str,
        change: Callable[[TableSpec], TableSpec],
        *,
        pinned: bool = False,
    ) -> None:
        """Change the current definition under the table's lock and record it with a commit without files;
        ``pinned``: only if no commit came after the handle's version."""
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot change the constraints or defaults of {h.table}")
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            row = self._table_row(cur, h.logical.schema, h.logical.table)
            if row is None:
                raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{h.logical}' does not exist")
            if pinned and row[3] != h.snapshot_seq:
                raise MergekitError(
                    ErrorCode.TRANSACTION_CONFLICT,
                    f"Table {h.logical} was changed by a concurrent commit (version {row[3]}) while its rows were "
                    "checked",
                )
            spec = change(TableSpec.from_json(row[2]))
            seq = self._commit_meta(cur, h.table_id, operation)
            self._record_spec(cur, h.table_id, spec, seq)
