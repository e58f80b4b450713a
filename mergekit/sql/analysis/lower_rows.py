"""Lowering the ``WHERE`` and ``SET`` expressions of a row-level ``DELETE`` / ``UPDATE`` (seed 003's SPI) to a
neutral tree that the execution layer evaluates in Arrow, inside the task that read the rows.

On top of :mod:`._lower`'s subset: ``IN (list)``, ``LIKE`` with a constant pattern, ``%`` and subqueries. A
subquery is not lowered itself: it becomes a :class:`SubqueryRef` whose query Spark runs on the driver before the
statement begins. An uncorrelated subquery runs as written (a scalar, or the value set of ``IN``); a correlated
one whose correlation is a conjunction of ``inner_column = outer_column`` equalities is decorrelated into a
query of its correlation keys (``$k0``, ``$k1``, ...) and value (``$v``), which the tasks look up by the outer row's
columns. Anything else lowers to None, and the execution layer refuses the statement naming what it met.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import attrs
from sqlglot import exp

from mergekit.sql.names import TableRef
from mergekit.sql.references import identifier_name, table_ref_of

from .lower import BINARY_FUNCTIONS, Apply, Const, Ref, lower

__all__ = ["SubqueryRef", "lower_for_rows", "KEY_PREFIX", "VALUE_COLUMN"]

KEY_PREFIX = "$k"  # the decorrelated query's key columns: $k0, $k1, ...
VALUE_COLUMN = "$v"  # and its value column (scalar and IN subqueries)


@attrs.frozen
class SubqueryRef:
    """A subquery of the expression. ``kind``: ``scalar``, ``exists`` or ``in`` (then ``operand`` is the lowered
    left side of ``IN``). ``query`` (a ``mergekit.sql.Query``): the subquery itself when ``outer`` is empty,
    else its decorrelated form (columns ``$k0..`` and, unless ``exists``, ``$v``) whose key ``$ki`` equals the
    outer row's column ``outer[i]``."""

    kind: str
    query: Any
    outer: tuple[Ref, ...] = ()
    operand: Any = None


class _Refused(Exception):
    pass


_ALLOWED_SELECT_ARGS = {"expressions", "from_", "from", "where"}


def lower_for_rows(
    node: Any,
    *,
    outer_names: Collection[str],
    columns_of: Callable[[TableRef], Collection[str]],
) -> Any:
    """The lowered tree of ``node`` (an ``Expression``: a row-level statement's ``WHERE`` or ``SET`` value), or None. ``outer_names``:
    the names (lower case) by which the statement's target may be qualified; ``columns_of``: the column names of a
    table a subquery reads (to tell its columns from the target's)."""
    try:
        return _lower(getattr(node, "node", node), {n.lower() for n in outer_names}, columns_of)
    except _Refused:
        return None


def _lower(node: exp.Expression, outer: Collection[str], columns_of: Callable[[TableRef], Collection[str]]) -> Any:
    def sub(n: exp.Expression) -> Any:
        return _lower(n, outer, columns_of)

    if isinstance(node, exp.Paren):
        return sub(node.this)
    if isinstance(node, exp.Exists):
        return SubqueryRef("exists", *_subquery(node.this, outer, columns_of, value=False))
    if isinstance(node, exp.Subquery):
        return SubqueryRef("scalar", *_subquery(node.this, outer, columns_of, value=True))
    if isinstance(node, exp.In):
        operand = sub(node.this)
        query = node.args.get("query")
        if query is not None:
            select = query.this if isinstance(query, exp.Subquery) else query
            q, keys = _subquery(select, outer, columns_of, value=True)
            return SubqueryRef("in", q, keys, operand)
        if node.args.get("unnest") or node.args.get("field"):
            raise _Refused
        return Apply("in", (operand, *[sub(e) for e in node.expressions]))
    if isinstance(node, exp.Like):
        return Apply("like", (sub(node.this), sub(node.expression)))
    if isinstance(node, exp.Mod):
        return Apply("mod", (sub(node.this), sub(node.expression)))
    if isinstance(node, exp.Not):
        inner = node.this.this if isinstance(node.this, exp.Paren) else node.this
        if isinstance(inner, exp.Is):
            return _leaf(node)
        return Apply("not", (sub(node.this),))
    if isinstance(node, exp.And | exp.Or | exp.EQ | exp.NEQ | exp.LT | exp.LTE | exp.GT | exp.GTE | exp.Add):
        return _binary(node, sub)
    if isinstance(node, exp.Sub | exp.Mul):
        return _binary(node, sub)
    if isinstance(node, exp.Neg):
        inner = sub(node.this)
        if isinstance(inner, Const) and inner.kind in ("integer", "bigint", "double", "decimal"):
            return Const(-inner.value, inner.kind)
        return Apply("negate", (inner,))
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise _Refused
        return Apply("is_null", (sub(node.this),))
    return _leaf(node)


def _binary(node: exp.Expression, sub: Callable[[exp.Expression], Any]) -> Any:
    return Apply(BINARY_FUNCTIONS[type(node)], (sub(node.this), sub(node.expression)))


_VOLATILE = ("rand", "random", "randn", "uuid", "shuffle")


def _leaf(node: exp.Expression) -> Any:
    lowered = lower(node)
    if lowered is not None:
        return lowered
    if _constant(node):  # a literal Spark must compute (CAST('1.5' AS DECIMAL(3, 1)), TIMESTAMP '...', 2 + 3)
        from mergekit.sql.model import Query

        return SubqueryRef("scalar", Query(node=exp.select(node.copy())))
    raise _Refused


def _constant(node: exp.Expression) -> bool:
    """Whether ``node`` reads no column and no table and gives the same value on every row."""
    if node.find(exp.Column, exp.Select, exp.AggFunc, exp.Star) is not None:
        return False
    names = {type(n).__name__.lower() for n in node.walk()}
    names |= {str(n.name).lower() for n in node.find_all(exp.Anonymous)}
    return not any(v in name for name in names for v in _VOLATILE)


def _inner_names(select: exp.Select) -> tuple[exp.Table, set[str]]:
    """The subquery's one table and the names it may be qualified by."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Table) or select.args.get("joins"):
        raise _Refused
    table = from_.this
    if not table.name:
        raise _Refused
    names = {identifier_name(table.this)}
    if table.alias:
        names = {table.alias.lower()}
    return table, names


def _is_outer(col: exp.Column, outer: Collection[str], inner: set[str], inner_columns: Collection[str]) -> bool:
    qualifier = identifier_name(col.args.get("table")) or None
    if qualifier is not None:
        return qualifier not in inner and qualifier in outer
    return identifier_name(col.this) not in inner_columns


def _subquery(
    select: exp.Expression,
    outer: Collection[str],
    columns_of: Callable[[TableRef], Collection[str]],
    *,
    value: bool,
) -> tuple[Any, tuple[Ref, ...]]:
    from mergekit.sql.model import Query

    if not isinstance(select, exp.Select):
        raise _Refused
    try:
        table, inner = _inner_names(select)
        inner_columns = {c.lower() for c in columns_of(table_ref_of(table))}
    except _Refused:
        inner_columns = None
    # outer references at any depth; correlation is allowed only directly in this subquery's WHERE
    outer_cols = []
    for col in select.find_all(exp.Column):
        if inner_columns is None:
            q = identifier_name(col.args.get("table")) or None
            if q is not None and q in outer:
                raise _Refused
            continue
        if _is_outer(col, outer, inner, inner_columns):
            if col.find_ancestor(exp.Select) is not select:
                raise _Refused
            outer_cols.append(col)
    if not outer_cols:
        return Query(node=select), ()
    if set(select.args) - _ALLOWED_SELECT_ARGS and any(
        select.args.get(k) for k in set(select.args) - _ALLOWED_SELECT_ARGS
    ):
        raise _Refused  # GROUP BY, DISTINCT, LIMIT, ... of a correlated subquery
    if value and (len(select.expressions) != 1 or select.expressions[0].find(exp.AggFunc)):
        raise _Refused
    where = select.args.get("where")
    conjuncts = list(where.this.flatten()) if where is not None and isinstance(where.this, exp.And) else []
    if where is not None and not conjuncts:
        conjuncts = [where.this]
    keys: list[exp.Expression] = []
    refs: list[Ref] = []
    rest: list[Any] = []
    outer_ids = {id(c) for c in outer_cols}
    for conjunct in conjuncts:
        c = conjunct.this if isinstance(conjunct, exp.Paren) else conjunct
        mentions = [col for col in c.find_all(exp.Column) if id(col) in outer_ids]
        if not mentions:
            rest.append(conjunct)
            continue
        if not isinstance(c, exp.EQ) or len(mentions) != 1:
            raise _Refused  # a correlation other than inner = outer
        left, right = c.this, c.expression
        if id(left) in outer_ids and isinstance(right, exp.Column) and id(right) not in outer_ids:
            inner_col, outer_col = right, left
        elif id(right) in outer_ids and isinstance(left, exp.Column) and id(left) not in outer_ids:
            inner_col, outer_col = left, right
        else:
            raise _Refused
        keys.append(inner_col.copy())
        refs.append(Ref(None, identifier_name(outer_col.this)))
    if len(refs) != len(outer_cols):
        raise _Refused  # an outer column outside the WHERE's equalities
    columns = [exp.alias_(k, f"{KEY_PREFIX}{i}", quoted=True) for i, k in enumerate(keys)]
    if value:
        columns.append(exp.alias_(select.expressions[0].copy(), VALUE_COLUMN, quoted=True))
    from_ = select.args.get("from_") or select.args.get("from")
    assert from_ is not None  # _inner_names found the subquery's table
    decorrelated = exp.Select(expressions=columns).from_(from_.this.copy())
    for conjunct in rest:
        decorrelated = decorrelated.where(conjunct.copy())
    return Query(node=decorrelated), tuple(refs)
