"""Conflicts, abort and orphan files, vacuum, time travel, change feed, compaction, DDL and read planning."""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest

from mergekit.errors import ErrorCode, MergekitError, TransactionConflictError
from mergekit.spi import Constraint, TableVersion
from tests.journal.journal_harness import DELETE, INSERT, UPDATE, name

COLS = [("id", pa.int64()), ("name", pa.string())]


@pytest.fixture
def t(make_harness):
    lake = make_harness(version_type="bigint", rows_per_file=2)
    lake.create("t", COLS, key=["id"])
    lake.insert("t", *({"id": i, "name": f"n{i}"} for i in range(1, 6)))
    return lake


def _data_files(lake) -> list[str]:
    root = os.path.join(lake.warehouse, "default")
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".parquet"))


# -- conflicts ------------------------------------------------------------------------------------------


def test_two_writers_on_the_same_key_second_commit_conflicts(t):
    base = t.handle("t")
    a = t.begin("t", base, update_columns=["name"])
    b = t.begin("t", base, update_columns=["name"])
    fa = t.write(a, [(UPDATE, {"id": 3, "name": "from a"}, {"id": 3})])
    fb = t.write(b, [(UPDATE, {"id": 3, "name": "from b"}, {"id": 3})])
    t.finish(a, fa)
    with pytest.raises(TransactionConflictError, match=r"Key \(id\)=\(3\)") as err:
        t.finish(b, fb)
    assert err.value.code == ErrorCode.TRANSACTION_CONFLICT
    assert [r["name"] for r in t.read("t") if r["id"] == 3] == ["from a"]
    assert t.handle("t").snapshot_seq == 2
    # b's staged file was removed with its failed commit.
    assert not any("/" + b.merge_id + "/" in p for p in _data_files(t))


def test_delete_racing_an_update_conflicts(t):
    base = t.handle("t")
    upd = t.begin("t", base, update_columns=["name"])
    dele = t.begin("t", base)
    fu = t.write(upd, [(UPDATE, {"id": 2, "name": "x"}, {"id": 2})])
    fd = t.write(dele, [(DELETE, {"id": 2, "name": "n2"}, {"id": 2})])
    t.finish(dele, fd)
    with pytest.raises(TransactionConflictError):
        t.finish(upd, fu)  # the seed's "update may undelete" cannot happen
    assert all(r["id"] != 2 for r in t.read("t"))


def test_concurrent_inserts_of_the_same_new_key_conflict(t):
    base = t.handle("t")
    a, b = t.begin("t", base), t.begin("t", base)
    fa = t.write(a, [(INSERT, {"id": 10, "name": "a"}, None)])
    fb = t.write(b, [(INSERT, {"id": 10, "name": "b"}, None)])
    t.finish(a, fa)
    with pytest.raises(TransactionConflictError):
        t.finish(b, fb)


def test_writers_on_disjoint_keys_both_commit(t):
    base = t.handle("t")
    a = t.begin("t", base, update_columns=["name"])
    b = t.begin("t", base, update_columns=["name"])
    fa = t.write(a, [(UPDATE, {"id": 1, "name": "a"}, {"id": 1})])
    fb = t.write(b, [(UPDATE, {"id": 5, "name": "b"}, {"id": 5}), (INSERT, {"id": 6, "name": "b"}, None)])
    t.finish(a, fa)
    t.finish(b, fb)
    assert {r["id"]: r["name"] for r in t.read("t")} == {1: "a", 2: "n2", 3: "n3", 4: "n4", 5: "b", 6: "b"}
    assert t.handle("t").snapshot_seq == 3


def test_concurrent_truncate_conflicts(t):
    mh = t.begin("t", update_columns=["name"])
    frags = t.write(mh, [(UPDATE, {"id": 1, "name": "late"}, {"id": 1})])
    t.metadata.truncate_table(session=t.session(), table_handle=t.handle("t"))
    with pytest.raises(TransactionConflictError, match="TRUNCATE"):
        t.finish(mh, frags)
    assert t.read("t") == []


# -- abort, orphans, vacuum -------------------------------------------------------------------------------


def test_abort_removes_staged_files_and_changes_nothing(t):
    before_files = _data_files(t)
    mh = t.begin("t")
    t.write(mh, [(INSERT, {"id": 50, "name": "x"}, None)], [(DELETE, {"id": 1, "name": "n1"}, {"id": 1})])
    assert len(_data_files(t)) == len(before_files) + 2  # written, but invisible
    assert [r["id"] for r in t.read("t")] == [1, 2, 3, 4, 5]
    t.metadata.abort_merge(session=t.session(), merge_handle=mh)
    assert _data_files(t) == before_files
    assert [r["id"] for r in t.read("t")] == [1, 2, 3, 4, 5]
    # abort after nothing was staged must not raise
    t.metadata.abort_merge(session=t.session(), merge_handle=t.begin("t"))


def test_crashed_writer_leaves_orphans_that_vacuum_removes(t):
    before = t.read("t")
    mh = t.begin("t")
    t.write(mh, [(INSERT, {"id": 60, "name": "orphan"}, None)])  # the driver "dies": no finish, no abort
    orphans = [p for p in _data_files(t) if mh.merge_id in p]
    assert len(orphans) == 1 and t.read("t") == before
    # Within the grace period an in-flight writer's files are kept.
    assert t.call("vacuum", table="t", retain_seconds=3600)["deleted_files"] == 0
    old = time.time() - 7200
    os.utime(orphans[0], (old, old))
    report = t.call("vacuum", table="t", retain_seconds=3600)
    assert report["orphan_files"] == 1
    assert not os.path.exists(orphans[0])
    assert t.read("t") == before


def test_sink_abort_deletes_its_file(t, monkeypatch):
    import mergekit_journal._files.sink

    monkeypatch.setattr(mergekit_journal._files.sink, "ROW_GROUP_ROWS", 1)  # write each page through at once
    mh = t.begin("t")
    provider = t.connector.get_page_sink_provider()
    sink = provider.create_merge_sink(session=t.session(), merge_handle=mh, sink_id=0)
    sink.store_merged_rows(t.page(mh.table_handle, [(INSERT, {"id": 70}, None)]))
    assert any(mh.merge_id in p for p in _data_files(t))
    sink.abort()
    assert not any(mh.merge_id in p for p in _data_files(t))


# -- time travel --------------------------------------------------------------------------------------------


def test_time_travel_by_version_and_timestamp(t):
    v1 = t.handle("t").snapshot_seq
    time.sleep(0.002)
    stamp = dt.datetime.now(dt.UTC)
    time.sleep(0.002)
    t.update("t", {"id": 1}, {"id": 1, "name": "changed"})
    t.delete("t", {"id": 2}, {"id": 2, "name": "n2"})
    assert len(t.read("t")) == 4
    old = t.read("t", version=TableVersion(version=v1))
    assert [(r["id"], r["name"]) for r in old][:2] == [(1, "n1"), (2, "n2")]
    assert t.read("t", version=TableVersion(timestamp=stamp)) == old
    assert t.read("t", version=TableVersion(version=0)) == []
    assert len(t.read("t_journal", version=TableVersion(version=v1))) == 5
    with pytest.raises(MergekitError, match="does not exist"):
        t.handle("t", TableVersion(version=99))
    with pytest.raises(MergekitError, match="did not exist"):
        t.handle("t", TableVersion(timestamp=dt.datetime(2000, 1, 1, tzinfo=dt.UTC)))
    with pytest.raises(MergekitError) as err:
        t.begin("t", t.handle("t", TableVersion(version=v1)))
    assert err.value.code == ErrorCode.NOT_SUPPORTED


# -- change feed --------------------------------------------------------------------------------------------


def _changes(lake, from_version, to_version=None):
    h = lake.metadata.get_changes_handle(
        session=lake.session(), table=lake.handle("t").table, from_version=from_version, to_version=to_version
    )
    rows, _ = lake.scan(h, ["id", "name", "_change_type", "_commit_version"])
    return sorted((r["_commit_version"], r["_change_type"], r["id"], r["name"]) for r in rows)


def test_change_feed(t):
    t.update("t", {"id": 1}, {"id": 1, "name": "u"})  # version 2
    t.delete("t", {"id": 2}, {"id": 2, "name": "n2"})  # version 3
    t.merge("t", [(UPDATE, {"id": 30, "name": "n3"}, {"id": 3})], update_columns=["id"])  # version 4: key move
    t.metadata.truncate_table(session=t.session(), table_handle=t.handle("t"))  # version 5
    assert _changes(t, 2, 4) == [
        (2, "update", 1, "u"),
        (3, "delete", 2, "n2"),
        (4, "delete", 3, "n3"),
        (4, "insert", 30, "n3"),
    ]
    assert [c for c in _changes(t, 1) if c[0] == 1] == [(1, "insert", i, f"n{i}") for i in range(1, 6)]
    assert [c for c in _changes(t, 5)] == [
        (5, "delete", 1, "u"),
        (5, "delete", 4, "n4"),
        (5, "delete", 5, "n5"),
        (5, "delete", 30, "n3"),
    ]
    meta = t.metadata.get_table_metadata(
        session=t.session(),
        table_handle=t.metadata.get_changes_handle(session=t.session(), table=t.handle("t").table, from_version=0),
    )
    assert [c.name for c in meta.columns] == ["id", "name", "_change_type", "_commit_version", "_commit_timestamp"]
    with pytest.raises(MergekitError):
        t.metadata.get_changes_handle(session=t.session(), table=t.handle("t").table, from_version=9)


# -- compaction -----------------------------------------------------------------------------------------------


def _history(lake):
    lake.update("t", {"id": 1}, {"id": 1, "name": "a"})
    lake.update("t", {"id": 1}, {"id": 1, "name": "b"})
    lake.delete("t", {"id": 2}, {"id": 2, "name": "n2"})
    lake.merge("t", [(UPDATE, {"id": 40, "name": "n4"}, {"id": 4})], update_columns=["id"])
    lake.insert("t", {"id": 2, "name": "back"})


def test_compaction_keeps_reads_and_archives_history(t):
    _history(t)
    live, journal = t.read("t"), t.read("t_journal")
    assert any(s.mode == "resolve" for s in t.splits("t"))
    report = t.call("compact", table="t")
    assert report["files_removed"] > 1 and report["rows"] == len(journal)
    assert t.read("t") == live
    after = t.read("t_journal")
    assert len(after) == len(journal)
    # The seed's background archival: superseded versions now carry their successor's version.
    id1 = sorted((r["version_number"], r["subsequent_version_number"]) for r in after if r["id"] == 1)
    assert id1 == [(1, 2), (2, 3), (3, None)]
    assert all(s.mode == "plain" for s in t.splits("t"))  # no version resolution after compaction
    # Writes after compaction resolve against the compacted files correctly.
    t.update("t", {"id": 1}, {"id": 1, "name": "c"})
    assert {r["id"]: r["name"] for r in t.read("t")}[1] == "c"
    # Time travel to before the compaction still reads the old files until vacuum removes them.
    assert t.read("t", version=TableVersion(version=1))[0]["name"] == "n1"


def test_compaction_retention_drops_old_history_and_vacuum_expires_files(t):
    _history(t)
    live = t.read("t")
    before = t.handle("t").snapshot_seq
    t.call("compact", table="t", retention=0)
    assert t.read("t") == live
    assert len(t.read("t_journal")) == len(live)  # only live versions remain
    files_before = len(_data_files(t))
    report = t.call("vacuum", table="t", retain_seconds=0)
    assert report["expired_files"] > 0 and len(_data_files(t)) == files_before - report["deleted_files"]
    assert t.read("t") == live
    with pytest.raises(MergekitError, match="no longer available"):
        t.handle("t", TableVersion(version=before))
    with pytest.raises(MergekitError, match="no longer available"):
        _changes(t, 1)


# -- DDL --------------------------------------------------------------------------------------------------------


def test_add_column_truncate_and_drop(t):
    from mergekit.spi import ColumnMetadata

    t.metadata.add_column(
        session=t.session(), table_handle=t.handle("t"), column=ColumnMetadata(name="extra", type=pa.int32())
    )
    t.insert("t", {"id": 9, "name": "n9", "extra": 7})
    rows = t.read("t")
    assert rows[0] == {"id": 1, "name": "n1", "extra": None} and rows[-1] == {"id": 9, "name": "n9", "extra": 7}
    assert list(t.read("t_journal")[0]) == ["id", "name", "extra", "version_number", "subsequent_version_number"]
    t.metadata.truncate_table(session=t.session(), table_handle=t.handle("t"))
    assert t.read("t") == []
    t.insert("t", {"id": 1, "name": "fresh"})
    assert t.read("t") == [{"id": 1, "name": "fresh", "extra": None}]
    with pytest.raises(MergekitError) as err:
        t.create("t", COLS, key=["id"])
    assert err.value.code == ErrorCode.TABLE_ALREADY_EXISTS
    t.metadata.drop_table(session=t.session(), table_handle=t.handle("t"))
    assert t.metadata.get_table_handle(session=t.session(), table=name("t")) is None
    assert _data_files(t) == []
    t.create("t", COLS, key=["id"])
    assert t.read("t") == []


# -- read planning ------------------------------------------------------------------------------------------------


def test_insert_only_tables_read_without_version_resolution(t):
    t.insert("t", {"id": 100, "name": "x"})
    assert {s.mode for s in t.splits("t")} == {"plain"}
    t.update("t", {"id": 100}, {"id": 100, "name": "y"})
    modes = [s.mode for s in t.splits("t")]
    # Only files whose key range meets the update's are resolved; keys 1..5 stay plain.
    assert "plain" in modes and "resolve" in modes


def test_splits_are_pruned_by_key_constraint(make_harness):
    lake = make_harness()
    lake.create("t", COLS, key=["id"])
    for i in range(0, 50, 10):
        lake.insert("t", *({"id": j, "name": "x"} for j in range(i, i + 10)))
    h = lake.handle("t")
    rows, nsplits = lake.scan(h, ["id"], Constraint(equalities={"id": frozenset({23})}))
    assert nsplits == 1 and 23 in {r["id"] for r in rows}
    rows, nsplits = lake.scan(h, ["id"], Constraint(ranges={"id": (35, None)}))
    assert {r["id"] for r in rows} >= set(range(35, 50)) and min(r["id"] for r in rows) >= 30
