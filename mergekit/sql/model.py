"""The immutable statement model the SQL layer hands to the planner and the engine.

Statements are frozen attrs classes. SQL expressions and relations stay opaque to the layers above: an
:class:`Expression` or :class:`Relation` wraps a parsed tree that only this package can look into, and offers
what the planner and execution need (its text, the columns and tables it references, its Spark SQL rendering).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from mergekit.sql import references as _references
from mergekit.sql.analysis import lower as _lower
from mergekit.sql.analysis import simple_scan as _simple_scan
from mergekit.sql.analysis.simple_scan import SimpleScan
from mergekit.sql.parse import defaults as _defaults
from mergekit.sql.spark import render as _render
from mergekit.sql.streaming import marks as _stream_marks

from .names import QualifiedName, TableRef

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlglot import exp

    from mergekit.sql.analysis.lower import Lowered

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
    "AlterTableRenameColumn",
    "AlterTableSetColumnType",
    "CheckDefinition",
    "AlterTableAddConstraint",
    "AlterTableDropConstraint",
    "AlterTableSetDefault",
    "ShowCreateTable",
    "CreateStream",
    "CreateView",
    "DropView",
    "ShowViews",
    "AlterTableSetProperties",
]


class Tree:
    """Shared behaviour of wrappers around a parsed tree (never exposed as a sqlglot object)."""

    node: exp.Expression

    @property
    def sql(self) -> str:
        """The Trino SQL text of the tree."""
        return self.node.sql(dialect="trino")

    def table_refs(self) -> tuple[TableRef, ...]:
        return _references.table_refs(self.node)

    def to_spark(
        self,
        *,
        tables: Mapping[TableRef, str],
        schema: Mapping[str, Mapping[str, str]] | None = None,
    ) -> str:
        """Spark SQL text with Trino semantics; ``tables`` maps each referenced table to a Spark view name;
        ``schema`` gives column types (Trino type text) per relation name for type-dependent semantics."""
        return _render.render(self.node, tables=tables, schema=schema)

    def output_zones(
        self, *, tables: Mapping[TableRef, str], schema: Mapping[str, Mapping[str, str]] | None = None
    ) -> tuple[str | None, ...] | None:
        """Per output column (of a query or FROM item), the zone of its timestamp values: None for UTC or a column
        that is not a timestamp; the whole result None when the columns cannot be typed."""
        return _render.output_zones(self.node, tables=tables, schema=schema)

    def trino_type(self, schema: Mapping[str, Mapping[str, str]] | None = None) -> str:
        """The Trino type text of the tree as an expression (``char(5)``; ``?`` when it cannot be inferred), with
        ``schema`` as in :meth:`to_spark`."""
        return _render.trino_type(self.node, schema)

    def __str__(self) -> str:
        return self.sql

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sql!r})"


@attrs.frozen(eq=False, repr=False)
class Expression(Tree):
    node: exp.Expression

    @classmethod
    def column(cls, qualifier: str | None, name: str) -> Expression:
        """A column reference ``qualifier.name`` (quoted: any name), for expressions the planner writes."""
        from sqlglot import exp as e

        return cls(e.column(e.to_identifier(name, quoted=True), table=e.to_identifier(qualifier, quoted=True)))

    def column_refs(self) -> frozenset[tuple[str | None, str]]:
        """(qualifier or None, column) for every column referenced outside subqueries."""
        return _references.column_refs(self.node)

    @property
    def is_column(self) -> bool:
        """Whether the expression is a plain (possibly qualified) column reference."""
        from sqlglot import exp as e

        return isinstance(self.node, e.Column) and isinstance(self.node.this, e.Identifier)

    @property
    def is_null_literal(self) -> bool:
        return _references.is_null_literal(self.node)

    @property
    def is_default(self) -> bool:
        """Whether the expression is the keyword ``DEFAULT`` written as a value (VALUES, SET): the column's
        default expression, or NULL when it has none."""
        return _defaults.is_default(self.node)

    def refuse_nested_default(self) -> None:
        """``SYNTAX_ERROR`` when ``DEFAULT`` stands inside the expression rather than as all of it."""
        if not self.is_default:
            _defaults.refuse_default(self.node)

    def cast_to(self, trino_type: str) -> Expression:
        """``CAST(self AS trino_type)``, with Trino's cast rules (a value's time zone is read as Trino would)."""
        from sqlglot import exp as e

        return Expression(e.Cast(this=self.node.copy(), to=e.DataType.build(trino_type, dialect="trino")))

    def lowered(self) -> Lowered | None:
        """The expression as a neutral tree (``Ref``/``Const``/``Call``) when it lies in the small subset
        that evaluates the same outside Spark (see ``mergekit.sql.analysis.lower``), else None."""
        return _lower.lower(self.node)

    @property
    def conjunct_count(self) -> int:
        """How many AND-ed conjuncts the expression has."""
        return _lower.conjunct_count(self.node)


@attrs.frozen(eq=False, repr=False)
class Relation(Tree):
    """A FROM item: a table, a subquery or VALUES, with its alias and column aliases."""

    node: exp.Expression
    alias: str | None
    column_aliases: tuple[str, ...] = ()
    table: TableRef | None = None  # set when the relation is a plain table reference
    # a joined table (MERGE ... USING a JOIN b ON ...): the names of its tables (alias, else table name); each is
    # a struct column of the relation (``a.x`` reads field x of it) besides the join's own columns
    joined: tuple[str, ...] = ()

    def values_rows(self) -> tuple[tuple[Expression, ...], ...] | None:
        """The rows of a FROM item that is a VALUES list (``(VALUES (1, 'a')) AS s(id, v)``), each a tuple of its
        values; None for any other relation."""
        rows = _defaults.values_items(self.node, aliased=True)
        return None if rows is None else tuple(tuple(Expression(v) for v in row) for row in rows)

    def table_scan(self) -> Query | None:
        """``SELECT * FROM t`` for a FROM item that is a plain table reference (no time travel, no join), read
        under the table's own name (the relation's alias and column aliases are the caller's); else None."""
        if self.table is None or self.joined or self.table.version is not None or self.table.timestamp is not None:
            return None
        node = _simple_scan.select_all(self.node)
        return None if node is None else Query(node=node)

    def to_spark_from_item(
        self, *, tables: Mapping[TableRef, str], schema: Mapping[str, Mapping[str, str]] | None = None
    ) -> str:
        """Spark SQL for use after FROM, without the alias (the caller aliases it)."""
        return _render.render_relation(self, tables=tables, schema=schema)


class Statement:
    """Base of every statement."""


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Query(Statement, Tree):
    node: exp.Expression

    def with_defaults(self, defaults: tuple[Expression | None, ...]) -> Query:
        """The query with every ``DEFAULT`` of its VALUES rows replaced by ``defaults[position]`` (NULL for
        None): the INSERT source ``VALUES (1, DEFAULT)``. ``DEFAULT`` anywhere else is a ``SYNTAX_ERROR``."""
        return Query(node=_defaults.replace_defaults(self.node, tuple(d.node if d else None for d in defaults)))

    def constant_select(self) -> tuple[tuple[str, ...], tuple[Expression, ...]] | None:
        """For ``SELECT 1, 'a' AS x`` (no FROM, no other clause): the output names and the expressions; else None."""
        found = _simple_scan.constant_select(self.node)
        return None if found is None else (found[0], tuple(Expression(v) for v in found[1]))

    def simple_scan(self) -> SimpleScan | None:
        """The query as a scan of one table the driver tier may read itself (``mergekit.sql.analysis.simple_scan``:
        columns or ``count(*)``, a WHERE, an ORDER BY of columns), its WHERE an :class:`Expression`; else None."""
        scan = _simple_scan.simple_scan(self.node)
        if scan is None or scan.where is None:
            return scan
        return attrs.evolve(scan, where=Expression(scan.where))

    @property
    def stream_selects(self) -> tuple[bool, ...]:
        """For each top-most SELECT of the query (one per branch of a set operation; a VALUES branch counts
        as a SELECT without STREAM): whether it was written ``SELECT STREAM``."""
        return _stream_marks.top_level_stream_flags(self.node)

    def default_positions(self) -> tuple[frozenset[int], ...] | None:
        """For an INSERT source that is a VALUES list: per row, the positions written ``DEFAULT``; else None."""
        return _defaults.default_positions(self.node)

    def values_rows(self) -> tuple[tuple[Expression, ...], ...] | None:
        """The rows of a query that is a bare VALUES list, each a tuple of its values (``VALUES 1, 2``: one value a
        row); None for any other query."""
        rows = _defaults.values_items(self.node)
        return None if rows is None else tuple(tuple(Expression(v) for v in row) for row in rows)

    @staticmethod
    def values_row(values: tuple[Expression | None, ...]) -> Query:
        """``VALUES (v1, v2, ...)`` (NULL for None): the source of ``INSERT INTO t DEFAULT VALUES``."""
        return Query(node=_defaults.values_row(tuple(v.node if v else None for v in values)))


@attrs.frozen(kw_only=True)
class Insert(Statement):
    target: QualifiedName
    columns: tuple[str, ...] | None
    source: Query
    default_values: bool = False  # INSERT INTO t DEFAULT VALUES: one row of defaults (source is a placeholder)
    overwrite: bool = False  # INSERT OVERWRITE (Spark): the rows replace every row of the table, in one commit
    on_conflict: OnConflict | None = None  # INSERT ... ON CONFLICT (PostgreSQL): planned as a MERGE
    target_alias: str | None = None  # INSERT INTO t AS x (PostgreSQL): ON CONFLICT DO UPDATE names the target x


@attrs.frozen(kw_only=True)
class OnConflict:
    """``ON CONFLICT [(keys)] DO NOTHING | DO UPDATE SET ... [WHERE ...]``: ``keys`` None means the primary key;
    ``assignments`` empty means DO NOTHING; the proposed row is ``excluded``."""

    keys: tuple[str, ...] | None
    assignments: tuple[tuple[str, Expression], ...] = ()
    where: Expression | None = None


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
    # DELETE ... USING (PostgreSQL): ``where`` is then ``EXISTS (SELECT 1 FROM <using> WHERE <condition>)``;
    # ``using`` is ``SELECT * FROM <using>`` and ``unqualified`` the unqualified column names of the condition,
    # which must not name both a target and a USING column (PostgreSQL: ambiguous; the EXISTS would read the
    # USING one)
    using: Query | None = None
    unqualified: frozenset[str] = frozenset()


class MergeCaseKind(enum.Enum):
    MATCHED = "WHEN MATCHED"
    NOT_MATCHED = "WHEN NOT MATCHED"
    NOT_MATCHED_BY_SOURCE = "WHEN NOT MATCHED BY SOURCE"


class MergeAction(enum.Enum):
    INSERT = "INSERT"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NOTHING = "DO NOTHING"  # PostgreSQL's: the row is taken by this clause and changes nothing


@attrs.frozen(kw_only=True)
class MergeCase:
    kind: MergeCaseKind
    action: MergeAction
    condition: Expression | None = None
    # UPDATE: SET column = value pairs; INSERT: column list (None = all) and values
    assignments: tuple[tuple[str, Expression], ...] = ()
    insert_columns: tuple[str, ...] | None = None
    insert_values: tuple[Expression, ...] = ()
    # ``UPDATE SET *`` / ``INSERT *`` (Spark, Delta): every target column from the source column of the same name
    star: bool = False


@attrs.frozen(kw_only=True)
class Merge(Statement):
    target: QualifiedName
    target_alias: str | None
    source: Relation
    on: Expression
    cases: tuple[MergeCase, ...]
    # MERGE WITH SCHEMA EVOLUTION (Spark 4, Delta): source columns the clauses assign and the target lacks are
    # added to the target, in the statement's commit
    schema_evolution: bool = False


@attrs.frozen(kw_only=True)
class CheckDefinition:
    """``[CONSTRAINT name] CHECK (expression)``: ``name`` None when the statement gave none (the engine then
    generates one, PostgreSQL's way); ``column`` the column it was written on, for a column constraint."""

    name: str | None
    expression: Expression
    column: str | None = None


@attrs.frozen(kw_only=True)
class ColumnDefinition:
    name: str
    type_text: str
    nullable: bool = True
    comment: str | None = None
    default: Expression | None = None  # DEFAULT expression (checked: no column, no subquery)
    checks: tuple[CheckDefinition, ...] = ()  # CHECK constraints written on the column


@attrs.frozen(kw_only=True)
class CreateTable(Statement):
    name: QualifiedName
    columns: tuple[ColumnDefinition, ...]
    primary_key: tuple[str, ...] = ()
    if_not_exists: bool = False
    properties: Mapping[str, Any] = attrs.field(factory=dict, eq=False)
    as_query: Query | None = None
    with_data: bool = True
    check_constraints: tuple[CheckDefinition, ...] = ()  # column and table CHECK constraints, in text order


@attrs.frozen(kw_only=True)
class CreateSchema(Statement):
    name: QualifiedName
    if_not_exists: bool = False


@attrs.frozen(kw_only=True)
class DropTable(Statement):
    name: QualifiedName
    if_exists: bool = False
    stream: bool = False  # DROP STREAM: the object must be a stream (DROP TABLE: must not be one)


@attrs.frozen(kw_only=True)
class CreateStream(Statement):
    """``CREATE STREAM`` (seed 001): ``table`` is the CREATE TABLE it reads as; ``monotonic`` the columns
    declared ``MONOTONIC`` (name, descending) in order; ``slack`` and ``history`` its ``WITH`` options."""

    table: CreateTable
    monotonic: tuple[tuple[str, bool], ...] = ()
    slack: Expression | None = None
    history: bool = False


@attrs.frozen(kw_only=True)
class CreateView(Statement):
    """``CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name [(col, ...)] [COMMENT '...'] AS query``: ``sql`` is the
    query's text as written (what the connector stores), ``query`` its parse; ``columns`` the column list or
    None."""

    name: QualifiedName
    query: Query
    sql: str
    columns: tuple[str, ...] | None = None
    replace: bool = False
    if_not_exists: bool = False
    comment: str | None = None


@attrs.frozen(kw_only=True)
class DropView(Statement):
    """``DROP VIEW [IF EXISTS] name``."""

    name: QualifiedName
    if_exists: bool = False


@attrs.frozen(kw_only=True)
class ShowViews(Statement):
    """``SHOW VIEWS [FROM schema] [LIKE 'pattern' [ESCAPE 'c']]``."""

    schema: QualifiedName | None = None
    like: str | None = None
    escape: str | None = None


@attrs.frozen(kw_only=True)
class AlterTableSetProperties(Statement):
    """``ALTER TABLE t SET PROPERTIES name = value, ...`` (Trino): ``properties`` maps each name to its value
    as parsed, or None for ``name = DEFAULT``."""

    name: QualifiedName
    properties: Mapping[str, Any] = attrs.field(factory=dict, eq=False)


@attrs.frozen(kw_only=True)
class Truncate(Statement):
    name: QualifiedName


@attrs.frozen(kw_only=True)
class ShowTables(Statement):
    schema: QualifiedName | None = None
    streams: bool = False  # SHOW STREAMS: the streams only (SHOW TABLES lists both, as Calcite's catalog does)
    like: str | None = None  # SHOW TABLES LIKE 'pattern' (SQL LIKE: % and _)
    escape: str | None = None


@attrs.frozen(kw_only=True)
class ShowSchemas(Statement):
    catalog: str | None = None


@attrs.frozen(kw_only=True)
class Describe(Statement):
    name: QualifiedName


@attrs.frozen(kw_only=True)
class SetSession(Statement):
    """``SET SESSION name = value`` (Trino): a session property of the engine, for the statements after it."""

    name: str
    value: str


@attrs.frozen(kw_only=True)
class ResetSession(Statement):
    """``RESET SESSION name``: the property's default again."""

    name: str


@attrs.frozen(kw_only=True)
class ShowSession(Statement):
    """``SHOW SESSION``: every session property, its value and default."""


@attrs.frozen(kw_only=True)
class DescribeHistory(Statement):
    """``DESCRIBE HISTORY t`` (Delta's statement): the table's commits, newest first."""

    name: QualifiedName


@attrs.frozen(kw_only=True)
class Explain(Statement):
    statement: Statement
    text: str = ""  # the explained statement as written (what EXPLAIN prints for a statement without a plan)


@attrs.frozen(kw_only=True)
class AlterTableAddColumn(Statement):
    name: QualifiedName
    column: ColumnDefinition
    if_not_exists: bool = False


@attrs.frozen(kw_only=True)
class AlterTableAddConstraint(Statement):
    """``ALTER TABLE t ADD [CONSTRAINT name] CHECK (expression)``."""

    name: QualifiedName
    constraint: CheckDefinition


@attrs.frozen(kw_only=True)
class AlterTableDropConstraint(Statement):
    """``ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name``."""

    name: QualifiedName
    constraint: str
    if_exists: bool = False


@attrs.frozen(kw_only=True)
class AlterTableSetDefault(Statement):
    """``ALTER TABLE t ALTER [COLUMN] c SET DEFAULT expression`` (``default``) or ``... DROP DEFAULT`` (None)."""

    name: QualifiedName
    column: str
    default: Expression | None


@attrs.frozen(kw_only=True)
class ShowCreateTable(Statement):
    """``SHOW CREATE TABLE t``: the statement that creates the table as it is, with defaults and constraints."""

    name: QualifiedName


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
    check_constraints: tuple[CheckDefinition, ...] = ()


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
class AlterTableRenameColumn(Statement):
    """``ALTER TABLE t RENAME COLUMN [IF EXISTS] source TO target``."""

    name: QualifiedName
    source: str
    target: str
    if_exists: bool = False


@attrs.frozen(kw_only=True)
class AlterTableSetColumnType(Statement):
    """``ALTER TABLE t ALTER [COLUMN] c SET DATA TYPE type`` (also PostgreSQL's ``ALTER COLUMN c TYPE type``)."""

    name: QualifiedName
    column: str
    type_text: str


@attrs.frozen(kw_only=True)
class CreateFunction(Statement):
    """``CREATE FUNCTION f(a INT, ...) RETURNS INT BEGIN ... END`` (a ``mergekit.sql.parse.functions.SqlFunction``)."""

    function: Any
