"""What the driver resolves a journal index to: the index handle, and where to cut and bound its key space.

``JournalMetadata.resolve_index`` (``_scan_planning``) builds a ``JournalIndexHandle`` from the snapshot's file
rows, cut points between the base files' key ranges (``partition_points``) and the key's bounds
(``key_range``), from catalog statistics alone. The lookups on executors (``_index``) read through the handle
with ``keyed_splits`` from ``_scan_planning``; keeping the handle here lets both modules import it without
importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mergekit.spi import ConnectorIndexHandle

from ._handles import JournalTableHandle
from ._snapshots import FileRow

__all__ = ["JournalIndexHandle", "partition_points", "key_range"]


@attrs.frozen(kw_only=True)
class JournalIndexHandle(ConnectorIndexHandle):
    """The snapshot's files (catalog rows with key ranges) of a table with a single-column key."""

    table_handle: JournalTableHandle
    files: tuple[FileRow, ...] = attrs.field(converter=tuple)


def partition_points(files: Sequence[FileRow]) -> tuple[Any, ...]:
    """Where to cut the key space between files: the lowest key of each file after the first, when the
    files' key ranges (in key order) do not overlap; else none. Files of a bulk load or a compaction are
    disjoint ranges of about the same size, so lookups of keys between two points read one file."""
    ranged = sorted((f for f in files if f.key_min is not None and f.row_count), key=lambda f: f.key_min)
    points: list[Any] = []
    for before, after in zip(ranged, ranged[1:], strict=False):
        if not after.key_min > before.key_max:
            return ()
        points.append(after.key_min)
    return tuple(points)


def key_range(files: Sequence[FileRow]) -> tuple[Any, Any] | None:
    """Bounds of the first key column over every file (tombstones included: a lookup of a deleted key
    reads its file too), or None when a file with rows has no statistics."""
    ranged = [f for f in files if f.row_count]
    if not ranged or any(f.key_min is None or f.key_max is None for f in ranged):
        return None
    return min(f.key_min for f in ranged), max(f.key_max for f in ranged)
