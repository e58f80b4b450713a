"""``Connector``, ``ConnectorFactory`` and ``ConnectorContext``: how a plugin is found, configured and asked
for its parts.

A plugin distribution declares its factory in the ``mergekit.connectors`` entry-point group::

    [project.entry-points."mergekit.connectors"]
    journal = "mergekit_journal:JournalConnectorFactory"

The engine loads the factory lazily, the first time a catalog names the connector, and calls
``create(catalog_name=..., config=..., context=...)`` once per catalog on the driver. The
:class:`ConnectorContext` it passes offers the engine's services (Trino's ``ConnectorContext``): a connector
that builds on another connector (the partitioned connector over its base) asks the context for it instead of
loading plugins itself, so registered factories, duplicate checks and load errors behave as for a catalog.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import attrs

from mergekit.errors import ErrorCode, MergekitError

from ._metadata import ConnectorMetadata
from ._properties import PropertyMetadata
from ._read import ConnectorIndexProvider, ConnectorPageSourceProvider, ConnectorSplitManager
from ._sink import MERGE_NOT_SUPPORTED_MESSAGE, ConnectorPageSinkProvider

__all__ = ["Connector", "ConnectorContext", "ConnectorFactory", "Procedure"]

Procedure = Callable[..., object]
"""A procedure of :meth:`Connector.get_procedures`: called on the driver as ``procedure(session=...,
**arguments)`` for ``CALL catalog.system.name(...)``. It may return a ``pyarrow.Table`` (the statement's result
rows), a mapping (shown as the statement's metrics) or None.

Its signature declares its arguments: the named parameters other than ``session``, in order (a CALL's positional
arguments fill them in that order); a parameter without a default is required. The engine checks every CALL
against it before calling, as Trino's ``CallTask`` does, and fails with ``INVALID_ARGUMENTS`` for an unknown or
repeated argument name, too many arguments or a missing required one; ``**kwargs`` receives nothing (a procedure
never sees an argument it did not declare)."""


class Connector(abc.ABC):
    """One configured catalog. Lives on the driver; only the providers it returns travel to executors.

    Created by :meth:`ConnectorFactory.create` (or handed to ``Engine(catalogs={"name": connector})``
    directly) and kept for the engine's lifetime; :meth:`shutdown` ends it. The engine calls its getters
    whenever it needs a part, possibly several times per statement: return the same objects each time.
    """

    @abc.abstractmethod
    def get_metadata(self) -> ConnectorMetadata:
        """The catalog's metadata. May return the same object every time.

        Required. Called on the driver for every statement that touches the catalog, often several times."""

    @abc.abstractmethod
    def get_split_manager(self) -> ConnectorSplitManager:
        """The split manager for scans read through page sources. Required (a connector whose every scan is
        native may return one that yields no splits). Called on the driver, once per such scan."""

    @abc.abstractmethod
    def get_page_source_provider(self) -> ConnectorPageSourceProvider:
        """Must be picklable.

        Required. Called on the driver once per scan; the engine pickles the provider into the Spark job and
        calls ``create_page_source`` on executors, once per split."""

    def get_index_provider(self) -> ConnectorIndexProvider:
        """Must be picklable. Called only after ``ConnectorMetadata.resolve_index`` resolved an index.
        Default: a connector without indexes.

        Called on the driver once per MERGE that uses the index; the provider is pickled to the tasks that
        look target rows up. The default raises NOT_SUPPORTED, which cannot happen while ``resolve_index``
        keeps its default (None)."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "This connector has no index")

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        """Must be picklable. Default: a connector that cannot write.

        Called on the driver once per INSERT, UPDATE, DELETE, MERGE and ``CREATE TABLE AS``, after
        ``begin_merge``; the provider is pickled to every writer task. The default raises NOT_SUPPORTED
        (``MERGE_NOT_SUPPORTED_MESSAGE``); ``mergekit connectors`` lists such a connector as read-only."""
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

    def get_procedures(self) -> Mapping[str, Procedure]:
        """Named callables the engine exposes as ``CALL catalog.system.<name>(...)`` (``vacuum``, ``compact``).
        Each receives ``session=`` and the call's arguments as keywords, checked against its signature
        (:data:`Procedure`). Default: none.

        Called on the driver once per ``CALL`` (and by ``mergekit connectors`` to list them). An unknown name
        fails the ``CALL`` with NOT_SUPPORTED; see :data:`Procedure` for what a procedure may return."""
        return {}

    def shutdown(self) -> None:
        """Release connections when the engine closes.

        Called once on the driver by ``Engine.close()``; no other method is called afterwards. Default: no-op."""


class ConnectorFactory(abc.ABC):
    """Entry point of a plugin. ``name`` is the connector name catalogs refer to.

    The class (or an instance) is what the ``mergekit.connectors`` entry point names; the engine instantiates
    a class without arguments. One factory serves every catalog of its connector, so keep per-catalog state
    in the :class:`Connector` it creates.
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
        """Called on the driver once per catalog. ``config`` holds the catalog options (``warehouse`` is set
        by ``Engine.local``). Raise ``INVALID_ARGUMENTS`` for a bad option, naming it; an option the connector
        does not know is refused too, never ignored, with its name also in the error's details
        (``MergekitError(..., option=name)``): a connector that keeps no files refuses ``warehouse``, and
        ``Engine.local`` and the partitioned connector then create it without theirs.

        ``catalog_name`` is the catalog's name as configured (the ``ConnectorSession.catalog`` of every later
        call); ``config`` the catalog's options without ``connector``, values as the configuration gave them
        (strings from a TOML file or the command line, any Python value from an embedder): a property bag the
        connector documents. ``context`` offers the engine's services (:class:`ConnectorContext`); keep it if a
        later call needs one. Errors from here fail ``Engine(...)`` / ``add_catalog``: nothing is registered.
        """


def _accepts_context(factory: ConnectorFactory) -> bool:
    # Factories written before ConnectorContext existed take only catalog_name and config.
    try:
        parameters = inspect.signature(factory.create).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: assume the current SPI
        return True
    return any(p.name == "context" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


@attrs.frozen(kw_only=True)
class ConnectorContext:
    """Services the engine offers a connector, handed to :meth:`ConnectorFactory.create` (Trino's
    ``ConnectorContext``). Built by the engine (``mergekit.plugins.connector_context()``) on the driver.

    A connector keeps it if it needs a service later; it is not meant to travel to executors (it may hold
    the engine's plugin registry), so do not put it in handles, splits or providers.
    """

    connector_factories: Callable[[str], ConnectorFactory]
    """The engine's lookup of installed connector factories by name: entry points of the
    ``mergekit.connectors`` group and factories registered with ``mergekit.plugins.register``. Raises
    ``CONNECTOR_NOT_FOUND`` for an unknown name and ``PLUGIN_LOAD_ERROR`` for one that fails to load."""

    def get_connector_factory(self, name: str) -> ConnectorFactory:
        """The factory of the connector called ``name``, as a catalog naming it would get.

        Raises ``CONNECTOR_NOT_FOUND`` when no such connector is installed or registered, and
        ``PLUGIN_LOAD_ERROR`` (with the cause chained) when its distribution fails to load."""
        return self.connector_factories(name)

    def create_connector(self, name: str, *, catalog_name: str, config: Mapping[str, Any]) -> Connector:
        """A new connector of the factory called ``name``, created with ``catalog_name`` and ``config`` and
        this context, exactly as the engine creates the connector of a catalog (a factory written before
        ``context`` existed is called without it).

        For connectors built over another connector: the partitioned connector creates its base connector
        here. Raises what :meth:`get_connector_factory` and the factory's ``create`` raise."""
        factory = self.get_connector_factory(name)
        return create_connector(factory, catalog_name=catalog_name, config=config, context=self)


def create_connector(
    factory: ConnectorFactory, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext
) -> Connector:
    """``factory.create(catalog_name=..., config=..., context=...)``, without ``context`` for a factory whose
    ``create`` does not accept it (written against the SPI before :class:`ConnectorContext`). The one place that
    calls factories: the engine (through ``mergekit.plugins``) and :meth:`ConnectorContext.create_connector`."""
    if _accepts_context(factory):
        return factory.create(catalog_name=catalog_name, config=config, context=context)
    legacy: Any = factory  # the legacy signature is not the declared one: call it untyped
    connector: Connector = legacy.create(catalog_name=catalog_name, config=config)
    return connector
