"""Whether a statement has a predicate that may fail on a row (division by zero, overflow, a cast).

Spark pushes a filter below joins and into scans before it knows which rows exist: a table whose scan drops
superseded row versions with an anti join (the journal connector's deltas) would see the predicate evaluated on
versions no statement can read, and ``WHERE 10 / b > 0`` would fail on a row deleted long ago. Predicates made
only of comparisons of columns with literals, ``IS NULL``, ``IN`` lists, ``BETWEEN``, ``LIKE`` and the logical
operators cannot fail, so they may go down to the files; for any other the engine keeps the scan's row
filtering below every predicate (see ``mergekit.execution.scan``).

Conservative by design: a derived table (a subquery in FROM, a CTE, a MERGE source) whose projections may
fail counts too, since Spark substitutes a projection into a filter above it before pushing that filter down.
"""

from __future__ import annotations

from typing import Any

import attrs
from sqlglot import exp

from mergekit.sql.model import Relation

__all__ = ["predicates_may_fail"]

# Nodes that evaluate without raising on any row (given operands of comparable types, which analysis ensured).
_SAFE: tuple[type[exp.Expression], ...] = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Boolean,
    exp.Null,
    exp.Paren,
    exp.And,
    exp.Or,
    exp.Not,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.Is,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.In,
    exp.Tuple,
    exp.Star,
    exp.Neg,
    # a subquery is a relation of its own: its predicates are checked where they stand
    exp.Exists,
    exp.Subquery,
    exp.Select,
    exp.Union,
)

# Clauses whose expression Spark may push below a join or into a scan.
_PREDICATE_CLAUSES = (exp.Where, exp.Having, exp.Qualify)


def _may_fail(node: exp.Expression) -> bool:
    """Whether evaluating ``node`` on some row may raise, not looking into subqueries."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (exp.Subquery, exp.Select, exp.Union, exp.Exists)) and current is not node:
            continue
        if not isinstance(current, _SAFE):
            return True
        if isinstance(current, exp.Neg) and not isinstance(current.this, exp.Literal):
            return True  # -x overflows on the smallest integer
        stack.extend(current.iter_expressions())
    return False


def _tree_may_fail(node: exp.Expression, *, is_predicate: bool, derived: bool) -> bool:
    """A tree's predicate clauses, join conditions and derived-table projections; ``is_predicate``: the whole
    tree is itself a predicate (a WHERE or ON given as an expression); ``derived``: the tree is a relation
    read by an enclosing statement (a MERGE source), so its own projections count."""
    if is_predicate and _may_fail(node):
        return True
    for clause in node.find_all(*_PREDICATE_CLAUSES):
        if _may_fail(clause.this):
            return True
    for join in node.find_all(exp.Join):
        on = join.args.get("on")
        if on is not None and _may_fail(on):
            return True
    for select in node.find_all(exp.Select):
        if (derived or select is not node) and any(_may_fail(e.unalias()) for e in select.expressions):
            return True
    return False


# Statement fields that hold a predicate (the rest hold values, whose subqueries are still checked).
_PREDICATE_FIELDS = frozenset({"where", "on", "condition", "expression"})


def predicates_may_fail(statement: Any) -> bool:
    """Whether any predicate of ``statement`` (a ``mergekit.sql`` statement, walked through its fields) may
    fail on a row: then the engine keeps each scan's row-version filtering below the statement's filters."""
    seen: set[int] = set()

    def visit(value: Any, is_predicate: bool) -> bool:
        if id(value) in seen:
            return False
        seen.add(id(value))
        node = getattr(value, "node", None)
        if isinstance(node, exp.Expression):
            return _tree_may_fail(node, is_predicate=is_predicate, derived=isinstance(value, Relation))
        if isinstance(value, (tuple, list)):
            return any(visit(v, is_predicate) for v in value)
        if attrs.has(type(value)):
            return any(visit(getattr(value, f.name), f.name in _PREDICATE_FIELDS) for f in attrs.fields(type(value)))
        return False

    return visit(statement, False)
