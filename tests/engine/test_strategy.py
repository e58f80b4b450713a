"""EXPLAIN names the strategy a DML statement will run, and the statement runs that strategy (one decision)."""

from __future__ import annotations

import re

import pytest

from mergekit import Engine

CASES = [
    # (connector, statement, strategy)
    (
        "journal",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
        "index_lookup",
    ),
    (
        "memory",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
        "index_lookup",  # the driver tier reads both tables whole
    ),
    (
        "memory_spark",  # the memory connector with the driver tier off
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)",
        "spark_join",
    ),
    ("journal", "MERGE INTO t USING s ON t.id = s.id AND t.v <> s.v WHEN MATCHED THEN DELETE", "spark_join"),
    ("journal", "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE", "spark_join"),
    ("journal", "INSERT INTO t SELECT 10, 'ten'", "insert_from_source"),
    ("journal", "INSERT INTO t VALUES (10, 'ten')", "driver_append"),
    ("memory", "UPDATE t SET v = 'z' WHERE id = 1", "index_lookup"),
    ("memory_spark", "UPDATE t SET v = 'z' WHERE id = 1", "target_scan"),
    ("journal", "DELETE FROM t WHERE id = 2", "index_lookup"),  # by key: the MERGE it means, on the driver tier
    ("journal", "DELETE FROM t WHERE v = 'b'", "index_lookup"),  # no key named: the small table read whole
    ("journal_spark", "DELETE FROM t WHERE v = 'b'", "target_scan"),
]


def _explained_strategy(engine: Engine, statement: str) -> tuple[str, str]:
    text = engine.execute(f"EXPLAIN {statement}").rows()[0][0]
    m = re.search(r"^Strategy: (\w+)", text, flags=re.M)
    assert m, text
    return m.group(1), text


@pytest.mark.parametrize(("connector", "statement", "strategy"), CASES, ids=[f"{c}-{s}" for c, _, s in CASES])
def test_explain_names_the_strategy_that_runs(spark, tmp_path, connector: str, statement: str, strategy: str) -> None:
    journal = connector.startswith("journal")
    engine = Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path)}}
        if journal
        else {"lake": {"connector": "memory"}},
    )
    if connector.endswith("_spark"):  # the driver tier off
        engine.execute("SET SESSION driver_tier = 'off'")
    try:
        engine.execute(
            "CREATE TABLE t (id INTEGER, v VARCHAR, PRIMARY KEY (id))"
            if journal
            else "CREATE TABLE t (id INTEGER, v VARCHAR)"
        )
        engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        engine.execute("CREATE TABLE s (id INTEGER, v VARCHAR)")
        engine.execute("INSERT INTO s VALUES (2, 'B'), (4, 'D')")
        explained, text = _explained_strategy(engine, statement)
        assert explained == strategy, text
        result = engine.execute(statement)
        assert result.metrics["strategy"] == explained
    finally:
        engine.close()


def test_explain_shows_the_estimates_and_reductions(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("SET SESSION driver_tier = 'off'")  # (on the driver tier: the table read whole)
    try:
        engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
        engine.execute("CREATE TABLE s (id INTEGER, v VARCHAR)")
        _, text = _explained_strategy(engine, "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
        # the memory connector's scan gives Spark no size estimate: no reduction of the target is worth it
        assert "Estimate: source keys ~" in text and "Semi join of the target on the source's keys: no" in text
    finally:
        engine.close()


def test_explain_says_why_the_driver_tier_was_not_taken(spark, tmp_path) -> None:
    """A statement on Spark says in EXPLAIN why the driver tier did not plan it, in the statement's own words; one
    the driver tier runs has no such line."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path)}})
    try:
        engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR, PRIMARY KEY (id))")
        engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        declined = {
            "UPDATE t SET v = upper(v) WHERE id > 0": "its SET or WHERE does not evaluate in Arrow",
            "DELETE FROM t WHERE upper(v) = 'A'": "its WHERE does not evaluate in Arrow",
            "MERGE INTO t USING (VALUES (1, 'x')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = upper(s.v)": (
                "a WHEN clause does not evaluate in Arrow"
            ),
        }
        for statement, why in declined.items():
            text = _explained_strategy(engine, statement)[1]
            assert f"Driver tier: not taken ({why})" in text, text
            assert engine.execute(statement).metrics["tier"] == "spark"
        text = _explained_strategy(engine, "UPDATE t SET v = 'z' WHERE v = 'b'")[1]
        assert "Tier: driver" in text and "Driver tier: not taken" not in text, text
    finally:
        engine.close()
