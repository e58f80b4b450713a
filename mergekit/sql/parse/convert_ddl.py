"""CREATE, DROP, ALTER, TRUNCATE, DESCRIBE and SET SESSION syntax nodes -> the statement model (through
:class:`~._parts.Parts`: every argument taken or refused by name)."""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.model import (
    AlterTableAddColumn,
    AlterTableAddConstraint,
    AlterTableDropConstraint,
    AlterTableRenameColumn,
    AlterTableSetColumnType,
    AlterTableSetDefault,
    CheckDefinition,
    ColumnDefinition,
    CreateSchema,
    CreateTable,
    Describe,
    DescribeHistory,
    DropTable,
    Expression,
    QualifiedName,
    Query,
    SetSession,
    Statement,
    Truncate,
)
from mergekit.sql.references import identifier_name

from .defaults import check_check_expression, check_default_expression
from .dialect import DIALECT
from .parts import (
    Parts,
    empty_clause,
    literal_value,
    node_name,
    not_supported,
    syntax_error,
    table_name,
    text_of,
    with_query,
)
from .syntax_hints import auto_increment_message

__all__ = ["column_definition", "table_check"]


def _type_text(kind: exp.DataType) -> str:
    return re.sub(r"\s+", " ", kind.sql(dialect="trino").lower())


def _auto_increment(kind: exp.Expression) -> bool:
    """AUTO_INCREMENT, IDENTITY, GENERATED ... AS IDENTITY (not a computed column: GENERATED ALWAYS AS (expr))."""
    identity = isinstance(kind, exp.GeneratedAsIdentityColumnConstraint) and kind.args.get("expression") is None
    return identity or isinstance(kind, exp.AutoIncrementColumnConstraint)


def column_definition(col: exp.ColumnDef, where: str, *, if_not_exists: bool = False) -> tuple[ColumnDefinition, bool]:
    """A column definition and whether it declares itself the primary key (``if_not_exists``: ADD COLUMN's
    ``IF NOT EXISTS`` may stand on it)."""
    parts = Parts(col, where)
    if if_not_exists:
        parts.take("exists")
    nullable = True
    comment = None
    primary_key = False
    default = None
    checks: list[tuple[str | None, Expression]] = []
    name = identifier_name(col.this)
    for constraint in parts.take_list("constraints"):
        holder = Parts(constraint, where)
        kind = holder.take("kind")
        constraint_name = holder.take("this")
        if constraint_name is not None and not isinstance(kind, exp.CheckColumnConstraint):  # CONSTRAINT name ...
            raise not_supported(f"a named column constraint ({text_of(constraint)}) in {where} is not supported")
        holder.done()
        inner = Parts(kind, where)
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(inner.take("allow_null"))
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = literal_value(inner.take("this"))
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            inner.refuse("desc", "DESC on a primary key")
            primary_key = True
        elif isinstance(kind, exp.CheckColumnConstraint):
            checks.append((identifier_name(constraint_name) if constraint_name else None, _check(inner)))
        elif isinstance(kind, exp.DefaultColumnConstraint):
            if default is not None:
                raise syntax_error(f"multiple default values specified for column {name}")
            default = _default(inner.take("this"), name)
        elif _auto_increment(kind):
            identity = isinstance(kind, exp.GeneratedAsIdentityColumnConstraint)
            written = kind.meta.get("written") or ("GENERATED AS IDENTITY" if identity else "AUTO_INCREMENT")
            raise not_supported(auto_increment_message(written, name))
        else:
            raise not_supported(f"{node_name(kind)} in {where} is not supported: {text_of(constraint)}")
        inner.done()
    type_node = parts.take("kind")
    parts.take("this")
    parts.refuse("position", "FIRST/AFTER")
    parts.done()
    if type_node is None:
        raise syntax_error(f"column {name} has no type")
    column = ColumnDefinition(
        name=name,
        type_text=_type_text(type_node),
        nullable=nullable,
        comment=comment,
        default=default,
        checks=tuple(CheckDefinition(name=n, expression=e, column=name) for n, e in checks),
    )
    return column, primary_key


def _check(parts: Parts) -> Expression:
    """The expression of a ``CHECK (...)`` node (``ENFORCED``, the only way mergekit has, may be written)."""
    parts.take("enforced")
    node = parts.take("this")
    check_check_expression(node)
    return Expression(node)


def _default(node: exp.Expression, column: str) -> Expression | None:
    """A column's ``DEFAULT`` expression; ``DEFAULT NULL`` is no default."""
    check_default_expression(node, column)
    return None if isinstance(node, exp.Null) else Expression(node)


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
            key_text, sep, value_text = text_of(prop).partition("=")
            if not sep:
                raise not_supported(f"table property {text_of(prop)} in {where} is not supported")
            key, value = key_text.strip().strip('"').lower(), sqlglot.parse_one(value_text, read=DIALECT)
        if key in props:
            raise MergekitError(ErrorCode.INVALID_TABLE_PROPERTY, f"Duplicate property: {key}")
        props[key] = literal_value(value)
    parts.done()
    return props, with_data


def convert_create(tree: exp.Create) -> Statement:
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
    checks: list[CheckDefinition] = []
    if isinstance(schema, exp.Schema):
        body = Parts(schema, where)
        target = body.take("this")
        for item in body.take_list("expressions"):
            if isinstance(item, exp.ColumnDef):
                col, is_key = column_definition(item, where)
                columns.append(col)
                checks.extend(col.checks)
                if is_key:
                    pk.append(col.name)
            elif isinstance(item, exp.CheckColumnConstraint | exp.Constraint):
                checks.append(table_check(item, where))
            elif isinstance(item, exp.PrimaryKey):
                key = Parts(item, where)
                include = key.take("include")  # sqlglot puts an empty IndexParameters on every PRIMARY KEY
                if include is not None and not all(empty_clause(v) for v in include.args.values()):
                    raise not_supported(f"index parameters ({text_of(include)}) in {where} are not supported")
                for c in key.take_list("expressions"):
                    if isinstance(c, exp.Ordered) and c.args.get("desc"):
                        raise not_supported(f"DESC on a primary key in {where} is not supported")
                    pk.append(identifier_name(c.this if isinstance(c, exp.Ordered) else c))
                key.done()
            elif isinstance(item, exp.Identifier):
                raise syntax_error(f"column {identifier_name(item)} has no type")
            else:
                raise not_supported(f"{node_name(item)} in {where} is not supported: {text_of(item)}")
        body.done()
    else:
        target = schema
    name, _ = table_name(target, where)
    props, with_data = _with_properties(parts.take("properties"), where)
    as_query = parts.take("expression")
    if as_query is not None:
        as_query = with_query(parts.take("with_"), as_query, where)
        if columns or checks:  # a PRIMARY KEY (k, ...) alone may stand there (MySQL's form): the query's key
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
        check_constraints=tuple(checks),
    )


def table_check(item: exp.Expression, where: str) -> CheckDefinition:
    """A table constraint: ``CHECK (expression)`` or ``CONSTRAINT name CHECK (expression)``; any other kind of
    constraint is refused by name."""
    name = None
    if isinstance(item, exp.Constraint):
        holder = Parts(item, where)
        name = identifier_name(holder.take("this"))
        kinds = holder.take_list("expressions")
        holder.done()
        if len(kinds) != 1 or not isinstance(kinds[0], exp.CheckColumnConstraint):
            raise not_supported(
                f"{node_name(kinds[0]) if kinds else text_of(item)} in {where} is not supported: {text_of(item)}"
            )
        item = kinds[0]
    if not isinstance(item, exp.CheckColumnConstraint):
        raise not_supported(f"{node_name(item)} in {where} is not supported: {text_of(item)}")
    inner = Parts(item, where)
    expression = _check(inner)
    inner.done()
    return CheckDefinition(name=name, expression=expression)


def convert_drop(tree: exp.Drop) -> DropTable:
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


def convert_truncate(tree: exp.TruncateTable) -> Truncate:
    parts = Parts(tree, "TRUNCATE")
    tables = parts.take_list("expressions")
    if len(tables) != 1:
        raise not_supported("TRUNCATE of several tables in one statement is not supported")
    name, _ = table_name(tables[0], "TRUNCATE")
    parts.done()
    return Truncate(name=name)


def convert_describe(tree: exp.Describe) -> Statement:
    parts = Parts(tree, "DESCRIBE")
    style = str(parts.take("style") or "").upper()
    name, _ = table_name(parts.take("this"), "DESCRIBE")
    parts.done()
    if style == "HISTORY":
        return DescribeHistory(name=name)
    if style:
        raise not_supported(f"DESCRIBE {style} is not supported")
    return Describe(name=name)


def convert_alter(tree: exp.Alter) -> Statement:
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
        if column.default is not None or column.checks:
            what = "DEFAULT" if column.default is not None else "CHECK constraint"
            raise not_supported(
                f"{what} in ALTER TABLE ... ADD COLUMN is not supported (add the column, then ALTER COLUMN ... SET "
                "DEFAULT or ADD CONSTRAINT ... CHECK)"
            )
        return AlterTableAddColumn(name=name, column=column, if_not_exists=bool(actions[0].args.get("exists")))
    constraint_or_default = _alter_constraint_or_default(name, actions)
    if constraint_or_default is not None:
        return constraint_or_default
    if len(actions) == 1 and isinstance(actions[0], exp.RenameColumn):
        return _rename_column(name, actions[0])
    if len(actions) == 1 and isinstance(actions[0], exp.AlterColumn) and actions[0].args.get("dtype") is not None:
        return _set_column_type(name, actions[0])
    what = " ".join(text_of(a) for a in actions)
    raise not_supported(
        f"ALTER TABLE {what}: only ADD COLUMN, DROP COLUMN, RENAME COLUMN and ALTER COLUMN ... SET DATA TYPE are supported"
    )


def _column_name(node: Any, where: str) -> str:
    """An unqualified column name of ALTER TABLE (a qualified one is a syntax error, as in Trino)."""
    if isinstance(node, exp.Identifier):
        return identifier_name(node)
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        raise syntax_error(f"expected a column name in {where}, got {text_of(node)}")
    column = Parts(node, where)
    column.take("this")
    if any(column.take(part) is not None for part in ("table", "db", "catalog")):
        raise syntax_error(f"expected a column name in {where}, got {text_of(node)}")
    column.done()
    return identifier_name(node.this)


def _rename_column(name: QualifiedName, action: exp.RenameColumn) -> AlterTableRenameColumn:
    """``ALTER TABLE t RENAME COLUMN [IF EXISTS] a TO b``."""
    where = "ALTER TABLE ... RENAME COLUMN"
    parts = Parts(action, where)
    source = _column_name(parts.take("this"), where)
    target = _column_name(parts.take("to"), where)
    if_exists = bool(parts.take("exists"))
    parts.done()
    return AlterTableRenameColumn(name=name, source=source, target=target, if_exists=if_exists)


def _set_column_type(name: QualifiedName, action: exp.AlterColumn) -> AlterTableSetColumnType:
    """``ALTER TABLE t ALTER [COLUMN] c SET DATA TYPE type``; PostgreSQL's ``USING`` and ``COLLATE`` are refused."""
    where = "ALTER TABLE ... SET DATA TYPE"
    parts = Parts(action, where)
    column = _column_name(parts.take("this"), where)
    type_node = parts.take("dtype")
    parts.refuse("using", "USING (a conversion expression)")
    parts.refuse("collate", "COLLATE")
    parts.done()
    return AlterTableSetColumnType(name=name, column=column, type_text=_type_text(type_node))


def _alter_constraint_or_default(name: QualifiedName, actions: list[Any]) -> Statement | None:
    """``ADD CONSTRAINT name CHECK (...)``, ``DROP CONSTRAINT [IF EXISTS] name`` and ``ALTER [COLUMN] c SET
    DEFAULT expr | DROP DEFAULT``; None for any other action (the caller converts or refuses it)."""
    if len(actions) != 1:
        return None
    action = actions[0]
    if isinstance(action, exp.AddConstraint):
        parts = Parts(action, "ALTER TABLE ... ADD CONSTRAINT")
        items = parts.take_list("expressions")
        parts.done()
        if len(items) != 1:
            raise not_supported("ALTER TABLE ... ADD CONSTRAINT with several constraints is not supported")
        return AlterTableAddConstraint(name=name, constraint=table_check(items[0], "ALTER TABLE ... ADD CONSTRAINT"))
    if isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "CONSTRAINT":
        parts = Parts(action, "ALTER TABLE ... DROP CONSTRAINT")
        parts.take("kind")
        tables = parts.take_list("tables")
        if_exists = bool(parts.take("exists"))
        parts.done()
        if len(tables) != 1 or not isinstance(tables[0], exp.Table) or tables[0].args.get("db"):
            raise syntax_error(f"expected one constraint name in DROP CONSTRAINT, got {text_of(tables)}")
        return AlterTableDropConstraint(name=name, constraint=identifier_name(tables[0].this), if_exists=if_exists)
    if isinstance(action, exp.AlterColumn) and (action.args.get("default") is not None or action.args.get("drop")):
        where = "ALTER TABLE ... ALTER COLUMN"
        parts = Parts(action, where)
        column = _column_name(parts.take("this"), where)
        default = parts.take("default")
        drop = bool(parts.take("drop"))
        parts.done()
        if drop and default is not None:
            raise syntax_error("ALTER COLUMN cannot both SET and DROP DEFAULT")
        return AlterTableSetDefault(name=name, column=column, default=None if drop else _default(default, column))
    return None


def convert_set(tree: exp.Set) -> SetSession:
    """``SET SESSION name = value``; every other SET is refused by name."""
    parts = Parts(tree, "SET")
    items = parts.take_list("expressions")
    parts.refuse("unset", "UNSET")
    parts.refuse("tag", "TAG")
    parts.done()
    if len(items) != 1 or not isinstance(items[0], exp.SetItem):
        raise syntax_error("SET SESSION takes one property: SET SESSION name = value")
    item = Parts(items[0], "SET")
    kind = str(item.take("kind") or "").upper()
    assignment = item.take("this")
    item.done()
    if kind != "SESSION":
        raise not_supported(f"SET {kind or text_of(items[0])} is not supported (SET SESSION name = value is)")
    if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
        raise syntax_error("expected SET SESSION name = value")
    value = assignment.expression
    if not isinstance(value, exp.Literal):
        raise syntax_error(f"a session property's value is a literal: {text_of(value)}")
    name = ".".join(identifier_name(p) for p in assignment.this.parts)
    return SetSession(name=name.lower(), value=str(value.this))
