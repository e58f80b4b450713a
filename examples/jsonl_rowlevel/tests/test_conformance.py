"""The conformance kit against jsonl-rowlevel, plus the connector's own promises."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from mergekit_jsonl_rowlevel import ROW_ID, JsonlRowLevelConnectorFactory

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnHandle, ConnectorSession, Constraint, SchemaTableName
from mergekit.testing import MERGE_NEEDS_MERGE_SPI, BaseConnectorTest, Behavior


def data_files(root: Path, table: str) -> list[str]:
    return sorted(glob.glob(str(root / "default" / table / "data" / "*.jsonl")))


def staged(root: Path) -> list[str]:
    return sorted(p for p in glob.glob(str(root / "**" / "_staging" / "**"), recursive=True) if os.path.isfile(p))


def open_catalog(root: Path, **options: Any) -> Any:
    """The connector as a tool outside any engine sees it: the SPI only."""
    return JsonlRowLevelConnectorFactory().create(catalog_name="lake", config={"root": str(root), **options})


def read_table(connector: Any, table: str) -> list[dict[str, Any]]:
    session = ConnectorSession()
    metadata = connector.get_metadata()
    handle = metadata.get_table_handle(session=session, table=SchemaTableName(schema="default", table=table))
    columns = [
        ColumnHandle(name=c.name, type=c.type)
        for c in metadata.get_table_metadata(session=session, table_handle=handle).visible_columns
    ]
    rows = []
    splits = connector.get_split_manager().get_splits(
        session=session, table_handle=handle, columns=columns, constraint=Constraint()
    )
    for split in splits:
        source = connector.get_page_source_provider().create_page_source(
            session=session, split=split, table_handle=handle, columns=columns
        )
        try:
            for page in source:
                rows.extend(page.to_pylist())
        finally:
            source.close()
    return rows


class TestJsonlRowLevelConformance(BaseConnectorTest):
    unsupported = {Behavior.MERGE, Behavior.NOT_MATCHED_BY_SOURCE}
    not_supported_message = MERGE_NEEDS_MERGE_SPI

    def catalog(self, tmp_path):
        return {"connector": "jsonl-rowlevel", "root": str(tmp_path)}

    # ---- jsonl-rowlevel's own promises

    def test_files_are_plain_json_lines(self, engine: Any, tmp_path: Path) -> None:
        engine.execute(
            "CREATE TABLE plain (id INTEGER, s VARCHAR, d DATE, x DECIMAL(5,2), ts TIMESTAMP, bin VARBINARY)"
        )
        engine.execute(
            "INSERT INTO plain VALUES (1, 'a\nb', DATE '2024-02-29', 1.5, TIMESTAMP '2024-01-02 03:04:05.5', X'00FF'),"
            " (2, '', NULL, NULL, NULL, NULL)"
        )
        rows = [json.loads(line) for path in data_files(tmp_path, "plain") for line in open(path, encoding="utf-8")]
        assert sorted(rows, key=lambda r: r["id"]) == [
            {"id": 1, "s": "a\nb", "d": "2024-02-29", "x": "1.50", "ts": "2024-01-02 03:04:05.500000", "bin": "AP8="},
            {"id": 2, "s": "", "d": None, "x": None, "ts": None, "bin": None},
        ]

    def test_rows_survive_the_engine(self, engine: Any, tmp_path: Path) -> None:
        engine.execute("CREATE TABLE kept (id BIGINT, v VARCHAR)")
        engine.execute("INSERT INTO kept VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        engine.execute("UPDATE kept SET v = 'B' WHERE id = 2")
        engine.execute("DELETE FROM kept WHERE id = 3")
        assert sorted(read_table(open_catalog(tmp_path), "kept"), key=lambda r: r["id"]) == [
            {"id": 1, "v": "a"},
            {"id": 2, "v": "B"},
        ]

    def test_large_tables_have_several_splits(self, engine: Any, tmp_path: Path) -> None:
        engine.execute("CREATE TABLE big (id INTEGER, v INTEGER)")
        values = {i: i % 7 for i in range(1, 2501)}
        engine.execute("INSERT INTO big VALUES " + ", ".join(f"({i}, {v})" for i, v in values.items()))
        connector = open_catalog(tmp_path)
        table = connector.get_metadata().get_table_handle(
            session=ConnectorSession(), table=SchemaTableName(schema="default", table="big")
        )
        splits = connector.get_split_manager().get_splits(
            session=ConnectorSession(), table_handle=table, columns=[], constraint=Constraint()
        )
        assert len(splits) >= 3
        zeros, ones = [i for i, v in values.items() if v == 0], [i for i, v in values.items() if v == 1]
        assert engine.execute("UPDATE big SET v = v + 100 WHERE v = 0").row_count == len(zeros)
        assert engine.execute("DELETE FROM big WHERE v = 1").row_count == len(ones)
        values.update(dict.fromkeys(zeros, 100))
        for i in ones:
            del values[i]
        assert sorted(engine.execute("SELECT id, v FROM big").rows()) == sorted(values.items())
        assert not staged(tmp_path)

    def test_small_split_option(self, tmp_path: Path) -> None:
        connector = open_catalog(tmp_path, split_rows="2")
        assert connector.get_split_manager().split_rows == 2

    def test_unknown_catalog_option_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(MergekitError) as refused:
            open_catalog(tmp_path, warehouse=str(tmp_path))
        assert refused.value.code == ErrorCode.INVALID_ARGUMENTS
        assert "'warehouse'" in str(refused.value)
        assert refused.value.details["option"] == "warehouse"
        for bad in ("0", "many", True):
            with pytest.raises(MergekitError, match="split_rows"):
                open_catalog(tmp_path, split_rows=bad)
        with pytest.raises(MergekitError, match="needs option 'root'"):
            JsonlRowLevelConnectorFactory().create(catalog_name="lake", config={})

    def test_delete_without_where_and_truncate(self, engine: Any, tmp_path: Path) -> None:
        engine.execute("CREATE TABLE gone (id INTEGER)")
        engine.execute("INSERT INTO gone VALUES (1), (2), (3)")
        result = engine.execute("DELETE FROM gone")
        assert (result.row_count, result.metrics["pushdown"]) == (3, True)
        engine.execute("INSERT INTO gone VALUES (4), (5)")
        engine.execute("TRUNCATE TABLE gone")
        assert engine.execute("SELECT count(*) FROM gone").rows() == [(0,)]
        assert data_files(tmp_path, "gone") == []

    def test_out_of_range_dates_are_refused(self, engine: Any, tmp_path: Path) -> None:
        engine.execute("CREATE TABLE far (d DATE)")
        with pytest.raises(MergekitError) as refused:
            engine.execute("INSERT INTO far VALUES (date_add('day', 1, DATE '9999-12-31'))")
        assert refused.value.code == ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE
        assert "years 1 to 9999" in str(refused.value)
        assert not staged(tmp_path) and data_files(tmp_path, "far") == []

    def test_concurrent_commit_conflicts_and_abort_cleans_up(self, engine: Any, tmp_path: Path) -> None:
        engine.execute("CREATE TABLE race (id INTEGER, v VARCHAR)")
        engine.execute("INSERT INTO race VALUES (1, 'a'), (2, 'b')")
        connector = open_catalog(tmp_path)
        metadata, session = connector.get_metadata(), ConnectorSession()
        table = metadata.get_table_handle(session=session, table=SchemaTableName(schema="default", table="race"))
        row_id = metadata.get_delete_row_id_column_handle(session=session, table_handle=table)
        assert row_id.name == ROW_ID
        handle = metadata.begin_delete(session=session, table_handle=table)
        columns = [ColumnHandle(name="id", type=pa.int32()), row_id]
        fragments = []
        for split in connector.get_split_manager().get_splits(
            session=session, table_handle=handle, columns=columns, constraint=Constraint()
        ):
            source = connector.get_page_source_provider().create_page_source(
                session=session, split=split, table_handle=handle, columns=columns
            )
            while (page := source.get_next_page()) is not None:
                source.delete_rows(page.column(1))
            fragments.extend(source.finish())
            source.close()
        assert staged(tmp_path)
        engine.execute("UPDATE race SET v = 'x' WHERE id = 1")  # another statement commits first
        with pytest.raises(MergekitError) as conflict:
            metadata.finish_delete(session=session, table_handle=handle, fragments=fragments)
        assert conflict.value.code == ErrorCode.TRANSACTION_CONFLICT
        metadata.abort_delete(session=session, table_handle=handle)
        assert not staged(tmp_path)
        assert sorted(engine.execute("SELECT id, v FROM race").rows()) == [(1, "x"), (2, "b")]

    def test_page_source_abort_removes_its_file(self, engine: Any, tmp_path: Path) -> None:
        engine.execute("CREATE TABLE ab (id INTEGER)")
        engine.execute("INSERT INTO ab VALUES (1)")
        connector = open_catalog(tmp_path)
        metadata, session = connector.get_metadata(), ConnectorSession()
        table = metadata.get_table_handle(session=session, table=SchemaTableName(schema="default", table="ab"))
        row_id = metadata.get_update_row_id_column_handle(session=session, table_handle=table, updated_columns=[])
        column = ColumnHandle(name="id", type=pa.int32())
        handle = metadata.begin_update(session=session, table_handle=table, updated_columns=[column])
        (split,) = connector.get_split_manager().get_splits(
            session=session, table_handle=handle, columns=[column, row_id], constraint=Constraint()
        )
        source = connector.get_page_source_provider().create_page_source(
            session=session, split=split, table_handle=handle, columns=[column, row_id]
        )
        page = source.get_next_page()
        source.update_rows(page, [0, 1])
        assert len(source.finish()) == 1 and staged(tmp_path)
        source.abort()
        source.close()
        assert not staged(tmp_path)
        metadata.abort_update(session=session, table_handle=handle)


class TestJsonlRowLevelTinySplits(BaseConnectorTest):
    """A second configuration: every split holds at most two rows, so every DELETE and UPDATE spans tasks."""

    unsupported = {Behavior.MERGE, Behavior.NOT_MATCHED_BY_SOURCE}
    not_supported_message = MERGE_NEEDS_MERGE_SPI
    scenario_behaviors = frozenset({Behavior.UPDATE, Behavior.DELETE})
    kit_tests = frozenset(
        {
            "test_types_round_trip",
            "test_predicates_on_every_type",
            "test_failed_row_level_statements_leave_nothing_behind",
        }
    )

    def catalog(self, tmp_path):
        return {"connector": "jsonl-rowlevel", "root": str(tmp_path), "split_rows": 2}
