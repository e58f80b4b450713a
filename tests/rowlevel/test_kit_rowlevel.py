"""The conformance kit (mergekit.testing) against a connector with only the row-level DELETE/UPDATE SPI: its
DELETE and UPDATE scenarios run through begin_delete / UpdatablePageSource / finish_delete (and the UPDATE
counterparts); MERGE fails with the engine's NOT_SUPPORTED message naming what is missing. And the kit against the
same connector with a leak (an abort that discards nothing): it fails."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from mergekit import Engine
from mergekit.spi import MERGE_NEEDS_MERGE_SPI, ConnectorSession, ConnectorTableHandle
from mergekit.testing import BaseConnectorTest, Behavior

from .rowlevel_connector import RLMetadata, RowLevelConnector

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class TestRowLevelOnly(BaseConnectorTest):
    unsupported = {Behavior.MERGE, Behavior.NOT_MATCHED_BY_SOURCE}
    not_supported_message = MERGE_NEEDS_MERGE_SPI

    def catalog(self, tmp_path: Any) -> Any:
        return RowLevelConnector(str(tmp_path))


class LeakyUpdate(RLMetadata):
    """abort_update left as a no-op (the SPI's default): a failed UPDATE leaves its staged files."""

    def abort_update(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        pass


class LeakyDelete(LeakyUpdate):
    def abort_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        pass


@pytest.mark.parametrize(("metadata", "statement"), [(LeakyDelete, "DELETE"), (LeakyUpdate, "UPDATE")])
def test_the_kit_fails_a_row_level_connector_whose_abort_leaks(
    spark: Any, tmp_path: Path, metadata: type[RLMetadata], statement: str
) -> None:
    connector = RowLevelConnector(str(tmp_path))
    connector._metadata = metadata(str(tmp_path))
    engine = Engine(spark=spark, catalogs={"lake": connector})
    monkeypatch = pytest.MonkeyPatch()
    try:
        with pytest.raises(AssertionError) as info:
            TestRowLevelOnly().test_failed_row_level_statements_leave_nothing_behind(engine, tmp_path, monkeypatch)
    finally:
        monkeypatch.undo()
        engine.close()
    verb = statement.lower()
    assert f"a {statement} whose finish_{verb} failed left files behind (abort_{verb}): ['default/" in str(info.value)
