"""Trino's rule for aggregate queries (``AggregationAnalyzer``), checked before Spark sees the query.

In a SELECT that groups (GROUP BY, or an aggregate function in its select list, HAVING or ORDER BY), every
expression of the select list, HAVING and ORDER BY must be constant within a group: built from GROUP BY
expressions, aggregate calls, literals and references to enclosing queries. Otherwise Trino fails with
``EXPRESSION_NOT_AGGREGATE``: ``'id' must be an aggregate expression or appear in GROUP BY clause``. Spark's
own error for the same query names no expression when there is no GROUP BY (``MISSING_GROUP_BY``).

The check only refuses what it is sure of: a column it resolves in the SELECT's own FROM clause. Where it
cannot tell (a relation whose columns it does not know, a GROUP BY form it does not read), it accepts, and
Spark's analysis still refuses the query (translated in ``mergekit.execution.failures``).
"""

from __future__ import annotations

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.parse.dialect import DIALECT
from mergekit.sql.spark.function_catalog import FUNCTIONS, written_name
from mergekit.sql.spark.infer import Typer
from mergekit.sql.spark.types import norm

__all__ = ["check_aggregations"]

_AGGREGATES = frozenset(f.name for f in FUNCTIONS if f.chapter == "aggregate")
_SUBQUERIES = (exp.Subquery, exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Exists)


def check_aggregations(tree: exp.Expr, typer: Typer) -> None:
    """EXPRESSION_NOT_AGGREGATE for the first expression of an aggregate SELECT in ``tree`` that is neither an
    aggregate nor grouped."""
    for select in tree.find_all(exp.Select):
        _check_select(select, typer)


def _is_aggregate(node: exp.Expr) -> bool:
    """An aggregate call (not a window function: ``count(*) OVER (...)`` is computed per row)."""
    if not (isinstance(node, exp.AggFunc) or (written_name(node) or "").lower() in _AGGREGATES):
        return False
    parent = node.parent
    while isinstance(parent, (exp.Filter, exp.RespectNulls, exp.IgnoreNulls)):
        parent = parent.parent
    return not isinstance(parent, exp.Window)


def _own_nodes(root: exp.Expr) -> list[exp.Expr]:
    """``root`` and its descendants outside subqueries."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(c for c in node.iter_expressions() if not isinstance(c, _SUBQUERIES))
    return out


def _key(node: exp.Expr) -> exp.Expr:
    """``node`` compared with GROUP BY expressions: without parentheses and column qualifiers (so ``t.id`` is
    grouped by ``id``; the check may accept too much, never refuse what Trino accepts)."""
    while isinstance(node, exp.Paren):
        node = node.this
    copy = node.copy()
    for col in copy.find_all(exp.Column):
        col.set("table", None)
    return copy


def _check_select(select: exp.Select, typer: Typer) -> None:
    order = select.args.get("order")
    having = select.args.get("having")
    items = [p.this if isinstance(p, exp.Alias) else p for p in select.expressions]
    parts = items + ([having.this] if having else []) + ([o.this for o in order.expressions] if order else [])
    group = select.args.get("group")
    if group is None and not any(_is_aggregate(n) for part in parts for n in _own_nodes(part)):
        return
    local = _local_columns(select, typer)
    if local is None:
        return
    aliased = {norm(p.alias): p.this for p in select.expressions if isinstance(p, exp.Alias)}
    keys = _group_keys(group, items, local, aliased)
    if keys is None:
        return
    aliases = set(aliased)
    checks: list[tuple[exp.Expr, set[str]]] = [(e, set()) for e in items] + [(e, aliases) for e in parts[len(items) :]]
    for expression, names in checks:
        if isinstance(expression, exp.Star) or (isinstance(expression, exp.Column) and expression.is_star):
            continue
        if not _grouped(expression, keys, local, names):
            shown = expression.sql(dialect=DIALECT)
            raise MergekitError(
                ErrorCode.EXPRESSION_NOT_AGGREGATE,
                f"'{shown}' must be an aggregate expression or appear in GROUP BY clause",
            )


def _group_keys(
    group: exp.Group | None, items: list[exp.Expr], local: dict[str, set[str]], aliased: dict[str, exp.Expr]
) -> list[exp.Expr] | None:
    """The GROUP BY expressions (an ordinal names a select item, and so does an output name Spark accepts in GROUP
    BY where the FROM clause has no such column), or None for a form the check does not read."""
    if group is None:
        return []
    if any(group.args.get(k) for k in group.args if k != "expressions") or any(
        isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in group.expressions
    ):
        return None  # ROLLUP, CUBE, GROUPING SETS, ALL
    keys = []
    for e in group.expressions:
        if isinstance(e, exp.Literal) and e.is_int:
            n = int(e.name)
            if not 1 <= n <= len(items):
                return None
            e = items[n - 1]
        elif isinstance(e, exp.Column) and not e.table and norm(e.name) not in local and norm(e.name) in aliased:
            e = aliased[norm(e.name)]
        keys.append(_key(e))
    return keys


def _local_columns(select: exp.Select, typer: Typer) -> dict[str, set[str]] | None:
    """Column name -> the names of the FROM relations that have it; None when some relation's columns are
    unknown (a column could then be a reference to an enclosing query, which is allowed)."""
    out: dict[str, set[str]] = {}
    for alias, columns in typer.relations(select):
        if columns is None:
            return None
        for name, _ in columns:
            out.setdefault(name, set()).add(alias)
    return out


def _grouped(node: exp.Expr, keys: list[exp.Expr], local: dict[str, set[str]], names: set[str]) -> bool:
    """Whether ``node`` is constant within a group."""
    if keys and _key(node) in keys:
        return True
    if isinstance(node, _SUBQUERIES) or isinstance(node, exp.Lambda):
        return True  # Spark's analysis checks what a subquery reads of the group
    if _is_aggregate(node) or (isinstance(node, exp.Filter) and _is_aggregate(node.this)):
        return True
    if isinstance(node, exp.Column):
        name, qualifier = norm(node.name), norm(node.table)
        relations = local.get(name)
        if relations is None or (qualifier and qualifier not in relations):
            return True  # an enclosing query's column, or none at all (Spark says which)
        if not qualifier and name in names:
            return True  # an output column (ORDER BY, HAVING)
        return any(isinstance(k, exp.Column) and norm(k.name) == name for k in keys)
    return all(_grouped(child, keys, local, names) for child in node.iter_expressions())
