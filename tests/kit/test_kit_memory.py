"""The conformance kit (mergekit.testing) run by the project itself against the memory connector."""

from __future__ import annotations

from mergekit.testing import BaseConnectorTest, Behavior


class TestMemoryDeleteAndInsert(BaseConnectorTest):
    def catalog(self, tmp_path):  # type: ignore[no-untyped-def]
        return {"connector": "memory", "paradigm": "DELETE_ROW_AND_INSERT_ROW"}


class TestMemoryChangeOnlyUpdatedColumns(BaseConnectorTest):
    def catalog(self, tmp_path):  # type: ignore[no-untyped-def]
        return {"connector": "memory", "paradigm": "CHANGE_ONLY_UPDATED_COLUMNS"}


class TestMemoryAppendOnly(BaseConnectorTest):
    """An append-only catalog: every scenario that changes rows must fail with the exact NOT_SUPPORTED message."""

    unsupported = {Behavior.MERGE, Behavior.UPDATE, Behavior.DELETE, Behavior.NOT_MATCHED_BY_SOURCE}

    def catalog(self, tmp_path):  # type: ignore[no-untyped-def]
        return {"connector": "memory", "modifications": "false"}
