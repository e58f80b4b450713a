"""Text -> statement model. Syntax errors become ``SYNTAX_ERROR`` with line and column."""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

import attrs
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.model import (
    AlterTableAddConstraint,
    Call,
    CheckDefinition,
    CreateFunction,
    CreateStream,
    CreateTable,
    Describe,
    DropTable,
    Explain,
    Expression,
    Insert,
    Merge,
    QualifiedName,
    Query,
    ShowCreateTable,
    ShowSchemas,
    ShowTables,
    Statement,
)
from mergekit.sql.references import identifier_name
from mergekit.sql.streaming.jobs import CreateStreamingJob, match_create_job, match_job_action, split_job_source
from mergekit.sql.streaming.streams import (
    create_stream_table,
    match_drop_stream,
    match_show_streams,
    split_create_stream,
)
from mergekit.sql.streaming.syntax import mark_stream_syntax

from .convert import convert
from .defaults import check_check_expression
from .dialect import DIALECT
from .functions import FUNCTION_HEADER, parse_create_function
from .literals import check_typed_literals
from .parts import literal_value, not_supported, syntax_error
from .syntax_hints import check_operators, token_error
from .tree import parse_tree
from .view_statements import view_statement

logging.getLogger("sqlglot").setLevel(logging.ERROR)

__all__ = ["parse_statement", "split_statements", "parse_expression", "parse_column_name"]


_syntax_error = syntax_error

MAX_STATEMENT_LENGTH = 1_000_000
"""Characters in one statement (Trino's ``query.max-length`` default)."""

MAX_NESTING = 100
"""Parentheses nested in one statement. Deeper trees exhaust the parser's and the renderer's recursion."""

# The parser, the converter and the renderer recurse once per level of nesting (a few dozen frames each);
# MAX_NESTING levels need more than Python's default limit of 1,000 frames.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))


def check_limits(text: str) -> None:
    """Refuse a statement longer than MAX_STATEMENT_LENGTH or nested deeper than MAX_NESTING."""
    if len(text) > MAX_STATEMENT_LENGTH:
        raise MergekitError(
            ErrorCode.QUERY_TEXT_TOO_LARGE,
            f"Query text length ({len(text)}) exceeds the maximum length ({MAX_STATEMENT_LENGTH})",
        )
    depth = deepest = 0
    for ch in re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", "", text, flags=re.S):
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    if deepest > MAX_NESTING:
        raise MergekitError(
            ErrorCode.STATEMENT_TOO_DEEP,
            f"Statement is nested {deepest} levels deep; at most {MAX_NESTING} levels of parentheses are allowed",
        )


def split_statements(text: str) -> list[str]:
    """Split a script on top-level semicolons (not inside strings or comments); empty pieces are dropped."""
    try:
        tokens = DIALECT().tokenize(text)
    except TokenError as e:
        raise token_error(text, e) from None
    pieces: list[str] = []
    start = 0
    block = 0  # inside CREATE FUNCTION ... BEGIN ... END, semicolons end body statements, not the script's
    in_function = False
    for i, tok in enumerate(tokens):
        word = tok.text.upper()
        if not in_function and word == "FUNCTION" and FUNCTION_HEADER.match(text[start : tok.end + 1] + " "):
            in_function = True
        if in_function:
            following = tokens[i + 1].text.upper() if i + 1 < len(tokens) else ""
            if word in ("BEGIN", "CASE"):
                block += 1
            elif word == "END" and following not in ("IF", "WHILE", "LOOP"):
                block -= 1
        if tok.token_type == TokenType.SEMICOLON and block <= 0:
            pieces.append(text[start : tok.start])
            start = tok.end + 1
            in_function = False
            block = 0
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip() and _has_code(p)]


def _has_code(piece: str) -> bool:
    try:
        return bool(DIALECT().tokenize(piece))
    except TokenError:
        return True


def parse_expression(text: str) -> Expression:
    """Parse a lone SQL expression (``t.id = s.id``); a syntax error's line and column are those of ``text``."""
    if not text.strip():
        raise _syntax_error("expected an expression, got nothing")
    try:
        node = sqlglot.parse_one(text, read=DIALECT, into=exp.Condition)
        check_operators(DIALECT().tokenize(text))
    except (ParseError, TokenError):
        node = _select_item(text)
    check_typed_literals(node)
    return Expression(node)


def parse_column_name(text: str) -> str:
    """A lone column name (``name``, ``"Name"``): a key of a MERGE builder's mapping."""
    node = parse_expression(text).node
    if not isinstance(node, exp.Column) or node.table:
        raise _syntax_error("expected a column name (without a table name)")
    return identifier_name(node.this)


def _select_item(text: str) -> exp.Expression:
    """``text`` parsed as the one item of a select list; errors in ``text``'s lines and columns (the select list
    starts on a line of its own)."""
    try:
        tree = parse_tree(f"SELECT\n{text}")
    except MergekitError as err:
        line = int(err.details.get("line", 0))
        if err.code is not ErrorCode.SYNTAX_ERROR or line < 2:
            raise
        column = int(err.details.get("column", 0))
        message = re.sub(r"^line \d+:\d+: ", "", err.message)
        raise _syntax_error(message, line - 1, column) from None
    items = tree.expressions if isinstance(tree, exp.Select) else []
    extra = [k for k, v in tree.args.items() if v and k != "expressions"]
    if len(items) != 1 or extra:
        raise _syntax_error(f"expected one expression, got: {text.strip()}")
    if isinstance(items[0], exp.Alias):  # ``a b``: a second word where the expression should have ended
        alias = items[0].args["alias"]
        tok = next((t for t in reversed(DIALECT().tokenize(text)) if t.text == alias.this), None)
        where = (tok.line, max(tok.col - len(tok.text) + 1, 1)) if tok is not None else (0, 0)
        raise _syntax_error(f"mismatched input '{alias.this}'. Expecting: the end of the expression", *where)
    return items[0]


def parse_order_by(text: str) -> tuple[tuple[Expression, bool], ...]:
    """An ORDER BY list (``s.ts DESC, s.id``) as (expression, descending) pairs; NULLS FIRST/LAST is refused."""
    if re.search(r"\bNULLS\s+(FIRST|LAST)\b", text, flags=re.I):
        raise not_supported(f"NULLS FIRST/LAST is not supported here: {text}")
    tree = parse_tree(f"SELECT 1 ORDER BY {text}")
    extra = [k for k, v in tree.args.items() if v and k not in ("expressions", "order")]
    if extra or tree.args.get("order") is None:
        raise _syntax_error(f"expected an ORDER BY list, got: {text}")
    return tuple((Expression(item.this), bool(item.args.get("desc"))) for item in tree.args["order"].expressions)


def parse_statement(text: str) -> Statement:
    """Parse one statement. Everything in it is either in the model or refused with a coded error."""
    check_limits(text)
    try:
        return _parse_statement(text)
    except RecursionError:
        raise MergekitError(
            ErrorCode.STATEMENT_TOO_DEEP, "Statement is too deeply nested (expression depth exceeds the limit)"
        ) from None


def _parse_statement(text: str) -> Statement:
    # leading comments (a script's "-- what this does" lines) would hide the statement's first keyword
    body = re.sub(r"^(?:\s*(?:--[^\n]*(?:\n|$)|/\*.*?\*/))+", "", text, flags=re.S)
    # what came before the statement, as blanks: the parser's lines and columns are those of the user's text
    lead = _blanks(text[: len(text) - len(body.lstrip())])
    text = body
    stripped = text.strip().rstrip(";").strip()
    if not stripped:
        raise _syntax_error("empty statement")
    m = re.match(r"(?is)^explain\s+(analyze\b|\((?:[^()]*)\))?\s*(.*)$", stripped)
    if m:
        if m.group(1):
            option = m.group(1).strip("()").strip().upper()
            raise not_supported(f"EXPLAIN {option if option == 'ANALYZE' else '(' + option + ')'} is not supported")
        inner = _parse_statement(lead + _blanks(stripped[: m.start(2)]) + m.group(2))
        return Explain(statement=inner, text=" ".join(m.group(2).split()))
    m = re.match(
        r"(?is)^show\s+tables(?:\s+(?:from|in)\s+([\w.\"]+))?"
        r"(?:\s+like\s+'((?:[^']|'')*)'(?:\s+escape\s+'((?:[^']|'')*)')?)?$",
        stripped,
    )
    if m:
        return ShowTables(
            schema=_name_from_text(m.group(1)) if m.group(1) else None,
            like=m.group(2).replace("''", "'") if m.group(2) is not None else None,
            escape=m.group(3).replace("''", "'") if m.group(3) is not None else None,
        )
    m = re.match(r"(?is)^show\s+schemas(?:\s+(?:from|in)\s+([\w\"]+))?$", stripped)
    if m:
        return ShowSchemas(catalog=identifier_name(m.group(1).strip('"')) if m.group(1) else None)
    m = re.match(r"(?is)^show\s+create\s+table\s+([\w.\"]+)$", stripped)
    if m:
        return ShowCreateTable(name=_name_from_text(m.group(1)))
    m = re.match(r"(?is)^alter\s+table\s+([\w.\"]+)\s+add\s+check\s*\((.*)\)$", stripped)
    if m:  # PostgreSQL's unnamed ADD CHECK (sqlglot does not parse it): the engine names it
        check = parse_expression(m.group(2)).node
        check_check_expression(check)
        constraint = CheckDefinition(name=None, expression=Expression(check))
        return AlterTableAddConstraint(name=_name_from_text(m.group(1)), constraint=constraint)
    m = re.match(r"(?is)^(?:describe|desc|show\s+columns\s+(?:from|in))\s+([\w.\"]+)$", stripped)
    if m:
        return Describe(name=_name_from_text(m.group(1)))
    if FUNCTION_HEADER.match(stripped):
        return CreateFunction(function=parse_create_function(stripped))
    m = re.match(r"(?is)^call\s+([\w.\"]+)\s*\((.*)\)$", stripped)
    if m:
        return _call(m.group(1), m.group(2))
    job = _job_statement(stripped)
    if job is not None:
        return job
    stream = _stream_statement(stripped)
    if stream is not None:
        return stream
    view = view_statement(stripped, _parse_statement)
    if view is not None:
        return view
    from .mergetable import parse_merge_table_statement

    merge_table = parse_merge_table_statement(stripped)
    if merge_table is not None:
        return merge_table
    tree = parse_tree(lead + mark_stream_syntax(stripped))
    return convert(tree, stripped)


def _blanks(text: str) -> str:
    """``text`` with every character but line breaks as a space: it keeps what follows on its line and column."""
    return re.sub(r"[^\n]", " ", text)


def _job_statement(text: str) -> Statement | None:
    """The streaming job statements (``mergekit.sql.streaming.jobs``), or None for any other statement."""
    action = match_job_action(text)
    if action is not None:
        return action
    job = match_create_job(text)
    if job is None:
        return None
    kind, source_text, body_text = split_job_source(job.statement)
    source = _parse_statement(source_text)
    body = _parse_statement(body_text)
    if not isinstance(source, Query) or not any(source.stream_selects):
        raise _syntax_error(f"A streaming job's source must be a SELECT STREAM query: {source_text}")
    if not isinstance(body, Merge | Insert) or (isinstance(body, Insert) and body.on_conflict is not None):
        raise _syntax_error(f"A streaming job runs MERGE or INSERT ... SELECT STREAM, not: {job.statement}")
    return CreateStreamingJob(**attrs.asdict(job, recurse=False), kind=kind, source=source, body=body)


def _stream_statement(text: str) -> Statement | None:
    """``CREATE STREAM``, ``DROP STREAM``, ``SHOW STREAMS`` (seed 001), or None for any other statement."""
    created = split_create_stream(text)
    if created is not None:
        table_text, options = created
        table = convert(parse_tree(table_text), table_text)
        if not isinstance(table, CreateTable):
            raise _syntax_error("CREATE STREAM needs a column list")
        create_stream_table(table, options)
        return CreateStream(table=table, monotonic=options.monotonic, slack=options.slack, history=options.history)
    dropped = match_drop_stream(text)
    if dropped is not None:
        return DropTable(name=dropped[0], if_exists=dropped[1], stream=True)
    shown = match_show_streams(text)
    if shown is not None:
        return ShowTables(schema=shown[0], streams=True)
    return None


def _name_from_text(text: str) -> QualifiedName:
    return QualifiedName(tuple(p.strip('"').lower() for p in text.split(".")))


def _call(name: str, args_text: str) -> Call:
    positional: list[Any] = []
    named: dict[str, Any] = {}
    if args_text.strip():
        select = parse_tree(f"SELECT {args_text.replace('=>', '=')}")
        for e in select.expressions:  # type: ignore[attr-defined]
            if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column):
                key, value = identifier_name(e.this.this), e.expression
            elif isinstance(e, exp.PropertyEQ):
                key, value = identifier_name(e.this), e.expression
            else:
                positional.append(literal_value(e))
                continue
            if key in named:  # Trino's CallTask
                raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Duplicate procedure argument: {key}")
            named[key] = literal_value(value)
    return Call(name=_name_from_text(name), arguments=tuple(positional), named_arguments=named)
