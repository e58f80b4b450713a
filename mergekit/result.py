"""What ``Engine.execute`` returns."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pyarrow as pa

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Result", "RowSource"]


class RowSource(Protocol):
    """A query's rows, not yet read: ``Engine.execute(sql, stream=True)`` puts one in a :class:`Result`."""

    @property
    def schema(self) -> pa.Schema: ...

    def batches(self, limit: int | None = None) -> Iterator[pa.RecordBatch]:
        """The rows (at most ``limit`` of them) as record batches, read as they are iterated."""
        ...


@attrs.frozen(kw_only=True)
class Result:
    """The outcome of one statement.

    ``row_count``: rows inserted + updated + deleted for DML, None for queries and DDL.
    ``metrics``: for DML, ``inserted``/``updated``/``deleted``, ``per_case`` (WHEN clause number ->
    counts) and ``sinks``; empty otherwise. Query rows are in ``to_arrow()`` / ``rows()`` / ``to_pandas()``,
    and iterating the result yields them one tuple at a time.

    A query run with ``Engine.execute(sql, stream=True)`` holds a ``source`` instead of a ``table``: its rows
    are read from Spark only when asked for, one partition at a time by :meth:`batches` and iteration (memory
    bounded by a partition, whatever the result's size), all at once by ``to_arrow()`` / ``rows()`` (which
    keep them).
    """

    statement: str
    row_count: int | None = None
    metrics: Mapping[str, Any] = attrs.field(factory=dict)
    table: pa.Table | None = None
    message: str | None = None
    source: RowSource | None = attrs.field(default=None, repr=False)
    _read: list[pa.Table] = attrs.field(factory=list, init=False, repr=False, eq=False)

    @property
    def is_query(self) -> bool:
        """True when the statement returns rows (a query, EXPLAIN, SHOW, ...)."""
        return self.table is not None or self.source is not None

    @property
    def schema(self) -> pa.Schema:
        if self.table is not None:
            return self.table.schema
        if self.source is not None:
            return self.source.schema
        return self.to_arrow().schema

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names) if self.is_query else []

    def batches(self, max_rows: int | None = None) -> Iterator[pa.RecordBatch]:
        """The rows as Arrow record batches, at most ``max_rows`` of them (None: all).

        A streamed result reads them from Spark as they are iterated (a limit is handed to Spark, which then
        computes no more than it needs); each call reads the query's rows again."""
        if self.source is not None and not self._read:
            yield from self.source.batches(max_rows)
            return
        left = max_rows
        for batch in self.to_arrow().to_batches():
            if left is not None:
                if left <= 0:
                    return
                if batch.num_rows > left:
                    batch = batch.slice(0, left)
                left -= batch.num_rows
            yield batch

    def to_arrow(self) -> pa.Table:
        if self.table is not None:
            return self.table
        if self.source is not None:
            if not self._read:
                self._read.append(pa.Table.from_batches(list(self.source.batches()), schema=self.source.schema))
            return self._read[0]
        if self.row_count is not None:
            return pa.table({"rows": pa.array([self.row_count], pa.int64())})
        return pa.table({})

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame (pandas must be installed)."""
        return self.to_arrow().to_pandas()

    def rows(self) -> list[tuple[Any, ...]]:
        return [row for batch in self.to_arrow().to_batches() for row in _batch_rows(batch)]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        """The rows one tuple at a time; a streamed result reads them from Spark batch by batch."""
        if not self.is_query:
            yield from self.rows()
            return
        for batch in self.batches():
            yield from _batch_rows(batch)


def _batch_rows(batch: pa.RecordBatch) -> Iterator[tuple[Any, ...]]:
    if not batch.num_columns:
        return iter(())
    return zip(*(c.to_pylist() for c in batch.columns), strict=True)
