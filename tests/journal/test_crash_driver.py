"""Crashes of the driver tier (issue 29): a process killed between writing a small statement's file and committing
it, and one killed in the middle of an automatic compaction (after its file is written, before its catalog
transaction). The table reads exactly as the last commit left it (before the statement; after the statement the
compaction followed), the next statement works, and ``vacuum`` removes what the dead process left. No JVM runs:
the worker starts with Java pointed at nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from mergekit import Engine

WORKER = os.path.join(os.path.dirname(__file__), "workers", "driver_crash_worker.py")


def _no_spark(engine: Engine, sql: str):
    result = engine.execute(sql)
    assert not engine.spark_started, sql
    return result


def _data_files(warehouse: str) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(warehouse) for n in names if n.endswith(".parquet")}


def _state(warehouse: str) -> dict:
    engine = Engine.local(warehouse)
    try:
        history = [(r[0], r[2]) for r in _no_spark(engine, "DESCRIBE HISTORY t").rows()]
        return {"rows": _no_spark(engine, "SELECT * FROM t ORDER BY id").rows(), "history": history}
    finally:
        engine.close()


def _kill_at(mode: str, warehouse: str, markers: str, marker: str) -> dict:
    env = {**os.environ, "JAVA_HOME": "/nonexistent", "PATH": os.environ.get("PATH", "")}
    proc = subprocess.Popen(
        [sys.executable, WORKER, mode, warehouse, markers],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    path = os.path.join(markers, marker)
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early ({proc.returncode}): {proc.stderr.read()[-3000:]}")
        assert time.monotonic() < deadline, f"no {path}"
        time.sleep(0.02)
    with open(path) as f:
        announced = json.load(f)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return announced


@pytest.fixture
def warehouse(tmp_path):
    """A journal table with a key and 7 one-row commits: the next commit makes an automatic compaction due (8
    small files in a row, the default ``auto_compact_files``)."""
    warehouse = str(tmp_path / "warehouse")
    engine = Engine.local(warehouse)
    _no_spark(engine, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, PRIMARY KEY (id))")
    for i in range(1, 8):
        _no_spark(engine, f"INSERT INTO t VALUES ({i}, 'row {i}')")
    engine.close()
    (tmp_path / "markers").mkdir()
    return warehouse


def _vacuum_and_write(warehouse: str, orphans: set[str]) -> Engine:
    engine = Engine.local(warehouse)
    result = _no_spark(engine, "CALL lake.system.vacuum(table => 't', retain_seconds => 0)")
    assert result.metrics["orphan_files"] == len(orphans)
    assert not any(os.path.exists(p) for p in orphans)
    return engine


def test_driver_tier_killed_between_files_and_commit_changes_nothing(warehouse, tmp_path):
    before, files_before = _state(warehouse), _data_files(warehouse)
    finished = _kill_at("hang_before_commit", warehouse, str(tmp_path / "markers"), "finished.json")
    orphans = set(finished["paths"])
    assert orphans and all(os.path.getsize(p) > 0 for p in orphans)  # complete files, never committed
    assert _data_files(warehouse) == files_before | orphans
    assert _state(warehouse) == before
    engine = _vacuum_and_write(warehouse, orphans)
    try:
        _no_spark(engine, "UPDATE t SET name = 'after' WHERE id = 1")
        assert _no_spark(engine, "SELECT name FROM t WHERE id = 1").rows() == [("after",)]
    finally:
        engine.close()


def test_killed_during_automatic_compaction_keeps_the_commit(warehouse, tmp_path):
    before = _state(warehouse)
    compacting = _kill_at("hang_in_compaction", warehouse, str(tmp_path / "markers"), "compacting.json")
    orphans = set(compacting["paths"])
    assert len(orphans) == 1 and all(os.path.getsize(p) > 0 for p in orphans)
    after = _state(warehouse)
    # the INSERT committed (its version is the last); its compaction did not
    assert after["rows"] == [*before["rows"], (100, "last")]
    assert after["history"] == [(8, "write"), *before["history"]]
    engine = _vacuum_and_write(warehouse, orphans)
    try:
        # the next commit makes the compaction due again, and it runs (in the background): one file holds the table
        _no_spark(engine, "UPDATE t SET name = 'after' WHERE id = 1")
        assert engine.catalogs.get("lake").wait_for_compactions(timeout=60)
        history = [r[2] for r in _no_spark(engine, "DESCRIBE HISTORY t").rows()]
        assert history[:3] == ["compact", "write", "write"]
        rows = _no_spark(engine, "SELECT * FROM t ORDER BY id").rows()
        assert rows == [(1, "after"), *[(i, f"row {i}") for i in range(2, 8)], (100, "last")]
    finally:
        engine.close()
    live = _data_files(warehouse) - orphans
    assert len([p for p in live if "auto-compact-" in p]) == 1
