"""Result tables of the statements that describe a table (``DESCRIBE HISTORY``). No Spark."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa

from mergekit.spi import TableCommit

__all__ = ["history_table"]


def history_table(commits: Sequence[TableCommit]) -> pa.Table:
    """``DESCRIBE HISTORY``: one row per commit, newest first, with Delta's leading columns."""
    ordered = sorted(commits, key=lambda c: c.version, reverse=True)
    return pa.table(
        {
            "version": pa.array([c.version for c in ordered], pa.int64()),
            "timestamp": pa.array([c.committed_at for c in ordered], pa.timestamp("us", tz="UTC")),
            "operation": pa.array([c.operation for c in ordered], pa.string()),
            "operation_metrics": pa.array([json.dumps(dict(c.metrics), sort_keys=True) for c in ordered], pa.string()),
        }
    )
