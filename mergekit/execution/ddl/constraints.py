"""CHECK constraints and column defaults in DDL: ``CREATE TABLE``'s (checked, named, and read back after the
connector created the table), ``ALTER TABLE ... ADD CONSTRAINT name CHECK (...)`` (the table's rows are checked
first, by a Spark job), ``ALTER TABLE ... DROP CONSTRAINT [IF EXISTS] name``, ``ALTER TABLE ... ALTER COLUMN c
SET DEFAULT expr | DROP DEFAULT`` and ``SHOW CREATE TABLE``.

The engine owns both features: a default's SQL text is evaluated by the merge rows (``planner.apply_defaults``),
a CHECK by the Spark evaluator of merge rows (``merge_rows.MergeQueryBuilder``); connectors only store the text
(``ColumnMetadata.default``, ``ConnectorTableMetadata.check_constraints``). Expressions are analysed by Spark
here, before the connector is asked anything: a default must have a type the column takes (Trino's
``typesMatchForInsert``), a CHECK must resolve against the table's columns and be boolean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import pyarrow as pa

from mergekit import sql as msql
from mergekit.catalogs import ResolvedTable
from mergekit.describe import create_table_text
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.lazy_pyspark import T
from mergekit.execution.scan import scan_table
from mergekit.execution.types import coercible, spark_type, trino_name
from mergekit.planner import check_violation
from mergekit.result import Result
from mergekit.spi import (
    CHECK_CONSTRAINT_MESSAGE,
    PRIMARY_KEY_MESSAGE,
    SET_DEFAULT_MESSAGE,
    STREAMS_MESSAGE,
    CheckConstraint,
    ColumnHandle,
    ColumnMetadata,
    ConnectorMetadata,
    ConnectorSession,
    SchemaTableName,
    StreamDefinition,
    sql_type_name,
)

__all__ = [
    "with_defaults",
    "named_checks",
    "verify_stored",
    "check_existing_rows",
    "add_constraint",
    "drop_constraint",
    "set_default",
    "show_create_table",
]


def _default_type(ctx: StatementContext, column: ColumnMetadata, default: msql.Expression) -> None:
    """TYPE_MISMATCH unless the default's type is one the column takes (PostgreSQL's wording)."""
    sql = default.to_spark(tables={}, schema={})
    value_type = ctx.spark.sql(f"SELECT ({sql}) AS `$d`").schema.fields[0].dataType
    if not coercible(value_type, spark_type(column.type)):
        raise MergekitError(
            ErrorCode.TYPE_MISMATCH,
            f"column {column.name} is of type {column.type_name or sql_type_name(column.type)} but default "
            f"expression is of type {trino_name(value_type)}",
        )


def with_defaults(
    ctx: StatementContext, columns: Sequence[ColumnMetadata], definitions: Sequence[msql.ColumnDefinition]
) -> tuple[ColumnMetadata, ...]:
    """``columns`` (built from ``definitions``, in order) with their checked DEFAULT texts."""
    out = []
    for column, definition in zip(columns, definitions, strict=True):
        if definition.default is not None:
            _default_type(ctx, column, definition.default)
            column = attrs.evolve(column, default=definition.default.sql)
        out.append(column)
    return tuple(out)


def _check_sql(expression: msql.Expression, columns: Sequence[ColumnMetadata]) -> str:
    """Spark SQL of a CHECK over the (unqualified) column names, with Trino's semantics for their types."""
    types = {c.name: c.type_name or sql_type_name(c.type) for c in columns}
    return expression.to_spark(tables={}, schema={"$rows": types})


def _analyse_check(ctx: StatementContext, expression: msql.Expression, columns: Sequence[ColumnMetadata]) -> None:
    """Spark's analysis over an empty table of ``columns``: the CHECK resolves (COLUMN_NOT_FOUND) and is boolean."""
    schema = T.StructType([T.StructField(c.name, spark_type(c.type), True) for c in columns])
    view = ctx.new_view(ctx.spark.createDataFrame([], schema), "check_probe")
    value_type = ctx.spark.sql(f"SELECT ({_check_sql(expression, columns)}) AS `$c` FROM {view}").schema[0].dataType
    if not isinstance(value_type, T.BooleanType | T.NullType):
        raise MergekitError(
            ErrorCode.TYPE_MISMATCH,
            f"CHECK constraint expression must evaluate to a boolean: actual type {trino_name(value_type)} "
            f"({expression.sql})",
        )


def _generated_name(table: str, expression: msql.Expression, taken: set[str]) -> str:
    """PostgreSQL's name for an unnamed CHECK: ``<table>_<column>_check`` when it reads one column, else
    ``<table>_check``; a number is appended while the name is taken (``t_check1``)."""
    columns = {name for _, name in expression.column_refs()}
    base = f"{table}_{next(iter(columns))}_check" if len(columns) == 1 else f"{table}_check"
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def named_checks(
    ctx: StatementContext,
    table: SchemaTableName,
    columns: Sequence[ColumnMetadata],
    definitions: Sequence[msql.CheckDefinition],
    existing: Sequence[CheckConstraint] = (),
) -> tuple[CheckConstraint, ...]:
    """The CHECK constraints of ``definitions``, analysed against the table's visible ``columns`` and named
    (generated names for unnamed ones); a name the table already uses is ``INVALID_ARGUMENTS``."""
    visible = [c for c in columns if not c.hidden]
    taken = {c.name for c in existing}
    explicit = {d.name for d in definitions if d.name is not None}
    out: list[CheckConstraint] = []
    for d in definitions:
        _analyse_check(ctx, d.expression, visible)
        if d.name is not None and d.name in taken:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f'constraint "{d.name}" for table {table} already exists')
        name = d.name if d.name is not None else _generated_name(table.table, d.expression, taken | explicit)
        taken.add(name)
        out.append(CheckConstraint(name=name, expression=d.expression.sql))
    return tuple(out)


def verify_stored(
    meta: ConnectorMetadata,
    session: ConnectorSession,
    name: SchemaTableName,
    columns: Sequence[ColumnMetadata],
    checks: Sequence[CheckConstraint],
    stream: StreamDefinition | None = None,
    primary_key: Sequence[str] = (),
) -> None:
    """After ``create_table`` made a new table: a connector that did not store the defaults, CHECK constraints,
    primary key or stream definition it was given would let writes skip them, so the table is dropped again and the
    statement refused (NOT_SUPPORTED, naming what)."""
    defaults = {c.name: c.default for c in columns if c.default is not None}
    if not defaults and not checks and stream is None and not primary_key:
        return
    handle = meta.get_table_handle(session=session, table=name)
    if handle is None:
        return
    stored = meta.get_table_metadata(session=session, table_handle=handle)
    if primary_key and not stored.primary_key:  # a connector without primary keys
        meta.drop_table(session=session, table_handle=handle)
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"{PRIMARY_KEY_MESSAGE}: PRIMARY KEY ({', '.join(primary_key)})")
    if stored.stream != stream:
        meta.drop_table(session=session, table_handle=handle)
        raise MergekitError(ErrorCode.NOT_SUPPORTED, STREAMS_MESSAGE)
    stored_defaults = {c.name: c.default for c in stored.columns if c.default is not None}
    stored_checks = [(c.name, c.expression) for c in stored.check_constraints]
    missing_checks = any((c.name, c.expression) not in stored_checks for c in checks)
    if missing_checks or any(stored_defaults.get(k) != v for k, v in defaults.items()):
        meta.drop_table(session=session, table_handle=handle)
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED, CHECK_CONSTRAINT_MESSAGE if missing_checks else SET_DEFAULT_MESSAGE
        )


def add_constraint(ctx: StatementContext, st: msql.AlterTableAddConstraint) -> Result:
    """``ALTER TABLE t ADD [CONSTRAINT name] CHECK (...)``: checked, then every row of the table's current
    snapshot is evaluated (one Spark job; a FALSE row fails the statement and nothing changes), then the connector
    records it on that snapshot's handle."""
    table = ctx.resolve(st.name)
    existing = table.metadata.check_constraints
    (constraint,) = named_checks(ctx, table.name, table.metadata.columns, [st.constraint], existing)
    check_existing_rows(ctx, table, [constraint])
    table.connector.get_metadata().add_check_constraint(
        session=ctx.session(table.catalog), table_handle=table.handle, constraint=constraint
    )
    return Result(statement="ALTER TABLE")


def check_existing_rows(ctx: StatementContext, table: ResolvedTable, checks: Sequence[CheckConstraint]) -> None:
    """Every row of ``table`` (its handle's snapshot) passes ``checks``, or ``CONSTRAINT_VIOLATION`` naming the
    first constraint some row fails and how many rows fail it: one Spark job (a count per constraint)."""
    session = ctx.session(table.catalog)
    visible = table.metadata.visible_columns
    handles = table.connector.get_metadata().get_column_handles(session=session, table_handle=table.handle)
    columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in visible]
    view = ctx.new_view(scan_table(ctx.spark, table.connector, session, table.handle, columns), "check_rows")
    counts = ", ".join(
        f"count_if(NOT ({_check_sql(msql.parse_expression(c.expression), visible)})) AS `$n{i}`"
        for i, c in enumerate(checks)
    )
    row = ctx.spark.sql(f"SELECT {counts} FROM {view}").collect()[0]
    for i, c in enumerate(checks):
        violating = row[i] or 0
        if violating:
            raise MergekitError(
                ErrorCode.CONSTRAINT_VIOLATION,
                f"{check_violation(c.name, c.expression)}: {violating} existing "
                f"{'row of table ' + table.full_name + ' violates' if violating == 1 else 'rows of table ' + table.full_name + ' violate'} it",
            )


def drop_constraint(ctx: StatementContext, st: msql.AlterTableDropConstraint) -> Result:
    """``ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name``."""
    table = ctx.resolve(st.name)
    if st.constraint not in {c.name for c in table.metadata.check_constraints}:
        if st.if_exists:
            return Result(statement="ALTER TABLE")
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS, f'constraint "{st.constraint}" of table {table.full_name} does not exist'
        )
    table.connector.get_metadata().drop_check_constraint(
        session=ctx.session(table.catalog), table_handle=table.handle, name=st.constraint
    )
    return Result(statement="ALTER TABLE")


def set_default(ctx: StatementContext, st: msql.AlterTableSetDefault) -> Result:
    """``ALTER TABLE t ALTER [COLUMN] c SET DEFAULT expr`` (type-checked) or ``... DROP DEFAULT``. Existing rows
    keep their values."""
    table = ctx.resolve(st.name)
    column = next((c for c in table.metadata.visible_columns if c.name == st.column), None)
    if column is None:
        raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{st.column}' does not exist")
    if st.default is not None:
        _default_type(ctx, column, st.default)
    table.connector.get_metadata().set_column_default(
        session=ctx.session(table.catalog),
        table_handle=table.handle,
        column=st.column,
        default=st.default.sql if st.default is not None else None,
    )
    return Result(statement="ALTER TABLE")


def show_create_table(ctx: StatementContext, st: msql.ShowCreateTable) -> Result:
    """``SHOW CREATE TABLE t``: the statement that creates the table as it is now (Trino's column name)."""
    table = ctx.resolve(st.name)
    meta = table.connector.get_metadata()
    session = ctx.session(table.catalog)
    declared = {p.name for p in table.connector.get_table_properties()}
    properties: Mapping[str, object] = {k: v for k, v in table.metadata.properties.items() if k in declared}
    scheme = meta.get_partition_scheme(session=session, table_handle=table.handle)
    partition_by = None
    if scheme is not None:
        key = f"ON ({scheme.column})" if scheme.column is not None else f"USING ({scheme.expression})"
        partition_by = f"PARTITION BY {scheme.method.value} {key}"
    merge_table = bool(table.metadata.properties.get("merge_table"))
    text = create_table_text(
        table.full_name, table.metadata, properties, merge_table=merge_table, partition_by=partition_by
    )
    return Result(statement="SHOW CREATE TABLE", table=pa.table({"Create Table": pa.array([text], pa.string())}))
