"""The conformance kit (mergekit.testing) against a connector with only the row-level DELETE/UPDATE SPI: its
DELETE and UPDATE scenarios run through begin_delete / UpdatablePageSource / finish_delete (and the UPDATE
counterparts); MERGE fails with the engine's NOT_SUPPORTED message naming what is missing."""

from __future__ import annotations

from typing import Any

from mergekit.execution.dml.row_level import MERGE_NEEDS_MERGE_SPI
from mergekit.testing import BaseConnectorTest, Behavior

from .rowlevel_connector import RowLevelConnector


class TestRowLevelOnly(BaseConnectorTest):
    unsupported = {Behavior.MERGE, Behavior.NOT_MATCHED_BY_SOURCE}
    not_supported_message = MERGE_NEEDS_MERGE_SPI

    def catalog(self, tmp_path: Any) -> Any:
        return RowLevelConnector(str(tmp_path))
