"""MonetDB's merge-table DDL (seed 004), verbatim, plus the helpers the engine needs around it.

sqlglot knows none of these statements, so they are recognised here before the regular parser runs:

* ``CREATE MERGE TABLE [IF NOT EXISTS] t (...) [PARTITION BY {RANGE | VALUES} {ON (col) | USING (expr)}]``
* ``ALTER TABLE [IF EXISTS] m {ADD | SET} TABLE c [AS PARTITION {IN (...) [WITH NULL VALUES]
  | FROM {RANGE MINVALUE | expr} TO {RANGE MAXVALUE | expr} [WITH NULL VALUES] | FOR NULL VALUES}]``
* ``ALTER TABLE [IF EXISTS] m DROP TABLE c [RESTRICT | CASCADE]`` and ``ALTER TABLE t DROP COLUMN c``

Column lists and expressions are still parsed by sqlglot (the table body through the CREATE TABLE path),
so types, quoting and expression syntax are exactly those of every other statement.

The predicates the engine prunes partitions with are found by ``mergekit.sql.analysis.predicates``.
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.model import (
    AlterTableDropColumn,
    AlterTableDropPartition,
    AlterTableSetPartition,
    CreateMergeTable,
    CreateTable,
    Expression,
    PartitionBy,
    PartitionClause,
    QualifiedName,
    Query,
    Statement,
)

from .convert import convert
from .dialect import DIALECT
from .tree import parse_tree

__all__ = ["parse_merge_table_statement", "cast_query"]

_NAME = r'((?:"[^"]+"|[\w$]+)(?:\s*\.\s*(?:"[^"]+"|[\w$]+))*)'


def _syntax(message: str) -> MergekitError:
    return MergekitError(ErrorCode.SYNTAX_ERROR, message, line=0, column=0)


def _name(text: str) -> QualifiedName:
    parts = [p.strip() for p in re.split(r'\s*\.\s*(?=(?:[^"]*"[^"]*")*[^"]*$)', text.strip())]
    return QualifiedName(tuple(p[1:-1].lower() if p.startswith('"') else p.lower() for p in parts))


def _expression(text: str) -> Expression:
    try:
        node = sqlglot.parse_one(f"SELECT {text}", read=DIALECT)
    except (ParseError, TokenError) as e:
        raise _syntax(f"cannot parse expression '{text.strip()}': {str(e).splitlines()[0]}") from None
    items = node.expressions  # type: ignore[attr-defined]
    if len(items) != 1:
        raise _syntax(f"expected one expression, got '{text.strip()}'")
    return Expression(items[0].copy())


def _expressions(text: str) -> tuple[Expression, ...]:
    if not text.strip():
        return ()
    try:
        node = sqlglot.parse_one(f"SELECT {text}", read=DIALECT)
    except (ParseError, TokenError) as e:
        raise _syntax(f"cannot parse list '{text.strip()}': {str(e).splitlines()[0]}") from None
    return tuple(Expression(e.copy()) for e in node.expressions)  # type: ignore[attr-defined]


def _tokens(text: str) -> list[Any]:
    try:
        return list(DIALECT().tokenize(text))
    except TokenError as e:
        raise _syntax(str(e)) from None


def _matching_paren(text: str, open_at: int) -> int:
    """Index of the ')' closing the '(' at ``open_at`` (strings and comments respected)."""
    depth = 0
    for tok in _tokens(text[open_at:]):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return open_at + tok.start
    raise _syntax("unbalanced parentheses")


def parse_merge_table_statement(text: str) -> Statement | None:
    """The statement if ``text`` is merge-table DDL, else None (the caller parses it as usual)."""
    if re.match(r"(?is)^create\s+merge\s+table\b", text):
        return _create_merge_table(text)
    m = re.match(
        r"(?is)^alter\s+table\s+(if\s+exists\s+)?" + _NAME + r"\s+(add|set)\s+table\s+" + _NAME + r"(.*)$", text
    )
    if m:
        rest = m.group(5).strip()
        clause = None
        if rest:
            pm = re.match(r"(?is)^as\s+partition\s+(.*)$", rest)
            if not pm:
                raise _syntax(f"expected AS PARTITION, got '{rest}'")
            clause = _partition_clause(pm.group(1).strip())
        return AlterTableSetPartition(
            name=_name(m.group(2)),
            child=_name(m.group(4)),
            replace=m.group(3).lower() == "set",
            partition=clause,
            if_exists=bool(m.group(1)),
        )
    m = re.match(
        r"(?is)^alter\s+table\s+(if\s+exists\s+)?"
        + _NAME
        + r"\s+drop\s+table\s+"
        + _NAME
        + r"(?:\s+(restrict|cascade))?$",
        text,
    )
    if m:
        return AlterTableDropPartition(
            name=_name(m.group(2)),
            child=_name(m.group(3)),
            if_exists=bool(m.group(1)),
            cascade=(m.group(4) or "").lower() == "cascade",
        )
    m = re.match(r"(?is)^alter\s+table\s+" + _NAME + r"\s+drop\s+(?:column\s+)?" + _NAME + r"$", text)
    if m and "." not in m.group(2):
        return AlterTableDropColumn(name=_name(m.group(1)), column=_name(m.group(2)).name)
    return None


def _create_merge_table(text: str) -> CreateMergeTable:
    open_at = text.find("(")
    if open_at < 0:
        raise _syntax("CREATE MERGE TABLE needs a column list")
    close_at = _matching_paren(text, open_at)
    head = re.sub(r"(?is)^create\s+merge\s+table", "CREATE TABLE", text[: close_at + 1])
    table = convert(parse_tree(head), head)  # what parse_statement(head) returns, without importing _parse
    assert isinstance(table, CreateTable)
    tail = text[close_at + 1 :].strip()
    _refuse_properties(tail)
    partition_by = None
    if tail:
        m = re.match(r"(?is)^partition\s+by\s+(range|values)\s+(on|using)\s*\((.*)\)$", tail)
        if not m:
            raise _syntax(
                f"expected PARTITION BY {{RANGE | VALUES}} {{ON (column) | USING (expression)}}, got '{tail}'"
            )
        method = m.group(1).upper()
        if m.group(2).lower() == "on":
            inner = m.group(3).strip()
            if not re.fullmatch(r'"[^"]+"|[\w$]+', inner):
                raise MergekitError(
                    ErrorCode.INVALID_PARTITION,
                    "CREATE MERGE TABLE: exactly one column is allowed in the partition-by-column scheme",
                )
            column = inner[1:-1].lower() if inner.startswith('"') else inner.lower()
            if column not in {c.name for c in table.columns}:
                raise MergekitError(
                    ErrorCode.COLUMN_NOT_FOUND,
                    f"CREATE MERGE TABLE: the partition column '{column}' is not part of the table",
                )
            partition_by = PartitionBy(method=method, column=column)
        else:
            expression = _expression(m.group(3))
            _check_partition_expression(expression, {c.name for c in table.columns})
            partition_by = PartitionBy(method=method, expression=expression)
    return CreateMergeTable(
        name=table.name,
        columns=table.columns,
        primary_key=table.primary_key,
        if_not_exists=table.if_not_exists,
        partition_by=partition_by,
        check_constraints=table.check_constraints,
    )


def _refuse_properties(tail: str) -> None:
    """``CREATE MERGE TABLE ... [PARTITION BY ...] WITH (name = value, ...)``: a merge table has no table properties
    of its own (its child tables have theirs), so INVALID_TABLE_PROPERTY names the first one written."""
    for m in re.finditer(r"(?i)\bwith\s*\(", tail):
        open_at = m.end() - 1
        before = tail[: m.start()]
        if before.count("(") != before.count(")") or _matching_paren(tail, open_at) != len(tail) - 1:
            continue  # not a clause of the statement
        inside = tail[open_at + 1 : -1]
        named = re.match(r'\s*("[^"]+"|[\w$]+)\s*=', inside)
        name = named.group(1).strip('"').lower() if named else inside.strip()
        raise MergekitError(
            ErrorCode.INVALID_TABLE_PROPERTY,
            f"Table property '{name}' does not exist: a merge table takes no table properties "
            "(its child tables take theirs in CREATE TABLE)",
        )


def _check_partition_expression(expression: Expression, columns: set[str]) -> None:
    node = expression.node
    if node.find(exp.Window) is not None:
        raise MergekitError(
            ErrorCode.INVALID_PARTITION,
            "CREATE MERGE TABLE: error compiling expression 'SQL feature not yet available for expressions "
            "and default values: WINDOW'",
        )
    agg = node.find(exp.AggFunc)
    if agg is not None:
        raise MergekitError(
            ErrorCode.INVALID_PARTITION,
            f"CREATE MERGE TABLE: {agg.key.upper()}: aggregate functions not allowed on a unique value",
        )
    if node.find(exp.Subquery, exp.Select) is not None:
        raise MergekitError(
            ErrorCode.INVALID_PARTITION, "CREATE MERGE TABLE: subqueries are not allowed in the partition expression"
        )
    for _, name in expression.column_refs():
        if name not in columns:
            raise MergekitError(
                ErrorCode.COLUMN_NOT_FOUND,
                f"CREATE MERGE TABLE: the partition expression references '{name}', which is not part of the table",
            )


def _partition_clause(text: str) -> PartitionClause:
    with_nulls = False
    m = re.match(r"(?is)^(.*?)\s+with\s+null\s+values$", text)
    if m:
        text, with_nulls = m.group(1).strip(), True
    if re.fullmatch(r"(?is)for\s+null\s+values", text):
        if with_nulls:
            raise _syntax("FOR NULL VALUES cannot be combined with WITH NULL VALUES")
        return PartitionClause(kind="null", with_nulls=True)
    m = re.match(r"(?is)^in\s*\((.*)\)$", text)
    if m:
        return PartitionClause(kind="values", values=_expressions(m.group(1)), with_nulls=with_nulls)
    m = re.match(r"(?is)^from\s+(.*)$", text)
    if m:
        body = m.group(1)
        depth = 0
        split_at = None
        for tok in _tokens(body):
            if tok.token_type == TokenType.L_PAREN:
                depth += 1
            elif tok.token_type == TokenType.R_PAREN:
                depth -= 1
            elif depth == 0 and tok.text.upper() == "TO" and tok.token_type != TokenType.STRING:
                split_at = (tok.start, tok.end)
                break
        if split_at is None:
            raise _syntax("expected FROM ... TO ... in AS PARTITION")
        low, high = body[: split_at[0]].strip(), body[split_at[1] + 1 :].strip()
        minimum = None if re.fullmatch(r"(?is)range\s+minvalue", low) else _expression(low)
        maximum = None if re.fullmatch(r"(?is)range\s+maxvalue", high) else _expression(high)
        return PartitionClause(kind="range", minimum=minimum, maximum=maximum, with_nulls=with_nulls)
    raise _syntax(f"expected IN (...), FROM ... TO ... or FOR NULL VALUES after AS PARTITION, got '{text}'")


def cast_query(expressions: tuple[Expression, ...], type_text: str) -> Query:
    """``SELECT CAST(e1 AS type), CAST(e2 AS type), ...``: how the engine evaluates partition bounds and
    list values (arbitrary constant expressions, cast to the partition key's type)."""
    dtype = exp.DataType.build(type_text, dialect=DIALECT)
    select = exp.select(*[exp.Cast(this=e.node.copy(), to=dtype.copy()) for e in expressions] or [exp.null()])
    return Query(node=select)
