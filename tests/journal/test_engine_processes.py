"""Two writers in separate OS processes, each with its own Engine and Spark session, over one warehouse and one
SQLite catalog (issue 3): the same key updated at the same time loses no update, disjoint keys both commit.

Each process is started once and runs 50 same-key rounds (then 20 disjoint-key rounds) of ``UPDATE t SET v = v + 1 WHERE k = ...``; a round starts both
statements behind a barrier and holds both commits until both statements have written their files (see
workers/engine_process_worker.py), so every same-key round really is a race between two statements on one snapshot.
"""

from __future__ import annotations

import multiprocessing
import time

import pytest

from mergekit import Engine
from tests.journal.workers.engine_process_worker import serve

pytestmark = pytest.mark.spark

ROUNDS = 50
DISJOINT_ROUNDS = 20


def _engine(spark, warehouse: str) -> Engine:
    return Engine(
        spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": warehouse, "version_type": "bigint"}}
    )


class _Writers:
    def __init__(self, warehouse: str) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.start = ctx.Barrier(2)
        self.commit = ctx.Barrier(2)
        self.pipes = []
        self.procs = []
        for _ in range(2):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=serve, args=(child, warehouse, self.start, self.commit), daemon=True)
            proc.start()
            self.pipes.append(parent)
            self.procs.append(proc)
        for pipe in self.pipes:
            self._reply(pipe, timeout=180)

    @staticmethod
    def _reply(pipe, timeout: float) -> dict:
        assert pipe.poll(timeout), "writer process did not answer"
        kind, payload = pipe.recv()
        assert kind != "error", payload
        return payload

    def round(self, sqls: list[str], *, pin: bool) -> list[dict]:
        for pipe, sql in zip(self.pipes, sqls, strict=True):
            pipe.send(("round", sql, pin))
        return [self._reply(pipe, timeout=120) for pipe in self.pipes]

    def stop(self) -> None:
        for pipe in self.pipes:
            try:
                pipe.send(("stop",))
            except OSError:
                pass
        for proc in self.procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()


def test_two_processes_same_key_and_disjoint_keys(spark, tmp_path):
    warehouse = str(tmp_path / "warehouse")
    setup = _engine(spark, warehouse)
    setup.execute("CREATE TABLE t (k INTEGER NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (k))")
    setup.execute("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
    setup.close()

    t0 = time.perf_counter()
    writers = _Writers(warehouse)
    try:
        started = time.perf_counter() - t0
        same_key = "UPDATE t SET v = v + 1 WHERE k = 1"
        conflicts = commits = 0
        for _ in range(ROUNDS):
            results = writers.round([same_key, same_key], pin=True)
            outcomes = sorted(tuple(r["outcomes"]) for r in results)
            # Both statements read the same snapshot: exactly one commits, the other gets TRANSACTION_CONFLICT
            # and commits on its retry, on top of the first (no lost update).
            assert outcomes == [("commit",), ("conflict", "commit")], outcomes
            conflicts += sum(r["outcomes"].count("conflict") for r in results)
            commits += sum(r["outcomes"].count("commit") for r in results)
        same_done = time.perf_counter() - t0

        for _ in range(DISJOINT_ROUNDS):
            results = writers.round(
                ["UPDATE t SET v = v + 1 WHERE k = 2", "UPDATE t SET v = v + 1 WHERE k = 3"], pin=True
            )
            # Disjoint keys: both commit, on the same snapshot, without a conflict.
            assert [r["outcomes"] for r in results] == [["commit"], ["commit"]]
    finally:
        writers.stop()
    elapsed = time.perf_counter() - t0
    print(
        f"\nstart {started:.1f}s, {ROUNDS} same-key rounds {same_done - started:.1f}s, "
        f"{DISJOINT_ROUNDS} disjoint rounds {elapsed - same_done:.1f}s"
    )

    assert conflicts == ROUNDS and commits == 2 * ROUNDS
    check = _engine(spark, warehouse)
    try:
        # No lost update: the counter equals the number of successful commits on it.
        assert check.execute("SELECT k, v FROM t ORDER BY k").rows() == [
            (1, commits),
            (2, DISJOINT_ROUNDS),
            (3, DISJOINT_ROUNDS),
        ]
        # ...and every commit applied on top of the previous one: versions 1..N carry v = 0..N-1 for key 1.
        history = check.execute("SELECT version_number, v FROM t_journal WHERE k = 1 ORDER BY version_number").rows()
        assert [v for _, v in history] == list(range(commits + 1))
        assert [n for n, _ in history] == sorted({n for n, _ in history})
        # One version per commit: the insert, 2 * ROUNDS same-key commits and 2 * DISJOINT_ROUNDS disjoint ones.
        assert check.execute("SELECT max(version_number) FROM t_journal").rows() == [
            (1 + 2 * ROUNDS + 2 * DISJOINT_ROUNDS,)
        ]
    finally:
        check.close()
