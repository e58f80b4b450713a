"""``PartitionedConnector``: merge tables (seed 004) layered over a base connector (the journal by default).

Configuration (catalog options): ``base`` names the base connector (an installed ``mergekit.connectors``
entry point or a registered factory, default ``journal``, created through the engine's ``ConnectorContext``)
or is a ``Connector`` instance; ``partition_catalog`` is the SQLite file of
the partition registry (default ``<warehouse>/_partitions.sqlite``). Every other option goes to the base, which
refuses one it does not know; ``warehouse`` is the base's too unless the base refuses it by name
(``details["option"]``, as the memory connector does: it keeps no files).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    Connector,
    ConnectorContext,
    ConnectorFactory,
    ConnectorIndexProvider,
    ConnectorMetadata,
    ConnectorPageSinkProvider,
    ConnectorPageSourceProvider,
    ConnectorSplitManager,
    PropertyMetadata,
)

from ._index import PartitionedIndexProvider
from ._io import PartitionedPageSinkProvider, PartitionedPageSourceProvider
from ._metadata import PartitionedMetadata, PartitionedSplitManager
from ._registry import Registry

__all__ = ["PartitionedConnector", "PartitionedConnectorFactory"]


def _base_connector(catalog_name: str, base: Any, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
    if isinstance(base, Connector):
        return base
    name = str(base)
    if name == "partitioned":
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, "The partitioned connector cannot be its own base")
    # The engine finds, loads and creates the base as it would a catalog's connector (registered factories
    # included); its CONNECTOR_NOT_FOUND / PLUGIN_LOAD_ERROR name the connector.
    return context.create_connector(name, catalog_name=catalog_name, config=config)


class PartitionedConnector(Connector):
    def __init__(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> None:
        options = dict(config)
        base = options.pop("base", "journal")
        registry_path = options.pop("partition_catalog", None)
        warehouse = str(options.get("warehouse") or "./warehouse")
        if registry_path is None:
            if "://" in warehouse and not warehouse.startswith("file://"):
                raise MergekitError(
                    ErrorCode.INVALID_ARGUMENTS,
                    "partition_catalog: a remote warehouse needs an explicit local path for the partition registry",
                )
            registry_path = os.path.join(warehouse.removeprefix("file://"), "_partitions.sqlite")
        try:
            self.base = _base_connector(catalog_name, base, options, context)
        except MergekitError as err:
            # a base that keeps no files (memory) takes no warehouse: the option was the registry's folder only
            if err.details.get("option") != "warehouse":
                raise
            options.pop("warehouse")
            self.base = _base_connector(catalog_name, base, options, context)
        self.registry = Registry(str(registry_path))
        self._metadata = PartitionedMetadata(catalog_name=catalog_name, base=self.base, registry=self.registry)
        self._splits = PartitionedSplitManager(self._metadata)
        self._sources = PartitionedPageSourceProvider(self.base.get_page_source_provider())
        try:
            base_sinks: ConnectorPageSinkProvider | None = self.base.get_page_sink_provider()
        except MergekitError:
            base_sinks = None
        self._sinks = PartitionedPageSinkProvider(base_sinks) if base_sinks is not None else None
        try:
            base_indexes: ConnectorIndexProvider | None = self.base.get_index_provider()
        except MergekitError:  # a base without indexes: no table resolves one
            base_indexes = None
        self._indexes = PartitionedIndexProvider(base_indexes)

    def get_metadata(self) -> ConnectorMetadata:
        return self._metadata

    def get_split_manager(self) -> ConnectorSplitManager:
        return self._splits

    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        return self._sources

    def get_index_provider(self) -> ConnectorIndexProvider:
        """A merge table's index looks rows up through its children's (``_index``), a plain table's is the base's."""
        return self._indexes

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        if self._sinks is None:
            return self.base.get_page_sink_provider()
        return self._sinks

    def get_table_properties(self) -> Sequence[PropertyMetadata]:
        """The base connector's: a plain CREATE TABLE goes to the base unchanged. (CREATE MERGE TABLE takes
        no WITH clause.)"""
        return self.base.get_table_properties()

    def get_procedures(self) -> Mapping[str, Any]:
        return self.base.get_procedures()

    def wait_for_compactions(self, timeout: float | None = None) -> bool:
        """The base connector's (the journal's automatic compactions run in the background); True for a base
        without them."""
        wait = getattr(self.base, "wait_for_compactions", None)
        return True if wait is None else bool(wait(timeout))

    def shutdown(self) -> None:
        self.registry.close()
        self.base.shutdown()


class PartitionedConnectorFactory(ConnectorFactory):
    """Entry point ``partitioned`` of the ``mergekit.connectors`` group."""

    name: ClassVar[str] = "partitioned"

    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
        return PartitionedConnector(catalog_name=catalog_name, config=config, context=context)
