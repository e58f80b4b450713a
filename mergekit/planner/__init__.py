"""Pure-Python planning (no pyspark, no sqlglot): analysis of DML statements into a :class:`MergePlan`."""

from __future__ import annotations

from .logical import (
    JoinKind,
    MergePlan,
    PlannedCase,
    TargetTable,
    apply_defaults,
    check_violation,
    insert_storage_defaults,
    insert_with_defaults,
    not_null_violation,
    plan_delete,
    plan_insert,
    plan_merge,
    plan_update,
)
from .session import SESSION_PROPERTIES, SourceDedup, check_session_property, driver_tier_enabled, source_dedup

__all__ = [
    "SESSION_PROPERTIES",
    "SourceDedup",
    "check_session_property",
    "driver_tier_enabled",
    "source_dedup",
    "JoinKind",
    "MergePlan",
    "PlannedCase",
    "TargetTable",
    "apply_defaults",
    "check_violation",
    "insert_storage_defaults",
    "insert_with_defaults",
    "not_null_violation",
    "plan_delete",
    "plan_insert",
    "plan_merge",
    "plan_update",
]
