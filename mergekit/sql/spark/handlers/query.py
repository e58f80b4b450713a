"""Rewrite handlers for predicates and query structure, and the constructs refused outright.

Quantified comparisons with a subquery (``= ANY``, ``<> ALL``), comparisons of ``CHAR(n)`` values (Trino pads the
shorter side with spaces: trailing spaces never count, see :func:`_char_comparison`), ``FETCH FIRST``, tables (time
travel must be resolved before), window frames, ``WITH``, ``UNNEST``; and LATERAL, PIVOT, subscripts,
MATCH_RECOGNIZE, array_agg, listagg, AT TIME ZONE and json_value, which raise NOT_SUPPORTED. Registered in
``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from mergekit.sql.spark.build import dup, lit, spark_fn
from mergekit.sql.spark.rewrite import Handler, Out, Rewriter, handler_registry
from mergekit.sql.spark.types import TrinoType, norm, not_supported

HANDLERS, _handles = handler_registry()


@_handles(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
def _compare(rw: Rewriter, node: exp.Binary, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    right = node.expression
    if isinstance(right, (exp.Any, exp.All)):
        if _is_char(types["this"]):
            raise not_supported("a quantified comparison (ANY, ALL) of a CHAR(n) value is not supported")
        query = right.this
        subquery = query if isinstance(query, exp.Subquery) else exp.Subquery(this=query)
        if isinstance(right, exp.Any) and isinstance(node, exp.EQ):
            return exp.In(this=node.this, query=subquery), None
        if isinstance(right, exp.All) and isinstance(node, exp.NEQ):
            return exp.not_(exp.In(this=node.this, query=subquery), copy=False), None
        raise not_supported(f"quantified comparison {node.key.upper()} {right.key.upper()} (subquery)")
    if _is_char(types["this"]) or _is_char(types["expression"]):
        return _char_comparison(type(node), node.this, node.expression), None
    return node, None


def _is_char(t: Any) -> bool:
    return isinstance(t, TrinoType) and t.name == "char"


def _char_comparison(op: type[exp.Expr], a: exp.Expr, b: exp.Expr) -> exp.Expr:
    """``a op b`` where one side is a ``CHAR(n)`` value: Trino compares the two padded with spaces to the same
    length, so trailing spaces never count. Equality is that of the values without trailing spaces (Spark's
    ``RTRIM`` removes spaces only), which keeps a join on it an equi-join; an order pads both to the longer one."""
    if op in (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ):
        return op(this=spark_fn("RTRIM", a), expression=spark_fn("RTRIM", b))
    width = spark_fn("GREATEST", exp.Length(this=dup(a)), exp.Length(this=dup(b)))
    return op(this=spark_fn("RPAD", a, width, lit(" ")), expression=spark_fn("RPAD", b, width.copy(), lit(" ")))


@_handles(exp.In)
def _in(rw: Rewriter, node: exp.In, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """``IN`` a list with a ``CHAR(n)`` value on either side: each equality without trailing spaces."""
    items = list(node.expressions)
    item_types = types.get("expressions") or []
    if not (_is_char(types["this"]) or any(_is_char(i) for i in item_types)):
        return node, None
    if node.args.get("query") is not None or node.args.get("unnest") is not None or not items:
        raise not_supported("IN (subquery) of a CHAR(n) value is not supported (Trino pads CHAR values)")
    node.set("this", spark_fn("RTRIM", node.this))
    node.set("expressions", [spark_fn("RTRIM", i) for i in items])
    return node, None


@_handles(exp.Case)
def _simple_case(rw: Rewriter, node: exp.Case, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """``CASE x WHEN v THEN ...`` of a ``CHAR(n)`` operand: each WHEN an equality without trailing spaces."""
    operand = node.args.get("this")
    if operand is None or not _is_char(types.get("this")):
        return node, None
    node.set("this", spark_fn("RTRIM", operand))
    for when in node.args.get("ifs") or []:
        when.set("this", spark_fn("RTRIM", when.this))
    return node, None


@_handles(exp.Between)
def _between(rw: Rewriter, node: exp.Between, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if not any(_is_char(types.get(k)) for k in ("this", "low", "high")):
        return node, None
    x = node.this
    low = _char_comparison(exp.GTE, dup(x), node.args["low"])
    high = _char_comparison(exp.LTE, dup(x), node.args["high"])
    return exp.Paren(this=exp.and_(low, high, copy=False)), None


@_handles(exp.Fetch)
def _fetch(rw: Rewriter, node: exp.Fetch, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    options = node.args.get("limit_options")
    if options is not None and (options.args.get("with_ties") or options.args.get("percent")):
        raise not_supported("FETCH ... WITH TIES / PERCENT is not supported on Spark")
    return exp.Limit(expression=node.args.get("count") or lit(1)), None


@_handles(exp.Table)
def _table(rw: Rewriter, node: exp.Table, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if node.args.get("version") is not None:
        raise not_supported("time travel (FOR VERSION/TIMESTAMP AS OF) must be resolved before translation")
    if node.args.get("sample") is not None:
        raise not_supported("TABLESAMPLE is not supported")
    return node, None


@_handles(exp.WindowSpec)
def _window_spec(rw: Rewriter, node: exp.WindowSpec, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if norm(node.args.get("kind")) == "groups":
        raise not_supported("GROUPS window frames are not supported on Spark")
    return node, None


@_handles(exp.With)
def _with(rw: Rewriter, node: exp.With, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if node.args.get("recursive"):
        raise not_supported("WITH RECURSIVE is not supported")
    return node, None


@_handles(exp.Unnest)
def _unnest(rw: Rewriter, node: exp.Unnest, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """UNNEST becomes EXPLODE (or INLINE(ARRAYS_ZIP(...)), NULL-padded like Trino) / LATERAL VIEW."""
    if node.args.get("offset"):
        raise not_supported("UNNEST ... WITH ORDINALITY is not supported")
    join = node.parent
    if isinstance(join, exp.Join) and norm(join.args.get("side")) in ("left", "right", "full"):
        raise not_supported("an outer join with UNNEST is not supported")
    return node, None


def _refuse(what: str) -> Handler:
    def handler(rw: Rewriter, node: Any, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
        raise not_supported(f"{what} is not supported")

    return handler


for _kind, _what in {
    exp.Lateral: "LATERAL",
    exp.Pivot: "PIVOT",
    exp.Bracket: "subscripts",
    exp.MatchRecognize: "MATCH_RECOGNIZE",
    exp.ArrayAgg: "array_agg",
    exp.GroupConcat: "listagg/string_agg",
    exp.JSONValue: "json_value (the SQL/JSON path language)",
}.items():
    HANDLERS[_kind] = _refuse(_what)


def _not_foldable(node: exp.Expr) -> bool:
    """Whether an expression raises its own errors (``raise_error``: date arithmetic, ``varchar(n)`` casts), which
    Spark does not evaluate while it analyses an inline table."""
    return any(str(n.this).upper() == "RAISE_ERROR" for n in node.find_all(exp.Anonymous))


@_handles(exp.Values)
def _values(rw: Rewriter, node: exp.Values, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """``VALUES`` rows as Spark's inline table, or, when a cell raises its own errors (Spark evaluates an inline
    table's cells while analysing it and refuses one that calls ``raise_error``), as ``SELECT ... UNION ALL SELECT
    ...`` with the inline table's column names: the same rows and types, each cell evaluated when the row is."""
    rows = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in node.expressions]
    if not any(_not_foldable(cell) for row in rows for cell in row):
        return node, None
    selects = [exp.select(*[cell.copy().as_(f"col{i + 1}") for i, cell in enumerate(row)]) for row in rows]
    union: exp.Expr = selects[0]
    for select in selects[1:]:
        union = exp.union(union, select, distinct=False)
    alias = node.args.get("alias")
    return exp.Subquery(this=union, alias=alias.copy() if alias is not None else None), None
