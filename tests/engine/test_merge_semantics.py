"""MERGE, UPDATE, DELETE and INSERT behaviour beyond the conformance files, on the memory connector."""

from __future__ import annotations

import os

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode
from tests.helpers import assert_rows


def _setup(engine: Engine) -> None:
    engine.execute_script(
        """
        CREATE TABLE target (id INTEGER, name VARCHAR, amount INTEGER);
        INSERT INTO target VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40);
        CREATE TABLE source (id INTEGER, name VARCHAR, amount INTEGER);
        INSERT INTO source VALUES (1, 'A', 11), (3, 'C', 33), (5, 'E', 55);
        """
    )


def test_row_count_and_metrics_per_when_clause(engine: Engine) -> None:
    _setup(engine)
    result = engine.execute(
        "MERGE INTO target t USING source s ON t.id = s.id "
        "WHEN MATCHED AND s.id = 1 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET amount = s.amount "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.amount)"
    )
    assert result.row_count == 3
    assert result.metrics["inserted"] == 1
    assert result.metrics["updated"] == 1
    assert result.metrics["deleted"] == 1
    assert result.metrics["per_case"] == {
        0: {"inserted": 0, "updated": 0, "deleted": 1},
        1: {"inserted": 0, "updated": 1, "deleted": 0},
        2: {"inserted": 1, "updated": 0, "deleted": 0},
    }
    assert_rows(engine.execute("SELECT * FROM target").rows(), [(2, "b", 20), (3, "c", 33), (4, "d", 40), (5, "E", 55)])


def test_not_matched_by_source_update_and_delete(engine: Engine) -> None:
    _setup(engine)
    result = engine.execute(
        "MERGE INTO target t USING source s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name "
        "WHEN NOT MATCHED BY SOURCE AND t.id = 2 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET amount = -1"
    )
    assert result.row_count == 4
    assert result.metrics["per_case"][1]["deleted"] == 1
    assert_rows(engine.execute("SELECT * FROM target").rows(), [(1, "A", 10), (3, "C", 30), (4, "d", -1)])


def test_not_matched_by_source_with_target_only_on_condition(engine: Engine) -> None:
    """Target rows that fail a target-only ON conjunct are still 'not matched by source'."""
    _setup(engine)
    result = engine.execute(
        "MERGE INTO target t USING source s ON t.id = s.id AND t.amount > 15 "
        "WHEN MATCHED THEN UPDATE SET name = s.name "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET name = 'orphan' "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.amount)"
    )
    # id 1 fails t.amount > 15: target row 1 is not matched by source, and source row 1 is not matched.
    assert_rows(
        engine.execute("SELECT * FROM target").rows(),
        [(1, "orphan", 10), (1, "A", 11), (2, "orphan", 20), (3, "C", 30), (4, "orphan", 40), (5, "E", 55)],
    )
    assert result.row_count == 6


def test_duplicate_match_names_the_target_row(engine: Engine) -> None:
    _setup(engine)
    engine.execute("INSERT INTO source VALUES (3, 'C2', 34)")
    with pytest.raises(MergekitError) as info:
        engine.execute("MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name")
    err = info.value
    assert err.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
    assert "One MERGE target table row matched more than one source row" in str(err)
    assert "target row id:" in str(err)
    assert_rows(engine.execute("SELECT * FROM target").rows(), [(1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40)])


def test_duplicate_matches_from_different_source_partitions_are_found(engine: Engine, spark) -> None:
    """The duplicate-match check runs in the join's tasks: the engine must make every match of a target row
    meet in one task even when the target is tiny (Spark would broadcast it) and the source rows that match
    it sit in different partitions of a spread-out source."""
    _setup(engine)
    rows = [(i % 50, f"n{i}", i) for i in range(200)]  # every id 0..49 four times, spread over 8 partitions
    source = spark.createDataFrame(rows, "id INT, name STRING, amount INT").repartition(8)
    engine.register_dataframe("spread", source)
    try:
        with pytest.raises(MergekitError) as info:
            engine.execute(
                "MERGE INTO target t USING spread s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name"
            )
        assert info.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
        # a key expression on the source side, the ON written the other way round, and a FULL join
        with pytest.raises(MergekitError) as info:
            engine.execute(
                "MERGE INTO target t USING spread s ON s.id + 0 = t.id AND s.amount >= 0 "
                "WHEN MATCHED THEN DELETE WHEN NOT MATCHED BY SOURCE THEN DELETE"
            )
        assert info.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
        assert_rows(
            engine.execute("SELECT * FROM target").rows(), [(1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40)]
        )
        # one match per target row: fine, and every row arrives exactly once
        unique = spark.createDataFrame([(i, f"u{i}", i) for i in range(100)], "id INT, name STRING, amount INT")
        engine.register_dataframe("spread", unique.repartition(8))
        result = engine.execute(
            "MERGE INTO target t USING spread s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
            "WHEN NOT MATCHED AND s.id < 7 THEN INSERT VALUES (s.id, s.name, s.amount)"
        )
        assert result.row_count == 7
        assert_rows(
            engine.execute("SELECT * FROM target").rows(),
            [(0, "u0", 0), (1, "u1", 10), (2, "u2", 20), (3, "u3", 30), (4, "u4", 40), (5, "u5", 5), (6, "u6", 6)],
        )
    finally:
        engine.unregister_dataframe("spread")


def test_duplicate_match_in_two_different_clauses_fails(engine: Engine) -> None:
    """PostgreSQL's rule: a target row changed by two source rows fails even when they pick different clauses."""
    _setup(engine)
    engine.execute("INSERT INTO source VALUES (3, 'X', 0)")
    with pytest.raises(MergekitError) as info:
        engine.execute(
            "MERGE INTO target t USING source s ON t.id = s.id "
            "WHEN MATCHED AND s.name = 'X' THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name"
        )
    assert info.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES


def test_duplicate_source_rows_that_select_no_clause_do_not_count(engine: Engine) -> None:
    _setup(engine)
    engine.execute("INSERT INTO source VALUES (3, 'skip', 0)")
    result = engine.execute(
        "MERGE INTO target t USING source s ON t.id = s.id "
        "WHEN MATCHED AND s.name <> 'skip' THEN UPDATE SET name = s.name"
    )
    assert result.row_count == 2
    assert_rows(engine.execute("SELECT * FROM target").rows(), [(1, "A", 10), (2, "b", 20), (3, "C", 30), (4, "d", 40)])


def test_one_source_row_may_change_many_target_rows(engine: Engine) -> None:
    _setup(engine)
    result = engine.execute(
        "MERGE INTO target t USING (VALUES 1) s(x) ON t.amount > 15 WHEN MATCHED THEN UPDATE SET amount = t.amount + s.x"
    )
    assert result.row_count == 3
    assert_rows(engine.execute("SELECT amount FROM target").rows(), [(10,), (21,), (31,), (41,)])


def test_source_with_random_keys_is_evaluated_once(engine: Engine) -> None:
    """A source whose join key is random must be joined as one evaluation: filtering the target by the
    source's keys beforehand evaluates them a second time and would take a matching row for NOT MATCHED
    (each round below has a one-in-two chance of that)."""
    engine.execute_script(
        """
        CREATE TABLE target (id INTEGER, name VARCHAR, amount INTEGER);
        INSERT INTO target VALUES (0, 'a', 0), (1, 'b', 0);
        """
    )
    for round_ in range(1, 9):
        result = engine.execute(
            "MERGE INTO target t USING (SELECT CAST(floor(rand() * 2) AS INTEGER) AS id) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET amount = t.amount + 1 "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'new', 100)"
        )
        assert result.row_count == 1
        assert engine.execute("SELECT count(*), sum(amount) FROM target").rows() == [(2, round_)]


def test_insert_only_merge_uses_anti_join(engine: Engine) -> None:
    _setup(engine)
    engine.execute("SET SESSION driver_tier = 'off'")  # the Spark plan (the driver tier reads both tables whole)
    plan = engine.execute(
        "EXPLAIN MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.amount)"
    ).rows()[0][0]
    assert "LEFT ANTI JOIN" in plan
    result = engine.execute(
        "MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.amount)"
    )
    assert result.row_count == 1
    assert_rows(engine.execute("SELECT id FROM target").rows(), [(1,), (2,), (3,), (4,), (5,)])


def test_explain_merge_prints_the_plan(engine: Engine, paradigm: str) -> None:
    _setup(engine)
    text = engine.execute(
        "EXPLAIN MERGE INTO target t USING source s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED BY SOURCE THEN DELETE"
    ).rows()[0][0]
    assert "FULL OUTER JOIN" in text
    assert "case 0: WHEN MATCHED -> UPDATE (op 3)" in text
    assert "case 1: WHEN NOT MATCHED BY SOURCE -> DELETE (op 2)" in text
    assert "duplicate match" in text
    expected = (
        "DeleteAndInsertMergeProcessor"
        if paradigm == "DELETE_ROW_AND_INSERT_ROW"
        else "ChangeOnlyUpdatedColumnsMergeProcessor"
    )
    assert expected in text
    assert "layout:" in text


def test_sinks_run_in_python_workers_not_the_driver(engine: Engine) -> None:
    _setup(engine)
    engine.execute("SET SESSION driver_tier = 'off'")  # the Spark plan (the driver tier writes in this process)
    result = engine.execute("UPDATE target SET amount = amount + 1")
    pids = result.metrics["writer_pids"]
    assert pids and os.getpid() not in pids
    fragments = engine.catalog("lake").last_fragments
    assert fragments and all(f.pid != os.getpid() for f in fragments)


def test_failing_sink_aborts_and_leaves_table_unchanged(spark, paradigm: str) -> None:
    engine = Engine(
        spark=spark, catalogs={"lake": {"connector": "memory", "paradigm": paradigm, "fail_sink_on": "boom"}}
    )
    _setup(engine)
    memory = engine.catalog("lake")
    with pytest.raises(MergekitError) as info:
        engine.execute(
            "MERGE INTO target t USING (VALUES (2, 'boom', 0), (3, 'ok', 1)) s(id, name, amount) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET name = s.name"
        )
    assert str(info.value).startswith("[")
    assert "memory sink asked to fail" in str(info.value)
    assert len(memory.aborted) == 1
    assert_rows(engine.execute("SELECT * FROM target").rows(), [(1, "a", 10), (2, "b", 20), (3, "c", 30), (4, "d", 40)])


def test_update_of_partition_column_is_routed_by_new_value(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory", "paradigm": "DELETE_ROW_AND_INSERT_ROW"}})
    engine.execute("CREATE TABLE p (id INTEGER, region VARCHAR) WITH (partitioned_by = ARRAY['region'])")
    engine.execute("INSERT INTO p VALUES " + ", ".join(f"({i}, 'r{i % 4}')" for i in range(40)))
    result = engine.execute("UPDATE p SET region = 'r9' WHERE id % 4 = 1")
    assert result.row_count == 10
    seen: dict[tuple[str, ...], set[int]] = {}
    for fragment in engine.catalog("lake").last_fragments:
        for part in fragment.partitions_seen:
            seen.setdefault(part, set()).add(fragment.sink_id)
    assert seen == {("r9",): seen[("r9",)]} and len(seen[("r9",)]) == 1
    assert_rows(
        engine.execute("SELECT region, count(*) FROM p GROUP BY region").rows(),
        [("r0", 10), ("r2", 10), ("r3", 10), ("r9", 10)],
    )


def test_inserts_of_one_partition_reach_one_sink(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("CREATE TABLE p (id INTEGER, region VARCHAR) WITH (partitioned_by = ARRAY['region'])")
    engine.execute(
        "INSERT INTO p SELECT CAST(id AS INTEGER), concat('r', CAST(id % 5 AS VARCHAR)) FROM UNNEST(sequence(1, 500)) AS x(id)"
    )
    owner: dict[tuple[str, ...], int] = {}
    for fragment in engine.catalog("lake").last_fragments:
        for part in fragment.partitions_seen:
            assert part not in owner, f"partition {part} reached two sinks"
            owner[part] = fragment.sink_id
    assert len(owner) == 5


def test_not_null_on_insert_and_merge_insert(engine: Engine) -> None:
    engine.execute("CREATE TABLE n (id INTEGER NOT NULL, v VARCHAR)")
    with pytest.raises(MergekitError, match=r"NULL value not allowed for NOT NULL column: id") as info:
        engine.execute("INSERT INTO n (v) VALUES ('x')")
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
    with pytest.raises(MergekitError, match=r"NULL value not allowed for NOT NULL column: id"):
        engine.execute("MERGE INTO n USING (VALUES 'y') s(v) ON false WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)")
    assert engine.execute("SELECT count(*) FROM n").rows() == [(0,)]


def test_merge_cases_that_are_never_taken_do_not_raise(engine: Engine) -> None:
    engine.execute("CREATE TABLE n (id INTEGER NOT NULL, v VARCHAR)")
    engine.execute("INSERT INTO n VALUES (1, 'a')")
    result = engine.execute(
        "MERGE INTO n USING (VALUES (1, 'b')) s(id, v) ON n.id = s.id "
        "WHEN MATCHED AND s.v = 'zzz' THEN UPDATE SET id = NULL WHEN MATCHED THEN UPDATE SET v = s.v"
    )
    assert result.row_count == 1
    assert engine.execute("SELECT * FROM n").rows() == [(1, "b")]


def test_merge_type_mismatch(engine: Engine) -> None:
    _setup(engine)
    with pytest.raises(MergekitError) as info:
        engine.execute("MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET amount = s.name")
    assert info.value.code is ErrorCode.TYPE_MISMATCH
    assert str(info.value) == (
        "[TYPE_MISMATCH] MERGE table column types don't match for MERGE case 0, SET expressions: "
        "Table: [integer], Expressions: [varchar]"
    )


def test_merge_coerces_bigint_and_double_to_integer(engine: Engine) -> None:
    _setup(engine)
    engine.execute(
        "MERGE INTO target t USING (VALUES (1, BIGINT '7'), (2, DOUBLE '2.6')) s(id, v) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = s.v"
    )
    assert_rows(engine.execute("SELECT id, amount FROM target WHERE id < 3").rows(), [(1, 7), (2, 3)])


def test_merge_unknown_and_repeated_columns(engine: Engine) -> None:
    _setup(engine)
    with pytest.raises(MergekitError, match="Merge column name does not exist in target table: nope") as info:
        engine.execute("MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1")
    assert info.value.code is ErrorCode.COLUMN_NOT_FOUND
    with pytest.raises(MergekitError, match="Merge column name is specified more than once: name") as info:
        engine.execute(
            "MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = 'x', name = 'y'"
        )
    assert info.value.code is ErrorCode.DUPLICATE_COLUMN_NAME


def test_merge_predicate_must_be_boolean(engine: Engine) -> None:
    _setup(engine)
    with pytest.raises(MergekitError) as info:
        engine.execute("MERGE INTO target t USING source s ON t.id WHEN MATCHED THEN DELETE")
    assert info.value.code is ErrorCode.TYPE_MISMATCH


def test_subqueries_in_merge_conditions_and_values(engine: Engine) -> None:
    _setup(engine)
    engine.execute(
        "MERGE INTO target t USING source s ON t.id = s.id "
        "WHEN MATCHED AND s.id IN (SELECT id FROM source WHERE name = 'C') THEN UPDATE SET amount = (SELECT max(amount) FROM source) "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, (SELECT min(amount) FROM target))"
    )
    assert_rows(
        engine.execute("SELECT * FROM target").rows(),
        [(1, "a", 10), (2, "b", 20), (3, "c", 55), (4, "d", 40), (5, "E", 10)],
    )


def test_insert_select_and_ctas(engine: Engine) -> None:
    _setup(engine)
    result = engine.execute("CREATE TABLE copy AS SELECT id, name FROM target WHERE amount > 15")
    assert result.row_count == 3
    assert engine.execute("DESCRIBE copy").rows() == [("id", "integer", "", ""), ("name", "varchar", "", "")]
    assert engine.execute("INSERT INTO copy SELECT id + 10, upper(name) FROM source").row_count == 3
    assert_rows(
        engine.execute("SELECT * FROM copy").rows(), [(2, "b"), (3, "c"), (4, "d"), (11, "A"), (13, "C"), (15, "E")]
    )
    with pytest.raises(MergekitError, match="Insert query has mismatched column types"):
        engine.execute("INSERT INTO copy SELECT name, id FROM source")


def test_failed_ctas_leaves_no_table(engine: Engine) -> None:
    with pytest.raises(MergekitError):
        engine.execute("CREATE TABLE bad AS SELECT 1 / (x - 1) AS y FROM (VALUES 1) t(x)")
    assert engine.execute("SHOW TABLES").rows() == []


def test_delete_and_update_counts(engine: Engine) -> None:
    _setup(engine)
    assert engine.execute("DELETE FROM target WHERE amount > 25").row_count == 2
    assert engine.execute("UPDATE target SET amount = amount * 2 WHERE name IS NOT NULL").row_count == 2
    assert engine.execute("DELETE FROM target WHERE id = 99").row_count == 0
    assert_rows(engine.execute("SELECT * FROM target").rows(), [(1, "a", 20), (2, "b", 40)])


def test_truncate(engine: Engine) -> None:
    _setup(engine)
    engine.execute("TRUNCATE TABLE target")
    assert engine.execute("SELECT count(*) FROM target").rows() == [(0,)]


def test_errors_are_coded(engine: Engine) -> None:
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT * FROM missing")
    assert info.value.code is ErrorCode.TABLE_NOT_FOUND
    assert str(info.value) == "[TABLE_NOT_FOUND] Table 'lake.default.missing' does not exist"
    _setup(engine)
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT nope FROM target")
    assert info.value.code is ErrorCode.COLUMN_NOT_FOUND
    assert "nope" in str(info.value)
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT * FROM\n target WHER id = 1 AND")
    assert info.value.code is ErrorCode.SYNTAX_ERROR
    assert info.value.line == 2
