"""What ``Engine.execute`` returns."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Result", "RowSource", "column_values"]


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
    return zip(
        *(column_values(c, name) for c, name in zip(batch.columns, batch.schema.names, strict=True)), strict=True
    )


def column_values(column: pa.Array | pa.ChunkedArray, name: str) -> list[Any]:
    """The column as Python values. A value Python cannot hold (a DATE or TIMESTAMP outside years 1 to 9999, which
    Spark and Arrow hold) fails with ``NUMERIC_VALUE_OUT_OF_RANGE`` naming the column, the value and the range, as
    Trino's and PostgreSQL's Python clients refuse such values rather than return something else."""
    try:
        return column.to_pylist()
    except (OverflowError, ValueError) as exc:
        for i in range(len(column)):
            try:
                column[i].as_py()
            except (OverflowError, ValueError):
                raise MergekitError(
                    ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, out_of_range_message(column, i, name)
                ) from exc
        raise


def value_text(column: pa.Array | pa.ChunkedArray, i: int) -> str:
    """Arrow's text of the ``i``-th value (for one that Python cannot hold)."""
    try:
        return str(column.slice(i, 1).cast(pa.string())[0].as_py())
    except (pa.ArrowException, OverflowError, ValueError):
        return "?"


def out_of_range_message(column: pa.Array | pa.ChunkedArray, i: int, name: str) -> str:
    from mergekit.spi import sql_type_name

    try:
        kind = sql_type_name(column.type).upper()
    except Exception:  # a type without a SQL name (nested): Arrow's
        kind = str(column.type)
    return (
        f"Column {name} holds {kind} {value_text(column, i)}, beyond what Python's datetime holds (years 1 to 9999): "
        f"Result.to_arrow() holds it, or CAST({name} AS VARCHAR) in the query"
    )
