"""The connector and its factory: one ``Connector`` per catalog, over one database."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnHandle,
    Connector,
    ConnectorContext,
    ConnectorFactory,
    ConnectorIndexProvider,
    ConnectorMetadata,
    ConnectorPageSinkProvider,
    ConnectorPageSource,
    ConnectorPageSourceProvider,
    ConnectorSession,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
)

from ._catalog import Catalog, sql_handle
from ._db import DbConfig, parse_config
from ._metadata import SqlDbMetadata
from ._read import SqlIndexProvider, SqlPageSource, SqlSplit, SqlSplitManager
from ._row_level import SqlUpdatablePageSource
from ._staging import drop_abandoned_staging
from ._write import SqlPageSinkProvider


@attrs.frozen
class SqlPageSourceProvider(ConnectorPageSourceProvider):
    """Pickled to executors with the catalog's configuration (never a connection)."""

    cfg: DbConfig

    def create_page_source(
        self,
        *,
        session: ConnectorSession,
        split: ConnectorSplit,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
    ) -> ConnectorPageSource:
        if not isinstance(split, SqlSplit):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a sqldb split: {split!r}")
        h = sql_handle(table_handle)
        h.check_readable()
        if h.mode in ("delete", "update"):
            return SqlUpdatablePageSource(self.cfg, h, split, columns)
        return SqlPageSource(self.cfg, h, split, columns)


class SqlDbConnector(Connector):
    def __init__(self, cfg: DbConfig) -> None:
        self.config = cfg
        self.catalog = Catalog(cfg)
        self._metadata = SqlDbMetadata(self.catalog)
        self._splits = SqlSplitManager(self.catalog)

    def get_metadata(self) -> ConnectorMetadata:
        return self._metadata

    def get_split_manager(self) -> ConnectorSplitManager:
        return self._splits

    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        return SqlPageSourceProvider(self.config)

    def get_index_provider(self) -> ConnectorIndexProvider:
        return SqlIndexProvider(self.config)

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        return SqlPageSinkProvider()

    def shutdown(self) -> None:
        self.catalog.close()


class SqlDbConnectorFactory(ConnectorFactory):
    name = "sqldb"

    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
        connector = SqlDbConnector(parse_config(catalog_name, config))
        connector.catalog.rows("SELECT 1")  # a wrong URI fails when the catalog is created, not later
        drop_abandoned_staging(connector.catalog)  # what a driver that died mid-statement left behind
        return connector
