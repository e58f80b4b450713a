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
- ``SELECT 1 +``: the expression ends after an operator (``incomplete ADD`` to the parser);
- ``SELECT 'abc FROM t``: a string literal, quoted identifier or comment that never ends, from where it starts;
- PostgreSQL's ``SERIAL`` types: refused by name (``NOT_SUPPORTED``), saying what to write instead.

:func:`add_quoted_name_hint` serves the engine: a ``COLUMN_NOT_FOUND`` for a name the user wrote in double quotes
adds that double quotes name a column, and single quotes make a string.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import Any

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from mergekit.errors import ErrorCode, MergekitError

from .dialect import DIALECT
from .parts import syntax_error

__all__ = [
    "hint_for_parse_error",
    "check_operators",
    "add_quoted_name_hint",
    "auto_increment_message",
    "incomplete_operator",
    "token_error",
    "unterminated",
    "update_without_set",
    "row_count_error",
]

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
        return update_without_set(tokens)
    return row_count_error(tokens, (TokenType.FETCH,))  # sqlglot's parser refuses FETCH FIRST -1 without saying why


def update_without_set(tokens: list[Any]) -> MergekitError | None:
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


def _scan(text: str) -> Iterator[tuple[str, int, int, int]]:
    """Walk ``text`` as the tokenizer does: ``("char", index, line, column)`` for each character outside strings,
    quoted identifiers and comments; ``(kind, index, line, column)`` where a string literal, quoted identifier or
    comment starts that never ends (the walk stops there). Lines and columns are 1-based."""
    i, line, line_start = 0, 1, 0
    while i < len(text):
        ch = text[i]
        column = i - line_start + 1
        if ch in "'\"":
            end = text.find(ch, i + 1)
            while end != -1 and text[end + 1 : end + 2] == ch:  # a doubled quote inside
                end = text.find(ch, end + 2)
            if end == -1:
                yield ("string literal" if ch == "'" else "quoted identifier"), i, line, column
                return
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = len(text) if end == -1 else end - 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end == -1:
                yield "comment", i, line, column
                return
            end += 1
        else:
            if ch == "\n":
                line, line_start = line + 1, i + 1
            else:
                yield "char", i, line, column
            i += 1
            continue
        if "\n" in text[i:end]:
            line += text.count("\n", i, end)
            line_start = text.rfind("\n", i, end) + 1
        i = end + 1


def _backquote(text: str) -> tuple[int, int] | None:
    """Line and column of the first backquote outside strings, quoted identifiers and comments."""
    for kind, i, line, column in _scan(text):
        if kind == "char" and text[i] == "`":
            return line, column
    return None


def unterminated(text: str) -> MergekitError | None:
    """The string literal, quoted identifier or comment of ``text`` that never ends, named where it starts with all
    of the text it swallowed; None when every one ends (the tokenizer failed for another reason)."""
    for kind, i, line, column in _scan(text):
        if kind != "char":
            return syntax_error(f"unterminated {kind}: {text[i:].rstrip()}", line, column)
    return None


def token_error(text: str, error: Exception) -> MergekitError:
    """The syntax error for text the tokenizer refused."""
    found = unterminated(text)
    if found is not None:
        return found
    return syntax_error(f"{error} (an unterminated string, quoted identifier or comment?)")


# The parser's nodes of operators a user writes between or before operands (``+``, ``||``, ``AND``, ``NOT``,
# ``LIKE``), and the tokens that close an operand rather than wait for one.
_OPERATORS = (exp.Binary, exp.Unary)
_OPERAND_TOKENS = (
    TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING, TokenType.NUMBER, TokenType.L_PAREN, TokenType.R_PAREN,
    TokenType.L_BRACKET, TokenType.R_BRACKET, TokenType.COMMA, TokenType.SEMICOLON, TokenType.DOT,
)  # fmt: skip


def _is_operator(tok: Any) -> bool:
    """A token that stands between or before operands (``+``, ``||``, ``AND``, ``LIKE``), not part of one."""
    return tok.token_type not in _OPERAND_TOKENS and (not tok.text[:1].isalpha() or tok.text.upper() in _WORD_OPERATORS)


_WORD_OPERATORS = frozenset({"AND", "OR", "NOT", "LIKE", "ILIKE", "IS", "DIV"})


def incomplete_operator(text: str, description: str, line: int, column: int) -> MergekitError | None:
    """``SELECT 1 +``, ``WHERE a = 1 AND``, ``s.v ||``: the parser reports the operator node it could not
    complete (``incomplete ADD``); say which operator lacks its operand, where the user wrote it. ``line`` and
    ``column`` are where the parser stopped (the end of that token)."""
    m = re.match(r"Required keyword: '(?:this|expression)' missing for <class '[\w.]*?(\w+)'>", description)
    node = getattr(exp, m.group(1), None) if m else None
    if not (isinstance(node, type) and issubclass(node, _OPERATORS)):
        return None
    tokens = _tokens(text)
    at = next((k for k, t in enumerate(tokens) if (t.line, t.col) == (line, column)), None)
    if at is None:
        return None
    if at == len(tokens) - 1 and _is_operator(tokens[at]):  # the statement ends with the operator
        operator = tokens[at].text
        return syntax_error(f"the expression ends after '{operator}'; expected an operand", *_start(tokens[at]))
    if at == 0 or not _is_operator(tokens[at - 1]):
        return None
    found, operator = tokens[at].text, tokens[at - 1].text
    return syntax_error(f"mismatched input '{found}'. Expecting: an operand after '{operator}'", *_start(tokens[at]))


# What Trino's grammar takes after LIMIT, OFFSET and FETCH FIRST/NEXT: a row count that is an integer literal (or ALL,
# or no count before ROW/ROWS), never an expression (``LIMIT -1``, ``OFFSET 1 + 1``, ``FETCH FIRST 1.5 ROWS``).
_ROW_COUNT_EXPECTING = {
    TokenType.LIMIT: "'ALL', <integer>",
    TokenType.OFFSET: "<integer>",
    TokenType.FETCH: "'ROW', 'ROWS', <integer>",
}
_NOT_A_CLAUSE_AFTER = (TokenType.SELECT, TokenType.COMMA, TokenType.L_PAREN, TokenType.DOT, TokenType.ALIAS)
_OPERATOR_TOKENS = (
    TokenType.PLUS, TokenType.DASH, TokenType.STAR, TokenType.SLASH, TokenType.MOD, TokenType.DPIPE, TokenType.DOT,
)  # fmt: skip


def row_count_error(
    tokens: list[Any], kinds: tuple[TokenType, ...] = tuple(_ROW_COUNT_EXPECTING)
) -> MergekitError | None:
    """Trino's syntax error for the first LIMIT, OFFSET or FETCH (of ``kinds``) whose row count is not an integer
    literal: ``mismatched input '-'. Expecting: 'ALL', <integer>``."""
    for i, tok in enumerate(tokens):
        if tok.token_type not in kinds or i == 0 or tokens[i - 1].token_type in _NOT_A_CLAUSE_AFTER:
            continue  # a column named limit or offset
        k = i + 1
        if tok.token_type == TokenType.FETCH:
            if k >= len(tokens) or _word(tokens[k]) not in ("FIRST", "NEXT"):
                continue
            k += 1
        if k >= len(tokens):
            continue
        count, word = tokens[k], _word(tokens[k])
        if (tok.token_type, word) in ((TokenType.LIMIT, "ALL"), (TokenType.FETCH, "ROW"), (TokenType.FETCH, "ROWS")):
            continue
        if count.token_type == TokenType.NUMBER and count.text.isdigit():
            after = tokens[k + 1] if k + 1 < len(tokens) else None
            if after is None or after.token_type not in _OPERATOR_TOKENS:
                continue
            count = after
        elif count.token_type in (TokenType.COMMA, TokenType.R_PAREN, TokenType.FROM) or _word(count) in _COMPARISONS:
            continue  # ``WHERE limit > 3``
        if count is tokens[k]:
            expecting = f". Expecting: {_ROW_COUNT_EXPECTING[tok.token_type]}"
        else:  # an operator after the row count
            expecting = ". Expecting: 'ROW', 'ROWS'" if tok.token_type == TokenType.FETCH else ""
        shown = "'" + count.text.replace("'", "''") + "'" if count.token_type == TokenType.STRING else count.text
        line, column = count.line, max(count.col - len(shown) + 1, 1)
        return syntax_error(f"mismatched input '{shown}'{expecting}", line, column)
    return None


_COMPARISONS = frozenset({"=", "<>", "!=", "<", "<=", ">", ">=", "IS", "IN", "LIKE", "BETWEEN", "AND", "OR", "NOT"})


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
