"""Lowering a small, total subset of expressions to a neutral tree that another evaluator can run.

The execution layer evaluates simple MERGE statements on Arrow batches (``mergekit.execution.dml.lookup``) instead
of Spark SQL. It must never evaluate something differently from Spark, so this lowering covers only what
means the same everywhere: column references, literals (INTEGER and BIGINT numbers, DOUBLE (``1.5E0``) and DECIMAL
numbers (``12.25``: of up to :data:`DECIMAL_LITERAL_DIGITS` digits), strings, booleans, NULL,
``DATE 'yyyy-mm-dd'``), comparisons, AND / OR / NOT with SQL's three-valued logic, IS [NOT] NULL, ``x IN (list)``
and ``+ - *`` (their overflow is the evaluator's to raise, in Trino's words). Which operand types each operator
accepts is the evaluator's business (it knows the types); anything else lowers to None and the statement runs
through Spark as before.

Date arithmetic (an extension, docs/sql.md) is defined once for every evaluator here: :data:`DATE_DAYS` is the
DATE range a result must fall in (else ``NUMERIC_VALUE_OUT_OF_RANGE`` with :func:`date_overflow_message`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import attrs
from sqlglot import exp

from mergekit.sql.references import identifier_name
from mergekit.sql.spark.types import DATE_DAYS, date_overflow_message

__all__ = [
    "Ref",
    "Const",
    "Apply",
    "Lowered",
    "lower",
    "is_literal",
    "conjunct_count",
    "DATE_DAYS",
    "DECIMAL_LITERAL_DIGITS",
    "date_overflow_message",
]

# DECIMAL literals the lowering covers: their unscaled value is exact in a DOUBLE (below 2**53), so one division by
# a power of ten converts one to DOUBLE correctly rounded, as Spark's Decimal.toDouble does
DECIMAL_LITERAL_DIGITS = 15
_DOUBLE_TEXT = re.compile(r"(\d+\.?\d*|\.\d+)[eE][+-]?\d+")
_DECIMAL_TEXT = re.compile(r"\d+\.\d*|\.\d+")


@attrs.frozen
class Ref:
    """A column: ``qualifier`` (lower-cased relation name or alias, None when unqualified) and ``name``."""

    qualifier: str | None
    name: str


@attrs.frozen
class Const:
    """A literal. ``kind``: ``integer``, ``bigint``, ``double`` (a float), ``decimal`` (a ``decimal.Decimal``, of the
    precision and scale its digits give, as Trino and Spark type the literal), ``string``, ``boolean``, ``date`` or
    ``null``."""

    value: Any
    kind: str


@attrs.frozen
class Apply:
    """An operator: ``eq ne lt le gt ge is_distinct is_not_distinct and or not is_null is_not_null add subtract
    multiply negate concat`` (``BETWEEN`` lowers to ``ge`` AND ``le``; ``concat`` is ``||`` and ``concat(...)``)."""

    op: str
    args: tuple[Lowered, ...]


Lowered = Ref | Const | Apply

# SQL binary operators and the evaluators' function names for them (also mergekit.sql.analysis.lower_rows)
BINARY_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.EQ: "eq",
    exp.NEQ: "ne",
    exp.LT: "lt",
    exp.LTE: "le",
    exp.GT: "gt",
    exp.GTE: "ge",
    exp.And: "and",
    exp.Or: "or",
    exp.Add: "add",
    exp.Sub: "subtract",
    exp.Mul: "multiply",
    exp.Div: "divide",  # (the evaluators compute DOUBLE division; integer and DECIMAL division are Spark's)
    exp.NullSafeNEQ: "is_distinct",  # IS DISTINCT FROM
    exp.NullSafeEQ: "is_not_distinct",  # IS NOT DISTINCT FROM
    exp.DPipe: "concat",  # a || b (of strings only: the evaluators refuse other operands)
}


def lower(node: exp.Expression) -> Lowered | None:
    """The lowered tree of ``node``, or None when it uses anything outside the subset."""
    if isinstance(node, exp.Paren):
        return lower(node.this)
    if isinstance(node, exp.Column):
        if not isinstance(node.this, exp.Identifier) or node.args.get("db") or node.args.get("catalog"):
            return None
        table = node.args.get("table")
        return Ref(identifier_name(table) if table is not None else None, identifier_name(node.this))
    if isinstance(node, exp.Null):
        return Const(None, "null")
    if isinstance(node, exp.Boolean):
        return Const(bool(node.this), "boolean")
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Const(str(node.this), "string")
        text = str(node.this)
        if _DOUBLE_TEXT.fullmatch(text):
            return Const(float(text), "double")  # correctly rounded, as Java's Double.parseDouble
        if _DECIMAL_TEXT.fullmatch(text):
            value = decimal.Decimal(text)
            digits = len(value.as_tuple().digits)
            return Const(value, "decimal") if digits <= DECIMAL_LITERAL_DIGITS else None
        if not text.isdigit():
            return None
        value = int(text)
        if value < 2**31:  # an INTEGER literal
            return Const(value, "integer")
        if 2**31 < value < 2**63:  # a BIGINT literal (2147483648 is left out: its negation's type is INTEGER)
            return Const(value, "bigint")
        return None  # a DECIMAL
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        to = node.args.get("to")
        if isinstance(to, exp.DataType) and to.this == exp.DataType.Type.DATE:
            try:
                return Const(dt.date.fromisoformat(str(node.this.this)), "date")
            except ValueError:
                return None
        return None  # (``DOUBLE '1.5'`` is a CAST in Spark: nullable where the literal is not)
    if isinstance(node, exp.Neg):
        inner = lower(node.this)
        if isinstance(inner, Const) and inner.kind in ("integer", "bigint", "double", "decimal"):
            return Const(-inner.value, inner.kind)  # a negative literal
        return Apply("negate", (inner,)) if inner is not None else None
    if isinstance(node, exp.Not):
        inner_node = node.this.this if isinstance(node.this, exp.Paren) else node.this
        if isinstance(inner_node, exp.Is) and isinstance(inner_node.expression, exp.Null):
            operand = lower(inner_node.this)
            return Apply("is_not_null", (operand,)) if operand is not None else None
        inner = lower(node.this)
        return Apply("not", (inner,)) if inner is not None else None
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            return None
        operand = lower(node.this)
        return Apply("is_null", (operand,)) if operand is not None else None
    if isinstance(node, exp.In):  # x IN (list); not a subquery, UNNEST or a field
        if any(node.args.get(a) for a in ("query", "unnest", "field")) or not node.expressions:
            return None
        items = [lower(e) for e in (node.this, *node.expressions)]
        return None if any(i is None for i in items) else Apply("in", tuple(items))
    if isinstance(node, exp.Between):  # x BETWEEN a AND b is x >= a AND x <= b (Spark's and Trino's rewrite)
        if node.args.get("symmetric"):
            return None
        items = [lower(node.this), lower(node.args["low"]), lower(node.args["high"])]
        if any(i is None for i in items):
            return None
        x, low, high = items
        return Apply("and", (Apply("ge", (x, low)), Apply("le", (x, high))))  # type: ignore[arg-type]
    if isinstance(node, exp.DPipe | exp.Concat) and (node.args.get("safe") or node.args.get("coalesce")):
        return None  # (other dialects' forms: NULL as an empty string)
    if isinstance(node, exp.Concat) and len(node.expressions) >= 2:
        parts = [lower(e) for e in node.expressions]  # concat(a, b, ...), Trino's variadic form of ||
        return None if any(p is None for p in parts) else Apply("concat", tuple(parts))  # type: ignore[arg-type]
    op = BINARY_FUNCTIONS.get(type(node))
    if op is None:
        return None
    left, right = lower(node.this), lower(node.expression)
    if left is None or right is None:
        return None
    return Apply(op, (left, right))


def is_literal(node: exp.Expression) -> bool:
    """Whether ``node`` lowers to a non-NULL literal (an INTEGER, BIGINT, string, boolean or ``DATE`` literal, a
    negative number)."""
    lowered = lower(node)
    return isinstance(lowered, Const) and lowered.value is not None


def conjunct_count(node: exp.Expression) -> int:
    """How many AND-ed conjuncts ``node`` has (``a = b AND c > 1``: 2)."""
    if isinstance(node, exp.Paren):
        return conjunct_count(node.this)
    if isinstance(node, exp.And):
        return conjunct_count(node.this) + conjunct_count(node.expression)
    return 1
