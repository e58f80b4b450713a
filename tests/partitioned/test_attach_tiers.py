"""``ALTER TABLE m ADD TABLE c AS PARTITION ...`` on the driver tier: the bounds are evaluated and cast to the key's
type, and the child's rows checked against them, in the engine's process (no Spark job) where the driver tier
evaluates them exactly as Spark does; anything else (a cast Spark makes, a failing value, a key computed by an
expression over a non-empty child, a timestamp key) is left to Spark. Both tiers give the same outcome."""

from __future__ import annotations

import pytest

from mergekit import Engine
from mergekit.errors import MergekitError

# (merge table DDL's key columns and PARTITION BY, rows already in the child, the partition clause)
CASES = [
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", [], "FROM 0 TO 10"),
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", ["(1, 'a')", "(9, 'b')"], "FROM 0 TO 10"),
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", ["(1, 'a')", "(10, 'b')"], "FROM 0 TO 10"),  # 10 is outside
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", ["(NULL, 'a')"], "FROM 0 TO 10"),
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", ["(NULL, 'a')"], "FROM 0 TO 10 WITH NULL VALUES"),
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", [], "FROM RANGE MINVALUE TO 2 + 3"),
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", [], "FROM 0 TO 3000000000"),  # the cast to INTEGER overflows
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", [], "FROM 0 TO 1 / 0"),  # the bound fails
    ("id INTEGER, v VARCHAR", "RANGE ON (id)", [], "FROM '1' TO '5'"),  # a string cast to INTEGER: Spark's
    ("id BIGINT, v VARCHAR", "RANGE ON (id)", ["(5000000000, 'a')"], "FROM 0 TO 5000000001"),
    ("id INTEGER, v VARCHAR", "VALUES ON (v)", ["(1, 'a')", "(2, 'c')"], "IN ('a', 'b', 'c')"),
    ("id INTEGER, v VARCHAR", "VALUES ON (v)", ["(1, 'a')", "(2, 'z')"], "IN ('a', 'b', 'c')"),
    ("id INTEGER, v VARCHAR(3)", "VALUES ON (v)", ["(1, 'a')"], "IN ('a', 'b')"),  # a bounded string: Spark's
    ("id INTEGER, d DATE", "RANGE ON (d)", ["(1, DATE '2024-02-29')"], "FROM DATE '2024-01-01' TO DATE '2024-03-01'"),
    ("id INTEGER, d DATE", "RANGE ON (d)", ["(1, DATE '2024-03-01')"], "FROM DATE '2024-01-01' TO DATE '2024-03-01'"),
    ("id INTEGER, b BOOLEAN", "VALUES ON (b)", ["(1, true)"], "IN (false)"),
    ("id INTEGER, v VARCHAR", "RANGE USING (id * 2)", [], "FROM 0 TO 10"),
    ("id INTEGER, v VARCHAR", "RANGE USING (id * 2)", ["(5, 'a')"], "FROM 0 TO 10"),  # read by Spark
]


def _attach(engine: Engine, columns: str, scheme: str, rows: list[str], clause: str) -> tuple:
    engine.execute(f"CREATE MERGE TABLE m ({columns}) PARTITION BY {scheme}")
    engine.execute(f"CREATE TABLE c ({columns})")
    if rows:
        engine.execute(f"INSERT INTO c VALUES {', '.join(rows)}")
    try:
        engine.execute(f"ALTER TABLE m ADD TABLE c AS PARTITION {clause}")
    except MergekitError as err:
        return ("error", err.code.name, str(err))
    ranges = engine.execute("SELECT minimum, maximum, with_nulls FROM range_partitions").rows()
    values = engine.execute("SELECT value FROM value_partitions").rows()
    return ("attached", ranges, sorted(values, key=repr))


@pytest.mark.parametrize(("columns", "scheme", "rows", "clause"), CASES, ids=[f"{c[1]} {c[3]}" for c in CASES])
def test_attaching_a_child_gives_the_same_outcome_on_both_tiers(
    spark, tmp_path, columns: str, scheme: str, rows: list[str], clause: str
) -> None:
    outcomes = {}
    for tier in ("auto", "off"):  # a warehouse of each tier's own, so that the system tables compare
        catalog = {"connector": "partitioned", "warehouse": str(tmp_path / tier)}
        engine = Engine(spark=spark, catalogs={"lake": catalog})
        try:
            engine.execute(f"SET SESSION driver_tier = '{tier}'")
            outcomes[tier] = _attach(engine, columns, scheme, rows, clause)
        finally:
            engine.close()
    assert outcomes["auto"] == outcomes["off"]


def test_attaching_children_on_the_driver_tier_starts_no_spark(tmp_path) -> None:
    started: list[str] = []

    def start():
        started.append("spark")
        raise RuntimeError("no Spark in this test")

    engine = Engine(spark=start, catalogs={"lake": {"connector": "partitioned", "warehouse": str(tmp_path / "wh")}})
    try:
        engine.execute("CREATE MERGE TABLE m (id INTEGER, v VARCHAR, d DATE) PARTITION BY RANGE ON (id)")
        engine.execute("CREATE MERGE TABLE m2 (id INTEGER, v VARCHAR, d DATE) PARTITION BY VALUES ON (v)")
        for i in range(3):
            engine.execute(f"CREATE TABLE c{i} (id INTEGER, v VARCHAR, d DATE)")
        engine.execute("INSERT INTO c1 VALUES (15, 'b', DATE '2024-01-01')")
        engine.execute("ALTER TABLE m ADD TABLE c0 AS PARTITION FROM RANGE MINVALUE TO 10")
        engine.execute("ALTER TABLE m ADD TABLE c1 AS PARTITION FROM 10 TO 2 * 10 WITH NULL VALUES")
        engine.execute("ALTER TABLE m2 ADD TABLE c2 AS PARTITION IN ('a', 'b')")
        with pytest.raises(MergekitError) as err:  # c1's row (15) is outside 20..30: found without Spark
            engine.execute("ALTER TABLE m SET TABLE c1 AS PARTITION FROM 20 TO 30")
        assert str(err.value) == (
            "[PARTITION_NOT_FOUND] ALTER TABLE: there are values in column id outside the partition range"
        )
        engine.execute("INSERT INTO m VALUES (3, 'a', DATE '2024-05-01')")
        assert engine.execute("SELECT id, v FROM m ORDER BY id").rows() == [(3, "a"), (15, "b")]
        assert (engine.spark_started, started) == (False, [])
    finally:
        engine.close()
