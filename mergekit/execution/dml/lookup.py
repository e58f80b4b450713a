"""MERGE by index lookups: the join, the CASE and the writers in one Python task per share of the source.

For a MERGE whose ON clause is one equality between a target column the connector indexes
(``ConnectorMetadata.resolve_index``) and a source expression, and whose WHEN clauses use only what evaluates
the same in Arrow as in Spark (``Expression.lowered``), the target is never scanned as a whole:

1. Spark reads the source once and sends each row, by its key, to the task of the key's range (the
   connector's ``partition_points``, else a hash of the key): one shuffle, of the source only.
2. Each task looks up the target rows of its distinct keys (``ConnectorIndex.lookup``), joins them to its source
   rows in Arrow (a hash join), evaluates the WHEN clauses there (:mod:`mergekit.execution.arrow.cases`: first match
   wins, as the CASE of the Spark plan), and hands the merge rows to the same :class:`~.pipeline.MergeWriter` as
   the Spark plan (duplicate-match check, row change processor, merge sink).

Every source row with a given key is in one task, so every merge row of a target row is produced there and
the duplicate-match check needs no further shuffle. Statements outside that shape run the Spark plan
(:mod:`.merge_rows`, :mod:`.pipeline`); the result is the same either way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.execution.arrow.cases import JoinedRows, LookupProgram, evaluate_cases
from mergekit.execution.arrow.compiler import value_family
from mergekit.execution.lazy_pyspark import F, T, is_dataframe
from mergekit.execution.scan import conform_page
from mergekit.execution.session import ARROW_BATCH_ROWS, statement_tasks
from mergekit.planner import MergePlan
from mergekit.spi import (
    ColumnHandle,
    ConnectorIndexHandle,
    ConnectorIndexProvider,
    ConnectorMergeTableHandle,
    ConnectorPageSinkProvider,
    ConnectorSession,
)

from .merge_rows import q
from .pipeline import WRITER_OUTPUT, DmlStats, MergeWriter, gather

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["run_lookup_merge", "KEY", "arrow_join_type", "binary_collation", "bucket_expr", "sorted_distinct"]

KEY = "$key"


# ---- the task --------------------------------------------------------------------------------------------


@attrs.frozen
class _LookupMerge:
    """One task: its share of the source in, the writer's one row (fragments, counts) out."""

    program: LookupProgram
    index_provider: ConnectorIndexProvider
    index_handle: ConnectorIndexHandle
    key_column: ColumnHandle
    output_columns: tuple[ColumnHandle, ...]
    join_type: pa.DataType
    source_schema: pa.Schema
    writer: MergeWriter
    page_rows: int
    whole: bool = False  # every row the index returns matches the one source row (an UPDATE or DELETE)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pages = list(batches)
        source = pa.Table.from_batches(pages) if pages else self.source_schema.empty_table()
        if not source.schema.equals(self.source_schema):
            source = source.select(self.source_schema.names).cast(self.source_schema)
        yield from self.writer(self._merge_rows(source))

    def _merge_rows(self, source: pa.Table) -> Iterator[pa.RecordBatch]:
        if not source.num_rows:
            return
        if self.whole:  # the index is the table read whole (.scan_index): asked for every row
            target = self._lookup(pa.array([], self.key_column.type))
            ti = pa.array(np.arange(target.num_rows, dtype=np.int64))
            si = pa.array(np.zeros(target.num_rows, dtype=np.int64))
            yield from evaluate_cases(self.program, JoinedRows(source, target, si, ti), self.page_rows)
            return
        # merge rows in key order: the sink writes each case's rows as a sorted run, so the connector's commit
        # finds its target rows in index order (PostgreSQL applies a sorted staging table in 60% of the time)
        source = source.take(pc.sort_indices(source.column(KEY)))
        keys = source.column(KEY)
        wanted = sorted_distinct(keys.drop_null()) if keys.null_count < len(keys) else pa.array([], keys.type)
        target = self._lookup(wanted)
        target_keys = target.column(self.key_column.name).cast(self.join_type)
        left = pa.table({"k": keys, "si": pa.array(np.arange(source.num_rows, dtype=np.int64))})
        right = pa.table({"k": target_keys, "ti": pa.array(np.arange(target.num_rows, dtype=np.int64))})
        pairs = left.join(right, keys="k", join_type="left outer", use_threads=False)
        si = pairs.column("si").combine_chunks()
        ti = pairs.column("ti").combine_chunks()
        order = pa.array(np.argsort(si.to_numpy(), kind="stable"))  # the join's output order is unspecified
        si, ti = si.take(order), ti.take(order)
        yield from evaluate_cases(self.program, JoinedRows(source, target, si, ti), self.page_rows)

    def _lookup(self, wanted: pa.Array) -> pa.Table:
        schema = pa.schema([pa.field(c.name, c.type) for c in self.output_columns])
        if not len(wanted) and not self.whole:
            return schema.empty_table()
        index = self.index_provider.get_index(
            session=self.writer.session,
            index_handle=self.index_handle,
            lookup_columns=(self.key_column,),
            output_columns=self.output_columns,
        )
        wanted = _representable(wanted, self.key_column.type)  # a larger key matches no narrower one
        source = index.lookup(pa.table({self.key_column.name: wanted.cast(self.key_column.type)}))
        try:
            pages = [p for p in source if p.num_rows]
        finally:
            source.close()
        if not pages:
            return schema.empty_table()
        return pa.Table.from_batches([conform_page(p, schema) for p in pages], schema=schema)


def sorted_distinct(values: pa.ChunkedArray) -> pa.Array:
    """``values`` (no nulls) sorted and without repeats. Integers and dates through NumPy: a sort and a
    comparison of neighbours take 0.06 s for a million keys, Arrow's hash ``unique`` and sort three times that."""
    if values.null_count == 0 and (pa.types.is_integer(values.type) or pa.types.is_date(values.type)):
        ordered = np.sort(values.to_numpy())
        if len(ordered) > 1:
            ordered = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
        return pa.array(ordered, type=values.type)
    return pc.unique(values).sort()


def _representable(values: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """The integer ``values`` that ``arrow_type`` (a narrower integer) can hold; other values as they are."""
    if not pa.types.is_integer(arrow_type) or values.type == arrow_type:
        return values
    bounds = np.iinfo(arrow_type.to_pandas_dtype())
    low, high = pa.scalar(int(bounds.min), values.type), pa.scalar(int(bounds.max), values.type)
    return values.filter(pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high)))


# ---- the driver ------------------------------------------------------------------------------------------


def spark_literal(value: Any) -> str | None:
    """A partition point as a Spark SQL literal (None: a type this does not render)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"CAST({value} AS BIGINT)"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"DATE'{value.isoformat()}'"
    return None


def bucket_expr(points: Sequence[Any], key_range: tuple[Any, Any] | None, partitions: int) -> tuple[str, int] | None:
    """Spark SQL giving each row the task of its key: ranges cut at up to ``partitions - 1`` of ``points``
    (evenly spaced among them), keys outside ``key_range`` (they find nothing) spread over all ranges by hash,
    NULL keys to the first; and the number of ranges. None without usable points."""
    n = len(points)
    if not n or partitions < 2:
        return None
    chosen = sorted({points[min(n - 1, max(0, round(i * (n + 1) / partitions) - 1))] for i in range(1, partitions)})
    literals = [spark_literal(p) for p in chosen]
    if any(lit is None for lit in literals):
        return None
    ranges = len(literals) + 1
    key = q(KEY)
    spread = f"WHEN {key} IS NULL THEN 0"  # matches nothing; routed deterministically, as a retried task must
    bounds = [spark_literal(b) for b in key_range] if key_range is not None else [None, None]
    if bounds[0] is not None and bounds[1] is not None:
        spread += f" WHEN {key} < {bounds[0]} OR {key} > {bounds[1]} THEN pmod(hash({key}), {ranges})"
    whens = " ".join(f"WHEN {key} < {lit} THEN {i}" for i, lit in enumerate(literals))
    return f"CASE {spread} {whens} ELSE {ranges - 1} END", ranges


def run_lookup_merge(
    spark: SparkSession | None,
    plan: MergePlan,
    program: LookupProgram,
    source: DataFrame,
    *,
    join_type: pa.DataType,
    index_provider: ConnectorIndexProvider,
    index_handle: ConnectorIndexHandle,
    partition_points: Sequence[Any],
    key_range: tuple[Any, Any] | None,
    key_column: ColumnHandle,
    output_columns: Sequence[ColumnHandle],
    provider: ConnectorPageSinkProvider,
    session: ConnectorSession,
    merge_handle: ConnectorMergeTableHandle,
    stats: dict[str, Any],
    driver: bool = False,
    whole: bool = False,
) -> tuple[list[Any], DmlStats]:
    """Run the lookup plan over ``source`` (the source columns the cases read plus ``$key``, the join key in
    the type both sides are compared in). Returns every sink's fragments and counts, as ``run_merge_pipeline``.
    ``driver``: the driver tier (a small source): the source's rows collected, then the one task in this process.
    ``spark`` is None for a source the driver tier evaluated itself (no Spark is used: none may have started)."""
    writer = MergeWriter.of(plan, provider, session, merge_handle, processing=True)
    batch = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") if spark is not None else None
    page_rows = int(batch or ARROW_BATCH_ROWS)  # (no session: mergekit's own setting)

    def task(source_schema: pa.Schema) -> _LookupMerge:
        return _LookupMerge(
            program=program,
            index_provider=index_provider,
            index_handle=index_handle,
            key_column=key_column,
            output_columns=tuple(output_columns),
            join_type=join_type,
            source_schema=source_schema,
            writer=writer,
            page_rows=page_rows,
            whole=whole,
        )

    if driver:
        stats["ranges"] = 0  # no task: the engine's process
        if is_dataframe(source):  # the rows of Spark's small source
            rows, source_schema = source.toArrow(), _schema(source)
        else:  # a source the driver tier evaluated itself (dml/driver.py)
            rows = source.table()
            source_schema = rows.schema
        out = task(source_schema)(iter(rows.to_batches()))
        return gather([row for batch in out for row in batch.to_pylist()])
    assert spark is not None and is_dataframe(source)
    partitions = statement_tasks(spark)  # the machine's parallelism, not the session's shuffle setting
    bucketing = bucket_expr(partition_points, key_range, partitions)
    if bucketing is not None:
        expr, ranges = bucketing
        routed = source.repartitionById(ranges, F.expr(expr))
        stats["ranges"] = ranges
    else:
        routed = source.repartition(partitions, F.col(q(KEY)))
        stats["ranges"] = None
    out = routed.mapInArrow(task(_schema(source)), WRITER_OUTPUT)
    return gather(out.collect())


def _schema(source: DataFrame) -> pa.Schema:
    """The Arrow schema of a Spark source's rows, as a lookup task receives them."""
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.schema([pa.field(f.name, to_arrow_type(f.dataType), True) for f in source.schema.fields])


def arrow_join_type(source: T.DataType, target: pa.DataType) -> pa.DataType | None:
    """The type a source key (Spark type) and a target key column (Arrow type) are compared in, when Arrow
    compares them exactly as Spark's ``=`` does: integers (as BIGINT), byte-wise strings, dates; None for
    fractions, decimals, timestamps (rounding, zones) and collated strings. Used by the lookup join and by the
    value sets of the Spark plan."""
    if isinstance(source, T.IntegralType) and pa.types.is_integer(target):
        return pa.int64()
    if isinstance(source, T.StringType) and value_family(target) == "string":
        return pa.string() if binary_collation(source) else None
    if isinstance(source, T.DateType) and pa.types.is_date32(target):
        return pa.date32()
    return None


def binary_collation(t: T.DataType) -> bool:
    """Whether a Spark type compares as Arrow does: anything but a string with a collation other than the default
    (byte-wise) one."""
    return not isinstance(t, T.StringType) or getattr(t, "collation", "UTF8_BINARY") in ("UTF8_BINARY", None)
