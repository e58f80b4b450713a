"""Automatic compaction (issue 29, "reads stay flat by themselves"): after commits, small files are merged without a
CALL, the table and its history read the same, and the table properties ``auto_compact`` and
``auto_compact_files`` control it. Small statements on the driver tier: no JVM starts (``Engine.spark_started``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mergekit_journal._compaction import FULL_COMPACTION_DELTA_FRACTION, plan_auto_compaction
from mergekit_journal._files.storage import ROW_GROUP_ROWS
from mergekit_journal._snapshots import FileRow

from mergekit import Engine
from mergekit.errors import MergekitError
from mergekit.spi import ConnectorSession, SchemaTableName

UPSERT = (
    "MERGE INTO t USING (VALUES ({id}, 'v{i}')) AS s(id, name) ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)"
)


def _run(engine: Engine, sql: str):
    result = engine.execute(sql)
    assert not engine.spark_started, sql
    return result


def _operations(engine: Engine) -> list[str]:
    """The table's history once the compactions its commits made due (in the background) have run."""
    assert engine.catalogs.get("lake").wait_for_compactions(timeout=60)
    return [r[2] for r in engine.execute("DESCRIBE HISTORY t").rows()]


@pytest.fixture
def engine(tmp_path):
    engine = Engine.local(str(tmp_path / "warehouse"))
    yield engine
    engine.close()


def test_small_commits_are_compacted_and_read_the_same(spark, tmp_path):
    engine = Engine.local(str(tmp_path / "warehouse"), spark=spark)  # (time travel reads on Spark)
    engine.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id))")
    expected = {}
    for i in range(40):
        key = i % 13
        engine.execute(UPSERT.format(id=key, i=i))
        expected[key] = f"v{i}"
        if i == 20:
            at_20 = sorted(expected.items())
    assert engine.execute("SELECT * FROM t ORDER BY id").rows() == sorted(expected.items())
    assert engine.catalogs.get("lake").wait_for_compactions(timeout=60)
    operations = [r[2] for r in engine.execute("DESCRIBE HISTORY t").rows()]
    assert operations.count("write") == 40
    # 40 one-row commits: a compaction every 8 or so (in the background: one may take in more commits' files)
    assert operations.count("compact") >= 2
    # time travel reads the versions before a compaction from the files they had
    version_20 = [r[0] for r in engine.execute("DESCRIBE HISTORY t").rows() if r[2] == "write"][::-1][20]
    assert engine.execute(f"SELECT * FROM t FOR VERSION AS OF {version_20} ORDER BY id").rows() == at_20
    # and the change feed lists the writes' changes, not the compactions'
    changes = engine.execute(f"SELECT id, name, _change_type FROM table_changes('t', {version_20 + 1})").rows()
    assert sorted(changes) == sorted((i % 13, f"v{i}", "update") for i in range(21, 40))
    engine.close()


def test_auto_compact_off_and_on_by_table_property(engine, tmp_path):
    _run(engine, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id)) WITH (auto_compact = false)")
    for i in range(12):
        _run(engine, f"INSERT INTO t VALUES ({i}, 'r{i}')")
    assert "compact" not in _operations(engine)
    _run(engine, "ALTER TABLE t SET PROPERTIES auto_compact = true, auto_compact_files = 3")
    _run(engine, "INSERT INTO t VALUES (100, 'r100')")
    assert _operations(engine)[:3] == ["compact", "write", "set_properties"]
    assert [r[0] for r in _run(engine, "SELECT id FROM t ORDER BY id").rows()] == [*range(12), 100]


def test_auto_compact_files_must_be_at_least_two(engine):
    with pytest.raises(MergekitError) as err:
        _run(engine, "CREATE TABLE t (id BIGINT, PRIMARY KEY (id)) WITH (auto_compact_files = 1)")
    assert err.value.code.name == "INVALID_TABLE_PROPERTY"
    assert "auto_compact_files" in str(err.value)


def _file(file_id: int, rows: int, *, supersedes: bool = False) -> FileRow:
    return FileRow(
        file_id=file_id,
        path=f"f{file_id}",
        added_seq=file_id,
        removed_seq=None,
        row_version=file_id,
        committed_at=file_id,
        explicit_versions=False,
        supersedes=supersedes,
        key_min=0,
        key_max=100,
        min_version=file_id,
        max_version=file_id,
        row_count=rows,
        size_bytes=rows * 10,
        vacuumed=False,
        order_seq=file_id,
    )


SMALL = 125_000  # rows_per_file 1M / SMALL_FILE_SHARE


def test_the_run_is_the_newest_files_no_larger_than_the_newer_ones_together():
    files = [_file(1, 1_000_000), *[_file(i, 10) for i in range(2, 9)]]
    assert plan_auto_compaction(files, min_files=8, base_files=8, small_rows=SMALL) is None  # 7 small files: not yet
    files.append(_file(9, 10))
    due = plan_auto_compaction(files, min_files=8, base_files=9, small_rows=SMALL)
    assert due is not None and not due.full
    assert [f.file_id for f in due.files] == list(range(2, 10))  # the million-row file is left alone
    # levels: a merged file of 80 rows joins the next run once the files after it hold as many rows
    files = [_file(1, 1_000_000), _file(2, 80), *[_file(i, 10) for i in range(3, 11)]]
    assert [f.file_id for f in plan_auto_compaction(files, min_files=8, base_files=10, small_rows=SMALL).files] == list(
        range(2, 11)
    )
    # a raw journal file stops the run (its versions are ordered only by a full resolution)
    assert (
        plan_auto_compaction(files, min_files=8, base_files=10, small_rows=SMALL, raw_file_ids=frozenset({9})) is None
    )


def test_a_table_whose_deltas_outgrow_a_share_of_it_is_compacted_in_full():
    deltas = int(2_000_000 * FULL_COMPACTION_DELTA_FRACTION) // 8
    files = [_file(1, 1_000_000), *[_file(i, deltas, supersedes=True) for i in range(2, 10)]]
    due = plan_auto_compaction(files, min_files=8, base_files=1, small_rows=SMALL)
    assert due is not None and due.full and len(due.files) == 9
    files = [_file(1, 1_000_000), *[_file(i, deltas // 4, supersedes=True) for i in range(2, 10)]]
    assert not plan_auto_compaction(files, min_files=8, base_files=1, small_rows=SMALL).full
    # one large MERGE's files (not small, fewer than auto_compact_files): nothing, however many rows they change
    files = [*[_file(i, 1_000_000) for i in range(1, 11)], *[_file(i, 400_000, supersedes=True) for i in range(11, 14)]]
    assert plan_auto_compaction(files, min_files=8, base_files=10, small_rows=SMALL) is None
    # eight of them: the table is compacted in full
    files += [_file(i, 400_000, supersedes=True) for i in range(14, 19)]
    assert plan_auto_compaction(files, min_files=8, base_files=10, small_rows=SMALL).full


def _read_snapshot(engine: Engine):
    """A compaction to run by hand: the journal's metadata, table t's handle and its snapshot's files."""
    metadata = engine.catalogs.get("lake").get_metadata()
    handle = metadata.get_table_handle(
        session=ConnectorSession(catalog="lake"), table=SchemaTableName(schema="default", table="t")
    )
    with metadata.catalog.read() as cur:
        files = metadata.files_at(cur, handle.table_id, handle.snapshot_seq)
    return metadata, handle, files


@pytest.mark.parametrize("full", [True, False], ids=["full", "run"])
def test_a_compaction_that_writes_overtook_goes_before_them_in_commit_order(spark, tmp_path, full):
    """Statements that commit rows while a compaction runs do not stop it: its files take the place in commit
    order of the files they replace, before those statements' files, so every read (a key lookup on the driver, a
    full scan on Spark, time travel to each version) shows what it showed before the compaction."""
    from mergekit_journal._compaction import compact_files

    engine = Engine.local(str(tmp_path / "warehouse"), connector="journal", spark=spark)
    engine.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id)) WITH (auto_compact = false)")
    engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    for i in range(3):
        engine.execute(UPSERT.format(id=1, i=i))
    metadata, handle, files = _read_snapshot(engine)
    files = files if full else files[1:]  # the run: the upserts' files, not the INSERT's
    # commits after the compaction read its files: an update of a key it rewrites, a delete, an insert
    engine.execute(UPSERT.format(id=1, i=99))
    engine.execute("DELETE FROM t WHERE id = 2")
    engine.execute(UPSERT.format(id=5, i=5))
    versions = [r[0] for r in engine.execute("DESCRIBE HISTORY t").rows()]
    before = {v: engine.execute(f"SELECT * FROM t FOR VERSION AS OF {v} ORDER BY id").rows() for v in versions}
    latest = [(1, "v99"), (3, "c"), (4, "d"), (5, "v5")]
    assert before[versions[0]] == latest

    result = compact_files(metadata, handle, files, cutoff=None, merge_id="compact-test", summary={}, full=full)
    assert result["files_removed"] == len(files)
    assert _operations(engine)[:4] == ["compact", "write", "write", "write"]
    assert engine.execute("SELECT * FROM t ORDER BY id").rows() == latest  # the driver tier
    assert engine.execute("SELECT * FROM t WHERE id IN (1, 2, 5) ORDER BY id").rows() == [(1, "v99"), (5, "v5")]
    engine.execute("SET SESSION driver_tier = 'off'")
    assert engine.execute("SELECT * FROM t ORDER BY id").rows() == latest  # Spark: the base read natively
    for v, rows in before.items():
        assert engine.execute(f"SELECT * FROM t FOR VERSION AS OF {v} ORDER BY id").rows() == rows, v
    engine.execute("RESET SESSION driver_tier")
    engine.execute(UPSERT.format(id=1, i=100))  # and the table takes the next commit
    assert engine.execute("SELECT * FROM t WHERE id = 1").rows() == [(1, "v100")]
    engine.close()


@pytest.mark.parametrize(
    "change, words",
    [
        ("TRUNCATE TABLE t", "TRUNCATE"),
        ("ALTER TABLE t SET PROPERTIES auto_compact_files = 4", "SET PROPERTIES"),
        ("ALTER TABLE t ADD COLUMN note VARCHAR", "ADD COLUMN"),
    ],
)
def test_a_compaction_overtaken_by_anything_but_writes_is_refused(tmp_path, change, words):
    """A TRUNCATE, a change of properties or columns (or another compaction) while a compaction runs: the
    compaction is refused with TRANSACTION_CONFLICT, its files deleted, and the table is as that commit left it."""
    from mergekit_journal._compaction import compact_files

    warehouse = tmp_path / "warehouse"
    engine = Engine.local(str(warehouse), connector="journal")
    _run(engine, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id)) WITH (auto_compact = false)")
    for i in range(3):
        _run(engine, UPSERT.format(id=i, i=i))
    metadata, handle, files = _read_snapshot(engine)
    _run(engine, UPSERT.format(id=1, i=99))
    _run(engine, change)
    expected = _run(engine, "SELECT * FROM t ORDER BY id").rows()
    with pytest.raises(MergekitError) as err:
        compact_files(metadata, handle, files, cutoff=None, merge_id="compact-test", summary={})
    assert err.value.code.name == "TRANSACTION_CONFLICT"
    assert words in str(err.value) and "during its compaction" in str(err.value)
    assert _run(engine, "SELECT * FROM t ORDER BY id").rows() == expected
    assert "compact" not in _operations(engine)
    assert not list(warehouse.rglob("compact-test"))
    engine.close()


def test_a_commit_returns_before_its_automatic_compaction_runs(tmp_path, monkeypatch):
    """The automatic compaction a commit makes due runs in the background: the statement returns at once, the next
    statements commit while it runs (it goes before them in commit order), ``vacuum`` waits for it (the files it
    wrote are not yet referenced), ``CALL compact`` succeeds beside it, and closing the engine waits for it."""
    import threading

    from mergekit_journal import _compaction

    started, release = threading.Event(), threading.Event()
    commit = _compaction._commit

    def slow_commit(*args, **kwargs):  # the compaction's files are written; its catalog transaction waits
        started.set()
        assert release.wait(60)
        return commit(*args, **kwargs)

    monkeypatch.setattr(_compaction, "_commit", slow_commit)
    engine = Engine.local(str(tmp_path / "warehouse"), connector="journal")
    _run(engine, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id)) WITH (auto_compact_files = 3)")
    for i in range(3):
        _run(engine, UPSERT.format(id=i, i=i))  # the third makes a compaction due
    assert started.wait(60)
    for i in range(3, 6):  # commits while the compaction waits
        _run(engine, UPSERT.format(id=i % 4, i=i))
    connector = engine.catalogs.get("lake")
    assert not connector.wait_for_compactions(timeout=0.2)  # still running
    assert "compact" not in [r[2] for r in _run(engine, "DESCRIBE HISTORY t").rows()]
    release.set()
    assert connector.wait_for_compactions(timeout=60)
    operations = [r[2] for r in _run(engine, "DESCRIBE HISTORY t").rows()]
    assert operations.count("write") == 6 and "compact" in operations
    expected = [(0, "v4"), (1, "v5"), (2, "v2"), (3, "v3")]
    assert _run(engine, "SELECT * FROM t ORDER BY id").rows() == expected
    assert _run(engine, "SELECT * FROM t WHERE id IN (0, 1) ORDER BY id").rows() == expected[:2]

    for procedure in ("vacuum(table => 't', retain_seconds => 0)", "compact(table => 't')"):
        release.clear()
        started.clear()
        for i in range(3):
            _run(engine, UPSERT.format(id=10 + i, i=i))
        assert started.wait(60)
        threading.Timer(0.5, release.set).start()
        _run(engine, f"CALL lake.system.{procedure}")
        assert release.is_set(), procedure  # it waited for the compaction
        expected += [(10 + i, f"v{i}") for i in range(3)]
        assert _run(engine, "SELECT * FROM t ORDER BY id").rows() == sorted(set(expected)), procedure
        _run(engine, "DELETE FROM t WHERE id IN (10, 11, 12)")
        expected = expected[:4]
    assert connector.wait_for_compactions(timeout=60)

    # a compaction due when the engine closes: close waits for it
    release.clear()
    started.clear()
    for i in range(6, 9):
        _run(engine, UPSERT.format(id=i, i=i))
    assert started.wait(60)
    threading.Timer(0.5, release.set).start()
    engine.close()
    assert release.is_set()
    engine = Engine.local(str(tmp_path / "warehouse"), connector="journal")
    assert _operations(engine)[0] == "compact"
    assert _run(engine, "SELECT count(*) FROM t").rows() == [(7,)]
    engine.close()


def test_compaction_writes_row_groups_as_the_sinks_do(engine, tmp_path):
    """A lookup of one key decodes its whole row group: compaction writes row groups of ``ROW_GROUP_ROWS`` rows,
    as the sinks do, so that a table reads keys as fast after ``CALL compact`` as before it."""
    engine.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id))")
    n = 2 * ROW_GROUP_ROWS + 5
    engine.insert_arrow("t", pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"n{i}" for i in range(n)]}))
    _run(engine, UPSERT.format(id=7, i=1))
    _run(engine, "CALL lake.system.compact(table => 'default.t')")
    compacted = [p for p in (tmp_path / "warehouse").rglob("compacted-*.parquet")]
    groups = [pq.ParquetFile(p).metadata.row_group(i).num_rows for p in compacted for i in range(3)]
    # n rows, and the version of key 7 the upsert superseded (kept for time travel within the retention)
    assert groups == [ROW_GROUP_ROWS, ROW_GROUP_ROWS, 6], groups
    assert _run(engine, "SELECT name FROM t WHERE id IN (7, 8) ORDER BY id").rows() == [("v1",), ("n8",)]


def test_a_catalog_from_before_order_seq_gets_the_column_and_reads_as_before(tmp_path):
    """A catalog written by a mergekit without ``mk_files.order_seq``: opening it adds the column (NULL: each
    file's own commit), the table reads as before, and a compaction records its files' place."""
    import sqlite3

    warehouse = tmp_path / "warehouse"
    engine = Engine.local(str(warehouse), connector="journal")
    _run(engine, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id)) WITH (auto_compact = false)")
    for i in range(3):
        _run(engine, UPSERT.format(id=i % 2, i=i))
    engine.close()
    with sqlite3.connect(warehouse / "_catalog.sqlite") as con:
        con.execute("ALTER TABLE mk_files DROP COLUMN order_seq")
    engine = Engine.local(str(warehouse), connector="journal")
    with sqlite3.connect(warehouse / "_catalog.sqlite") as con:
        assert [r[0] for r in con.execute("SELECT order_seq FROM mk_files")] == [None, None, None]
    assert _run(engine, "SELECT * FROM t ORDER BY id").rows() == [(0, "v2"), (1, "v1")]
    _run(engine, "CALL lake.system.compact(table => 't')")
    assert _run(engine, "SELECT * FROM t WHERE id IN (0, 1) ORDER BY id").rows() == [(0, "v2"), (1, "v1")]
    engine.close()
    with sqlite3.connect(warehouse / "_catalog.sqlite") as con:
        assert con.execute("SELECT order_seq FROM mk_files WHERE removed_seq IS NULL").fetchall() == [(3,)]
