"""Driver side of the partitioned connector: ``PartitionedMetadata`` (the ``ConnectorMetadata``) and its split
manager.

Plain tables are the base connector's (the journal by default); this class answers for merge tables, for
base tables attached to one (members: writes are checked against their partition) and for the system
tables ``table_partitions``, ``range_partitions`` and ``value_partitions``. Error texts follow MonetDB's
(shared/reference/seed-systems.md §2.3), with mergekit's schema names in place of ``sys``.

``PartitionedMetadata`` is composed of seven parts, one module each:

- ``_tables``: the base of the others: the registry, merge-table handles, names, columns, ``SYSTEM_TABLES``;
- ``_ddl``: plain DDL (the base connector's, guarded) and merge-table DDL (``CREATE MERGE TABLE``,
  ``ALTER TABLE ... ADD | SET | DROP TABLE``);
- ``_evolution``: ``DROP``/``RENAME COLUMN`` and ``SET DATA TYPE`` (of a merge table: every child and the registry);
- ``_constraints``: CHECK constraints (a merge table's hold for every child) and column defaults;
- ``_reads``: splits and native scans (the union of the pruned children) and the system tables' rows;
- ``_writes``: row ids, layouts and the merge protocol (one atomic commit across the children);
- ``_views``: views and ``SET PROPERTIES`` (the base's), keeping merge tables and views in one namespace.

The parts share no method names, so the order of the bases only fixes the MRO.
"""

from __future__ import annotations

from collections.abc import Sequence

from mergekit.spi import (
    ColumnHandle,
    ConnectorSession,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
    Constraint,
)

from ._constraints import ConstraintMetadata
from ._ddl import DdlMetadata
from ._evolution import EvolutionMetadata
from ._reads import ReadMetadata
from ._tables import SYSTEM_SCHEMA, SYSTEM_TABLES
from ._views import ViewsMetadata
from ._writes import WriteMetadata

__all__ = ["PartitionedMetadata", "PartitionedSplitManager", "SYSTEM_TABLES", "SYSTEM_SCHEMA"]


class PartitionedMetadata(
    ConstraintMetadata, DdlMetadata, EvolutionMetadata, ReadMetadata, WriteMetadata, ViewsMetadata
):
    """One catalog's metadata: merge tables from the registry, everything else delegated to the base
    connector's metadata.

    Constructed once per connector, on the driver: ``PartitionedMetadata(catalog_name=..., base=<the base
    Connector>, registry=<the partition registry>)``.
    """


class PartitionedSplitManager(ConnectorSplitManager):
    """Plans splits on the driver through ``PartitionedMetadata.get_splits`` (a merge table: its pruned
    children's splits, wrapped)."""

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
