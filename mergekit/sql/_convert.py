"""Parsed tree -> statement model, accounting for every part of every syntax node.

The one rule of this module: a statement runs entirely as written, or fails with a coded error. sqlglot's
parser accepts far more than mergekit implements (``DELETE ... LIMIT``, ``RETURNING``, ``ON CONFLICT``,
``CHECK``, ``LOCATION``, ...) and keeps each such part in an argument of a syntax node. Every converter below
reads a node through :class:`Parts`: it *takes* the arguments it turns into the model, and :meth:`Parts.done`
refuses, by name, any non-empty argument that was not taken. An argument that sqlglot adds in a later version is
therefore refused until a converter takes it, never dropped (tests/sql/test_no_dropped_clause.py proves it for
every argument of every node class converted here).

Expressions and queries (WHERE, SET values, a MERGE source, an INSERT's query) are kept whole as trees: the
renderer generates every argument of them, so nothing inside them can be dropped here.
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError

from ._dialect import DIALECT
from ._model import (
    AlterTableAddColumn,
    ColumnDefinition,
    CreateSchema,
    CreateTable,
    Delete,
    Describe,
    DescribeHistory,
    DropTable,
    Expression,
    Insert,
    Merge,
    MergeAction,
    MergeCase,
    MergeCaseKind,
    QualifiedName,
    Query,
    Relation,
    Statement,
    Truncate,
    Update,
)
from ._render import identifier_name, table_ref_of

__all__ = ["convert", "Parts", "literal_value", "syntax_error", "not_supported"]


def syntax_error(message: str, line: int = 0, column: int = 0) -> MergekitError:
    where = f"line {line}:{column}: " if line else ""
    return MergekitError(ErrorCode.SYNTAX_ERROR, f"{where}{message}", line=line, column=column)


def not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


# How an argument is named in a refusal, where its SQL text would not say it well.
_CLAUSE_NAMES = {
    "limit": "LIMIT",
    "order": "ORDER BY",
    "returning": "RETURNING",
    "conflict": "ON CONFLICT",
    "overwrite": "OVERWRITE",
    "ignore": "IGNORE",
    "with_": "WITH",
    "from_": "FROM",
    "using": "USING",
    "hint": "a hint",
    "hints": "a hint",
    "alias": "an alias",
    "cluster": "ON CLUSTER",
    "partition": "PARTITION",
    "by_name": "BY NAME",
    "replace": "OR REPLACE",
    "alternative": "OR REPLACE/IGNORE",
    "cascade": "CASCADE",
    "restrict": "RESTRICT",
    "purge": "PURGE",
    "temporary": "TEMPORARY",
    "exists": "IF [NOT] EXISTS",
    "version": "FOR VERSION/TIMESTAMP AS OF",
    "sample": "TABLESAMPLE",
    "joins": "a join",
    "default": "DEFAULT VALUES",
    "position": "FIRST/AFTER",
    "only": "ONLY",
    "identity": "RESTART/CONTINUE IDENTITY",
    "option": "CASCADE/RESTRICT",
    "using_cond": "USING (columns)",
    "options": "options",
    "where": "WHERE",
}

# sqlglot's constraint and property classes, as users write them
_NODE_NAMES = {
    exp.CheckColumnConstraint: "CHECK constraint",
    exp.DefaultColumnConstraint: "DEFAULT",
    exp.UniqueColumnConstraint: "UNIQUE constraint",
    exp.Reference: "REFERENCES",
    exp.ForeignKey: "FOREIGN KEY",
    exp.GeneratedAsIdentityColumnConstraint: "GENERATED column",
    exp.GeneratedAsRowColumnConstraint: "GENERATED column",
    exp.ComputedColumnConstraint: "computed column",
    exp.AutoIncrementColumnConstraint: "AUTO_INCREMENT",
    exp.CollateColumnConstraint: "COLLATE",
    exp.FileFormatProperty: "USING (a file format)",
    exp.PartitionedByProperty: "PARTITIONED BY",
    exp.LocationProperty: "LOCATION",
    exp.SchemaCommentProperty: "COMMENT",
    exp.TemporaryProperty: "TEMPORARY",
    exp.LikeProperty: "LIKE",
    exp.Constraint: "a named constraint",
}


def _empty(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, (list, str)) and not value)


def node_name(node: exp.Expression) -> str:
    """How a user would name this syntax node in an error message."""
    for cls in type(node).__mro__:
        if cls in _NODE_NAMES:
            return _NODE_NAMES[cls]
    return _text(node)


def _text(value: Any) -> str:
    if isinstance(value, exp.Expression):
        try:
            return value.sql(dialect="trino")
        except Exception:  # a node the generator cannot print still has a name
            return type(value).__name__
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)


class Parts:
    """The arguments of one syntax node, read by a converter. ``take`` marks one as consumed; ``done`` refuses
    with ``NOT_SUPPORTED`` any non-empty argument no converter took, naming it and the statement it is in."""

    __slots__ = ("node", "where", "_taken")

    def __init__(self, node: exp.Expression, where: str) -> None:
        self.node = node
        self.where = where
        self._taken: set[str] = set()

    def take(self, name: str) -> Any:
        self._taken.add(name)
        return self.node.args.get(name)

    def take_list(self, name: str) -> list[Any]:
        value = self.take(name)
        return list(value) if isinstance(value, list) else ([] if _empty(value) else [value])

    def refuse(self, name: str, what: str | None = None, hint: str = "") -> None:
        """Refuse ``name`` now if it is present (with a better name than ``done`` would give)."""
        value = self.node.args.get(name)
        if not _empty(value):
            raise not_supported(f"{what or _arg_name(name, value)} in {self.where} is not supported{hint}")
        self._taken.add(name)

    def done(self) -> None:
        for name, value in self.node.args.items():
            if name not in self._taken and not _empty(value):
                raise not_supported(f"{_arg_name(name, value)} in {self.where} is not supported")


def _arg_name(name: str, value: Any) -> str:
    if name in _CLAUSE_NAMES:
        return _CLAUSE_NAMES[name]
    if isinstance(value, exp.Expression):
        return f"'{node_name(value)}'"
    return name.rstrip("_").upper().replace("_", " ")


# ---- names and literals ----------------------------------------------------------------------------------


def table_name(table: exp.Expression, where: str, *, alias: bool = False) -> tuple[QualifiedName, str | None]:
    """The dotted name of a table that a statement writes or defines, and its alias when ``alias`` allows one.
    Time travel, samples, hints and the like on such a table are refused."""
    if not isinstance(table, exp.Table):
        raise syntax_error(f"expected a table name in {where}, got {_text(table)}")
    parts = Parts(table, where)
    for name in ("this", "db", "catalog"):
        part = parts.take(name)
        if part is not None and not isinstance(part, exp.Identifier):
            raise syntax_error(f"expected a table name in {where}, got {_text(table)}")
    alias_name = None
    if alias:
        alias_node = parts.take("alias")
        if alias_node is not None:
            alias_parts = Parts(alias_node, where)
            alias_parts.refuse("columns", "column aliases on the target table")
            alias_parts.take("this")
            alias_parts.done()
            alias_name = identifier_name(alias_node.this)
    parts.done()
    return QualifiedName(tuple(identifier_name(p) for p in table.parts)), alias_name


def literal_value(node: exp.Expression) -> Any:
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
        return -literal_value(node.this)
    if isinstance(node, exp.Array):
        return [literal_value(e) for e in node.expressions]
    if isinstance(node, (exp.Tuple, exp.Paren)):
        inner = node.expressions if isinstance(node, exp.Tuple) else [node.this]
        return [literal_value(e) for e in inner]
    if isinstance(node, (exp.Column, exp.Identifier, exp.Var)):
        return node.name
    raise syntax_error(f"expected a literal value, got {_text(node)}")


def _where(parts: Parts) -> Expression | None:
    where = parts.take("where")
    if where is None:
        return None
    inner = Parts(where, parts.where)
    inner.take("this")
    inner.done()
    return Expression(where.this)


def _assignment(eq: exp.Expression, where: str) -> tuple[str, Expression]:
    if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
        raise syntax_error(f"expected column = value in SET, got {_text(eq)}")
    column = Parts(eq.this, where)
    column.take("this")
    if column.take("table") is not None or column.take("db") is not None or column.take("catalog") is not None:
        raise syntax_error(f"qualified column names are not allowed in SET: {_text(eq.this)}")
    column.done()
    return identifier_name(eq.this.this), Expression(eq.expression)


# ---- statements ------------------------------------------------------------------------------------------


def convert(tree: exp.Expression, text: str) -> Statement:
    """The statement model of one parsed statement; refuses whatever part of it mergekit does not implement."""
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)):
        return Query(node=_checked_query(tree))
    converter = _CONVERTERS.get(type(tree))
    if converter is not None:
        return converter(tree)
    if isinstance(tree, exp.Command):
        word = str(tree.this).upper()
        raise syntax_error(f"mismatched input '{word}'. Unsupported statement", 1, 1)
    first = text.split(None, 1)[0] if text.split() else ""
    raise syntax_error(f"mismatched input '{first}'. Expected a statement", 1, 1)


def _checked_query(query: exp.Expression) -> exp.Expression:
    """A query kept whole; a SELECT without a select list (``INSERT INTO t SELECT``) is a syntax error here
    rather than in the Spark SQL it would be rendered to."""
    for select in query.find_all(exp.Select):
        if not select.expressions:
            raise syntax_error("SELECT needs a select list")
    return query


def _with_query(with_: exp.With | None, query: exp.Expression, where: str) -> exp.Expression:
    """``WITH ... <statement>``: the common table expressions become the WITH of the statement's query."""
    if with_ is None:
        return query
    parts = Parts(with_, where)
    parts.take("expressions")
    parts.refuse("recursive", "WITH RECURSIVE")
    parts.done()
    if not isinstance(query, exp.Query):
        raise not_supported(f"WITH in {where} applies only to a query source")
    if query.args.get("with_") is not None:
        raise not_supported(f"WITH in {where} together with a WITH inside its query is not supported")
    query = query.copy()
    query.set("with_", with_.copy())
    return query


def _insert(tree: exp.Insert) -> Insert:
    parts = Parts(tree, "INSERT")
    parts.refuse("overwrite", "OVERWRITE")
    parts.refuse("conflict", "ON CONFLICT")
    parts.refuse("returning", "RETURNING")
    parts.refuse("default", "DEFAULT VALUES")
    target = parts.take("this")
    columns = None
    if isinstance(target, exp.Schema):
        schema = Parts(target, "INSERT")
        target = schema.take("this")
        columns = tuple(identifier_name(c) for c in schema.take_list("expressions"))
        schema.done()
    name, _ = table_name(target, "INSERT")
    source = parts.take("expression")
    if not isinstance(source, exp.Expression):
        raise syntax_error("INSERT needs VALUES or a query")
    source = _checked_query(_with_query(parts.take("with_"), source, "INSERT"))
    parts.done()
    return Insert(target=name, columns=columns, source=Query(node=source))


def _update(tree: exp.Update) -> Update:
    parts = Parts(tree, "UPDATE")
    parts.refuse("from_", "FROM", " (use MERGE)")
    parts.refuse("limit", "LIMIT")
    parts.refuse("order", "ORDER BY")
    parts.refuse("returning", "RETURNING")
    name, alias = table_name(parts.take("this"), "UPDATE", alias=True)
    assignments = tuple(_assignment(e, "UPDATE") for e in parts.take_list("expressions"))
    if not assignments:
        raise syntax_error("UPDATE needs SET")
    where = _where(parts)
    parts.done()
    return Update(target=name, target_alias=alias, assignments=assignments, where=where)


def _delete(tree: exp.Delete) -> Delete:
    parts = Parts(tree, "DELETE")
    target = parts.take("this")
    if _empty(target) and tree.args.get("tables"):
        wrote = _text(tree.args["tables"][0])
        raise syntax_error(f"mismatched input '{wrote}'. Expecting: 'FROM' (write DELETE FROM {wrote})", 1, 8)
    parts.refuse("using", "USING", " (use MERGE)")
    parts.refuse("limit", "LIMIT")
    parts.refuse("order", "ORDER BY")
    parts.refuse("returning", "RETURNING")
    name, alias = table_name(target, "DELETE", alias=True)
    where = _where(parts)
    parts.done()
    return Delete(target=name, target_alias=alias, where=where)


def _relation(node: exp.Expression, where: str) -> Relation:
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
    raise not_supported(f"{_text(node)} as the source of {where} is not supported")


def _merge_source(tree: exp.Merge, parts: Parts) -> Relation:
    """The USING relation, with a ``WITH`` before MERGE folded into it (its CTEs are visible to the source)."""
    source = parts.take("using")
    with_ = parts.take("with_")
    if with_ is None:
        return _relation(source, "MERGE")
    names = {identifier_name(cte.args["alias"].this) for cte in with_.expressions}
    for node in (tree.args.get("on"), tree.args.get("whens")):
        for table in node.find_all(exp.Table) if node is not None else ():
            if not table.args.get("db") and identifier_name(table.this) in names:
                raise not_supported(
                    f"the WITH query '{identifier_name(table.this)}' is used outside the MERGE source; "
                    "only the USING source can read it"
                )
    if isinstance(source, exp.Table) and not source.args.get("db") and identifier_name(source.this) in names:
        alias_node = source.args.get("alias")
        alias = identifier_name(alias_node.this) if alias_node is not None else identifier_name(source.this)
        select = exp.select("*").from_(exp.Table(this=source.this.copy()))
        sub = exp.Subquery(
            this=_with_query(with_, select, "MERGE"), alias=exp.TableAlias(this=exp.to_identifier(alias))
        )
        if isinstance(alias_node, exp.TableAlias) and alias_node.columns:
            sub.args["alias"].set("columns", [c.copy() for c in alias_node.columns])
    elif isinstance(source, exp.Subquery):
        sub = source.copy()
        sub.set("this", _with_query(with_, sub.this, "MERGE"))
    else:
        raise not_supported(
            f"WITH queries ({', '.join(sorted(names))}) before MERGE must be read by the USING source; "
            f"it reads {_text(source)}"
        )
    return _relation(sub, "MERGE")


def _when(when: exp.When) -> MergeCase:
    parts = Parts(when, "MERGE")
    matched = bool(parts.take("matched"))
    by_source = bool(parts.take("source"))
    if matched and by_source:
        raise syntax_error("WHEN MATCHED cannot be BY SOURCE")
    kind = (
        MergeCaseKind.MATCHED
        if matched
        else (MergeCaseKind.NOT_MATCHED_BY_SOURCE if by_source else MergeCaseKind.NOT_MATCHED)
    )
    cond = parts.take("condition")
    condition = Expression(cond) if cond is not None else None
    then = parts.take("then")
    parts.done()
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        if kind is MergeCaseKind.NOT_MATCHED:
            raise syntax_error("WHEN NOT MATCHED supports only INSERT")
        return MergeCase(kind=kind, action=MergeAction.DELETE, condition=condition)
    if isinstance(then, exp.Var):
        raise not_supported(f"{then.name.upper()} in a MERGE WHEN clause is not supported")
    if isinstance(then, exp.Update):
        if kind is MergeCaseKind.NOT_MATCHED:
            raise syntax_error("WHEN NOT MATCHED supports only INSERT")
        update = Parts(then, "MERGE")
        expressions = update.take_list("expressions")
        update.done()
        if any(isinstance(e, exp.Star) for e in expressions):
            raise not_supported("UPDATE SET * in MERGE is not supported")
        assignments = tuple(_assignment(e, "MERGE") for e in expressions)
        return MergeCase(kind=kind, action=MergeAction.UPDATE, condition=condition, assignments=assignments)
    if isinstance(then, exp.Insert):
        if kind is not MergeCaseKind.NOT_MATCHED:
            raise syntax_error(f"{kind.value} supports only UPDATE and DELETE")
        insert = Parts(then, "MERGE")
        cols_node = insert.take("this")
        values_node = insert.take("expression")
        insert.done()
        if isinstance(cols_node, exp.Star):
            raise not_supported("INSERT * in MERGE is not supported")
        if not isinstance(values_node, exp.Expression):
            raise syntax_error("WHEN NOT MATCHED THEN INSERT needs VALUES (...)")
        columns = None
        if cols_node is not None:
            cols = Parts(cols_node, "MERGE")
            columns = tuple(
                identifier_name(c.this if isinstance(c, exp.Column) else c) for c in cols.take_list("expressions")
            )
            cols.done()
        values = values_node.expressions if isinstance(values_node, exp.Tuple) else [values_node]
        return MergeCase(
            kind=kind,
            action=MergeAction.INSERT,
            condition=condition,
            insert_columns=columns,
            insert_values=tuple(Expression(v) for v in values),
        )
    raise syntax_error(f"unsupported MERGE action: {_text(then)}")


def _merge(tree: exp.Merge) -> Merge:
    parts = Parts(tree, "MERGE")
    parts.refuse("returning", "RETURNING")
    target, target_alias = table_name(parts.take("this"), "MERGE", alias=True)
    source = _merge_source(tree, parts)
    on = parts.take("on")
    whens = parts.take("whens")
    cases: list[MergeCase] = []
    if whens is not None:
        when_parts = Parts(whens, "MERGE")
        cases = [_when(w) for w in when_parts.take_list("expressions")]
        when_parts.done()
    parts.done()
    if not cases:
        raise syntax_error("MERGE needs at least one WHEN clause")
    if on is None:
        raise syntax_error("MERGE needs an ON condition")
    return Merge(target=target, target_alias=target_alias, source=source, on=Expression(on), cases=tuple(cases))


def _type_text(kind: exp.DataType) -> str:
    return re.sub(r"\s+", " ", kind.sql(dialect="trino").lower())


def column_definition(col: exp.ColumnDef, where: str, *, if_not_exists: bool = False) -> tuple[ColumnDefinition, bool]:
    """A column definition and whether it declares itself the primary key (``if_not_exists``: ADD COLUMN's
    ``IF NOT EXISTS`` may stand on it)."""
    parts = Parts(col, where)
    if if_not_exists:
        parts.take("exists")
    nullable = True
    comment = None
    primary_key = False
    for constraint in parts.take_list("constraints"):
        holder = Parts(constraint, where)
        kind = holder.take("kind")
        if holder.take("this") is not None:  # CONSTRAINT name ...
            raise not_supported(f"a named column constraint ({_text(constraint)}) in {where} is not supported")
        holder.done()
        inner = Parts(kind, where)
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(inner.take("allow_null"))
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = literal_value(inner.take("this"))
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            inner.refuse("desc", "DESC on a primary key")
            primary_key = True
        else:
            raise not_supported(f"{node_name(kind)} in {where} is not supported: {_text(constraint)}")
        inner.done()
    type_node = parts.take("kind")
    name = identifier_name(parts.take("this"))
    parts.refuse("position", "FIRST/AFTER")
    parts.done()
    if type_node is None:
        raise syntax_error(f"column {name} has no type")
    return ColumnDefinition(name=name, type_text=_type_text(type_node), nullable=nullable, comment=comment), primary_key


def _with_properties(properties: exp.Properties | None, where: str) -> tuple[dict[str, Any], bool]:
    """``WITH (name = value, ...)`` as a dict, and whether ``WITH NO DATA`` was given. Properties written any
    other way (Hive's ``USING``, ``PARTITIONED BY``, ``LOCATION``, ``COMMENT``, ...) are refused by name."""
    props: dict[str, Any] = {}
    with_data = True
    if properties is None:
        return props, with_data
    parts = Parts(properties, where)
    for prop in parts.take_list("expressions"):
        if isinstance(prop, exp.WithDataProperty):
            data = Parts(prop, where)
            with_data = not data.take("no")
            data.refuse("statistics", "WITH DATA AND STATISTICS")
            data.done()
            continue
        if not prop.meta.get("with_clause"):
            raise not_supported(
                f"{node_name(prop)} in {where} is not supported (table properties are written WITH (name = value))"
            )
        if type(prop) is exp.Property:
            key, value = identifier_name(prop.this), prop.args["value"]
        else:
            # sqlglot turns known keys (partitioned_by, format, location, ...) into typed properties: read them back
            key_text, sep, value_text = _text(prop).partition("=")
            if not sep:
                raise not_supported(f"table property {_text(prop)} in {where} is not supported")
            key, value = key_text.strip().strip('"').lower(), sqlglot.parse_one(value_text, read=DIALECT)
        if key in props:
            raise MergekitError(ErrorCode.INVALID_TABLE_PROPERTY, f"Duplicate property: {key}")
        props[key] = literal_value(value)
    parts.done()
    return props, with_data


def _create(tree: exp.Create) -> Statement:
    kind = str(tree.args.get("kind") or "").upper()
    where = f"CREATE {kind}"
    parts = Parts(tree, where)
    parts.take("kind")
    parts.refuse("replace", "OR REPLACE")
    if kind == "SCHEMA":
        name, _ = table_name(parts.take("this"), where)
        props, _ = _with_properties(parts.take("properties"), where)
        if props:
            raise not_supported(f"schema properties ({', '.join(props)}) in CREATE SCHEMA are not supported")
        exists = bool(parts.take("exists"))
        parts.done()
        # sqlglot reads `CREATE SCHEMA a.b` as db=b, catalog=a
        return CreateSchema(name=name, if_not_exists=exists)
    if kind != "TABLE":
        raise not_supported(f"CREATE {kind or tree.args.get('kind')} is not supported")
    schema = parts.take("this")
    columns: list[ColumnDefinition] = []
    pk: list[str] = []
    if isinstance(schema, exp.Schema):
        body = Parts(schema, where)
        target = body.take("this")
        for item in body.take_list("expressions"):
            if isinstance(item, exp.ColumnDef):
                col, is_key = column_definition(item, where)
                columns.append(col)
                if is_key:
                    pk.append(col.name)
            elif isinstance(item, exp.PrimaryKey):
                key = Parts(item, where)
                include = key.take("include")  # sqlglot puts an empty IndexParameters on every PRIMARY KEY
                if include is not None and not all(_empty(v) for v in include.args.values()):
                    raise not_supported(f"index parameters ({_text(include)}) in {where} are not supported")
                for c in key.take_list("expressions"):
                    if isinstance(c, exp.Ordered) and c.args.get("desc"):
                        raise not_supported(f"DESC on a primary key in {where} is not supported")
                    pk.append(identifier_name(c.this if isinstance(c, exp.Ordered) else c))
                key.done()
            elif isinstance(item, exp.Identifier):
                raise syntax_error(f"column {identifier_name(item)} has no type")
            else:
                raise not_supported(f"{node_name(item)} in {where} is not supported: {_text(item)}")
        body.done()
    else:
        target = schema
    name, _ = table_name(target, where)
    props, with_data = _with_properties(parts.take("properties"), where)
    as_query = parts.take("expression")
    if as_query is not None:
        as_query = _with_query(parts.take("with_"), as_query, where)
        if columns or pk:
            raise not_supported("a column list together with AS query in CREATE TABLE is not supported")
    exists = bool(parts.take("exists"))
    parts.done()
    if not with_data and as_query is None:
        raise syntax_error("WITH NO DATA needs AS query")
    return CreateTable(
        name=name,
        columns=tuple(columns),
        primary_key=tuple(pk),
        if_not_exists=exists,
        properties=props,
        as_query=Query(node=as_query) if as_query is not None else None,
        with_data=with_data,
    )


def _drop(tree: exp.Drop) -> DropTable:
    kind = str(tree.args.get("kind") or "").upper()
    if kind != "TABLE":
        raise not_supported(f"DROP {kind} is not supported")
    parts = Parts(tree, "DROP TABLE")
    parts.take("kind")
    tables = parts.take_list("tables") or parts.take_list("this")
    if len(tables) != 1:
        raise not_supported("DROP TABLE of several tables in one statement is not supported")
    name, _ = table_name(tables[0], "DROP TABLE")
    exists = bool(parts.take("exists"))
    parts.done()
    return DropTable(name=name, if_exists=exists)


def _truncate(tree: exp.TruncateTable) -> Truncate:
    parts = Parts(tree, "TRUNCATE")
    tables = parts.take_list("expressions")
    if len(tables) != 1:
        raise not_supported("TRUNCATE of several tables in one statement is not supported")
    name, _ = table_name(tables[0], "TRUNCATE")
    parts.done()
    return Truncate(name=name)


def _describe(tree: exp.Describe) -> Statement:
    parts = Parts(tree, "DESCRIBE")
    style = str(parts.take("style") or "").upper()
    name, _ = table_name(parts.take("this"), "DESCRIBE")
    parts.done()
    if style == "HISTORY":
        return DescribeHistory(name=name)
    if style:
        raise not_supported(f"DESCRIBE {style} is not supported")
    return Describe(name=name)


def _alter(tree: exp.Alter) -> Statement:
    parts = Parts(tree, "ALTER TABLE")
    if str(parts.take("kind") or "").upper() != "TABLE":
        raise not_supported(f"ALTER {tree.args.get('kind')} is not supported")
    parts.refuse("exists", "IF EXISTS")
    name, _ = table_name(parts.take("this"), "ALTER TABLE")
    actions = parts.take_list("actions")
    parts.done()
    if len(actions) == 1 and isinstance(actions[0], exp.ColumnDef):
        column, is_key = column_definition(actions[0], "ALTER TABLE ... ADD COLUMN", if_not_exists=True)
        if is_key:
            raise not_supported("PRIMARY KEY in ALTER TABLE ... ADD COLUMN is not supported")
        return AlterTableAddColumn(name=name, column=column, if_not_exists=bool(actions[0].args.get("exists")))
    what = " ".join(_text(a) for a in actions)
    raise not_supported(f"ALTER TABLE {what}: only ADD COLUMN and DROP COLUMN are supported")


_CONVERTERS: dict[type, Any] = {
    exp.Merge: _merge,
    exp.Insert: _insert,
    exp.Update: _update,
    exp.Delete: _delete,
    exp.Create: _create,
    exp.Drop: _drop,
    exp.TruncateTable: _truncate,
    exp.Describe: _describe,
    exp.Alter: _alter,
}

CONVERTED_CLASSES: tuple[type, ...] = tuple(_CONVERTERS)
"""The statement node classes this module converts (the test of the rule walks their arguments)."""
