"""mergekit's partitioned connector: MonetDB's updatable merge tables (seed 004) over a base connector.

A merge table is a logical table made of child tables of the base connector (the journal connector by
default). ``PARTITION BY RANGE | VALUES ON (col) | USING (expr)`` routes inserted rows to children, UPDATE
and DELETE reach every child involved, an UPDATE of the partition key moves the row, and every statement
commits all its children in one atomic commit. Reads are the union of the children, pruned by simple
predicates on the partition column. See docs/connectors/partitioned.md.

Only ``mergekit.spi``, ``mergekit.errors``, pyarrow, attrs and the standard library are imported.
"""

from __future__ import annotations

from ._connector import PartitionedConnector, PartitionedConnectorFactory
from ._handles import ROW_ID, MemberTableHandle, MergeTableHandle, PartitionedMergeHandle, SystemTableHandle
from ._metadata import SYSTEM_SCHEMA, SYSTEM_TABLES, PartitionedMetadata

__all__ = [
    "ROW_ID",
    "SYSTEM_SCHEMA",
    "SYSTEM_TABLES",
    "MemberTableHandle",
    "MergeTableHandle",
    "PartitionedConnector",
    "PartitionedConnectorFactory",
    "PartitionedMergeHandle",
    "PartitionedMetadata",
    "SystemTableHandle",
]
