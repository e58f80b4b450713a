"""Views in the journal catalog: ``mk_views`` holds one row per view (schema, name, the definition as JSON, a
version counting its replacements, and when it was created or last replaced).

Views share the namespace of tables and streams (and of the ``<table>_journal`` names): ``create_view`` refuses
a name a table answers to, and ``create_table`` (``_ddl``) a name a view has, each checking inside the write
transaction that inserts the row, so a concurrent CREATE of the other kind cannot slip in between. The engine
parses and expands the stored SQL; this module only stores it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ConnectorSession, ConnectorViewDefinition, SchemaTableName, ViewColumn

from ._catalog import Cursor
from ._snapshots import SnapshotMetadata, _now_us

__all__ = ["ViewStoreMetadata", "view_named"]


def _to_json(definition: ConnectorViewDefinition) -> str:
    return json.dumps(
        {
            "sql": definition.sql,
            "columns": [[c.name, c.type, c.comment] for c in definition.columns],
            "comment": definition.comment,
            "catalog": definition.catalog,
            "schema": definition.schema,
        }
    )


def _from_json(text: str) -> ConnectorViewDefinition:
    d: dict[str, Any] = json.loads(text)
    return ConnectorViewDefinition(
        sql=d["sql"],
        columns=[ViewColumn(name=n, type=t, comment=c) for n, t, c in d["columns"]],
        comment=d.get("comment"),
        catalog=d.get("catalog"),
        schema=d.get("schema"),
    )


def view_named(cur: Cursor, name: SchemaTableName) -> str | None:
    """Inside a catalog transaction: the stored definition (JSON) of view ``name``, or None."""
    rows = cur.execute(
        "SELECT definition FROM mk_views WHERE schema_name = ? AND view_name = ?", (name.schema, name.table)
    )
    return str(rows[0][0]) if rows else None


class ViewStoreMetadata(SnapshotMetadata):
    """``create_view``, ``get_view``, ``drop_view`` and ``list_views`` (part of ``JournalMetadata``)."""

    def create_view(
        self,
        *,
        session: ConnectorSession,
        name: SchemaTableName,
        definition: ConnectorViewDefinition,
        replace: bool,
    ) -> None:
        """Insert (or, with ``replace``, overwrite) the view's row, in one write transaction that also checks
        that no table or stream answers to the name (``TABLE_ALREADY_EXISTS``)."""
        text = _to_json(definition)
        with self.catalog.write() as cur:
            if self._lookup(cur, name) is not None:
                raise MergekitError(
                    ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{self.catalog_name}.{name}' already exists"
                )
            rows = cur.execute(
                "SELECT version FROM mk_views WHERE schema_name = ? AND view_name = ?", (name.schema, name.table)
            )
            if rows and not replace:
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"View '{self.catalog_name}.{name}' already exists")
            if rows:
                cur.execute(
                    "UPDATE mk_views SET definition = ?, version = ?, created_at = ? "
                    "WHERE schema_name = ? AND view_name = ?",
                    (text, int(rows[0][0]) + 1, _now_us(), name.schema, name.table),
                )
            else:
                cur.execute(
                    "INSERT INTO mk_views (schema_name, view_name, definition, version, created_at) "
                    "VALUES (?, ?, ?, 1, ?)",
                    (name.schema, name.table, text, _now_us()),
                )

    def get_view(self, *, session: ConnectorSession, name: SchemaTableName) -> ConnectorViewDefinition | None:
        """The stored definition, or None (one indexed catalog read)."""
        with self.catalog.read() as cur:
            text = view_named(cur, name)
        return _from_json(text) if text is not None else None

    def drop_view(self, *, session: ConnectorSession, name: SchemaTableName) -> None:
        """Delete the view's row (``TABLE_NOT_FOUND`` when a concurrent DROP VIEW got there first)."""
        with self.catalog.write() as cur:
            if view_named(cur, name) is None:
                raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"View '{self.catalog_name}.{name}' does not exist")
            cur.execute("DELETE FROM mk_views WHERE schema_name = ? AND view_name = ?", (name.schema, name.table))

    def list_views(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        with self.catalog.read() as cur:
            if schema is None:
                rows = cur.execute("SELECT schema_name, view_name FROM mk_views")
            else:
                rows = cur.execute("SELECT schema_name, view_name FROM mk_views WHERE schema_name = ?", (schema,))
        return [SchemaTableName(schema=s, table=t) for s, t in sorted(rows)]
