"""A driver killed mid-MERGE leaves its staging table behind (nothing applied); the next engine over the database
drops it, and never drops the staging table of a statement whose driver is still alive. On PostgreSQL (the owner's
advisory lock) and SQLite (the owner named in the table's name)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.sqldb.dbs import Db, database  # noqa: F401 - the fixture of both databases

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("crash_worker.py")


def _start(uri: str, marker: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), uri, str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 300) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early ({proc.returncode}): {proc.communicate()[1][-3000:]}")
        assert time.monotonic() < deadline, f"no {path} after {timeout}s"
        time.sleep(0.1)
    result: dict[str, object] = json.loads(path.read_text())
    return result


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the worker's whole process group: the Python driver, its JVM and Spark's Python workers."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)


def _until(condition: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_next_engine_drops_what_a_killed_driver_staged(database: Db, tmp_path: Path) -> None:
    db = database
    db.sql("CREATE TABLE customers (id BIGINT PRIMARY KEY, name TEXT NOT NULL)")
    db.sql(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) "
        "INSERT INTO customers SELECT i, 'c' || i FROM n"
    )
    before = db.sql("SELECT id, name FROM customers ORDER BY id")
    marker = tmp_path / "staged.json"
    proc = _start(db.uri, marker)
    try:
        staged = _wait_for(marker, proc)
        stage = str(staged["stage"])
        assert db.staging_tables() == [stage]
        assert db.sql(f'SELECT count(*) FROM "{stage}"') == [(1000,)]  # 500 updates and 500 inserts, staged
        # its driver is alive, in the middle of its statement: a new engine leaves the staging table alone
        db.new_engine()
        assert db.staging_tables() == [stage]
    finally:
        _kill_group(proc)
    assert proc.returncode == -signal.SIGKILL
    assert db.sql("SELECT id, name FROM customers ORDER BY id") == before  # nothing was applied
    assert db.staging_tables() == [stage]
    if db.kind == "postgresql":  # the server ends the dead driver's session, and with it its lock
        _until(lambda: db.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == [(0,)])
    engine = db.new_engine()
    assert db.staging_tables() == []
    assert db.sql("SELECT id, name FROM customers ORDER BY id") == before
    merged = engine.execute(
        "MERGE INTO customers t USING (VALUES (1, 'one'), (2000, 'new')) AS s(id, name) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)"
    )
    assert merged.row_count == 2
    assert db.sql("SELECT count(*) FROM customers") == [(1001,)]
    assert db.staging_tables() == []


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_sqlite_staging_tables_of_unknown_owners_are_left_alone(database: Db) -> None:
    """A name without an owner (an older mergekit), another host's, or a live process's: not dropped."""
    db = database
    this_process = db.new_engine()
    this_process.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
    from mergekit_sqldb._staging import new_stage_name

    live = new_stage_name("sqlite")  # _mk_stage_<id>_<host>_<boot>_<pid>_<start>, owned by this live process
    parts = live.split("_")
    other_host = "_".join([*parts[:-4], "0" * 8 if parts[-4] != "0" * 8 else "1" * 8, *parts[-3:]])
    dead = "_".join([*parts[:-2], "999999999", "1"])  # a process id above Linux's limit: no process has it
    names = ["_mk_stage_" + "a" * 32, live, other_host, dead]
    for name in names:
        db.sql(f'CREATE TABLE "{name}" (x INTEGER)')
    db.new_engine()
    assert db.staging_tables() == sorted(n for n in names if n != dead)
