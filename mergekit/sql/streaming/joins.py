"""Joins of two streams (Calcite's stream.md, "Joining streams to streams"): "It will refuse to execute a query
if it cannot deduce a lock step" — a condition that keeps the two streams' monotonic columns within a finite
interval of each other, so that a row of one stream only waits a bounded time for its partners in the other:

    Orders AS o JOIN Shipments AS s
      ON o.orderId = s.orderId AND s.rowtime BETWEEN o.rowtime AND o.rowtime + INTERVAL '1' HOUR

A conjunct of the join conditions (the ON clauses; the WHERE clause too when every join is inner) bounds a
monotonic column ``a`` of one stream against a monotonic column ``b`` of another when it compares ``a [+/- c]``
with ``b [+/- c]`` (``=``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``; ``c`` a constant), or equates
``FLOOR(a TO unit)`` with ``FLOOR(b TO unit)`` (or CEIL). Two streams are in lock step when their columns are
bounded from below and from above; every stream of the join must be in lock step with another, all connected.
Otherwise: ``Stream-to-stream join of 'O' and 'S' requires a condition that bounds a monotonic column of one
within a finite interval of a monotonic column of the other`` (``STREAM_NOT_ALLOWED``; Calcite has no message of
its own, its doc says it refuses).

A bounded run evaluates the join as the batch join of all the rows: what the stream emits once both sides are
complete (an inner join emits a pair when its later row arrives; an outer join emits an unmatched row when the
lock step shows no partner can come).
"""

from __future__ import annotations

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.references import identifier_name

__all__ = ["StreamInput", "check_lock_step"]

StreamInput = tuple[str, str, frozenset[str]]  # (name as the conditions qualify it, name as printed, monotonic)
_Endpoint = tuple[str, str]  # (stream, column)


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _constant(node: exp.Expression) -> bool:
    return not any(True for _ in node.find_all(exp.Column)) and not any(True for _ in node.find_all(exp.Select))


def _endpoint(node: exp.Expression, streams: list[StreamInput]) -> _Endpoint | None:
    """The monotonic column ``node`` is (plus or minus a constant), as (stream, column)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Add | exp.Sub) and _constant(node.expression):
        return _endpoint(node.this, streams)
    if isinstance(node, exp.Add) and _constant(node.this):
        return _endpoint(node.expression, streams)
    if not isinstance(node, exp.Column):
        return None
    column = identifier_name(node.this)
    qualifier = identifier_name(node.args.get("table")) if node.args.get("table") is not None else None
    owners = [s for s, _, monotonic in streams if column in monotonic and (qualifier is None or s == qualifier)]
    return (owners[0], column) if len(owners) == 1 else None


def _floor_endpoint(node: exp.Expression, streams: list[StreamInput]) -> tuple[str, _Endpoint] | None:
    if isinstance(node, exp.Floor | exp.Ceil) and node.args.get("to") is not None:
        inner = _endpoint(node.this, streams)
        if inner is not None:
            return (f"{type(node).__name__}:{node.args['to'].sql()}", inner)
    return None


def _bounds(conjunct: exp.Expression, streams: list[StreamInput]) -> list[tuple[_Endpoint, _Endpoint, str]]:
    """(x, y, 'lower' | 'upper' | 'both'): ``x`` is bounded from below / above / both by ``y`` (plus a constant)."""
    if isinstance(conjunct, exp.Between):
        x = _endpoint(conjunct.this, streams)
        low, high = _endpoint(conjunct.args["low"], streams), _endpoint(conjunct.args["high"], streams)
        out = []
        if x is not None and low is not None:
            out.append((x, low, "lower"))
        if x is not None and high is not None:
            out.append((x, high, "upper"))
        return out
    kinds = {exp.EQ: "both", exp.GT: "lower", exp.GTE: "lower", exp.LT: "upper", exp.LTE: "upper"}
    kind = kinds.get(type(conjunct))
    if kind is None:
        return []
    left, right = _endpoint(conjunct.this, streams), _endpoint(conjunct.expression, streams)
    if left is not None and right is not None:
        return [(left, right, kind)]
    if kind == "both":
        fl, fr = _floor_endpoint(conjunct.this, streams), _floor_endpoint(conjunct.expression, streams)
        if fl is not None and fr is not None and fl[0] == fr[0]:
            return [(fl[1], fr[1], "both")]  # FLOOR(a TO u) = FLOOR(b TO u): |a - b| < one u
    return []


def check_lock_step(select: exp.Select, streams: list[StreamInput]) -> None:
    """Refuse a join of the SELECT's stream inputs (two or more) without a lock step, as described above."""
    joins = select.args.get("joins") or []
    conditions = [c for j in joins for c in _conjuncts(j.args.get("on"))]
    if all(str(j.args.get("side") or "").upper() == "" for j in joins):
        where = select.args.get("where")
        conditions += _conjuncts(where.this if where is not None else None)
    facts: dict[tuple[_Endpoint, _Endpoint], set[str]] = {}
    for conjunct in conditions:
        for x, y, kind in _bounds(conjunct, streams):
            if x[0] == y[0]:
                continue
            if x > y:  # y bounded the other way round
                x, y, kind = y, x, {"lower": "upper", "upper": "lower"}.get(kind, kind)
            facts.setdefault((x, y), set()).update({"lower", "upper"} if kind == "both" else {kind})
    edges = {(x[0], y[0]) for (x, y), kinds in facts.items() if {"lower", "upper"} <= kinds}
    names = [s for s, _, _ in streams]
    reached = {names[0]}
    grew = True
    while grew:
        grew = False
        for a, b in edges:
            if (a in reached) != (b in reached):
                reached |= {a, b}
                grew = True
    missing = [s for s in streams if s[0] not in reached]
    if missing:
        raise MergekitError(
            ErrorCode.STREAM_NOT_ALLOWED,
            f"Stream-to-stream join of '{streams[0][1]}' and '{missing[0][1]}' requires a condition that bounds a "
            "monotonic column of one within a finite interval of a monotonic column of the other",
        )
