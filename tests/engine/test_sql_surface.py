"""SQL that PostgreSQL, Spark, Delta and DuckDB users write daily (issue 16): multiple-column assignment, DO NOTHING,
UPDATE SET * / INSERT *, the clause rules every engine enforces, as a user sees them through ``Engine``."""

from __future__ import annotations

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError


@pytest.fixture
def lake(spark) -> Engine:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("CREATE TABLE t (k INTEGER, x INTEGER, b VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')")
    engine.execute("CREATE TABLE s (k INTEGER, x INTEGER, b VARCHAR)")
    engine.execute("INSERT INTO s VALUES (2, 200, 'B'), (3, 300, 'C'), (4, 400, 'D')")
    yield engine
    engine.close()


def rows(engine: Engine, table: str = "t") -> list[tuple]:
    return sorted(engine.execute(f"SELECT * FROM {table}").rows(), key=repr)


def refused(engine: Engine, sql: str, code: ErrorCode, text: str) -> None:
    before = rows(engine)
    with pytest.raises(MergekitError) as caught:
        engine.execute(sql)
    assert caught.value.code is code, caught.value
    assert text in str(caught.value)
    assert rows(engine) == before


def test_multiple_column_assignment_in_update(lake: Engine) -> None:
    assert lake.execute("UPDATE t AS tg SET (x, b) = (tg.x + 1, NULL) WHERE tg.k = 2").row_count == 1
    assert lake.execute("UPDATE t SET (b) = ROW('r'), x = 0 WHERE k = 3").row_count == 1
    assert rows(lake) == [(1, 10, "a"), (2, 21, None), (3, 0, "r")]


def test_multiple_column_assignment_in_merge(lake: Engine) -> None:
    result = lake.execute("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE SET (x, b) = (s.x, NULL)")
    assert result.row_count == 2
    assert rows(lake) == [(1, 10, "a"), (2, 200, None), (3, 300, None)]


@pytest.mark.parametrize(
    ("sql", "text"),
    [
        ("UPDATE t SET (x, b) = (1) WHERE k = 1", "must be a sub-SELECT or ROW\\(\\) expression"),
        ("UPDATE t SET (x, b) = (1, 'a', 2)", "number of columns does not match number of values"),
        ("UPDATE t SET (x, x) = (1, 2)", "Multiple assignments to the same column: x"),
    ],
)
def test_multiple_column_assignment_errors(lake: Engine, sql: str, text: str) -> None:
    before = rows(lake)
    with pytest.raises(MergekitError, match=text):
        lake.execute(sql)
    assert rows(lake) == before


def test_do_nothing_takes_the_row_and_changes_nothing(lake: Engine) -> None:
    result = lake.execute(
        "MERGE INTO t USING s ON t.k = s.k "
        "WHEN MATCHED AND s.k = 2 THEN DO NOTHING "
        "WHEN MATCHED THEN UPDATE SET x = s.x "
        "WHEN NOT MATCHED AND s.k = 4 THEN DO NOTHING "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.x, s.b)"
    )
    assert result.row_count == 1  # row 2 taken by DO NOTHING (not updated by the next clause), 4 not inserted
    assert rows(lake) == [(1, 10, "a"), (2, 20, "b"), (3, 300, "c")]


def test_do_nothing_only(lake: Engine) -> None:
    result = lake.execute(
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED THEN DO NOTHING"
    )
    assert result.row_count == 0
    assert rows(lake) == [(1, 10, "a"), (2, 20, "b"), (3, 30, "c")]


def test_do_nothing_with_duplicate_source_rows_is_no_error(lake: Engine) -> None:
    lake.execute("INSERT INTO s VALUES (2, 201, 'B2')")
    result = lake.execute("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DO NOTHING")
    assert result.row_count == 0


def test_update_set_star_and_insert_star(lake: Engine) -> None:
    result = lake.execute(
        "MERGE INTO t USING (SELECT b, k, x * 2 AS x, 'extra' AS unused FROM s) AS src ON t.k = src.k "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert result.row_count == 3
    assert rows(lake) == [(1, 10, "a"), (2, 400, "B"), (3, 600, "C"), (4, 800, "D")]


def test_star_needs_every_target_column_in_the_source(lake: Engine) -> None:
    refused(
        lake,
        "MERGE INTO t USING (SELECT k, x FROM s) AS src ON t.k = src.k WHEN MATCHED THEN UPDATE SET *",
        ErrorCode.COLUMN_NOT_FOUND,
        "UPDATE SET *: the MERGE source has no column named b",
    )
    refused(
        lake,
        "MERGE INTO t USING (SELECT k, b FROM s) AS src ON t.k = src.k WHEN NOT MATCHED THEN INSERT *",
        ErrorCode.COLUMN_NOT_FOUND,
        "INSERT *: the MERGE source has no column named x",
    )


def test_clause_after_an_unconditional_clause_of_its_kind_is_rejected(lake: Engine) -> None:
    refused(
        lake,
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE WHEN MATCHED THEN UPDATE SET x = 0",
        ErrorCode.SYNTAX_ERROR,
        "unreachable WHEN clause specified after unconditional WHEN clause",
    )
    # a clause of another kind after it is fine, and so is an unconditional clause after a conditional one
    result = lake.execute(
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED AND s.k = 2 THEN DELETE WHEN MATCHED THEN UPDATE SET x = 0 "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.x, s.b)"
    )
    assert result.row_count == 3
    assert rows(lake) == [(1, 10, "a"), (3, 0, "c"), (4, 400, "D")]


@pytest.mark.parametrize(
    "clause",
    [
        "WHEN NOT MATCHED THEN INSERT (k, x) VALUES (t.k, s.x)",
        "WHEN NOT MATCHED AND t.x > 0 THEN INSERT (k, x) VALUES (s.k, s.x)",
    ],
)
def test_not_matched_clause_cannot_read_the_target(lake: Engine, clause: str) -> None:
    refused(
        lake,
        f"MERGE INTO t USING s ON t.k = s.k {clause}",
        ErrorCode.COLUMN_NOT_FOUND,
        'invalid reference to FROM-clause entry for table "t"',
    )


def test_not_matched_clause_cannot_read_an_unqualified_target_only_column(lake: Engine) -> None:
    lake.execute("CREATE TABLE s2 (sk INTEGER, sx INTEGER)")
    lake.execute("INSERT INTO s2 VALUES (9, 90)")
    refused(
        lake,
        "MERGE INTO t USING s2 ON t.k = s2.sk WHEN NOT MATCHED THEN INSERT (k, x) VALUES (sk, x)",
        ErrorCode.COLUMN_NOT_FOUND,
        "column x of the target cannot be referenced in a WHEN NOT MATCHED clause",
    )
    lake.execute("MERGE INTO t USING s2 ON t.k = s2.sk WHEN NOT MATCHED THEN INSERT (k, x) VALUES (sk, sx)")
    assert (9, 90, None) in rows(lake)


def test_update_from(lake: Engine) -> None:
    result = lake.execute("UPDATE t AS tg SET x = s.x + tg.x, b = s.b FROM s WHERE tg.k = s.k AND s.k < 4")
    assert result.row_count == 2
    assert rows(lake) == [(1, 10, "a"), (2, 220, "B"), (3, 330, "C")]


def test_update_from_a_subquery_with_a_target_row_joining_two_rows_is_an_error(lake: Engine) -> None:
    refused(
        lake,
        "UPDATE t SET x = v.x FROM (SELECT k, x FROM s UNION ALL SELECT 2, 0) AS v WHERE t.k = v.k",
        ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES,
        "One MERGE target table row matched more than one source row",
    )


def test_delete_using(lake: Engine) -> None:
    lake.execute("INSERT INTO s VALUES (3, 301, 'C2')")  # two USING rows for target row 3: deleted once
    result = lake.execute("DELETE FROM t USING s AS y WHERE t.k = y.k AND y.x > 250")
    assert result.row_count == 1
    assert rows(lake) == [(1, 10, "a"), (2, 20, "b")]


def test_delete_using_two_tables_and_without_where(lake: Engine) -> None:
    lake.execute("CREATE TABLE u (k INTEGER)")
    lake.execute("INSERT INTO u VALUES (2)")
    assert lake.execute("DELETE FROM t USING s, u WHERE t.k = s.k AND s.k = u.k").row_count == 1
    assert rows(lake) == [(1, 10, "a"), (3, 30, "c")]
    lake.execute("DELETE FROM u")
    assert lake.execute("DELETE FROM t USING u").row_count == 0  # an empty USING table joins nothing
    assert len(rows(lake)) == 2


def test_delete_using_an_ambiguous_column_is_an_error(lake: Engine) -> None:
    refused(lake, "DELETE FROM t USING s WHERE x > 100", ErrorCode.AMBIGUOUS_NAME, 'column reference "x" is ambiguous')


@pytest.fixture
def keyed(spark, tmp_path) -> Engine:
    """A journal table with a primary key (ON CONFLICT needs one) and a commit history to check."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "w")}})
    engine.execute("CREATE TABLE t (k INTEGER, x INTEGER, b VARCHAR, PRIMARY KEY (k))")
    engine.execute("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')")
    yield engine
    engine.close()


def test_insert_on_conflict_do_nothing(keyed: Engine) -> None:
    result = keyed.execute("INSERT INTO t VALUES (2, 0, 'z'), (4, 40, 'd') ON CONFLICT (k) DO NOTHING")
    assert result.row_count == 1
    assert rows(keyed) == [(1, 10, "a"), (2, 20, "b"), (3, 30, "c"), (4, 40, "d")]
    assert keyed.execute("INSERT INTO t (k, x) VALUES (1, 0) ON CONFLICT DO NOTHING").row_count == 0


def test_insert_on_conflict_do_update(keyed: Engine) -> None:
    result = keyed.execute(
        "INSERT INTO t AS cur (k, x, b) VALUES (1, 11, 'A'), (3, 33, 'C'), (5, 50, 'e') "
        "ON CONFLICT (k) DO UPDATE SET x = cur.x + excluded.x, b = excluded.b WHERE cur.k <> 3"
    )
    assert result.row_count == 2  # 1 updated, 3 left alone by WHERE, 5 inserted
    assert rows(keyed) == [(1, 21, "A"), (2, 20, "b"), (3, 30, "c"), (5, 50, "e")]


def test_insert_on_conflict_needs_the_primary_key(keyed: Engine) -> None:
    refused(
        keyed,
        "INSERT INTO t VALUES (1, 0, 'z') ON CONFLICT (x) DO NOTHING",
        ErrorCode.INVALID_ARGUMENTS,
        "there is no unique or exclusion constraint matching the ON CONFLICT specification",
    )
    refused(
        keyed,
        "INSERT INTO t VALUES (1, 0, 'z') ON CONFLICT DO UPDATE SET x = 1",
        ErrorCode.SYNTAX_ERROR,
        "ON CONFLICT DO UPDATE requires inference specification or constraint name",
    )


def test_insert_overwrite_replaces_every_row_in_one_commit(keyed: Engine) -> None:
    commits = len(keyed.execute("DESCRIBE HISTORY t").rows())
    result = keyed.execute("INSERT OVERWRITE t SELECT k + 10, x, upper(b) FROM t WHERE k < 3")
    assert result.row_count == 5  # 2 inserted + 3 deleted
    assert rows(keyed) == [(11, 10, "A"), (12, 20, "B")]
    assert len(keyed.execute("DESCRIBE HISTORY t").rows()) == commits + 1
    assert keyed.execute("INSERT OVERWRITE t (k) VALUES (7)").row_count == 3
    assert rows(keyed) == [(7, None, None)]


@pytest.mark.parametrize(
    ("on", "strategy"),
    [("t.k = s.k", "index_lookup"), ("t.k = s.k AND s.x IS NOT NULL", "spark_join")],
)
def test_a_rerun_merge_writes_nothing(keyed: Engine, on: str, strategy: str) -> None:
    keyed.execute("CREATE TABLE s (k INTEGER, x INTEGER, b VARCHAR)")
    keyed.execute("INSERT INTO s VALUES (2, 200, 'B'), (3, 30, 'c'), (4, 400, 'D')")
    merge = (
        f"MERGE INTO t USING s ON {on} WHEN MATCHED THEN UPDATE SET x = s.x, b = s.b "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.x, s.b)"
    )
    first = keyed.execute(merge)
    assert first.metrics["strategy"] == strategy
    # row 3 already holds (30, 'c'): counted as updated (as Trino counts it), not written
    assert (first.row_count, first.metrics["updated"], first.metrics["unchanged"]) == (3, 2, 1)
    commits = len(keyed.execute("DESCRIBE HISTORY t").rows())
    again = keyed.execute(merge)
    # every source row now matches a row holding its values already: three updates counted, none written
    assert (again.row_count, again.metrics["updated"], again.metrics["unchanged"]) == (3, 3, 3)
    assert again.metrics["sinks"] == 0  # no merge sink received a row: no data file
    assert rows(keyed) == [(1, 10, "a"), (2, 200, "B"), (3, 30, "c"), (4, 400, "D")]
    assert len(keyed.execute("DESCRIBE HISTORY t").rows()) <= commits + 1


def test_update_to_the_same_values_is_counted_not_written(keyed: Engine) -> None:
    result = keyed.execute("UPDATE t SET x = x, b = CASE WHEN k = 1 THEN 'A' ELSE b END")
    assert (result.row_count, result.metrics["unchanged"]) == (3, 2)
    assert rows(keyed) == [(1, 10, "A"), (2, 20, "b"), (3, 30, "c")]


def test_duplicate_source_policy_through_sql_session_property(keyed: Engine) -> None:
    keyed.execute("CREATE TABLE s (k INTEGER, x INTEGER, ts INTEGER)")
    keyed.execute("INSERT INTO s VALUES (2, 201, 1), (2, 202, 3), (2, 203, 2), (9, 900, 1), (9, 901, 2)")
    merge = (
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN UPDATE SET x = s.x "
        "WHEN NOT MATCHED THEN INSERT (k, x) VALUES (s.k + s.ts, s.x)"
    )
    refused_rows = rows(keyed)
    with pytest.raises(MergekitError) as caught:
        keyed.execute(merge)
    assert caught.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
    assert rows(keyed) == refused_rows
    keyed.execute("SET SESSION merge_duplicate_source = 'last by s.ts'")
    assert ("merge_duplicate_source", "last by s.ts") in [r[:2] for r in keyed.execute("SHOW SESSION").rows()]
    explained = keyed.execute(f"EXPLAIN {merge}").rows()[0][0]
    assert "the first by s.ts DESC NULLS FIRST" in explained
    result = keyed.execute(merge)
    # target row 2 takes the source row with the largest ts; unmatched source rows are all inserted
    assert result.row_count == 3
    assert set(rows(keyed)) == {(1, 10, "a"), (2, 202, "b"), (3, 30, "c"), (10, 900, None), (11, 901, None)}
    # UPDATE ... FROM is planned as a MERGE: the policy picks its row too
    assert keyed.execute("UPDATE t SET x = s.x FROM s WHERE t.k = s.k").row_count == 1
    assert (2, 202, "b") in rows(keyed)
    # INSERT ... ON CONFLICT keeps PostgreSQL's rule whatever the session says (its source is named excluded)
    upsert = keyed.execute("INSERT INTO t (k, x) VALUES (1, 5) ON CONFLICT (k) DO UPDATE SET x = excluded.x")
    assert upsert.row_count == 1 and (1, 5, "a") in rows(keyed)
    # the policy's ORDER BY names the source by its alias: a MERGE naming it otherwise cannot resolve it
    before = rows(keyed)
    with pytest.raises(MergekitError) as caught:
        keyed.execute(merge.replace("USING s ON t.k = s.k", "USING s AS src ON t.k = src.k").replace("s.", "src."))
    assert caught.value.code is ErrorCode.COLUMN_NOT_FOUND and "'s.ts' cannot be resolved" in str(caught.value)
    assert rows(keyed) == before
    keyed.execute("RESET SESSION merge_duplicate_source")
    with pytest.raises(MergekitError) as caught:
        keyed.execute(merge.replace("UPDATE SET x = s.x", "UPDATE SET x = s.x + 1"))
    assert caught.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES


def test_duplicate_source_policy_through_the_dataframe_builder(keyed: Engine, spark) -> None:
    source = spark.createDataFrame([(1, 11, 5), (1, 12, 4), (3, 31, None), (3, 32, 7)], "k INT, x INT, ts INT")
    result = (
        keyed.merge_into("t", source=source, on="t.k = s.k")
        .deduplicate_source(order_by="s.ts", keep="first")
        .when_matched_update({"x": "s.x"})
        .execute()
    )
    assert result.row_count == 2  # row 1 takes ts 4 (x 12); row 3 takes ts 7 (NULLs sort last)
    assert rows(keyed) == [(1, 12, "a"), (2, 20, "b"), (3, 32, "c")]
    # the policy was for that statement only
    assert _session(keyed)["merge_duplicate_source"] == "none"


@pytest.mark.parametrize(
    ("sql", "text"),
    [
        ("SET SESSION no_such_property = 'x'", "Session property 'no_such_property' does not exist"),
        ("SET SESSION merge_duplicate_source = 'newest'", "must be 'none', 'first by <order>' or 'last by <order>'"),
        ("SET SESSION driver_tier = 'always'", "driver_tier must be 'auto' or 'off', got 'always'"),
        ("RESET SESSION no_such_property", "does not exist"),
    ],
)
def test_invalid_session_properties(keyed: Engine, sql: str, text: str) -> None:
    with pytest.raises(MergekitError) as caught:
        keyed.execute(sql)
    assert caught.value.code is ErrorCode.INVALID_SESSION_PROPERTY
    assert text in str(caught.value)
    assert _session(keyed)["merge_duplicate_source"] == "none"


def test_merge_using_a_joined_table(lake: Engine) -> None:
    lake.execute("CREATE TABLE w (k INTEGER, factor INTEGER)")
    lake.execute("INSERT INTO w VALUES (2, 2), (3, 3), (4, 4)")
    result = lake.execute(
        "MERGE INTO t USING s JOIN w AS f ON s.k = f.k ON t.k = s.k "
        "WHEN MATCHED AND f.factor = 3 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET x = s.x * f.factor "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.k, factor, s.b)"  # factor: a column only w has, unqualified
    )
    assert result.row_count == 3
    assert rows(lake) == [(1, 10, "a"), (2, 400, "b"), (4, 4, "D")]


def test_merge_using_a_joined_table_with_an_ambiguous_column_is_an_error(lake: Engine) -> None:
    before = rows(lake)
    with pytest.raises(MergekitError):
        lake.execute("MERGE INTO t USING s JOIN s AS s2 ON s.k = s2.k ON t.k = s.k WHEN MATCHED THEN UPDATE SET x = b")
    assert rows(lake) == before


def _session(engine: Engine) -> dict[str, str]:
    """SHOW SESSION as name -> value."""
    return {row[0]: row[1] for row in engine.execute("SHOW SESSION").rows()}
