"""``SET SESSION``, ``RESET SESSION`` and ``SHOW SESSION``: the engine's session properties
(:mod:`mergekit.planner.session` declares and validates them)."""

from __future__ import annotations

import pyarrow as pa

from mergekit import sql as msql
from mergekit.planner import SESSION_PROPERTIES, check_session_property
from mergekit.result import Result

from .context import StatementContext

__all__ = ["SESSION_STATEMENTS"]


def set_session(ctx: StatementContext, st: msql.SetSession) -> Result:
    check_session_property(st.name, st.value)  # an invalid value sets nothing
    ctx.session_properties[st.name] = st.value
    return Result(statement="SET SESSION")


def reset_session(ctx: StatementContext, st: msql.ResetSession) -> Result:
    check_session_property(st.name)
    ctx.session_properties.pop(st.name, None)
    return Result(statement="RESET SESSION")


def show_session(ctx: StatementContext, st: msql.ShowSession) -> Result:
    names = sorted(SESSION_PROPERTIES)
    props = [SESSION_PROPERTIES[n] for n in names]
    table = pa.table(
        {
            "Name": pa.array(names, pa.string()),
            "Value": pa.array([ctx.session_properties.get(p.name, p.default_value()) for p in props], pa.string()),
            "Default": pa.array([p.default_value() for p in props], pa.string()),
            "Description": pa.array([p.description for p in props], pa.string()),
        }
    )
    return Result(statement="SHOW SESSION", table=table)


SESSION_STATEMENTS = {
    msql.SetSession: set_session,
    msql.ResetSession: reset_session,
    msql.ShowSession: show_session,
}
