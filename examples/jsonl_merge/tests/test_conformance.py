"""The mergekit conformance kit against jsonl-merge, plus a few promises of its own."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from mergekit_jsonl_merge import JsonlMergeConnectorFactory
from mergekit_jsonl_merge._connector import ROW_ID_TYPE

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import MERGE_PAGE_LAYOUT, ConnectorSession, Constraint, MergeOperation, SchemaTableName
from mergekit.testing import BaseConnectorTest, local_session


class TestJsonlMergeConformance(BaseConnectorTest):
    def catalog(self, tmp_path):
        return {"connector": "jsonl-merge", "root": str(tmp_path)}


# ---- jsonl-merge's own promises


@pytest.fixture
def engine(tmp_path):
    engine = Engine(spark=local_session(), catalogs={"lake": {"connector": "jsonl-merge", "root": str(tmp_path)}})
    yield engine
    engine.close()


def table_dir(root: Path, table: str = "t") -> Path:
    return root / "default" / table


def manifest(root: Path, table: str = "t") -> dict:
    return json.loads((table_dir(root, table) / "_manifest.json").read_text())


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix != ".lock"}


def test_files_are_plain_json_lines(engine, tmp_path):
    engine.execute("CREATE TABLE t (id INTEGER, d DECIMAL(12,2), dt DATE, ts TIMESTAMP, s VARCHAR, bin VARBINARY)")
    engine.execute(
        "INSERT INTO t VALUES (1, CAST('1.50' AS DECIMAL(12,2)), DATE '2024-02-29', "
        "TIMESTAMP '2024-02-29 12:34:56.123456', 'a\"b', X'00FF'), (2, NULL, NULL, NULL, NULL, NULL)"
    )
    entries = manifest(tmp_path)["files"]  # one data file per writer task that received rows
    lines = [line for e in entries for line in (table_dir(tmp_path) / e["name"]).read_text().splitlines()]
    rows = sorted((json.loads(line) for line in lines), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "d": "1.50", "dt": "2024-02-29", "ts": "2024-02-29 12:34:56.123456", "s": 'a"b', "bin": "AP8="},
        {"id": 2, "d": None, "dt": None, "ts": None, "s": None, "bin": None},
    ]


def test_unknown_and_missing_options_are_refused(tmp_path):
    with pytest.raises(MergekitError) as err:
        Engine(spark=local_session(), catalogs={"lake": {"connector": "jsonl-merge", "root": str(tmp_path), "rot": 1}})
    assert err.value.code == ErrorCode.INVALID_ARGUMENTS and "'rot'" in str(err.value)
    assert err.value.details["option"] == "rot"
    with pytest.raises(MergekitError) as err:
        JsonlMergeConnectorFactory().create(catalog_name="lake", config={}, context=None)
    assert err.value.code == ErrorCode.INVALID_ARGUMENTS and "'root'" in str(err.value)


def test_several_files_are_several_splits_and_survive_a_new_engine(engine, tmp_path):
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    engine.execute("INSERT INTO t VALUES (3, 'c')")
    connector = JsonlMergeConnectorFactory().create(catalog_name="lake", config={"root": str(tmp_path)}, context=None)
    session = ConnectorSession(catalog="lake")
    metadata = connector.get_metadata()
    handle = metadata.get_table_handle(session=session, table=SchemaTableName(schema="default", table="t"))
    splits = connector.get_split_manager().get_splits(
        session=session, table_handle=handle, columns=[], constraint=Constraint()
    )
    # a split per data file: one per INSERT on the driver tier, one per Spark task on the Spark tier
    assert len(splits) == len(handle.manifest.files) >= 2
    other = Engine(spark=local_session(), catalogs={"lake": {"connector": "jsonl-merge", "root": str(tmp_path)}})
    try:
        assert other.execute("SELECT id, v FROM t ORDER BY id").rows() == [(1, "a"), (2, "b"), (3, "c")]
    finally:
        other.close()


def test_statements_run_in_spark_workers(engine, tmp_path):
    engine.execute("SET SESSION driver_tier = 'off'")
    engine.execute("CREATE TABLE t (id INTEGER, qty DECIMAL(10,2))")
    engine.execute("INSERT INTO t VALUES (1, 1.25), (2, 2.5), (3, 0)")
    result = engine.execute(
        """MERGE INTO t USING (VALUES (1, 10), (3, 0), (4, 7)) AS s(id, qty) ON t.id = s.id
           WHEN MATCHED AND s.qty = 0 THEN DELETE
           WHEN MATCHED THEN UPDATE SET qty = t.qty + s.qty
           WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.qty)"""
    )
    assert result.row_count == 3
    assert os.getpid() not in result.metrics.get("writer_pids", [os.getpid() + 1])
    assert engine.execute("SELECT id, qty FROM t ORDER BY id").rows() == [
        (1, decimal.Decimal("11.25")),
        (2, decimal.Decimal("2.50")),
        (4, decimal.Decimal("7.00")),
    ]
    assert engine.execute("SELECT count(*) FROM t").rows() == [(3,)]


def _merge_page(rows: list[tuple], row_ids: list[dict | None], operations: list[int]) -> pa.RecordBatch:
    data = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.string())])
    schema = MERGE_PAGE_LAYOUT.schema(data, ROW_ID_TYPE)
    columns = [
        pa.array([r[0] for r in rows], pa.int32()),
        pa.array([r[1] for r in rows], pa.string()),
        pa.array(operations, pa.int8()),
        pa.array([0] * len(rows), pa.int32()),
        pa.array(row_ids, ROW_ID_TYPE),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def test_concurrent_commit_conflicts_and_abort_removes_staged_files(engine, tmp_path):
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    before = files(tmp_path)
    connector = JsonlMergeConnectorFactory().create(catalog_name="lake", config={"root": str(tmp_path)}, context=None)
    metadata = connector.get_metadata()
    session = ConnectorSession(catalog="lake", query_id="q-conflict")
    handle = metadata.get_table_handle(session=session, table=SchemaTableName(schema="default", table="t"))
    merge = metadata.begin_merge(session=session, table_handle=handle, update_case_columns={})
    sink = connector.get_page_sink_provider().create_merge_sink(session=session, merge_handle=merge, sink_id=0)
    entry = handle.manifest.files[0]  # (the INSERT's file; on the Spark tier one of its tasks' files)
    sink.store_merged_rows(
        _merge_page(
            [(None, None), (9, "z")],
            [{"file": entry.name, "pos": 0}, None],
            [MergeOperation.DELETE, MergeOperation.INSERT],
        )
    )
    fragments = sink.finish()
    assert len(files(tmp_path) - before) == 2  # a data file and a deletion file, staged
    engine.execute("DELETE FROM t WHERE id = 2")  # another statement commits in between
    committed = files(tmp_path)
    with pytest.raises(MergekitError) as err:
        metadata.finish_merge(session=session, merge_handle=merge, fragments=fragments)
    assert err.value.code == ErrorCode.TRANSACTION_CONFLICT
    metadata.abort_merge(session=session, merge_handle=merge)
    assert not [f for f in files(tmp_path) if merge.prefix in f]
    assert {f for f in committed if merge.prefix not in f} == files(tmp_path)
    assert engine.execute("SELECT id, v FROM t").rows() == [(1, "a")]


def test_sink_abort_removes_its_files(engine, tmp_path):
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
    before = files(tmp_path)
    connector = JsonlMergeConnectorFactory().create(catalog_name="lake", config={"root": str(tmp_path)}, context=None)
    metadata = connector.get_metadata()
    session = ConnectorSession(catalog="lake", query_id="q-abort")
    handle = metadata.get_table_handle(session=session, table=SchemaTableName(schema="default", table="t"))
    merge = metadata.begin_merge(session=session, table_handle=handle, update_case_columns={})
    sink = connector.get_page_sink_provider().create_merge_sink(session=session, merge_handle=merge, sink_id=3)
    sink.store_merged_rows(_merge_page([(1, "a")], [None], [MergeOperation.INSERT]))
    assert files(tmp_path) != before
    sink.abort()
    assert files(tmp_path) == before
    metadata.abort_merge(session=session, merge_handle=merge)  # nothing left: must not raise
    assert engine.execute("SELECT count(*) FROM t").rows() == [(0,)]


def test_splits_are_pruned_by_file_statistics(engine, tmp_path):
    engine.execute("CREATE TABLE t (id INTEGER, dt DATE, ts TIMESTAMP, s VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, DATE '2024-01-01', TIMESTAMP '2024-01-01 10:00:00', 'a')")
    engine.execute("INSERT INTO t VALUES (5, DATE '2024-06-01', TIMESTAMP '2024-06-01 10:00:00', 'm')")
    engine.execute("INSERT INTO t VALUES (NULL, NULL, NULL, NULL)")
    connector = JsonlMergeConnectorFactory().create(catalog_name="lake", config={"root": str(tmp_path)}, context=None)
    session = ConnectorSession(catalog="lake")
    handle = connector.get_metadata().get_table_handle(
        session=session, table=SchemaTableName(schema="default", table="t")
    )

    def splits(**constraint):
        found = connector.get_split_manager().get_splits(
            session=session, table_handle=handle, columns=[], constraint=Constraint(**constraint)
        )
        return len(found)

    assert splits() == 3
    assert splits(equalities={"id": frozenset({5})}) == 1
    assert splits(equalities={"id": frozenset({decimal.Decimal("5.0"), 7})}) == 1
    assert splits(equalities={"id": frozenset({decimal.Decimal("2.5")})}) == 0
    assert splits(ranges={"s": ("b", None)}) == 1
    # the engine's bounds need not have the column's type: a timestamp for a DATE column, a date for a TIMESTAMP
    assert splits(ranges={"dt": (dt.datetime(2024, 1, 1, 0, 0, 1), None)}) == 1
    assert splits(ranges={"ts": (None, dt.date(2024, 1, 2))}) == 1
    assert splits(ranges={"ts": (dt.date(2025, 1, 1), None)}) == 0
    # and what it cannot order keeps every file
    assert splits(equalities={"s": frozenset({1})}) == 3
    for where, expected in [
        ("dt >= TIMESTAMP '2024-01-01 00:00:01'", [(5,)]),
        ("ts <= DATE '2024-01-02'", [(1,)]),
        ("id = 5.0", [(5,)]),
        ("id IN (1, 5) AND s > 'b'", [(5,)]),
        ("id IS NULL", [(None,)]),
    ]:
        assert engine.execute(f"SELECT id FROM t WHERE {where}").rows() == expected, where
