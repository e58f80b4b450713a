"""Schema evolution statements: ``ALTER TABLE ... RENAME COLUMN`` and ``ALTER TABLE ... ALTER COLUMN ... SET DATA
TYPE`` (the checks Trino's RenameColumnTask and SetColumnTypeTask make, then the connector's ``rename_column`` /
``set_column_type``), and the columns a ``MERGE WITH SCHEMA EVOLUTION`` adds (:func:`merge_added_columns`, used by
``statement.plan_dml``)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.lazy_pyspark import T
from mergekit.execution.types import arrow_type, trino_name
from mergekit.planner.evolution import added_merge_columns, type_change_needed
from mergekit.result import Result
from mergekit.spi import ColumnMetadata, ConnectorTableMetadata, parse_sql_type

__all__ = ["rename_column", "set_column_type", "merge_added_columns", "refuse_constrained"]


def refuse_constrained(metadata: ConnectorTableMetadata, column: str, verb: str) -> None:
    """A column a CHECK constraint reads cannot be renamed or dropped (Delta's rule): the constraint would name a
    column that no longer exists. Drop the constraint first."""
    for check in metadata.check_constraints:
        if column in {name for _, name in msql.parse_expression(check.expression).column_refs()}:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                f"Cannot {verb} column '{column}': check constraint '{check.name}' ({check.expression}) uses it; "
                "drop the constraint first",
            )


def _visible_column(ctx: StatementContext, name: msql.QualifiedName, column: str, verb: str) -> ColumnMetadata | None:
    """The visible column ``column`` of the table, None when the table has no such column; a hidden column (a
    version field, a row id) is refused."""
    table = ctx.resolve(name)
    for c in table.metadata.columns:
        if c.name == column:
            if c.hidden:
                raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot {verb} hidden column '{column}'")
            return c
    return None


def rename_column(ctx: StatementContext, st: msql.AlterTableRenameColumn) -> Result:
    """``ALTER TABLE t RENAME COLUMN [IF EXISTS] a TO b``."""
    table = ctx.resolve(st.name)
    if _visible_column(ctx, st.name, st.source, "rename") is None:
        if st.if_exists:
            return Result(statement="ALTER TABLE")
        raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{st.source}' does not exist")
    if st.target in {c.name for c in table.metadata.columns}:
        raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{st.target}' already exists")
    refuse_constrained(table.metadata, st.source, "rename")
    table.connector.get_metadata().rename_column(
        session=ctx.session(table.catalog), table_handle=table.handle, source=st.source, target=st.target
    )
    return Result(statement="ALTER TABLE")


def set_column_type(ctx: StatementContext, st: msql.AlterTableSetColumnType) -> Result:
    """``ALTER TABLE t ALTER COLUMN c SET DATA TYPE type``: a widening (``mergekit.planner.evolution``) goes to the
    connector; the same type changes nothing; anything else is refused before the connector is asked."""
    table = ctx.resolve(st.name)
    column = _visible_column(ctx, st.name, st.column, "alter")
    if column is None:
        raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{st.column}' does not exist")
    try:
        new_type = parse_sql_type(st.type_text)
    except ValueError as exc:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Unknown type '{st.type_text}' for column '{st.column}'") from exc
    if type_change_needed(column, new_type, st.type_text):
        table.connector.get_metadata().set_column_type(
            session=ctx.session(table.catalog),
            table_handle=table.handle,
            column=st.column,
            type=new_type,
            type_name=st.type_text,
        )
    return Result(statement="ALTER TABLE")


def merge_added_columns(
    target: Sequence[ColumnMetadata], source: Sequence[T.StructField], st: msql.Merge
) -> tuple[ColumnMetadata, ...]:
    """The columns ``st`` (a ``MERGE WITH SCHEMA EVOLUTION``) adds to ``target``, from the analysed source's
    fields: their Arrow types and SQL names as ``CREATE TABLE AS`` derives them."""
    star = any(case.star for case in st.cases)
    assigned: list[str] = []
    for case in st.cases:
        if case.kind is msql.MergeCaseKind.NOT_MATCHED_BY_SOURCE:
            continue  # no source row there: Delta adds no column for it
        assigned += [name for name, _ in case.assignments] + list(case.insert_columns or ())
    columns = [ColumnMetadata(name=f.name, type=_arrow(f), type_name=_type_name(f)) for f in source]
    return added_merge_columns(target, columns, star=star, assigned=assigned)


def _arrow(field: T.StructField) -> pa.DataType:
    if isinstance(field.dataType, T.NullType):
        return pa.null()
    try:
        return arrow_type(field.dataType)
    except Exception:  # a Spark type Arrow lacks: no table column can have it (refused if it is to be added)
        return pa.binary()


def _type_name(field: T.StructField) -> str | None:
    return None if isinstance(field.dataType, T.NullType) else trino_name(field.dataType)
