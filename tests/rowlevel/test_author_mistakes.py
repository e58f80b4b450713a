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
        "(get_delete_row_id_column_handle) among them; the page has id"
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


def test_row_12_explain_says_in_words_only_what_runs(engine_of: Any, root: str) -> None:
    engine = engine_of(variant(root))

    def plan(statement: str) -> str:
        return str(engine.execute(f"EXPLAIN {statement}").rows()[0][0])

    truncate = plan("TRUNCATE TABLE t")
    assert truncate.startswith(
        "TRUNCATE TABLE lake.default.t: a DELETE of every row (the connector has no truncate_table)\n"
        "DELETE FROM lake.default.t AS t\nSPI: row-level (begin_delete / UpdatablePageSource / finish_delete)"
    )
    assert (
        plan("CREATE TABLE u (id INT)")
        == "CREATE TABLE u (id INT)\nData definition: create_table on the driver (no Spark job)"
    )
    assert plan("DROP TABLE t") == "DROP TABLE t\nData definition: drop_table on the driver (no Spark job)"
    assert "Tier: spark (CREATE TABLE AS runs its query on Spark)" in plan("CREATE TABLE v AS SELECT * FROM t")
    for statement in ("UPDATE t SET name = 'x' WHERE id = 1", "DELETE FROM t", "INSERT INTO t VALUES (6, 'f')"):
        text = plan(statement)
        # the connector declared no merge row id and no paradigm: the plan names neither
        assert "$row_id" not in text and "paradigm" not in text and "Truncate(" not in text, text
    assert plan("UPDATE t SET name = 'x'").startswith("UPDATE lake.default.t AS t\nSPI: row-level")
    assert engine.execute("SELECT count(*) FROM t").rows() == [(5,)]  # EXPLAIN ran nothing


SCRIPT_CONNECTOR = """
from mergekit.spi import ConnectorFactory, ConnectorPageSourceProvider
from tests.rowlevel.rowlevel_connector import RLPageSourceProvider, RowLevelConnector


class ScriptProvider(ConnectorPageSourceProvider):
    def create_page_source(self, **kwargs):
        return RLPageSourceProvider().create_page_source(**kwargs)


class ScriptConnector(RowLevelConnector):
    def get_page_source_provider(self):
        return ScriptProvider()


class ScriptFactory(ConnectorFactory):
    name = "author-script-connector"

    def create(self, *, catalog_name, config, context):
        return ScriptConnector(config["root"])
"""


def test_row_10_a_connector_from_a_script_reaches_sparks_workers(
    spark: Any, root: str, tmp_path_factory: Any, monkeypatch: Any
) -> None:
    """A connector module that no installed distribution provides (a script's folder on the driver's sys.path
    only), registered with plugins.register: the engine ships its classes to the workers by value, and a DELETE's
    tasks unpickle its provider. A provider from yet another such module is not shipped: the error names it."""
    folder = tmp_path_factory.mktemp("script")
    (folder / "author_script_connector.py").write_text(SCRIPT_CONNECTOR)
    monkeypatch.syspath_prepend(str(folder))
    import author_script_connector  # type: ignore[import-not-found]

    plugins.register(author_script_connector.ScriptFactory())
    try:
        # what starts the session, not the session: the classes are shipped when the first statement starts it
        engine = Engine(spark=lambda: spark, catalogs={"lake": {"connector": "author-script-connector", "root": root}})
        assert not engine.spark_started
        engine.execute("SET SESSION driver_tier = 'off'")
        assert engine.execute("DELETE FROM t WHERE id > 3").row_count == 2  # tasks in Spark's workers
        assert sorted(engine.execute("SELECT id FROM t").rows()) == [(1,), (2,), (3,)]
        engine.close()
        # the provider in a second module the connector's module imports: the workers cannot import it
        (folder / "author_pages.py").write_text(SCRIPT_CONNECTOR.split("class ScriptConnector")[0])
        (folder / "author_other.py").write_text(
            "from author_pages import ScriptProvider\n"
            "from tests.rowlevel.rowlevel_connector import RowLevelConnector\n\n\n"
            "class OtherConnector(RowLevelConnector):\n"
            "    def get_page_source_provider(self):\n"
            "        return ScriptProvider()\n"
        )
        import author_other  # type: ignore[import-not-found]

        engine = Engine(spark=spark, catalogs={"lake": author_other.OtherConnector(root)})
        engine.execute("SET SESSION driver_tier = 'off'")
        error = _error(engine, "DELETE FROM t WHERE id = 1")
        assert str(error).startswith(
            "[CONFIGURATION_INVALID] Spark's Python workers cannot import module 'author_pages', which a task "
            "needs (a connector's classes, or a function of a DataFrame): install it where the workers run, or "
            "have its classes pickled by value (pyspark.cloudpickle.register_pickle_by_value(module))"
        )
        engine.close()
    finally:
        plugins.unregister("author-script-connector")
        for name in ("author_script_connector", "author_pages", "author_other"):
            sys.modules.pop(name, None)


class RecordingUpdate(RLMetadata):
    updated: list[list[str]] = []

    def begin_update(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, updated_columns: Sequence[ColumnHandle]
    ) -> ConnectorTableHandle:
        type(self).updated.append([c.name for c in updated_columns])
        return super().begin_update(session=session, table_handle=table_handle, updated_columns=updated_columns)


def test_row_14_one_column_order_for_both_spis_and_row_level_scans_read_what_the_statement_needs(
    spark: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    create = "CREATE TABLE w (a BIGINT, b VARCHAR, c BIGINT, d VARCHAR)"
    rows = "INSERT INTO w VALUES (1, 'p', 10, 'x'), (2, 'q', 20, 'y')"
    update = "UPDATE w SET c = a + 1, a = 7 WHERE d = 'x'"
    # the row-level SPI: begin_update's columns, and the columns the tasks read (get_splits gets them too)
    connector = variant(str(tmp_path), RecordingUpdate)
    scanned: list[list[str]] = []
    manager = connector.get_split_manager()
    real_splits = manager.get_splits

    def get_splits(**kwargs: Any) -> Any:
        scanned.append([c.name for c in kwargs["columns"]])
        return real_splits(**kwargs)

    monkeypatch.setattr(manager, "get_splits", get_splits)
    monkeypatch.setattr(connector, "get_split_manager", lambda: manager)
    RecordingUpdate.updated = []
    engine = Engine(spark=spark, catalogs={"lake": connector})
    for statement in (create, rows, update, "DELETE FROM w WHERE b = 'q'", "DELETE FROM w"):
        engine.execute(statement)
    engine.close()
    assert RecordingUpdate.updated == [["a", "c"]]  # table column order, not SET order
    assert scanned == [["a", "c", "d", ROW_ID], ["b", ROW_ID], [ROW_ID]]
    # the merge SPI (the memory connector): begin_merge's update_case_columns in the same order
    memory = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    memory.execute(create)
    memory.execute(rows)
    meta = memory.catalog("lake").get_metadata()
    begun: list[dict[int, list[str]]] = []
    real = meta.begin_merge

    def begin_merge(**kwargs: Any) -> Any:
        begun.append({n: [c.name for c in cols] for n, cols in kwargs["update_case_columns"].items()})
        return real(**kwargs)

    monkeypatch.setattr(meta, "begin_merge", begin_merge)
    memory.execute("SET SESSION driver_tier = 'off'")
    memory.execute(update)
    memory.execute(
        "MERGE INTO w USING (VALUES (2)) s(k) ON w.a = s.k WHEN MATCHED THEN UPDATE SET d = 'z', b = 'r', a = 3"
    )
    memory.close()
    assert begun == [{0: ["a", "c"]}, {0: ["a", "b", "d"]}]
