"""Rewrite handlers for predicates and query structure, and the constructs refused outright.

Quantified comparisons with a subquery (``= ANY``, ``<> ALL``), ``FETCH FIRST``, tables (time travel must be
resolved before), window frames, ``WITH``, ``UNNEST``; and LATERAL, PIVOT, subscripts, MATCH_RECOGNIZE,
array_agg, listagg, AT TIME ZONE and json_value, which raise NOT_SUPPORTED. Registered in ``HANDLERS`` (see
``_spark_rewrite``).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ._spark_build import _lit
from ._spark_rewrite import _Handler, _Out, _registrar, _Rewriter
from ._spark_types import _T, _norm, _not_supported

HANDLERS: dict[type, _Handler] = {}
_handles = _registrar(HANDLERS)


@_handles(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
def _compare(rw: _Rewriter, node: exp.Binary, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    right = node.expression
    if isinstance(right, (exp.Any, exp.All)):
        query = right.this
        subquery = query if isinstance(query, exp.Subquery) else exp.Subquery(this=query)
        if isinstance(right, exp.Any) and isinstance(node, exp.EQ):
            return exp.In(this=node.this, query=subquery), None
        if isinstance(right, exp.All) and isinstance(node, exp.NEQ):
            return exp.not_(exp.In(this=node.this, query=subquery), copy=False), None
        raise _not_supported(f"quantified comparison {node.key.upper()} {right.key.upper()} (subquery)")
    return node, None


@_handles(exp.Fetch)
def _fetch(rw: _Rewriter, node: exp.Fetch, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    options = node.args.get("limit_options")
    if options is not None and (options.args.get("with_ties") or options.args.get("percent")):
        raise _not_supported("FETCH ... WITH TIES / PERCENT is not supported on Spark")
    return exp.Limit(expression=node.args.get("count") or _lit(1)), None


@_handles(exp.Table)
def _table(rw: _Rewriter, node: exp.Table, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.args.get("version") is not None:
        raise _not_supported("time travel (FOR VERSION/TIMESTAMP AS OF) must be resolved before translation")
    if node.args.get("sample") is not None:
        raise _not_supported("TABLESAMPLE is not supported")
    return node, None


@_handles(exp.WindowSpec)
def _window_spec(rw: _Rewriter, node: exp.WindowSpec, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if _norm(node.args.get("kind")) == "groups":
        raise _not_supported("GROUPS window frames are not supported on Spark")
    return node, None


@_handles(exp.With)
def _with(rw: _Rewriter, node: exp.With, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.args.get("recursive"):
        raise _not_supported("WITH RECURSIVE is not supported")
    return node, None


@_handles(exp.Unnest)
def _unnest(rw: _Rewriter, node: exp.Unnest, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """UNNEST becomes EXPLODE (or INLINE(ARRAYS_ZIP(...)), NULL-padded like Trino) / LATERAL VIEW."""
    if node.args.get("offset"):
        raise _not_supported("UNNEST ... WITH ORDINALITY is not supported")
    join = node.parent
    if isinstance(join, exp.Join) and _norm(join.args.get("side")) in ("left", "right", "full"):
        raise _not_supported("an outer join with UNNEST is not supported")
    return node, None


def _refuse(what: str) -> _Handler:
    def handler(rw: _Rewriter, node: Any, types: dict[str, Any], t: _T, safe: bool) -> _Out:
        raise _not_supported(f"{what} is not supported")

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
