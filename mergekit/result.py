"""What ``Engine.execute`` returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pyarrow as pa

__all__ = ["Result"]


@attrs.frozen(kw_only=True)
class Result:
    """The outcome of one statement.

    ``row_count``: rows inserted + updated + deleted for DML, None for queries and DDL.
    ``metrics``: for DML, ``inserted``/``updated``/``deleted``, ``per_case`` (WHEN clause number ->
    counts) and ``sinks``; empty otherwise. Query rows are in ``to_arrow()`` / ``rows()``.
    """

    statement: str
    row_count: int | None = None
    metrics: Mapping[str, Any] = attrs.field(factory=dict)
    table: pa.Table | None = None
    message: str | None = None

    @property
    def columns(self) -> list[str]:
        return list(self.table.column_names) if self.table is not None else []

    def to_arrow(self) -> pa.Table:
        if self.table is not None:
            return self.table
        if self.row_count is not None:
            return pa.table({"rows": pa.array([self.row_count], pa.int64())})
        return pa.table({})

    def rows(self) -> list[tuple[Any, ...]]:
        table = self.to_arrow()
        if not table.num_columns:
            return []
        columns = [c.to_pylist() for c in table.columns]
        return list(zip(*columns, strict=True))

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.rows())
