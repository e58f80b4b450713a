"""DDL and metadata statements: CREATE/DROP TABLE (and AS query), schemas, ALTER TABLE, TRUNCATE, SHOW, DESCRIBE,
CALL, and MonetDB's merge-table DDL (seed 004). Each takes the statement's context and the parsed statement and
returns its ``Result``; Spark is used only where a query or a check over rows runs (CTAS, partition bounds, the
rows a new partition must hold)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit import sql as msql
from mergekit.describe import history_table
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.arrow.compiler import assign, assignable, value_family
from mergekit.execution.arrow.values import compile_constants
from mergekit.execution.context import StatementContext, view_name
from mergekit.execution.dml.driver import bare_column
from mergekit.execution.dml.run import run_dml
from mergekit.execution.dml.target import refuse_stream_change
from mergekit.execution.driver_query import DriverQuery, plan_driver_query, run_driver_query
from mergekit.execution.lazy_pyspark import T
from mergekit.execution.scan import scan_table
from mergekit.execution.types import arrow_type, spark_sql_type, spark_type, trino_name
from mergekit.execution.views import VIEW_STATEMENTS, describe_view
from mergekit.planner import driver_tier_enabled
from mergekit.planner.properties import validate_table_properties
from mergekit.result import Result
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    ConnectorMetadata,
    ConnectorSession,
    ConnectorTableMetadata,
    MonotonicColumn,
    PartitionBounds,
    PartitionKind,
    PartitionMethod,
    PartitionScheme,
    PropertyMetadata,
    SchemaTableName,
    StreamDefinition,
    parse_sql_type,
    sql_type_name,
)

from .constraints import (
    add_constraint,
    check_existing_rows,
    drop_constraint,
    named_checks,
    set_default,
    show_create_table,
    verify_stored,
    with_defaults,
)
from .evolution import refuse_constrained, rename_column, set_column_type

__all__ = ["run_ddl", "DDL_STATEMENTS"]


def column_metadata(c: msql.ColumnDefinition) -> ColumnMetadata:
    try:
        arrow = parse_sql_type(c.type_text)
    except ValueError as exc:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Unknown type '{c.type_text}' for column '{c.name}'") from exc
    return ColumnMetadata(name=c.name, type=arrow, nullable=c.nullable, comment=c.comment, type_name=c.type_text)


def _no_duplicate_columns(names: Sequence[str]) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column name '{dupes[0]}' specified more than once")


def create_table(ctx: StatementContext, st: msql.CreateTable, *, stream: StreamDefinition | None = None) -> Result:
    """CREATE TABLE, and CREATE STREAM with ``stream`` (``mergekit.execution.streaming.streams``)."""
    kind = "STREAM" if stream is not None else "TABLE"
    catalog, name = ctx.catalogs.split_name(st.name)
    connector = ctx.catalogs.get(catalog)
    session = ctx.session(catalog)
    meta = connector.get_metadata()
    declared = connector.get_table_properties()
    given, primary_key = _primary_key_property(st, declared)
    properties = validate_table_properties(catalog, declared, given)
    if meta.get_table_handle(session=session, table=name) is not None:
        if st.if_not_exists:
            return Result(statement=f"CREATE {kind}", row_count=0 if st.as_query else None)
        raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"{kind.title()} '{catalog}.{name}' already exists")
    if st.as_query is not None:
        df = ctx.spark.sql(ctx.render(st.as_query))
        columns = tuple(
            ColumnMetadata(
                name=f.name.lower(),
                type=arrow_type(f.dataType),
                type_name=trino_name(f.dataType),
                nullable=f.name.lower() not in primary_key,  # a key column is NOT NULL (ISO SQL, PostgreSQL)
            )
            for f in df.schema.fields
        )
    else:
        columns = tuple(column_metadata(c) for c in st.columns)
    names = [c.name for c in columns]
    _no_duplicate_columns(names)
    if len(set(primary_key)) < len(primary_key):
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Primary key column '{primary_key[0]}' is listed twice")
    for key in primary_key:
        if key not in names:
            raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Primary key column '{key}' is not a column of the table")
    if st.as_query is None:  # DEFAULT and CHECK, type-checked and named (a CTAS has neither)
        columns = with_defaults(ctx, columns, st.columns)
    checks = named_checks(ctx, name, columns, st.check_constraints)
    table_metadata = ConnectorTableMetadata(
        table=name,
        columns=columns,
        primary_key=primary_key,
        properties=properties,
        check_constraints=checks,
        stream=stream,
    )
    meta.create_table(session=session, table_metadata=table_metadata, ignore_existing=st.if_not_exists)
    verify_stored(meta, session, name, columns, checks, stream, primary_key)
    if st.as_query is None:
        return Result(statement=f"CREATE {kind}")
    if not st.with_data:  # CREATE TABLE ... AS query WITH NO DATA: the query's columns, no rows
        return Result(statement="CREATE TABLE AS", row_count=0)
    try:
        result = run_dml(ctx, msql.Insert(target=st.name, columns=None, source=st.as_query))
    except BaseException:
        handle = meta.get_table_handle(session=session, table=name)
        if handle is not None:
            meta.drop_table(session=session, table_handle=handle)
        raise
    return attrs.evolve(result, statement="CREATE TABLE AS")


#: CREATE TABLE's table property for the primary key, for every connector that does not declare a property of
#: that name itself: ``WITH (primary_key = ARRAY['id', ...])`` means ``PRIMARY KEY (id, ...)``.
PRIMARY_KEY_PROPERTY = "primary_key"


def _primary_key_property(
    st: msql.CreateTable, declared: Sequence[PropertyMetadata]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The statement's properties without ``primary_key`` (unless the connector declares one by that name), and the
    table's primary key: the PRIMARY KEY clause's columns or the property's, never both."""
    given = dict(st.properties)
    if PRIMARY_KEY_PROPERTY not in given or any(p.name == PRIMARY_KEY_PROPERTY for p in declared):
        return given, st.primary_key
    value = given.pop(PRIMARY_KEY_PROPERTY)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise MergekitError(
            ErrorCode.INVALID_TABLE_PROPERTY,
            f"Invalid value for table property '{PRIMARY_KEY_PROPERTY}': expected a non-empty array of column names "
            f"such as ARRAY['id'], got {value!r}",
            property=PRIMARY_KEY_PROPERTY,
        )
    if st.primary_key:
        raise MergekitError(
            ErrorCode.INVALID_TABLE_PROPERTY,
            f"Table property '{PRIMARY_KEY_PROPERTY}' and a PRIMARY KEY clause cannot both be given",
            property=PRIMARY_KEY_PROPERTY,
        )
    return given, tuple(v.lower() for v in value)


def drop_table(ctx: StatementContext, st: msql.DropTable) -> Result:
    catalog, name = ctx.catalogs.split_name(st.name)
    meta = ctx.catalogs.get(catalog).get_metadata()
    session = ctx.session(catalog)
    handle = meta.get_table_handle(session=session, table=name)
    kind = "STREAM" if st.stream else "TABLE"
    if handle is None and meta.get_view(session=session, name=name) is not None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"'{catalog}.{name}' is a view: use DROP VIEW")
    if handle is None:
        if st.if_exists:
            return Result(statement=f"DROP {kind}")
        raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"{kind.title()} '{catalog}.{name}' does not exist")
    is_stream = meta.get_table_metadata(session=session, table_handle=handle).stream is not None
    if is_stream != st.stream:
        what = "a stream" if is_stream else "a table"
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED, f"'{catalog}.{name}' is {what}: use DROP {'STREAM' if is_stream else 'TABLE'}"
        )
    meta.drop_table(session=session, table_handle=handle)
    return Result(statement=f"DROP {kind}")


def create_schema(ctx: StatementContext, st: msql.CreateSchema) -> Result:
    catalog = st.name.parts[0] if len(st.name.parts) == 2 else ctx.catalogs.default_catalog
    schema = st.name.parts[-1]
    meta = ctx.catalogs.get(catalog).get_metadata()
    if st.if_not_exists and schema in meta.list_schemas(session=ctx.session(catalog)):
        return Result(statement="CREATE SCHEMA")
    meta.create_schema(session=ctx.session(catalog), schema=schema, properties={})
    return Result(statement="CREATE SCHEMA")


def show_tables(ctx: StatementContext, st: msql.ShowTables) -> Result:
    catalog = st.schema.parts[0] if st.schema and len(st.schema.parts) == 2 else ctx.catalogs.default_catalog
    schema = st.schema.parts[-1] if st.schema else ctx.catalogs.default_schema
    meta = ctx.catalogs.get(catalog).get_metadata()
    session = ctx.session(catalog)
    names = list(meta.list_tables(session=session, schema=schema))
    if not st.streams:  # SHOW TABLES lists views too (as Trino's does)
        views = meta.list_views(session=session, schema=schema)
        names = sorted([*names, *views], key=lambda n: (n.schema, n.table)) if views else names
    tables = [n.table for n in names if st.like is None or msql.like_matches(n.table, st.like, st.escape)]
    if st.streams:  # SHOW STREAMS
        tables = [t for t, n in zip(tables, names, strict=False) if _is_stream(meta, session, n)]
        return Result(statement="SHOW STREAMS", table=pa.table({"Stream": pa.array(tables, pa.string())}))
    return Result(statement="SHOW TABLES", table=pa.table({"Table": pa.array(tables, pa.string())}))


def _is_stream(meta: ConnectorMetadata, session: ConnectorSession, name: SchemaTableName) -> bool:
    handle = meta.get_table_handle(session=session, table=name)
    return handle is not None and meta.get_table_metadata(session=session, table_handle=handle).stream is not None


def show_schemas(ctx: StatementContext, st: msql.ShowSchemas) -> Result:
    catalog = st.catalog or ctx.catalogs.default_catalog
    names = ctx.catalogs.get(catalog).get_metadata().list_schemas(session=ctx.session(catalog))
    return Result(statement="SHOW SCHEMAS", table=pa.table({"Schema": pa.array(list(names), pa.string())}))


def describe(ctx: StatementContext, st: msql.Describe) -> Result:
    view = describe_view(ctx, st.name)
    if view is not None:
        return view
    metadata = ctx.resolve(st.name).metadata
    cols = metadata.visible_columns
    monotonic = {m.name: m for m in metadata.stream.monotonic} if metadata.stream is not None else {}
    table = pa.table(
        {
            "Column": [c.name for c in cols],
            "Type": [c.type_name or sql_type_name(c.type) for c in cols],
            "Extra": [_extra(c, monotonic.get(c.name)) for c in cols],
            "Comment": [c.comment or "" for c in cols],
        }
    )
    return Result(statement="DESCRIBE", table=table)


def _extra(c: ColumnMetadata, monotonic: MonotonicColumn | None = None) -> str:
    """DESCRIBE's Extra: ``not null``, the column's ``default <expression>``, and ``monotonic [descending]`` for
    a stream's monotonic column."""
    order = [] if monotonic is None else ["monotonic descending" if monotonic.descending else "monotonic"]
    return ", ".join(([] if c.nullable else ["not null"]) + ([f"default {c.default}"] if c.default else []) + order)


def describe_history(ctx: StatementContext, st: msql.DescribeHistory) -> Result:
    table = ctx.resolve(st.name)
    commits = table.connector.get_metadata().get_table_history(
        session=ctx.session(table.catalog), table_handle=table.handle
    )
    return Result(statement="DESCRIBE HISTORY", table=history_table(commits))


def truncate(ctx: StatementContext, st: msql.Truncate) -> Result:
    """Metadata-only where the connector supports it, else a DELETE of every row."""
    table = ctx.resolve(st.name)
    refuse_stream_change(table)
    try:
        table.connector.get_metadata().truncate_table(session=ctx.session(table.catalog), table_handle=table.handle)
    except MergekitError as exc:
        if exc.code is not ErrorCode.NOT_SUPPORTED:
            raise
        return run_dml(ctx, msql.Delete(target=st.name, where=None))
    return Result(statement="TRUNCATE")


def add_column(ctx: StatementContext, st: msql.AlterTableAddColumn) -> Result:
    table = ctx.resolve(st.name)
    if any(c.name == st.column.name for c in table.metadata.columns):
        if st.if_not_exists:
            return Result(statement="ALTER TABLE")
        raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{st.column.name}' already exists")
    table.connector.get_metadata().add_column(
        session=ctx.session(table.catalog), table_handle=table.handle, column=column_metadata(st.column)
    )
    return Result(statement="ALTER TABLE")


def set_properties(ctx: StatementContext, st: msql.AlterTableSetProperties) -> Result:
    """``ALTER TABLE t SET PROPERTIES name = value | DEFAULT, ...``: each checked against the connector's declared
    properties (``INVALID_TABLE_PROPERTY`` as in CREATE TABLE); DEFAULT is passed as None."""
    table = ctx.resolve(st.name)
    declared = table.connector.get_table_properties()
    given = {k: v for k, v in st.properties.items() if v is not None}
    checked = validate_table_properties(table.catalog, declared, given)
    names = {p.name for p in declared}
    for name in st.properties:
        if name not in names:  # NAME = DEFAULT of an unknown property: the same refusal
            validate_table_properties(table.catalog, declared, {name: ""})
    values = {name: checked[name] if name in given else None for name in st.properties}
    table.connector.get_metadata().set_table_properties(
        session=ctx.session(table.catalog), table_handle=table.handle, properties=values
    )
    return Result(statement="ALTER TABLE")


def drop_column(ctx: StatementContext, st: msql.AlterTableDropColumn) -> Result:
    table = ctx.resolve(st.name)
    column = next((c for c in table.metadata.columns if c.name == st.column), None)
    if column is None:
        raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{st.column}' does not exist")
    if column.hidden:  # Trino's DropColumnTask: a version field or row id is not the user's to drop
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot drop hidden column '{st.column}'")
    if len(table.metadata.visible_columns) == 1:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "Cannot drop the only column in a table")
    refuse_constrained(table.metadata, st.column, "drop")
    table.connector.get_metadata().drop_column(
        session=ctx.session(table.catalog), table_handle=table.handle, column=st.column
    )
    return Result(statement="ALTER TABLE")


def call(ctx: StatementContext, st: msql.Call) -> Result:
    parts = st.name.parts
    catalog = parts[0] if len(parts) == 3 else ctx.catalogs.default_catalog
    procedure = parts[-1]
    procedures = ctx.catalogs.get(catalog).get_procedures()
    if procedure not in procedures:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Procedure '{procedure}' does not exist in catalog '{catalog}'")
    arguments = procedure_arguments(procedure, procedures[procedure], st.arguments, dict(st.named_arguments))
    out = procedures[procedure](session=ctx.session(catalog), **arguments)
    if isinstance(out, pa.Table):
        return Result(statement="CALL", table=out)
    if isinstance(out, Mapping):
        return Result(statement="CALL", metrics=dict(out))
    return Result(statement="CALL")


def procedure_arguments(
    name: str, procedure: Callable[..., object], positional: Sequence[Any], named: Mapping[str, Any]
) -> dict[str, Any]:
    """A CALL's arguments by name, checked as Trino's CallTask checks them: the procedure's arguments are the named
    parameters of its signature other than ``session``, in order (``**kwargs`` takes none); a positional argument
    is the next of them; an unknown or repeated name, too many arguments, or a missing required one (a parameter
    without default) is INVALID_ARGUMENTS."""
    parameters = [
        p
        for p in inspect.signature(procedure).parameters.values()
        if p.name != "session" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    names = [p.name for p in parameters]

    def invalid(message: str) -> MergekitError:
        takes = f"{name} takes: {', '.join(names)}" if names else f"{name} takes no arguments"
        return MergekitError(ErrorCode.INVALID_ARGUMENTS, f"{message} ({takes})")

    bound: dict[str, Any] = {}
    for i, value in enumerate(positional):
        if i >= len(names):
            raise invalid("Too many arguments for procedure")
        bound[names[i]] = value
    for key, value in named.items():
        if key not in names:
            raise invalid(f"Unknown argument name: {key}")
        if key in bound:
            raise invalid(f"Duplicate procedure argument: {key}")
        bound[key] = value
    for p in parameters:
        if p.default is p.empty and p.name not in bound:
            raise invalid(f"Required procedure argument '{p.name}' is missing")
    return bound


def create_function(ctx: StatementContext, st: msql.CreateFunction) -> Result:
    msql.register_function(st.function)
    return Result(statement="CREATE FUNCTION")


# ---- merge tables (seed 004) -----------------------------------------------------------------------------


def merge_table_ddl(ctx: StatementContext, st: msql.Statement) -> Result:
    if isinstance(st, msql.CreateMergeTable):
        catalog, name = ctx.catalogs.split_name(st.name)
        meta = ctx.catalogs.get(catalog).get_metadata()
        columns = tuple(column_metadata(c) for c in st.columns)
        _no_duplicate_columns([c.name for c in columns])
        columns = with_defaults(ctx, columns, st.columns)
        checks = named_checks(ctx, name, columns, st.check_constraints)
        scheme = _partition_scheme(ctx, st, columns) if st.partition_by is not None else None
        session = ctx.session(catalog)
        existed = meta.get_table_handle(session=session, table=name) is not None
        meta.create_merge_table(
            session=session,
            table_metadata=ConnectorTableMetadata(
                table=name, columns=columns, primary_key=st.primary_key, check_constraints=checks
            ),
            scheme=scheme,
            ignore_existing=st.if_not_exists,
        )
        if not existed:
            verify_stored(meta, session, name, columns, checks)
        return Result(statement="CREATE MERGE TABLE")
    assert isinstance(st, msql.AlterTableSetPartition | msql.AlterTableDropPartition)
    catalog, merge_name = ctx.catalogs.split_name(st.name)
    child_catalog, child_name = ctx.catalogs.split_name(st.child)
    if child_catalog != catalog:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "ALTER TABLE: a child must be in the merge table's catalog")
    meta = ctx.catalogs.get(catalog).get_metadata()
    session = ctx.session(catalog)
    handle = meta.get_table_handle(session=session, table=merge_name)
    if handle is None:
        if st.if_exists:
            return Result(statement="ALTER TABLE")
        raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{catalog}.{merge_name}' does not exist")
    if isinstance(st, msql.AlterTableDropPartition):
        meta.drop_table_partition(session=session, merge_table=merge_name, child=child_name)
        return Result(statement="ALTER TABLE")
    if not st.replace:  # a child's rows must pass the merge table's CHECK constraints (and those above it)
        checks = meta.get_table_metadata(session=session, table_handle=handle).check_constraints
        if checks and meta.get_table_handle(session=session, table=child_name) is not None:
            child = ctx.resolve(msql.QualifiedName((catalog, child_name.schema, child_name.table)))
            check_existing_rows(ctx, child, checks)
    scheme = meta.get_partition_scheme(session=session, table_handle=handle)
    bounds, values = None, None
    if st.partition is not None:
        bounds, values = _partition_bounds(ctx, st.partition, scheme)

    def check_rows(child: SchemaTableName, levels: Sequence[tuple[PartitionScheme, PartitionBounds]]) -> list[int]:
        return _misfits(ctx, catalog, child, levels)

    meta.set_table_partition(
        session=session,
        merge_table=merge_name,
        child=child_name,
        bounds=bounds,
        bound_values=values,
        replace=st.replace,
        check_rows=check_rows,
    )
    return Result(statement="ALTER TABLE")


def _partition_scheme(
    ctx: StatementContext, st: msql.CreateMergeTable, columns: Sequence[ColumnMetadata]
) -> PartitionScheme:
    by = st.partition_by
    assert by is not None
    method = PartitionMethod(by.method)
    if by.column is not None:
        col = next(c for c in columns if c.name == by.column)
        key_type, type_name = col.type, col.type_name or sql_type_name(col.type)
        what = "column"
    else:
        assert by.expression is not None
        schema = T.StructType([T.StructField(c.name, spark_type(c.type), True) for c in columns])
        view = view_name("partition_probe")
        ctx.spark.createDataFrame([], schema).createOrReplaceTempView(view)
        try:
            types = {c.name: c.type_name or sql_type_name(c.type) for c in columns}
            expr_sql = by.expression.to_spark(tables={}, schema={view: types})
            field = ctx.spark.sql(f"SELECT {expr_sql} AS k FROM {view}").schema.fields[0]
        finally:
            ctx.spark.catalog.dropTempView(view)
        key_type, type_name = arrow_type(field.dataType), trino_name(field.dataType)
        what = "expression"
    if pa.types.is_floating(key_type) or not (
        pa.types.is_integer(key_type)
        or pa.types.is_decimal(key_type)
        or pa.types.is_string(key_type)
        or pa.types.is_temporal(key_type)
        or pa.types.is_boolean(key_type)
    ):
        raise MergekitError(
            ErrorCode.INVALID_PARTITION,
            f"CREATE MERGE TABLE: column type {type_name} not yet supported for the partition {what}",
        )
    return PartitionScheme(
        method=method,
        column=by.column,
        expression=by.expression.sql if by.expression is not None else None,
        expression_columns=tuple(sorted(n for _, n in by.expression.column_refs()))
        if by.expression is not None
        else (),
        key_type=key_type,
        key_type_name=type_name,
    )


def _partition_bounds(
    ctx: StatementContext, clause: msql.PartitionClause, scheme: PartitionScheme | None
) -> tuple[PartitionBounds, list[Any]]:
    """Evaluate the clause's constant expressions, cast to the partition key's type: on the driver tier when it
    can (:func:`_bounds_on_driver`), else in Spark."""
    exprs: tuple[msql.Expression, ...]
    if clause.kind == "range":
        exprs = tuple(e for e in (clause.minimum, clause.maximum) if e is not None)
    else:
        exprs = clause.values
    values: list[Any] = []
    on_driver = _bounds_on_driver(ctx, exprs, scheme) if exprs else None
    if on_driver is not None:
        values = on_driver
    elif exprs:
        query = (
            msql.cast_query(exprs, scheme.key_type_name)
            if scheme is not None
            else msql.Query(
                node=msql.parse_statement("SELECT " + ", ".join(e.sql for e in exprs)).node  # type: ignore[attr-defined]
            )
        )
        values = list(ctx.spark.sql(ctx.render(query)).collect()[0])
    if clause.kind == "range":
        it = iter(values)
        minimum = next(it) if clause.minimum is not None else None
        maximum = next(it) if clause.maximum is not None else None
        bounds = PartitionBounds(
            kind=PartitionKind.RANGE, minimum=minimum, maximum=maximum, with_nulls=clause.with_nulls
        )
    elif clause.kind == "values":
        distinct = [v for v in dict.fromkeys(values) if v is not None]
        bounds = PartitionBounds(kind=PartitionKind.VALUES, values=distinct, with_nulls=clause.with_nulls)
    else:
        bounds = PartitionBounds(kind=PartitionKind.NULL, with_nulls=True)
    return bounds, values


def _bounds_on_driver(
    ctx: StatementContext, exprs: tuple[msql.Expression, ...], scheme: PartitionScheme | None
) -> list[Any] | None:
    """The partition clause's constants cast to the key's type by the driver tier (no Spark job), as Spark's
    collect() of :func:`~mergekit.sql.cast_query` gives them; or None, and Spark evaluates them: the driver tier is
    off, a value outside the Arrow compiler's subset or one that fails (Spark words the error), a cast other than
    the store assignment's (``assignable``: an integer range-checked, a string), a key type whose value Spark returns
    otherwise (a timestamp's in the local zone, a decimal's, a bounded string's)."""
    if not driver_tier_enabled(ctx.properties) or scheme is None:
        return None
    key = arrow_type(spark_type(scheme.key_type))
    family = value_family(key)
    if family not in ("integer", "string", "date", "boolean") or (
        family == "string" and scheme.key_type_name.lower() != "varchar"
    ):
        return None
    try:
        arrays = compile_constants(exprs)
        if isinstance(arrays, str) or not all(assignable(a.type, key) for a in arrays):
            return None
        return [assign(a, 1, a.type, key)[0].as_py() for a in arrays]
    except MergekitError:
        return None


def _misfits(
    ctx: StatementContext,
    catalog: str,
    child: SchemaTableName,
    levels: Sequence[tuple[PartitionScheme, PartitionBounds]],
) -> list[int]:
    """Per level, how many of the child's current rows its bounds do not hold: on the driver tier when it reads
    the child (:func:`_misfits_on_driver`), else one Spark job."""
    counted = _misfits_on_driver(ctx, catalog, child, levels)
    if counted is not None:
        return counted
    table = ctx.resolve(msql.QualifiedName((catalog, child.schema, child.table)))
    visible = table.metadata.visible_columns
    handles = table.connector.get_metadata().get_column_handles(session=ctx.session(catalog), table_handle=table.handle)
    columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in visible]
    df = scan_table(ctx.spark, table.connector, ctx.session(catalog), table.handle, columns)
    types = {c.name: c.type_name or sql_type_name(c.type) for c in visible}
    keys = []
    for i, (scheme, _) in enumerate(levels):
        expr_sql = msql.parse_expression(scheme.key_expression).to_spark(tables={}, schema={"$rows": types})
        keys.append(f"CAST(({expr_sql}) AS {spark_sql_type(spark_type(scheme.key_type))}) AS `$k{i}`")
    counted = df.selectExpr(*keys).mapInArrow(_Misfits(tuple(b for _, b in levels)), "level int, n long")
    totals = {r["level"]: r["n"] for r in counted.groupBy("level").sum("n").withColumnRenamed("sum(n)", "n").collect()}
    return [int(totals.get(i, 0)) for i in range(len(levels))]


def _misfits_on_driver(
    ctx: StatementContext,
    catalog: str,
    child: SchemaTableName,
    levels: Sequence[tuple[PartitionScheme, PartitionBounds]],
) -> list[int] | None:
    """:func:`_misfits` read by the driver tier (``mergekit.execution.driver_query``: the child's splits in this
    process, no Spark job), or None when it declines. Keys that are columns of the child are read and matched
    against the bounds as the Spark job's task does (same Arrow types, same ``PartitionBounds.matches``); a key
    computed by an expression (``PARTITION BY ... USING``) is read here only to find the child empty."""
    if not driver_tier_enabled(ctx.properties):
        return None
    name = ".".join(_quoted(part) for part in (catalog, child.schema, child.table))
    keys = [bare_column(msql.parse_expression(scheme.key_expression)) for scheme, _ in levels]
    read = ", ".join(dict.fromkeys(_quoted(k) for k in keys if k)) if all(keys) else "count(*)"
    query = msql.parse_statement(f"SELECT {read} FROM {name}")
    assert isinstance(query, msql.Query)
    planned = plan_driver_query(ctx, query)
    result = run_driver_query(ctx, planned) if isinstance(planned, DriverQuery) else None
    if result is None or result.table is None:
        return None
    rows = result.table
    if not all(keys):
        return [0] * len(levels) if rows.column(0)[0].as_py() == 0 else None
    counts = []
    for (scheme, bounds), key in zip(levels, keys, strict=True):
        column = rows.column(next(i for i, n in enumerate(rows.column_names) if n.lower() == str(key).lower()))
        if column.type != arrow_type(spark_type(scheme.key_type)):
            return None  # the Spark job casts the column to the key's type: leave that to it
        counts.append(_misfit_count(bounds, column))
    return counts


def _misfit_count(bounds: PartitionBounds, keys: pa.Array | pa.ChunkedArray) -> int:
    """How many of ``keys`` (of the scheme's key type) ``bounds`` do not hold."""
    fits = bounds.matches(keys)
    return len(fits) - int(pc.sum(fits.cast(pa.int64())).as_py() or 0)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@attrs.frozen
class _Misfits:
    """On executors: per level, the number of rows whose key (column ``$k<level>``) the bounds do not hold."""

    bounds: tuple[PartitionBounds, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        counts = [0] * len(self.bounds)
        for batch in batches:
            for i, b in enumerate(self.bounds):
                counts[i] += _misfit_count(b, batch.column(i))
        yield pa.record_batch({"level": pa.array(range(len(counts)), pa.int32()), "n": pa.array(counts, pa.int64())})


DDL_STATEMENTS: Mapping[type, Any] = {
    msql.CreateTable: create_table,
    msql.DropTable: drop_table,
    msql.CreateSchema: create_schema,
    msql.ShowTables: show_tables,
    msql.ShowSchemas: show_schemas,
    msql.Describe: describe,
    msql.DescribeHistory: describe_history,
    msql.Truncate: truncate,
    msql.AlterTableAddColumn: add_column,
    msql.AlterTableDropColumn: drop_column,
    msql.AlterTableRenameColumn: rename_column,
    msql.AlterTableSetColumnType: set_column_type,
    msql.Call: call,
    msql.CreateFunction: create_function,
    msql.AlterTableAddConstraint: add_constraint,
    msql.AlterTableDropConstraint: drop_constraint,
    msql.AlterTableSetDefault: set_default,
    msql.ShowCreateTable: show_create_table,
    msql.CreateMergeTable: merge_table_ddl,
    msql.AlterTableSetPartition: merge_table_ddl,
    msql.AlterTableDropPartition: merge_table_ddl,
    msql.AlterTableSetProperties: set_properties,
    **VIEW_STATEMENTS,
}
"""Statement kind -> its handler: ``handler(ctx, statement) -> Result``."""


def run_ddl(ctx: StatementContext, st: msql.Statement) -> Result | None:
    """The result of a DDL or metadata statement, or None when ``st`` is not one."""
    handler = DDL_STATEMENTS.get(type(st))
    return handler(ctx, st) if handler is not None else None
