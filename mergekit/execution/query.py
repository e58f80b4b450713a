"""Queries (SELECT, VALUES, set operations) and EXPLAIN: rendered as Spark SQL with Trino semantics over the
views of the tables they read, collected through Arrow, or read lazily (``Engine.execute(stream=True)``); a scan of
one table the driver tier reads itself (:mod:`.driver_query`) runs without Spark."""

from __future__ import annotations

import pyarrow as pa

from mergekit import sql as msql
from mergekit.execution.dml.plan import explain_dml
from mergekit.execution.dml.target import spi_constraint
from mergekit.execution.streaming.streams import check_query_modality, run_stream_query
from mergekit.planner import driver_tier_enabled
from mergekit.result import Result

from .context import StatementContext
from .driver_query import (
    DriverQuery,
    driver_constants_plan,
    plan_driver_query,
    run_driver_constants,
    run_driver_query,
)
from .results import SparkArrowSource, in_zones

__all__ = ["run_query", "explain"]


def run_query(ctx: StatementContext, st: msql.Query) -> Result:
    if check_query_modality(ctx, st):  # SELECT STREAM (seed 001): a bounded run
        return run_stream_query(ctx, st)
    if driver_tier_enabled(ctx.properties):
        done = run_driver_constants(st)  # the driver tier: SELECT of constants
        if done is not None:
            return done
        planned = plan_driver_query(ctx, st)  # the driver tier: a scan of one table read through the connector
        done = run_driver_query(ctx, planned) if isinstance(planned, DriverQuery) else None
        if done is not None:
            return done
    ctx.constraints.update({ref: spi_constraint(found) for ref, found in msql.scan_constraints(st).items()})
    df = ctx.spark.sql(ctx.render(st))  # analysed now: it still reads the statement's views once they are dropped
    zones = st.output_zones(tables=ctx.views, schema=ctx.schema) or ()  # a value's zone, kept per expression
    if ctx.stream:
        return Result(statement="SELECT", source=SparkArrowSource(df, zones), metrics={"scans": ctx.scans})
    table = df.toArrow()
    return Result(
        statement="SELECT", table=table.cast(in_zones(table.schema, zones)), metrics={"scans": list(ctx.scans)}
    )


def explain(ctx: StatementContext, st: msql.Explain) -> Result:
    """EXPLAIN: for DML, the logical plan and the strategy that will run (with the estimates that chose it); for a
    query, the tier that runs it: the driver tier's plan (no Spark is started), or Spark's plan of its rendering
    after a ``Tier: spark`` line that says why."""
    inner = st.statement
    if isinstance(inner, msql.Merge | msql.Update | msql.Delete | msql.Insert):
        text = explain_dml(ctx, inner)
    elif isinstance(inner, msql.Query):
        text = _explain_query(ctx, inner)
    elif isinstance(inner, msql.Truncate):
        text = _explain_truncate(ctx, inner)
    elif isinstance(inner, msql.CreateTable) and inner.as_query is not None:
        catalog, name = ctx.catalogs.split_name(inner.name)
        text = (
            f"CREATE TABLE {catalog}.{name.schema}.{name.table} AS: create_table on the driver, then the query's rows written "
            "as an INSERT (begin_merge / ConnectorMergeSink / finish_merge); the query:\n"
            + _explain_query(ctx, inner.as_query, spark="CREATE TABLE AS runs its query on Spark")
        )
    else:
        text = f"{st.text}\n{_WITHOUT_PLAN.get(type(inner), _NO_PLAN)}"
    return Result(statement="EXPLAIN", table=pa.table({"Query Plan": [text]}))


_NO_PLAN = "No plan to show: EXPLAIN shows the plans of queries, MERGE, UPDATE, DELETE, INSERT and TRUNCATE"
_WITHOUT_PLAN: dict[type, str] = {
    msql.CreateTable: "Data definition: create_table on the driver (no Spark job)",
    msql.DropTable: "Data definition: drop_table on the driver (no Spark job)",
    msql.AlterTableAddColumn: "Data definition: add_column on the driver (no Spark job)",
}


def _explain_truncate(ctx: StatementContext, st: msql.Truncate) -> str:
    """TRUNCATE: the connector's own ``truncate_table`` when it has one, else the plan of a DELETE of every row."""
    from mergekit.execution.dml.contract import overrides

    table = ctx.resolve(st.name)
    if overrides(table.connector.get_metadata(), "truncate_table"):
        return (
            f"TRUNCATE TABLE {table.full_name}: truncate_table on the driver (the connector's own, no Spark job); "
            "if it refuses this table, a DELETE of every row"
        )
    delete = explain_dml(ctx, msql.Delete(target=st.name, where=None))
    return f"TRUNCATE TABLE {table.full_name}: a DELETE of every row (the connector has no truncate_table)\n{delete}"


def _explain_query(ctx: StatementContext, st: msql.Query, *, spark: str = "") -> str:
    """The tier ``run_query`` would choose, decided the same way, and what it runs. Nothing is read or evaluated
    but the constants of a SELECT without FROM (a value that fails is explained, not raised). ``spark``: why the
    statement runs the query on Spark whatever the tier would choose."""
    why = spark or "SET SESSION driver_tier = 'off'"
    if any(st.stream_selects) and not spark:
        why = "SELECT STREAM"
    elif driver_tier_enabled(ctx.properties) and not spark:
        constants = driver_constants_plan(st)
        if constants is not None:
            return constants
        planned = plan_driver_query(ctx, st)
        if isinstance(planned, DriverQuery):
            return planned.explain(st)
        why = planned
    plan = ctx.spark.sql(f"EXPLAIN {ctx.render(st)}").collect()[0][0]
    return f"Tier: spark ({why})\n{plan}"
