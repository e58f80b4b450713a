"""Queries the driver tier reads itself: one table, its columns, a filter, an order, or a count.

``SELECT * | column, ... | count(*) [AS name] FROM table [AS alias] [WHERE condition] [ORDER BY column [ASC|DESC]
[NULLS FIRST|LAST], ...]`` is what tests and users most often run to look at a table. :func:`simple_scan` recognises
that shape and nothing more (no join, subquery, set operation, GROUP BY, HAVING, DISTINCT, LIMIT, window, CTE, time
travel, column alias or expression in the select list); the execution layer then reads the table through the
connector on the driver, with the WHERE clause compiled by the one Arrow compiler (``mergekit.execution.driver_query``),
and declines whatever it cannot do exactly as Spark would (the query then runs on Spark as before).

:func:`constant_select` recognises ``SELECT expression [AS name], ...`` without FROM (``SELECT 1``), whose values the
driver tier evaluates when every expression is in the Arrow compiler's subset.
"""

from __future__ import annotations

from typing import Any

import attrs
from sqlglot import exp

from mergekit.sql.names import TableRef
from mergekit.sql.references import identifier_name, table_refs

__all__ = ["SimpleScan", "simple_scan", "constant_select"]

_SELECT_ARGS = {"expressions", "from_", "where", "order"}
_TABLE_ARGS = {"this", "db", "catalog", "alias"}


@attrs.frozen
class SimpleScan:
    """``table``: what is read; ``qualifiers``: the names a column may be qualified by (lower case); ``columns``:
    the select list's column names (None: ``*``); ``count``: the output name of ``count(*)`` (then ``columns`` is
    empty); ``where``: the WHERE condition (the model's ``Expression`` once ``Query.simple_scan`` wraps it);
    ``order_by``: (column, descending, nulls first) per ORDER BY item."""

    table: TableRef
    qualifiers: frozenset[str]
    columns: tuple[str, ...] | None
    count: str | None
    where: Any
    order_by: tuple[tuple[str, bool, bool], ...]


def select_all(table: exp.Expression) -> exp.Select | None:
    """``SELECT * FROM`` the table ``table`` names (its alias dropped), or None when ``table`` is not a table."""
    if not isinstance(table, exp.Table) or any(v for k, v in table.args.items() if k not in _TABLE_ARGS):
        return None
    plain = table.copy()
    plain.set("alias", None)
    return exp.select("*").from_(plain)


def simple_scan(node: exp.Expression) -> SimpleScan | None:
    """The scan ``node`` is (see the module), or None."""
    if not isinstance(node, exp.Select) or any(v for k, v in node.args.items() if k not in _SELECT_ARGS):
        return None
    source = node.args.get("from_")
    table = source.this if isinstance(source, exp.From) else None
    if not isinstance(table, exp.Table) or any(v for k, v in table.args.items() if k not in _TABLE_ARGS):
        return None
    alias = table.args.get("alias")
    if alias is not None and (alias.args.get("columns") or not isinstance(alias.this, exp.Identifier)):
        return None
    refs = table_refs(node)
    if len(refs) != 1 or refs[0].version is not None or refs[0].timestamp is not None or refs[0].is_change_feed:
        return None
    qualifiers = frozenset({identifier_name(alias.this).lower()} if alias is not None else {table.name.lower()})
    columns: list[str] = []
    count: str | None = None
    items = node.expressions
    if len(items) == 1 and isinstance(items[0], exp.Star):
        selected: tuple[str, ...] | None = None
    else:
        for item in items:
            inner = item.this if isinstance(item, exp.Alias) else item
            if isinstance(inner, exp.Count) and isinstance(inner.this, exp.Star) and len(items) == 1:
                count = identifier_name(item.args["alias"]) if isinstance(item, exp.Alias) else "_col0"
                continue
            name = _column(item, qualifiers)
            if name is None:
                return None
            columns.append(name)
        selected = tuple(columns)
    order: list[tuple[str, bool, bool]] = []
    for ordered in node.args["order"].expressions if node.args.get("order") is not None else ():
        name = _column(ordered.this, qualifiers) if isinstance(ordered, exp.Ordered) else None
        if name is None or ordered.args.get("with_fill") is not None:
            return None
        order.append((name, bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))))
    where = node.args.get("where")
    return SimpleScan(
        table=refs[0],
        qualifiers=qualifiers,
        columns=selected,
        count=count,
        where=where.this if isinstance(where, exp.Where) else None,
        order_by=tuple(order),
    )


def _column(node: exp.Expression, qualifiers: frozenset[str]) -> str | None:
    """The name of a plain column reference, unqualified or qualified by one of ``qualifiers``; else None."""
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return None
    if node.args.get("db") is not None or node.args.get("catalog") is not None:
        return None
    qualifier = node.args.get("table")
    if qualifier is not None and identifier_name(qualifier).lower() not in qualifiers:
        return None
    return identifier_name(node.this)


def constant_select(node: exp.Expression) -> tuple[tuple[str, ...], tuple[exp.Expression, ...]] | None:
    """For ``SELECT expression [AS name], ...`` without FROM or any other clause: the output names (Trino's
    ``_colN`` for an unnamed item, N its position) and the expressions; else None."""
    if not isinstance(node, exp.Select) or any(v for k, v in node.args.items() if k != "expressions"):
        return None
    names: list[str] = []
    values: list[exp.Expression] = []
    for i, item in enumerate(node.expressions):
        if isinstance(item, exp.Star) or item.find(exp.Column, exp.Select, exp.Star) is not None:
            return None
        named = isinstance(item, exp.Alias)
        names.append(identifier_name(item.args["alias"]) if named else f"_col{i}")
        values.append(item.this if named else item)
    return (tuple(names), tuple(values)) if values else None
