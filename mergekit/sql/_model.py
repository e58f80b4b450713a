"""The immutable statement model the SQL layer hands to the planner and the engine.

Statements are frozen attrs classes. SQL expressions and relations stay opaque to the layers above: an
:class:`Expression` or :class:`Relation` wraps a parsed tree that only this package can look into, and offers
what the planner and execution need (its text, the columns and tables it references, its Spark SQL rendering).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from . import _lower, _render
from ._names import QualifiedName, TableRef

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlglot import exp

    from ._lower import Lowered

__all__ = [
    "QualifiedName",
    "TableRef",
    "Expression",
    "Relation",
    "Statement",
    "Query",
    "Insert",
    "Update",
    "Delete",
    "Merge",
    "MergeCase",
    "MergeCaseKind",
    "MergeAction",
    "ColumnDefinition",
    "CreateTable",
    "CreateSchema",
    "DropTable",
    "Truncate",
    "ShowTables",
    "ShowSchemas",
    "Describe",
    "DescribeHistory",
    "Explain",
    "AlterTableAddColumn",
    "Call",
    "PartitionBy",
    "CreateMergeTable",
    "PartitionClause",
    "AlterTableSetPartition",
    "AlterTableDropPartition",
    "AlterTableDropColumn",
]


class _Tree:
    """Shared behaviour of wrappers around a parsed tree (never exposed as a sqlglot object)."""

    node: exp.Expression

    @property
    def sql(self) -> str:
        """The Trino SQL text of the tree."""
        return self.node.sql(dialect="trino")

    def table_refs(self) -> tuple[TableRef, ...]:
        return _render.table_refs(self.node)

    def to_spark(
        self,
        *,
        tables: Mapping[TableRef, str],
        schema: Mapping[str, Mapping[str, str]] | None = None,
    ) -> str:
        """Spark SQL text with Trino semantics; ``tables`` maps each referenced table to a Spark view name;
        ``schema`` gives column types (Trino type text) per relation name for type-dependent semantics."""
        return _render.render(self.node, tables=tables, schema=schema)

    def __str__(self) -> str:
        return self.sql

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sql!r})"


@attrs.frozen(eq=False, repr=False)
class Expression(_Tree):
    node: exp.Expression

    def column_refs(self) -> frozenset[tuple[str | None, str]]:
        """(qualifier or None, column) for every column referenced outside subqueries."""
        return _render.column_refs(self.node)

    @property
    def is_column(self) -> bool:
        """Whether the expression is a plain (possibly qualified) column reference."""
        from sqlglot import exp as e

        return isinstance(self.node, e.Column) and isinstance(self.node.this, e.Identifier)

    @property
    def is_null_literal(self) -> bool:
        return _render.is_null_literal(self.node)

    def lowered(self) -> Lowered | None:
        """The expression as a neutral tree (``Ref``/``Const``/``Call``) when it lies in the small subset
        that evaluates the same outside Spark (see ``mergekit.sql._lower``), else None."""
        return _lower.lower(self.node)

    @property
    def conjunct_count(self) -> int:
        """How many AND-ed conjuncts the expression has."""
        return _lower.conjunct_count(self.node)


@attrs.frozen(eq=False, repr=False)
class Relation(_Tree):
    """A FROM item: a table, a subquery or VALUES, with its alias and column aliases."""

    node: exp.Expression
    alias: str | None
    column_aliases: tuple[str, ...] = ()
    table: TableRef | None = None  # set when the relation is a plain table reference

    def to_spark_from_item(
        self, *, tables: Mapping[TableRef, str], schema: Mapping[str, Mapping[str, str]] | None = None
    ) -> str:
        """Spark SQL for use after FROM, without the alias (the caller aliases it)."""
        return _render.render_relation(self, tables=tables, schema=schema)


class Statement:
    """Base of every statement."""


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Query(Statement, _Tree):
    node: exp.Expression


@attrs.frozen(kw_only=True)
class Insert(Statement):
    target: QualifiedName
    columns: tuple[str, ...] | None
    source: Query


@attrs.frozen(kw_only=True)
class Update(Statement):
    target: QualifiedName
    assignments: tuple[tuple[str, Expression], ...]
    where: Expression | None
    target_alias: str | None = None  # UPDATE t AS x: WHERE and SET values name the target x


@attrs.frozen(kw_only=True)
class Delete(Statement):
    target: QualifiedName
    where: Expression | None
    target_alias: str | None = None  # DELETE FROM t AS x


class MergeCaseKind(enum.Enum):
    MATCHED = "WHEN MATCHED"
    NOT_MATCHED = "WHEN NOT MATCHED"
    NOT_MATCHED_BY_SOURCE = "WHEN NOT MATCHED BY SOURCE"


class MergeAction(enum.Enum):
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


@attrs.frozen(kw_only=True)
class MergeCase:
    kind: MergeCaseKind
    action: MergeAction
    condition: Expression | None = None
    # UPDATE: SET column = value pairs; INSERT: column list (None = all) and values
    assignments: tuple[tuple[str, Expression], ...] = ()
    insert_columns: tuple[str, ...] | None = None
    insert_values: tuple[Expression, ...] = ()


@attrs.frozen(kw_only=True)
class Merge(Statement):
    target: QualifiedName
    target_alias: str | None
    source: Relation
    on: Expression
    cases: tuple[MergeCase, ...]


@attrs.frozen(kw_only=True)
class ColumnDefinition:
    name: str
    type_text: str
    nullable: bool = True
    comment: str | None = None


@attrs.frozen(kw_only=True)
class CreateTable(Statement):
    name: QualifiedName
    columns: tuple[ColumnDefinition, ...]
    primary_key: tuple[str, ...] = ()
    if_not_exists: bool = False
    properties: Mapping[str, Any] = attrs.field(factory=dict, eq=False)
    as_query: Query | None = None
    with_data: bool = True


@attrs.frozen(kw_only=True)
class CreateSchema(Statement):
    name: QualifiedName
    if_not_exists: bool = False


@attrs.frozen(kw_only=True)
class DropTable(Statement):
    name: QualifiedName
    if_exists: bool = False


@attrs.frozen(kw_only=True)
class Truncate(Statement):
    name: QualifiedName


@attrs.frozen(kw_only=True)
class ShowTables(Statement):
    schema: QualifiedName | None = None
    like: str | None = None  # SHOW TABLES LIKE 'pattern' (SQL LIKE: % and _)
    escape: str | None = None


@attrs.frozen(kw_only=True)
class ShowSchemas(Statement):
    catalog: str | None = None


@attrs.frozen(kw_only=True)
class Describe(Statement):
    name: QualifiedName


@attrs.frozen(kw_only=True)
class DescribeHistory(Statement):
    """``DESCRIBE HISTORY t`` (Delta's statement): the table's commits, newest first."""

    name: QualifiedName


@attrs.frozen(kw_only=True)
class Explain(Statement):
    statement: Statement


@attrs.frozen(kw_only=True)
class AlterTableAddColumn(Statement):
    name: QualifiedName
    column: ColumnDefinition
    if_not_exists: bool = False


@attrs.frozen(kw_only=True)
class Call(Statement):
    """``CALL catalog.system.procedure(args)``: a connector procedure such as ``vacuum`` or ``compact``."""

    name: QualifiedName
    arguments: tuple[Any, ...] = ()
    named_arguments: Mapping[str, Any] = attrs.field(factory=dict, eq=False)


# ---- MonetDB merge-table DDL (seed 004); parsed by _mergetable.py -------------------------------------


@attrs.frozen(kw_only=True)
class PartitionBy:
    """``PARTITION BY {RANGE | VALUES} {ON (column) | USING (expression)}``: exactly one of column/expression."""

    method: str  # "RANGE" | "VALUES"
    column: str | None = None
    expression: Expression | None = None


@attrs.frozen(kw_only=True)
class CreateMergeTable(Statement):
    """``CREATE MERGE TABLE [IF NOT EXISTS] t (...) [PARTITION BY ...]``; without PARTITION BY the merge
    table is a read-only union of its children (as in MonetDB)."""

    name: QualifiedName
    columns: tuple[ColumnDefinition, ...]
    primary_key: tuple[str, ...] = ()
    if_not_exists: bool = False
    partition_by: PartitionBy | None = None


@attrs.frozen(kw_only=True)
class PartitionClause:
    """``AS PARTITION ...``. ``kind``: ``range`` (``minimum``/``maximum``, None for RANGE MINVALUE/MAXVALUE),
    ``values`` (``IN (...)``) or ``null`` (``FOR NULL VALUES``). Bounds and values are constant expressions,
    not yet evaluated."""

    kind: str
    minimum: Expression | None = None
    maximum: Expression | None = None
    values: tuple[Expression, ...] = ()
    with_nulls: bool = False


@attrs.frozen(kw_only=True)
class AlterTableSetPartition(Statement):
    """``ALTER TABLE [IF EXISTS] m {ADD | SET} TABLE c [AS PARTITION ...]``; ``replace`` is True for SET."""

    name: QualifiedName
    child: QualifiedName
    replace: bool = False
    partition: PartitionClause | None = None
    if_exists: bool = False


@attrs.frozen(kw_only=True)
class AlterTableDropPartition(Statement):
    """``ALTER TABLE [IF EXISTS] m DROP TABLE c [RESTRICT | CASCADE]``: detach a child."""

    name: QualifiedName
    child: QualifiedName
    if_exists: bool = False
    cascade: bool = False


@attrs.frozen(kw_only=True)
class AlterTableDropColumn(Statement):
    name: QualifiedName
    column: str


@attrs.frozen(kw_only=True)
class CreateFunction(Statement):
    """``CREATE FUNCTION f(a INT, ...) RETURNS INT BEGIN ... END`` (a ``mergekit.sql._functions.SqlFunction``)."""

    function: Any
