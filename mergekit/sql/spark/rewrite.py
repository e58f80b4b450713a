"""The bottom-up rewrite of a Trino sqlglot tree into Spark's, with Trino's semantics.

``Rewriter`` walks the tree bottom up; each node whose Spark meaning differs goes to its *handler*, a
function registered per sqlglot node class in one of the handler modules (``_spark_handlers_numeric``,
``_casts``, ``_functions``, ``_query``) with that module's ``@_handles(kind, ...)`` decorator
(``handler_registry``); the table of all of them is put together by ``_spark_translate`` and handed to the
rewriter, so that this module does not import its handlers. Every function call is first checked against the
function catalogue (``_function_catalog.check_listed``); a listed one is then handled, or passed through as
it is (``PASS_FUNCS``: Spark's function has Trino's semantics), or built by ``ANONYMOUS``. ``TRY(...)`` is evaluated with Spark's ``try_*`` functions plus an
explicit "an error was caught" flag (``_R.fail``), so ``TRY(coalesce(1/0, 5))`` is NULL, as on Trino.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from .build import (
    DOUBLE_INF,
    DOUBLE_NAN,
    any_of,
    atom,
    both,
    case_when,
    dup,
    func_name,
    is_function,
    is_null,
    spark_fn,
)
from .function_catalog import check_argument_count, check_listed
from .infer import Typer
from .types import NOTYPE, TrinoType, check_operand_types, norm, not_supported
from .zones import from_local_time, zone_step


@dataclass
class _R:
    """Result of rewriting a node. Inside TRY, ``fail`` is a never-NULL boolean Spark expression that is
    TRUE when Trino would have raised while evaluating the node, and ``absorbed`` says whether such a
    failure may have been hidden (e.g. by COALESCE) instead of turning the value into NULL."""

    v: exp.Expr
    fail: exp.Expr | None = None
    absorbed: bool = False


# Constructs whose Spark function has Trino's semantics once types are dealt with (done in _translate).
PASS_FUNCS: frozenset[type] = frozenset(
    {
        exp.Count, exp.CountIf, exp.ApproxDistinct, exp.Min, exp.Max, exp.AnyValue, exp.ArgMax, exp.ArgMin,
        exp.LogicalAnd, exp.LogicalOr, exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance,
        exp.VariancePop, exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile, exp.PercentRank, exp.CumeDist,
        exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue, exp.Coalesce, exp.Nullif, exp.Case,
        exp.Lower, exp.Upper, exp.Length, exp.Concat, exp.ConcatWs, exp.Reverse, exp.Pad, exp.StartsWith,
        exp.RegexpLike, exp.Pow, exp.Sqrt, exp.Exp, exp.Rand, exp.IsNan, exp.CurrentDate,
        exp.CurrentTimestamp, exp.Encode, exp.Replace, exp.Array, exp.Pi, exp.Cbrt, exp.Sin, exp.Cos, exp.Tan,
        exp.Asin, exp.Acos, exp.Atan, exp.Atan2, exp.Sinh, exp.Cosh, exp.Tanh, exp.Degrees, exp.Radians,
        exp.LastDay, exp.Levenshtein, exp.Translate, exp.RegexpReplace,
    }
)  # fmt: skip
# Functions that never raise on well-typed input (so they need no special handling inside TRY).
_TRY_SAFE_FUNCS: frozenset[type] = PASS_FUNCS | frozenset(
    {
        exp.If, exp.Substring, exp.Trim, exp.StrPosition, exp.Greatest, exp.Least, exp.Sign, exp.Round,
        exp.Floor, exp.Ceil, exp.Ln, exp.Log, exp.DateAdd, exp.DateDiff, exp.TimestampTrunc, exp.DateTrunc,
        exp.Year, exp.Quarter, exp.Month, exp.Day, exp.DayOfMonth, exp.DayOfWeekIso, exp.DayOfYear,
        exp.WeekOfYear, exp.Hour, exp.Minute, exp.Second, exp.Extract, exp.Localtimestamp, exp.Grouping,
    }
)  # fmt: skip
# Nodes that map NULL input to NULL output: a failure below them surfaces as NULL without help.
_STRICT: tuple[type, ...] = (
    exp.Binary, exp.Neg, exp.Not, exp.Paren, exp.Alias, exp.Cast, exp.Lower, exp.Upper, exp.Length,
    exp.Substring, exp.Trim, exp.Replace, exp.Reverse, exp.Pad, exp.StrPosition, exp.StartsWith, exp.Concat,
    exp.Abs, exp.Sign, exp.Round, exp.Floor, exp.Ceil, exp.Pow, exp.Sqrt, exp.Ln, exp.Log, exp.Exp,
    exp.DateAdd, exp.DateDiff, exp.TimestampTrunc, exp.DateTrunc, exp.Year, exp.Quarter, exp.Month,
    exp.Day, exp.DayOfMonth, exp.DayOfWeekIso, exp.DayOfYear, exp.WeekOfYear, exp.Hour, exp.Minute,
    exp.Second, exp.Extract, exp.Greatest, exp.Least, exp.IsNan, exp.RegexpLike,
)  # fmt: skip
_NOT_STRICT_BINARY: tuple[type, ...] = (exp.Connector, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is)
# Nodes whose sub-expressions are translated on their own (a TRY does not reach into them).
_TRY_LEAVES: tuple[type, ...] = (
    exp.AggFunc, exp.Window, exp.Subquery, exp.Query, exp.Exists, exp.Column, exp.Literal, exp.Null,
    exp.Boolean, exp.Star, exp.Interval,
)  # fmt: skip
# Functions sqlglot does not model: name -> (number of arguments, Spark equivalent).
ANONYMOUS: dict[str, tuple[int, Callable[[list[exp.Expr]], exp.Expr]]] = {
    "every": (1, lambda a: spark_fn("BOOL_AND", *a)),
    "e": (0, lambda a: spark_fn("E")),
    "nan": (0, lambda a: DOUBLE_NAN.copy()),
    "infinity": (0, lambda a: DOUBLE_INF.copy()),
    "is_infinite": (1, lambda a: exp.EQ(this=spark_fn("ABS", a[0]), expression=DOUBLE_INF.copy())),
    "is_finite": (
        1,
        lambda a: exp.not_(
            exp.or_(
                spark_fn("ISNAN", dup(a[0])),
                exp.EQ(this=spark_fn("ABS", a[0]), expression=DOUBLE_INF.copy()),
                copy=False,
            ),
            copy=False,
        ),
    ),
}
STATEMENTS: tuple[type, ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command,
    exp.TruncateTable, exp.Describe,
)  # fmt: skip


class Rewriter:
    def __init__(self, typer: Typer, handlers: Mapping[Any, Handler]) -> None:
        self.ty = typer
        self.handlers = handlers

    # ---- traversal

    def walk(self, node: exp.Expr, safe: bool = False) -> _R:
        if isinstance(node, exp.Try):
            inner = self.walk(node.this, safe=True)
            if inner.fail is None or not inner.absorbed:
                return _R(atom(inner.v))
            return _R(case_when([(inner.fail, exp.Null())], inner.v))
        if safe and isinstance(node, _TRY_LEAVES):
            return _R(self.walk(node, safe=False).v)
        if safe and isinstance(node, exp.Case):
            return self._try_case(node)
        types = {k: self._types_of(v) for k, v in node.args.items()}
        children: dict[str, Any] = {}
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expr):
                r = self.walk(value, safe)
                children[key] = r
                if r.v is not value:
                    node.set(key, r.v)
            elif isinstance(value, list) and any(isinstance(v, exp.Expr) for v in value):
                rs = [self.walk(v, safe) if isinstance(v, exp.Expr) else _R(v) for v in value]
                children[key] = rs
                if any(r.v is not v for r, v in zip(rs, value, strict=False)):
                    node.set(key, [r.v for r in rs])
        new, self_fail = self._translate(node, types, safe)
        if new is not node:
            new = atom(new)
        if not safe:
            return _R(new)
        return self._compose(node, new, children, self_fail)

    def _types_of(self, value: Any) -> Any:
        if isinstance(value, exp.Expr):
            return self.ty.type_of(value)
        if isinstance(value, list):
            return [self.ty.type_of(v) if isinstance(v, exp.Expr) else NOTYPE for v in value]
        return None

    # ---- TRY bookkeeping

    def _compose(self, node: exp.Expr, new: exp.Expr, children: dict[str, Any], self_fail: exp.Expr | None) -> _R:
        flat: list[_R] = []
        for r in children.values():
            flat.extend(r if isinstance(r, list) else [r])
        fails = [r.fail for r in flat if r.fail is not None]
        absorbed = any(r.absorbed for r in flat)
        lazy = _lazy_fail(node, children)
        fail = any_of(lazy if lazy is not None else any_of(*fails), self_fail)
        strict = isinstance(node, _STRICT) and not isinstance(node, _NOT_STRICT_BINARY)
        if fails and not strict:
            absorbed = True
        return _R(new, fail, absorbed)

    def _try_case(self, node: exp.Case) -> _R:
        """CASE inside TRY: only the branch Trino evaluates can fail."""
        operand = node.args.get("this")
        r_op = self.walk(operand, True) if operand is not None else None
        if r_op is not None:
            node.set("this", r_op.v)
        conds, thens = [], []
        for if_node in node.args.get("ifs") or []:
            rc = self.walk(if_node.this, True)
            rt = self.walk(if_node.args["true"], True)
            if_node.set("this", rc.v)
            if_node.set("true", rt.v)
            conds.append(rc)
            thens.append(rt)
        r_default = None
        if node.args.get("default") is not None:
            r_default = self.walk(node.args["default"], True)
            node.set("default", r_default.v)
        rest = r_default.fail if r_default is not None else None
        for rc, rt in reversed(list(zip(conds, thens, strict=False))):
            test = rc.v if r_op is None else exp.EQ(this=dup(r_op.v), expression=dup(rc.v))
            match = exp.Coalesce(this=dup(test) if r_op is None else test, expressions=[exp.false()])
            rest = any_of(rc.fail, both(match, rt.fail), both(exp.not_(match.copy(), copy=False), rest))
        fail = any_of(r_op.fail if r_op is not None else None, rest)
        return _R(node, fail, fail is not None)

    # ---- per-node translation

    def _translate(self, node: exp.Expr, types: dict[str, Any], safe: bool) -> tuple[exp.Expr, exp.Expr | None]:
        anonymous = isinstance(node, exp.Anonymous)
        if anonymous or is_function(node):
            check_listed(node, func_name(node))  # the function catalogue is the allow-list
            check_argument_count(node, types)
        t = self.ty.type_of(node)
        check_operand_types(node, types)
        if isinstance(node, STATEMENTS):
            raise not_supported(f"{node.key.upper()} statements are translated by the planner, not as Spark SQL")
        rezone = None
        if anonymous or is_function(node) or isinstance(node, exp.Binary | exp.Unary | exp.Predicate):
            rezone = zone_step(node, types, t, norm(node.name) if anonymous else None)
        if rezone is not None:  # the result, computed on local times, back to an instant (_spark_zones)
            value, fail = self._translate_node(node, types, t, safe, anonymous)
            return from_local_time(atom(value), rezone), fail
        return self._translate_node(node, types, t, safe, anonymous)

    def _translate_node(
        self, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool, anonymous: bool
    ) -> tuple[exp.Expr, exp.Expr | None]:
        handler = self.handlers.get(norm(node.name) if anonymous else type(node))
        if handler is not None:
            return handler(self, node, types, t, safe)
        if anonymous:
            arity, build = ANONYMOUS.get(norm(node.name), (-1, None))
            if build is None or len(node.expressions) != arity:
                raise not_supported(f"function {node.name}() with {len(node.expressions)} arguments is not supported")
            return build(list(node.expressions)), None
        if not is_function(node):
            return node, None
        if type(node) not in PASS_FUNCS:  # a handled function returned above
            raise not_supported(f"function {func_name(node)}() is not supported on Spark")
        if safe and type(node) not in _TRY_SAFE_FUNCS:
            raise not_supported(f"function {func_name(node)}() is not supported inside TRY")
        return node, None


def _lazy_fail(node: exp.Expr, children: dict[str, Any]) -> exp.Expr | None:
    """Failure condition of the short-circuiting operators (Trino skips operands it does not need)."""
    if isinstance(node, (exp.And, exp.Or)):
        a, b = children.get("this"), children.get("expression")
        if a is None or b is None or b.fail is None:
            return None
        needed = (
            exp.Coalesce(this=dup(a.v), expressions=[exp.true()])
            if isinstance(node, exp.And)
            else exp.not_(exp.Coalesce(this=dup(a.v), expressions=[exp.false()]), copy=False)
        )
        return any_of(a.fail, both(needed, b.fail))
    if isinstance(node, exp.Coalesce):
        items = [children["this"]] + list(children.get("expressions") or [])
        rest = None
        for r in reversed(items):
            rest = any_of(r.fail, both(is_null(r.v), rest))
        return rest
    if isinstance(node, exp.If):
        c, a, b = children["this"], children.get("true"), children.get("false")
        match = exp.Coalesce(this=dup(c.v), expressions=[exp.false()])
        return any_of(
            c.fail,
            both(match, a.fail if a is not None else None),
            both(exp.not_(match.copy(), copy=False), b.fail if b is not None else None),
        )
    return None


# ---- handlers: (rewriter, node with rewritten children, original child types, original type, safe)

Out = tuple[exp.Expr, exp.Expr | None]
Handler = Callable[[Rewriter, Any, dict[str, Any], TrinoType, bool], Out]
_Key = type | str  # a node class, or the (lower-case) name of a function sqlglot parses as exp.Anonymous


def handler_registry() -> tuple[dict[_Key, Handler], Callable[..., Callable[[Handler], Handler]]]:
    """A handler module's table and its ``@_handles(kind, ...)`` decorator, which registers the function in the
    table for each node class or anonymous function name: ``HANDLERS, _handles = handler_registry()``."""
    table: dict[_Key, Handler] = {}

    def _handles(*kinds: _Key) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            for kind in kinds:
                table[kind] = fn
            return fn

        return register

    return table, _handles


def call_args(node: exp.Anonymous, name: str, count: int) -> list[exp.Expr]:
    """The arguments of ``node``, a call of the function ``name`` taking ``count`` (one or two) arguments;
    NOT_SUPPORTED when it has another number."""
    args = list(node.expressions)
    if len(args) != count:
        raise not_supported(f"{name} takes {'one argument' if count == 1 else 'two arguments'}")
    return args


def need_type(t: TrinoType, what: str) -> TrinoType:
    if not t.known:
        raise not_supported(f"cannot infer the operand types of {what}; pass the tables' column types in `schema`")
    return t
