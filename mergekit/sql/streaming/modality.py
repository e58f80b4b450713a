"""Stream or relation: the modality rules of seed 001 (Calcite's ``SqlValidatorImpl.validateModality``), with
Calcite's messages, raised as ``STREAM_NOT_ALLOWED`` before any Spark work.

* A query is a *streaming* query when its top-most SELECT (each branch of a set operation) says ``SELECT
  STREAM``; ``STREAM`` in sub-queries, views and WITH bodies has no effect (seed 001). Branches must agree:
  ``Set operator cannot combine streaming and non-streaming inputs`` (a VALUES branch is not streaming).
* A streaming query converts its FROM items to streams: a stream converts, a table does not (``Cannot convert
  table 'E' to stream``, the alias upper-cased as Calcite prints it), VALUES does not (``Cannot stream
  VALUES``), a sub-query or a WITH query converts when something it reads converts. Of several FROM items
  (a join) at least one must convert: ``Cannot stream results of a query with no streaming inputs: 'A, B'. At
  least one input should be convertible to a stream``.
* A relational query reads only relations: a stream that is not also a table (``history``) fails with ``Cannot
  convert stream 'SHIPMENTS' to relation``, wherever it is read.
* A window table function (``TABLE(TUMBLE(TABLE s, ...))``, ``_window_tvf``) converts when its data does; its
  ``window_start`` and ``window_end`` are monotonic.
* In a streaming query, every SELECT that reads a stream is a streaming operator: a join of two streams needs a
  lock step (``_stream_joins``), and its OVER windows follow the streaming rules and get Calcite's implicit
  ORDER BY (``_stream_over``; :func:`prepare_stream_query` gives the query a bounded run evaluates).

The objects' kinds come from the caller (:class:`ObjectKind` per table reference), which knows the catalogs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.names import TableRef
from mergekit.sql.references import identifier_name, numeric_literal, table_ref_of

from .interval_diff import difference_operands
from .joins import check_lock_step
from .marks import is_stream_select
from .over import check_streaming_windows
from .window_tvf import mark_streaming, window_tvf

__all__ = [
    "ObjectKind",
    "ObjectInfo",
    "check_modality",
    "emission_order",
    "prepare_stream_query",
    "stream_not_allowed",
]


class ObjectKind(enum.Enum):
    TABLE = "table"  # a relation only
    STREAM = "stream"  # a stream only
    BOTH = "both"  # a stream whose history is also a relation (CREATE STREAM ... WITH (history = true))


@attrs.frozen
class ObjectInfo:
    """What the caller knows of a table reference: its kind, and for a stream its monotonic columns (name,
    descending) in declaration order."""

    kind: ObjectKind
    monotonic: tuple[tuple[str, bool], ...] = ()


def stream_not_allowed(message: str) -> MergekitError:
    return MergekitError(ErrorCode.STREAM_NOT_ALLOWED, message)


def set_branches(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Subquery):
        return set_branches(node.this)
    if isinstance(node, exp.SetOperation):
        return set_branches(node.this) + set_branches(node.expression)
    return [node]


def check_modality(query: Any, kind_of: Callable[[TableRef], ObjectInfo]) -> bool:
    """Check a query's modality (a ``Query`` of the model, or a tree); True for a streaming query. ``kind_of``
    tells what each table is."""
    node: exp.Expression = getattr(query, "node", query)
    branches = set_branches(node)
    flags = [is_stream_select(b) for b in branches]
    if any(flags) and not all(flags):
        raise stream_not_allowed("Set operator cannot combine streaming and non-streaming inputs")
    ctes = cte_queries(node)
    if all(flags):
        for branch in branches:
            _check_streaming_select(branch, kind_of, ctes)
            _check_streaming_rules(branch, kind_of, ctes)
        _streaming_operators(node, kind_of)
        order = node.args.get("order") if isinstance(node, exp.SetOperation) else None
        if order is not None:
            monotonic = set.intersection(*[set(_monotonic_outputs(b, kind_of, ctes)) for b in branches])
            _check_order(order, lambda e: _direction_of_output(e, monotonic))
        return True
    _check_relational(node, kind_of)
    return False


def cte_queries(node: exp.Expression) -> dict[str, exp.Expression]:
    """WITH queries by name; one with a column list (``WITH t (a, b) AS (...)``) as a sub-query so aliased."""
    out: dict[str, exp.Expression] = {}
    for cte in node.find_all(exp.CTE):
        alias = cte.args["alias"]
        body = cte.this
        if alias.args.get("columns"):
            body = exp.Subquery(this=body.copy(), alias=exp.TableAlias(columns=[c.copy() for c in alias.columns]))
        out[identifier_name(alias.this)] = body
    return out


def from_items(select: exp.Expression) -> list[exp.Expression]:
    items: list[exp.Expression] = []
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is not None:
        items.append(from_.this)
    for join in select.args.get("joins") or []:
        items.append(join.this)
    return items


def _alias(item: exp.Expression) -> str:
    alias = item.args.get("alias")
    if alias is not None and alias.this is not None:
        return identifier_name(alias.this).upper()
    tvf = window_tvf(item)
    if tvf is not None:  # TABLE(TUMBLE(TABLE orders, ...)): the table it reads
        inner = from_items(tvf.data.this)
        return _alias(inner[0]) if len(inner) == 1 and isinstance(tvf.data.this, exp.Select) else "EXPR$0"
    if isinstance(item, exp.Table):
        return identifier_name(item.this).upper()
    return "EXPR$0"


def _check_streaming_select(
    select: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> None:
    items = from_items(select)
    if not items:
        raise stream_not_allowed("Cannot stream VALUES")
    convertible = [_converts(item, kind_of, ctes) for item in items]
    if len(items) == 1 and not convertible[0]:
        item = items[0]
        if _is_values(item, ctes):
            raise stream_not_allowed("Cannot stream VALUES")
        raise stream_not_allowed(f"Cannot convert table '{_alias(item)}' to stream")
    if not any(convertible):
        names = ", ".join(_alias(i) for i in items)
        raise stream_not_allowed(
            f"Cannot stream results of a query with no streaming inputs: '{names}'. "
            "At least one input should be convertible to a stream"
        )


def _is_values(item: exp.Expression, ctes: dict[str, exp.Expression]) -> bool:
    tvf = window_tvf(item)
    if tvf is not None:
        return _is_values(tvf.data, ctes)
    inner = item.this if isinstance(item, exp.Subquery) else item
    if isinstance(inner, exp.Values):
        return True
    if isinstance(inner, exp.Select):
        items = from_items(inner)
        return not items or all(_is_values(i, ctes) for i in items)
    return False


def _converts(item: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]) -> bool:
    """Whether a FROM item can be read as a stream."""
    tvf = window_tvf(item)
    if tvf is not None:  # a window table function converts when its data does
        return _converts(tvf.data, kind_of, ctes)
    if isinstance(item, exp.Table):
        name = identifier_name(item.this) if len(item.parts) == 1 else None
        if name is not None and name in ctes:
            return _query_converts(ctes[name], kind_of, ctes)
        if not item.name:
            return False  # UNNEST and other table functions
        return kind_of(table_ref_of(item)).kind is not ObjectKind.TABLE
    if isinstance(item, exp.Values):
        return False
    if isinstance(item, exp.Subquery):
        return _query_converts(item.this, kind_of, ctes)
    return False


def _query_converts(
    node: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> bool:
    return any(
        any(_converts(i, kind_of, ctes) for i in from_items(b)) for b in set_branches(node) if isinstance(b, exp.Select)
    )


def _check_relational(node: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo]) -> None:
    ctes = cte_queries(node)
    for table in node.find_all(exp.Table):
        if not table.name or (len(table.parts) == 1 and identifier_name(table.this) in ctes):
            continue
        if kind_of(table_ref_of(table)).kind is ObjectKind.STREAM:
            raise stream_not_allowed(f"Cannot convert stream '{identifier_name(table.this).upper()}' to relation")


# -- monotonicity (Calcite's SqlValidatorTest.testMonotonic rules, the ones streaming queries need) ------------

_INCREASING, _DECREASING = 1, -1
_GROUP_FUNCTIONS = {"TUMBLE", "HOP", "SESSION"}
_AUXILIARY = {f"{g}_{edge}" for g in _GROUP_FUNCTIONS for edge in ("START", "END")}
_AGGREGATES = (exp.AggFunc,)


def _is_constant(node: exp.Expression) -> bool:
    return not any(True for _ in node.find_all(exp.Column))


def order_direction(node: exp.Expression, monotonic: dict[str, int]) -> int:
    """+1 increasing, -1 decreasing, 0 neither (or constant), for an expression over columns of known
    monotonicity (``monotonic``: unqualified column name -> direction)."""
    if isinstance(node, exp.Paren | exp.Alias):
        return order_direction(node.this, monotonic)
    if isinstance(node, exp.Column):
        return monotonic.get(identifier_name(node.this), 0)
    if isinstance(node, exp.Floor | exp.Ceil | exp.Cast | exp.TryCast):
        return order_direction(node.this, monotonic)
    if isinstance(node, exp.Extract):
        unit = str(node.this.name if isinstance(node.this, exp.Var) else node.this).upper()
        return order_direction(node.expression, monotonic) if unit == "YEAR" else 0
    operands = difference_operands(node)
    if operands is not None:  # (a - b) HOUR (Calcite's testMonotonic)
        a, b = operands
        if _is_constant(b):
            return order_direction(a, monotonic)
        return -order_direction(b, monotonic) if _is_constant(a) else 0
    if isinstance(node, exp.Anonymous):
        name = str(node.this).upper()
        if name in _GROUP_FUNCTIONS | _AUXILIARY and node.expressions:
            return order_direction(node.expressions[0], monotonic)
        return 0
    if isinstance(node, exp.Add | exp.Sub):
        left, right = order_direction(node.this, monotonic), order_direction(node.expression, monotonic)
        if _is_constant(node.expression):
            return left
        if isinstance(node, exp.Add) and _is_constant(node.this):
            return right
        if isinstance(node, exp.Add) and left == right:
            return left
        return 0
    if isinstance(node, exp.Mul | exp.Div):
        factor = numeric_literal(node.expression, float)
        if factor is None and isinstance(node, exp.Mul):
            factor, inner = numeric_literal(node.this, float), node.expression
        else:
            inner = node.this
        if not factor:
            return 0
        return order_direction(inner, monotonic) * (1 if factor > 0 else -1)
    return 0


def _input_monotonic(
    select: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> dict[str, int]:
    """The monotonic columns a SELECT's FROM items provide (streams' declared columns, sub-queries' monotonic
    outputs), by unqualified name, in order (an item's first one first)."""
    out: dict[str, int] = {}
    for item in from_items(select):
        for column, direction in _item_monotonic(item, kind_of, ctes).items():
            out.setdefault(column, direction)
    return out


def _item_monotonic(
    item: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> dict[str, int]:
    tvf = window_tvf(item)
    if tvf is not None:  # its data's columns (rows leave a session when it ends), window_start and window_end
        data = {} if tvf.kind == "SESSION" else _item_monotonic(tvf.data, kind_of, ctes)
        edges = ("window_end",) if tvf.kind == "SESSION" else ("window_start", "window_end")
        return {**data, **dict.fromkeys(edges, _INCREASING)}
    if isinstance(item, exp.Table) and item.name:
        name = identifier_name(item.this) if len(item.parts) == 1 else None
        if name is not None and name in ctes:
            return dict.fromkeys(_query_monotonic_outputs(ctes[name], kind_of, ctes), _INCREASING)
        info = kind_of(table_ref_of(item))
        return {column: _DECREASING if descending else _INCREASING for column, descending in info.monotonic}
    if isinstance(item, exp.Subquery):
        return dict.fromkeys(_query_monotonic_outputs(item, kind_of, ctes), _INCREASING)
    return {}


def _query_monotonic_outputs(
    node: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> list[str]:
    """The increasing outputs of every branch of a query, in the first branch's order (renamed by the column list
    of ``(query) AS t (a, b)``)."""
    branches = [b for b in set_branches(node) if isinstance(b, exp.Select)]
    if not branches:
        return []
    alias = node.args.get("alias") if isinstance(node, exp.Subquery) else None
    if alias is not None and alias.args.get("columns"):
        names = [identifier_name(c) for c in alias.columns]
        positions = []
        for i, name in enumerate(names):
            outputs = [b.expressions[i] if i < len(b.expressions) else None for b in branches]
            if all(e is not None and not isinstance(e, exp.Star) for e in outputs):
                directions = [
                    order_direction(e, _input_monotonic(b, kind_of, ctes))
                    for e, b in zip(outputs, branches, strict=True)
                ]
                if all(d == _INCREASING for d in directions):
                    positions.append(name)
        return positions
    common = set.intersection(*[set(_monotonic_outputs(b, kind_of, ctes)) for b in branches])
    return [c for c in _monotonic_outputs(branches[0], kind_of, ctes) if c in common]


def _monotonic_outputs(
    select: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> list[str]:
    """The output column names of a SELECT that are increasing (decreasing ones are rare enough to leave out), in
    select-list order."""
    if not isinstance(select, exp.Select):
        return []
    monotonic = _input_monotonic(select, kind_of, ctes)
    out: dict[str, None] = {}
    for e in select.expressions:
        if isinstance(e, exp.Star):
            out.update(dict.fromkeys(c for c, d in monotonic.items() if d == _INCREASING))
        elif order_direction(e, monotonic) == _INCREASING and e.alias_or_name:
            out[e.alias_or_name.lower() if not isinstance(e, exp.Alias) else identifier_name(e.args["alias"])] = None
    return list(out)


def _direction_of_output(node: exp.Expression, monotonic_outputs: Iterable[str]) -> int:
    return order_direction(node, dict.fromkeys(monotonic_outputs, _INCREASING))


def has_aggregation(select: exp.Select) -> bool:
    if select.args.get("group") is not None or select.args.get("having") is not None:
        return True
    for e in select.expressions:
        for agg in e.find_all(*_AGGREGATES):
            if agg.find_ancestor(exp.Window) is None and agg.find_ancestor(exp.Subquery, exp.Select) is select:
                return True
    return False


def _grouping_sets(select: exp.Select) -> list[list[exp.Expression]]:
    """The key lists a GROUP BY groups by: one for plain keys, one per grouping set (each with the plain keys);
    ROLLUP and CUBE include the grand total, an empty list (Calcite: invalid in a streaming aggregation)."""
    group = select.args.get("group")
    if group is None:
        return [[]]
    if (
        group.args.get("rollup")
        or group.args.get("cube")
        or any(isinstance(e, exp.Rollup | exp.Cube) for e in group.expressions)
    ):
        return [[]]
    plain = [e for e in group.expressions if not isinstance(e, exp.GroupingSets)]
    sets = [g for e in group.expressions if isinstance(e, exp.GroupingSets) for g in e.expressions]
    if not sets:
        return [plain]
    out = []
    for item in sets:
        if isinstance(item, exp.Tuple):
            out.append(plain + list(item.expressions))
        elif isinstance(item, exp.Paren):
            out.append([*plain, item.this])
        else:
            out.append([*plain, item])
    return out


def _check_streaming_rules(
    select: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo], ctes: dict[str, exp.Expression]
) -> None:
    """Seed 001: a streaming aggregation needs a monotonic expression in GROUP BY; a streaming ORDER BY must
    start with a monotonic expression (in its direction)."""
    if not isinstance(select, exp.Select):
        return
    monotonic = _input_monotonic(select, kind_of, ctes)
    if has_aggregation(select):
        if not all(any(order_direction(k, monotonic) != 0 for k in keys) for keys in _grouping_sets(select)):
            raise stream_not_allowed(
                "Streaming aggregation requires at least one monotonic expression in GROUP BY clause"
            )
    order = select.args.get("order")
    if order is not None:
        outputs = {identifier_name(e.args["alias"]): e.this for e in select.expressions if isinstance(e, exp.Alias)}

        def direction(key: exp.Expression) -> int:
            if isinstance(key, exp.Column) and not key.table and identifier_name(key.this) in outputs:
                key = outputs[identifier_name(key.this)]
            return order_direction(key, monotonic)

        _check_order(order, direction)


def _check_order(order: exp.Expression, direction: Callable[[exp.Expression], int]) -> None:
    keys = list(order.expressions)
    if not keys:
        return
    first = keys[0]
    desc = bool(first.args.get("desc")) if isinstance(first, exp.Ordered) else False
    d = direction(first.this if isinstance(first, exp.Ordered) else first)
    if d == 0 or (d == _INCREASING) == desc:
        raise stream_not_allowed("Streaming ORDER BY must start with monotonic expression")


def emission_order(query: Any, kind_of: Callable[[TableRef], ObjectInfo]) -> tuple[int | str, ...] | None:
    """For a bounded run of a streaming query without a top-level ORDER BY: None when the query is stateless
    (its rows come in arrival order as they are read), else the 1-based output positions to sort its rows by to
    give them in emission order: the increasing outputs first (window ends, floored times: a row is emitted when
    its key closes; the end of a window before its start, as sessions close in the order of their ends), then
    every other output (an order among rows emitted together). For ``SELECT *`` over a SESSION window table
    function: its ``window_end``, ``window_start`` and time column, by name (quoted for Spark SQL)."""
    node: exp.Expression = getattr(query, "node", query)
    if isinstance(node, exp.SetOperation) and node.args.get("order") is not None:
        return None
    branches = set_branches(node)
    if any(isinstance(b, exp.Select) and b.args.get("order") is not None for b in branches) and len(branches) == 1:
        return None
    if not _stateful(node):
        return None
    ctes = cte_queries(node)
    first = branches[0]
    if not isinstance(first, exp.Select):
        return None
    listed = first
    while listed.expressions and all(isinstance(e, exp.Star) for e in listed.expressions):
        items = from_items(listed)  # SELECT * FROM (sub-query): the sub-query's outputs, in its order
        inner = items[0] if len(items) == 1 else None
        if isinstance(inner, exp.Table) and inner.name and len(inner.parts) == 1:
            inner = ctes.get(identifier_name(inner.this))
        inner = inner.this if isinstance(inner, exp.Subquery) else inner
        if not isinstance(inner, exp.Select):
            break
        listed = inner
    if any(isinstance(e, exp.Star) for e in listed.expressions):
        sessions = [t for t in map(window_tvf, from_items(listed)) if t is not None and t.kind == "SESSION"]
        if len(branches) == 1 and len(sessions) == 1:
            return ("`window_end`", "`window_start`", f"`{identifier_name(sessions[0].time.this)}`")
        return None
    monotonic = _query_monotonic_outputs(node, kind_of, ctes)
    names = [
        e.alias_or_name.lower() if not isinstance(e, exp.Alias) else identifier_name(e.args["alias"])
        for e in listed.expressions
    ]
    leading = [i + 1 for i, n in enumerate(names) if n in monotonic]
    ends = [i for i in leading if _is_window_end(listed.expressions[i - 1])]
    leading = ends + [i for i in leading if i not in ends]
    return tuple(leading + [i + 1 for i in range(len(names)) if i + 1 not in leading])


def _is_window_end(e: exp.Expression) -> bool:
    inner = e.this if isinstance(e, exp.Alias) else e
    if isinstance(inner, exp.Anonymous):
        return str(inner.this).upper().endswith("_END")
    return isinstance(inner, exp.Column) and identifier_name(inner.this) == "window_end"


def _stateful(node: exp.Expression) -> bool:
    """Whether any SELECT of the query aggregates, joins, sorts or uses window functions, or reads a SESSION
    window table function (its output order is then not the arrival order)."""
    for select in node.find_all(exp.Select):
        if has_aggregation(select) or select.args.get("joins") or select.args.get("distinct"):
            return True
        if any(True for _ in select.find_all(exp.Window)):
            return True
        if any(t is not None and t.kind == "SESSION" for t in map(window_tvf, from_items(select))):
            return True
    return False


def prepare_stream_query(query: Any, kind_of: Callable[[TableRef], ObjectInfo]) -> Any:
    """A streaming query (a ``Query``) as a bounded run evaluates it: its OVER windows with named windows inlined
    and the implicit ORDER BY of a streaming OVER (``_stream_over``). The rules of ``check_modality`` apply."""
    return attrs.evolve(query, node=_streaming_operators(query.node, kind_of))


def _streaming_operators(node: exp.Expression, kind_of: Callable[[TableRef], ObjectInfo]) -> exp.Expression:
    """A copy of a streaming query's tree, checked and prepared SELECT by SELECT (those that read a stream):
    joins of streams need a lock step (``_stream_joins``); OVER windows follow the streaming rules and get the
    implicit ORDER BY (``_stream_over``)."""
    node = node.copy()
    ctes = cte_queries(node)
    for select in list(node.find_all(exp.Select)):
        items = from_items(select)
        streams = [i for i in items if _converts(i, kind_of, ctes)]
        if not streams:
            continue
        for item in streams:
            mark_streaming(item)
        if len(streams) > 1:
            inputs = [(_qualifier(i), _alias(i), frozenset(_item_monotonic(i, kind_of, ctes))) for i in streams]
            check_lock_step(select, inputs)
        monotonic = _input_monotonic(select, kind_of, ctes)
        first = next(iter(_item_monotonic(items[0], kind_of, ctes)), None) if len(items) == 1 else None
        implicit = exp.column(exp.to_identifier(first)) if first is not None else None
        check_streaming_windows(select, lambda e, m=monotonic: order_direction(e, m), implicit)  # type: ignore[misc]
    return node


def _qualifier(item: exp.Expression) -> str:
    """The name columns of a FROM item are qualified with (its alias, or a table's name), lower-case."""
    alias = item.args.get("alias")
    if alias is not None and alias.this is not None:
        return identifier_name(alias.this)
    return identifier_name(item.this) if isinstance(item, exp.Table) and item.name else ""
