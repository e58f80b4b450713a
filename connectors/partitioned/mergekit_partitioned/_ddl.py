"""DDL of the partitioned connector: plain tables (the base connector's, guarded) and merge tables.

Plain ``CREATE``/``DROP TABLE``, ``ADD COLUMN`` and ``TRUNCATE`` go to the base connector, except that a name
may not clash with a merge table and a child of a merge table can be neither dropped nor altered; a merge table
takes a new column only while it has no partitions (``DROP``/``RENAME COLUMN`` and ``SET DATA TYPE``, of every
child at once: ``_evolution``). Merge-table
DDL is MonetDB's: ``CREATE MERGE TABLE ... [PARTITION BY ...]``, ``ALTER TABLE ... ADD | SET TABLE ... AS
PARTITION ...`` (the child's definition, its bounds, overlaps with its siblings and the rows it already holds
are checked first) and ``ALTER TABLE ... DROP TABLE``. Error texts follow MonetDB's
(shared/reference/seed-systems.md §2.3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mergekit.errors import ErrorCode
from mergekit.spi import (
    ColumnMetadata,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    PartitionBounds,
    PartitionKind,
    PartitionMethod,
    PartitionScheme,
    RowsCheck,
    SchemaTableName,
)

from ._handles import (
    MemberTableHandle,
    MergeTableHandle,
    SystemTableHandle,
)
from ._registry import ChildRow, MergeTableRow, dumps
from ._tables import TablesMetadata, _err, _kind_word

__all__ = ["DdlMetadata"]


class DdlMetadata(TablesMetadata):
    """Plain and merge-table DDL (part of ``PartitionedMetadata``); the registry records merge tables and
    their children."""

    # ---- plain DDL ------------------------------------------------------------------------------------------

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        """The base's ``CREATE TABLE``, unless a merge table has the name (``TABLE_ALREADY_EXISTS``)."""
        if table_metadata.table in {m.name for m in self.registry.merge_tables()}:
            if ignore_existing:
                return
            raise _err(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{table_metadata.table}' already exists")
        self.bm.create_table(session=session, table_metadata=table_metadata, ignore_existing=ignore_existing)

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """A merge table: its registry rows (its children stay, detached); a system table or a child of a merge
        table: ``NOT_SUPPORTED``; any other table: the base's ``DROP TABLE``."""
        state = self._state()
        children = state[2]
        if isinstance(table_handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"DROP TABLE: cannot drop system table '{table_handle.table}'")
        name = table_handle.table
        if any(c.name == name for c in children):
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"DROP TABLE: unable to drop table {name} (there are database objects which depend on it)",
            )
        if isinstance(table_handle, MergeTableHandle):
            with self.registry.write() as cur:
                cur.execute("DELETE FROM pt_children WHERE parent_id = ?", (table_handle.table_id,))
                cur.execute("DELETE FROM pt_merge_tables WHERE table_id = ?", (table_handle.table_id,))
            return
        self.bm.drop_table(session=session, table_handle=self._unwrap(table_handle))

    def add_column(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: ColumnMetadata
    ) -> None:
        """A merge table without partitions: the column is recorded in the registry; a member: ``NOT_SUPPORTED``;
        any other table: the base's."""
        if isinstance(table_handle, MergeTableHandle):
            if table_handle.has_children:
                raise _err(
                    ErrorCode.NOT_SUPPORTED,
                    f"ALTER TABLE: cannot add column to {_kind_word(table_handle.scheme)} '{table_handle.table.table}' "
                    "while it has partitions",
                )
            with self.registry.write() as cur:
                cur.execute(
                    "UPDATE pt_merge_tables SET columns = ? WHERE table_id = ?",
                    (dumps((*table_handle.columns, column)), table_handle.table_id),
                )
            return
        if isinstance(table_handle, MemberTableHandle):
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"ALTER TABLE: cannot add column to a PARTITION of a MERGE or REPLICA TABLE '{table_handle.table.table}'",
            )
        self.bm.add_column(session=session, table_handle=table_handle, column=column)

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """A merge table: the SPI default (``NOT_SUPPORTED``; the engine falls back to DELETE, which commits every
        child atomically); a system table: ``NOT_SUPPORTED``; any other table: the base's."""
        if isinstance(table_handle, MergeTableHandle):
            # Not per child: the engine falls back to DELETE, which commits every child atomically.
            super().truncate_table(session=session, table_handle=table_handle)
        if isinstance(table_handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"Cannot truncate system table {table_handle.table}")
        self.bm.truncate_table(session=session, table_handle=self._unwrap(table_handle))

    # ---- merge-table DDL ------------------------------------------------------------------------------------

    def create_merge_table(
        self,
        *,
        session: ConnectorSession,
        table_metadata: ConnectorTableMetadata,
        scheme: PartitionScheme | None,
        ignore_existing: bool,
    ) -> None:
        """``CREATE MERGE TABLE``: register the table, its columns and key, and ``scheme`` (None: no PARTITION
        BY, not updatable); a partitioned table's key must be its partition columns. A stream cannot be one."""
        name = table_metadata.table
        if table_metadata.stream is not None:
            raise _err(ErrorCode.NOT_SUPPORTED, f"CREATE MERGE TABLE: '{name.table}' cannot be a stream")
        exists = self.get_table_handle(session=session, table=name)
        if (exists is not None and not isinstance(exists, SystemTableHandle)) or self.bm.get_view(
            session=session, name=name
        ) is not None:  # (a view of the base shares the namespace)
            if ignore_existing:
                return
            raise _err(ErrorCode.TABLE_ALREADY_EXISTS, f"CREATE MERGE TABLE: name '{name.table}' already in use")
        if scheme is not None and table_metadata.primary_key:
            if set(table_metadata.primary_key) != set(scheme.columns):
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"CREATE TABLE: {name}: in a partitioned table, the primary key's columns must match the "
                    "columns used in the partition definition",
                )
        with self.registry.write() as cur:
            table_id = self.registry.next_id(cur, "table")
            scheme_id = self.registry.next_id(cur, "partition") if scheme is not None else None
            column_id = None
            if scheme is not None and scheme.column is not None:
                column_id = self.registry.next_id(cur, "column")
            cur.execute(
                "INSERT INTO pt_merge_tables (table_id, schema_name, table_name, columns, primary_key, scheme, "
                "scheme_id, column_id, checks) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    table_id,
                    name.schema,
                    name.table,
                    dumps(tuple(table_metadata.columns)),
                    dumps(tuple(table_metadata.primary_key)),
                    dumps(scheme) if scheme is not None else None,
                    scheme_id,
                    column_id,
                    dumps(tuple(table_metadata.check_constraints)),
                ),
            )

    def get_partition_scheme(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> PartitionScheme | None:
        """A merge table's PARTITION BY; None for any other table."""
        return table_handle.scheme if isinstance(table_handle, MergeTableHandle) else None

    def set_table_partition(
        self,
        *,
        session: ConnectorSession,
        merge_table: SchemaTableName,
        child: SchemaTableName,
        bounds: PartitionBounds | None,
        bound_values: Sequence[Any] | None,
        replace: bool,
        check_rows: RowsCheck,
    ) -> None:
        """``ALTER TABLE merge_table ADD TABLE child [AS PARTITION ...]``; ``replace``: ``SET TABLE``, new bounds
        for an attached child. Checked first: both tables, the link (not attached elsewhere, no cycle, one schema), the
        child's definition (when added), the bounds against the scheme and the siblings' bounds, and (``check_rows``)
        that the child's rows lie within its bounds at this and every enclosing level. Then the registry records it."""
        state = self._state()
        by_id, by_name, children = state
        merge = by_name.get(merge_table)
        if merge is None:
            if self.bm.get_table_handle(session=session, table=merge_table) is not None:
                raise _err(ErrorCode.NOT_SUPPORTED, f"ALTER TABLE: cannot add table to non-merge table '{merge_table}'")
            raise _err(ErrorCode.TABLE_NOT_FOUND, f"ALTER TABLE: no such table '{merge_table}'")
        scheme = merge.scheme
        kind = _kind_word(scheme)
        child_merge = by_name.get(child)
        child_handle = None if child_merge is not None else self.bm.get_table_handle(session=session, table=child)
        if child_merge is None and child_handle is None:
            raise _err(ErrorCode.TABLE_NOT_FOUND, f"ALTER TABLE: no such table '{child}'")
        if (
            child_handle is not None
            and self.bm.get_table_metadata(session=session, table_handle=child_handle).stream is not None
        ):
            raise _err(
                ErrorCode.NOT_SUPPORTED, f"ALTER TABLE: stream '{child}' cannot be part of {kind} '{merge_table}'"
            )
        link = next((c for c in children if c.name == child), None)
        if replace:
            if link is None or link.parent_id != merge.table_id:
                raise _err(
                    ErrorCode.INVALID_PARTITION, f"ALTER TABLE: table '{child}' isn't part of {kind} '{merge_table}'"
                )
        elif link is not None:
            if link.parent_id == merge.table_id:
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"ALTER TABLE: table '{child}' is already part of {kind} '{merge_table}'",
                )
            raise _err(ErrorCode.INVALID_PARTITION, f"ALTER TABLE: table '{child}' is already part of another table")
        if child == merge_table or (child_merge is not None and self._contains(child_merge, merge.table_id, state)):
            raise _err(
                ErrorCode.INVALID_PARTITION,
                f"ALTER TABLE: a merge table hierarchy cannot contain a cycle: '{merge_table}' is part of '{child}'",
            )
        if child.schema != merge_table.schema:
            raise _err(
                ErrorCode.INVALID_PARTITION,
                f"ALTER TABLE: all children tables of '{merge_table}' must be part of schema '{merge_table.schema}'",
            )
        if not replace:
            self._check_definition(session, merge, child, child_merge, child_handle, state)
        if scheme is None:
            if bounds is not None:
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"ALTER TABLE: a partition clause is not allowed for MERGE TABLE '{merge_table}' without PARTITION BY",
                )
        else:
            if bounds is None:
                word = "range" if scheme.method is PartitionMethod.RANGE else "value"
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"ALTER TABLE: a {word} partition is required while adding under a {kind}",
                )
            self._check_bounds(scheme, bounds, bound_values or ())
            self._check_overlaps(scheme, bounds, merge, child, by_name, children)
            levels = [(scheme, bounds)] + [(lvl.scheme, b) for lvl, b in self._checks(merge_table, state)]
            failures = check_rows(child, levels)
            for (lvl_scheme, _), count in zip(levels, failures, strict=True):
                if count:
                    what = f"column {lvl_scheme.column}" if lvl_scheme.column is not None else "the expression"
                    domain = (
                        "partition range" if lvl_scheme.method is PartitionMethod.RANGE else "partition list of values"
                    )
                    raise _err(
                        ErrorCode.PARTITION_NOT_FOUND, f"ALTER TABLE: there are values in {what} outside the {domain}"
                    )
        with self.registry.write() as cur:
            if replace:
                cur.execute(
                    "UPDATE pt_children SET bounds = ? WHERE schema_name = ? AND table_name = ?",
                    (dumps(bounds) if bounds is not None else None, child.schema, child.table),
                )
            else:
                child_id = self.registry.next_id(cur, "child")
                cur.execute(
                    "INSERT INTO pt_children (child_id, schema_name, table_name, parent_id, bounds) VALUES (?, ?, ?, ?, ?)",
                    (
                        child_id,
                        child.schema,
                        child.table,
                        merge.table_id,
                        dumps(bounds) if bounds is not None else None,
                    ),
                )

    def _contains(self, m: MergeTableRow, table_id: int, state: Any) -> bool:
        """Whether merge table ``m`` contains merge table ``table_id`` at any depth."""
        by_id, by_name, children = state
        for c in children:
            if c.parent_id != m.table_id:
                continue
            nested = by_name.get(c.name)
            if nested is not None and (nested.table_id == table_id or self._contains(nested, table_id, state)):
                return True
        return False

    def _check_definition(
        self,
        session: ConnectorSession,
        merge: MergeTableRow,
        child: SchemaTableName,
        child_merge: MergeTableRow | None,
        child_handle: ConnectorTableHandle | None,
        state: Any,
    ) -> None:
        """The child must have the merge table's visible columns (names, types, nullability) and key; a
        partitioned child merge table must have a child of its own."""
        kind = _kind_word(merge.scheme)
        prefix = f"ALTER {kind}: to be added table doesn't match {kind} definition"
        if child_merge is not None:
            columns, key, checks = child_merge.columns, child_merge.primary_key, child_merge.check_constraints
            if child_merge.scheme is not None and not any(c.parent_id == child_merge.table_id for c in state[2]):
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"The {_kind_word(child_merge.scheme)} {child} should have at least one table associated",
                )
        else:
            assert child_handle is not None
            meta = self.bm.get_table_metadata(session=session, table_handle=child_handle)
            columns, key, checks = meta.visible_columns, meta.primary_key, meta.check_constraints
        mine = [(c.name, c.type) for c in merge.columns if not c.hidden]
        theirs = [(c.name, c.type) for c in columns if not c.hidden]
        if mine != theirs:
            raise _err(ErrorCode.INVALID_PARTITION, prefix)
        if [c.nullable for c in merge.columns if not c.hidden] != [c.nullable for c in columns if not c.hidden]:
            raise _err(ErrorCode.INVALID_PARTITION, f"{prefix} (column NULL check)")
        if tuple(merge.primary_key) != tuple(key):
            raise _err(ErrorCode.INVALID_PARTITION, f"{prefix} (key)")
        # Writes through the merge table are checked against its CHECK constraints (and those above it) only, so
        # a child may have no other: each of its constraints must be one of them (by expression).
        held = {c.expression for c in (*merge.check_constraints, *self._inherited_checks(merge.name, state))}
        extra = next((c for c in checks if c.expression not in held), None)
        if extra is not None:
            raise _err(ErrorCode.INVALID_PARTITION, f"{prefix} (CHECK constraint {extra.name}: {extra.expression})")

    def _check_bounds(self, scheme: PartitionScheme, bounds: PartitionBounds, values: Sequence[Any]) -> None:
        """Bounds of the scheme's kind: a value list non-empty, without nulls or duplicates; a range without
        null bounds and with its minimum at most its maximum."""
        if bounds.kind is PartitionKind.VALUES:
            if scheme.method is PartitionMethod.RANGE:
                raise _err(
                    ErrorCode.INVALID_PARTITION, "ALTER TABLE: cannot add value partition into a range partition table"
                )
            if not values:
                raise _err(ErrorCode.INVALID_PARTITION, "ALTER TABLE: no values in the list")
            if any(v is None for v in values):
                raise _err(ErrorCode.INVALID_PARTITION, "ALTER TABLE: list value cannot be null")
            if len(set(values)) != len(values):
                raise _err(ErrorCode.INVALID_PARTITION, "ALTER TABLE: there are duplicated values in the list")
        elif bounds.kind is PartitionKind.RANGE:
            if scheme.method is PartitionMethod.VALUES:
                raise _err(
                    ErrorCode.INVALID_PARTITION, "ALTER TABLE: cannot add range partition into a list partition table"
                )
            if any(v is None for v in values):
                raise _err(ErrorCode.INVALID_PARTITION, "ALTER TABLE: range bound cannot be null")
            if bounds.minimum is not None and bounds.maximum is not None and bounds.minimum > bounds.maximum:
                raise _err(ErrorCode.INVALID_PARTITION, "ALTER TABLE: minimum value is higher than maximum value")

    def _check_overlaps(
        self,
        scheme: PartitionScheme,
        bounds: PartitionBounds,
        merge: MergeTableRow,
        child: SchemaTableName,
        by_name: Mapping[SchemaTableName, MergeTableRow],
        children: Sequence[ChildRow],
    ) -> None:
        """``PARTITION_OVERLAP`` when the new bounds overlap a sibling's, both hold nulls, or a sibling holds
        every value."""
        is_range = scheme.method is PartitionMethod.RANGE
        for other in children:
            if other.parent_id != merge.table_id or other.name == child or other.bounds is None:
                continue
            ob = other.bounds
            if ob.holds_everything and ob.with_nulls:
                raise _err(
                    ErrorCode.PARTITION_OVERLAP,
                    f"ALTER TABLE: conflicting partitions: table {other.name} stores every possible value",
                )
            if bounds.with_nulls and ob.with_nulls:
                if is_range:
                    raise _err(
                        ErrorCode.PARTITION_OVERLAP,
                        f"ALTER TABLE: conflicting partitions: table {other.name} stores null values and only one "
                        "partition can store null values at the time",
                    )
                raise _err(
                    ErrorCode.PARTITION_OVERLAP,
                    f"ALTER TABLE: the new partition is conflicting with the existing partition {other.name}",
                )
            if bounds.overlaps(ob):
                if not is_range:
                    raise _err(
                        ErrorCode.PARTITION_OVERLAP,
                        f"ALTER TABLE: the new partition is conflicting with the existing partition {other.name}",
                    )
                if ob.holds_everything:
                    raise _err(
                        ErrorCode.PARTITION_OVERLAP,
                        f"ALTER TABLE: conflicting partitions: table {other.name} stores every possible value",
                    )
                raise _err(
                    ErrorCode.PARTITION_OVERLAP,
                    f"ALTER TABLE: conflicting partitions: {bounds.describe_range()} and {ob.describe_range()} from table {other.name}",
                )

    def drop_table_partition(
        self, *, session: ConnectorSession, merge_table: SchemaTableName, child: SchemaTableName
    ) -> None:
        """``ALTER TABLE merge_table DROP TABLE child``: remove the link; the child stays a table of the base."""
        by_id, by_name, children = self._state()
        merge = by_name.get(merge_table)
        if merge is None:
            raise _err(ErrorCode.TABLE_NOT_FOUND, f"ALTER TABLE: no such merge table '{merge_table}'")
        link = next((c for c in children if c.name == child and c.parent_id == merge.table_id), None)
        if link is None:
            raise _err(
                ErrorCode.INVALID_PARTITION,
                f"ALTER TABLE: table '{child}' isn't part of {_kind_word(merge.scheme)} '{merge_table}'",
            )
        with self.registry.write() as cur:
            cur.execute("DELETE FROM pt_children WHERE child_id = ?", (link.child_id,))
