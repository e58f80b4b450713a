"""How a streaming query runs *continuously* (micro-batch by micro-batch), decided from its text.

A continuous run evaluates each micro-batch as an ordinary batch query over a slice of the streams' logs (the
*slice executor* of docs/streaming.md): the log is sorted by its monotonic column and its commits carry their low
and high values, so the log is the operator's state. Two shapes:

* **stateless** (filters, projections, ``CASE``, sub-queries and ``WITH`` without aggregation, ``UNION ALL`` of
  streams, a stream joined to tables): each micro-batch runs the query over the rows of the commits it brings;
  a row is emitted in the batch that brought it.
* **keyed** (a streaming aggregation ``GROUP BY <monotonic key>, ...``, e.g. ``FLOOR(rowtime TO HOUR)`` or
  ``TUMBLE(rowtime, ...)``, or a streaming ``ORDER BY <monotonic key>, ...``) over one stream (joined to tables
  or not): the rows of key ``k`` are complete once the watermark ``W`` (the stream's highest value so far minus
  its slack) has ``key(W) > k``, since every later row has a value ``>= W``. Each micro-batch emits the keys in
  ``[key(W_before), key(W_after))``, computed over just the rows with those keys.

Anything else (``OVER`` windows, ``HOP`` and ``SESSION`` windows, joins of two streams, ``LIMIT``, a key over a
descending or a second monotonic column) runs in a bounded run but is refused, by name, in a continuous run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.names import TableRef
from mergekit.sql.parse.dialect import DIALECT
from mergekit.sql.references import identifier_name, table_ref_of

from .modality import ObjectInfo, ObjectKind, cte_queries, from_items, has_aggregation, order_direction, set_branches

__all__ = ["ContinuousShape", "continuous_shape", "merge_source_keys"]


@attrs.frozen(kw_only=True)
class ContinuousShape:
    """``keyed`` False: stateless. ``keyed`` True: ``stream`` is the reference whose monotonic ``column`` drives
    emission; ``key_group`` the key as written in GROUP BY (``TUMBLE(...)`` included) and ``key_value`` the
    expression giving its value in a SELECT list (``TUMBLE_START(...)`` for ``TUMBLE``), both over the stream's
    unqualified columns, in mergekit's SQL."""

    keyed: bool
    stream: TableRef | None = None
    column: str | None = None
    key_group: str | None = None
    key_value: str | None = None


def _refuse(what: str) -> MergekitError:
    return MergekitError(
        ErrorCode.NOT_SUPPORTED,
        f"{what} in a continuous run is not supported (a bounded run, engine.execute, evaluates it)",
    )


def continuous_shape(query: Any, kind_of: Callable[[TableRef], ObjectInfo]) -> ContinuousShape:
    """The shape of a streaming query (already checked by ``check_modality``) for a continuous run;
    ``NOT_SUPPORTED`` for a shape a continuous run does not evaluate."""
    node: exp.Expression = getattr(query, "node", query)
    if any(True for _ in node.find_all(exp.Window)):
        raise _refuse("An OVER window")
    for call in node.find_all(exp.Anonymous):
        name = str(call.this).upper()
        if name.startswith(("HOP", "SESSION")):
            raise _refuse(f"The {name} window")
    if any(s.args.get("limit") is not None for s in node.find_all(exp.Select)) or node.args.get("limit"):
        raise _refuse("LIMIT")
    ctes = cte_queries(node)
    stateful = [s for s in node.find_all(exp.Select) if _stateful_select(s)]
    for select in node.find_all(exp.Select):
        if sum(_is_stream(i, kind_of, ctes) for i in from_items(select)) > 1:
            raise _refuse("A join of two streams")
    if not stateful:
        return ContinuousShape(keyed=False)
    branches = set_branches(node)
    top = branches[0] if len(branches) == 1 else None
    if top is None or not isinstance(top, exp.Select) or stateful != [top] or ctes:
        raise _refuse("An aggregation, DISTINCT or ORDER BY below the top-level SELECT (or under UNION ALL)")
    streams = [i for i in from_items(top) if _is_stream(i, kind_of, ctes)]
    if len(streams) != 1 or not isinstance(streams[0], exp.Table):
        raise _refuse("An aggregation or ORDER BY over a sub-query of a stream")
    item = streams[0]
    ref = table_ref_of(item)
    info = kind_of(ref)
    if not info.monotonic or info.monotonic[0][1]:
        raise _refuse("A key over a descending monotonic column")
    column = info.monotonic[0][0]
    key = _key(top, column)
    if key is None:
        raise _refuse(f"An aggregation or ORDER BY whose leading key is not an increasing expression of '{column}'")
    group, value = _unqualified(key), _unqualified(key)
    if isinstance(value, exp.Anonymous) and str(value.this).upper() == "TUMBLE":
        value = exp.Anonymous(this="TUMBLE_START", expressions=[e.copy() for e in value.expressions])
    return ContinuousShape(
        keyed=True,
        stream=ref,
        column=column,
        key_group=group.sql(dialect=DIALECT),
        key_value=value.sql(dialect=DIALECT),
    )


def _stateful_select(select: exp.Select) -> bool:
    return bool(has_aggregation(select) or select.args.get("distinct") or select.args.get("order") is not None)


def _is_stream(
    item: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> bool:
    if isinstance(item, exp.Table) and item.name:
        if len(item.parts) == 1 and identifier_name(item.this) in ctes:
            return True  # a WITH query read by a streaming query converts when it reads a stream
        return kind_of(table_ref_of(item)).kind is not ObjectKind.TABLE
    return isinstance(item, exp.Subquery)


def _key(select: exp.Select, column: str) -> exp.Expression | None:
    """The first increasing GROUP BY key over ``column`` alone (a streaming aggregation), else the leading ORDER BY
    key (an output alias resolved to its expression)."""
    monotonic = {column: 1}
    group = select.args.get("group")
    if has_aggregation(select):
        for k in group.expressions if group is not None else []:
            if order_direction(k, monotonic) == 1 and _only_column(k, column):
                return k
        return None
    order = select.args.get("order")
    if order is None or not order.expressions:
        return None
    first = order.expressions[0]
    key = first.this if isinstance(first, exp.Ordered) else first
    outputs = {identifier_name(e.args["alias"]): e.this for e in select.expressions if isinstance(e, exp.Alias)}
    if isinstance(key, exp.Column) and not key.table and identifier_name(key.this) in outputs:
        key = outputs[identifier_name(key.this)]
    return key if order_direction(key, monotonic) == 1 and _only_column(key, column) else None


def _only_column(node: exp.Expression, column: str) -> bool:
    return all(identifier_name(c.this) == column for c in node.find_all(exp.Column))


def _unqualified(node: exp.Expression) -> exp.Expression:
    out = node.copy()
    for c in out.find_all(exp.Column):
        c.set("table", None)
        c.set("db", None)
        c.set("catalog", None)
    return out


def merge_source_keys(on: Any, source_alias: str) -> tuple[str, ...]:
    """The source columns a MERGE's ON condition equates with target columns (``t.k = s.k AND ...``), in order:
    the key a streaming job's duplicate policy applies to. Empty when the condition has no such equality."""
    node: exp.Expression = getattr(on, "node", on)
    conjuncts = list(node.flatten()) if isinstance(node, exp.And) else [node]
    keys: list[str] = []
    for c in conjuncts:
        c = c.unnest() if isinstance(c, exp.Paren) else c
        if not isinstance(c, exp.EQ):
            continue
        for side, other in ((c.this, c.expression), (c.expression, c.this)):
            if (
                isinstance(side, exp.Column)
                and isinstance(other, exp.Column)
                and identifier_name(side.args.get("table")) == source_alias
                and identifier_name(other.args.get("table")) != source_alias
            ):
                name = identifier_name(side.this)
                if name not in keys:
                    keys.append(name)
    return tuple(keys)
