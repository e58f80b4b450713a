"""OVER windows: named windows inlined (every query), and the rules of an OVER window in a streaming query
(seed 001's sliding and cascading windows).

**Named windows.** ``OVER w`` and a refinement ``OVER (w RANGE ...)`` (seed 001 writes ``OVER w (RANGE ...)``,
read as that by ``_stream_syntax``) are replaced by the window they name, refined (Spark rejects refinements).
Calcite's rules and messages (``SYNTAX_ERROR``): ``PARTITION BY not allowed with existing window reference``,
``ORDER BY not allowed in both base and referenced windows``, ``Referenced window cannot have framing
declarations``.

**Implicit order** (seed 001, "Cascading windows": ``SUM(units) OVER (PARTITION BY FLOOR(rowtime TO HOUR))``,
"The first row to arrive in the new hour will start a new total; the second row will have a total that consists
of two rows, and so on"). Calcite orders such a window implicitly: ``SqlToRelConverter.convertOver``, "A logical
range requires an ORDER BY clause. Use the implicit ordering of this relation", takes ``SelectScope.getOrderList()``,
the first monotonic expression of the SELECT's single FROM item, for a RANGE window (any window not declared
ROWS) without ORDER BY. So, in a streaming query, an OVER window without ORDER BY gets ``ORDER BY <first monotonic
column> ASC``, with the default frame of an ordered window, RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW (an
explicit frame is kept): a running total in arrival order, rows with equal times together, as the seed
describes. (Calcite's current ``convertOver`` fixes the bounds before adding the implicit order, which gives
every row the whole partition's total: the seed's text, not that, is the meaning here.) A relational query
keeps the standard meaning, the whole partition. Without a monotonic single FROM item (a join) nothing is
added; a frame then needs an ORDER BY (Calcite: ``Window specification must contain an ORDER BY clause``). A ROWS
window or ROW_NUMBER() without ORDER BY (rows counted in arrival order, which no column holds) is refused by
name (``NOT_SUPPORTED``).

**Streaming rule** (Calcite has none: it plans no streaming OVER; the message follows its streaming aggregation
and ORDER BY rules): a streaming OVER window must be computable as rows arrive, so its ORDER BY must start with a
monotonic expression in its direction (the frame then reaches only rows that have arrived, or rows it waits for:
"The window can reference rows that have not yet arrived. (The stream will wait until they have arrived)"), or
a PARTITION BY key must be monotonic (the partition then ends): ``Streaming window requires a monotonic
expression at the start of its ORDER BY clause or in its PARTITION BY clause`` (``STREAM_NOT_ALLOWED``). A
frame reaching UNBOUNDED FOLLOWING needs a monotonic PARTITION BY key (``UNBOUNDED FOLLOWING window not
supported``, Calcite's validator message). A bounded run evaluates the window as the batch query over all the
rows (end of input: every frame complete), which is what the stream emits row by row.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["inline_named_windows", "check_streaming_windows"]


def identifier_name(ident: exp.Expression) -> str:
    return str(ident.name).lower()  # (``_render``'s, which imports this module)


def _syntax(message: str) -> MergekitError:
    return MergekitError(ErrorCode.SYNTAX_ERROR, message)


def _uses(select: exp.Select) -> list[exp.Window]:
    """The OVER windows of this SELECT (not of its sub-queries, not its WINDOW clause's definitions)."""
    definitions = {id(w) for w in select.args.get("windows") or []}
    out = []
    for window in select.find_all(exp.Window):
        if id(window) in definitions or window.find_ancestor(exp.Select) is not select:
            continue
        if any(id(a) in definitions for a in _ancestors(window, select)):
            continue
        out.append(window)
    return out


def _ancestors(node: exp.Expression, stop: exp.Expression) -> list[exp.Expression]:
    out = []
    parent = node.parent
    while parent is not None and parent is not stop:
        out.append(parent)
        parent = parent.parent
    return out


def _resolve(window: exp.Window, definitions: dict[str, exp.Window], seen: frozenset[str] = frozenset()) -> None:
    """``window`` (a use or a definition) with the named window it refers to merged in, in place."""
    ref = window.args.get("alias")  # OVER w, OVER (w ...), WINDOW w2 AS (w ...)
    if ref is None:
        return
    name = identifier_name(ref)
    base = definitions.get(name)
    if base is None or name in seen:
        return
    base = base.copy()
    _resolve(base, definitions, seen | {name})  # WINDOW w2 AS (w1 ORDER BY ...)
    if window.args.get("partition_by"):
        raise _syntax("PARTITION BY not allowed with existing window reference")
    if base.args.get("order") is not None and window.args.get("order") is not None:
        raise _syntax("ORDER BY not allowed in both base and referenced windows")
    if base.args.get("spec") is not None and window.args.get("spec") is not None:
        raise _syntax("Referenced window cannot have framing declarations")
    window.set("alias", None)
    window.set("partition_by", [p.copy() for p in base.args.get("partition_by") or []] or None)
    if window.args.get("order") is None and base.args.get("order") is not None:
        window.set("order", base.args["order"].copy())
    if window.args.get("spec") is None and base.args.get("spec") is not None:
        window.set("spec", base.args["spec"].copy())


def _inline(select: exp.Select) -> None:
    definitions_list = select.args.get("windows") or []
    if not definitions_list:
        return
    definitions = {identifier_name(w.this): w for w in definitions_list}
    for window in _uses(select):
        _resolve(window, definitions)
    select.set("windows", None)


def inline_named_windows(tree: exp.Expression) -> exp.Expression:
    """``tree`` (unchanged when no SELECT has a WINDOW clause) with every named window inlined."""
    if not any(s.args.get("windows") for s in tree.find_all(exp.Select)):
        return tree
    tree = tree.copy()
    for select in list(tree.find_all(exp.Select)):
        _inline(select)
    return tree


def check_streaming_windows(
    select: exp.Select, direction: Callable[[exp.Expression], int], implicit: exp.Expression | None
) -> None:
    """The rules above for the OVER windows of one SELECT of a streaming query, whose FROM items give
    ``direction`` (+1 increasing, -1 decreasing, 0 neither) and ``implicit`` (the first monotonic expression of a
    single FROM item, or None). Inlines named windows and adds the implicit ORDER BY, in place."""
    _inline(select)
    for window in _uses(select):
        spec = window.args.get("spec")
        rows = spec is not None and str(spec.args.get("kind") or "").upper() == "ROWS"
        function = window.this
        while isinstance(function, exp.IgnoreNulls | exp.RespectNulls):
            function = function.this
        if window.args.get("order") is None:
            if rows or isinstance(function, exp.RowNumber):
                raise MergekitError(
                    ErrorCode.NOT_SUPPORTED,
                    "A ROWS window or ROW_NUMBER() without ORDER BY in a streaming query is not supported (it would "
                    "count rows in arrival order)",
                )
            if implicit is not None:
                window.set("order", exp.Order(expressions=[exp.Ordered(this=implicit.copy(), nulls_first=False)]))
            elif spec is not None:
                raise _syntax("Window specification must contain an ORDER BY clause")
        partition = any(direction(p) != 0 for p in window.args.get("partition_by") or [])
        order = window.args.get("order")
        leading = order.expressions[0] if order is not None and order.expressions else None
        ordered = False
        if leading is not None:
            d = direction(leading.this if isinstance(leading, exp.Ordered) else leading)
            desc = bool(leading.args.get("desc")) if isinstance(leading, exp.Ordered) else False
            ordered = d != 0 and (d > 0) != desc
        if not (ordered or partition):
            raise MergekitError(
                ErrorCode.STREAM_NOT_ALLOWED,
                "Streaming window requires a monotonic expression at the start of its ORDER BY clause or in its "
                "PARTITION BY clause",
            )
        if spec is not None and str(spec.args.get("end") or "").upper() == "UNBOUNDED" and not partition:
            if str(spec.args.get("end_side") or "").upper() == "FOLLOWING":
                raise MergekitError(ErrorCode.STREAM_NOT_ALLOWED, "UNBOUNDED FOLLOWING window not supported")
