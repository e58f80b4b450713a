"""Picklable values of the partitioned connector: table handles, splits, merge handles and fragments.

A merge table handle carries its whole hierarchy flattened into *leaves* (the physical child tables, each
with the base connector's handle and the bounds it must satisfy at every level), so executors route rows
and read children without the driver-side registry.
"""

from __future__ import annotations

from typing import Any

import attrs
import pyarrow as pa

from mergekit.spi import (
    CheckConstraint,
    ColumnMetadata,
    ConnectorMergeTableHandle,
    ConnectorSplit,
    ConnectorTableHandle,
    PartitionBounds,
    PartitionScheme,
    SchemaTableName,
)

__all__ = [
    "ROW_ID",
    "key_column",
    "Level",
    "Leaf",
    "MergeTableHandle",
    "MemberTableHandle",
    "SystemTableHandle",
    "PartitionedSplit",
    "SystemSplit",
    "PartitionedMergeHandle",
    "PartitionedFragment",
]

ROW_ID = "$partition_row_id"
"""Row id of a merge table's rows: ``struct<leaf: int64, row: <the base connector's row id>>``."""


def key_column(table_id: int) -> str:
    """Name of the computed channel holding the partition key of merge table ``table_id``."""
    return f"$partition_key_{table_id}"


@attrs.frozen(kw_only=True)
class Level:
    """A partitioned merge table whose key a row must carry (to be routed below it or checked against it)."""

    table_id: int
    name: SchemaTableName
    scheme: PartitionScheme


@attrs.frozen(kw_only=True)
class Leaf:
    """A physical child somewhere below a merge table. ``path``: ``(merge table id, bounds)`` from the
    top merge table down to the leaf's own parent; a row belongs here when every level's key fits."""

    leaf_id: int
    name: SchemaTableName
    handle: ConnectorTableHandle
    path: tuple[tuple[int, PartitionBounds], ...] = attrs.field(converter=tuple)


@attrs.frozen(kw_only=True)
class MergeTableHandle(ConnectorTableHandle):
    table_id: int
    scheme: PartitionScheme | None
    columns: tuple[ColumnMetadata, ...] = attrs.field(converter=tuple, eq=False)
    primary_key: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    leaves: tuple[Leaf, ...] = attrs.field(default=(), converter=tuple, eq=False)
    levels: tuple[Level, ...] = attrs.field(default=(), converter=tuple, eq=False)
    """Every partitioned merge table of the hierarchy at and below this one (routing keys)."""
    checks: tuple[tuple[Level, PartitionBounds], ...] = attrs.field(default=(), converter=tuple, eq=False)
    """Enclosing merge tables and the bounds this table has under them (checked on direct writes)."""
    has_children: bool = False
    check_constraints: tuple[CheckConstraint, ...] = attrs.field(default=(), converter=tuple, eq=False)
    """The table's CHECK constraints, then those of every enclosing merge table (the engine enforces them)."""


@attrs.frozen(kw_only=True)
class MemberTableHandle(ConnectorTableHandle):
    """A base table attached to a merge table: reads and writes go to the base, writes are checked."""

    base: ConnectorTableHandle
    checks: tuple[tuple[Level, PartitionBounds], ...] = attrs.field(converter=tuple, eq=False)


@attrs.frozen(kw_only=True)
class SystemTableHandle(ConnectorTableHandle):
    kind: str  # table_partitions | range_partitions | value_partitions


@attrs.frozen(kw_only=True)
class PartitionedSplit(ConnectorSplit):
    leaf_id: int
    base_handle: ConnectorTableHandle
    base_split: ConnectorSplit
    base_row_id: Any = None  # the base's row id ColumnHandle, when the scan asks for ROW_ID


@attrs.frozen(kw_only=True)
class SystemSplit(ConnectorSplit):
    rows: bytes  # an Arrow IPC stream of the system table's rows, computed on the driver


@attrs.frozen(kw_only=True)
class PartitionedMergeHandle(ConnectorMergeTableHandle):
    """``children``: ``(leaf id, the base's merge handle)`` per leaf (one entry for a member table).
    ``computed``: names of the computed key channels after ``$row_id`` in every page."""

    children: tuple[tuple[int, ConnectorMergeTableHandle], ...] = attrs.field(converter=tuple)
    computed: tuple[str, ...] = attrs.field(converter=tuple)
    data_columns: tuple[str, ...] = attrs.field(converter=tuple)
    data_types: tuple[pa.DataType, ...] = attrs.field(converter=tuple, eq=False)
    base_row_id_type: pa.DataType | None = attrs.field(default=None, eq=False)
    statement: str = "INSERT"
    added_columns: tuple[ColumnMetadata, ...] = attrs.field(default=(), converter=tuple, eq=False)
    """MERGE WITH SCHEMA EVOLUTION: columns every child adds in the commit, then the registry."""


@attrs.frozen(kw_only=True)
class PartitionedFragment:
    leaf_id: int
    fragments: tuple[Any, ...] = attrs.field(converter=tuple)
