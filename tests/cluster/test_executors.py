"""Proof that the cluster run (``MERGEKIT_TEST_MASTER=local-cluster[...]``) really runs the data path outside the
driver: the merge sinks of a MERGE run in Python workers of executor JVMs, which are other processes than the
driver JVM (local-cluster workers live inside the driver JVM and start each executor as a child JVM)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mergekit import Engine
from tests.helpers import assert_rows

pytestmark = pytest.mark.cluster_only


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])  # the field after the state


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _jvm_of(pid: int) -> int:
    """The nearest ancestor of a Python worker that is a JVM (the worker's parent is pyspark's daemon)."""
    ancestor = _parent(pid)
    while ancestor > 1 and "java" not in _cmdline(ancestor).split(" ", 1)[0]:
        ancestor = _parent(ancestor)
    assert ancestor > 1, f"python worker {pid} has no JVM among its ancestors"
    return ancestor


@pytest.mark.parametrize(
    "catalog",
    [{"connector": "memory"}, {"connector": "journal", "version_type": "bigint", "warehouse": "{tmp}"}],
    ids=["memory", "journal"],
)
def test_merge_sinks_run_in_executor_jvms(spark, tmp_path, catalog) -> None:
    assert spark.sparkContext.master.startswith("local-cluster")
    driver_jvm = spark.sparkContext._gateway.proc.pid
    catalog = {k: v.format(tmp=tmp_path) for k, v in catalog.items()}
    engine = Engine(spark=spark, catalogs={"lake": catalog})
    try:
        engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
        engine.execute("INSERT INTO t VALUES " + ", ".join(f"({i}, '{i}')" for i in range(1, 1001)))
        source = ", ".join(f"({i}, 'new')" for i in range(990, 1011))
        result = engine.execute(
            f"MERGE INTO t USING (VALUES {source}) AS s(id, v) ON t.id = s.id "
            "WHEN MATCHED AND t.id % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"
        )
        assert (result.metrics["inserted"], result.metrics["updated"], result.metrics["deleted"]) == (10, 5, 6)
        executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver's
        assert executors >= 2
        pids = result.metrics["writer_pids"]
        assert pids and os.getpid() not in pids
        for pid in pids:
            jvm = _jvm_of(pid)
            assert jvm != driver_jvm, f"sink in python worker {pid} ran under the driver JVM"
            assert "CoarseGrainedExecutorBackend" in _cmdline(jvm), _cmdline(jvm)
            assert _parent(jvm) == driver_jvm  # started by a local-cluster worker, not some other Spark
        assert_rows(
            engine.execute("SELECT id, v FROM t WHERE id >= 985 ORDER BY id").rows(),
            [(i, str(i)) for i in range(985, 990)]
            + [(i, "new") for i in range(991, 1001, 2)]
            + [(i, "new") for i in range(1001, 1011)],
            ordered=True,
        )
    finally:
        engine.close()
