"""Simple predicates of a WHERE or ON clause, for partition pruning and join planning.

:func:`scan_constraints` and :func:`predicate_constraints` extract ``col = literal``, ``col IN (...)``, ranges and
``BETWEEN`` from a WHERE or ON clause (connectors prune partitions, splits and files with them);
:func:`equi_join_keys` finds the equality conjuncts of an ON clause between two relations (the join keys of a MERGE).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any

from sqlglot import exp

from mergekit.sql.model import Expression, Query, TableRef
from mergekit.sql.references import column_refs, identifier_name, table_ref_of

__all__ = ["scan_constraints", "predicate_constraints", "equi_join_keys", "conjuncts"]


# ---- predicates for partition pruning -----------------------------------------------------------------


def _literal(node: exp.Expression) -> tuple[bool, Any]:
    """(True, python value) for a literal the pruning can compare with partition bounds."""
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return True, node.this
        text = node.this
        try:
            return True, (decimal.Decimal(text) if any(c in text for c in ".eE") else int(text))
        except (ValueError, decimal.InvalidOperation):
            return False, None
    if isinstance(node, exp.Neg):
        ok, v = _literal(node.this)
        return (ok and isinstance(v, int | decimal.Decimal)), (
            -v if ok and isinstance(v, int | decimal.Decimal) else None
        )
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        kind = node.to.this
        text = node.this.this
        try:
            if kind in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME, exp.DataType.Type.TIMESTAMPNTZ):
                return True, dt.datetime.fromisoformat(text)
            if kind == exp.DataType.Type.DATE:
                return True, dt.date.fromisoformat(text)
        except ValueError:
            return False, None
    return False, None


def conjuncts(node: exp.Expression) -> list[exp.Expression]:
    """The AND-ed conjuncts of ``node`` (parentheses dropped), in the order written."""
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    return [node]


def predicate_constraints(expression: Expression, qualifiers: set[str | None]) -> dict[str, tuple[Any, ...]]:
    """Simple conjuncts of ``expression`` on columns qualified by one of ``qualifiers`` (None: unqualified):
    ``{column: ("values", frozenset)}`` from ``=`` / ``IN``, ``{column: ("range", low, high)}`` (inclusive,
    either None) from ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``; ``("null",)`` from ``IS NULL``. Anything else
    is ignored: the result is a superset condition, safe for pruning only."""
    out: dict[str, tuple[Any, ...]] = {}

    def column_of(node: exp.Expression) -> str | None:
        if isinstance(node, exp.Column) and (identifier_name(node.args.get("table")) or None) in qualifiers:
            return identifier_name(node.this)
        return None

    def add(col: str, item: tuple[Any, ...]) -> None:
        prev = out.get(col)
        if prev is None:
            out[col] = item
        elif prev[0] == "values" and item[0] == "values":
            out[col] = ("values", prev[1] & item[1])
        elif prev[0] == "range" and item[0] == "range":
            lo = item[1] if prev[1] is None else prev[1] if item[1] is None else _safe_max(prev[1], item[1])
            hi = item[2] if prev[2] is None else prev[2] if item[2] is None else _safe_min(prev[2], item[2])
            out[col] = ("range", lo, hi)
        elif item[0] == "values":
            out[col] = item  # equality is the stronger condition

    for c in conjuncts(expression.node):
        if isinstance(c, exp.EQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            left, right = c.this, c.expression
            col, (ok, value) = column_of(left), _literal(right)
            flipped = False
            if col is None:
                col, (ok, value) = column_of(right), _literal(left)
                flipped = True
            if col is None or not ok:
                continue
            if isinstance(c, exp.EQ):
                add(col, ("values", frozenset([value])))
                continue
            lower = isinstance(c, exp.GT | exp.GTE) != flipped
            add(col, ("range", value, None) if lower else ("range", None, value))
        elif isinstance(c, exp.In) and not c.args.get("query") and not c.args.get("not"):
            col = column_of(c.this)
            values = [_literal(e) for e in c.expressions]
            if col is not None and values and all(ok for ok, _ in values):
                add(col, ("values", frozenset(v for _, v in values)))
        elif isinstance(c, exp.Between):
            col = column_of(c.this)
            (ok1, lo), (ok2, hi) = _literal(c.args["low"]), _literal(c.args["high"])
            if col is not None and ok1 and ok2:
                add(col, ("range", lo, hi))
        elif isinstance(c, exp.Is) and isinstance(c.expression, exp.Null):
            col = column_of(c.this)
            if col is not None and col not in out:
                out[col] = ("null",)
    return out


def _safe_max(a: Any, b: Any) -> Any:
    try:
        return max(a, b)
    except TypeError:
        return a


def _safe_min(a: Any, b: Any) -> Any:
    try:
        return min(a, b)
    except TypeError:
        return a


def scan_constraints(query: Query) -> Mapping[TableRef, dict[str, tuple[Any, ...]]]:
    """For a plain ``SELECT ... FROM t [JOIN ...] WHERE ...``: the WHERE's simple predicates per table read
    in the top-level FROM (a WHERE is applied after the joins, so pruning a scan by it is safe)."""
    node = query.node
    if not isinstance(node, exp.Select) or node.args.get("where") is None:
        return {}
    tables: list[exp.Table] = []
    from_ = node.args.get("from_") or node.args.get("from")
    if from_ is not None and isinstance(from_.this, exp.Table):
        tables.append(from_.this)
    for join in node.args.get("joins") or []:
        if isinstance(join.this, exp.Table):
            tables.append(join.this)
    refs = [table_ref_of(t) for t in tables]
    out: dict[TableRef, dict[str, tuple[Any, ...]]] = {}
    where = Expression(node.args["where"].this)
    for table, ref in zip(tables, refs, strict=True):
        if refs.count(ref) > 1:
            continue  # the same table twice: a constraint would apply to both scans
        alias = table.args.get("alias")
        qualifiers: set[str | None] = {identifier_name(alias.this) if alias is not None else ref.name.name}
        if len(tables) == 1:
            qualifiers.add(None)
        found = predicate_constraints(where, qualifiers)
        if found:
            out[ref] = found
    return out


def equi_join_keys(expression: Expression, left: str, right: str) -> list[tuple[Expression, Expression]]:
    """Equality conjuncts of a join condition that pair an expression over ``left``'s columns only with one
    over ``right``'s columns only (``t.id = s.id``, ``t.k = s.a + 1``), as ``(left side, right side)``.

    Every pair of rows the condition accepts has equal values on both sides of each pair, so the pairs can
    partition (or pre-filter) both inputs of the join. Conjuncts with subqueries, unqualified or other
    columns, or no columns on one side are left out: the result may be empty, never wrong."""

    def side(node: exp.Expression) -> str | None:
        if node.find(exp.Select) is not None:
            return None
        refs = column_refs(node)
        qualifiers = {q.lower() if q else q for q, _ in refs}
        if len(qualifiers) != 1:
            return None
        (qualifier,) = qualifiers
        return qualifier if qualifier in (left.lower(), right.lower()) else None

    pairs: list[tuple[Expression, Expression]] = []
    for c in conjuncts(expression.node):
        if not isinstance(c, exp.EQ):
            continue
        a, b = side(c.this), side(c.expression)
        if a is None or b is None:
            continue
        if a == left.lower() and b == right.lower():
            pairs.append((Expression(node=c.this), Expression(node=c.expression)))
        elif a == right.lower() and b == left.lower():
            pairs.append((Expression(node=c.expression), Expression(node=c.this)))
    return pairs
