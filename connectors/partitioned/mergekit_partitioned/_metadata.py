"""Driver side of the partitioned connector: names, merge-table DDL and validation, reads, the commit.

Plain tables are the base connector's (the journal by default); this class answers for merge tables, for
base tables attached to one (members: writes are checked against their partition) and for the system
tables ``table_partitions``, ``range_partitions`` and ``value_partitions``. Error texts follow MonetDB's
(shared/reference/seed-systems.md §2.3), with mergekit's schema names in place of ``sys``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ALL,
    ColumnHandle,
    ColumnMetadata,
    ComputedColumn,
    ConnectorMergeTableHandle,
    ConnectorMetadata,
    ConnectorSession,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
    ConnectorTableLayout,
    ConnectorTableMetadata,
    Constraint,
    NativeScan,
    NativeScanUnion,
    PartitionBounds,
    PartitionKind,
    PartitionMethod,
    PartitionScheme,
    RowChangeParadigm,
    RowsCheck,
    SchemaTableName,
    TableVersion,
    format_partition_value,
)

from ._handles import (
    ROW_ID,
    Leaf,
    Level,
    MemberTableHandle,
    MergeTableHandle,
    PartitionedFragment,
    PartitionedMergeHandle,
    PartitionedSplit,
    SystemSplit,
    SystemTableHandle,
    key_column,
)
from ._registry import ChildRow, MergeTableRow, Registry, dumps

__all__ = ["PartitionedMetadata", "PartitionedSplitManager", "SYSTEM_TABLES", "SYSTEM_SCHEMA"]

SYSTEM_SCHEMA = "sys"
SYSTEM_TABLES: dict[str, pa.Schema] = {
    "table_partitions": pa.schema(
        [
            ("id", pa.int64()),
            ("table_id", pa.int64()),
            ("column_id", pa.int64()),
            ("expression", pa.string()),
            ("type", pa.int32()),
        ]
    ),
    "range_partitions": pa.schema(
        [
            ("table_id", pa.int64()),
            ("partition_id", pa.int64()),
            ("minimum", pa.string()),
            ("maximum", pa.string()),
            ("with_nulls", pa.bool_()),
        ]
    ),
    "value_partitions": pa.schema([("table_id", pa.int64()), ("partition_id", pa.int64()), ("value", pa.string())]),
}


def _err(code: ErrorCode, message: str) -> MergekitError:
    return MergekitError(code, message)


def _kind_word(scheme: PartitionScheme | None) -> str:
    if scheme is None:
        return "MERGE TABLE"
    return scheme.table_kind


class PartitionedMetadata(ConnectorMetadata):
    def __init__(self, *, catalog_name: str, base: Any, registry: Registry) -> None:
        self.catalog_name = catalog_name
        self.base = base  # the base Connector
        self.bm: ConnectorMetadata = base.get_metadata()
        self.registry = registry

    # ---- lookups ------------------------------------------------------------------------------------------

    def _state(self) -> tuple[dict[int, MergeTableRow], dict[SchemaTableName, MergeTableRow], list[ChildRow]]:
        merges = self.registry.merge_tables()
        return {m.table_id: m for m in merges}, {m.name: m for m in merges}, self.registry.children()

    def _merge_handle(
        self,
        session: ConnectorSession,
        row: MergeTableRow,
        state: tuple[dict[int, MergeTableRow], dict[SchemaTableName, MergeTableRow], list[ChildRow]],
    ) -> MergeTableHandle:
        by_id, by_name, children = state
        leaves: list[Leaf] = []
        levels: list[Level] = []

        def walk(m: MergeTableRow, path: tuple[tuple[int, PartitionBounds], ...], seen: frozenset[int]) -> None:
            if m.scheme is not None:
                levels.append(Level(table_id=m.table_id, name=m.name, scheme=m.scheme))
            for c in children:
                if c.parent_id != m.table_id:
                    continue
                step = path + ((m.table_id, c.bounds),) if c.bounds is not None else path
                nested = by_name.get(c.name)
                if nested is not None:
                    if nested.table_id not in seen:
                        walk(nested, step, seen | {nested.table_id})
                    continue
                handle = self.bm.get_table_handle(session=session, table=c.name)
                if handle is not None:
                    leaves.append(Leaf(leaf_id=c.child_id, name=c.name, handle=handle, path=step))

        walk(row, (), frozenset({row.table_id}))
        return MergeTableHandle(
            table=row.name,
            table_id=row.table_id,
            scheme=row.scheme,
            columns=row.columns,
            primary_key=row.primary_key,
            leaves=leaves,
            levels=levels,
            checks=self._checks(row.name, state),
            has_children=any(c.parent_id == row.table_id for c in children),
        )

    def _checks(self, name: SchemaTableName, state: Any) -> tuple[tuple[Level, PartitionBounds], ...]:
        """The bounds ``name`` must satisfy at every enclosing merge table, nearest first."""
        by_id, _, children = state
        out: list[tuple[Level, PartitionBounds]] = []
        current = name
        seen: set[SchemaTableName] = set()
        while current not in seen:
            seen.add(current)
            link = next((c for c in children if c.name == current), None)
            if link is None:
                break
            parent = by_id.get(link.parent_id)
            if parent is None:
                break
            if parent.scheme is not None and link.bounds is not None:
                out.append((Level(table_id=parent.table_id, name=parent.name, scheme=parent.scheme), link.bounds))
            current = parent.name
        return tuple(out)

    def _unwrap(self, handle: ConnectorTableHandle) -> ConnectorTableHandle:
        return handle.base if isinstance(handle, MemberTableHandle) else handle

    # ---- names --------------------------------------------------------------------------------------------

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        return sorted(set(self.bm.list_schemas(session=session)) | {SYSTEM_SCHEMA})

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        self.bm.create_schema(session=session, schema=schema, properties=properties)

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        names = list(self.bm.list_tables(session=session, schema=schema))
        names += [m.name for m in self.registry.merge_tables() if schema is None or m.name.schema == schema]
        if schema in (None, SYSTEM_SCHEMA):
            names += [SchemaTableName(schema=SYSTEM_SCHEMA, table=t) for t in SYSTEM_TABLES]
        return sorted(set(names), key=lambda n: (n.schema, n.table))

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        state = self._state()
        merge = state[1].get(table)
        if merge is not None:
            if version is not None:
                raise _err(
                    ErrorCode.NOT_SUPPORTED, f"Merge table {table} has no versions; read a child's versions instead"
                )
            return self._merge_handle(session, merge, state)
        handle = self.bm.get_table_handle(session=session, table=table, version=version)
        if handle is None:
            if table.table in SYSTEM_TABLES and version is None:
                return SystemTableHandle(table=table, kind=table.table)
            return None
        checks = self._checks(table, state)
        if checks and version is None:
            return MemberTableHandle(table=table, base=handle, checks=checks)
        return handle

    def get_changes_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, from_version: int, to_version: int | None = None
    ) -> ConnectorTableHandle:
        return self.bm.get_changes_handle(
            session=session, table=table, from_version=from_version, to_version=to_version
        )

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        if isinstance(table_handle, MergeTableHandle):
            props: dict[str, Any] = {"merge_table": True}
            if table_handle.scheme is not None:
                props["partition_by"] = f"{table_handle.scheme.method.value} {table_handle.scheme.key_expression}"
            return ConnectorTableMetadata(
                table=table_handle.table,
                columns=table_handle.columns,
                primary_key=table_handle.primary_key,
                properties=props,
            )
        if isinstance(table_handle, SystemTableHandle):
            schema = SYSTEM_TABLES[table_handle.kind]
            return ConnectorTableMetadata(
                table=table_handle.table, columns=[ColumnMetadata(name=f.name, type=f.type) for f in schema]
            )
        meta = self.bm.get_table_metadata(session=session, table_handle=self._unwrap(table_handle))
        return meta

    def get_column_handles(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> Mapping[str, ColumnHandle]:
        if isinstance(table_handle, MergeTableHandle | SystemTableHandle):
            return super().get_column_handles(session=session, table_handle=table_handle)
        return self.bm.get_column_handles(session=session, table_handle=self._unwrap(table_handle))

    # ---- plain DDL ------------------------------------------------------------------------------------------

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        if table_metadata.table in {m.name for m in self.registry.merge_tables()}:
            if ignore_existing:
                return
            raise _err(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{table_metadata.table}' already exists")
        self.bm.create_table(session=session, table_metadata=table_metadata, ignore_existing=ignore_existing)

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
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

    def add_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: Any) -> None:
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

    def drop_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: str) -> None:
        if isinstance(table_handle, MergeTableHandle):
            scheme = table_handle.scheme
            name = table_handle.table.table
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
            raise _err(ErrorCode.NOT_SUPPORTED, f"ALTER TABLE: cannot drop a column of MERGE TABLE '{name}'")
        if isinstance(table_handle, MemberTableHandle):
            raise _err(
                ErrorCode.NOT_SUPPORTED,
                f"ALTER TABLE: cannot drop column of a PARTITION of a MERGE or REPLICA TABLE '{table_handle.table.table}'",
            )
        self.bm.drop_column(session=session, table_handle=table_handle, column=column)

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
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
        name = table_metadata.table
        exists = self.get_table_handle(session=session, table=name)
        if exists is not None and not isinstance(exists, SystemTableHandle):
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
                "scheme_id, column_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    table_id,
                    name.schema,
                    name.table,
                    dumps(tuple(table_metadata.columns)),
                    dumps(tuple(table_metadata.primary_key)),
                    dumps(scheme) if scheme is not None else None,
                    scheme_id,
                    column_id,
                ),
            )

    def get_partition_scheme(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> PartitionScheme | None:
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
        kind = _kind_word(merge.scheme)
        prefix = f"ALTER {kind}: to be added table doesn't match {kind} definition"
        if child_merge is not None:
            columns, key = child_merge.columns, child_merge.primary_key
            if child_merge.scheme is not None and not any(c.parent_id == child_merge.table_id for c in state[2]):
                raise _err(
                    ErrorCode.INVALID_PARTITION,
                    f"The {_kind_word(child_merge.scheme)} {child} should have at least one table associated",
                )
        else:
            assert child_handle is not None
            meta = self.bm.get_table_metadata(session=session, table_handle=child_handle)
            columns, key = meta.visible_columns, meta.primary_key
        mine = [(c.name, c.type) for c in merge.columns if not c.hidden]
        theirs = [(c.name, c.type) for c in columns if not c.hidden]
        if mine != theirs:
            raise _err(ErrorCode.INVALID_PARTITION, prefix)
        if [c.nullable for c in merge.columns if not c.hidden] != [c.nullable for c in columns if not c.hidden]:
            raise _err(ErrorCode.INVALID_PARTITION, f"{prefix} (column NULL check)")
        if tuple(merge.primary_key) != tuple(key):
            raise _err(ErrorCode.INVALID_PARTITION, f"{prefix} (key)")

    def _check_bounds(self, scheme: PartitionScheme, bounds: PartitionBounds, values: Sequence[Any]) -> None:
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

    # ---- system tables ----------------------------------------------------------------------------------------

    def system_rows(self, kind: str) -> pa.Table:
        merges = self.registry.merge_tables()
        by_id = {m.table_id: m for m in merges}
        children = self.registry.children()
        rows: list[dict[str, Any]] = []
        if kind == "table_partitions":
            for m in merges:
                if m.scheme is None:
                    continue
                rows.append(
                    {
                        "id": m.scheme_id,
                        "table_id": m.table_id,
                        "column_id": m.column_id,
                        "expression": m.scheme.expression,
                        "type": m.scheme.type_code,
                    }
                )
        else:
            for c in children:
                parent = by_id.get(c.parent_id)
                if parent is None or parent.scheme is None or c.bounds is None:
                    continue
                b = c.bounds
                is_range = parent.scheme.method is PartitionMethod.RANGE
                if kind == "range_partitions" and is_range:
                    null_only = b.kind is PartitionKind.NULL
                    rows.append(
                        {
                            "table_id": c.child_id,
                            "partition_id": parent.scheme_id,
                            "minimum": None if null_only or b.minimum is None else format_partition_value(b.minimum),
                            "maximum": None if null_only or b.maximum is None else format_partition_value(b.maximum),
                            "with_nulls": b.with_nulls,
                        }
                    )
                elif kind == "value_partitions" and not is_range:
                    for v in b.values:
                        rows.append(
                            {
                                "table_id": c.child_id,
                                "partition_id": parent.scheme_id,
                                "value": format_partition_value(v),
                            }
                        )
                    if b.with_nulls:
                        rows.append({"table_id": c.child_id, "partition_id": parent.scheme_id, "value": None})
        return pa.Table.from_pylist(rows, schema=SYSTEM_TABLES[kind])

    # ---- reads ------------------------------------------------------------------------------------------------

    def get_native_scan(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint = ALL,
    ) -> NativeScan | NativeScanUnion | None:
        if isinstance(table_handle, SystemTableHandle):
            return None
        if isinstance(table_handle, MergeTableHandle):
            return self._merge_table_native_scan(session, table_handle, columns, constraint)
        return self.bm.get_native_scan(
            session=session, table_handle=self._unwrap(table_handle), columns=columns, constraint=constraint
        )

    def get_value_set_columns(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> frozenset[str]:
        """A plain table's, from its base connector; a merge table's: those every child's base puts to use."""
        if isinstance(table_handle, SystemTableHandle):
            return frozenset()
        if not isinstance(table_handle, MergeTableHandle):
            return self.bm.get_value_set_columns(session=session, table_handle=self._unwrap(table_handle))
        levels = {lvl.table_id: lvl for lvl in table_handle.levels}
        usable: frozenset[str] | None = None
        for leaf in self.pruned_leaves(table_handle, ALL, levels):
            child = self.bm.get_value_set_columns(session=session, table_handle=leaf.handle)
            usable = child if usable is None else usable & child
        return usable or frozenset()

    def _merge_table_native_scan(
        self,
        session: ConnectorSession,
        handle: MergeTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> NativeScanUnion | None:
        """The union of the children's native scans (when every pruned child has one), the row id wrapped
        as ``{leaf, row}`` in Spark SQL; the children's splits are wrapped as in ``get_splits``."""
        levels = {lvl.table_id: lvl for lvl in handle.levels}
        scans: list[NativeScan] = []
        splits: list[ConnectorSplit] = []
        enforced: set[str] | None = None  # what every child enforced, by the merge table's column names
        for leaf in self.pruned_leaves(handle, constraint, levels):
            base_columns, base_row_id = self._base_columns(session, leaf.handle, columns)
            child = self.bm.get_native_scan(
                session=session, table_handle=leaf.handle, columns=base_columns, constraint=constraint
            )
            if child is None:
                return None
            union = child if isinstance(child, NativeScanUnion) else NativeScanUnion(scans=(child,))
            named = {c.name for c, base in zip(columns, base_columns, strict=True) if base.name in union.enforced}
            enforced = named if enforced is None else enforced & named
            for scan in union.scans:
                projections = {
                    c.name: scan.projections.get(base.name, f"`{base.name}`")
                    for c, base in zip(columns, base_columns, strict=True)
                }
                if base_row_id is not None:
                    projections[ROW_ID] = (
                        f"named_struct('leaf', CAST({int(leaf.leaf_id)} AS BIGINT), 'row', {projections[ROW_ID]})"
                    )
                scans.append(attrs.evolve(scan, projections=projections))
            splits.extend(
                PartitionedSplit(
                    leaf_id=leaf.leaf_id, base_handle=leaf.handle, base_split=split, base_row_id=base_row_id
                )
                for split in union.splits
            )
        return NativeScanUnion(scans=scans, splits=splits, enforced=enforced or ())

    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> list[ConnectorSplit]:
        bsm = self.base.get_split_manager()
        if isinstance(table_handle, SystemTableHandle):
            sink = io.BytesIO()
            table = self.system_rows(table_handle.kind)
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            return [SystemSplit(rows=sink.getvalue())]
        if not isinstance(table_handle, MergeTableHandle):
            return list(
                bsm.get_splits(
                    session=session, table_handle=self._unwrap(table_handle), columns=columns, constraint=constraint
                )
            )
        levels = {lvl.table_id: lvl for lvl in table_handle.levels}
        out: list[ConnectorSplit] = []
        for leaf in self.pruned_leaves(table_handle, constraint, levels):
            base_columns, base_row_id = self._base_columns(session, leaf.handle, columns)
            for split in bsm.get_splits(
                session=session, table_handle=leaf.handle, columns=base_columns, constraint=constraint
            ):
                out.append(
                    PartitionedSplit(
                        leaf_id=leaf.leaf_id, base_handle=leaf.handle, base_split=split, base_row_id=base_row_id
                    )
                )
        return out

    def pruned_leaves(
        self, handle: MergeTableHandle, constraint: Constraint, levels: Mapping[int, Level]
    ) -> list[Leaf]:
        """Leaves whose bounds, at every level partitioned ON a column, can hold a row the constraint allows."""
        kept = []
        for leaf in handle.leaves:
            ok = True
            for table_id, bounds in leaf.path:
                lvl = levels.get(table_id)
                column = lvl.scheme.column if lvl is not None else None
                if column is None:
                    continue
                if column in constraint.equalities and not bounds.may_match(
                    ("values", frozenset(constraint.equalities[column]))
                ):
                    ok = False
                elif column in constraint.ranges and not bounds.may_match(("range", *constraint.ranges[column])):
                    ok = False
                if not ok:
                    break
            if ok:
                kept.append(leaf)
        return kept

    def _base_columns(
        self, session: ConnectorSession, handle: ConnectorTableHandle, columns: Sequence[ColumnHandle]
    ) -> tuple[list[ColumnHandle], ColumnHandle | None]:
        handles = self.bm.get_column_handles(session=session, table_handle=handle)
        out: list[ColumnHandle] = []
        base_row_id = None
        for c in columns:
            if c.name == ROW_ID:
                base_row_id = self.bm.get_merge_row_id_column_handle(session=session, table_handle=handle)
                out.append(base_row_id)
            else:
                out.append(handles.get(c.name, c))
        return out, base_row_id

    # ---- MERGE, UPDATE, DELETE, INSERT ---------------------------------------------------------------------------

    def _writable(self, handle: MergeTableHandle, statement: str = "") -> None:
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
        if isinstance(table_handle, MergeTableHandle):
            self._writable(table_handle, _statement_prefix(session))
            return RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW
        if isinstance(table_handle, SystemTableHandle):
            raise _err(ErrorCode.NOT_SUPPORTED, f"Cannot modify system table {table_handle.table}")
        return self.bm.get_row_change_paradigm(session=session, table_handle=self._unwrap(table_handle))

    def _row_id_type(self, session: ConnectorSession, handle: MergeTableHandle) -> pa.DataType:
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
        if isinstance(table_handle, MergeTableHandle):
            self._writable(table_handle, _statement_prefix(session))
            return ColumnHandle(name=ROW_ID, type=self._row_id_type(session, table_handle))
        return self.bm.get_merge_row_id_column_handle(session=session, table_handle=self._unwrap(table_handle))

    def _computed(self, levels: Sequence[Level]) -> list[ComputedColumn]:
        return [
            ComputedColumn(
                name=key_column(lvl.table_id), expression=lvl.scheme.key_expression, type=lvl.scheme.key_type
            )
            for lvl in levels
        ]

    def get_insert_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        if isinstance(table_handle, MergeTableHandle):
            computed = self._computed([*table_handle.levels, *(lvl for lvl, _ in table_handle.checks)])
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
        layout = self.get_insert_layout(session=session, table_handle=table_handle)
        computed = tuple(c.name for c in layout.computed_columns) if layout is not None else ()
        meta = self.get_table_metadata(session=session, table_handle=table_handle)
        visible = meta.visible_columns
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
                begun.append(
                    (
                        leaf.leaf_id,
                        self.bm.begin_merge(
                            session=session, table_handle=leaf.handle, update_case_columns=update_case_columns
                        ),
                    )
                )
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
        )

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
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

    def _abort_quietly(self, session: ConnectorSession, mh: ConnectorMergeTableHandle) -> None:
        try:
            self.bm.abort_merge(session=session, merge_handle=mh)
        except Exception:  # noqa: BLE001 - cleanup only; vacuum removes leftovers
            pass

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        if not isinstance(merge_handle, PartitionedMergeHandle):
            self.bm.abort_merge(session=session, merge_handle=merge_handle)
            return
        for _, mh in merge_handle.children:
            self._abort_quietly(session, mh)


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


class PartitionedSplitManager(ConnectorSplitManager):
    def __init__(self, metadata: PartitionedMetadata) -> None:
        self._metadata = metadata

    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        return self._metadata.get_splits(
            session=session, table_handle=table_handle, columns=columns, constraint=constraint
        )
