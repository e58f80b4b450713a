"""Pieces of the differential generator's expressions that every type shares (generator.py's integers and text,
dates.py, timestamps.py): a leaf (a column, NULL or a literal) and a comparison of two operands. Each function takes
the generator's ``Exprs`` (its random numbers, the references in scope, the hazards and tags of the statement)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def leaf(
    ex: Any, refs: list[Any], column_chance: float, null_chance: float, null_sql: str, literal: Callable[[], str]
) -> tuple[str, bool]:
    """A leaf of an expression, ``(sql, constant)``: one of ``refs`` (with ``column_chance``), else the type's NULL
    ``null_sql`` (with ``null_chance``), else ``literal()``."""
    if refs and ex.rng.random() < column_chance:
        return ex.rng.choice(refs).sql, False
    if ex.rng.random() < null_chance:
        return null_sql, True
    return literal(), True


def compare(ex: Any, operand: Callable[[], tuple[str, bool]], refs: list[Any], op: str) -> str:
    """``a op b`` of two ``operand()`` values, ``a`` one of ``refs`` instead when both are constant (PostgreSQL folds
    constants while planning); with ``spark_nulls``, NULL when ``a`` is."""
    a, ca = operand()
    before = ex.raising
    b, cb = operand()
    if ca and cb and refs:
        a, ca = ex.rng.choice(refs).sql, False
    ex.right_operand(before, ca)
    if ex.acc.spark_nulls:
        return f"CASE WHEN {a} IS NULL THEN NULL ELSE {a} {op} {b} END"
    return f"{a} {op} {b}"
