"""Views: ``CREATE [OR REPLACE] VIEW``, ``DROP VIEW``, ``SHOW VIEWS``, ``DESCRIBE`` of a view, and the expansion
of the views a statement reads (:func:`expand_statement_views`, run before anything else looks at its tables).

The connector stores a view's definition (``ConnectorViewDefinition``: the query's text, its columns, the
default catalog and schema when it was created); everything else happens here and in ``mergekit.sql``
(``expand_views``): a statement's view references become their queries, so the modality rules, binding and
planning see only tables and streams. ``CREATE VIEW`` checks the query once (parsed, views expanded, analysed
by Spark without running it) before the connector stores anything.
"""

from __future__ import annotations

import pyarrow as pa

from mergekit import sql as msql
from mergekit.catalogs import version_of
from mergekit.errors import ErrorCode, MergekitError
from mergekit.result import Result
from mergekit.spi import ConnectorViewDefinition, SchemaTableName, ViewColumn

from .context import StatementContext
from .types import trino_name

__all__ = [
    "expand_statement_views",
    "create_view",
    "drop_view",
    "show_views",
    "describe_view",
    "refuse_view",
    "VIEW_STATEMENTS",
]


def _find(
    ctx: StatementContext, name: msql.QualifiedName
) -> tuple[str, SchemaTableName, ConnectorViewDefinition | None]:
    """(catalog, name, the view's definition or None) of a dotted name."""
    catalog, table = ctx.catalogs.split_name(name)
    meta = ctx.catalogs.get(catalog).get_metadata()
    return catalog, table, meta.get_view(session=ctx.session(catalog), name=table)


def _lookup(ctx: StatementContext, ref: msql.TableRef) -> msql.ViewText | None:
    """What the expansion needs of the view a table reference names, or None when it names no view (a registered
    DataFrame, a table, a stream, or nothing the catalogs know: binding reports that later)."""
    if ".".join(ref.name.parts) in ctx.dataframes:
        return None
    try:
        catalog, name, definition = _find(ctx, ref.name)
    except MergekitError:
        return None  # CATALOG_NOT_FOUND, too many dots: reported by the table's resolution
    if definition is None:
        return None
    qualify = None
    defaults = (ctx.catalogs.default_catalog, ctx.catalogs.default_schema)
    if definition.catalog and definition.schema and (definition.catalog, definition.schema) != defaults:
        qualify = (definition.catalog, definition.schema)
    return msql.ViewText(f"{catalog}.{name}", definition.sql, tuple(c.name for c in definition.columns), qualify)


def _check(ctx: StatementContext, ref: msql.TableRef) -> None:
    """A table a view's query reads must exist (resolved now, and kept for binding)."""
    if ".".join(ref.name.parts) in ctx.dataframes or ref in ctx.resolved:
        return
    changes = (ref.changes_from, ref.changes_to) if ref.changes_from is not None else None
    ctx.resolved[ref] = ctx.resolve(ref.name, version=version_of(ref), changes=changes)


# Statements that change or describe a table by name: a view there is refused naming it (DML in Trino's words).
_TARGETS: dict[type, str] = {
    msql.Insert: "Inserting into views is not supported",
    msql.Update: "Updating views is not supported",
    msql.Delete: "Deleting from views is not supported",
    msql.Merge: "Merging into views is not supported",
    msql.Truncate: "Truncating views is not supported",
}
_TABLE_STATEMENTS: tuple[type, ...] = (
    msql.AlterTableAddColumn,
    msql.AlterTableDropColumn,
    msql.AlterTableRenameColumn,
    msql.AlterTableSetColumnType,
    msql.AlterTableAddConstraint,
    msql.AlterTableDropConstraint,
    msql.AlterTableSetDefault,
    msql.AlterTableSetProperties,
    msql.DescribeHistory,
    msql.ShowCreateTable,
)


def refuse_view(ctx: StatementContext, statement: msql.Statement) -> None:
    """``NOT_SUPPORTED`` naming the view when ``statement`` writes to a view (INSERT, UPDATE, DELETE, MERGE,
    TRUNCATE: a view is not updatable) or treats one as a table (ALTER TABLE, DESCRIBE HISTORY, SHOW CREATE
    TABLE)."""
    if isinstance(statement, msql.Explain):
        refuse_view(ctx, statement.statement)
        return
    message = _TARGETS.get(type(statement))
    name = getattr(statement, "target", None) if message is not None else None
    if isinstance(statement, msql.Truncate) or isinstance(statement, _TABLE_STATEMENTS):
        name = statement.name  # type: ignore[attr-defined]
    if not isinstance(name, msql.QualifiedName) or ".".join(name.parts) in ctx.dataframes:
        return
    try:
        catalog, table, definition = _find(ctx, name)
    except MergekitError:
        return
    if definition is None:
        return
    if message is not None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"{message}: '{catalog}.{table}' is a view")
    raise MergekitError(ErrorCode.NOT_SUPPORTED, f"'{catalog}.{table}' is a view, not a table")


def expand_statement_views(ctx: StatementContext, statement: msql.Statement) -> msql.Statement:
    """The statement with the views it reads replaced by their queries (itself when it reads none); a statement
    that writes to a view is refused (:func:`refuse_view`). Every statement goes through this before it runs."""
    if isinstance(statement, msql.CreateView | msql.DropView | msql.ShowViews):
        return statement
    refuse_view(ctx, statement)
    return msql.expand_views(statement, lambda ref: _lookup(ctx, ref), lambda ref: _check(ctx, ref))


def create_view(ctx: StatementContext, st: msql.CreateView) -> Result:
    """CREATE VIEW: the query is checked (views expanded, analysed by Spark) before anything is stored."""
    catalog, name, existing = _find(ctx, st.name)
    full = f"{catalog}.{name}"
    meta = ctx.catalogs.get(catalog).get_metadata()
    session = ctx.session(catalog)
    if st.if_not_exists and (existing is not None or meta.get_table_handle(session=session, table=name) is not None):
        return Result(statement="CREATE VIEW")  # (Spark's IF NOT EXISTS: any object of that name)
    if existing is not None and not st.replace:
        raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"View '{full}' already exists")
    if meta.get_table_handle(session=session, table=name) is not None:
        raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{full}' already exists")

    def lookup(ref: msql.TableRef) -> msql.ViewText | None:
        found = _lookup(ctx, ref)
        if found is not None and found.name == full:  # OR REPLACE v AS ... FROM v: the new v would read itself
            raise MergekitError(ErrorCode.VIEW_IS_RECURSIVE, f"View '{full}' is recursive: it reads itself")
        return found

    query = msql.expand_views(st.query, lookup, lambda ref: _check(ctx, ref))
    assert isinstance(query, msql.Query)
    fields = ctx.spark.sql(ctx.render(query)).schema.fields  # analysed, not run
    names = [f.name.lower() for f in fields]
    if st.columns is not None:
        if len(st.columns) != len(fields):
            raise MergekitError(
                ErrorCode.INVALID_VIEW,
                f"View '{full}' lists {len(st.columns)} column names but its query has {len(fields)} columns",
            )
        names = list(st.columns)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column name '{dupes[0]}' specified more than once")
    definition = ConnectorViewDefinition(
        sql=msql.stored_view_sql(st.query, st.sql, name.table, st.columns),
        columns=[ViewColumn(name=n, type=trino_name(f.dataType)) for n, f in zip(names, fields, strict=True)],
        comment=st.comment,
        catalog=ctx.catalogs.default_catalog,
        schema=ctx.catalogs.default_schema,
    )
    meta.create_view(session=session, name=name, definition=definition, replace=st.replace)
    return Result(statement="CREATE VIEW")


def drop_view(ctx: StatementContext, st: msql.DropView) -> Result:
    catalog, name, existing = _find(ctx, st.name)
    meta = ctx.catalogs.get(catalog).get_metadata()
    session = ctx.session(catalog)
    if existing is None:
        handle = meta.get_table_handle(session=session, table=name)
        if handle is not None:
            stream = meta.get_table_metadata(session=session, table_handle=handle).stream is not None
            what = "a stream: use DROP STREAM" if stream else "a table: use DROP TABLE"
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"'{catalog}.{name}' is {what}")
        if st.if_exists:
            return Result(statement="DROP VIEW")
        raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"View '{catalog}.{name}' does not exist")
    meta.drop_view(session=session, name=name)
    return Result(statement="DROP VIEW")


def show_views(ctx: StatementContext, st: msql.ShowViews) -> Result:
    parts = st.schema.parts if st.schema is not None else ()
    catalog = parts[0] if len(parts) == 2 else ctx.catalogs.default_catalog
    schema = parts[-1] if parts else ctx.catalogs.default_schema
    names = ctx.catalogs.get(catalog).get_metadata().list_views(session=ctx.session(catalog), schema=schema)
    views = sorted(n.table for n in names if st.like is None or msql.like_matches(n.table, st.like, st.escape))
    return Result(statement="SHOW VIEWS", table=pa.table({"View": pa.array(views, pa.string())}))


def describe_view(ctx: StatementContext, name: msql.QualifiedName) -> Result | None:
    """DESCRIBE of a view: its columns as stored at CREATE VIEW; None when ``name`` is no view."""
    try:
        _, _, definition = _find(ctx, name)
    except MergekitError:
        return None
    if definition is None:
        return None
    table = pa.table(
        {
            "Column": [c.name for c in definition.columns],
            "Type": [c.type for c in definition.columns],
            "Extra": ["" for _ in definition.columns],
            "Comment": [c.comment or "" for c in definition.columns],
        }
    )
    return Result(statement="DESCRIBE", table=table)


VIEW_STATEMENTS = {
    msql.CreateView: create_view,
    msql.DropView: drop_view,
    msql.ShowViews: show_views,
}
"""Statement kind -> its handler: ``handler(ctx, statement) -> Result``."""
