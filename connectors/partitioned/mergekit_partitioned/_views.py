"""Views and table properties of the partitioned connector: both the base connector's.

A view is stored by the base (the journal's ``mk_views``); this layer only keeps the one namespace: a view may not
take the name of a merge table (nor of a system table), and ``CREATE MERGE TABLE`` may not take a view's name
(``_ddl``). ``ALTER TABLE ... SET PROPERTIES`` goes to the base for its tables; a merge table has no properties
to set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mergekit.errors import ErrorCode
from mergekit.spi import (
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorViewDefinition,
    SchemaTableName,
)

from ._handles import MergeTableHandle, SystemTableHandle
from ._tables import TablesMetadata, _err

__all__ = ["ViewsMetadata"]


class ViewsMetadata(TablesMetadata):
    """``create_view``, ``get_view``, ``drop_view``, ``list_views`` and ``set_table_properties`` (part of
    ``PartitionedMetadata``)."""

    def create_view(
        self,
        *,
        session: ConnectorSession,
        name: SchemaTableName,
        definition: ConnectorViewDefinition,
        replace: bool,
    ) -> None:
        """The base's, unless a merge table has the name (``TABLE_ALREADY_EXISTS``)."""
        if name in {m.name for m in self.registry.merge_tables()}:
            raise _err(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists")
        self.bm.create_view(session=session, name=name, definition=definition, replace=replace)

    def get_view(self, *, session: ConnectorSession, name: SchemaTableName) -> ConnectorViewDefinition | None:
        """The base's."""
        return self.bm.get_view(session=session, name=name)

    def drop_view(self, *, session: ConnectorSession, name: SchemaTableName) -> None:
        """The base's."""
        self.bm.drop_view(session=session, name=name)

    def list_views(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """The base's."""
        return self.bm.list_views(session=session, schema=schema)

    def set_table_properties(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, properties: Mapping[str, Any]
    ) -> None:
        """The base's for its tables (a child of a merge table too); a merge or system table: the SPI default."""
        if isinstance(table_handle, MergeTableHandle | SystemTableHandle):
            super().set_table_properties(session=session, table_handle=table_handle, properties=properties)
        self.bm.set_table_properties(session=session, table_handle=self._unwrap(table_handle), properties=properties)
