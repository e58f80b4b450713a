"""``SELECT STREAM``, marked before parsing (see ``mergekit.sql.streaming.streams``): a token pre-pass finds the keyword
``STREAM`` right after ``SELECT`` (unless it is the select list itself: ``SELECT stream``, ``SELECT stream, a``,
``SELECT stream FROM t``), and leaves in its place a comment that sqlglot attaches to that ``Select``."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Tokenizer, TokenType

from mergekit.sql.parse.dialect import DIALECT

__all__ = ["STREAM_MARK", "mark_select_stream", "is_stream_select", "top_level_stream_flags"]

STREAM_MARK = "mergekit:select-stream"

# After SELECT STREAM, these mean the word STREAM was the select list itself or the start of an expression over
# a column named stream (``SELECT stream + 1``, ``SELECT stream || 'x'``, ``SELECT stream = 2``).
_NOT_A_KEYWORD_AFTER = {
    TokenType.COMMA,
    TokenType.FROM,
    TokenType.ALIAS,
    TokenType.DOT,
    TokenType.R_PAREN,
    TokenType.SEMICOLON,
    TokenType.PLUS,
    TokenType.DASH,
    TokenType.SLASH,
    TokenType.MOD,
    TokenType.DPIPE,
    TokenType.EQ,
    TokenType.NEQ,
    TokenType.LT,
    TokenType.LTE,
    TokenType.GT,
    TokenType.GTE,
    TokenType.AND,
    TokenType.OR,
    TokenType.IS,
    TokenType.IN,
    TokenType.LIKE,
    TokenType.BETWEEN,
    TokenType.L_BRACKET,
    TokenType.WHERE,
    TokenType.UNION,
}


def mark_select_stream(text: str) -> str:
    """``text`` with every ``SELECT STREAM`` written as ``SELECT /*STREAM_MARK*/``."""
    if "stream" not in text.lower():
        return text
    try:
        tokens = Tokenizer(dialect=DIALECT).tokenize(text)
    except Exception:  # the parser reports the error with its position
        return text
    cuts: list[tuple[int, int]] = []
    for i in range(len(tokens) - 1):
        first, second = tokens[i], tokens[i + 1]
        if first.token_type is not TokenType.SELECT:
            continue
        if second.token_type is TokenType.VAR or second.text.upper() == "STREAM":
            if second.text.upper() != "STREAM" or second.token_type is TokenType.IDENTIFIER:
                continue
            after = tokens[i + 2] if i + 2 < len(tokens) else None
            if after is None or after.token_type in _NOT_A_KEYWORD_AFTER:
                continue
            if after.token_type is TokenType.STAR:  # SELECT STREAM * FROM ..., or SELECT stream * 2 FROM ...
                then = tokens[i + 3] if i + 3 < len(tokens) else None
                if then is not None and then.token_type not in (TokenType.FROM, TokenType.COMMA, TokenType.EXCEPT):
                    continue
            cuts.append((second.start, second.end + 1))
    for start, end in reversed(cuts):
        text = f"{text[:start]}/*{STREAM_MARK}*/{text[end:]}"
    return text


def is_stream_select(select: exp.Expression) -> bool:
    """Whether this SELECT was written ``SELECT STREAM``."""
    return isinstance(select, exp.Select) and STREAM_MARK in (select.comments or [])


def top_level_stream_flags(tree: exp.Expression) -> tuple[bool, ...]:
    """``SELECT STREAM`` or not, for each top-most SELECT of a query (set-operation branches, through
    parentheses; a leading WITH belongs to the query it heads)."""
    if isinstance(tree, exp.Subquery):
        return top_level_stream_flags(tree.this)
    if isinstance(tree, exp.SetOperation):
        return top_level_stream_flags(tree.this) + top_level_stream_flags(tree.expression)
    return (is_stream_select(tree),)
