"""Views: named queries a connector stores (Trino's ``createView`` / ``getView`` / ``dropView`` / ``listViews``).

A view is a catalog object whose content is a query. The connector only *stores* it: the SQL text, the columns
it had when it was created, an optional comment, and the catalog and schema its unqualified names were written
against. The engine does everything else: it checks the query at ``CREATE VIEW`` (parsed and analysed once; a
query that does not analyse creates nothing), and where a statement names the view it puts the query in its
place, as a sub-query aliased with the view's name (so a view over a stream is a stream, and ``SELECT STREAM *
FROM v`` works: seed 001's closure property). Views therefore need no read path of their own.

Names: views share the namespace of tables (and streams) in a schema, as in Trino. ``create_view`` must refuse
a name a table has, and ``create_table`` a name a view has, with ``TABLE_ALREADY_EXISTS``, atomically with the
creation (in the same catalog transaction); ``get_table_handle`` returns None for a view and ``get_view``
returns None for a table, which is how the engine tells them apart (``DROP TABLE v`` and ``DROP VIEW t`` are
refused naming the right statement).

Every method runs on the driver, in the engine's process, once per use: ``get_view`` once per table name a
statement reads (before anything else about it), so it must be cheap (a catalog lookup). The defaults make a
connector without views keep working: ``get_view`` answers None and ``list_views`` nothing, and ``create_view``
and ``drop_view`` raise ``NOT_SUPPORTED`` with :data:`VIEWS_MESSAGE`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from mergekit.errors import ErrorCode, MergekitError

if TYPE_CHECKING:
    from ._model import ConnectorSession, SchemaTableName

__all__ = ["ViewColumn", "ConnectorViewDefinition", "ViewMetadata", "VIEWS_MESSAGE"]

# What a connector that cannot store views raises from create_view and drop_view (the defaults below).
VIEWS_MESSAGE = "This connector does not support views"


@attrs.frozen(kw_only=True)
class ViewColumn:
    """One output column of a view as it was when the view was created: ``name`` (lower case unless quoted)
    and ``type``, the SQL type name (``bigint``, ``varchar``, ``timestamp(6)``, ``decimal(10,2)``; see
    :func:`~mergekit.spi.parse_sql_type`). ``comment`` is optional. Trino's ``ConnectorViewDefinition.ViewColumn``."""

    name: str
    type: str
    comment: str | None = None


def _view_columns(values: Iterable[ViewColumn]) -> tuple[ViewColumn, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True)
class ConnectorViewDefinition:
    """What ``CREATE VIEW`` asks a connector to store, and what ``get_view`` gives back unchanged.

    ``sql``: the view's query as the user wrote it (after ``AS``), in mergekit's SQL dialect (with a column list
    the engine may store it wrapped: ``SELECT * FROM (query) AS v(a, b)``); the engine parses it again at each
    use, so the connector must return it byte for byte. ``columns``: the view's output
    columns in order (the names of the column list ``CREATE VIEW v (a, b) AS ...`` when one was given, else the
    query's), which the engine applies to the query's output at each use. ``comment``: ``COMMENT '...'``, or
    None. ``catalog`` and ``schema``: the default catalog and schema in effect at ``CREATE VIEW``, against which
    the query's partly qualified table names resolve at every use (Trino's semantics: a view reads the same
    tables whoever uses it); None when the engine recorded none.

    Frozen and picklable; a connector stores its fields (e.g. as a JSON value), not this object.
    """

    sql: str
    columns: tuple[ViewColumn, ...] = attrs.field(converter=_view_columns)
    comment: str | None = None
    catalog: str | None = None
    schema: str | None = None


class ViewMetadata:
    """The view methods of :class:`~mergekit.spi.ConnectorMetadata` (a base class of it; override them on the
    connector's metadata). ``get_view`` and ``list_views`` default to "no views"; ``create_view`` and
    ``drop_view`` raise ``NOT_SUPPORTED`` with :data:`VIEWS_MESSAGE`."""

    def create_view(
        self,
        *,
        session: ConnectorSession,
        name: SchemaTableName,
        definition: ConnectorViewDefinition,
        replace: bool,
    ) -> None:
        """``CREATE [OR REPLACE] VIEW``, once on the driver, after the engine analysed the query (so
        ``definition`` is valid now). Store the definition so that :meth:`get_view` returns it from now on.

        ``replace`` (``OR REPLACE``): an existing view of that name is replaced, in one catalog transaction.
        Otherwise an existing view is ``TABLE_ALREADY_EXISTS`` (the engine handles ``IF NOT EXISTS`` through
        :meth:`get_view` first). A table or stream of that name is ``TABLE_ALREADY_EXISTS`` in either case: the
        check belongs in the same transaction as the insert, so a concurrent ``CREATE TABLE`` cannot slip in.
        A schema the connector does not know may be refused with ``SCHEMA_NOT_FOUND`` or created, as
        ``create_table`` does. Default: NOT_SUPPORTED (:data:`VIEWS_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, VIEWS_MESSAGE)

    def get_view(self, *, session: ConnectorSession, name: SchemaTableName) -> ConnectorViewDefinition | None:
        """The stored definition of view ``name``, or None when there is no view of that name (a table of that
        name is not a view: None).

        Called on the driver for every table name a statement reads or writes, before the engine asks for a
        table handle, and by ``DROP VIEW``, ``DROP TABLE``, ``DESCRIBE`` and ``SHOW VIEWS``: a catalog lookup,
        no I/O on data. Default: None (the connector has no views)."""
        return None

    def drop_view(self, *, session: ConnectorSession, name: SchemaTableName) -> None:
        """``DROP VIEW``, once on the driver, after :meth:`get_view` found the view (the engine reports
        ``TABLE_NOT_FOUND`` or skips ``IF EXISTS`` itself). Views that read this one are not dropped: they fail
        with ``INVALID_VIEW`` when next used. Afterwards :meth:`get_view` must return None.
        Default: NOT_SUPPORTED (:data:`VIEWS_MESSAGE`)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, VIEWS_MESSAGE)

    def list_views(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """The views of ``schema`` (all schemas when None), in any order, for ``SHOW VIEWS`` and ``SHOW
        TABLES`` (which lists tables and views, as Trino's does). Called on the driver once per statement; an
        unknown schema yields an empty list. Default: none."""
        return ()
