"""The conformance kit against the partitioned connector (plain tables through it, over the journal base).
Merge tables with several children run the Trino cases in tests/partitioned/test_trino.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mergekit import Engine
from mergekit.errors import MergekitError
from mergekit.execution.session import local_session
from mergekit.testing import BaseConnectorTest

pytestmark = pytest.mark.spark  # engines on local_session(): the shared session


class TestPartitionedKit(BaseConnectorTest):
    def catalog(self, tmp_path: Path) -> Any:
        return self_catalog(tmp_path)


def test_table_properties_are_those_of_the_base_connector(tmp_path: Path) -> None:
    """A plain CREATE TABLE goes to the base connector, so the base's table properties apply, and only those."""
    catalogs = {"lake": {"connector": "partitioned", "base": "memory", "warehouse": str(tmp_path / "wh")}}
    engine = Engine(spark=local_session(), catalogs=catalogs)
    try:
        assert [p.name for p in engine.catalog("lake").get_table_properties()] == ["partitioned_by"]
        engine.execute("CREATE TABLE p (id INTEGER, region VARCHAR) WITH (partitioned_by = ARRAY['region'])")
        with pytest.raises(MergekitError) as info:
            engine.execute("CREATE TABLE q (id INTEGER) WITH (bogus_prop = 42)")
        assert str(info.value) == (
            "[INVALID_TABLE_PROPERTY] Catalog 'lake' table property 'bogus_prop' does not exist. "
            "Valid properties: partitioned_by"
        )
        assert engine.execute("SHOW TABLES").rows() == [("p",)]
    finally:
        engine.close()


def test_merge_table_ddl_takes_no_properties(tmp_path: Path) -> None:
    """A merge table has no table properties of its own (MonetDB's syntax has no WITH clause): one is refused by
    name, before or after PARTITION BY, not dropped."""
    engine = Engine(spark=local_session(), catalogs={"lake": self_catalog(tmp_path)})
    try:
        for sql in (
            "CREATE MERGE TABLE m (id INTEGER) WITH (bogus_prop = 42)",
            "CREATE MERGE TABLE m (id INTEGER) PARTITION BY RANGE ON (id) WITH (bogus_prop = 42)",
        ):
            with pytest.raises(MergekitError) as info:
                engine.execute(sql)
            assert str(info.value) == (
                "[INVALID_TABLE_PROPERTY] Table property 'bogus_prop' does not exist: a merge table takes no table "
                "properties (its child tables take theirs in CREATE TABLE)"
            )
        assert engine.execute("SHOW TABLES").rows() == []
    finally:
        engine.close()


def self_catalog(tmp_path: Path) -> Any:
    return {"connector": "partitioned", "warehouse": str(tmp_path / "wh")}
