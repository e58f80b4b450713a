"""Pure-Python planning (no pyspark, no sqlglot): analysis of DML statements into a :class:`MergePlan`."""

from __future__ import annotations

from .logical import (
    JoinKind,
    MergePlan,
    PlannedCase,
    TargetTable,
    not_null_violation,
    plan_delete,
    plan_insert,
    plan_merge,
    plan_update,
)

__all__ = [
    "JoinKind",
    "MergePlan",
    "PlannedCase",
    "TargetTable",
    "not_null_violation",
    "plan_delete",
    "plan_insert",
    "plan_merge",
    "plan_update",
]
