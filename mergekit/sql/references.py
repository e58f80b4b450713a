"""The names and references a parsed tree holds, for every part of the SQL layer (parsing, analysis, translation).

Identifiers as Trino folds them (:func:`identifier_name`), the tables and change feeds a tree reads
(:func:`table_refs`, :func:`table_ref_of`, :func:`real_tables`), the columns an expression references
(:func:`column_refs`), the value of a number literal (:func:`numeric_literal`), and a copy of a tree that reads
Spark views instead of tables (:func:`substitute_tables`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from sqlglot import exp

from mergekit.sql.names import QualifiedName, TableRef

_N = TypeVar("_N", int, float)

__all__ = [
    "identifier_name",
    "CHANGE_FEED_FUNCTION",
    "qualified_name_of",
    "table_ref_of",
    "real_tables",
    "table_refs",
    "column_refs",
    "is_null_literal",
    "numeric_literal",
    "substitute_tables",
]


def identifier_name(ident: exp.Expression | str | None) -> str:
    """Trino folds identifiers to lower case, quoted or not."""
    if ident is None:
        return ""
    if isinstance(ident, str):
        return ident.lower()
    return str(ident.name).lower()


CHANGE_FEED_FUNCTION = "table_changes"


def _change_feed_call(table: exp.Table) -> exp.Anonymous | None:
    """``table_changes('t', 1)`` or ``TABLE(table_changes('t', 1))`` in a FROM clause."""
    node = table.this
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "TABLE" and node.expressions:
        node = node.expressions[0]
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == CHANGE_FEED_FUNCTION:
        return node
    return None


def _change_feed_ref(call: exp.Anonymous) -> TableRef:
    args = call.expressions
    if not 2 <= len(args) <= 3 or not (isinstance(args[0], exp.Literal) and args[0].is_string):
        from mergekit.errors import ErrorCode, MergekitError

        raise MergekitError(
            ErrorCode.INVALID_FUNCTION_ARGUMENT,
            "table_changes takes a table name and a first version, and optionally a last version: "
            "table_changes('t', 1[, 5])",
        )
    numbers = []
    for a in args[1:]:
        if not (isinstance(a, exp.Literal) and not a.is_string):
            from mergekit.errors import ErrorCode, MergekitError

            raise MergekitError(
                ErrorCode.INVALID_FUNCTION_ARGUMENT, f"table_changes: version must be an integer literal, got {a.sql()}"
            )
        numbers.append(int(a.this))
    parts = tuple(p.strip('"').lower() for p in str(args[0].this).split("."))
    return TableRef(
        name=QualifiedName(parts), changes_from=numbers[0], changes_to=numbers[1] if len(numbers) > 1 else None
    )


def qualified_name_of(identifiers: Iterable[exp.Expression]) -> QualifiedName:
    """The :class:`QualifiedName` of a table's parts: folded to lower case, with the spelling of quoted parts."""
    return QualifiedName.of(
        (str(p.name), bool(isinstance(p, exp.Identifier) and p.args.get("quoted"))) for p in identifiers
    )


def table_ref_of(table: exp.Table) -> TableRef:
    call = _change_feed_call(table)
    if call is not None:
        return _change_feed_ref(call)
    name = qualified_name_of(table.parts)
    version = table.args.get("version")
    ref_version: int | None = None
    ref_timestamp: str | None = None
    if isinstance(version, exp.Version):
        kind = str(version.this).upper()
        value = version.args.get("expression")
        if kind == "VERSION" and isinstance(value, exp.Literal) and not value.is_string:
            ref_version = int(value.this)
        elif kind == "VERSION":
            ref_version = int(value.name) if value is not None else None
        else:
            ref_timestamp = value.sql(dialect="trino") if value is not None else None
    return TableRef(name=name, version=ref_version, timestamp=ref_timestamp)


def _cte_names(node: exp.Expression) -> set[str]:
    return {identifier_name(cte.alias) for cte in node.find_all(exp.CTE)}


def real_tables(node: exp.Expression) -> list[exp.Table]:
    ctes = _cte_names(node)
    out = []
    for table in node.find_all(exp.Table):
        if not table.name and _change_feed_call(table) is None:
            continue  # another table function (UNNEST, ...)
        if table.name and len(table.parts) == 1 and identifier_name(table.this) in ctes:
            continue
        out.append(table)
    return out


def table_refs(node: exp.Expression) -> tuple[TableRef, ...]:
    seen: dict[TableRef, None] = {}
    for table in real_tables(node):
        seen.setdefault(table_ref_of(table), None)
    return tuple(seen)


def column_refs(node: exp.Expression) -> frozenset[tuple[str | None, str]]:
    refs = set()
    for col in node.find_all(exp.Column):
        if col.find_ancestor(exp.Select) is not None:
            continue  # inside a subquery: resolved there
        qualifier = identifier_name(col.args.get("table")) or None
        refs.add((qualifier, identifier_name(col.this)))
    return frozenset(refs)


def is_null_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Null)


def numeric_literal(node: exp.Expression | None, convert: Callable[[str], _N]) -> _N | None:
    """The value of a number literal, read from its text by ``convert`` (``int``, ``float``), through
    parentheses and negation (``-1`` parses as a negation of ``1``); None for any other node, or a text
    ``convert`` refuses."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        inner = numeric_literal(node.this, convert)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return convert(node.this)
        except ValueError:
            return None
    return None


def substitute_tables(node: exp.Expression, tables: Mapping[TableRef, str]) -> exp.Expression:
    """A copy of ``node`` whose table references read Spark views; the original name stays as the alias
    so that qualified column references (``nation.regionkey``) keep resolving."""
    node = node.copy()
    for table in real_tables(node):
        ref = table_ref_of(table)
        view = tables.get(ref)
        if view is None:
            continue
        alias = table.args.get("alias")
        new = exp.Table(this=exp.to_identifier(view))
        if alias is not None:
            new.set("alias", alias.copy())
        else:
            new.set("alias", exp.TableAlias(this=exp.to_identifier(ref.name.name)))
        table.replace(new)
    return node
