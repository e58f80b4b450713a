"""A query's rows read from Spark as Arrow record batches, one partition at a time (``Result.source``).

``DataFrame.toArrow()`` collects every partition at once, so a large result has to fit in the driver twice
(Spark's batches and pyarrow's table). :class:`SparkArrowSource` instead asks the JVM for the DataFrame's
Arrow batches partition by partition (``toArrowBatchRdd`` served by ``PythonRDD.toLocalIteratorAndServe``,
what ``DataFrame.toLocalIterator`` does with pickled rows): one Spark job per partition, run when the
iteration reaches it, so memory stays bounded by a partition and the first rows arrive after the first
partition's job. A limit becomes ``df.limit(n)``: Spark then computes no more than the rows it needs (the top
``n`` of an ORDER BY, not the whole sort).

Files are read in partitions of at most :data:`STREAM_PARTITION_BYTES` (Spark's own default is 128 MB, a
million rows and more): a partition is the unit of both the wait for the first rows and the memory a streamed
read holds. ``SELECT * FROM t`` over a 3M-row journal table (four Parquet files, 47 MB) got its first rows after
1.7 s warm in 3 partitions, 0.55 s in 12, for about the same time to read all rows (3.8 s, 3.9-4.4 s).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa

from mergekit.errors import MergekitError
from mergekit.execution.failures import translate_error
from mergekit.execution.lazy_pyspark import pandas_types
from mergekit.execution.session import conf_for_block

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkArrowSource"]

#: rows per Arrow batch sent from the JVM
BATCH_ROWS = 65536
#: the largest file partition of a streamed read (Spark's ``spark.sql.files.maxPartitionBytes``, when the session's
#: own is larger): 4 MB, Spark's smallest split anyway (its ``openCostInBytes``)
STREAM_PARTITION_BYTES = 4 * 1024 * 1024
_MAX_PARTITION_BYTES = "spark.sql.files.maxPartitionBytes"


class SparkArrowSource:
    """The rows of ``df``, read lazily (see the module). Errors come out as :class:`MergekitError`.

    ``df`` is analysed when it is created (``spark.sql``), so it keeps reading the temp views its statement
    bound even after the statement dropped them."""

    def __init__(self, df: DataFrame, zones: Sequence[str | None] = ()) -> None:
        self.df = df
        # Timestamps with time zone come as UTC instants, like DataFrame.toArrow(); plain (not large) strings.
        self._wire: pa.Schema = pandas_types.to_arrow_schema(
            df.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC", prefers_large_types=False
        )
        self.schema = in_zones(self._wire, zones)  # each column's values in its expression's zone

    def batches(self, limit: int | None = None) -> Iterator[pa.RecordBatch]:
        from pyspark.serializers import NoOpSerializer
        from pyspark.util import _local_iterator_from_socket

        df = self.df if limit is None else self.df.limit(max(limit, 0))
        try:
            spark = df.sparkSession
            with _small_file_partitions(spark):  # the scan's partitions are made here, when the plan executes
                jrdd = df._jdf.toArrowBatchRdd(BATCH_ROWS, "UTC", True, False)
            sock_info = spark.sparkContext._jvm.PythonRDD.toLocalIteratorAndServe(jrdd, False)  # type: ignore[union-attr]
            for blob in _local_iterator_from_socket(sock_info, NoOpSerializer()):
                batch = pa.ipc.read_record_batch(pa.py_buffer(blob), self._wire)
                yield batch if batch.schema == self.schema else batch.cast(self.schema)
        except MergekitError:
            raise
        except Exception as exc:  # Spark, py4j, the query's runtime errors (division by zero, overflow, ...)
            raise translate_error(exc) from exc


def in_zones(schema: pa.Schema, zones: Sequence[str | None]) -> pa.Schema:
    """``schema`` with each ``timestamp with time zone`` column in the zone of the expression that computed it
    (``TIMESTAMP '... +02:00'``, ``AT TIME ZONE``): the same instants, shown in that zone (Trino keeps a value's zone;
    UTC when the query's types do not say, or its values come from several zones)."""
    fields = []
    for i, f in enumerate(schema):
        zone = zones[i] if i < len(zones) else None
        if zone and zone != "*" and pa.types.is_timestamp(f.type) and f.type.tz is not None:
            f = f.with_type(pa.timestamp(f.type.unit, tz=zone))
        fields.append(f)
    return pa.schema(fields, metadata=schema.metadata)


@contextmanager
def _small_file_partitions(spark: SparkSession) -> Iterator[None]:
    """``spark.sql.files.maxPartitionBytes`` at most :data:`STREAM_PARTITION_BYTES` for the block (session-wide, as
    ``applied_conf``'s settings are), then as it was."""
    conf = spark.conf
    old = conf.get(_MAX_PARTITION_BYTES, None)
    current = _bytes(old) if old is not None else 128 * 1024 * 1024
    if current is not None and current <= STREAM_PARTITION_BYTES:
        yield
        return
    with conf_for_block(spark, _MAX_PARTITION_BYTES, str(STREAM_PARTITION_BYTES)):
        yield


def _bytes(text: str) -> int | None:
    """A Spark byte size (``134217728``, ``128m``, ``1g``), or None when it is not one."""
    units = {"b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}
    value = text.strip().lower()
    digits = value.rstrip("bkmgt")
    try:
        return int(digits) * units.get(value[len(digits) :] or "b", 0) or None
    except ValueError:
        return None
