"""Views in statements: the expansion of every view a statement reads (the view statements themselves are read
by ``_view_statements``).

*Expansion* (:func:`expand_views`) replaces every table reference that names a view by the view's query, as a
derived table aliased with the view's name (or the alias the reference gives), its output columns renamed to the
view's columns. It runs before anything else looks at the statement's tables (the modality rules of seed 001,
binding, planning), so a view over a stream is a stream and a view over a view expands again. What a name is
comes from the caller's ``lookup`` (the catalogs): :class:`ViewText` for a view, None for anything else. A view
reached again while it is being expanded is ``VIEW_IS_RECURSIVE``; a stored query that no longer parses, or
that reads a table ``check`` refuses, is ``INVALID_VIEW`` naming the view (Trino's "Failed analyzing stored
view").

Renaming keeps the forms the streaming rules can see through: when the view's query is a single SELECT without
``*`` and without ORDER BY, its projections are aliased in place (``SELECT rowtime AS ts ...``), so
monotonicity follows the columns; the query of a view with a column list in any other form is stored wrapped
(``SELECT * FROM (query) AS v(col, ...)``, :func:`stored_view_sql`). A ``*`` in a view's query yields the
columns its tables have when the view is used (a column added later appears; no "stale view" check).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql import model as _model
from mergekit.sql.model import CreateView, Expression, Query, Relation, Statement
from mergekit.sql.names import TableRef
from mergekit.sql.references import identifier_name, real_tables, table_ref_of

from .parser import parse_statement

__all__ = ["ViewText", "expand_views", "stored_view_sql"]


def _not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


@attrs.frozen
class ViewText:
    """A view as the expansion needs it: ``name`` (``catalog.schema.view``, for messages and to find cycles),
    its query's text, its output column names, and ``qualify``: the (catalog, schema) that the query's partly
    qualified table names resolve against, or None to leave them as written (they resolve against the
    statement's defaults)."""

    name: str
    sql: str
    columns: tuple[str, ...]
    qualify: tuple[str, str] | None = None


Lookup = Callable[[TableRef], "ViewText | None"]


def expand_views(statement: Statement, lookup: Lookup, check: Callable[[TableRef], None] | None = None) -> Statement:
    """``statement`` with every view it reads replaced by its query (the same object when it reads none).
    ``lookup`` tells whether a table reference names a view; ``check`` (optional) is called with every table
    reference a view's query reads that is not a view, and may raise (``TABLE_NOT_FOUND`` ...), which fails the
    statement with ``INVALID_VIEW`` naming the view. ``CREATE VIEW``'s own query is left alone."""
    return _Expander(lookup, check).value(statement)


class _Expander:
    def __init__(self, lookup: Lookup, check: Callable[[TableRef], None] | None) -> None:
        self._lookup = lookup
        self._check = check
        self._views: dict[TableRef, ViewText | None] = {}
        self._bodies: dict[str, exp.Expression] = {}

    def view(self, ref: TableRef) -> ViewText | None:
        if ref.is_change_feed:
            return None
        if ref not in self._views:
            self._views[ref] = self._lookup(attrs.evolve(ref, version=None, timestamp=None))
        return self._views[ref]

    def value(self, value: Any) -> Any:
        if isinstance(value, CreateView):
            return value
        if isinstance(value, Query):
            node = self.tree(value.node, ())
            return value if node is value.node else attrs.evolve(value, node=node)
        if isinstance(value, Expression):
            node = self.tree(value.node, ())
            return value if node is value.node else Expression(node)
        if isinstance(value, Relation):
            return self.relation(value)
        if isinstance(value, tuple):
            items = tuple(self.value(v) for v in value)
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if attrs.has(type(value)) and type(value).__module__ == _model.__name__:
            changes = {}
            for field in attrs.fields(type(value)):
                old = getattr(value, field.name)
                new = self.value(old)
                if new is not old:
                    changes[field.name] = new
            return attrs.evolve(value, **changes) if changes else value
        return value

    def relation(self, relation: Relation) -> Relation:
        node = self.tree(relation.node, ())
        if node is relation.node:
            return relation
        table = relation.table if isinstance(node, exp.Table) else None
        return attrs.evolve(relation, node=node, table=table)

    def tree(
        self, node: exp.Expression, stack: tuple[str, ...], qualify: tuple[str, str] | None = None
    ) -> exp.Expression:
        """``node`` with its views expanded (``node`` itself when it reads none); ``stack``: the views being
        expanded around it (innermost last); ``qualify``: the default catalog and schema of its names."""
        if qualify is not None:
            node = _qualified(node, qualify)
        tables = real_tables(node)
        refs = [table_ref_of(t) for t in tables]
        if stack and self._check is not None:
            for ref in refs:
                if self.view(ref) is None:
                    self._checked(ref, stack[-1])
        if not any(self.view(ref) is not None for ref in refs):
            return node
        if qualify is None:
            node = node.copy()
            tables = real_tables(node)
        for table in tables:
            ref = table_ref_of(table)
            view = self.view(ref)
            if view is None:
                continue
            if view.name in stack:
                chain = " -> ".join((*stack[stack.index(view.name) :], view.name))
                raise MergekitError(ErrorCode.VIEW_IS_RECURSIVE, f"View '{view.name}' is recursive: {chain}")
            _refuse_table_parts(table, view.name)
            body = self.tree(self._body(view, stack), (*stack, view.name), view.qualify)
            derived = _derived(body, view, table, ref)
            if table is node:  # the tree is the reference itself (a MERGE source)
                node = derived
            else:
                table.replace(derived)
        return node

    def _checked(self, ref: TableRef, view: str) -> None:
        assert self._check is not None
        try:
            self._check(ref)
        except MergekitError as exc:
            if exc.code in (ErrorCode.TABLE_NOT_FOUND, ErrorCode.SCHEMA_NOT_FOUND, ErrorCode.CATALOG_NOT_FOUND):
                raise MergekitError(
                    ErrorCode.INVALID_VIEW, f"Failed analyzing stored view '{view}': {exc.message}"
                ) from exc
            raise

    def _body(self, view: ViewText, stack: tuple[str, ...]) -> exp.Expression:
        if view.name not in self._bodies:
            try:
                query = parse_statement(view.sql)
            except MergekitError as exc:
                raise MergekitError(
                    ErrorCode.INVALID_VIEW, f"Failed analyzing stored view '{view.name}': {exc.message}"
                ) from exc
            if not isinstance(query, Query):
                raise MergekitError(ErrorCode.INVALID_VIEW, f"Stored view '{view.name}' is not a query")
            self._bodies[view.name] = query.node
        return self._bodies[view.name].copy()


def _qualified(node: exp.Expression, qualify: tuple[str, str]) -> exp.Expression:
    """A copy of ``node`` whose table names of one or two parts are completed with the catalog and schema."""
    node = node.copy()
    catalog, schema = qualify
    for table in real_tables(node):
        if not table.name:
            continue  # table_changes(...): its argument names the table as written
        if not table.args.get("db"):
            table.set("db", exp.to_identifier(schema, quoted=True))
        if not table.args.get("catalog"):
            table.set("catalog", exp.to_identifier(catalog, quoted=True))
    return node


_TABLE_PARTS = {"this", "db", "catalog", "alias", "joins"}


def _refuse_table_parts(table: exp.Table, view: str) -> None:
    if table.args.get("version") is not None:
        raise _not_supported(f"Time travel (FOR VERSION/TIMESTAMP AS OF) on view '{view}' is not supported")
    for key, value in table.args.items():
        if key not in _TABLE_PARTS and value not in (None, False, [], ""):
            raise _not_supported(f"{key.upper()} on view '{view}' is not supported")


def _derived(body: exp.Expression, view: ViewText, table: exp.Table, ref: TableRef) -> exp.Expression:
    """The derived table standing for ``table`` (a reference to ``view``): the renamed query, aliased as the
    reference was (or with the view's name), keeping the joins a joined MERGE source hangs on it."""
    alias = table.args.get("alias")
    alias = alias.copy() if alias is not None else exp.TableAlias(this=exp.to_identifier(ref.name.name))
    sub = exp.Subquery(this=_renamed(body, view), alias=alias)
    joins = table.args.get("joins")
    if joins:
        sub.set("joins", [j.copy() for j in joins])
    return sub


def _output_name(projection: exp.Expression) -> str | None:
    if isinstance(projection, exp.Alias):
        return identifier_name(projection.args["alias"])
    if isinstance(projection, exp.Column) and isinstance(projection.this, exp.Identifier):
        return identifier_name(projection.this)
    return None


def _renamable(body: exp.Expression, count: int) -> bool:
    """Whether ``body``'s output columns can be renamed in place: a single SELECT without ``*`` or ORDER BY (whose
    keys may name an output) with ``count`` projections."""
    if not isinstance(body, exp.Select) or body.args.get("order") is not None:
        return False
    projections = body.expressions
    starred = any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star) for p in projections)
    return not starred and len(projections) == count


def _renamed(body: exp.Expression, view: ViewText) -> exp.Expression:
    """``body`` with its output columns named ``view.columns``, aliasing the projections in place (so the
    streaming rules see the monotonic columns through the new names). Any other form of query is used as it is:
    its names are the view's already (``stored_view_sql`` wraps a query whose columns a column list renames), and
    a ``*`` yields the columns its tables have now."""
    columns = view.columns
    if not _renamable(body, len(columns)):
        return body
    names = [_output_name(p) for p in body.expressions]
    if names != list(columns):
        body.set(
            "expressions",
            [
                p if name == column else exp.alias_(p.unalias().copy(), column, quoted=True)
                for p, name, column in zip(body.expressions, names, columns, strict=True)
            ],
        )
    return body


def stored_view_sql(query: Query, sql: str, name: str, columns: tuple[str, ...] | None) -> str:
    """The text to store for ``CREATE VIEW name (columns) AS sql``: ``sql`` itself when there is no column list or
    when the expansion renames the query's columns in place; else ``SELECT * FROM (sql) AS name(columns)``, with
    ``sql`` kept verbatim inside."""
    if columns is None or _renamable(query.node, len(columns)):
        return sql
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    return f'SELECT * FROM (\n{sql}\n) AS "{name.replace(chr(34), chr(34) * 2)}"({quoted})'
