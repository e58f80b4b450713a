"""Reading a syntax node part by part (the rule of :mod:`._convert`): :class:`Parts` takes the arguments a
converter implements and refuses, by name, every other non-empty one; names, literals and queries shared by the
statement converters (:mod:`._convert_dml`, :mod:`._convert_ddl`); ``split_top_level`` for the statements read as
text before sqlglot (views, streams)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.model import (
    Expression,
    QualifiedName,
)
from mergekit.sql.references import identifier_name, qualified_name_of

__all__ = ["Parts", "syntax_error", "not_supported", "split_top_level", "literal_value", "table_name", "node_name"]


def syntax_error(message: str, line: int = 0, column: int = 0) -> MergekitError:
    where = f"line {line}:{column}: " if line else ""
    return MergekitError(ErrorCode.SYNTAX_ERROR, f"{where}{message}", line=line, column=column)


def not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, brackets and quotes (a list of column definitions,
    options or names, read before sqlglot sees the statement)."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


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


def empty_clause(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, (list, str)) and not value)


def node_name(node: exp.Expression) -> str:
    """How a user would name this syntax node in an error message."""
    for cls in type(node).__mro__:
        if cls in _NODE_NAMES:
            return _NODE_NAMES[cls]
    return text_of(node)


def text_of(value: Any) -> str:
    if isinstance(value, exp.Expression):
        try:
            return value.sql(dialect="trino")
        except Exception:  # a node the generator cannot print still has a name
            return type(value).__name__
    if isinstance(value, list):
        return ", ".join(text_of(v) for v in value)
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
        return list(value) if isinstance(value, list) else ([] if empty_clause(value) else [value])

    def refuse(self, name: str, what: str | None = None, hint: str = "") -> None:
        """Refuse ``name`` now if it is present (with a better name than ``done`` would give)."""
        value = self.node.args.get(name)
        if not empty_clause(value):
            raise not_supported(f"{what or _arg_name(name, value)} in {self.where} is not supported{hint}")
        self._taken.add(name)

    def done(self) -> None:
        for name, value in self.node.args.items():
            if name not in self._taken and not empty_clause(value):
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
        raise syntax_error(f"expected a table name in {where}, got {text_of(table)}")
    parts = Parts(table, where)
    for name in ("this", "db", "catalog"):
        part = parts.take(name)
        if part is not None and not isinstance(part, exp.Identifier):
            raise syntax_error(f"expected a table name in {where}, got {text_of(table)}")
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
    return qualified_name_of(table.parts), alias_name


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
    raise syntax_error(f"expected a literal value, got {text_of(node)}")


def where_clause(parts: Parts) -> Expression | None:
    where = parts.take("where")
    if where is None:
        return None
    inner = Parts(where, parts.where)
    inner.take("this")
    inner.done()
    return Expression(where.this)


def _set_column(node: exp.Expression, where: str) -> str:
    if not isinstance(node, exp.Column):
        raise syntax_error(f"expected a column name in SET, got {text_of(node)}")
    column = Parts(node, where)
    column.take("this")
    if column.take("table") is not None or column.take("db") is not None or column.take("catalog") is not None:
        raise syntax_error(f"qualified column names are not allowed in SET: {text_of(node)}")
    column.done()
    return identifier_name(node.this)


def _assignments(eq: exp.Expression, where: str) -> list[tuple[str, Expression]]:
    """``c = value``, or ISO's multiple-column assignment ``(a, b) = (x, y)`` (one pair per column)."""
    if not isinstance(eq, exp.EQ):
        raise syntax_error(f"expected column = value in SET, got {text_of(eq)}")
    if isinstance(eq.this, exp.Paren):  # (c) = ROW(value): a list of one column
        columns = [_set_column(eq.this.this, where)]
    elif isinstance(eq.this, exp.Tuple):
        columns = [_set_column(c, where) for c in eq.this.expressions]
    else:
        return [(_set_column(eq.this, where), Expression(eq.expression))]
    value = eq.expression
    if isinstance(value, (exp.Subquery, exp.Select)):
        raise not_supported(f"a subquery as the value of a multiple-column assignment in {where} is not supported")
    if isinstance(value, exp.Struct) and not any(isinstance(v, (exp.PropertyEQ, exp.Alias)) for v in value.expressions):
        values = list(value.expressions)  # ROW(x, y)
    elif isinstance(value, exp.Tuple):
        values = list(value.expressions)
    else:
        raise syntax_error(
            f"source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression: {text_of(value)}"
        )
    if len(values) != len(columns):
        raise syntax_error(
            f"number of columns does not match number of values: ({', '.join(columns)}) = "
            f"{len(values)} value{'s' if len(values) != 1 else ''}"
        )
    return [(c, Expression(v)) for c, v in zip(columns, values, strict=True)]


def set_list(expressions: list[exp.Expression], where: str) -> tuple[tuple[str, Expression], ...]:
    return tuple(pair for e in expressions for pair in _assignments(e, where))


def checked_query(query: exp.Expression) -> exp.Expression:
    """A query kept whole; a SELECT without a select list (``INSERT INTO t SELECT``) is a syntax error here
    rather than in the Spark SQL it would be rendered to."""
    for select in query.find_all(exp.Select):
        if not select.expressions:
            raise syntax_error("SELECT needs a select list")
    return query


def with_query(with_: exp.With | None, query: exp.Expression, where: str) -> exp.Expression:
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
