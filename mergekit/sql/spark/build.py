"""Small builders of Spark sqlglot expressions for the Trino SQL -> Spark SQL rewrite.

Literals, casts, anonymous function calls, parenthesizing (``atom``), NULL tests, the nullable boolean
combinators the TRY bookkeeping uses (``both``, ``any_of``, ``failed``), raising a coded error from Spark
(``_raise``, and ``checked``: a value guarded by argument checks, NULL plus a failure flag inside TRY) and a
few constants. They know no Trino semantics; the rewrite (``_spark_rewrite``) and every handler module share
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode
from mergekit.sql.references import numeric_literal


def lit(value: float | str) -> exp.Expr:
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, int) and value < 0:
        return exp.Paren(this=exp.Literal.number(value))
    return exp.Literal.number(value)


_DT_CACHE: dict[str, exp.DataType] = {}


def _spark_dt(spark_type: str) -> exp.DataType:
    dt = _DT_CACHE.get(spark_type)
    if dt is None:
        dt = _DT_CACHE[spark_type] = exp.DataType.build(spark_type, dialect="spark")
    return dt.copy()


def cast_to(e: exp.Expr, spark_type: str, safe: bool = False) -> exp.Expr:
    if safe:
        return exp.TryCast(this=e, to=_spark_dt(spark_type), safe=True)
    return exp.Cast(this=e, to=_spark_dt(spark_type))


def spark_fn(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def atom(e: exp.Expr) -> exp.Expr:
    """``e`` wrapped in parentheses unless it is self-delimiting, so it can be nested anywhere."""
    if isinstance(e, (exp.Binary, exp.Unary, exp.Predicate)) and not isinstance(e, exp.Paren) and not is_function(e):
        return exp.Paren(this=e)
    if isinstance(e, exp.Literal) and e.is_number and e.this.startswith("-"):
        return exp.Paren(this=e)
    return e


def dup(e: exp.Expr) -> exp.Expr:
    return atom(e.copy())


def is_null(e: exp.Expr) -> exp.Expr:
    return exp.Is(this=dup(e), expression=exp.Null())


def _not_null(e: exp.Expr) -> exp.Expr:
    return exp.not_(exp.Is(this=dup(e), expression=exp.Null()), copy=False)


def both(cond: exp.Expr, fail: exp.Expr | None) -> exp.Expr | None:
    """``cond AND fail`` where a missing ``fail`` means "cannot fail" (so the result cannot either)."""
    return None if fail is None else exp.and_(cond, fail, copy=False)


def any_of(*conds: exp.Expr | None) -> exp.Expr | None:
    parts = [c for c in conds if c is not None]
    if not parts:
        return None
    return exp.Paren(this=exp.or_(*parts, copy=False)) if len(parts) > 1 else parts[0]


def case_when(whens: Sequence[tuple[exp.Expr, exp.Expr]], default: exp.Expr | None) -> exp.Expr:
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in whens], default=default)


def failed(result: exp.Expr, *inputs: exp.Expr) -> exp.Expr:
    """True when a ``try_*`` form returned NULL although none of its inputs was NULL."""
    return exp.and_(*[_not_null(i) for i in inputs], is_null(result), copy=False)


DOUBLE_INF = exp.Cast(this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE"))
DOUBLE_NAN = exp.Cast(this=exp.Literal.string("NaN"), to=exp.DataType.build("DOUBLE"))
TWO_POW_52 = 4503599627370496


def func_name(node: exp.Expr) -> str:
    return node.sql_name() if isinstance(node, exp.Func) else node.key.upper()


def is_function(node: exp.Expr) -> bool:
    """sqlglot models AND/OR and EXISTS as functions too; those are operators here."""
    return isinstance(node, exp.Func) and not isinstance(node, (exp.Connector, exp.Exists))


def _false_if_null(cond: exp.Expr) -> exp.Expr:
    return exp.Coalesce(this=cond, expressions=[exp.false()])


def _raise(code: ErrorCode, message: str | exp.Expr) -> exp.Expr:
    """Spark's ``raise_error`` with mergekit's ``[CODE] message`` text (``find_error`` turns it back into the
    coded error wherever Spark raised it). ``message`` is a literal text or a Spark string expression."""
    if isinstance(message, str):
        return spark_fn("RAISE_ERROR", exp.Literal.string(f"[{code.name}] {message}"))
    return spark_fn("RAISE_ERROR", spark_fn("CONCAT", exp.Literal.string(f"[{code.name}] "), message))


Check = tuple[exp.Expr, ErrorCode, "str | exp.Expr"]


def checked(
    value: exp.Expr, args: Sequence[exp.Expr], checks: Sequence[tuple[Any, ErrorCode, Any]], safe: bool
) -> tuple[exp.Expr, exp.Expr | None]:
    """``value`` unless a check's condition holds, when Trino raises that check's coded error; a check is only
    made when every argument is non-NULL (Trino does not call a function with a NULL argument). Inside TRY the
    failure is NULL plus the failure flag. Conditions are Spark booleans over copies of the arguments."""
    present = [_not_null(a) for a in args if not isinstance(a, exp.Literal)]
    whens: list[tuple[exp.Expr, exp.Expr]] = []
    for cond, code, message in checks:
        when = exp.and_(*[p.copy() for p in present], cond, copy=False) if present else cond
        whens.append((when, exp.Null() if safe else _raise(code, message)))
    out = case_when(whens, value) if whens else value
    if not safe or not whens:
        return out, None
    return out, any_of(*[_false_if_null(w.copy()) for w, _ in whens])


def int_value(e: exp.Expr | None) -> int | None:
    """The value of an integer literal (``-1`` parses as a negation of ``1``), else None."""
    return numeric_literal(e, int)


def strict_args(value: exp.Expr, *args: exp.Expr) -> exp.Expr:
    """NULL when an argument is NULL (Trino does not call a function with a NULL argument), else ``value``:
    for translations that would otherwise give a value (a CASE whose ELSE branch is a constant)."""
    nullable = [a for a in args if not isinstance(a, exp.Literal)]
    if not nullable:
        return value
    return case_when([(exp.or_(*[is_null(a) for a in nullable], copy=False), exp.Null())], value)
