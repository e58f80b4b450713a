"""The base of the partitioned connector's metadata: the registry, merge-table handles, names and columns.

``TablesMetadata`` holds the base connector (``base``, its metadata ``bm``) and the partition registry, and
answers the questions every other part asks: which merge tables and children exist (``_state``), the handle of
a merge table (its hierarchy flattened into leaves, ``_merge_handle``), the bounds a child must satisfy at
every enclosing merge table (``_checks``, which make a child a ``MemberTableHandle``), and the names and
columns of merge tables, of plain tables (the base's) and of the system tables ``sys.table_partitions``,
``sys.range_partitions`` and ``sys.value_partitions`` (``SYSTEM_TABLES``). DDL (``_ddl``), reads (``_reads``)
and writes (``_writes``) build on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
    ConnectorMetadata,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    PartitionBounds,
    PartitionScheme,
    SchemaTableName,
    TableCommit,
    TableVersion,
)

from ._handles import (
    Leaf,
    Level,
    MemberTableHandle,
    MergeTableHandle,
    SystemTableHandle,
)
from ._registry import ChildRow, MergeTableRow, Registry

__all__ = ["TablesMetadata", "SYSTEM_TABLES", "SYSTEM_SCHEMA"]

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


def _merged(own: Sequence[CheckConstraint], inherited: Sequence[CheckConstraint]) -> tuple[CheckConstraint, ...]:
    """``own`` then ``inherited``, each constraint once (a child may repeat its merge table's)."""
    out: list[CheckConstraint] = []
    for c in (*own, *inherited):
        if c not in out:
            out.append(c)
    return tuple(out)


def _kind_word(scheme: PartitionScheme | None) -> str:
    """How MonetDB names the table in messages: ``MERGE TABLE`` without PARTITION BY, else the scheme's kind."""
    if scheme is None:
        return "MERGE TABLE"
    return scheme.table_kind


class TablesMetadata(ConnectorMetadata):
    """The base of ``PartitionedMetadata``: lookups in the registry, table handles, names and columns."""

    def __init__(self, *, catalog_name: str, base: Any, registry: Registry) -> None:
        """``base``: the base Connector (``bm``: its metadata); ``registry``: merge tables and their children."""
        self.catalog_name = catalog_name
        self.base = base  # the base Connector
        self.bm: ConnectorMetadata = base.get_metadata()
        self.registry = registry

    # ---- lookups ------------------------------------------------------------------------------------------

    def _state(self) -> tuple[dict[int, MergeTableRow], dict[SchemaTableName, MergeTableRow], list[ChildRow]]:
        """Every merge table, by id and by name, and every child link, as the registry holds them now."""
        merges = self.registry.merge_tables()
        return {m.table_id: m for m in merges}, {m.name: m for m in merges}, self.registry.children()

    def _merge_handle(
        self,
        session: ConnectorSession,
        row: MergeTableRow,
        state: tuple[dict[int, MergeTableRow], dict[SchemaTableName, MergeTableRow], list[ChildRow]],
    ) -> MergeTableHandle:
        """The handle of merge table ``row``: its hierarchy walked depth first into leaves (each physical child
        with the base's handle and its bounds at every level above it) and levels (the partitioned merge tables on
        the way). A nested merge table already on the path is not walked again; a child the base does not have is
        left out."""
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
            check_constraints=_merged(row.check_constraints, self._inherited_checks(row.name, state)),
        )

    def _inherited_checks(self, name: SchemaTableName, state: Any) -> tuple[CheckConstraint, ...]:
        """The CHECK constraints of every merge table enclosing ``name``, nearest first: a merge table's
        constraint holds for every row of every child, at any depth."""
        by_id, _, children = state
        out: list[CheckConstraint] = []
        current = name
        seen: set[SchemaTableName] = set()
        while current not in seen:
            seen.add(current)
            link = next((c for c in children if c.name == current), None)
            parent = by_id.get(link.parent_id) if link is not None else None
            if parent is None:
                break
            out.extend(parent.check_constraints)
            current = parent.name
        return tuple(out)

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
        """The base connector's handle of a member (a child of a merge table); any other handle as it is."""
        return handle.base if isinstance(handle, MemberTableHandle) else handle

    # ---- names --------------------------------------------------------------------------------------------

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        """The base's schemas and ``sys`` (the system tables)."""
        return sorted(set(self.bm.list_schemas(session=session)) | {SYSTEM_SCHEMA})

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        """The base's."""
        self.bm.create_schema(session=session, schema=schema, properties=properties)

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """The base's tables, the merge tables and, in ``sys``, the system tables."""
        names = list(self.bm.list_tables(session=session, schema=schema))
        names += [m.name for m in self.registry.merge_tables() if schema is None or m.name.schema == schema]
        if schema in (None, SYSTEM_SCHEMA):
            names += [SchemaTableName(schema=SYSTEM_SCHEMA, table=t) for t in SYSTEM_TABLES]
        return sorted(set(names), key=lambda n: (n.schema, n.table))

    def list_companion_tables(
        self, *, session: ConnectorSession, schema: str | None
    ) -> Mapping[SchemaTableName, SchemaTableName]:
        """The base's."""
        return self.bm.list_companion_tables(session=session, schema=schema)

    def list_system_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """The base's and, in ``sys``, the partition tables (``\\d`` leaves them out, ``\\dS`` lists them)."""
        names = list(self.bm.list_system_tables(session=session, schema=schema))
        if schema in (None, SYSTEM_SCHEMA):
            names += [SchemaTableName(schema=SYSTEM_SCHEMA, table=t) for t in SYSTEM_TABLES]
        return sorted(set(names), key=lambda n: (n.schema, n.table))

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        """A merge table's handle (no versions: ``NOT_SUPPORTED``); a member's (the base's handle and the bounds
        it must satisfy at every enclosing merge table); the base's handle of any other table, or of a past version of
        a member; a system table's when the base has no such table; None when nothing has the name."""
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
        """The base connector's change feed (a merge table has none of its own)."""
        return self.bm.get_changes_handle(
            session=session, table=table, from_version=from_version, to_version=to_version
        )

    def get_table_history(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> Sequence[TableCommit]:
        """The base connector's history of a plain table or a child (``DESCRIBE HISTORY``); a merge table has none
        of its own (``NOT_SUPPORTED``: read a child's)."""
        if isinstance(table_handle, MergeTableHandle | SystemTableHandle):
            return super().get_table_history(session=session, table_handle=table_handle)
        return self.bm.get_table_history(session=session, table_handle=self._unwrap(table_handle))

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        """A merge table's declared columns and key, with the properties ``merge_table`` and ``partition_by``; a
        system table's columns; the base's metadata for any other table."""
        if isinstance(table_handle, MergeTableHandle):
            props: dict[str, Any] = {"merge_table": True}
            if table_handle.scheme is not None:
                props["partition_by"] = f"{table_handle.scheme.method.value} {table_handle.scheme.key_expression}"
            return ConnectorTableMetadata(
                table=table_handle.table,
                columns=table_handle.columns,
                primary_key=table_handle.primary_key,
                properties=props,
                check_constraints=table_handle.check_constraints,
            )
        if isinstance(table_handle, SystemTableHandle):
            schema = SYSTEM_TABLES[table_handle.kind]
            return ConnectorTableMetadata(
                table=table_handle.table, columns=[ColumnMetadata(name=f.name, type=f.type) for f in schema]
            )
        meta = self.bm.get_table_metadata(session=session, table_handle=self._unwrap(table_handle))
        inherited = self._inherited_checks(table_handle.table, self._state())
        if inherited:  # a child: its own constraints, then those of the merge tables above it (writes pass both)
            return attrs.evolve(meta, check_constraints=_merged(meta.check_constraints, inherited))
        return meta

    def get_column_handles(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> Mapping[str, ColumnHandle]:
        """The SPI default (from the table metadata) for merge and system tables; the base's for any other."""
        if isinstance(table_handle, MergeTableHandle | SystemTableHandle):
            return super().get_column_handles(session=session, table_handle=table_handle)
        return self.bm.get_column_handles(session=session, table_handle=self._unwrap(table_handle))
