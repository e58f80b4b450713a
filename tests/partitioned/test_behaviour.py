"""Writes, atomicity across children, pruning and the rest of the merge-table contract."""

from __future__ import annotations

import pytest

from mergekit import Engine, MergekitError
from tests.helpers import assert_rows
from tests.partitioned import failing


def _range_table(run) -> None:
    run("CREATE MERGE TABLE m (a int, b varchar) PARTITION BY RANGE ON (a)")
    for i, (lo, hi) in enumerate([(0, 10), (10, 20), (20, 30)]):
        run(f"CREATE TABLE c{i} (a int, b varchar)")
        run(f"ALTER TABLE m ADD TABLE c{i} AS PARTITION FROM {lo} TO {hi}")
    run("INSERT INTO m VALUES (1, 'x'), (2, 'y'), (11, 'p'), (12, 'q'), (21, 'u'), (22, 'v')")


def _units(result, table: str = "lake.default.m") -> int:
    """What a scan read: page-source splits plus files Spark read natively."""
    (scan,) = [s for s in result.metrics["scans"] if s["table"] == table]
    return scan["splits"] + scan.get("files", 0)


def _per_child(run) -> list[int]:
    return [_units(run(f"SELECT * FROM c{i}"), f"lake.default.c{i}") for i in range(3)]


def test_query_pruning_reads_only_matching_children(engine) -> None:
    run = engine.execute
    _range_table(run)
    c0, c1, c2 = _per_child(run)
    assert min(c0, c1, c2) >= 1
    assert _units(run("SELECT * FROM m")) == c0 + c1 + c2
    res = run("SELECT b FROM m WHERE a = 11")
    assert res.rows() == [("p",)] and _units(res) == c1
    res = run("SELECT b FROM m WHERE a IN (1, 22)")
    assert sorted(r[0] for r in res.rows()) == ["v", "x"] and _units(res) == c0 + c2
    res = run("SELECT b FROM m WHERE a >= 12 AND a <= 19")
    assert res.rows() == [("q",)] and _units(res) == c1
    # strict bounds are kept inclusive in the SPI's Constraint: a < 20 may still read [20, 30)
    res = run("SELECT b FROM m WHERE a > 12 AND a < 20")
    assert res.rows() == [] and _units(res) == c1 + c2
    res = run("SELECT b FROM m WHERE a BETWEEN 25 AND 40")
    assert res.rows() == [] and _units(res) == c2
    # a predicate on another column prunes nothing
    assert _units(run("SELECT a FROM m WHERE b = 'x'")) == c0 + c1 + c2


def test_merge_and_update_pruning(engine) -> None:
    run = engine.execute
    _range_table(run)
    c0, c1, c2 = _per_child(run)
    res = run(
        "MERGE INTO m t USING (VALUES (12, 'Q')) s(a, b) ON t.a = s.a AND t.a = 12 WHEN MATCHED THEN UPDATE SET b = s.b"
    )
    assert res.row_count == 1
    (target,) = [s for s in res.metrics["scans"] if s.get("target")]
    assert target["splits"] + target["files"] == c1
    res = run("UPDATE m SET b = 'U' WHERE a = 21")
    (target,) = [s for s in res.metrics["scans"] if s.get("target")]
    assert res.row_count == 1 and target["splits"] + target["files"] == c2
    assert_rows(run("SELECT a, b FROM m").rows(), [(1, "x"), (2, "y"), (11, "p"), (12, "Q"), (21, "U"), (22, "v")])


def test_update_moves_rows_between_children_in_one_commit(engine) -> None:
    run = engine.execute
    _range_table(run)
    assert run("UPDATE m SET a = a + 10 WHERE a < 20").row_count == 4
    assert_rows(run("SELECT a FROM c0").rows(), [])
    assert_rows(run("SELECT a FROM c1").rows(), [(11,), (12,)])
    assert_rows(run("SELECT a FROM c2").rows(), [(21,), (22,), (21,), (22,)])
    # a moved row that fits no partition: PARTITION_NOT_FOUND, nothing changes
    with pytest.raises(MergekitError) as info:
        run("UPDATE m SET a = 100 WHERE a = 11")
    assert info.value.code.name == "PARTITION_NOT_FOUND"
    assert_rows(run("SELECT a FROM c1").rows(), [(11,), (12,)])


def test_merge_routes_inserts_updates_and_deletes(engine) -> None:
    run = engine.execute
    _range_table(run)
    res = run(
        "MERGE INTO m t USING (VALUES (1, 'del'), (12, 'move'), (5, 'new')) s(a, b) ON t.a = s.a "
        "WHEN MATCHED AND s.b = 'del' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET a = 25, b = s.b "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.a, s.b)"
    )
    assert res.row_count == 3
    assert_rows(run("SELECT a, b FROM c0").rows(), [(2, "y"), (5, "new")])
    assert_rows(run("SELECT a, b FROM c1").rows(), [(11, "p")])
    assert_rows(run("SELECT a, b FROM c2").rows(), [(21, "u"), (22, "v"), (25, "move")])
    # TRUNCATE reaches every child
    run("TRUNCATE TABLE m")
    assert run("SELECT COUNT(*) FROM c2").rows() == [(0,)]


def test_failing_child_sink_leaves_every_child_unchanged(spark, tmp_path) -> None:
    from mergekit_journal import JournalConnectorFactory

    from mergekit import plugins

    failing.register()
    journal = JournalConnectorFactory().create(
        catalog_name="lake", config={"warehouse": str(tmp_path / "wh")}, context=plugins.connector_context()
    )
    base = failing.FailingJournal(journal, marker="boom")
    engine = Engine(
        spark=spark, catalogs={"lake": {"connector": "partitioned", "base": base, "warehouse": str(tmp_path / "wh")}}
    )
    try:
        run = engine.execute
        _range_table(run)
        before = {t: sorted(run(f"SELECT a, b FROM {t}").rows()) for t in ("c0", "c1", "c2")}
        # rows for all three children; the sink of the child receiving 'boom' fails after staging its rows
        with pytest.raises(MergekitError) as info:
            run("INSERT INTO m VALUES (3, 'ok'), (13, 'boom'), (23, 'ok')")
        assert "child sink asked to fail" in str(info.value)
        with pytest.raises(MergekitError):
            run("UPDATE m SET a = a + 10, b = CASE WHEN a = 21 THEN 'boom' ELSE b END WHERE a IN (1, 11, 21)")
        after = {t: sorted(run(f"SELECT a, b FROM {t}").rows()) for t in ("c0", "c1", "c2")}
        assert after == before
    finally:
        engine.close()


def test_failing_commit_of_one_child_leaves_every_child_unchanged(engine) -> None:
    run = engine.execute
    run("CREATE MERGE TABLE k (id int, v varchar, PRIMARY KEY (id)) PARTITION BY RANGE ON (id)")
    run("CREATE TABLE k0 (id int, v varchar, PRIMARY KEY (id))")
    run("CREATE TABLE k1 (id int, v varchar, PRIMARY KEY (id))")
    run("ALTER TABLE k ADD TABLE k0 AS PARTITION FROM 0 TO 10")
    run("ALTER TABLE k ADD TABLE k1 AS PARTITION FROM 10 TO 20")
    run("INSERT INTO k VALUES (1, 'a'), (11, 'b')")
    # k0's rows are fine, k1 gets a duplicate key: the journal's check fails k1, so k0 must not change either
    with pytest.raises(MergekitError) as info:
        run("INSERT INTO k VALUES (2, 'c'), (11, 'dup')")
    assert info.value.code.name == "CONSTRAINT_VIOLATION"
    assert_rows(run("SELECT id, v FROM k").rows(), [(1, "a"), (11, "b")])


def test_no_partitions_and_not_updatable(engine) -> None:
    run = engine.execute
    run("CREATE MERGE TABLE r (a int) PARTITION BY RANGE ON (a)")
    for statement, prefix in (
        ("INSERT INTO r VALUES (1)", "INSERT INTO: "),
        ("DELETE FROM r", "DELETE FROM: "),
        ("UPDATE r SET a = 2", "UPDATE: "),
    ):
        with pytest.raises(MergekitError) as info:
            run(statement)
        assert str(info.value) == f"[PARTITION_NOT_FOUND] {prefix}range partitioned table 'r' has no partitions set"
    run("CREATE MERGE TABLE plain (a int)")
    run("CREATE TABLE p1 (a int)")
    run("INSERT INTO p1 VALUES (7)")
    run("ALTER TABLE plain ADD TABLE p1")
    assert run("SELECT a FROM plain").rows() == [(7,)]
    with pytest.raises(MergekitError) as info:
        run("INSERT INTO plain VALUES (1)")
    assert "not updatable" in str(info.value)


def test_validation_messages(engine) -> None:
    run = engine.execute

    def fails(statement: str, text: str) -> None:
        with pytest.raises(MergekitError) as info:
            run(statement)
        assert text in str(info.value), str(info.value)

    fails(
        "CREATE MERGE TABLE f (a double) PARTITION BY RANGE ON (a)",
        "column type double not yet supported for the partition column",
    )
    fails(
        "CREATE MERGE TABLE f (a int) PARTITION BY RANGE USING (a / 2.0E0)",
        "not yet supported for the partition expression",
    )
    fails("CREATE MERGE TABLE f (a int) PARTITION BY RANGE USING (SUM(a))", "aggregate functions not allowed")
    run("CREATE MERGE TABLE m (a int, b varchar) PARTITION BY VALUES ON (a)")
    run("CREATE TABLE c1 (a int, b varchar)")
    run("CREATE TABLE c2 (a int, b varchar)")
    run("CREATE TABLE bad (a bigint, b varchar)")
    fails(
        "ALTER TABLE m ADD TABLE bad AS PARTITION IN (1)",
        "to be added table doesn't match LIST PARTITION TABLE definition",
    )
    fails(
        "ALTER TABLE m ADD TABLE c1 AS PARTITION FROM 1 TO 2", "cannot add range partition into a list partition table"
    )
    fails("ALTER TABLE m ADD TABLE c1", "a value partition is required while adding under a LIST PARTITION TABLE")
    fails("ALTER TABLE m ADD TABLE c1 AS PARTITION IN ('abc')", "")
    run("ALTER TABLE m ADD TABLE c1 AS PARTITION IN (1, 2) WITH NULL VALUES")
    fails("ALTER TABLE m ADD TABLE c1 AS PARTITION IN (3)", "is already part of LIST PARTITION TABLE")
    fails(
        "ALTER TABLE m ADD TABLE c2 AS PARTITION FOR NULL VALUES", "conflicting with the existing partition default.c1"
    )
    fails("DROP TABLE c1", "unable to drop table default.c1")
    fails("ALTER TABLE m ADD TABLE m AS PARTITION IN (9)", "")
    run("CREATE MERGE TABLE outer_m (a int, b varchar) PARTITION BY VALUES ON (a)")
    run("ALTER TABLE outer_m ADD TABLE m AS PARTITION IN (1, 2, 3)")
    fails("ALTER TABLE m ADD TABLE outer_m AS PARTITION IN (7)", "")
    # nested: rows route through both levels, and reads see them through the top
    run("INSERT INTO outer_m VALUES (1, 'one')")
    assert run("SELECT a, b FROM c1").rows() == [(1, "one")]
    fails("INSERT INTO outer_m VALUES (3, 'three')", "violates the partition list of values")
    fails("INSERT INTO m VALUES (2, 'x'), (7, 'y')", "")
    run("ALTER TABLE m DROP TABLE c1")
    assert run("SELECT COUNT(*) FROM value_partitions WHERE table_id IS NOT NULL").rows() == [(3,)]


def test_large_source_keys_are_read_by_each_child(engine, spark, tmp_path, monkeypatch) -> None:
    """A MERGE source with many keys hands them to the children's journals as a value set: each child reads
    only those keys' rows, and because every child enforced them the merge table does too (no semi join).
    Rows land in their children as with a small source. (The Spark plan's reduction: index lookups, which such a
    MERGE takes by default, are kept out.)"""
    import mergekit.planner.cost as cost_module

    monkeypatch.setattr(cost_module, "KEY_VALUES_MAX", 5)
    monkeypatch.setattr(cost_module, "LOOKUP_MIN_KEYS", 10**18)
    run = engine.execute
    run("CREATE MERGE TABLE m (a int NOT NULL, b varchar, PRIMARY KEY (a)) PARTITION BY RANGE ON (a)")
    for i, (lo, hi) in enumerate([(0, 100), (100, 200), (200, 300)]):
        run(f"CREATE TABLE c{i} (a int NOT NULL, b varchar, PRIMARY KEY (a))")
        run(f"ALTER TABLE m ADD TABLE c{i} AS PARTITION FROM {lo} TO {hi}")
    run("INSERT INTO m SELECT a, 'old' FROM UNNEST(sequence(0, 249)) AS x(a)")
    rows = [(a, "new") for a in range(0, 300, 5)]
    spark.createDataFrame(rows, "a INT, b STRING").write.parquet(str(tmp_path / "src"))
    engine.register_dataframe("src", spark.read.parquet(str(tmp_path / "src")))
    res = run(
        "MERGE INTO m t USING src s ON t.a = s.a WHEN MATCHED THEN UPDATE SET b = s.b "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.a, s.b)"
    )
    assert res.metrics["updated"] == 50 and res.metrics["inserted"] == 10
    (target,) = [s for s in res.metrics["scans"] if s.get("target")]
    assert target["enforced"] == ["a"] and target["semi_join"] is False
    new = {a for a in range(0, 300, 5)}
    expected = [(a, "new" if a in new else "old") for a in range(0, 250)] + [(a, "new") for a in range(250, 300, 5)]
    assert_rows(run("SELECT a, b FROM m").rows(), expected)
    assert_rows(run("SELECT a FROM c2 WHERE b = 'new' AND a >= 250").rows(), [(a,) for a in range(250, 300, 5)])
