"""Calcite's streaming syntax that sqlglot cannot parse, rewritten in the text before parsing (token pre-passes,
like ``SELECT STREAM`` in ``_stream_marks``), each into a form sqlglot parses and the rest of the SQL layer reads:

* ``TABLE name`` as an argument (the data of a window table function, ``TABLE(TUMBLE(TABLE orders, ...))``)
  becomes the derived table it stands for, ``(SELECT * FROM name)``;
* ``OVER w (RANGE ...)`` (seed 001's refinement of a named window) becomes the standard ``OVER (w RANGE ...)``;
* a window specification written ``(ORDER BY ... PARTITION BY ...)`` (seed 001's clause order) gets the
  standard order ``(PARTITION BY ... ORDER BY ...)``;
* Calcite's interval difference ``(a - b) HOUR`` (``SqlValidatorTest.testMonotonic``: the datetime difference as
  an interval of that unit) becomes ``mergekit_interval_difference((a - b), 'HOUR')``, a node ``_interval_diff``
  reads. In a select list, ``(a - b) hour`` directly followed by ``,``, ``FROM`` or the end is Trino's column
  alias (``SELECT (a - b) hour FROM t`` names a column ``hour``), as before; anywhere else (``CAST((a - b) HOUR
  AS INTEGER)``, ``GROUP BY (a - b) HOUR``, ``(a - b) HOUR AS h``) it is the interval difference.

``SESSION(...)`` parses as a function through the dialect (``_dialect``); the table functions' named arguments
(``DATA => ...``) parse as they are.
"""

from __future__ import annotations

import re

from sqlglot.tokens import Token, Tokenizer, TokenType

from mergekit.sql.parse.dialect import DIALECT

from .marks import mark_select_stream

__all__ = ["mark_stream_syntax", "INTERVAL_DIFFERENCE"]

INTERVAL_DIFFERENCE = "mergekit_interval_difference"

_UNITS = {"SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR"}
_OPERATORS = {
    TokenType.PLUS, TokenType.DASH, TokenType.STAR, TokenType.SLASH, TokenType.MOD, TokenType.DPIPE, TokenType.EQ,
    TokenType.NEQ, TokenType.LT, TokenType.LTE, TokenType.GT, TokenType.GTE,
}  # fmt: skip
# tokens after which a parenthesis opens an expression (not a function call's arguments)
_BEFORE_EXPRESSION = _OPERATORS | {
    TokenType.L_PAREN, TokenType.COMMA, TokenType.SELECT, TokenType.WHERE, TokenType.HAVING, TokenType.ON,
    TokenType.AND, TokenType.OR, TokenType.NOT, TokenType.WHEN, TokenType.THEN, TokenType.ELSE, TokenType.BETWEEN,
    TokenType.GROUP_BY, TokenType.ORDER_BY, TokenType.PARTITION_BY, TokenType.DISTINCT, TokenType.FARROW,
}  # fmt: skip
# after ``(a - b) hour`` in a select list, these make ``hour`` Trino's column alias
_ALIAS_ENDS = {
    TokenType.COMMA, TokenType.FROM, TokenType.SEMICOLON, TokenType.R_PAREN, TokenType.UNION, TokenType.EXCEPT,
    TokenType.INTERSECT,
}  # fmt: skip
_CLAUSES = {
    TokenType.SELECT, TokenType.FROM, TokenType.WHERE, TokenType.GROUP_BY, TokenType.HAVING, TokenType.ORDER_BY,
    TokenType.WINDOW, TokenType.ON, TokenType.LIMIT,
}  # fmt: skip


def mark_stream_syntax(text: str) -> str:
    """``text`` with ``SELECT STREAM`` marked and the forms above rewritten."""
    text = mark_select_stream(text)
    if re.search(r"(?i)\btable\b", text):
        text = _apply(text, _table_arguments)
    if re.search(r"(?i)\bover\b", text):
        text = _apply(text, _named_window_refinements)
    if re.search(r"(?i)\bpartition\s+by\b", text):
        text = _apply(text, _window_clause_order)
    if re.search(r"(?i)\)\s*(second|minute|hour|day|week|month|year)\b", text):
        text = _apply(text, _interval_differences)
    return text


_Edit = tuple[int, int, str]  # replace text[start:end] (end exclusive) by the string


def _apply(text: str, find: object) -> str:
    try:
        tokens = Tokenizer(dialect=DIALECT).tokenize(text)
    except Exception:  # the parser reports the error with its position
        return text
    edits: list[_Edit] = find(text, tokens)  # type: ignore[operator]
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _matching(tokens: list[Token]) -> dict[int, int]:
    """Index of each ``(`` -> index of its ``)``."""
    out: dict[int, int] = {}
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.token_type is TokenType.L_PAREN:
            stack.append(i)
        elif tok.token_type is TokenType.R_PAREN and stack:
            out[stack.pop()] = i
    return out


def _table_arguments(text: str, tokens: list[Token]) -> list[_Edit]:
    """``TABLE name[.name...]`` after ``(``, ``,`` or ``=>`` -> ``(SELECT * FROM name)``."""
    edits: list[_Edit] = []
    for i, tok in enumerate(tokens):
        if tok.token_type is not TokenType.TABLE or i == 0:
            continue
        if tokens[i - 1].token_type not in (TokenType.L_PAREN, TokenType.COMMA, TokenType.FARROW):
            continue
        names = (TokenType.VAR, TokenType.IDENTIFIER)
        j = i + 1  # the name's last token
        if j >= len(tokens) or tokens[j].token_type not in names:
            continue
        while j + 2 < len(tokens) and tokens[j + 1].token_type is TokenType.DOT and tokens[j + 2].token_type in names:
            j += 2
        if j + 1 < len(tokens) and tokens[j + 1].token_type is TokenType.L_PAREN:
            continue  # TABLE(f(...)): a table function call
        name = text[tokens[i + 1].start : tokens[j].end + 1]
        edits.append((tok.start, tokens[j].end + 1, f"(SELECT * FROM {name})"))
    return edits


def _named_window_refinements(text: str, tokens: list[Token]) -> list[_Edit]:
    """``OVER w (`` -> ``OVER (w ``."""
    edits: list[_Edit] = []
    for i in range(len(tokens) - 2):
        over, name, paren = tokens[i], tokens[i + 1], tokens[i + 2]
        if over.token_type is TokenType.OVER and name.token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            if paren.token_type is TokenType.L_PAREN:
                written = text[name.start : name.end + 1]
                edits.append((name.start, paren.end + 1, f"({written} "))
    return edits


def _window_clause_order(text: str, tokens: list[Token]) -> list[_Edit]:
    """In a window specification (a parenthesis after ``OVER`` or ``AS``) that starts with ``ORDER BY`` and has
    a ``PARTITION BY`` after it: the PARTITION BY part moved before the ORDER BY part."""
    edits: list[_Edit] = []
    matching = _matching(tokens)
    for open_, close in matching.items():
        if open_ == 0 or tokens[open_ - 1].token_type not in (TokenType.OVER, TokenType.ALIAS):
            continue
        inside = _top_level(tokens, open_, close, matching)
        if not inside or tokens[inside[0]].token_type is not TokenType.ORDER_BY:
            continue
        partition = next((k for k in inside if tokens[k].token_type is TokenType.PARTITION_BY), None)
        if partition is None:
            continue
        frame = next(
            (k for k in inside if k > partition and tokens[k].text.upper() in ("ROWS", "RANGE", "GROUPS")), None
        )
        order_text = text[tokens[inside[0]].start : tokens[partition].start].strip()
        end = tokens[frame].start if frame is not None else tokens[close].start
        partition_text = text[tokens[partition].start : end].strip()
        start = tokens[inside[0]].start
        edits.append((start, end, f"{partition_text} {order_text} "))
    return edits


def _top_level(tokens: list[Token], open_: int, close: int, matching: dict[int, int]) -> list[int]:
    """Indexes of the tokens directly inside the parenthesis ``open_`` .. ``close``."""
    out: list[int] = []
    k = open_ + 1
    while k < close:
        out.append(k)
        k = matching[k] + 1 if tokens[k].token_type is TokenType.L_PAREN and k in matching else k + 1
    return out


def _interval_differences(text: str, tokens: list[Token]) -> list[_Edit]:
    """``(a - b) UNIT [TO UNIT]`` -> ``mergekit_interval_difference((a - b), 'UNIT [TO UNIT]')``."""
    edits: list[_Edit] = []
    matching = _matching(tokens)
    clause = _clauses(tokens)
    for open_, close in matching.items():
        if close + 1 >= len(tokens) or tokens[close + 1].text.upper() not in _UNITS:
            continue
        if tokens[close + 1].token_type in (TokenType.STRING, TokenType.IDENTIFIER):
            continue  # 'hour', "hour"
        before = tokens[open_ - 1] if open_ > 0 else None
        if before is not None and before.token_type not in _BEFORE_EXPRESSION:
            continue  # f(...) unit: a call, then Trino's alias
        inside = _top_level(tokens, open_, close, matching)
        if not inside or tokens[inside[0]].token_type is TokenType.SELECT:
            continue
        if not any(tokens[k].token_type is TokenType.DASH and k != inside[0] for k in inside):
            continue
        last = close + 1
        unit = tokens[last].text.upper()
        if last + 2 < len(tokens) and tokens[last + 1].text.upper() == "TO" and tokens[last + 2].text.upper() in _UNITS:
            last += 2
            unit = f"{unit} TO {tokens[last].text.upper()}"
        after = tokens[last + 1] if last + 1 < len(tokens) else None
        select_item = before is None or before.token_type in (TokenType.SELECT, TokenType.DISTINCT)
        select_item = select_item or (before.token_type is TokenType.COMMA and clause[open_] is TokenType.SELECT)
        if select_item and (after is None or after.token_type in _ALIAS_ENDS):
            continue  # SELECT (a - b) hour FROM t: Trino's column alias
        edits.append((tokens[open_].start, tokens[open_].start, f"{INTERVAL_DIFFERENCE}("))
        edits.append((tokens[close].end + 1, tokens[last].end + 1, f", '{unit}')"))
    return edits


def _clauses(tokens: list[Token]) -> list[TokenType | None]:
    """For each token, the last clause keyword (SELECT, FROM, WHERE, ...) seen at its parenthesis depth."""
    out: list[TokenType | None] = []
    stack: list[TokenType | None] = [None]
    for tok in tokens:
        if tok.token_type is TokenType.R_PAREN and len(stack) > 1:
            stack.pop()
        out.append(stack[-1])
        if tok.token_type in _CLAUSES:
            stack[-1] = tok.token_type
        elif tok.token_type is TokenType.L_PAREN:
            stack.append(None)
    return out
