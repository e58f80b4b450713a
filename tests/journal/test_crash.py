"""Crashes with real processes and real files (issue 3): a merge sink killed mid-write, a driver killed mid-write,
and a driver killed between writing its files and committing them. In every case the table reads exactly as
before; whatever the dead writer left behind is orphan files, which ``CALL lake.system.vacuum(...)`` removes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from mergekit import Engine

pytestmark = pytest.mark.spark

WORKER = os.path.join(os.path.dirname(__file__), "workers", "crash_worker.py")
ROWS = 100_000  # source rows of the crashing MERGE (10 Arrow pages of 10k rows)


def _engine(spark, warehouse: str) -> Engine:
    return Engine(
        spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": warehouse, "version_type": "bigint"}}
    )


def _data_files(warehouse: str) -> set[str]:
    return {os.path.join(d, n) for d, _, names in os.walk(warehouse) for n in names if n.endswith(".parquet")}


def _state(spark, warehouse: str) -> dict:
    engine = _engine(spark, warehouse)
    try:
        return {
            "rows": engine.execute("SELECT id, grp, name FROM t ORDER BY id").rows(),
            "journal": engine.execute(
                "SELECT id, name, version_number, subsequent_version_number FROM t_journal ORDER BY version_number, id"
            ).rows(),
        }
    finally:
        engine.close()


@pytest.fixture
def table(spark, tmp_path):
    """A journal table with history: 1000 rows inserted, 100 updated, 10 deleted."""
    warehouse = str(tmp_path / "warehouse")
    engine = _engine(spark, warehouse)
    engine.execute("CREATE TABLE t (id BIGINT NOT NULL, grp INTEGER, name VARCHAR, PRIMARY KEY (id))")
    engine.register_dataframe(
        "seed", spark.range(1000).selectExpr("id", "CAST(id % 5 AS INT) AS grp", "concat('old-', id) AS name")
    )
    engine.execute("INSERT INTO t SELECT id, grp, name FROM seed")
    engine.execute("UPDATE t SET name = 'updated' WHERE id < 100")
    engine.execute("DELETE FROM t WHERE id >= 990")
    engine.close()
    markers = tmp_path / "markers"
    markers.mkdir()
    return warehouse, str(markers)


def _start(mode: str, warehouse: str, markers: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, WORKER, mode, warehouse, markers, str(ROWS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _wait_for(path: str, proc: subprocess.Popen, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early ({proc.returncode}): {proc.stderr.read()[-3000:]}")
        assert time.monotonic() < deadline, f"no {path} after {timeout}s"
        time.sleep(0.05)
    with open(path) as f:
        return json.load(f)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group: the Python driver, its JVM and Spark's Python workers."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _vacuum(spark, warehouse: str) -> dict:
    engine = _engine(spark, warehouse)
    try:
        return engine.execute("CALL lake.system.vacuum(table => 't', retain_seconds => 0)").metrics
    finally:
        engine.close()


def test_sink_process_killed_mid_write_changes_nothing(spark, table):
    warehouse, markers = table
    before = _state(spark, warehouse)
    files_before = _data_files(warehouse)
    proc = _start("sink_exit", warehouse, markers)
    out, err = proc.communicate(timeout=300)
    dying = json.load(open(os.path.join(markers, "dying.json")))
    assert dying["pid"] != proc.pid  # the sink ran in a Spark Python worker, not in the driver
    # The driver survived the dead sink: the statement failed and was aborted.
    assert proc.returncode == 0, err[-3000:]
    assert out.strip().startswith("FAILED"), out
    assert _state(spark, warehouse) == before
    # The aborted merge removed its staged files; vacuum finds nothing referenced to delete either.
    assert not os.path.exists(dying["path"])
    _vacuum(spark, warehouse)
    assert _data_files(warehouse) == files_before
    assert _state(spark, warehouse) == before


def test_driver_killed_mid_write_leaves_only_orphans(spark, table):
    warehouse, markers = table
    before = _state(spark, warehouse)
    files_before = _data_files(warehouse)
    proc = _start("hang_mid_write", warehouse, markers)
    writing = _wait_for(os.path.join(markers, "writing.json"), proc)
    _kill_group(proc)
    assert os.path.exists(writing["path"])  # a half-written file, never committed
    assert _state(spark, warehouse) == before
    result = _vacuum(spark, warehouse)
    assert result["orphan_files"] >= 1
    assert not os.path.exists(writing["path"])
    assert _data_files(warehouse) == files_before
    assert _state(spark, warehouse) == before


def test_driver_killed_between_files_and_commit_leaves_only_orphans(spark, table):
    warehouse, markers = table
    before = _state(spark, warehouse)
    files_before = _data_files(warehouse)
    proc = _start("hang_before_commit", warehouse, markers)
    finished = _wait_for(os.path.join(markers, "finished.json"), proc)
    _kill_group(proc)
    orphans = set(finished["paths"])
    assert orphans and all(os.path.getsize(p) > 0 for p in orphans)  # complete files, never committed
    assert _data_files(warehouse) == files_before | orphans
    assert _state(spark, warehouse) == before
    result = _vacuum(spark, warehouse)
    assert result["orphan_files"] == len(orphans)
    assert _data_files(warehouse) == files_before
    assert _state(spark, warehouse) == before
    # The table stays writable: a later statement commits the next version.
    engine = _engine(spark, warehouse)
    try:
        assert engine.execute("UPDATE t SET name = 'after' WHERE id = 1").row_count == 1
        assert engine.execute("SELECT name FROM t WHERE id = 1").rows() == [("after",)]
    finally:
        engine.close()
