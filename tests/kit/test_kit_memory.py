"""The conformance kit (mergekit.testing) run by the project itself against the memory connector."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.session import local_session
from mergekit.spi import ConnectorSession, ConnectorTableLayout, SchemaTableName
from mergekit.testing import BaseConnectorTest, Behavior

pytestmark = pytest.mark.spark  # engines on local_session(): the shared session


class TestMemoryDeleteAndInsert(BaseConnectorTest):
    def catalog(self, tmp_path):  # type: ignore[no-untyped-def]
        return {"connector": "memory", "paradigm": "DELETE_ROW_AND_INSERT_ROW"}


class TestMemoryChangeOnlyUpdatedColumns(BaseConnectorTest):
    """The other paradigm changes only what the merge sink receives for an updated row: the scenarios that update
    rows (MERGE, UPDATE), every type updated and merged, and the abort of a failing sink; the rest of the kit is the
    same connector as TestMemoryDeleteAndInsert, which runs all of it."""

    scenario_behaviors = frozenset({Behavior.MERGE, Behavior.UPDATE})
    kit_tests = frozenset({"test_types_round_trip", "test_failed_statements_leave_nothing_behind"})

    def catalog(self, tmp_path):  # type: ignore[no-untyped-def]
        return {"connector": "memory", "paradigm": "CHANGE_ONLY_UPDATED_COLUMNS"}


class TestMemoryAppendOnly(BaseConnectorTest):
    """An append-only catalog: every scenario that changes rows must fail with the exact NOT_SUPPORTED message."""

    unsupported = {Behavior.MERGE, Behavior.UPDATE, Behavior.DELETE, Behavior.NOT_MATCHED_BY_SOURCE}
    # what it refuses: every scenario that changes rows; inserts, DDL and properties are TestMemoryDeleteAndInsert's
    scenario_behaviors = frozenset(unsupported)
    kit_tests: frozenset[str] = frozenset()

    def catalog(self, tmp_path):  # type: ignore[no-untyped-def]
        return {"connector": "memory", "modifications": "false"}


# ---- the memory connector's own table property (the kit checks undeclared ones and wrong types) ----------


@pytest.fixture
def memory_engine() -> Iterator[Engine]:
    engine = Engine(spark=local_session(), catalogs={"lake": {"connector": "memory"}})
    yield engine
    engine.close()


def test_memory_declares_partitioned_by(memory_engine: Engine) -> None:
    (prop,) = memory_engine.catalog("lake").get_table_properties()
    assert (prop.name, prop.type, prop.default) == ("partitioned_by", "array(varchar)", None)
    with pytest.raises(MergekitError) as info:
        memory_engine.execute("CREATE TABLE p (id INTEGER) WITH (partition_by = ARRAY['id'])")  # a typo
    assert str(info.value) == (
        "[INVALID_TABLE_PROPERTY] Catalog 'lake' table property 'partition_by' does not exist. "
        "Valid properties: partitioned_by"
    )


def test_partitioned_by_must_name_columns_of_the_table(memory_engine: Engine) -> None:
    with pytest.raises(MergekitError) as info:
        memory_engine.execute("CREATE TABLE p (id INTEGER) WITH (partitioned_by = ARRAY['region'])")
    assert info.value.code is ErrorCode.INVALID_TABLE_PROPERTY
    assert str(info.value) == (
        "[INVALID_TABLE_PROPERTY] Table property 'partitioned_by': partition column 'region' is not a column "
        "of table default.p"
    )
    assert memory_engine.execute("SHOW TABLES").rows() == []


def test_create_table_as_passes_its_properties_to_the_connector(memory_engine: Engine) -> None:
    result = memory_engine.execute(
        "CREATE TABLE p WITH (partitioned_by = ARRAY['region']) AS SELECT 1 AS id, 'r1' AS region"
    )
    assert result.row_count == 1
    connector = memory_engine.catalog("lake")
    meta = connector.get_metadata()
    session = ConnectorSession(catalog="lake")
    handle = meta.get_table_handle(session=session, table=SchemaTableName(schema="default", table="p"))
    assert handle is not None
    assert meta.get_table_metadata(session=session, table_handle=handle).properties == {"partitioned_by": ["region"]}
    assert meta.get_insert_layout(session=session, table_handle=handle) == ConnectorTableLayout(
        partition_columns=("region",)
    )
    assert memory_engine.execute("SELECT id, region FROM p").rows() == [(1, "r1")]
