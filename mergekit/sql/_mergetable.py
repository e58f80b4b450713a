"""MonetDB's merge-table DDL (seed 004), verbatim, plus the helpers the engine needs around it.

sqlglot knows none of these statements, so they are recognised here before the regular parser runs:

* ``CREATE MERGE TABLE [IF NOT EXISTS] t (...) [PARTITION BY {RANGE | VALUES} {ON (col) | USING (expr)}]``
* ``ALTER TABLE [IF EXISTS] m {ADD | SET} TABLE c [AS PARTITION {IN (...) [WITH NULL VALUES]
  | FROM {RANGE MINVALUE | expr} TO {RANGE MAXVALUE | expr} [WITH NULL VALUES] | FOR NULL VALUES}]``
* ``ALTER TABLE [IF EXISTS] m DROP TABLE c [RESTRICT | CASCADE]`` and ``ALTER TABLE t DROP COLUMN c``

Column lists and expressions are still parsed by sqlglot (the table body through the CREATE TABLE path),
so types, quoting and expression syntax are exactly those of every other statement.

:func:`scan_constraints` and :func:`predicate_constraints` extract simple predicates (``col = literal``,
``col IN (...)``, ranges, ``BETWEEN``) from a WHERE or ON clause, for partition pruning.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Mapping
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from mergekit.errors import ErrorCode, MergekitError

from ._convert import convert
from ._dialect import DIALECT
from ._model import (
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
    TableRef,
)
from ._parse_tree import parse_tree
from ._render import column_refs, identifier_name, table_ref_of

__all__ = ["parse_merge_table_statement", "cast_query", "scan_constraints", "predicate_constraints"]

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


# ---- predicates for partition pruning -----------------------------------------------------------------


def _literal(node: exp.Expression) -> tuple[bool, Any]:
    """(True, python value) for a literal the pruning can compare with partition bounds."""
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return True, node.this
        text = node.this
        try:
            return True, (decimal.Decimal(text) if any(c in text for c in ".eE") else int(text))
        except (ValueError, decimal.InvalidOperation):
            return False, None
    if isinstance(node, exp.Neg):
        ok, v = _literal(node.this)
        return (ok and isinstance(v, int | decimal.Decimal)), (
            -v if ok and isinstance(v, int | decimal.Decimal) else None
        )
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        kind = node.to.this
        text = node.this.this
        try:
            if kind in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME, exp.DataType.Type.TIMESTAMPNTZ):
                return True, dt.datetime.fromisoformat(text)
            if kind == exp.DataType.Type.DATE:
                return True, dt.date.fromisoformat(text)
        except ValueError:
            return False, None
    return False, None


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


def predicate_constraints(expression: Expression, qualifiers: set[str | None]) -> dict[str, tuple[Any, ...]]:
    """Simple conjuncts of ``expression`` on columns qualified by one of ``qualifiers`` (None: unqualified):
    ``{column: ("values", frozenset)}`` from ``=`` / ``IN``, ``{column: ("range", low, high)}`` (inclusive,
    either None) from ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``; ``("null",)`` from ``IS NULL``. Anything else
    is ignored: the result is a superset condition, safe for pruning only."""
    out: dict[str, tuple[Any, ...]] = {}

    def column_of(node: exp.Expression) -> str | None:
        if isinstance(node, exp.Column) and (identifier_name(node.args.get("table")) or None) in qualifiers:
            return identifier_name(node.this)
        return None

    def add(col: str, item: tuple[Any, ...]) -> None:
        prev = out.get(col)
        if prev is None:
            out[col] = item
        elif prev[0] == "values" and item[0] == "values":
            out[col] = ("values", prev[1] & item[1])
        elif prev[0] == "range" and item[0] == "range":
            lo = item[1] if prev[1] is None else prev[1] if item[1] is None else _safe_max(prev[1], item[1])
            hi = item[2] if prev[2] is None else prev[2] if item[2] is None else _safe_min(prev[2], item[2])
            out[col] = ("range", lo, hi)
        elif item[0] == "values":
            out[col] = item  # equality is the stronger condition

    for c in _conjuncts(expression.node):
        if isinstance(c, exp.EQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            left, right = c.this, c.expression
            col, (ok, value) = column_of(left), _literal(right)
            flipped = False
            if col is None:
                col, (ok, value) = column_of(right), _literal(left)
                flipped = True
            if col is None or not ok:
                continue
            if isinstance(c, exp.EQ):
                add(col, ("values", frozenset([value])))
                continue
            lower = isinstance(c, exp.GT | exp.GTE) != flipped
            add(col, ("range", value, None) if lower else ("range", None, value))
        elif isinstance(c, exp.In) and not c.args.get("query") and not c.args.get("not"):
            col = column_of(c.this)
            values = [_literal(e) for e in c.expressions]
            if col is not None and values and all(ok for ok, _ in values):
                add(col, ("values", frozenset(v for _, v in values)))
        elif isinstance(c, exp.Between):
            col = column_of(c.this)
            (ok1, lo), (ok2, hi) = _literal(c.args["low"]), _literal(c.args["high"])
            if col is not None and ok1 and ok2:
                add(col, ("range", lo, hi))
        elif isinstance(c, exp.Is) and isinstance(c.expression, exp.Null):
            col = column_of(c.this)
            if col is not None and col not in out:
                out[col] = ("null",)
    return out


def _safe_max(a: Any, b: Any) -> Any:
    try:
        return max(a, b)
    except TypeError:
        return a


def _safe_min(a: Any, b: Any) -> Any:
    try:
        return min(a, b)
    except TypeError:
        return a


def scan_constraints(query: Query) -> Mapping[TableRef, dict[str, tuple[Any, ...]]]:
    """For a plain ``SELECT ... FROM t [JOIN ...] WHERE ...``: the WHERE's simple predicates per table read
    in the top-level FROM (a WHERE is applied after the joins, so pruning a scan by it is safe)."""
    node = query.node
    if not isinstance(node, exp.Select) or node.args.get("where") is None:
        return {}
    tables: list[exp.Table] = []
    from_ = node.args.get("from_") or node.args.get("from")
    if from_ is not None and isinstance(from_.this, exp.Table):
        tables.append(from_.this)
    for join in node.args.get("joins") or []:
        if isinstance(join.this, exp.Table):
            tables.append(join.this)
    refs = [table_ref_of(t) for t in tables]
    out: dict[TableRef, dict[str, tuple[Any, ...]]] = {}
    where = Expression(node.args["where"].this)
    for table, ref in zip(tables, refs, strict=True):
        if refs.count(ref) > 1:
            continue  # the same table twice: a constraint would apply to both scans
        alias = table.args.get("alias")
        qualifiers: set[str | None] = {identifier_name(alias.this) if alias is not None else ref.name.name}
        if len(tables) == 1:
            qualifiers.add(None)
        found = predicate_constraints(where, qualifiers)
        if found:
            out[ref] = found
    return out


def equi_join_keys(expression: Expression, left: str, right: str) -> list[tuple[Expression, Expression]]:
    """Equality conjuncts of a join condition that pair an expression over ``left``'s columns only with one
    over ``right``'s columns only (``t.id = s.id``, ``t.k = s.a + 1``), as ``(left side, right side)``.

    Every pair of rows the condition accepts has equal values on both sides of each pair, so the pairs can
    partition (or pre-filter) both inputs of the join. Conjuncts with subqueries, unqualified or other
    columns, or no columns on one side are left out: the result may be empty, never wrong."""

    def side(node: exp.Expression) -> str | None:
        if node.find(exp.Select) is not None:
            return None
        refs = column_refs(node)
        qualifiers = {q.lower() if q else q for q, _ in refs}
        if len(qualifiers) != 1:
            return None
        (qualifier,) = qualifiers
        return qualifier if qualifier in (left.lower(), right.lower()) else None

    pairs: list[tuple[Expression, Expression]] = []
    for c in _conjuncts(expression.node):
        if not isinstance(c, exp.EQ):
            continue
        a, b = side(c.this), side(c.expression)
        if a is None or b is None:
            continue
        if a == left.lower() and b == right.lower():
            pairs.append((Expression(node=c.this), Expression(node=c.expression)))
        elif a == right.lower() and b == left.lower():
            pairs.append((Expression(node=c.expression), Expression(node=c.this)))
    return pairs
