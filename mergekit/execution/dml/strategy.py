"""The one physical decision of a DML statement (``mergekit.planner.cost`` over Spark's estimates), before
anything begins: the Spark plan (a RIGHT or FULL join, with the reductions the estimates pay for) or MERGE by
index lookups (:mod:`.lookup`), prepared here when the connector, the key and every WHEN clause allow it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import pyarrow as pa

from mergekit.execution.arrow.cases import compile_lookup
from mergekit.execution.context import StatementContext
from mergekit.execution.lazy_pyspark import F, T, pandas_types
from mergekit.planner import (
    JoinKind,
    cost,
    driver_tier_enabled,
)
from mergekit.planner.physical import IndexLookup, InsertFromSource, MergeStrategy, SparkJoin, TargetScan
from mergekit.spi import (
    ColumnHandle,
    ConnectorIndexProvider,
    ConnectorResolvedIndex,
    ConnectorTableHandle,
    sql_type_name,
)

from .estimates import estimate_source_keys
from .lookup import KEY, arrow_join_type, binary_collation
from .merge_rows import MergeQueryBuilder, q

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

if TYPE_CHECKING:
    from mergekit.execution.dml.plan import PlannedDml

__all__ = ["LookupPrepared", "choose_strategy", "prepare_lookup"]


@attrs.define(kw_only=True)
class LookupPrepared:
    """What an index lookup needs that was prepared while planning (Spark objects: not part of the plan)."""

    source: DataFrame
    program: Any
    join_type: pa.DataType
    key_handle: ColumnHandle
    handle: ConnectorTableHandle  # the table handle the index was resolved for
    resolved: ConnectorResolvedIndex
    index_provider: ConnectorIndexProvider | None = None  # None: the connector's; else the driver's scan of the table
    whole: bool = False  # every row the scan reads is matched with the one source row (an UPDATE or DELETE)


def choose_strategy(
    ctx: StatementContext, planned: PlannedDml
) -> tuple[MergeStrategy, MergeQueryBuilder, LookupPrepared | None]:
    """The one physical decision (``mergekit.planner.cost`` over Spark's estimates), before anything begins."""
    plan, builder, table = planned.plan, planned.builder, planned.table
    if plan.join is JoinKind.SOURCE:
        return InsertFromSource(), builder, None
    if plan.join is JoinKind.SCAN:
        return TargetScan(), builder, None
    join = "FULL" if plan.join is JoinKind.FULL else "RIGHT"
    if not (builder.join_keys and plan.join is JoinKind.RIGHT) or plan.dedup is not None:
        return SparkJoin(join=join), builder, None
    estimate = estimate_source_keys(ctx.spark.sql(builder.join_keys_sql()))
    value_set_columns: frozenset[str] = frozenset()
    if cost.wants_value_sets(estimate):
        value_set_columns = table.connector.get_metadata().get_value_set_columns(
            session=ctx.session(table.catalog), table_handle=table.handle
        )
    reductions = cost.join_reductions(estimate, key_columns=builder.key_columns, value_set_columns=value_set_columns)
    builder = attrs.evolve(
        builder,
        reduce_target=reductions.reduce_target,
        collect_key_values=reductions.collect_key_values,
        value_set_columns=reductions.value_set_columns,
    )
    spark_join = SparkJoin(join=join, reductions=reductions, estimate=estimate)
    if not cost.lookup_candidate(
        estimate,
        join_keys=len(builder.join_keys),
        on_conjuncts=plan.on.conjunct_count if plan.on is not None else 0,
        key_column=builder.key_columns[0] if builder.key_columns else None,
    ):
        return spark_join, builder, None
    if planned.added_columns:  # the index reads the table's columns, not the ones the statement adds
        return attrs.evolve(spark_join, lookup_declined="the MERGE adds columns (schema evolution)"), builder, None
    prepared, declined = prepare_lookup(ctx, planned, builder, table.handle)
    if prepared is None:
        return attrs.evolve(spark_join, lookup_declined=declined), builder, None
    strategy = IndexLookup(
        key_column=prepared.key_handle.name,
        join_type=str(prepared.join_type),
        estimate=estimate,
        fallback=spark_join,
        tier="driver" if driver_tier_enabled(ctx.properties) and cost.driver_lookup(estimate) else "spark",
    )
    return strategy, builder, prepared


def prepare_lookup(
    ctx: StatementContext, planned: PlannedDml, builder: MergeQueryBuilder, handle: ConnectorTableHandle
) -> tuple[LookupPrepared | None, str]:
    """A MERGE by index lookups (:mod:`mergekit.execution.dml.lookup`) is possible when the connector has an index on
    the ON clause's target column, the key compares in Arrow as in Spark and every WHEN clause evaluates in Arrow;
    else (None, why not)."""
    plan, table, columns = planned.plan, planned.table, planned.scan_columns
    if plan.target.insert_layout is not None or plan.target.update_layout is not None:
        return None, "writers must receive rows routed by the connector's layout"
    if plan.check_constraints:
        return None, "the table has CHECK constraints (evaluated by the Spark plan)"
    key_name = builder.key_columns[0]
    key_handle = next((c for c in columns if c.name == key_name), None)
    if key_handle is None:
        return None, f"no column handle for {key_name}"
    probe = ctx.spark.sql(f"SELECT *, {builder.join_keys[0][1]} AS {q(KEY)} FROM {builder.source_sub()}")
    fields = [f for f in probe.schema.fields if f.name != "$spresent"]
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        return None, "the source has duplicate column names"
    source_types: dict[str, pa.DataType] = {}
    for f in fields[:-1]:
        if not binary_collation(f.dataType):
            continue  # compares by its collation in Spark: a case reading it runs the Spark plan
        try:
            source_types[f.name] = pandas_types.to_arrow_type(f.dataType)
        except Exception:  # a type Arrow lacks: such a column cannot be read by the cases
            continue
    join_type = arrow_join_type(fields[-1].dataType, key_handle.type)
    if join_type is None:
        return None, f"the key {key_name} does not compare in Arrow as in Spark"
    type_names = {c.name: c.type_name or sql_type_name(c.type) for c in plan.target.columns}
    program = compile_lookup(plan, source_types, columns, type_names)
    if program is None:
        return None, "a WHEN clause does not evaluate in Arrow"
    resolved = table.connector.get_metadata().resolve_index(
        session=ctx.session(table.catalog), table_handle=handle, index_columns=[key_handle], output_columns=columns
    )
    if resolved is None:
        return None, f"the connector has no index on {key_name}"
    spark_join = {pa.int64(): T.LongType(), pa.string(): T.StringType(), pa.date32(): T.DateType()}[join_type]
    source = probe.select(*[F.col(q(c)) for c in program.source_columns], F.col(q(KEY)).cast(spark_join).alias(KEY))
    prepared = LookupPrepared(
        source=source, program=program, join_type=join_type, key_handle=key_handle, handle=handle, resolved=resolved
    )
    return prepared, ""
