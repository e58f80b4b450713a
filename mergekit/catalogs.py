"""Catalogs and names (Trino's ``MetadataManager``): which connector serves a catalog, what a dotted table name
means, and the table a name resolves to. Pure Python: no Spark here.

A name resolves as ``table``, ``schema.table`` or ``catalog.schema.table`` against the default catalog and schema.
Resolution asks the catalog's connector for a table handle (at a version, or the change feed between two) and the
table's metadata, once per table and statement.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from mergekit import plugins
from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    Connector,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    SchemaTableName,
    TableVersion,
)

__all__ = ["Catalogs", "ResolvedTable", "default_connector", "version_of"]


@attrs.frozen(kw_only=True)
class ResolvedTable:
    """A table a statement names: its catalog, connector, handle and metadata."""

    catalog: str
    name: SchemaTableName
    connector: Connector
    handle: ConnectorTableHandle
    metadata: ConnectorTableMetadata

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.name}"


class Catalogs:
    """The engine's catalogs, by lower-cased name, with the default catalog and schema names resolve against."""

    def __init__(self, *, default_catalog: str = "lake", default_schema: str = "default") -> None:
        self.default_catalog = default_catalog
        self.default_schema = default_schema
        self._connectors: dict[str, Connector] = {}
        self._specs: dict[str, Mapping[str, Any]] = {}

    def add(self, name: str, connector: Connector, spec: Mapping[str, Any] | None = None) -> Connector:
        """Serve catalog ``name`` by ``connector``; ``spec``, the configuration it was created from, lets another
        process (the Python worker of a streaming source) create the same connector."""
        self._connectors[name.lower()] = connector
        if spec is not None:
            self._specs[name.lower()] = dict(spec)
        else:
            self._specs.pop(name.lower(), None)
        return connector

    def spec(self, name: str) -> Mapping[str, Any] | None:
        """The configuration catalog ``name`` was created from; None for a catalog given as a connector."""
        return self._specs.get(name.lower())

    def get(self, name: str) -> Connector:
        try:
            return self._connectors[name.lower()]
        except KeyError:
            raise MergekitError(ErrorCode.CATALOG_NOT_FOUND, f"Catalog '{name}' does not exist") from None

    def all(self) -> Mapping[str, Connector]:
        return dict(self._connectors)

    def close(self) -> None:
        for connector in self._connectors.values():
            connector.shutdown()

    def split_name(self, name: msql.QualifiedName) -> tuple[str, SchemaTableName]:
        """``(catalog, schema.table)`` of a dotted name."""
        parts = name.parts
        if len(parts) > 3:
            raise MergekitError(ErrorCode.SYNTAX_ERROR, f"Too many dots in table name: {name.written}")
        catalog = parts[0] if len(parts) == 3 else self.default_catalog
        schema = parts[-2] if len(parts) >= 2 else self.default_schema
        quoted_schema = name.quoted_part(-2) if len(parts) >= 2 else None
        table = SchemaTableName(
            schema=schema, table=parts[-1], quoted_schema=quoted_schema, quoted_table=name.quoted_part(-1)
        )
        return catalog, table

    def resolve(
        self,
        name: msql.QualifiedName,
        session_for: Callable[[str], ConnectorSession] | None = None,
        *,
        version: TableVersion | None = None,
        changes: tuple[int, int | None] | None = None,
    ) -> ResolvedTable:
        """The table ``name`` denotes (at ``version``, or its change feed ``changes`` = (from, to)); TABLE_NOT_FOUND
        if the connector has no such table. ``session_for`` gives the statement's session of a catalog."""
        catalog, table = self.split_name(name)
        connector = self.get(catalog)
        session = session_for(catalog) if session_for is not None else ConnectorSession(catalog=catalog)
        metadata = connector.get_metadata()
        if changes is not None:
            handle = metadata.get_changes_handle(
                session=session, table=table, from_version=changes[0], to_version=changes[1]
            )
        else:
            handle = metadata.get_table_handle(session=session, table=table, version=version)
        if handle is None:
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{_written(catalog, table)}' does not exist")
        meta = metadata.get_table_metadata(session=session, table_handle=handle)
        return ResolvedTable(catalog=catalog, name=table, connector=connector, handle=handle, metadata=meta)


def _written(catalog: str, table: SchemaTableName) -> str:
    """``catalog.schema.table`` as the statement wrote it (quoted parts in their spelling), for messages."""
    return f"{catalog}.{table.quoted_schema or table.schema}.{table.quoted_table or table.table}"


def connector_from_spec(name: str, spec: Connector | Mapping[str, Any]) -> Connector:
    """A catalog's connector: given as it is, or created by the installed factory its config names."""
    if isinstance(spec, Connector):
        return spec
    config = dict(spec)
    connector_name = config.pop("connector", None)
    if not connector_name:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Catalog '{name}' does not name a connector")
    return plugins.create_connector(str(connector_name), catalog_name=name, config=config)


def default_connector() -> str:
    """The connector ``Engine.local()`` uses: partitioned (merge tables over journal tables) when installed."""
    available = plugins.available()
    if "partitioned" in available:
        return "partitioned"  # plain tables through its base (the journal) plus merge tables (seed 004)
    return "journal" if "journal" in available else "memory"


def version_of(ref: msql.TableRef) -> TableVersion | None:
    """The time-travel clause of a table reference (``FOR VERSION AS OF n`` / ``FOR TIMESTAMP AS OF ts``)."""
    if ref.version is not None:
        return TableVersion(version=ref.version)
    if ref.timestamp is not None:
        text = re.sub(r"^(?i:timestamp)\s*", "", ref.timestamp).strip().strip("'")
        text = re.sub(r"^CAST\('(.*)' AS .*\)$", r"\1", text)
        try:
            ts = dt.datetime.fromisoformat(text.replace(" UTC", "+00:00"))
        except ValueError as exc:
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS, f"Invalid timestamp for time travel: {ref.timestamp}"
            ) from exc
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return TableVersion(timestamp=ts)
    return None
