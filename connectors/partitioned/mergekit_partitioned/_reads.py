"""Reads of the partitioned connector: a merge table is the union of its children, pruned by partition.

A merge table's scan is its leaves' scans (the base connector's splits or native scans for each child whose
bounds can hold a row the constraint allows, ``pruned_leaves``), each child's row id wrapped as ``{leaf, row}``
so that a MERGE can route a row back to its child; its index is its leaves' (``_index``). A plain table's scan is
the base connector's. The system tables' rows are built from the registry on the driver and travel in a single
split. A stream is a plain table of the base: its commits and splits are the base's.
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
    ConnectorResolvedIndex,
    ConnectorSession,
    ConnectorSplit,
    ConnectorTableHandle,
    Constraint,
    NativeScan,
    NativeScanUnion,
    PartitionKind,
    PartitionMethod,
    StreamCommit,
    format_partition_value,
)

from ._handles import (
    ROW_ID,
    Leaf,
    Level,
    MemberTableHandle,
    MergeTableHandle,
    PartitionedSplit,
    SystemSplit,
    SystemTableHandle,
)
from ._index import LeafIndex, PartitionedIndexHandle
from ._tables import SYSTEM_TABLES, TablesMetadata

__all__ = ["ReadMetadata"]


class ReadMetadata(TablesMetadata):
    """Splits, native scans, value sets and system table rows (part of ``PartitionedMetadata``)."""

    # ---- system tables ----------------------------------------------------------------------------------------

    def system_rows(self, kind: str) -> pa.Table:
        """The rows of system table ``kind``, from the registry: ``table_partitions``, a row per partitioned
        merge table; ``range_partitions``, a row per child of a range partitioned table; ``value_partitions``, a row
        per value (and one for NULL) of each child of a list partitioned table."""
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
        """A merge table: ``_merge_table_native_scan``; a system table: none (read through its split); any other
        table: the base's."""
        if isinstance(table_handle, SystemTableHandle):
            return None
        if isinstance(table_handle, MergeTableHandle):
            return self._merge_table_native_scan(session, table_handle, columns, constraint)
        return self.bm.get_native_scan(
            session=session, table_handle=self._unwrap(table_handle), columns=columns, constraint=constraint
        )

    def resolve_index(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        index_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorResolvedIndex | None:
        """A plain table: the base's index (its rows, merge handle and sinks are the base's); a merge table:
        ``_merge_table_index``; a member (whose writes check its bounds) or a system table: none."""
        if isinstance(table_handle, MergeTableHandle):
            return self._merge_table_index(session, table_handle, index_columns, output_columns)
        if isinstance(table_handle, SystemTableHandle | MemberTableHandle):
            return None
        return self.bm.resolve_index(
            session=session, table_handle=table_handle, index_columns=index_columns, output_columns=output_columns
        )

    def _merge_table_index(
        self,
        session: ConnectorSession,
        handle: MergeTableHandle,
        index_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorResolvedIndex | None:
        """An index on one column when every leaf's base resolves one on it (``_index``): lookups route each key to
        the leaves whose bounds hold it at every level partitioned ON that column. Its cut points are the leaves'
        and the lower bounds of their ranges on the key; its key range spans the leaves' (unknown when one leaf's
        is)."""
        if len(index_columns) != 1 or not handle.leaves:
            return None
        key = index_columns[0].name
        levels = {lvl.table_id: lvl for lvl in handle.levels}
        leaves: list[LeafIndex] = []
        points: set[Any] = set()
        ranges: list[tuple[Any, Any] | None] = []
        for leaf in handle.leaves:
            columns, _ = self._base_columns(session, leaf.handle, [*index_columns, *output_columns])
            resolved = self.bm.resolve_index(
                session=session, table_handle=leaf.handle, index_columns=columns[:1], output_columns=columns[1:]
            )
            if resolved is None:
                return None
            routes = [b for table_id, b in leaf.path if table_id in levels and levels[table_id].scheme.column == key]
            leaves.append(
                LeafIndex(
                    leaf_id=leaf.leaf_id,
                    index_handle=resolved.index_handle,
                    columns=[
                        (c.name, base) for c, base in zip([*index_columns, *output_columns], columns, strict=True)
                    ],
                    routes=routes,
                )
            )
            points.update(resolved.partition_points)
            points.update(b.minimum for b in routes if b.kind is PartitionKind.RANGE and b.minimum is not None)
            ranges.append(resolved.key_range)
        known = [r for r in ranges if r is not None]
        key_range = (min(r[0] for r in known), max(r[1] for r in known)) if len(known) == len(ranges) else None
        try:
            cuts = tuple(sorted(points))
        except TypeError:  # values the base and the bounds type differently: no preference
            cuts = ()
        return ConnectorResolvedIndex(
            index_handle=PartitionedIndexHandle(key=key, leaves=leaves), partition_points=cuts, key_range=key_range
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
        """A system table: one split holding its rows (Arrow IPC); a merge table: its pruned leaves' base splits,
        each wrapped in a ``PartitionedSplit`` (its leaf and the base's row id column); any other table: the base's."""
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
        """``columns`` as the base's handles of a child's columns, the merge table's row id replaced by the child's
        own row id column (also returned; None when the row id is not read)."""
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

    # ---- streams --------------------------------------------------------------------------------------------

    def _stream_base(self, table_handle: ConnectorTableHandle) -> ConnectorTableHandle:
        """The base's handle of a stream (the base's own table); a merge or system table is not a stream."""
        if isinstance(table_handle, MergeTableHandle | SystemTableHandle):
            raise MergekitError(ErrorCode.STREAM_NOT_ALLOWED, f"'{table_handle.table.table.upper()}' is not a stream")
        return self._unwrap(table_handle)

    def get_job_batch(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, job: str) -> int | None:
        """The base's, for a plain table (its commits are the base's). A merge table is not a streaming job's target:
        one batch would commit into several children."""
        if isinstance(table_handle, MergeTableHandle | SystemTableHandle):
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                f"Merge table {table_handle.table} cannot be the target of a streaming job (its batches would "
                "commit into several children)",
            )
        return self.bm.get_job_batch(session=session, table_handle=self._unwrap(table_handle), job=job)

    def get_stream_commits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        after: int | None = None,
        up_to: int | None = None,
    ) -> Sequence[StreamCommit]:
        """The base's: a stream is a plain table of the base connector."""
        return self.bm.get_stream_commits(
            session=session, table_handle=self._stream_base(table_handle), after=after, up_to=up_to
        )

    def get_stream_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        after: int | None,
        up_to: int,
    ) -> Sequence[ConnectorSplit]:
        """The base's splits, read by the base's page source (``PartitionedPageSourceProvider`` passes them on)."""
        return self.bm.get_stream_splits(
            session=session, table_handle=self._stream_base(table_handle), columns=columns, after=after, up_to=up_to
        )
