"""Calcite's interval difference ``(a - b) UNIT`` (``SqlValidatorTest.testMonotonic``: ``(rowtime - TIMESTAMP
'1970-01-01 00:00:00') HOUR``): the difference of two datetimes as an interval of that unit.

The text pre-pass (``_stream_syntax``) leaves ``mergekit_interval_difference((a - b), 'HOUR')`` in the tree; this
module reads it. Calcite keeps the exact difference and truncates to whole units where the interval becomes a
number (``CAST(... AS INTEGER)`` divides by the unit: 10:17 - 00:00 is 10 hours): so the node becomes Trino's
``date_diff('hour', b, a)`` (whole units, truncated toward zero) under a cast to a number, and that many units
as an interval (``date_diff(...) * INTERVAL '1' HOUR``) elsewhere. One unit only (SECOND, MINUTE, HOUR, DAY,
WEEK, MONTH, YEAR); ``(a - b) DAY TO SECOND`` is refused by name (``NOT_SUPPORTED``).

Monotonicity (Calcite's rule): increasing when ``a`` is increasing and ``b`` constant (decreasing when ``b``
decreases and ``a`` is constant): :func:`difference_operands` gives the two operands to the inference.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.parse.dialect import DIALECT

from .syntax import INTERVAL_DIFFERENCE

__all__ = ["difference_operands", "rewrite_interval_differences"]

_NUMERIC = {
    exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT, exp.DataType.Type.BIGINT,
    exp.DataType.Type.DECIMAL, exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT,
}  # fmt: skip
_INTERVAL_OF = {  # unit -> the interval literal of one unit (Trino has no WEEK interval)
    "SECOND": "INTERVAL '1' SECOND",
    "MINUTE": "INTERVAL '1' MINUTE",
    "HOUR": "INTERVAL '1' HOUR",
    "DAY": "INTERVAL '1' DAY",
    "WEEK": "INTERVAL '7' DAY",
    "MONTH": "INTERVAL '1' MONTH",
    "YEAR": "INTERVAL '1' YEAR",
}


def _is_difference(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == INTERVAL_DIFFERENCE


def difference_operands(node: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """``(a, b)`` for an interval difference ``(a - b) UNIT``; None for any other node."""
    if not _is_difference(node) or len(node.expressions) != 2:
        return None
    inner = node.expressions[0]
    while isinstance(inner, exp.Paren):
        inner = inner.this
    return (inner.this, inner.expression) if isinstance(inner, exp.Sub) else None


def _parts(node: exp.Anonymous) -> tuple[exp.Expression, exp.Expression, str]:
    operands = difference_operands(node)
    unit = node.expressions[1].name.upper() if len(node.expressions) == 2 else ""
    if operands is None:
        raise MergekitError(
            ErrorCode.SYNTAX_ERROR, f"The interval qualifier {unit} must follow a datetime difference: (a - b) {unit}"
        )
    if unit not in _INTERVAL_OF:
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED,
            f"The interval difference (a - b) {unit} is not supported: give one unit (SECOND, MINUTE, HOUR, DAY, "
            "WEEK, MONTH or YEAR)",
        )
    return operands[0], operands[1], unit


def _count(a: exp.Expression, b: exp.Expression, unit: str) -> exp.Expression:
    call = sqlglot.parse_one(f"SELECT date_diff('{unit.lower()}', __mk_b, __mk_a)", read=DIALECT).expressions[0]  # type: ignore[attr-defined]
    for column in list(call.find_all(exp.Column)):
        column.replace((a if column.name == "__mk_a" else b).copy())
    return call


def rewrite_interval_differences(tree: exp.Expression) -> exp.Expression:
    """``tree`` (unchanged when it has none) with every interval difference in Trino's terms."""
    if not any(_is_difference(n) for n in tree.find_all(exp.Anonymous)):
        return tree
    tree = tree.copy()
    for node in reversed([n for n in tree.find_all(exp.Anonymous) if _is_difference(n)]):  # innermost first
        a, b, unit = _parts(node)
        count = _count(a, b, unit)
        parent = node.parent
        if isinstance(parent, exp.Cast | exp.TryCast) and parent.this is node:
            target = parent.args.get("to")
            if not isinstance(target, exp.DataType) or target.this not in _NUMERIC:
                raise MergekitError(
                    ErrorCode.NOT_SUPPORTED,
                    f"A cast of the interval difference (a - b) {unit} to {target.sql(dialect=DIALECT) if target else '?'}"
                    " is not supported (to a number it is the count of whole units)",
                )
            node.replace(count)
            continue
        interval = sqlglot.parse_one(f"SELECT {_INTERVAL_OF[unit]}", read=DIALECT).expressions[0]  # type: ignore[attr-defined]
        node.replace(exp.Paren(this=exp.Mul(this=count, expression=interval)))
    return tree
