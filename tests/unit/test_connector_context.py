"""The SPI's ConnectorContext (engine services for connector factories), required vs optional metadata methods,
and how ``mergekit connectors`` shows an append-only connector."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mergekit import plugins
from mergekit.cli.connectors import describe_connectors
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import Connector, ConnectorContext, ConnectorFactory, ConnectorMetadata, create_connector


def test_connector_metadata_requires_exactly_the_methods_without_a_default() -> None:
    assert ConnectorMetadata.__abstractmethods__ == {"list_tables", "get_table_handle", "get_table_metadata"}
    with pytest.raises(TypeError):
        ConnectorMetadata()  # type: ignore[abstract]


class AppendOnlyMemoryFactory(ConnectorFactory):
    """The memory connector with row changes switched off: INSERT works, UPDATE / DELETE / MERGE do not."""

    name: ClassVar[str] = "unit-append-only"
    contexts: ClassVar[list[ConnectorContext]] = []

    def create(self, *, catalog_name: str, config: Mapping[str, Any], context: ConnectorContext) -> Connector:
        self.contexts.append(context)
        return context.create_connector(
            "memory", catalog_name=catalog_name, config={**config, "modifications": "false"}
        )


class LegacyFactory(ConnectorFactory):
    """Written against the SPI before ConnectorContext: create() takes no context."""

    name: ClassVar[str] = "unit-legacy"

    def create(self, *, catalog_name: str, config: Mapping[str, Any]) -> Connector:  # type: ignore[override]
        return plugins.get_factory("memory").create(
            catalog_name=catalog_name, config=config, context=plugins.connector_context()
        )


@pytest.fixture
def registered() -> Iterator[None]:
    plugins.register(AppendOnlyMemoryFactory())
    plugins.register(LegacyFactory())
    try:
        yield
    finally:
        plugins.unregister(AppendOnlyMemoryFactory.name)
        plugins.unregister(LegacyFactory.name)


def test_the_context_finds_factories_as_catalogs_do(registered: None) -> None:
    context = plugins.connector_context()
    assert context.get_connector_factory("memory").name == "memory"
    assert isinstance(context.get_connector_factory("unit-append-only"), AppendOnlyMemoryFactory)
    with pytest.raises(MergekitError) as info:
        context.get_connector_factory("no-such-connector")
    assert info.value.code is ErrorCode.CONNECTOR_NOT_FOUND


def test_factories_receive_the_context_and_legacy_factories_still_work(registered: None) -> None:
    AppendOnlyMemoryFactory.contexts.clear()
    connector = plugins.create_connector("unit-append-only", catalog_name="lake", config={})
    assert connector.get_metadata() is not None
    assert len(AppendOnlyMemoryFactory.contexts) == 1
    legacy = create_connector(LegacyFactory(), catalog_name="lake", config={}, context=plugins.connector_context())
    assert legacy.get_metadata() is not None


def test_partitioned_builds_its_base_through_the_context(registered: None, tmp_path: Path) -> None:
    """A registered factory (no entry point) can be the base: the partitioned connector asks the context."""
    connector = plugins.create_connector(
        "partitioned", catalog_name="lake", config={"base": "unit-append-only", "warehouse": str(tmp_path)}
    )
    try:
        assert type(connector.base).__module__.startswith("mergekit_memory")  # type: ignore[attr-defined]
    finally:
        connector.shutdown()
    with pytest.raises(MergekitError) as info:
        plugins.create_connector(
            "partitioned", catalog_name="lake", config={"base": "no-such-connector", "warehouse": str(tmp_path)}
        )
    assert info.value.code is ErrorCode.CONNECTOR_NOT_FOUND


def test_mergekit_connectors_shows_insert_only_for_an_append_only_connector(registered: None) -> None:
    infos = {i.name: i for i in describe_connectors()}
    assert infos["unit-append-only"].paradigm == "INSERT only"
    assert infos["unit-append-only"].features[0] == "INSERT"
    assert infos["memory"].paradigm == "DELETE_ROW_AND_INSERT_ROW"
    assert infos["unit-legacy"].paradigm == "DELETE_ROW_AND_INSERT_ROW"
