"""The conformance kit against the sqldb connector: PostgreSQL (a throwaway server, a fresh database per test)
and SQLite (a file per test), with the merge SPI and with ``"merge": false`` (the row-level SPI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mergekit.spi import MERGE_NEEDS_MERGE_SPI
from mergekit.testing import BaseConnectorTest, Behavior
from tests.pg_server import fresh_database


class TestSqliteKit(BaseConnectorTest):
    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "sqldb", "uri": f"sqlite:///{tmp_path / 'db.sqlite'}"}


class TestPostgresKit(BaseConnectorTest):
    @pytest.fixture(autouse=True)
    def _database(self, pg_server: str) -> None:
        self.uri = fresh_database(pg_server)

    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "sqldb", "uri": self.uri}


class TestSqliteRowLevelKit(BaseConnectorTest):
    """``"merge": false``: DELETE and UPDATE run through the row-level SPI; MERGE is refused by the engine."""

    unsupported = {Behavior.MERGE, Behavior.NOT_MATCHED_BY_SOURCE}
    not_supported_message = MERGE_NEEDS_MERGE_SPI

    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "sqldb", "uri": f"sqlite:///{tmp_path / 'db.sqlite'}", "merge": False}


class TestPostgresRowLevelKit(BaseConnectorTest):
    """The row-level SPI on PostgreSQL: what the database runs differs from SQLite in the UPDATE and DELETE
    statements and their pushed-down predicates, so the UPDATE and DELETE scenarios and the kit's tests of every type
    and of aborts run here; the rest (DDL, properties, MERGE refused by the engine, constraints evaluated by the
    engine) is the same as in TestSqliteRowLevelKit and TestPostgresKit, which run the whole kit."""

    unsupported = {Behavior.MERGE, Behavior.NOT_MATCHED_BY_SOURCE}
    not_supported_message = MERGE_NEEDS_MERGE_SPI
    scenario_behaviors = frozenset({Behavior.UPDATE, Behavior.DELETE})
    kit_tests = frozenset(
        {"test_types_round_trip", "test_predicates_on_every_type", "test_failed_statements_leave_nothing_behind"}
    )

    @pytest.fixture(autouse=True)
    def _database(self, pg_server: str) -> None:
        self.uri = fresh_database(pg_server)

    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "sqldb", "uri": self.uri, "merge": False}
