"""``JournalConnector`` and its factory: wiring the catalog, metadata, readers and writers together."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

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

from ._catalog import open_catalog
from ._config import JournalConfig, parse_config
from ._files.page_source import JournalPageSourceProvider
from ._files.sink import JournalPageSinkProvider
from ._handles import AUTO_COMPACT_FILES, AUTO_COMPACT_FILES_PROPERTY, AUTO_COMPACT_PROPERTY, CHANGE_STREAM_PROPERTY
from ._index import JournalIndexProvider
from ._metadata import JournalMetadata, JournalSplitManager
from ._procedures import compact, vacuum

__all__ = ["JournalConnector", "JournalConnectorFactory"]

CHANGE_STREAM_PROPERTY_METADATA = PropertyMetadata(
    name=CHANGE_STREAM_PROPERTY,
    description="The table's change feed is also a stream: SELECT STREAM * FROM t reads its inserted and updated "
    "rows in commit order (monotonic _commit_version)",
    type="boolean",
)

AUTO_COMPACT_PROPERTY_METADATA = PropertyMetadata(
    name=AUTO_COMPACT_PROPERTY,
    description="Compact the table's small files after commits, so that reads stay as fast as after CALL compact "
    "(the commit is done first: a compaction never fails or undoes it)",
    type="boolean",
)
AUTO_COMPACT_FILES_PROPERTY_METADATA = PropertyMetadata(
    name=AUTO_COMPACT_FILES_PROPERTY,
    description=f"How many small files in a row an automatic compaction merges into one (at least 2; default "
    f"{AUTO_COMPACT_FILES})",
    type="integer",
)


class JournalConnector(Connector):
    """One journal catalog. The catalog connection stays on the driver; the page source and sink providers
    hold only the warehouse URI, so they pickle cheaply to executors."""

    def __init__(self, *, catalog_name: str, config: JournalConfig) -> None:
        self.catalog_name = catalog_name
        self.config = config
        self._catalog = open_catalog(config.catalog_uri)
        self._metadata = JournalMetadata(catalog_name=catalog_name, config=config, catalog=self._catalog)
        self._split_manager = JournalSplitManager(self._metadata)
        self._page_sources = JournalPageSourceProvider(config.warehouse)
        self._page_sinks = JournalPageSinkProvider(config.warehouse, config.rows_per_file)

    def get_metadata(self) -> ConnectorMetadata:
        return self._metadata

    def get_split_manager(self) -> ConnectorSplitManager:
        return self._split_manager

    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        return self._page_sources

    def get_index_provider(self) -> ConnectorIndexProvider:
        return JournalIndexProvider(self.config.warehouse)

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        return self._page_sinks

    def get_table_properties(self) -> Sequence[PropertyMetadata]:
        """``change_feed_stream`` (``_streams.change_feed``), ``auto_compact`` and ``auto_compact_files``
        (``_compaction``). A table's key is its PRIMARY KEY clause (or the catalog options ``journal_tables`` /
        ``default_key``) and the version type is the catalog option ``version_type``, not properties."""
        return (CHANGE_STREAM_PROPERTY_METADATA, AUTO_COMPACT_PROPERTY_METADATA, AUTO_COMPACT_FILES_PROPERTY_METADATA)

    def get_procedures(self) -> Mapping[str, Any]:
        return {
            "compact": functools.partial(compact, self._metadata),
            "vacuum": functools.partial(vacuum, self._metadata),
        }

    def wait_for_compactions(self, timeout: float | None = None) -> bool:
        """Block until the automatic compactions this connector's commits made due have run (they run in the
        background, ``_compaction``); False when ``timeout`` seconds passed first."""
        return self._metadata.compactions.wait(timeout)

    def shutdown(self) -> None:
        self._metadata.compactions.wait()  # the compactions due finish first (a kill leaves orphan files only)
        self._catalog.close()


class JournalConnectorFactory(ConnectorFactory):
    """Entry point ``journal`` of the ``mergekit.connectors`` group."""

    name: ClassVar[str] = "journal"

    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
        return JournalConnector(catalog_name=catalog_name, config=parse_config(config))
