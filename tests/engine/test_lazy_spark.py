"""Issue 29: Spark starts only when a statement needs it. An engine given what starts its session (as ``Engine.local``
and the CLI are) runs the statements of the driver tier without ever calling it, and calls it, once, for the first
statement that needs Spark. No JVM runs in this file: the starter fails the test if called early."""

from __future__ import annotations

import pytest

from mergekit import Engine
from mergekit.errors import MergekitError

DRIVER_STATEMENTS = [
    "CREATE TABLE t (id integer, v varchar, n bigint, PRIMARY KEY (id))",
    "INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 3000000000)",
    "MERGE INTO t USING (VALUES (2, 'B'), (4, 'd')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 0)",
    "UPDATE t SET n = n + 1 WHERE id IN (1, 4)",
    "DELETE FROM t WHERE id = 3",
    "SET SESSION merge_duplicate_source = 'none'",
    "SHOW TABLES",
]


class Refused(Exception):
    pass


@pytest.mark.parametrize("connector", ["journal", "partitioned", "sqldb", "memory"])
def test_driver_tier_statements_never_start_spark(tmp_path, connector: str) -> None:
    started: list[str] = []

    def start():
        started.append("spark")
        raise Refused("no Spark in this test")

    if connector == "sqldb":
        catalog = {"connector": "sqldb", "uri": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    elif connector == "memory":
        catalog = {"connector": "memory"}
    else:
        catalog = {"connector": connector, "warehouse": str(tmp_path / "wh")}
    engine = Engine(spark=start, catalogs={"lake": catalog})
    try:
        tiers = []
        for sql in DRIVER_STATEMENTS:
            if connector == "memory" and sql.startswith(("MERGE", "UPDATE", "DELETE")):
                continue  # the memory connector has no index: those run on Spark
            tiers.append(engine.execute(sql).metrics.get("tier"))
        rows = engine.execute("SELECT id, v, n FROM t ORDER BY id")
        (explained,) = engine.execute("EXPLAIN SELECT id, v, n FROM t WHERE id = 2").rows()[0]
        assert explained.splitlines()[-1].startswith("Tier: driver")
        assert (rows.metrics["tier"], engine.spark_started, started) == ("driver", False, [])
        if connector != "memory":
            assert tiers == [None, "driver", "driver", "driver", "driver", None, None]
            assert rows.rows() == [(1, "a", 11), (2, "B", 20), (4, "d", 1)]
        # the first statement that needs Spark asks for it, and its failure to start fails that statement only
        with pytest.raises(MergekitError):
            engine.execute("SELECT upper(v) FROM t")
        assert started == ["spark"]
        assert engine.execute("SELECT count(*) FROM t").metrics["tier"] == "driver"  # and the engine goes on
    finally:
        engine.close()


CHILD = """
import json, sys
from mergekit import Engine
engine = Engine.local(sys.argv[1], **json.loads(sys.argv[2]))
statements = json.loads(sys.argv[3])
tiers = [engine.execute(sql).metrics.get("tier") for sql in statements]
import pyarrow as pa
engine.register_arrow("batch", pa.table({"id": pa.array([4, 5], pa.int32()), "v": ["D", "e"]}))
tiers.append(engine.execute("MERGE INTO t USING batch s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
                            "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 5)").metrics.get("tier"))
rows = engine.execute("SELECT id, v, n FROM t WHERE id IN (4, 5) ORDER BY id").rows()
(plan,) = engine.execute("EXPLAIN SELECT id, v, n FROM t WHERE id = 2").rows()[0]
engine.close()
print(json.dumps({"tiers": tiers, "rows": rows, "plan_tier": plan.splitlines()[-1],
                  "imported": sorted({m.split(".")[0] for m in sys.modules} & {"pyspark", "py4j"})}))
"""


@pytest.mark.parametrize("connector", ["partitioned", "sqldb"])
def test_a_process_of_driver_tier_statements_imports_no_pyspark(tmp_path, connector: str) -> None:
    """Issue 29, item 2: ``import mergekit``, ``Engine.local`` and statements the driver tier runs (a MERGE of an
    Arrow table registered by name among them) import neither pyspark nor py4j (0.15 s of a new process's start),
    in a new interpreter as a script or the CLI is."""
    import json
    import subprocess
    import sys

    options = {"connector": "sqldb", "uri": f"sqlite:///{tmp_path / 'db.sqlite'}"} if connector == "sqldb" else {}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "wh"), json.dumps(options), json.dumps(DRIVER_STATEMENTS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["tiers"] == [None, "driver", "driver", "driver", "driver", None, None, "driver"]
    assert out["rows"] == [[4, "D", 1], [5, "e", 5]]
    assert out["plan_tier"].startswith("Tier: driver")
    assert out["imported"] == []


def test_the_driver_tiers_result_types_are_sparks_without_pyspark() -> None:
    """``through_spark`` (the Arrow type a driver-tier result or row has, computed without importing pyspark) is
    the round trip through Spark's types for every Arrow type the driver tier reads and writes."""
    import pyarrow as pa

    from mergekit.execution.types import arrow_type, spark_type, through_spark

    types = [pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.string()]
    types += [pa.large_string(), pa.binary(), pa.date32(), pa.null(), pa.decimal128(38, 0), pa.decimal128(10, 2)]
    types += [pa.timestamp("us"), pa.timestamp("ns"), pa.timestamp("us", tz="UTC"), pa.timestamp("ms", tz="+02:00")]
    types += [pa.struct([pa.field("a", pa.large_string()), pa.field("b", pa.timestamp("us", tz="UTC"))])]
    assert [through_spark(t) for t in types] == [arrow_type(spark_type(t)) for t in types]


def test_a_function_shipped_by_value_takes_the_lazy_modules_along() -> None:
    """A closure over ``lazy_pyspark.T`` pickled by value (as cloudpickle ships a task's functions to Spark's
    workers) works where it is unpickled; pickle's and copy's probes of the stand-in import nothing."""
    import copy
    import pickle

    from pyspark import cloudpickle

    from mergekit.execution.lazy_pyspark import LazyModule, T

    def make(name: str):
        return lambda: T.StructType([T.StructField(name, T.LongType())])

    assert pickle.loads(cloudpickle.dumps(make("k")))().simpleString() == "struct<k:bigint>"
    fresh = LazyModule("json")
    copied = copy.deepcopy(fresh)
    assert "imported" not in repr(fresh) and "imported" not in repr(copied)
    assert copied.dumps([1]) == "[1]"
