"""Text to one sqlglot tree of mergekit's dialect; a syntax error in the user's words when it is not one.

The first step of every statement parse (``_parse``), in a module of its own so that merge-table DDL
(``_mergetable``) reads the CREATE TABLE part of ``CREATE MERGE TABLE`` the way every CREATE TABLE is read
(``convert(parse_tree(text), text)``) without importing the statement parser that dispatches to it (an import
cycle).
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ._convert import syntax_error
from ._dialect import DIALECT

__all__ = ["parse_tree", "plain_parse_message"]


def parse_tree(text: str) -> exp.Expression:
    """The one statement in ``text`` as a sqlglot tree; SYNTAX_ERROR (with line and column if known) if not."""
    try:
        trees = sqlglot.parse(text, read=DIALECT)
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        desc = str(err.get("description") or e).split("\n")[0]
        desc = plain_parse_message(desc)
        raise syntax_error(desc, int(err.get("line") or 0), int(err.get("col") or 0)) from None
    except TokenError as e:
        raise syntax_error(f"{e} (an unterminated string, quoted identifier or comment?)") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise syntax_error("expected exactly one statement")
    return trees[0]


def plain_parse_message(desc: str) -> str:
    """sqlglot's parse error in a user's words: no token reprs, no Python class names."""
    desc = re.sub(r"<Token token_type: [\w.]+, text: (.*?), line: .*?>", r"'\1'", desc)
    desc = desc.replace("'SENTINEL'", "'<EOF>'")
    m = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>", desc)
    if m:
        words = {"Whens": "MERGE: expected WHEN", "Paren": "parenthesized expression"}.get(m.group(2))
        words = words or re.sub(r"(?<=[a-z])(?=[A-Z])", " ", m.group(2)).upper()
        return f"incomplete {words}: expected more input"
    return re.sub(r"<class '[\w.]*?(\w+)'>", r"\1", desc)
