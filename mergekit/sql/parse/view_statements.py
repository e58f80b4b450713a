"""The view statements and ``ALTER TABLE ... SET PROPERTIES``, which sqlglot reads as opaque commands or
refuses: ``CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name [(col, ...)] [COMMENT '...'] AS query``, ``DROP VIEW
[IF EXISTS] name``, ``SHOW VIEWS [FROM schema] [LIKE 'pattern']`` and ``ALTER TABLE t SET PROPERTIES name =
value | DEFAULT, ...`` (Trino's). Read with regular expressions before sqlglot sees the text, as the stream
statements are (``_streams``); the view's query is parsed by the caller's ``parse``. Expansion: ``_views``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.model import (
    AlterTableSetProperties,
    CreateView,
    DropView,
    QualifiedName,
    Query,
    ShowViews,
    Statement,
)

from .parts import literal_value, split_top_level
from .tree import parse_tree

__all__ = ["view_statement"]

# ---- statements ------------------------------------------------------------------------------------------

_NAME = r'(?:"(?:[^"]|"")*"|[\w$]+)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[\w$]+)){0,2}'
_CREATE_VIEW = re.compile(
    rf"(?is)^create\s+(or\s+replace\s+)?view\s+(if\s+not\s+exists\s+)?({_NAME})\s*"
    rf"(?:\(([^()]*)\)\s*)?(?:comment\s+'((?:[^']|'')*)'\s*)?as\b\s*(.*)$"
)
_ANY_CREATE_VIEW = re.compile(r"(?is)^create\s+(?:or\s+replace\s+)?((?:\w+\s+)*?)view\b")
_DROP_VIEW = re.compile(rf"(?is)^drop\s+view\s+(if\s+exists\s+)?({_NAME})$")
_ANY_DROP_VIEW = re.compile(r"(?is)^drop\s+(?:materialized\s+)?view\b")
_SHOW_VIEWS = re.compile(
    rf"(?is)^show\s+views(?:\s+(?:from|in)\s+({_NAME}))?(?:\s+like\s+'((?:[^']|'')*)'(?:\s+escape\s+'((?:[^']|'')*)')?)?$"
)
_SET_PROPERTIES = re.compile(rf"(?is)^alter\s+table\s+(if\s+exists\s+)?({_NAME})\s+set\s+properties\s+(.+)$")
_IDENTIFIER = re.compile(r'^(?:"((?:[^"]|"")+)"|([A-Za-z_][\w$]*))$')


def _syntax_error(message: str) -> MergekitError:
    return MergekitError(ErrorCode.SYNTAX_ERROR, message)


def _not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


def _identifier(text: str, where: str) -> str:
    m = _IDENTIFIER.match(text.strip())
    if m is None:
        raise _syntax_error(f"{where}: expected a column name, got '{text.strip()}'")
    return (m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2)).lower()


def _name(text: str) -> QualifiedName:
    parts = re.findall(r'"((?:[^"]|"")*)"|([\w$]+)', text)
    return QualifiedName(tuple((q.replace('""', '"') if q else w).lower() for q, w in parts))


def view_statement(text: str, parse: Callable[[str], Statement]) -> Statement | None:
    """``CREATE VIEW``, ``DROP VIEW``, ``SHOW VIEWS`` or ``ALTER TABLE ... SET PROPERTIES`` (``text`` stripped of
    comments and of a final ``;``), or None for any other statement. ``parse`` parses the view's query."""
    m = _CREATE_VIEW.match(text)
    if m is not None:
        return _create_view(m, parse)
    other = _ANY_CREATE_VIEW.match(text)
    if other is not None:
        words = " ".join(other.group(1).split()).upper()
        if words:
            raise _not_supported(f"CREATE {words} VIEW is not supported")
        if re.search(r"(?is)\bsecurity\s+(definer|invoker)\b", text):
            raise _not_supported("SECURITY DEFINER/INVOKER in CREATE VIEW is not supported")
        raise _syntax_error(
            "CREATE VIEW: expected CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name [(column, ...)] [COMMENT '...'] "
            "AS query"
        )
    m = _DROP_VIEW.match(text)
    if m is not None:
        return DropView(name=_name(m.group(2)), if_exists=bool(m.group(1)))
    if _ANY_DROP_VIEW.match(text):
        raise _not_supported(
            "DROP VIEW takes one view name (DROP MATERIALIZED VIEW, several views, CASCADE and RESTRICT are not "
            "supported)"
        )
    m = _SHOW_VIEWS.match(text)
    if m is not None:
        return ShowViews(
            schema=_name(m.group(1)) if m.group(1) else None,
            like=m.group(2).replace("''", "'") if m.group(2) is not None else None,
            escape=m.group(3).replace("''", "'") if m.group(3) is not None else None,
        )
    m = _SET_PROPERTIES.match(text)
    if m is not None:
        if m.group(1):
            raise _not_supported("IF EXISTS in ALTER TABLE ... SET PROPERTIES is not supported")
        return AlterTableSetProperties(name=_name(m.group(2)), properties=_properties(m.group(3)))
    return None


def _create_view(m: re.Match[str], parse: Callable[[str], Statement]) -> CreateView:
    replace, if_not_exists = bool(m.group(1)), bool(m.group(2))
    if replace and if_not_exists:
        raise _syntax_error("CREATE VIEW with both IF NOT EXISTS and OR REPLACE is not allowed")
    columns: tuple[str, ...] | None = None
    if m.group(4) is not None:
        columns = tuple(_identifier(c, "CREATE VIEW") for c in split_top_level(m.group(4)))
        dupes = sorted({c for c in columns if columns.count(c) > 1})
        if dupes:
            raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column name '{dupes[0]}' specified more than once")
    body = m.group(6).strip()
    if not body:
        raise _syntax_error("CREATE VIEW needs a query after AS")
    query = parse(body)
    if not isinstance(query, Query):
        raise _syntax_error(f"CREATE VIEW needs a query after AS, not {type(query).__name__}")
    comment = m.group(5).replace("''", "'") if m.group(5) is not None else None
    return CreateView(
        name=_name(m.group(3)),
        query=query,
        sql=body,
        columns=columns,
        replace=replace,
        if_not_exists=if_not_exists,
        comment=comment,
    )


def _properties(text: str) -> dict[str, Any]:
    """``name = value, ...`` of SET PROPERTIES: literal values, or None for ``DEFAULT``."""
    out: dict[str, Any] = {}
    for item in split_top_level(text):
        name, sep, value = item.partition("=")
        if not sep:
            raise _syntax_error(f"SET PROPERTIES: expected name = value, got '{item.strip()}'")
        key = _identifier(name, "SET PROPERTIES")
        if key in out:
            raise MergekitError(ErrorCode.INVALID_TABLE_PROPERTY, f"Duplicate property: {key}")
        value = value.strip()
        out[key] = None if value.upper() == "DEFAULT" else literal_value(parse_tree(f"SELECT {value}").expressions[0])  # type: ignore[attr-defined]
    return out
