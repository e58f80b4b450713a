"""A query's rows read from Spark as Arrow record batches, one partition at a time (``Result.source``).

``DataFrame.toArrow()`` collects every partition at once, so a large result has to fit in the driver twice
(Spark's batches and pyarrow's table). :class:`SparkArrowSource` instead asks the JVM for the DataFrame's
Arrow batches partition by partition (``toArrowBatchRdd`` served by ``PythonRDD.toLocalIteratorAndServe``,
what ``DataFrame.toLocalIterator`` does with pickled rows): one Spark job per partition, run when the
iteration reaches it, so memory stays bounded by a partition and the first rows arrive after the first
partition's job. A limit becomes ``df.limit(n)``: Spark then computes no more than the rows it needs (the top
``n`` of an ORDER BY, not the whole sort).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.serializers import NoOpSerializer
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.util import _local_iterator_from_socket

from mergekit.errors import MergekitError
from mergekit.execution.errors import translate_error

__all__ = ["SparkArrowSource"]

#: rows per Arrow batch sent from the JVM
BATCH_ROWS = 65536


class SparkArrowSource:
    """The rows of ``df``, read lazily (see the module). Errors come out as :class:`MergekitError`.

    ``df`` is analysed when it is created (``spark.sql``), so it keeps reading the temp views its statement
    bound even after the statement dropped them."""

    def __init__(self, df: DataFrame) -> None:
        self.df = df
        # Timestamps with time zone come as UTC instants, like DataFrame.toArrow(); plain (not large) strings.
        self.schema: pa.Schema = to_arrow_schema(
            df.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC", prefers_large_types=False
        )

    def batches(self, limit: int | None = None) -> Iterator[pa.RecordBatch]:
        df = self.df if limit is None else self.df.limit(max(limit, 0))
        try:
            jrdd = df._jdf.toArrowBatchRdd(BATCH_ROWS, "UTC", True, False)
            spark = df.sparkSession
            sock_info = spark.sparkContext._jvm.PythonRDD.toLocalIteratorAndServe(jrdd, False)  # type: ignore[union-attr]
            for blob in _local_iterator_from_socket(sock_info, NoOpSerializer()):
                yield pa.ipc.read_record_batch(pa.py_buffer(blob), self.schema)
        except MergekitError:
            raise
        except Exception as exc:  # Spark, py4j, the query's runtime errors (division by zero, overflow, ...)
            raise translate_error(exc) from exc
