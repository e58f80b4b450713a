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
    else:
        text = repr(inner)
    return Result(statement="EXPLAIN", table=pa.table({"Query Plan": [text]}))


def _explain_query(ctx: StatementContext, st: msql.Query) -> str:
    """The tier ``run_query`` would choose, decided the same way, and what it runs. Nothing is read or evaluated
    but the constants of a SELECT without FROM (a value that fails is explained, not raised)."""
    why = "SET SESSION driver_tier = 'off'"
    if any(st.stream_selects):
        why = "SELECT STREAM"
    elif driver_tier_enabled(ctx.properties):
        constants = driver_constants_plan(st)
        if constants is not None:
            return constants
        planned = plan_driver_query(ctx, st)
        if isinstance(planned, DriverQuery):
            return planned.explain(st)
        why = planned
    plan = ctx.spark.sql(f"EXPLAIN {ctx.render(st)}").collect()[0][0]
    return f"Tier: spark ({why})\n{plan}"
