"""mergekit-csvdir's tests: mergekit's conformance kit, plus what only this connector promises.

Run from the repository root: ``pytest examples/csvdir/tests`` (after ``pip install ./examples/csvdir``).
The kit's ``engine`` fixture uses the active Spark session or starts a local one.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from mergekit_csvdir import ROW_ID_TYPE, CsvDirectoryConnectorFactory

from mergekit import Engine, plugins
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import MERGE_PAGE_LAYOUT, ConnectorSession, SchemaTableName
from mergekit.testing import BaseConnectorTest, Behavior, local_session


class TestCsvDirConformance(BaseConnectorTest):
    """Every scenario of the kit, on a fresh catalog directory per test. csvdir stores no VARBINARY and cannot
    add columns: the kit checks those fail with exactly these NOT_SUPPORTED messages."""

    unsupported = {Behavior.TYPE_VARBINARY, Behavior.ADD_COLUMN}
    not_supported_messages = {Behavior.TYPE_VARBINARY: "csvdir cannot store column 'v' of type varbinary"}

    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "csvdir", "root": str(tmp_path)}


# ---- csvdir's own promises ---------------------------------------------------------------------------


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(spark=local_session(), catalogs={"lake": {"connector": "csvdir", "root": str(tmp_path)}})
    yield engine
    engine.close()


def _table_dir(root: Path, table: str) -> Path:
    return root / "default" / table


def _manifest(root: Path, table: str) -> dict[str, Any]:
    return json.loads((_table_dir(root, table) / "_manifest.json").read_text())


def _referenced(root: Path, table: str) -> set[str]:
    names = {"_manifest.json", "_manifest.lock"}
    for f in _manifest(root, table)["files"]:
        names.update([f["name"], *f["deletes"]])
    return names


def test_files_are_plain_csv(engine: Engine, tmp_path: Path) -> None:
    """Anyone can read a table with the csv module: header line, then rows; deletion files are (file, pos)."""
    engine.execute("CREATE TABLE t (id INTEGER, name VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two, with a comma'), (3, 'three')")
    engine.execute("UPDATE t SET name = 'TWO' WHERE id = 2")
    live: list[tuple[str, str]] = []
    folder = _table_dir(tmp_path, "t")
    for f in _manifest(tmp_path, "t")["files"]:
        deleted = set()
        for d in f["deletes"]:
            with open(folder / d, newline="") as fh:
                deleted |= {int(r["pos"]) for r in csv.DictReader(fh) if r["file"] == f["name"]}
        with open(folder / f["name"], newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert list(rows[0]) == ["id", "name"]
        live += [(r["id"], r["name"]) for pos, r in enumerate(rows) if pos not in deleted]
    assert sorted(live) == [("1", "one"), ("2", "TWO"), ("3", "three")]
    assert _manifest(tmp_path, "t")["version"] == 2


def test_types_round_trip(engine: Engine) -> None:
    engine.execute(
        "CREATE TABLE t (b BOOLEAN, i INTEGER, l BIGINT, d DOUBLE, m DECIMAL(10,2), s VARCHAR, dt DATE, ts TIMESTAMP)"
    )
    engine.execute(
        "INSERT INTO t VALUES (true, 1, 10000000000, 0.1, 12.34, '', DATE '2024-02-29', "
        "TIMESTAMP '2024-02-29 12:34:56.123456'), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
        "(false, -2, -1, -1.5, -0.01, 'a \"quoted\"\nline', DATE '1999-12-31', TIMESTAMP '1970-01-01 00:00:00')"
    )
    engine.execute("UPDATE t SET i = i + 1")  # rewrites every row through CSV once more
    rows = sorted(engine.execute("SELECT * FROM t").rows(), key=lambda r: (r[1] is None, r[1]))
    assert [tuple(r) for r in rows] == [
        (
            False,
            -1,
            -1,
            -1.5,
            decimal.Decimal("-0.01"),
            'a "quoted"\nline',
            dt.date(1999, 12, 31),
            dt.datetime(1970, 1, 1),
        ),
        (
            True,
            2,
            10000000000,
            0.1,
            decimal.Decimal("12.34"),
            "",
            dt.date(2024, 2, 29),
            dt.datetime(2024, 2, 29, 12, 34, 56, 123456),
        ),
        (None,) * 8,
    ]
    assert engine.execute("SELECT count(*) FROM t WHERE s = ''").rows()[0][0] == 1


def test_fully_deleted_files_leave_the_manifest(engine: Engine, tmp_path: Path) -> None:
    engine.execute("CREATE TABLE t (id INTEGER)")
    engine.execute("INSERT INTO t VALUES (1), (2)")
    engine.execute("INSERT INTO t VALUES (3)")
    assert engine.execute("DELETE FROM t WHERE id < 3").row_count == 2
    files = _manifest(tmp_path, "t")["files"]
    assert [(f["rows"], f["deleted"]) for f in files] == [(1, 0)]
    assert engine.execute("SELECT id FROM t").rows() == [(3,)]
    assert engine.execute("SELECT count(*) FROM t").rows() == [(1,)]


@pytest.mark.parametrize(
    "statement, code",
    [
        # the kit's duplicate-match rule fails after sinks may have staged files
        (
            "MERGE INTO t USING (VALUES (1, 'x'), (1, 'y')) s(id, v) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
            ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES,
        ),
        ("INSERT INTO t SELECT id + 10, CASE WHEN id = 2 THEN NULL ELSE v END FROM t", ErrorCode.CONSTRAINT_VIOLATION),
    ],
    ids=["duplicate_match", "not_null"],
)
def test_failed_statement_leaves_no_staged_files(
    engine: Engine, tmp_path: Path, statement: str, code: ErrorCode
) -> None:
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR NOT NULL)")
    engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    before = _manifest(tmp_path, "t")
    with pytest.raises(MergekitError) as info:
        engine.execute(statement)
    assert info.value.code is code
    assert _manifest(tmp_path, "t") == before
    on_disk = {p.name for p in _table_dir(tmp_path, "t").iterdir()}
    assert on_disk == _referenced(tmp_path, "t")
    assert sorted(engine.execute("SELECT * FROM t").rows()) == [(1, "a"), (2, "b"), (3, "c")]


def _spi(root: Path) -> tuple[Any, Any, ConnectorSession]:
    """A second csvdir connector on the same root: another writer, as a second process would be."""
    connector = CsvDirectoryConnectorFactory().create(
        catalog_name="lake", config={"root": str(root)}, context=plugins.connector_context()
    )
    return connector, connector.get_metadata(), ConnectorSession(catalog="lake")


def _begin(metadata: Any, session: ConnectorSession, table: str) -> Any:
    handle = metadata.get_table_handle(session=session, table=SchemaTableName(schema="default", table=table))
    return metadata.begin_merge(session=session, table_handle=handle, update_case_columns={})


def test_conflict_aborts_and_removes_staged_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer commits while our UPDATE runs: our finish_merge fails with TRANSACTION_CONFLICT, the
    engine calls abort_merge, and the files our sinks staged are gone."""
    connector, metadata, _ = _spi(tmp_path)
    engine = Engine(spark=local_session(), catalogs={"lake": connector})
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    _, other, other_session = _spi(tmp_path)
    staged_at_commit: list[str] = []
    finish_merge = metadata.finish_merge

    def racing_finish_merge(*, session: ConnectorSession, merge_handle: Any, fragments: Any) -> None:
        staged_at_commit.extend(n for n in os.listdir(_table_dir(tmp_path, "t")) if n.startswith(session.query_id))
        other.finish_merge(session=other_session, merge_handle=_begin(other, other_session, "t"), fragments=[])
        finish_merge(session=session, merge_handle=merge_handle, fragments=fragments)

    monkeypatch.setattr(metadata, "finish_merge", racing_finish_merge)
    with pytest.raises(MergekitError) as info:
        engine.execute("UPDATE t SET v = 'lost' WHERE id = 1")
    assert info.value.code is ErrorCode.TRANSACTION_CONFLICT
    assert str(info.value).startswith("[TRANSACTION_CONFLICT] Table 'default.t' was changed by another statement")
    assert any(n.endswith(".deletes.csv") for n in staged_at_commit) and len(staged_at_commit) == 2
    assert {p.name for p in _table_dir(tmp_path, "t").iterdir()} == _referenced(tmp_path, "t")
    assert _manifest(tmp_path, "t")["version"] == 2  # CREATE, INSERT, the other writer's empty commit
    assert sorted(engine.execute("SELECT * FROM t").rows()) == [(1, "a"), (2, "b")]
    engine.close()


def test_sink_abort_removes_its_files(tmp_path: Path) -> None:
    """What an executor does when its task fails: the sink deletes what it staged."""
    engine = Engine(spark=local_session(), catalogs={"lake": {"connector": "csvdir", "root": str(tmp_path)}})
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'a')")
    engine.close()
    connector, metadata, session = _spi(tmp_path)
    merge = _begin(metadata, session, "t")
    sink = connector.get_page_sink_provider().create_merge_sink(session=session, merge_handle=merge, sink_id=0)
    schema = MERGE_PAGE_LAYOUT.schema(merge.table_handle.data_schema, ROW_ID_TYPE)
    row_id = {"file": merge.table_handle.manifest.files[0].name, "pos": 0}
    page = pa.RecordBatch.from_pylist(
        [
            {"id": 9, "v": "new", "$operation": 1, "$case_number": 0, "$row_id": None},
            {"id": None, "v": None, "$operation": 2, "$case_number": 1, "$row_id": row_id},
        ],
        schema=schema,
    )
    sink.store_merged_rows(page)
    assert len([n for n in os.listdir(_table_dir(tmp_path, "t")) if n.startswith(session.query_id)]) == 1
    sink.abort()
    assert {p.name for p in _table_dir(tmp_path, "t").iterdir()} == _referenced(tmp_path, "t")


def test_unsupported_type_and_time_travel(engine: Engine) -> None:
    with pytest.raises(MergekitError) as info:
        engine.execute("CREATE TABLE t (b VARBINARY)")
    assert str(info.value) == "[NOT_SUPPORTED] csvdir cannot store column 'b' of type varbinary"
    engine.execute("CREATE TABLE t (id INTEGER)")
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT * FROM t FOR VERSION AS OF 0")
    assert info.value.code is ErrorCode.NOT_SUPPORTED
