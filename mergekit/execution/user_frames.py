"""What crosses from the caller's Spark session into a statement: DataFrames, read as that session shows them.

mergekit's statements run with the session zone UTC (:data:`~.session.REQUIRED_CONF`); the caller's session may be
in any zone (Spark's default is the JVM's). A DataFrame the caller hands over (``register_dataframe``, the MERGE
builder's source, ``insert_arrow``'s fallback) means what the caller's session shows for it:

- a ``TIMESTAMP`` (Spark's ``TimestampType``, an instant) is shown in the caller's zone: it becomes a ``TIMESTAMP
  WITH TIME ZONE`` in that zone, so a cast to ``TIMESTAMP`` (an INSERT into such a column) keeps the wall clock the
  caller saw (Trino's rule);
- a ``TIMESTAMP_NTZ`` is a wall clock: it becomes an instant in the caller's zone where a ``TIMESTAMP WITH TIME
  ZONE`` is needed (Trino's rule, with the caller's session as the session).

Both are told to the SQL layer as zoned column types (``mergekit.sql.zoned_type_text``). And where Spark itself
reads the session zone only when the DataFrame runs (parsing CSV or JSON text, converting a Python function's
pandas values, reading JDBC), the DataFrame is planned under the caller's zone before the statement uses it
(:func:`in_callers_zone`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
import pyarrow as pa

from mergekit.execution.lazy_pyspark import T
from mergekit.spi import sql_type_name
from mergekit.sql import zoned_type_text

from .types import kept_by_spark, spark_schema, trino_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["UserFrame", "frame_schema", "in_callers_zone"]

_ZONE_KEY = "spark.sql.session.timeZone"
# Plan nodes whose evaluation reads the session zone when the plan runs rather than when it is analysed.
_READS_ZONE_WHEN_RUN = re.compile(
    r"\bRelation \[[^\]]*\] (csv|json|xml|text)\b|JDBCRelation|ArrowEvalPython|BatchEvalPython|InPandas|PythonDataSource"
)


@attrs.frozen(eq=False)
class UserFrame:
    """A DataFrame registered by name (or an Arrow table: ``register_arrow``), and the zone of each timestamp
    column whose zone is not the caller's session's (an Arrow column's: ``arrow_zones``).

    An Arrow table becomes a DataFrame only when a statement on the Spark tier reads it (:meth:`dataframe`, once);
    the driver tier reads :attr:`arrow` as it is."""

    df: DataFrame | None
    zones: Mapping[str, str | None] = attrs.field(factory=dict)
    arrow: pa.Table | None = None
    _made: list[DataFrame] = attrs.field(factory=list, init=False, repr=False)

    def dataframe(self, spark: SparkSession) -> DataFrame:
        if self.df is not None:
            return self.df
        if not self._made:
            assert self.arrow is not None
            self._made.append(spark.createDataFrame(self.arrow, schema=spark_schema(self.arrow.schema)))
        return self._made[0]

    @property
    def spark_fields(self) -> list[T.StructField]:
        if self.df is not None:
            return list(self.df.schema.fields)
        assert self.arrow is not None
        return list(spark_schema(self.arrow.schema).fields)


def frame_schema(frame: UserFrame, user_zone: str | None) -> dict[str, str]:
    """Trino type text of each column of the frame, timestamps with the zone their values are in."""
    if frame.arrow is not None and all(kept_by_spark(t) for t in frame.arrow.schema.types):
        return {f.name: sql_type_name(f.type) for f in frame.arrow.schema}  # (Spark's names, without pyspark)
    out = {}
    for f in frame.spark_fields:
        text = trino_name(f.dataType)
        if isinstance(f.dataType, T.TimestampType | T.TimestampNTZType):
            text = zoned_type_text(text, frame.zones.get(f.name, user_zone))
        out[f.name] = text
    return out


def in_callers_zone(spark: SparkSession, df: DataFrame, user_zone: str | None) -> DataFrame:
    """``df`` planned under the caller's zone when its evaluation reads the session zone at run time (CSV/JSON text,
    pandas functions, JDBC), so it yields what the caller's session shows; else ``df`` itself.

    Called inside a statement (session zone UTC): the plan is made with the caller's zone set for that moment and
    kept (a lazy local checkpoint: nothing runs now, the rows are read once, when the statement first needs them).
    """
    if user_zone is None:
        return df
    try:
        plan = df._jdf.queryExecution().optimizedPlan().toString()
    except Exception:  # not a classic DataFrame (Spark Connect): nothing to inspect
        return df
    if not _READS_ZONE_WHEN_RUN.search(plan):
        return df
    conf = spark.conf
    current = conf.get(_ZONE_KEY)
    conf.set(_ZONE_KEY, user_zone)
    try:
        return df.localCheckpoint(eager=False)
    finally:
        conf.set(_ZONE_KEY, current)
