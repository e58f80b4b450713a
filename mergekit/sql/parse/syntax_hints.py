"""Syntax errors for the mistakes people make on their first day, in words they understand.

sqlglot's parser reports where it gave up (``incomplete MUL: expected more input`` for ``SELEC * FROM t``); a
user needs to hear what they wrote wrong. Each rule here looks at the statement's tokens, in the user's text, and
names the mistake with its line and column:

- a statement that starts with an unknown word: ``mismatched input 'SELEC'. Expected a statement (did you mean
  SELECT?)``;
- backquotes, which quote identifiers in MySQL and Spark, not in Trino SQL: Trino's ``backquoted identifiers are
  not supported; use double quotes to quote identifiers``;
- ``==``, which is not SQL's equality (Trino's parser refuses it too);
- ``UPDATE t qty = 5``: ``SET`` is missing;
- PostgreSQL's ``SERIAL`` types: refused by name (``NOT_SUPPORTED``), saying what to write instead.

:func:`add_quoted_name_hint` serves the engine: a ``COLUMN_NOT_FOUND`` for a name the user wrote in double quotes
adds that double quotes name a column, and single quotes make a string.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from mergekit.errors import ErrorCode, MergekitError

from .dialect import DIALECT
from .parts import syntax_error

__all__ = ["hint_for_parse_error", "check_operators", "add_quoted_name_hint", "auto_increment_message"]

# Words a statement may start with: mergekit's statements, and others a user may try (refused elsewhere, by name).
_STATEMENTS = (
    "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "SHOW", "DESCRIBE",
    "EXPLAIN", "CALL", "WITH", "VALUES", "TABLE", "SET", "RESET", "COPY",
)  # fmt: skip
_OTHER_STARTS = frozenset(
    {"DESC", "USE", "AUTO", "RUN", "START", "STOP", "COMMENT", "ANALYZE", "GRANT", "REVOKE", "DENY", "COMMIT",
     "ROLLBACK", "BEGIN", "PREPARE", "EXECUTE", "DEALLOCATE", "REFRESH", "UPSERT", "REPLACE", "LOAD", "CACHE",
     "UNCACHE", "MSCK", "OPTIMIZE", "VACUUM", "KILL", "DECLARE", "FROM"}
)  # fmt: skip

# PostgreSQL's auto-incrementing types and the type each stands for
_SERIALS = {
    "SERIAL": "INTEGER",
    "SERIAL4": "INTEGER",
    "BIGSERIAL": "BIGINT",
    "SERIAL8": "BIGINT",
    "SMALLSERIAL": "SMALLINT",
    "SERIAL2": "SMALLINT",
}
_UPDATE_SHAPE = "UPDATE table SET column = value [, ...] [WHERE condition]"


def _tokens(text: str) -> list[Any]:
    try:
        return list(DIALECT().tokenize(text))
    except TokenError:
        return []


def _start(tok: Any) -> tuple[int, int]:
    """Line and 1-based column where a token starts (sqlglot keeps where it ends)."""
    return tok.line, max(tok.col - len(tok.text) + 1, 1)


def _word(tok: Any) -> str:
    return "" if tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER) else tok.text.upper()


def auto_increment_message(kind: str, column: str, type_name: str = "INTEGER or BIGINT") -> str:
    """The refusal of an auto-incrementing column (SERIAL, AUTO_INCREMENT, IDENTITY): what to write instead."""
    return (
        f"{kind} is not supported (column {column}): mergekit does not generate column values. Declare {column} "
        f"{type_name} and give each row its value when you insert it (for example from a sequence of your own, or "
        f"max({column}) + row_number() OVER (ORDER BY ...) in INSERT ... SELECT)"
    )


def hint_for_parse_error(text: str) -> MergekitError | None:
    """A better error than the parser's for a statement that does not parse, when one of the rules knows its
    mistake; None otherwise."""
    tokens = _tokens(text)
    if not tokens:
        return None
    first = _word(tokens[0]).split(" ")[0]  # some keywords are several words (``RESET SESSION``)
    if first and first not in _STATEMENTS and first not in _OTHER_STARTS and tokens[0].token_type != TokenType.L_PAREN:
        guess = difflib.get_close_matches(first, _STATEMENTS, n=1, cutoff=0.7)
        hint = f" (did you mean {guess[0]}?)" if guess else ""
        written = tokens[0].text.split(" ")[0]
        return syntax_error(f"mismatched input '{written}'. Expected a statement{hint}", *_start(tokens[0]))
    backquote = _backquote(text)
    if backquote is not None:
        return syntax_error(
            "backquoted identifiers are not supported; use double quotes to quote identifiers", *backquote
        )
    for i, tok in enumerate(tokens[2:], start=2):
        serial = _SERIALS.get(_word(tok))
        if serial and tokens[i - 1].token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            if tokens[i - 2].token_type in (TokenType.L_PAREN, TokenType.COMMA) or _word(tokens[i - 2]) == "COLUMN":
                column = tokens[i - 1].text
                return MergekitError(
                    ErrorCode.NOT_SUPPORTED, auto_increment_message(f"Type {tok.text}", column, serial)
                )
    if first == "UPDATE":
        return _update_without_set(tokens)
    return None


def _update_without_set(tokens: list[Any]) -> MergekitError | None:
    """``UPDATE t qty = 5``: the token after the table name (and its alias) is where SET belongs."""
    if any(_word(t) == "SET" for t in tokens):
        return None
    i = 2
    while i + 1 < len(tokens) and tokens[i].token_type == TokenType.DOT:
        i += 2
    if i < len(tokens) and _word(tokens[i]) == "AS":
        i += 2
    elif i + 1 < len(tokens) and tokens[i + 1].token_type in (TokenType.VAR, TokenType.IDENTIFIER):
        i += 1  # ``UPDATE t x qty = 5``: x is the alias
    if i >= len(tokens):
        return syntax_error(f"SET is missing: {_UPDATE_SHAPE}", *_start(tokens[-1]))
    return syntax_error(f"SET is missing before '{tokens[i].text}': {_UPDATE_SHAPE}", *_start(tokens[i]))


def _backquote(text: str) -> tuple[int, int] | None:
    """Line and column of the first backquote outside strings, quoted identifiers and comments."""
    i, line, line_start = 0, 1, 0
    while i < len(text):
        ch = text[i]
        if ch == "\n":
            line, line_start = line + 1, i + 1
        elif ch in "'\"":
            end = text.find(ch, i + 1)
            while end != -1 and text[end + 1 : end + 2] == ch:  # a doubled quote inside
                end = text.find(ch, end + 2)
            if end == -1:
                return None
            line += text.count("\n", i, end)
            if "\n" in text[i:end]:
                line_start = text.rfind("\n", i, end) + 1
            i = end
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end == -1 else end - 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end == -1:
                return None
            line += text.count("\n", i, end)
            if "\n" in text[i:end]:
                line_start = text.rfind("\n", i, end) + 1
            i = end + 1
        elif ch == "`":
            return line, i - line_start + 1
        i += 1
    return None


def check_operators(tokens: list[Any]) -> None:
    """``==`` is not SQL (sqlglot reads it as ``=``; Trino's parser refuses it)."""
    for tok in tokens:
        if tok.token_type == TokenType.EQ and tok.text == "==":
            raise syntax_error("mismatched input '=='. Expecting: '=' (SQL compares with a single =)", *_start(tok))


def add_quoted_name_hint(err: MergekitError, text: str) -> None:
    """A ``COLUMN_NOT_FOUND`` for a name written in double quotes in ``text`` (``WHERE name = "a"``) says what
    those quotes mean, and how to write a string instead (the message is extended in place)."""
    m = re.match(r"Column '(.+?)' cannot be resolved", err.message)
    if err.code is not ErrorCode.COLUMN_NOT_FOUND or m is None:
        return
    for tok in _tokens(text):
        if tok.token_type == TokenType.IDENTIFIER and tok.text.lower() == m.group(1).lower():
            literal = tok.text.replace("'", "''")
            err.message += f" (double quotes name a column; for a string use single quotes: '{literal}')"
            err.args = (err.code, err.message)
            return
