"""Text -> statement model. Syntax errors become ``SYNTAX_ERROR`` with line and column."""

from __future__ import annotations

import logging
import re
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from mergekit.errors import ErrorCode, MergekitError

from ._dialect import DIALECT
from ._functions import FUNCTION_HEADER, parse_create_function
from ._model import (
    AlterTableAddColumn,
    Call,
    ColumnDefinition,
    CreateFunction,
    CreateSchema,
    CreateTable,
    Delete,
    Describe,
    DropTable,
    Explain,
    Expression,
    Insert,
    Merge,
    MergeAction,
    MergeCase,
    MergeCaseKind,
    QualifiedName,
    Query,
    Relation,
    ShowSchemas,
    ShowTables,
    Statement,
    Truncate,
    Update,
)
from ._render import identifier_name, table_ref_of

logging.getLogger("sqlglot").setLevel(logging.ERROR)

__all__ = ["parse_statement", "split_statements", "parse_expression"]


def _syntax_error(message: str, line: int = 0, column: int = 0) -> MergekitError:
    where = f"line {line}:{column}: " if line else ""
    return MergekitError(ErrorCode.SYNTAX_ERROR, f"{where}{message}", line=line, column=column)


def split_statements(text: str) -> list[str]:
    """Split a script on top-level semicolons (not inside strings or comments); empty pieces are dropped."""
    try:
        tokens = DIALECT().tokenize(text)
    except TokenError as e:
        raise _syntax_error(str(e)) from None
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


def _parse_one(text: str) -> exp.Expression:
    try:
        trees = sqlglot.parse(text, read=DIALECT)
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        desc = str(err.get("description") or e).split("\n")[0]
        desc = re.sub(r"<Token token_type: [\w.]+, text: (.*?), line: .*?>", r"'\1'", desc)
        raise _syntax_error(desc, int(err.get("line") or 0), int(err.get("col") or 0)) from None
    except TokenError as e:
        raise _syntax_error(str(e)) from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise _syntax_error("expected exactly one statement")
    return trees[0]


def parse_expression(text: str) -> Expression:
    """Parse a lone SQL expression (``t.id = s.id``)."""
    try:
        node = sqlglot.parse_one(text, read=DIALECT, into=exp.Condition)
    except (ParseError, TokenError):
        node = _parse_one(f"SELECT {text}").expressions[0]  # type: ignore[attr-defined]
    return Expression(node)


def parse_statement(text: str) -> Statement:
    """Parse one statement."""
    # leading comments (a script's "-- what this does" lines) would hide the statement's first keyword
    text = re.sub(r"^(?:\s*(?:--[^\n]*(?:\n|$)|/\*.*?\*/))+", "", text, flags=re.S)
    stripped = text.strip().rstrip(";").strip()
    if not stripped:
        raise _syntax_error("empty statement")
    m = re.match(r"(?is)^explain\s+(?:\((?:[^()]*)\)\s*)?(.*)$", stripped)
    if m:
        return Explain(statement=parse_statement(m.group(1)))
    m = re.match(r"(?is)^show\s+tables(?:\s+(?:from|in)\s+([\w.\"]+))?(?:\s+like\s+.*)?$", stripped)
    if m:
        return ShowTables(schema=_name_from_text(m.group(1)) if m.group(1) else None)
    m = re.match(r"(?is)^show\s+schemas(?:\s+(?:from|in)\s+([\w\"]+))?$", stripped)
    if m:
        return ShowSchemas(catalog=identifier_name(m.group(1).strip('"')) if m.group(1) else None)
    m = re.match(r"(?is)^(?:describe|desc|show\s+columns\s+(?:from|in))\s+([\w.\"]+)$", stripped)
    if m:
        return Describe(name=_name_from_text(m.group(1)))
    if FUNCTION_HEADER.match(stripped):
        return CreateFunction(function=parse_create_function(stripped))
    m = re.match(r"(?is)^call\s+([\w.\"]+)\s*\((.*)\)$", stripped)
    if m:
        return _call(m.group(1), m.group(2))
    from ._mergetable import parse_merge_table_statement

    merge_table = parse_merge_table_statement(stripped)
    if merge_table is not None:
        return merge_table
    tree = _parse_one(stripped)
    return _convert(tree, stripped)


def _name_from_text(text: str) -> QualifiedName:
    return QualifiedName(tuple(p.strip('"').lower() for p in text.split(".")))


def _qualified(table: exp.Expression) -> QualifiedName:
    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Table):
        raise _syntax_error(f"expected a table name, got {table.sql(dialect='trino')}")
    return QualifiedName(tuple(identifier_name(p) for p in table.parts))


def _literal_value(node: exp.Expression) -> Any:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        return float(text) if any(ch in text for ch in ".eE") else int(text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg):
        return -_literal_value(node.this)
    if isinstance(node, exp.Array):
        return [_literal_value(e) for e in node.expressions]
    if isinstance(node, (exp.Tuple, exp.Paren)):
        inner = node.expressions if isinstance(node, exp.Tuple) else [node.this]
        return [_literal_value(e) for e in inner]
    if isinstance(node, (exp.Column, exp.Identifier, exp.Var)):
        return node.name
    raise _syntax_error(f"expected a literal value, got {node.sql(dialect='trino')}")


def _call(name: str, args_text: str) -> Call:
    positional: list[Any] = []
    named: dict[str, Any] = {}
    if args_text.strip():
        select = _parse_one(f"SELECT {args_text.replace('=>', '=')}")
        for e in select.expressions:  # type: ignore[attr-defined]
            if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column):
                named[identifier_name(e.this.this)] = _literal_value(e.expression)
            elif isinstance(e, exp.PropertyEQ):
                named[identifier_name(e.this)] = _literal_value(e.expression)
            else:
                positional.append(_literal_value(e))
    return Call(name=_name_from_text(name), arguments=tuple(positional), named_arguments=named)


def _type_text(kind: exp.DataType) -> str:
    return re.sub(r"\s+", " ", kind.sql(dialect="trino").lower())


def _column_def(col: exp.ColumnDef) -> ColumnDefinition:
    nullable = True
    comment = None
    for constraint in col.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = _literal_value(kind.this)
    kind = col.args.get("kind")
    if kind is None:
        raise _syntax_error(f"column {col.name} has no type")
    return ColumnDefinition(
        name=identifier_name(col.this), type_text=_type_text(kind), nullable=nullable, comment=comment
    )


def _properties(create: exp.Create) -> dict[str, Any]:
    props: dict[str, Any] = {}
    properties = create.args.get("properties")
    if properties is None:
        return props
    for prop in properties.expressions:
        if type(prop) is exp.Property:
            props[identifier_name(prop.this)] = _literal_value(prop.args["value"])
            continue
        # sqlglot turns known keys (partitioned_by, format, ...) into typed properties: read them back as text
        key, sep, value = prop.sql(dialect="trino").partition("=")
        if not sep:
            raise _syntax_error(f"unsupported table property: {prop.sql(dialect='trino')}")
        props[key.strip().strip('"').lower()] = _literal_value(sqlglot.parse_one(value, read=DIALECT))
    return props


def _where(node: exp.Expression) -> Expression | None:
    where = node.args.get("where")
    return Expression(where.this) if where is not None else None


def _assignment(eq: exp.Expression, text: str) -> tuple[str, Expression]:
    if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
        raise _syntax_error(f"expected column = value in SET, got {eq.sql(dialect='trino')}")
    if eq.this.args.get("table") is not None:
        raise _syntax_error(f"qualified column names are not allowed in SET: {eq.this.sql(dialect='trino')}")
    return identifier_name(eq.this.this), Expression(eq.expression)


def _relation(node: exp.Expression) -> Relation:
    alias_node = node.args.get("alias")
    alias = identifier_name(alias_node.this) if alias_node is not None and alias_node.this else None
    columns: tuple[str, ...] = ()
    if isinstance(alias_node, exp.TableAlias):
        columns = tuple(identifier_name(c) for c in alias_node.columns)
    if isinstance(node, exp.Table):
        ref = table_ref_of(node)
        return Relation(node, alias=alias or ref.name.name, column_aliases=columns, table=ref)
    if isinstance(node, (exp.Subquery, exp.Values)):
        return Relation(node, alias=alias, column_aliases=columns)
    raise _syntax_error(f"unsupported MERGE source: {node.sql(dialect='trino')}")


def _merge(tree: exp.Merge, text: str) -> Merge:
    target = tree.this
    if not isinstance(target, exp.Table):
        raise _syntax_error("MERGE target must be a table")
    alias = target.args.get("alias")
    target_alias = identifier_name(alias.this) if alias is not None else None
    cases: list[MergeCase] = []
    whens = tree.args.get("whens")
    for when in whens.expressions if whens is not None else []:
        matched = bool(when.args.get("matched"))
        by_source = bool(when.args.get("source"))
        if matched:
            kind = MergeCaseKind.MATCHED
        elif by_source:
            kind = MergeCaseKind.NOT_MATCHED_BY_SOURCE
        else:
            kind = MergeCaseKind.NOT_MATCHED
        cond = when.args.get("condition")
        condition = Expression(cond) if cond is not None else None
        then = when.args.get("then")
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            if kind is MergeCaseKind.NOT_MATCHED:
                raise _syntax_error("WHEN NOT MATCHED supports only INSERT")
            cases.append(MergeCase(kind=kind, action=MergeAction.DELETE, condition=condition))
        elif isinstance(then, exp.Update):
            if kind is MergeCaseKind.NOT_MATCHED:
                raise _syntax_error("WHEN NOT MATCHED supports only INSERT")
            assignments = tuple(_assignment(e, text) for e in then.expressions)
            cases.append(MergeCase(kind=kind, action=MergeAction.UPDATE, condition=condition, assignments=assignments))
        elif isinstance(then, exp.Insert):
            if kind is not MergeCaseKind.NOT_MATCHED:
                raise _syntax_error(f"{kind.value} supports only UPDATE and DELETE")
            cols_node = then.this
            columns = (
                tuple(identifier_name(c.this if isinstance(c, exp.Column) else c) for c in cols_node.expressions)
                if cols_node is not None
                else None
            )
            values_node = then.expression
            values = values_node.expressions if isinstance(values_node, exp.Tuple) else [values_node]
            cases.append(
                MergeCase(
                    kind=kind,
                    action=MergeAction.INSERT,
                    condition=condition,
                    insert_columns=columns,
                    insert_values=tuple(Expression(v) for v in values),
                )
            )
        else:
            raise _syntax_error(f"unsupported MERGE action: {then.sql(dialect='trino') if then else then}")
    if not cases:
        raise _syntax_error("MERGE needs at least one WHEN clause")
    return Merge(
        target=_qualified(target),
        target_alias=target_alias,
        source=_relation(tree.args["using"]),
        on=Expression(tree.args["on"]),
        cases=tuple(cases),
    )


def _convert(tree: exp.Expression, text: str) -> Statement:
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values)) or (
        isinstance(tree, exp.Subquery)
    ):
        return Query(node=tree)
    if isinstance(tree, exp.Merge):
        return _merge(tree, text)
    if isinstance(tree, exp.Insert):
        target = tree.this
        columns = None
        if isinstance(target, exp.Schema):
            columns = tuple(identifier_name(c) for c in target.expressions)
        source = tree.expression
        if source is None:
            raise _syntax_error("INSERT needs VALUES or a query")
        return Insert(target=_qualified(target), columns=columns, source=Query(node=source))
    if isinstance(tree, exp.Update):
        if tree.args.get("from_") is not None or tree.args.get("from") is not None:
            raise _syntax_error("UPDATE ... FROM is not supported; use MERGE")
        table = tree.this
        if table.args.get("alias") is not None:
            raise _syntax_error("an alias on the UPDATE target is not supported")
        return Update(
            target=_qualified(table),
            assignments=tuple(_assignment(e, text) for e in tree.expressions),
            where=_where(tree),
        )
    if isinstance(tree, exp.Delete):
        if tree.args.get("using"):
            raise _syntax_error("DELETE ... USING is not supported; use MERGE")
        return Delete(target=_qualified(tree.this), where=_where(tree))
    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind") or "").upper()
        if kind == "SCHEMA":
            return CreateSchema(name=_qualified(tree.this), if_not_exists=bool(tree.args.get("exists")))
        if kind == "TABLE":
            schema = tree.this
            columns: list[ColumnDefinition] = []
            pk: list[str] = []
            if isinstance(schema, exp.Schema):
                for item in schema.expressions:
                    if isinstance(item, exp.ColumnDef):
                        col = _column_def(item)
                        columns.append(col)
                        for constraint in item.args.get("constraints") or []:
                            if isinstance(constraint.args.get("kind"), exp.PrimaryKeyColumnConstraint):
                                pk.append(col.name)
                    elif isinstance(item, exp.PrimaryKey):
                        pk.extend(
                            identifier_name(c.this if isinstance(c, exp.Ordered) else c) for c in item.expressions
                        )
                    else:
                        raise _syntax_error(f"unsupported table element: {item.sql(dialect='trino')}")
            as_query = tree.expression
            return CreateTable(
                name=_qualified(schema),
                columns=tuple(columns),
                primary_key=tuple(pk),
                if_not_exists=bool(tree.args.get("exists")),
                properties=_properties(tree),
                as_query=Query(node=as_query) if as_query is not None else None,
            )
        raise _syntax_error(f"CREATE {kind} is not supported")
    if isinstance(tree, exp.Drop):
        if str(tree.args.get("kind") or "").upper() != "TABLE":
            raise _syntax_error(f"DROP {tree.args.get('kind')} is not supported")
        tables = tree.args.get("tables") or [tree.this]
        if len(tables) != 1:
            raise _syntax_error("DROP TABLE takes one table")
        return DropTable(name=_qualified(tables[0]), if_exists=bool(tree.args.get("exists")))
    if isinstance(tree, exp.TruncateTable):
        return Truncate(name=_qualified(tree.expressions[0]))
    if isinstance(tree, exp.Describe):
        return Describe(name=_qualified(tree.this))
    if isinstance(tree, exp.Alter):
        actions = tree.args.get("actions") or []
        if len(actions) == 1 and isinstance(actions[0], exp.ColumnDef):
            return AlterTableAddColumn(name=_qualified(tree.this), column=_column_def(actions[0]))
        raise _syntax_error("only ALTER TABLE ... ADD COLUMN is supported")
    if isinstance(tree, exp.Command):
        word = str(tree.this).upper()
        raise _syntax_error(f"mismatched input '{word}'. Unsupported statement", 1, 1)
    first = text.split(None, 1)[0] if text.split() else ""
    raise _syntax_error(f"mismatched input '{first}'. Expected a statement", 1, 1)
