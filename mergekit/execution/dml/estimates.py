"""What Spark knows about a DataFrame before it runs (size, row width, determinism) and the source key values a
MERGE collects for dynamic pruning. The engine's only use of Spark internals (``DataFrame._jdf``) is here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from mergekit.execution.lazy_pyspark import T
from mergekit.planner import cost
from mergekit.planner.cost import SourceEstimate

from .lookup import arrow_join_type, sorted_distinct
from .merge_rows import MergeQueryBuilder

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "estimate_source_keys",
    "estimated_bytes",
    "deterministic",
    "row_width",
    "collect_column",
    "source_key_values",
]


def estimated_bytes(df: DataFrame) -> int:
    """Spark's size estimate of a DataFrame's optimized plan (no job runs); unknown is huge."""
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # e.g. Spark Connect: no estimate, no reduction
        return 1 << 62


def deterministic(df: DataFrame) -> bool:
    """Whether evaluating ``df`` twice gives the same rows (its optimized plan: pruned columns do not count)."""
    try:
        return bool(df._jdf.queryExecution().optimizedPlan().deterministic())
    except Exception:  # e.g. Spark Connect: assume not
        return False


def row_width(df: DataFrame) -> int:
    """Spark's default size of one row of ``df`` (8 for a BIGINT, 20 for a string), the unit of its estimates."""
    try:
        return int(df._jdf.schema().defaultSize())
    except Exception:  # e.g. Spark Connect
        return 8


def estimate_source_keys(keys: DataFrame) -> SourceEstimate:
    """The estimate the cost functions choose from, for the DataFrame of a MERGE source's join keys."""
    return SourceEstimate(
        key_bytes=estimated_bytes(keys), key_row_width=row_width(keys), deterministic=deterministic(keys)
    )


def collect_column(df: DataFrame) -> list[Any]:
    """The first column's values, through Arrow (100k rows as Row objects would cost a second)."""
    if isinstance(df.schema.fields[0].dataType, T.TimestampType | T.TimestampNTZType):
        return [r[0] for r in df.collect()]  # Python datetimes as Spark hands them to the rest of the engine
    return df.toArrow().column(0).to_pylist()


def source_key_values(spark: SparkSession, builder: MergeQueryBuilder) -> dict[str, frozenset[Any] | pa.Array]:
    """Dynamic pruning: for a small source, the values its join keys take, per bare target key column.
    Every target row a RIGHT-join MERGE changes has one of them, so the connector may skip files (the
    journal: by key range) and Spark may skip row groups. Up to ``KEY_VALUES_MAX`` distinct values come
    as a frozenset (``Constraint.equalities``); a larger source's (up to ``KEY_ARRAY_MAX`` rows) as a
    sorted Arrow array (``Constraint.value_sets``), for keys whose values Arrow compares as Spark does."""
    if builder.collect_key_values is None or not any(builder.key_columns):
        return {}  # e.g. more keys than are worth collecting: the DISTINCT would run over the source in vain
    found: dict[str, frozenset[Any] | pa.Array] = {}
    for i, column in enumerate(builder.key_columns):
        if column is None:
            continue
        if builder.collect_key_values == "arrow":
            if column not in builder.value_set_columns:
                continue
            array = _source_key_array(spark, builder, i, column)
            if array is not None and column not in found:  # a second key on the column: the first suffices
                found[column] = array
            continue
        rows = collect_column(spark.sql(builder.key_values_sql(i, cost.KEY_VALUES_MAX + 1)))
        if len(rows) <= cost.KEY_VALUES_MAX:
            values = frozenset(rows)
            previous = found.get(column)
            found[column] = previous & values if isinstance(previous, frozenset) else values
    return found


def _source_key_array(spark: SparkSession, builder: MergeQueryBuilder, index: int, column: str) -> pa.Array | None:
    """Every source row's value of join key ``index`` through Arrow (no DISTINCT: a MERGE source rarely
    repeats a key, and a shuffle costs more than deduplicating on the driver), sorted and distinct; None
    when its type does not compare in Arrow as in Spark or there are more than ``KEY_ARRAY_MAX``."""
    df = spark.sql(builder.key_values_sql(index))
    target = builder.plan.target.column(column)
    if target is None or arrow_join_type(df.schema.fields[0].dataType, target.type) is None:
        return None
    try:
        values = df.toArrow().column(0)
    except Exception:  # e.g. beyond spark.driver.maxResultSize: no pruning; the MERGE reports
        return None  # the source's own errors when it runs
    if len(values) > cost.KEY_ARRAY_MAX:
        return None
    return sorted_distinct(values)
