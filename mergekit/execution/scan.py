"""Reading a connector table as a Spark DataFrame, on executors.

Split path: the driver asks the connector for splits; they are pickled into a one-column DataFrame with one
partition per split, and ``mapInArrow`` runs the connector's page source on the executors. Native path: the
connector names Parquet (or other) files and Spark reads them with its own reader.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import attrs
import pyarrow as pa

from mergekit.execution.lazy_pyspark import F, cloudpickle
from mergekit.spi import (
    ColumnHandle,
    Connector,
    ConnectorPageSourceProvider,
    ConnectorSession,
    ConnectorSplit,
    ConnectorTableHandle,
    Constraint,
    NativeScan,
    NativeScanUnion,
)

from .types import spark_schema, spark_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["scan_table", "scan_stream", "conform_page"]


@attrs.frozen
class _SplitReader:
    """Runs on executors: one pickled split in, the page source's batches out."""

    provider: ConnectorPageSourceProvider
    session: ConnectorSession
    table_handle: ConnectorTableHandle
    columns: tuple[ColumnHandle, ...]
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column(0).to_pylist():
                split = cloudpickle.loads(payload)
                source = self.provider.create_page_source(
                    session=self.session, split=split, table_handle=self.table_handle, columns=self.columns
                )
                try:
                    for page in source:
                        if page.num_rows:
                            yield conform_page(page, self.schema)
                finally:
                    source.close()


def conform_page(page: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A page source's page with exactly ``schema``'s columns, in order and of its types."""
    if page.schema.names != schema.names:
        page = page.select(schema.names)
    if not page.schema.equals(schema):
        page = pa.RecordBatch.from_arrays([page.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema)
    return page


def _native_frame(
    spark: SparkSession, native: NativeScan, columns: Sequence[ColumnHandle] | None, *, guard: bool = False
) -> DataFrame:
    """One native scan as a DataFrame with ``columns`` (None: the file columns as they are). ``guard``: no
    filter above the scan may be pushed below its anti join (see :func:`scan_table`)."""
    if native.paths:
        reader = spark.read.format(native.format).options(**dict(native.options))
        df = reader.schema(spark_schema(native.schema)).load(list(native.paths))
    else:
        df = spark.createDataFrame([], spark_schema(native.schema))
    if native.row_filter:
        df = df.where(native.row_filter)
    if native.anti_join is not None:
        keys = [f"`{k}`" for k in native.anti_join.keys]
        excluded = _native_frame(spark, native.anti_join.scan, None).select(*keys)
        if native.anti_join.broadcast:
            excluded = F.broadcast(excluded)
        df = df.join(excluded, on=list(native.anti_join.keys), how="left_anti")
        if guard:
            # Spark pushes a filter through projections and below the left side of an anti join, so a
            # predicate would run on the superseded versions the join drops. It pushes nothing through a
            # sample: one that keeps every row (Bernoulli over [0, 1)) costs a random number per row.
            df = df.sample(withReplacement=False, fraction=1.0, seed=0)
    if columns is None:
        return df
    return df.select(
        *[F.expr(native.projections.get(c.name, f"`{c.name}`")).cast(spark_type(c.type)).alias(c.name) for c in columns]
    )


def _split_frame(
    spark: SparkSession,
    connector: Connector,
    session: ConnectorSession,
    table_handle: ConnectorTableHandle,
    columns: Sequence[ColumnHandle],
    splits: Sequence[ConnectorSplit],
    slices: int | None = None,
) -> DataFrame:
    schema = pa.schema([pa.field(c.name, c.type) for c in columns])
    if not splits:
        return spark.createDataFrame([], spark_schema(schema))
    payloads = [(cloudpickle.dumps(s),) for s in splits]
    # An RDD with one split per partition (or ``slices`` partitions of consecutive splits): every partition is its
    # own task, and Spark sees a relation of unknown size. (A local relation of pickled splits looks a few KB
    # large, so a join would broadcast a 10M-row table.)
    rdd = spark.sparkContext.parallelize(payloads, numSlices=min(slices or len(payloads), len(payloads)))
    split_df = spark.createDataFrame(rdd, "split binary")
    reader = _SplitReader(
        provider=connector.get_page_source_provider(),
        session=session,
        table_handle=table_handle,
        columns=tuple(columns),
        schema=schema,
    )
    return split_df.mapInArrow(reader, spark_schema(schema))


def scan_table(
    spark: SparkSession,
    connector: Connector,
    session: ConnectorSession,
    table_handle: ConnectorTableHandle,
    columns: Sequence[ColumnHandle],
    constraint: Constraint | None = None,
    *,
    stats: dict[str, object] | None = None,
    guard: bool = False,
) -> DataFrame:
    """A DataFrame with exactly ``columns`` (by handle name) of the table. ``constraint`` goes to the
    connector (``get_native_scan`` / ``get_splits``) for pruning; ``stats``, when given, receives ``splits``
    (how many splits were read through page sources) and ``files`` (how many files Spark read natively) so
    callers can show what pruning achieved, and ``enforced`` (the columns whose constraint the connector
    enforced exactly, :attr:`NativeScanUnion.enforced`).

    ``guard``: the statement has a predicate that may fail on a row (``mergekit.sql.predicates_may_fail``),
    so every filter stays above the rows a native scan drops with its anti join (a row filter is evaluated
    first in the same Spark filter, and page sources drop rows before the engine sees them). Without it,
    Spark pushes the statement's filters down to the files."""
    metadata = connector.get_metadata()
    constraint = constraint or Constraint()
    native = metadata.get_native_scan(
        session=session, table_handle=table_handle, columns=columns, constraint=constraint
    )
    if isinstance(native, NativeScan):
        native = NativeScanUnion(scans=(native,))
    if native is not None:
        splits: Sequence[ConnectorSplit] = native.splits
        if stats is not None:
            stats["splits"] = len(splits)
            stats["files"] = sum(len(n.paths) for n in native.scans)
            if native.enforced:
                stats["enforced"] = sorted(native.enforced)
        frames = [_native_frame(spark, n, columns, guard=guard) for n in native.scans if n.paths]
        if splits or not frames:
            frames.append(_split_frame(spark, connector, session, table_handle, columns, splits))
        df = frames[0]
        for other in frames[1:]:
            df = df.unionByName(other)
        return df
    splits = connector.get_split_manager().get_splits(
        session=session, table_handle=table_handle, columns=columns, constraint=constraint
    )
    if stats is not None:
        stats["splits"] = len(splits)
    return _split_frame(spark, connector, session, table_handle, columns, splits)


def scan_stream(
    spark: SparkSession,
    connector: Connector,
    session: ConnectorSession,
    table_handle: ConnectorTableHandle,
    columns: Sequence[ColumnHandle],
    splits: Sequence[ConnectorSplit],
) -> DataFrame:
    """A stream's rows from ``splits`` (``get_stream_splits``: one per commit, in commit order) as a DataFrame
    whose partitions hold consecutive splits, in that order: narrow operations over it keep the streams' arrival
    order. Twice the default parallelism of partitions at most: a task per commit would cost more in task
    start-up than in reading when a batch holds many small commits."""
    slices = max(1, 2 * spark.sparkContext.defaultParallelism)
    return _split_frame(spark, connector, session, table_handle, columns, splits, slices)
