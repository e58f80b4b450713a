"""What a connector author gets wrong on a first afternoon with the row-level SPI, and the message that names the fix
(issue 28's table, one test per row). Each variant is the tested row-level connector with one mistake."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle

from mergekit import Engine, plugins
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    INSERT_NEEDS_MERGE_SINK,
    MERGE_NEEDS_MERGE_SPI,
    UPDATE_NEEDS_ROW_LEVEL_UPDATE,
    ColumnHandle,
    ConnectorFactory,
    ConnectorMetadata,
    ConnectorPageSource,
    ConnectorPageSourceProvider,
    ConnectorSession,
    ConnectorSplit,
    ConnectorTableHandle,
)

from .rowlevel_connector import (
    ROW_ID,
    RLMetadata,
    RLPageSourceProvider,
    RLTableHandle,
    RLUpdatablePageSource,
    RowLevelConnector,
)

# Spark's Python workers cannot import the tests package: ship this module's page sources by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROWS = "(1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')"


class DeleteOnly(RLMetadata):
    """Row 1: the row-level DELETE only (no UPDATE methods)."""

    get_update_row_id_column_handle = ConnectorMetadata.get_update_row_id_column_handle
    begin_update = ConnectorMetadata.begin_update
    finish_update = ConnectorMetadata.finish_update


class ForgotUpdateRowId(RLMetadata):
    """Row 1: begin_update and finish_update, but no get_update_row_id_column_handle."""

    get_update_row_id_column_handle = ConnectorMetadata.get_update_row_id_column_handle


class ForgotFinishDelete(RLMetadata):
    """Row 6."""

    finish_delete = ConnectorMetadata.finish_delete
    begun = 0

    def begin_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> ConnectorTableHandle:
        type(self).begun += 1
        return super().begin_delete(session=session, table_handle=table_handle)


class NoBeginMerge(RLMetadata):
    """Row 8: the row-level SPI, no INSERT path."""

    begin_merge = ConnectorMetadata.begin_merge


class FailingFinishDelete(RLMetadata):
    aborted = 0

    def finish_delete(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, fragments: Sequence[Any]
    ) -> None:
        raise OSError("disk full")

    def abort_delete(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        type(self).aborted += 1
        super().abort_delete(session=session, table_handle=table_handle)


class WithoutRowId(RLUpdatablePageSource):
    """Row 7: a page source that does not produce the row id column it was asked for."""

    def get_next_page(self) -> pa.RecordBatch | None:
        page = super().get_next_page()
        return None if page is None else page.drop_columns([ROW_ID])


class RaisingDelete(RLUpdatablePageSource):
    """Row 7: ``delete_rows`` raises an exception of the connector's own."""

    def delete_rows(self, row_ids: pa.Array) -> None:
        raise ValueError(f"no such row: {row_ids[0].as_py()}")


class Provider(ConnectorPageSourceProvider):
    def __init__(self, updatable: type[RLUpdatablePageSource]) -> None:
        self.updatable = updatable

    def create_page_source(
        self,
        *,
        session: ConnectorSession,
        split: ConnectorSplit,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
    ) -> ConnectorPageSource:
        assert isinstance(table_handle, RLTableHandle)
        if table_handle.mode in ("delete", "update"):
            return self.updatable(table_handle, split, columns)  # type: ignore[arg-type]
        return RLPageSourceProvider().create_page_source(
            session=session, split=split, table_handle=table_handle, columns=columns
        )


def variant(
    root: str, metadata: type[RLMetadata] = RLMetadata, pages: type[RLUpdatablePageSource] | None = None
) -> RowLevelConnector:
    connector = RowLevelConnector(root)
    connector._metadata = metadata(root)
    if pages is not None:
        provider = Provider(pages)
        connector.get_page_source_provider = lambda: provider  # type: ignore[method-assign]
    return connector


@pytest.fixture
def root(spark: Any, tmp_path: Path) -> str:
    """A catalog folder holding table ``t`` (id, name), five rows, written by the correct connector."""
    engine = Engine(spark=spark, catalogs={"lake": RowLevelConnector(str(tmp_path))})
    engine.execute("CREATE TABLE t (id BIGINT, name VARCHAR)")
    engine.execute(f"INSERT INTO t VALUES {ROWS}")
    engine.close()
    return str(tmp_path)


@pytest.fixture
def engine_of(spark: Any, root: str) -> Iterator[Any]:
    engines: list[Engine] = []

    def make(connector: RowLevelConnector) -> Engine:
        engines.append(Engine(spark=spark, catalogs={"lake": connector}))
        return engines[-1]

    yield make
    for engine in engines:
        engine.close()


def _error(engine: Engine, statement: str) -> MergekitError:
    with pytest.raises(MergekitError) as info:
        engine.execute(statement)
    return info.value


def _unchanged(engine: Engine, root: str) -> None:
    rows = sorted(engine.execute("SELECT id, name FROM t").rows())
    assert rows == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]
    staged = [p for p in Path(root).rglob("_staging/*")]
    assert staged == [], f"left behind: {staged}"


def test_row_1_update_on_a_delete_only_connector_names_the_update_methods(engine_of: Any, root: str) -> None:
    for metadata in (DeleteOnly, ForgotUpdateRowId):
        engine = engine_of(variant(root, metadata))
        for statement in ("UPDATE t SET name = 'x' WHERE id = 1", "EXPLAIN UPDATE t SET name = 'x'"):
            error = _error(engine, statement)
            assert str(error) == f"[NOT_SUPPORTED] {UPDATE_NEEDS_ROW_LEVEL_UPDATE}", metadata
        assert "get_update_row_id_column_handle, begin_update and finish_update" in UPDATE_NEEDS_ROW_LEVEL_UPDATE
        # MERGE still says what MERGE needs; DELETE still works
        error = _error(engine, "MERGE INTO t USING (VALUES 1) s(id) ON t.id = s.id WHEN MATCHED THEN DELETE")
        assert str(error) == f"[NOT_SUPPORTED] {MERGE_NEEDS_MERGE_SPI}"
        assert engine.execute("DELETE FROM t WHERE id = 99").row_count == 0
        _unchanged(engine, root)


def test_row_6_begin_delete_without_finish_delete_is_named_before_anything_begins(engine_of: Any, root: str) -> None:
    engine = engine_of(variant(root, ForgotFinishDelete))
    for statement in ("DELETE FROM t WHERE id = 1", "EXPLAIN DELETE FROM t WHERE id = 1"):
        error = _error(engine, statement)
        assert str(error) == (
            "[CONNECTOR_CONTRACT_ERROR] The connector implements get_delete_row_id_column_handle and begin_delete "
            "but not finish_delete: a row-level DELETE needs get_delete_row_id_column_handle, begin_delete and "
            "finish_delete (docs/develop/row-level-spi.md)"
        )
    assert ForgotFinishDelete.begun == 0
    _unchanged(engine, root)


def test_row_7_a_page_without_the_row_id_column_is_a_contract_error(engine_of: Any, root: str) -> None:
    engine = engine_of(variant(root, pages=WithoutRowId))
    error = _error(engine, "DELETE FROM t WHERE id > 2")
    assert error.code is ErrorCode.CONNECTOR_CONTRACT_ERROR
    assert str(error) == (
        "[CONNECTOR_CONTRACT_ERROR] A page of the UpdatablePageSource lacks the row id column '$rid': "
        "create_page_source must produce every column it is given, the row id column "
        "(get_delete_row_id_column_handle) among them; the page has id, name"
    )
    _unchanged(engine, root)  # abort_delete removed the statement's staging folder


def test_row_7_a_connectors_exception_gets_a_connector_error_naming_the_method(engine_of: Any, root: str) -> None:
    engine = engine_of(variant(root, pages=RaisingDelete))
    error = _error(engine, "DELETE FROM t WHERE id > 2")
    assert error.code is ErrorCode.CONNECTOR_ERROR, str(error)
    assert str(error).startswith("[CONNECTOR_ERROR] The connector's delete_rows failed: ValueError: no such row: 2 ")
    assert f"(in delete_rows, {__file__} line " in str(error)
    _unchanged(engine, root)
    # on the driver: finish_delete raising, abort_delete called once
    FailingFinishDelete.aborted = 0
    engine = engine_of(variant(root, FailingFinishDelete))
    error = _error(engine, "DELETE FROM t WHERE id > 2")
    assert str(error).startswith("[CONNECTOR_ERROR] The connector's finish_delete failed: OSError: disk full (in ")
    assert FailingFinishDelete.aborted == 1
    _unchanged(engine, root)


def test_row_8_insert_without_begin_merge_says_what_insert_needs(engine_of: Any, root: str) -> None:
    engine = engine_of(variant(root, NoBeginMerge))
    for statement in ("INSERT INTO t VALUES (6, 'f')", "EXPLAIN INSERT INTO t VALUES (6, 'f')"):
        error = _error(engine, statement)
        assert str(error) == f"[NOT_SUPPORTED] {INSERT_NEEDS_MERGE_SINK}"
    assert "begin_merge, finish_merge and a merge sink" in INSERT_NEEDS_MERGE_SINK
    assert engine.execute("DELETE FROM t WHERE id = 5").row_count == 1  # the row-level SPI still works


class _Factory(ConnectorFactory):
    """A row-level test connector."""

    name = "author-rowlevel"
    metadata: type[RLMetadata] = RLMetadata

    def create(self, *, catalog_name: str, config: Any, context: Any) -> RowLevelConnector:
        return variant(config["root"], self.metadata)


class _DeleteOnlyFactory(_Factory):
    name = "author-delete-only"
    metadata = DeleteOnly


def test_row_5_the_connector_listing_shows_the_row_level_spi() -> None:
    from mergekit.cli.connectors import describe_connectors

    plugins.register(_Factory())
    plugins.register(_DeleteOnlyFactory())
    try:
        infos = {i.name: i for i in describe_connectors()}
    finally:
        plugins.unregister(_Factory.name)
        plugins.unregister(_DeleteOnlyFactory.name)
    full, delete_only = infos["author-rowlevel"], infos["author-delete-only"]
    assert (full.paradigm, full.features[:3]) == (
        "row-level DELETE/UPDATE",
        ("INSERT", "row-level DELETE/UPDATE", "TRUNCATE"),
    )
    assert (delete_only.paradigm, delete_only.features[:3]) == (
        "row-level DELETE",
        ("INSERT", "row-level DELETE", "TRUNCATE"),
    )
    assert full.description == "A row-level test connector."  # its own docstring, not ConnectorFactory's


def test_row_11_what_an_authors_tests_need_is_exported_by_spi_and_testing() -> None:
    import mergekit.spi
    import mergekit.testing

    for name in ("MERGE_NEEDS_MERGE_SPI", "UPDATE_NEEDS_ROW_LEVEL_UPDATE", "INSERT_NEEDS_MERGE_SINK"):
        assert name in mergekit.spi.__all__ and name in mergekit.testing.__all__, name
        assert getattr(mergekit.testing, name) == getattr(mergekit.spi, name)
    assert "local_session" in mergekit.testing.__all__
    assert os.path.basename(mergekit.testing.__file__) == "__init__.py"
