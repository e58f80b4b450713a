"""Parsed tree -> statement model, accounting for every part of every syntax node.

The one rule of this module: a statement runs entirely as written, or fails with a coded error. sqlglot's
parser accepts far more than mergekit implements (``DELETE ... LIMIT``, ``RETURNING``, ``ON CONFLICT``,
``CHECK``, ``LOCATION``, ...) and keeps each such part in an argument of a syntax node. Every converter below
reads a node through :class:`Parts`: it *takes* the arguments it turns into the model, and :meth:`Parts.done`
refuses, by name, any non-empty argument that was not taken. An argument that sqlglot adds in a later version is
therefore refused until a converter takes it, never dropped (tests/sql/test_no_dropped_clause.py proves it for
every argument of every node class converted here).

Expressions and queries (WHERE, SET values, a MERGE source, an INSERT's query) are kept whole as trees: the
renderer generates every argument of them, so nothing inside them can be dropped here.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from mergekit.sql.model import (
    Query,
    ResetSession,
    ShowSession,
    Statement,
)

from .convert_ddl import (
    column_definition,
    convert_alter,
    convert_create,
    convert_describe,
    convert_drop,
    convert_set,
    convert_truncate,
)
from .convert_dml import (
    convert_delete,
    convert_insert,
    convert_merge,
    convert_update,
)
from .parts import (
    Parts,
    checked_query,
    literal_value,
    not_supported,
    syntax_error,
)
from .syntax_hints import hint_for_parse_error

__all__ = [
    "convert",
    "Parts",
    "literal_value",
    "syntax_error",
    "not_supported",
    "column_definition",
    "CONVERTED_CLASSES",
]


def convert(tree: exp.Expression, text: str) -> Statement:
    """The statement model of one parsed statement; refuses whatever part of it mergekit does not implement."""
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)):
        return Query(node=checked_query(tree))
    converter = _CONVERTERS.get(type(tree))
    if converter is not None:
        return converter(tree)
    if isinstance(tree, exp.Command):  # sqlglot could not parse it: a mistake we can name, or a statement we lack
        hint = hint_for_parse_error(text)
        if hint is not None:
            raise hint
        word = str(tree.this).upper()
        argument = str(tree.expression.this if isinstance(tree.expression, exp.Literal) else tree.expression or "")
        if word == "RESET SESSION" and re.fullmatch(r"[A-Za-z_][\w.]*", argument.strip()):
            return ResetSession(name=argument.strip().lower())
        if word == "SHOW" and argument.strip().upper() == "SESSION":
            return ShowSession()
        raise syntax_error(f"mismatched input '{word}'. Unsupported statement", 1, 1)
    first = text.split(None, 1)[0] if text.split() else ""
    raise syntax_error(f"mismatched input '{first}'. Expected a statement", 1, 1)


_CONVERTERS: dict[type, Any] = {
    exp.Merge: convert_merge,
    exp.Insert: convert_insert,
    exp.Update: convert_update,
    exp.Delete: convert_delete,
    exp.Create: convert_create,
    exp.Drop: convert_drop,
    exp.TruncateTable: convert_truncate,
    exp.Describe: convert_describe,
    exp.Alter: convert_alter,
    exp.Set: convert_set,
}

CONVERTED_CLASSES: tuple[type, ...] = tuple(_CONVERTERS)
"""The statement node classes this module converts (the test of the rule walks their arguments)."""
