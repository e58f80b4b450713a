"""``Connector`` and ``ConnectorFactory``: how a plugin is found, configured and asked for its parts.

A plugin distribution declares its factory in the ``mergekit.connectors`` entry-point group::

    [project.entry-points."mergekit.connectors"]
    journal = "mergekit_journal:JournalConnectorFactory"

The engine loads the factory lazily, the first time a catalog names the connector, and calls
``create(catalog_name=..., config=...)`` once per catalog on the driver.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from mergekit.errors import ErrorCode, MergekitError

from ._metadata import ConnectorMetadata
from ._properties import PropertyMetadata
from ._read import ConnectorIndexProvider, ConnectorPageSourceProvider, ConnectorSplitManager
from ._sink import MERGE_NOT_SUPPORTED_MESSAGE, ConnectorPageSinkProvider

__all__ = ["Connector", "ConnectorFactory"]


class Connector(abc.ABC):
    """One configured catalog. Lives on the driver; only the providers it returns travel to executors."""

    @abc.abstractmethod
    def get_metadata(self) -> ConnectorMetadata:
        """The catalog's metadata. May return the same object every time."""

    @abc.abstractmethod
    def get_split_manager(self) -> ConnectorSplitManager: ...

    @abc.abstractmethod
    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        """Must be picklable."""

    def get_index_provider(self) -> ConnectorIndexProvider:
        """Must be picklable. Called only after ``ConnectorMetadata.resolve_index`` resolved an index.
        Default: a connector without indexes."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "This connector has no index")

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        """Must be picklable. Default: a connector that cannot write."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, MERGE_NOT_SUPPORTED_MESSAGE)

    def get_table_properties(self) -> Sequence[PropertyMetadata]:
        """The table properties ``CREATE TABLE ... WITH (...)`` accepts in this catalog (Trino's
        ``Connector.getTableProperties``). Default: none, so any ``WITH`` property is refused.

        Called on the driver, by the engine, for every ``CREATE TABLE`` and ``CREATE TABLE AS`` of the
        catalog, before anything else of the statement runs (before the table's existence is checked and before
        the query of ``CREATE TABLE AS`` runs), whether or not the statement has a ``WITH`` clause. Keep it
        cheap and free of I/O: return a constant list. It may raise ``MergekitError``, which fails the
        statement as it is; nothing has been created then.

        The engine refuses, with ``INVALID_TABLE_PROPERTY`` naming the property: a name not declared here
        (listing the declared ones), a NULL, and a value that does not convert to the declared type
        (``PropertyMetadata.decode``). ``create_table`` then receives in ``ConnectorTableMetadata.properties``
        exactly the declared properties the statement set, converted, plus the ``default`` of every other one
        whose default is not None. A connector keeps in ``create_table`` only the checks that need the table
        (a partition column must be a column), raising ``INVALID_TABLE_PROPERTY`` that names the property.
        """
        return ()

    def get_procedures(self) -> Mapping[str, Any]:
        """Named callables the engine exposes as ``CALL catalog.system.<name>(...)`` (``vacuum``, ``compact``).
        Each receives ``session=`` and the call's arguments as keywords. Default: none."""
        return {}

    def shutdown(self) -> None:
        """Release connections when the engine closes."""


class ConnectorFactory(abc.ABC):
    """Entry point of a plugin. ``name`` is the connector name catalogs refer to."""

    name: ClassVar[str]

    @abc.abstractmethod
    def create(self, *, catalog_name: str, config: Mapping[str, Any]) -> Connector:
        """Called on the driver once per catalog. ``config`` holds the catalog options (``warehouse`` is set
        by ``Engine.local``). Raise ``INVALID_ARGUMENTS`` for a bad option, naming it."""
