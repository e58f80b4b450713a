"""Text to one sqlglot tree of mergekit's dialect; a syntax error in the user's words when it is not one.

The first step of every statement parse (``_parse``), in a module of its own so that merge-table DDL
(``_mergetable``) reads the CREATE TABLE part of ``CREATE MERGE TABLE`` the way every CREATE TABLE is read
(``convert(parse_tree(text), text)``) without importing the statement parser that dispatches to it (an import
cycle).
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from mergekit.errors import ErrorCode, MergekitError

from .dialect import DIALECT
from .literals import check_typed_literals
from .parts import syntax_error
from .syntax_hints import (
    check_operators,
    hint_for_parse_error,
    incomplete_operator,
    row_count_error,
    token_error,
    update_without_set,
)

__all__ = ["parse_tree", "plain_parse_message"]


def parse_tree(text: str) -> exp.Expression:
    """The one statement in ``text`` as a sqlglot tree; SYNTAX_ERROR (with line and column if known) if not."""
    try:
        dialect = DIALECT()
        # one tokenization for the parser and mergekit's grammar checks (which read the tokens' types, texts and
        # positions only): a third of a small statement's parse
        tokens = dialect.tokenize(text)
        trees = dialect.parser().parse(tokens, text)
    except ParseError as e:
        hint = hint_for_parse_error(text)  # a mistake we can name (an unknown first word, backquotes, ...)
        if hint is not None:
            raise hint from None
        err = e.errors[0] if e.errors else {}
        desc = str(err.get("description") or e).split("\n")[0]
        line, col = int(err.get("line") or 0), int(err.get("col") or 0)
        operator = incomplete_operator(text, desc, line, col)
        if operator is not None:
            raise operator from None
        token = str(err.get("highlight") or "")
        expecting = re.fullmatch(r"Expecting (\S+)", desc)
        if token and (desc == "Invalid expression / Unexpected token" or expecting):  # say what was found there
            col = max(col - len(token) + 1, 1)
            desc = f"mismatched input '{token}'" + (f". Expecting: '{expecting.group(1)}'" if expecting else "")
        raise syntax_error(plain_parse_message(desc), line, col) from None
    except TokenError as e:
        raise token_error(text, e) from None
    found = [t for t in trees if t is not None]
    if len(found) != 1:
        raise syntax_error("expected exactly one statement")
    tree = found[0]
    check_depth(tree)
    check_grammar(tree, tokens)
    check_typed_literals(tree)
    return tree


MAX_EXPRESSION_DEPTH = 300
"""Nodes nested in one statement's tree (``NOT NOT ... x``, ``a + a + ... + a``; a chain of one AND or OR counts as
one level): Spark's own parser fails on such trees a few hundred levels deep (600 NOTs, 1,500 additions)."""


def check_depth(tree: exp.Expression) -> None:
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPRESSION_DEPTH:
            raise MergekitError(
                ErrorCode.STATEMENT_TOO_DEEP,
                f"Statement is too deeply nested: expressions nest more than {MAX_EXPRESSION_DEPTH} levels",
            )
        for child in node.iter_expressions():
            # a chain of ANDs or ORs is flat to Spark (a 3,000-term OR runs): only other nesting counts
            flat = isinstance(node, (exp.And, exp.Or)) and type(child) is type(node)
            stack.append((child, depth if flat else depth + 1))


_AFTER_COMMA_NEVER = {"FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "UNION", "EXCEPT", "INTERSECT", "THEN"}
_QUERY_STARTS = {"SELECT", "WITH", "VALUES", "TABLE", "("}


def _unexpected(tok: Any, expecting: str = "") -> MergekitError:
    text = tok.text if tok is not None else "<EOF>"
    line, col = (tok.line, max(tok.col - len(tok.text) + 1, 1)) if tok is not None else (0, 0)
    return syntax_error(f"mismatched input '{text}'{'. Expecting: ' + expecting if expecting else ''}", line, col)


def check_grammar(tree: exp.Expression, tokens: list[Any]) -> None:
    """What sqlglot's lenient parser accepts and Trino's grammar does not: stray commas (``(a, , b)``,
    ``IN (1, 2,)``, ``SELECT a, FROM``), a query not starting with SELECT/WITH/VALUES/TABLE (``FROM t``), MERGE WHEN
    clauses without MATCHED or THEN, and UPDATE's WHERE before SET. ``tokens``: the statement's."""
    check_operators(tokens)
    words = [t.text.upper() if t.token_type != TokenType.STRING else "" for t in tokens]
    for i, tok in enumerate(tokens):
        if words[i] == "IN" and (i + 1 == len(tokens) or tokens[i + 1].token_type == TokenType.R_PAREN):
            raise _unexpected(tokens[i + 1] if i + 1 < len(tokens) else None, "'(' after IN")
        if tok.token_type != TokenType.COMMA:
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        prev = tokens[i - 1] if i > 0 else None
        if prev is None or prev.token_type in (TokenType.L_PAREN, TokenType.COMMA):
            raise _unexpected(tok, "an expression")
        if nxt is None or nxt.token_type in (TokenType.COMMA, TokenType.R_PAREN, TokenType.R_BRACKET):
            raise _unexpected(nxt, "an expression after ','")
        if words[i + 1] in _AFTER_COMMA_NEVER:
            raise _unexpected(nxt, "an expression after ','")
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)):
        if tokens and words[0] not in _QUERY_STARTS:
            raise _unexpected(tokens[0], "SELECT, WITH, VALUES or TABLE")
    if any(not _integer_row_count(n) for n in tree.find_all(exp.Limit, exp.Offset, exp.Fetch)):
        raise row_count_error(tokens) or syntax_error("LIMIT, OFFSET and FETCH take an integer row count")
    depth0 = _top_level(tokens)
    if isinstance(tree, exp.Merge):
        _check_merge_into(tokens, words, depth0)
        _check_merge_clauses(tokens, words, depth0)
    if isinstance(tree, exp.Update):
        first_set = next((i for i in depth0 if words[i] == "SET"), None)
        first_where = next((i for i in depth0 if words[i] == "WHERE"), None)
        if first_where is not None and (first_set is None or first_where < first_set):
            raise _unexpected(tokens[first_where], "SET")
        missing = update_without_set(tokens) if first_set is None else None
        if missing is not None:
            raise missing
        if first_set is not None and (first_set + 1 == len(tokens) or first_set + 1 == first_where):
            line, column = tokens[first_set].line, max(tokens[first_set].col - 2, 1)
            raise syntax_error("SET needs at least one assignment: column = value", line, column)


def _integer_row_count(node: exp.Expression) -> bool:
    """LIMIT n, LIMIT ALL, OFFSET n, FETCH FIRST [n] ROWS ONLY: a row count Trino's grammar takes."""
    count = node.args.get("count") if isinstance(node, exp.Fetch) else node.expression
    if count is None or (isinstance(node, exp.Limit) and isinstance(count, exp.Var) and count.name.upper() == "ALL"):
        return True
    return isinstance(count, exp.Literal) and not count.is_string and str(count.this).isdigit()


def _top_level(tokens: list[Any]) -> list[int]:
    """Indexes of the tokens outside parentheses and CASE ... END."""
    out, parens, cases = [], 0, 0
    for i, tok in enumerate(tokens):
        word = tok.text.upper() if tok.token_type != TokenType.STRING else ""
        if tok.token_type == TokenType.L_PAREN:
            parens += 1
        elif tok.token_type == TokenType.R_PAREN:
            parens -= 1
        elif word == "CASE":
            cases += 1
        elif word == "END" and cases:
            cases -= 1
        elif parens == 0 and cases == 0:
            out.append(i)
    return out


def _check_merge_into(tokens: list[Any], words: list[str], depth0: list[int]) -> None:
    """``MERGE t USING ...``: Trino's grammar requires INTO (``MERGE [WITH SCHEMA EVOLUTION] INTO``)."""
    at = next((i for i in depth0 if words[i] == "MERGE"), None)
    if at is None:
        return
    at += 1
    if words[at : at + 3] == ["WITH", "SCHEMA", "EVOLUTION"]:
        at += 3
    if at < len(tokens) and words[at] != "INTO":
        tok = tokens[at]
        raise syntax_error(
            "MERGE needs INTO: MERGE INTO target USING source ON condition WHEN ...",
            tok.line,
            max(tok.col - len(tok.text) + 1, 1),
        )


def _check_merge_clauses(tokens: list[Any], words: list[str], depth0: list[int]) -> None:
    whens = [i for i in depth0 if words[i] == "WHEN"]
    for n, at in enumerate(whens):
        end = whens[n + 1] if n + 1 < len(whens) else len(tokens)
        phrase = [words[i] for i in depth0 if at < i < end]
        k = 0
        if phrase[k : k + 1] == ["NOT"]:
            k += 1
        if phrase[k : k + 1] != ["MATCHED"]:
            raise _unexpected(tokens[at + 1] if at + 1 < len(tokens) else None, "MATCHED or NOT MATCHED")
        k += 1
        if phrase[k : k + 1] == ["BY"]:
            k += 2
        if phrase[k : k + 1] not in (["AND"], ["THEN"]) or "THEN" not in phrase[k:]:
            index = next(
                (i for i in depth0 if at < i < end and words[i] not in ("NOT", "MATCHED", "BY", "SOURCE", "TARGET")),
                None,
            )
            raise _unexpected(tokens[index] if index is not None else None, "AND or THEN")


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
