"""Writers in separate processes on one SQLite catalog: no lost update, disjoint keys never conflict."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa

from tests.journal.journal_harness import JournalHarness

ROUNDS = 15
WORKER = os.path.join(os.path.dirname(__file__), "workers", "concurrency_worker.py")


def _run(tmp_path, keys: list[int]) -> tuple[JournalHarness, list[int]]:
    warehouse = str(tmp_path / "warehouse")
    lake = JournalHarness(warehouse, version_type="bigint")
    lake.create("counters", [("id", pa.int32()), ("n", pa.int64())], key=["id"])
    lake.insert("counters", {"id": 1, "n": 0}, {"id": 2, "n": 0})
    start = str(tmp_path / "start")
    procs = [
        subprocess.Popen(
            [sys.executable, WORKER, warehouse, str(k), str(ROUNDS), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in keys
    ]
    open(start, "w").close()
    conflicts = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        conflicts.append(int(out.strip()))
    return lake, conflicts


def test_same_key_from_two_processes_loses_no_update(tmp_path):
    lake, conflicts = _run(tmp_path, [1, 1])
    rows = {r["id"]: r["n"] for r in lake.read("counters")}
    assert rows == {1: 2 * ROUNDS, 2: 0}
    # Every commit is one version: 1 insert + 2*ROUNDS updates, whatever the number of conflicts (the automatic
    # compactions after some of them are versions of their own, writing no row version).
    history = lake.connector.get_metadata().get_table_history(
        session=lake.session(), table_handle=lake.handle("counters")
    )
    assert sum(c.operation == "write" for c in history) == 1 + 2 * ROUNDS
    assert {c.operation for c in history} == {"create", "write", "compact"}
    versions = sorted(r["version_number"] for r in lake.read("counters_journal") if r["id"] == 1)
    assert versions == list(range(1, 2 * ROUNDS + 2))
    lake.connector.shutdown()


def test_disjoint_keys_from_two_processes_never_conflict(tmp_path):
    lake, conflicts = _run(tmp_path, [1, 2])
    assert conflicts == [0, 0]
    assert {r["id"]: r["n"] for r in lake.read("counters")} == {1: ROUNDS, 2: ROUNDS}
    lake.connector.shutdown()
