"""SQL scalar functions defined with ``CREATE FUNCTION`` (MonetDB's form, used by seed 004), inlined at render time.

Only what a partitioning expression needs: a body of ``RETURN expr;`` and ``IF cond THEN ... [ELSEIF ...] [ELSE ...]
END IF;`` statements, which becomes one CASE expression over the parameters. A call ``f(a, b)`` anywhere in a
statement is replaced by that expression with the arguments substituted, before translation to Spark, so a function
costs nothing at run time. Definitions live in this process (a registry shared by every Engine), not in a catalog:
a merge table partitioned by a function needs the function defined again in a new process.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import attrs
import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError

from .dialect import DIALECT

__all__ = ["SqlFunction", "parse_create_function", "register_function", "inline_functions", "FUNCTION_HEADER"]

FUNCTION_HEADER = re.compile(r"(?is)^\s*create\s+(?:or\s+replace\s+)?function\s+")
_DEFINITION = re.compile(
    r"(?is)^\s*create\s+(or\s+replace\s+)?function\s+([\w.\"]+)\s*\((.*?)\)\s*returns\s+(.+?)\s+begin\s+(.*)\s+end\s*;?\s*$"
)
_lock = threading.Lock()
_functions: dict[str, SqlFunction] = {}


@attrs.frozen(kw_only=True)
class SqlFunction:
    name: str
    parameters: tuple[str, ...]
    returns: str
    body: exp.Expression  # over the parameters, as columns
    replace: bool = False


def _error(message: str) -> MergekitError:
    return MergekitError(ErrorCode.SYNTAX_ERROR, message)


def _split_body(body: str) -> list[str]:
    return [p.strip() for p in re.split(r";", body) if p.strip()]


def _body_expression(parts: list[str]) -> str:
    """``RETURN e`` / ``IF c THEN ... ELSEIF c THEN ... ELSE ... END IF`` (flattened) -> a CASE expression."""
    whens: list[tuple[str, str]] = []
    default: str | None = None
    i = 0
    while i < len(parts):
        part = parts[i]
        m = re.match(r"(?is)^return\s+(.+)$", part)
        if m:
            if default is None and not whens:
                return m.group(1)
            default = default or m.group(1)
            i += 1
            continue
        m = re.match(r"(?is)^if\s+(.+?)\s+then\s+return\s+(.+)$", part)
        if not m:
            raise _error(f"unsupported statement in a function body: {part}")
        whens.append((m.group(1), m.group(2)))
        i += 1
        while i < len(parts) and not re.match(r"(?is)^end\s+if$", parts[i]):
            m = re.match(r"(?is)^(?:elseif|elsif)\s+(.+?)\s+then\s+return\s+(.+)$", parts[i])
            e = re.match(r"(?is)^else\s+return\s+(.+)$", parts[i])
            if m:
                whens.append((m.group(1), m.group(2)))
            elif e:
                default = e.group(1)
            else:
                raise _error(f"unsupported statement in a function body: {parts[i]}")
            i += 1
        i += 1  # END IF
    if not whens and default is None:
        raise _error("a function body needs a RETURN")
    cases = " ".join(f"WHEN {c} THEN {v}" for c, v in whens)
    return f"CASE {cases} ELSE {default if default is not None else 'NULL'} END"


def parse_create_function(text: str) -> SqlFunction:
    m = _DEFINITION.match(text)
    if not m:
        raise _error("expected CREATE FUNCTION name(params) RETURNS type BEGIN ... END")
    params = tuple(p.split()[0].strip('"').lower() for p in m.group(3).split(",") if p.strip())
    expression = _body_expression(_split_body(m.group(5)))
    try:
        body = sqlglot.parse_one(expression, read=DIALECT)
    except sqlglot.errors.ParseError as exc:
        raise _error(f"function body: {str(exc).splitlines()[0]}") from None
    returns = " ".join(m.group(4).split()).lower()
    return SqlFunction(
        name=m.group(2).strip('"').lower().split(".")[-1],
        parameters=params,
        returns=returns,
        body=exp.cast(body, returns, dialect=DIALECT),
        replace=bool(m.group(1)),
    )


def register_function(function: SqlFunction) -> None:
    with _lock:
        existing = _functions.get(function.name)
        same = existing is not None and (existing.parameters, existing.body) == (function.parameters, function.body)
        if existing is not None and not function.replace and not same:
            raise MergekitError(ErrorCode.GENERIC_USER_ERROR, f"Function '{function.name}' already exists")
        _functions[function.name] = function


def _substitute(args: dict[str, exp.Expression]) -> Callable[[exp.Expression], exp.Expression]:
    def replace(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and not n.table and n.name.lower() in args:
            return exp.paren(args[n.name.lower()].copy())
        return n

    return replace


def inline_functions(node: exp.Expression) -> exp.Expression:
    """Replace calls of registered functions by their bodies (recursively, so functions may call functions)."""
    if not _functions:
        return node
    for _ in range(16):  # bounded: a function calling itself is an error, not a hang
        calls = [n for n in node.find_all(exp.Anonymous) if str(n.this).lower() in _functions]
        if not calls:
            return node
        for call in calls:
            fn = _functions[str(call.this).lower()]
            if len(call.expressions) != len(fn.parameters):
                raise MergekitError(
                    ErrorCode.INVALID_FUNCTION_ARGUMENT,
                    f"Function '{fn.name}' takes {len(fn.parameters)} arguments, got {len(call.expressions)}",
                )
            args = dict(zip(fn.parameters, call.expressions, strict=True))
            body = fn.body.copy().transform(_substitute(args))
            if call is node:
                return inline_functions(exp.paren(body))
            call.replace(exp.paren(body))
    raise MergekitError(ErrorCode.NOT_SUPPORTED, "Functions nested too deeply (or recursive)")
