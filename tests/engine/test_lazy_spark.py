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
