"""The stream statements of seed 001 (Calcite's streaming SQL): ``SELECT STREAM``, ``CREATE STREAM``, ``DROP
STREAM``, ``SHOW STREAMS``.

sqlglot knows none of them: ``SELECT STREAM *`` fails to parse, ``SELECT STREAM a`` reads as ``SELECT stream AS
a``, and ``CREATE STREAM`` / ``DROP STREAM`` / ``SHOW STREAMS`` become opaque commands. So:

* ``SELECT STREAM`` is marked before parsing (``_stream_marks``): a token pre-pass finds the keyword ``STREAM``
  right after ``SELECT`` (when it is not itself the select list: ``SELECT stream``, ``SELECT stream, a``,
  ``SELECT stream FROM t``), removes it and leaves a comment that sqlglot attaches to that ``Select``. ``SELECT STREAM`` is a property of each SELECT, exactly as written;
  which ones matter (the top-most ones, seed 001: "in sub-queries and views it has no effect") is the
  planner's business.
* ``CREATE STREAM name (columns) [WITH (slack = ..., history = ...)]`` is read as the ``CREATE TABLE`` it
  resembles (the same column definitions, types, NOT NULL, DEFAULT, CHECK) once the column constraint
  ``MONOTONIC [ASCENDING | DESCENDING]`` and the stream options are taken out of the text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.names import QualifiedName
from mergekit.sql.parse.parts import split_top_level, syntax_error

if TYPE_CHECKING:
    from mergekit.sql.model import CreateTable, Expression

__all__ = [
    "StreamOptions",
    "split_create_stream",
    "match_drop_stream",
    "match_show_streams",
    "create_stream_table",
]


@attrs.frozen(kw_only=True)
class StreamOptions:
    """``CREATE STREAM``'s parts that ``CREATE TABLE`` has not: the monotonic columns (name, descending) as
    written, and the ``WITH`` options."""

    monotonic: tuple[tuple[str, bool], ...] = ()
    slack: Expression | None = None
    history: bool = False


_CREATE_STREAM = re.compile(r"(?is)^create\s+stream\s+(if\s+not\s+exists\s+)?(.*)$")
_MONOTONIC = re.compile(r"(?i)\bmonotonic(?:\s+(ascending|descending|asc|desc))?\b")
_WITH = re.compile(r"(?is)\)\s*with\s*\((.*)\)\s*$")


def split_create_stream(text: str) -> tuple[str, StreamOptions] | None:
    """For ``CREATE STREAM ...``: the ``CREATE TABLE`` text it resembles and its stream options; None for any
    other statement. ``SYNTAX_ERROR`` for an unknown or malformed option."""
    m = _CREATE_STREAM.match(text.strip())
    if m is None:
        return None
    exists, rest = m.group(1) or "", m.group(2)
    options_text = None
    w = _WITH.search(rest)
    if w is not None:
        options_text = w.group(1)
        rest = rest[: w.start() + 1]
    body_start = rest.find("(")
    if body_start < 0:
        raise syntax_error("CREATE STREAM needs a column list")
    name_text, body = rest[:body_start], rest[body_start:]
    monotonic = _monotonic_columns(body)
    body = _MONOTONIC.sub("", body)
    slack, history = _options(options_text) if options_text is not None else (None, False)
    table_text = f"CREATE TABLE {exists}{name_text}{body}"
    return table_text, StreamOptions(monotonic=monotonic, slack=slack, history=history)


def _monotonic_columns(body: str) -> tuple[tuple[str, bool], ...]:
    """(column, descending) for each column definition carrying ``MONOTONIC``: the first word of the definition
    it stands in (definitions split at top-level commas)."""
    found: list[tuple[str, bool]] = []
    for definition in split_top_level(body.strip()[1:-1] if body.strip().endswith(")") else body):
        m = _MONOTONIC.search(definition)
        if m is None:
            continue
        name = definition.strip().split(None, 1)[0]
        if name.startswith('"'):
            name = name.strip('"')
        else:
            name = name.lower()
        found.append((name, (m.group(1) or "").upper() in ("DESCENDING", "DESC")))
    return tuple(found)


def _options(text: str) -> tuple[Expression | None, bool]:
    from mergekit.sql.model import Expression
    from mergekit.sql.parse.tree import parse_tree

    slack: Expression | None = None
    history = False
    for item in split_top_level(text):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or not re.fullmatch(r"[a-z_]+", key):
            raise syntax_error(f"stream option '{item.strip()}' must be written name = value")
        node = parse_tree(f"SELECT {value.strip()}").expressions[0]  # type: ignore[attr-defined]
        if key == "slack":
            slack = Expression(node)
        elif key == "history":
            if not isinstance(node, exp.Boolean):
                raise MergekitError(ErrorCode.INVALID_TABLE_PROPERTY, "Stream option 'history' must be TRUE or FALSE")
            history = bool(node.this)
        else:
            raise MergekitError(
                ErrorCode.INVALID_TABLE_PROPERTY, f"Stream option '{key}' does not exist (slack, history)"
            )
    return slack, history


_DROP_STREAM = re.compile(r"(?is)^drop\s+stream\s+(if\s+exists\s+)?([\w.\"]+)$")
_SHOW_STREAMS = re.compile(r"(?is)^show\s+streams(?:\s+(?:from|in)\s+([\w.\"]+))?$")


def match_drop_stream(text: str) -> tuple[QualifiedName, bool] | None:
    m = _DROP_STREAM.match(text.strip())
    if m is None:
        return None
    return _name(m.group(2)), bool(m.group(1))


def match_show_streams(text: str) -> tuple[QualifiedName | None] | None:
    m = _SHOW_STREAMS.match(text.strip())
    if m is None:
        return None
    return (_name(m.group(1)) if m.group(1) else None,)


def _name(text: str) -> QualifiedName:
    return QualifiedName(tuple(p[1:-1] if p.startswith('"') else p.lower() for p in text.split(".")))


def create_stream_table(table: CreateTable, options: StreamOptions) -> None:
    """Checks of the CREATE TABLE a CREATE STREAM reads as: no primary key, no AS query, monotonic columns that
    exist."""
    if table.primary_key:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "A stream cannot have a primary key: its rows only arrive")
    if table.as_query is not None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "CREATE STREAM ... AS query is not supported")
    names = {c.name for c in table.columns}
    for column, _ in options.monotonic:
        if column not in names:
            raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{column}' does not exist")
