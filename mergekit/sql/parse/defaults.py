"""Column defaults and CHECK constraints in the syntax tree: the ``DEFAULT`` keyword written as a value, and what
a ``DEFAULT`` or ``CHECK`` expression may contain.

``DEFAULT`` written as a value (``VALUES (1, DEFAULT)``, ``SET c = DEFAULT``, MERGE's ``INSERT VALUES (...,
DEFAULT)``) parses as a column reference named ``DEFAULT`` (unquoted: a quoted ``"default"`` is a column). The
planner replaces it by the column's default expression (or NULL); :func:`replace_defaults` does that inside an
INSERT's VALUES rows, where only the position names the column.

A column's ``DEFAULT`` expression is constant-ish (PostgreSQL's rules): literals, arithmetic, functions such as
``current_date``, but no column reference, subquery, aggregate or window function. A ``CHECK`` expression may
read the row's columns but no subquery, aggregate or window function. Both are refused here with PostgreSQL's
wording; whether they resolve and have the right type is Spark's analysis, in the engine.
"""

from __future__ import annotations

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError

__all__ = [
    "is_default",
    "refuse_default",
    "replace_defaults",
    "default_positions",
    "values_items",
    "values_row",
    "check_default_expression",
    "check_check_expression",
]


def is_default(node: exp.Expression) -> bool:
    """The keyword ``DEFAULT`` where a value stands (an unquoted, unqualified column named DEFAULT)."""
    if not isinstance(node, exp.Column) or node.args.get("table") is not None:
        return False
    ident = node.this
    return isinstance(ident, exp.Identifier) and not ident.args.get("quoted") and ident.name.upper() == "DEFAULT"


def _stray_default(node: exp.Expression) -> exp.Expression | None:
    return next((n for n in node.find_all(exp.Column) if is_default(n)), None)


def _misplaced() -> MergekitError:
    return MergekitError(
        ErrorCode.SYNTAX_ERROR,
        "DEFAULT is allowed only as a whole value: in INSERT ... VALUES rows, UPDATE SET and MERGE UPDATE SET / "
        "INSERT VALUES",
    )


def replace_defaults(node: exp.Expression, defaults: tuple[exp.Expression | None, ...]) -> exp.Expression:
    """A copy of an INSERT source in which every ``DEFAULT`` of a top-level VALUES row, at position i, is
    ``defaults[i]`` (NULL for None); a ``DEFAULT`` anywhere else is a ``SYNTAX_ERROR``."""
    if _stray_default(node) is None:
        return node
    node = node.copy()
    if isinstance(node, exp.Values):
        for row in node.expressions:
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            for i, item in enumerate(list(items)):
                if is_default(item) and i < len(defaults):
                    value = defaults[i]
                    item.replace(value.copy() if value is not None else exp.Null())
    if _stray_default(node) is not None:
        raise _misplaced()
    return node


def default_positions(node: exp.Expression) -> tuple[frozenset[int], ...] | None:
    """Per row of a top-level VALUES list, the positions written ``DEFAULT``; None when ``node`` is not one."""
    if not isinstance(node, exp.Values):
        return None
    rows = []
    for row in node.expressions:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        rows.append(frozenset(i for i, item in enumerate(items) if is_default(item)))
    return tuple(rows)


def values_items(node: exp.Expression, *, aliased: bool = False) -> list[list[exp.Expression]] | None:
    """The values of each row of a top-level VALUES list; None when ``node`` is not one (or has an alias, unless
    ``aliased``: a FROM item ``(VALUES ...) AS s(a, b)``)."""
    if not isinstance(node, exp.Values) or (node.args.get("alias") is not None and not aliased):
        return None
    return [list(row.expressions) if isinstance(row, exp.Tuple) else [row] for row in node.expressions]


def values_row(values: tuple[exp.Expression | None, ...]) -> exp.Expression:
    """``VALUES (v1, ...)`` with NULL for None."""
    items = [v.copy() if v is not None else exp.Null() for v in values]
    return exp.Values(expressions=[exp.Tuple(expressions=items)])


def refuse_default(node: exp.Expression) -> None:
    """``SYNTAX_ERROR`` when ``DEFAULT`` stands anywhere in ``node``."""
    if _stray_default(node) is not None:
        raise _misplaced()


def _refuse_nested(node: exp.Expression, what: str) -> None:
    if node.find(exp.Select, exp.Subquery, exp.Exists) is not None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"cannot use subquery in {what}")
    if node.find(exp.AggFunc) is not None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"aggregate functions are not allowed in {what}")
    if node.find(exp.Window) is not None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"window functions are not allowed in {what}")
    if _stray_default(node) is not None:
        raise _misplaced()


def check_default_expression(node: exp.Expression, column: str) -> None:
    """Refuse a ``DEFAULT`` expression that reads a column, a subquery, an aggregate or a window function."""
    what = f"DEFAULT expression (column {column})"
    _refuse_nested(node, what)
    ref = next(iter(node.find_all(exp.Column)), None)
    if ref is not None:
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS, f"cannot use column reference in {what}: {ref.sql(dialect='trino')}"
        )


def check_check_expression(node: exp.Expression) -> None:
    """Refuse a ``CHECK`` expression with a subquery, an aggregate or a window function."""
    _refuse_nested(node, "check constraint")
