"""Schema evolution on the journal connector, as users see it through SQL: RENAME / DROP COLUMN, widening SET DATA
TYPE (old data files read under the new schema, time travel under the old one) and MERGE WITH SCHEMA EVOLUTION
(new columns committed with the rows, in one commit; a failing MERGE adds nothing)."""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode
from tests.helpers import error_of, journal_engine
from tests.journal.journal_harness import INSERT, JournalHarness

pytestmark = pytest.mark.spark


@pytest.fixture
def lake(spark, tmp_path) -> Engine:
    engine = journal_engine(spark, str(tmp_path), version_type="bigint")
    yield engine
    engine.close()


def _history(e: Engine, table: str = "t") -> list[tuple[int, str, dict]]:
    return [(v, op, json.loads(m)) for v, _, op, m in e.execute(f"DESCRIBE HISTORY {table}").rows()]


def _describe(e: Engine, table: str = "t") -> list[tuple[str, str]]:
    return [(c, t) for c, t, _, _ in e.execute(f"DESCRIBE {table}").rows()]


# -- RENAME COLUMN ----------------------------------------------------------------------------------------------


def test_rename_column_reads_old_files_under_the_new_name(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, a INTEGER, name VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO t VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three')")  # version 1
    lake.execute("UPDATE t SET a = 21 WHERE id = 2")  # version 2: a delta that versions resolve
    lake.execute("ALTER TABLE t RENAME COLUMN a TO amount")  # version 3
    res = lake.execute("SELECT * FROM t ORDER BY id")
    assert res.columns == ["id", "amount", "name"]
    assert res.rows() == [(1, 10, "one"), (2, 21, "two"), (3, 30, "three")]
    assert _describe(lake) == [("id", "integer"), ("amount", "integer"), ("name", "varchar")]
    # the keyed read path (page sources) and the native one agree
    assert lake.execute("SELECT amount FROM t WHERE id = 2").rows() == [(21,)]
    assert lake.execute("SELECT sum(amount) FROM t").rows() == [(61,)]
    assert error_of(lake, "SELECT a FROM t").code is ErrorCode.COLUMN_NOT_FOUND
    assert [(v, op) for v, op, _ in _history(lake)][:2] == [(3, "rename_column"), (2, "write")]
    # writes use the new name
    lake.execute(
        "MERGE INTO t USING (VALUES (1, 100), (4, 400)) s(id, amount) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT (id, amount) VALUES (s.id, s.amount)"
    )
    lake.execute("DELETE FROM t WHERE amount = 30")
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == [(1, 100, "one"), (2, 21, "two"), (4, 400, None)]
    # time travel to a version before the rename shows the old name
    old = lake.execute("SELECT * FROM t FOR VERSION AS OF 2 ORDER BY id")
    assert old.columns == ["id", "a", "name"]
    assert old.rows() == [(1, 10, "one"), (2, 21, "two"), (3, 30, "three")]
    assert lake.execute("SELECT a FROM t FOR VERSION AS OF 1 WHERE id = 2").rows() == [(20,)]
    assert error_of(lake, "SELECT amount FROM t FOR VERSION AS OF 2").code is ErrorCode.COLUMN_NOT_FOUND
    # the raw journal shows the new name too
    assert lake.execute("SELECT * FROM t_journal WHERE id = 4").columns[:3] == ["id", "amount", "name"]


def test_a_column_added_under_a_renamed_columns_old_name_starts_empty(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, a VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO t VALUES (1, 'x')")
    lake.execute("ALTER TABLE t RENAME COLUMN a TO b")
    lake.execute("ALTER TABLE t ADD COLUMN a VARCHAR")
    lake.execute("INSERT INTO t VALUES (2, 'y', 'new')")
    assert lake.execute("SELECT id, a, b FROM t ORDER BY id").rows() == [(1, None, "x"), (2, "new", "y")]
    # and back: the old files' column follows its name wherever it goes
    lake.execute("ALTER TABLE t RENAME COLUMN a TO c")
    lake.execute("ALTER TABLE t RENAME COLUMN b TO a")
    assert lake.execute("SELECT id, a, c FROM t ORDER BY id").rows() == [(1, "x", None), (2, "y", "new")]


def test_renaming_the_key_keeps_rows_versioned_by_it(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, v VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    lake.execute("ALTER TABLE t RENAME COLUMN id TO k")
    lake.execute("UPDATE t SET v = 'B' WHERE k = 2")
    lake.execute(
        "MERGE INTO t USING (VALUES (1, 'A'), (3, 'C')) s(k, v) ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.v)"
    )
    assert lake.execute("SELECT * FROM t ORDER BY k").rows() == [(1, "A"), (2, "B"), (3, "C")]
    err = error_of(lake, "INSERT INTO t VALUES (1, 'dup')")  # the key is still enforced, under its new name
    assert err.code is ErrorCode.CONSTRAINT_VIOLATION and "(k)=(1)" in err.message
    lake.execute("CALL lake.system.compact(table => 't')")
    assert lake.execute("SELECT * FROM t ORDER BY k").rows() == [(1, "A"), (2, "B"), (3, "C")]
    assert lake.execute("SELECT v FROM t WHERE k = 3").rows() == [("C",)]


def test_rename_refusals_change_nothing(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, a INTEGER, b INTEGER, PRIMARY KEY (id))")
    before = _history(lake)
    assert error_of(lake, "ALTER TABLE t RENAME COLUMN nope TO c").code is ErrorCode.COLUMN_NOT_FOUND
    lake.execute("ALTER TABLE t RENAME COLUMN IF EXISTS nope TO c")  # nothing to do
    err = error_of(lake, "ALTER TABLE t RENAME COLUMN a TO b")
    assert (
        err.code is ErrorCode.DUPLICATE_COLUMN_NAME and str(err) == "[DUPLICATE_COLUMN_NAME] Column 'b' already exists"
    )
    # the journal's version field is a (hidden) column of the table
    assert error_of(lake, "ALTER TABLE t RENAME COLUMN a TO version_number").code is ErrorCode.DUPLICATE_COLUMN_NAME
    err = error_of(lake, "ALTER TABLE t RENAME COLUMN version_number TO v")
    assert err.code is ErrorCode.NOT_SUPPORTED and "hidden" in err.message
    err = error_of(lake, "ALTER TABLE t RENAME COLUMN t.a TO c")
    assert err.code is ErrorCode.SYNTAX_ERROR
    assert _history(lake) == before and _describe(lake) == [("id", "integer"), ("a", "integer"), ("b", "integer")]


# -- SET DATA TYPE ----------------------------------------------------------------------------------------------


def test_widening_reads_old_files_and_takes_wider_values(lake: Engine) -> None:
    lake.execute(
        "CREATE TABLE t (id INTEGER, i INTEGER, s SMALLINT, r REAL, d DECIMAL(5,2), v VARCHAR(3), PRIMARY KEY (id))"
    )
    lake.execute("INSERT INTO t VALUES (1, 7, 3, 1.5, 123.45, 'abc'), (2, -7, -3, 2.25, -1.00, 'xy')")  # version 1
    err = error_of(lake, "INSERT INTO t VALUES (3, 5000000000, 1, 1, 1, 'a')")
    assert err.code is ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE or err.code is ErrorCode.TYPE_MISMATCH, err
    for statement in (
        "ALTER TABLE t ALTER COLUMN i SET DATA TYPE bigint",
        "ALTER TABLE t ALTER COLUMN s SET DATA TYPE integer",
        "ALTER TABLE t ALTER COLUMN r SET DATA TYPE double",
        "ALTER TABLE t ALTER COLUMN d SET DATA TYPE decimal(12,2)",
        "ALTER TABLE t ALTER COLUMN v TYPE varchar(10)",  # PostgreSQL's spelling
    ):
        lake.execute(statement)
    assert _describe(lake) == [
        ("id", "integer"),
        ("i", "bigint"),
        ("s", "integer"),
        ("r", "double"),
        ("d", "decimal(12, 2)"),
        ("v", "varchar(10)"),
    ]
    lake.execute("INSERT INTO t VALUES (3, 5000000000, 100000, 0.1, 1234567890.12, 'abcdefghij')")
    expected = [
        (1, 7, 3, 1.5, decimal.Decimal("123.45"), "abc"),
        (2, -7, -3, 2.25, decimal.Decimal("-1.00"), "xy"),
        (3, 5000000000, 100000, 0.1, decimal.Decimal("1234567890.12"), "abcdefghij"),
    ]
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == expected  # native Parquet reads of old files
    assert lake.execute("SELECT * FROM t WHERE id IN (1, 3) ORDER BY id").rows() == [expected[0], expected[2]]
    table = lake.execute("SELECT i, s, r, d FROM t").to_arrow()
    assert [f.type for f in table.schema] == [pa.int64(), pa.int32(), pa.float64(), pa.decimal128(12, 2)]
    assert lake.execute("SELECT sum(i), sum(s) FROM t").rows() == [(5000000000, 100000)]
    # an old row takes a wide value; the old version keeps the old types
    lake.execute(
        "MERGE INTO t USING (VALUES (1, 9000000000)) s(id, i) ON t.id = s.id WHEN MATCHED THEN UPDATE SET i = s.i"
    )
    assert lake.execute("SELECT i FROM t WHERE id = 1").rows() == [(9000000000,)]
    old = lake.execute("SELECT i, s, r, d FROM t FOR VERSION AS OF 1 ORDER BY id").to_arrow()
    assert [f.type for f in old.schema] == [pa.int32(), pa.int16(), pa.float32(), pa.decimal128(5, 2)]
    assert old.column("i").to_pylist() == [7, -7]
    lake.execute("CALL lake.system.compact(table => 't')")
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == [(1, 9000000000, *expected[0][2:]), *expected[1:]]


@pytest.mark.parametrize(
    ("column", "new_type"),
    [
        ("i", "integer"),  # bigint -> integer
        ("i", "smallint"),
        ("i", "double"),  # a change of family
        ("i", "varchar"),
        ("r", "real"),  # double -> real
        ("d", "decimal(10,3)"),  # another scale
        ("d", "decimal(8,2)"),  # fewer digits
        ("v", "varchar(5)"),  # shorter
        ("w", "varchar(5)"),  # unbounded -> bounded
        ("v", "char(20)"),
        ("day", "timestamp"),
    ],
)
def test_narrowing_or_changing_the_type_family_is_refused(lake: Engine, column: str, new_type: str) -> None:
    lake.execute(
        "CREATE TABLE t (id INTEGER, i BIGINT, r DOUBLE, d DECIMAL(10,2), v VARCHAR(10), w VARCHAR, day DATE, "
        "PRIMARY KEY (id))"
    )
    lake.execute("INSERT INTO t VALUES (1, 1, 1.0, 1.00, 'a', 'b', DATE '2024-01-01')")
    before = (_history(lake), _describe(lake))
    err = error_of(lake, f"ALTER TABLE t ALTER COLUMN {column} SET DATA TYPE {new_type}")
    assert err.code is ErrorCode.NOT_SUPPORTED
    assert err.message.startswith("Cannot change type from ") and f"for column '{column}'" in err.message
    assert "only widening changes are supported" in err.message
    assert (_history(lake), _describe(lake)) == before


def test_set_data_type_edge_cases(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, i INTEGER, PRIMARY KEY (id))")
    before = _history(lake)
    lake.execute("ALTER TABLE t ALTER COLUMN i SET DATA TYPE int")  # the same type: nothing to do, no commit
    assert _history(lake) == before
    err = error_of(lake, "ALTER TABLE t ALTER COLUMN i SET DATA TYPE bigint USING i * 2")
    assert err.code is ErrorCode.NOT_SUPPORTED and "USING" in err.message
    assert error_of(lake, "ALTER TABLE t ALTER COLUMN nope SET DATA TYPE bigint").code is ErrorCode.COLUMN_NOT_FOUND
    assert error_of(lake, "ALTER TABLE t ALTER COLUMN i SET DATA TYPE json").code is ErrorCode.NOT_SUPPORTED
    err = error_of(lake, "ALTER TABLE t ALTER COLUMN version_number SET DATA TYPE bigint")
    assert err.code is ErrorCode.NOT_SUPPORTED and "hidden" in err.message
    # a key column widens too (its file statistics stay comparable)
    lake.execute("INSERT INTO t VALUES (1, 1)")
    lake.execute("ALTER TABLE t ALTER COLUMN id SET DATA TYPE bigint")
    lake.execute("INSERT INTO t VALUES (9000000000, 2)")
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == [(1, 1), (9000000000, 2)]
    assert lake.execute("SELECT i FROM t WHERE id = 9000000000").rows() == [(2,)]
    assert _history(lake)[0][1] == "write" and _history(lake)[1][1] == "set_column_type"


# -- DROP COLUMN ------------------------------------------------------------------------------------------------


def test_drop_column_and_add_it_again(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, a INTEGER, b VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO t VALUES (1, 10, 'x'), (2, 20, 'y')")  # version 1
    lake.execute("ALTER TABLE t DROP COLUMN a")  # version 2
    res = lake.execute("SELECT * FROM t ORDER BY id")
    assert res.columns == ["id", "b"] and res.rows() == [(1, "x"), (2, "y")]
    lake.execute("ALTER TABLE t ADD COLUMN a INTEGER")  # a new column: the dropped values stay dropped
    lake.execute("INSERT INTO t VALUES (3, 'z', 30)")
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == [(1, "x", None), (2, "y", None), (3, "z", 30)]
    old = lake.execute("SELECT * FROM t FOR VERSION AS OF 1 ORDER BY id")
    assert old.columns == ["id", "a", "b"] and old.rows() == [(1, 10, "x"), (2, 20, "y")]
    assert [op for _, op, _ in _history(lake)][:3] == ["write", "add_column", "drop_column"]
    lake.execute("CALL lake.system.compact(table => 't')")
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == [(1, "x", None), (2, "y", None), (3, "z", 30)]


def test_drop_column_refusals(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, a INTEGER, PRIMARY KEY (id))")
    lake.execute("CREATE TABLE one (x INTEGER)")
    before = _history(lake)
    err = error_of(lake, "ALTER TABLE t DROP COLUMN id")
    assert err.code is ErrorCode.NOT_SUPPORTED and "key" in err.message
    err = error_of(lake, "ALTER TABLE t DROP COLUMN version_number")
    assert err.code is ErrorCode.NOT_SUPPORTED and "hidden" in err.message
    assert error_of(lake, "ALTER TABLE t DROP COLUMN nope").code is ErrorCode.COLUMN_NOT_FOUND
    err = error_of(lake, "ALTER TABLE one DROP COLUMN x")
    assert str(err) == "[NOT_SUPPORTED] Cannot drop the only column in a table"
    assert _history(lake) == before


# -- MERGE WITH SCHEMA EVOLUTION --------------------------------------------------------------------------------

SOURCE = "(VALUES (1, 'A', 10, DATE '2024-01-01'), (3, 'C', 30, NULL)) s(id, v, qty, Day)"


def _evolving_target(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, v VARCHAR, note VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO t VALUES (1, 'a', 'n1'), (2, 'b', 'n2')")  # version 1


def test_merge_with_schema_evolution_adds_the_source_columns_in_the_same_commit(lake: Engine) -> None:
    _evolving_target(lake)
    res = lake.execute(
        f"MERGE WITH SCHEMA EVOLUTION INTO t USING {SOURCE} ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert res.row_count == 2 and res.metrics["added_columns"] == ["qty", "day"]
    # UPDATE SET * leaves the target's column the source lacks (note) as it was; INSERT * writes NULL there
    now = lake.execute("SELECT * FROM t ORDER BY id")
    assert now.columns == ["id", "v", "note", "qty", "day"]
    assert now.rows() == [
        (1, "A", "n1", 10, datetime.date(2024, 1, 1)),
        (2, "b", "n2", None, None),
        (3, "C", None, 30, None),
    ]
    assert _describe(lake)[3:] == [("qty", "integer"), ("day", "date")]
    history = _history(lake)
    assert [(v, op) for v, op, _ in history] == [(2, "write"), (1, "write"), (0, "create")]  # one commit
    assert history[0][2]["added_columns"] == ["qty", "day"] and history[0][2]["updates"] == 1
    # a reader of the version before sees the old schema
    old = lake.execute("SELECT * FROM t FOR VERSION AS OF 1 ORDER BY id")
    assert old.columns == ["id", "v", "note"] and old.rows() == [(1, "a", "n1"), (2, "b", "n2")]
    # a second evolving MERGE with nothing new is an ordinary MERGE
    res = lake.execute(
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (2, 5)) s(id, qty) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *"
    )
    assert "added_columns" not in res.metrics and lake.execute("SELECT qty FROM t WHERE id = 2").rows() == [(5,)]


def test_without_schema_evolution_the_source_columns_the_target_lacks_are_not_used(lake: Engine) -> None:
    _evolving_target(lake)
    lake.execute(
        "MERGE INTO t USING (VALUES (1, 'A', 'N', 10)) s(id, v, note, qty) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert _describe(lake) == [("id", "integer"), ("v", "varchar"), ("note", "varchar")]
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == [(1, "A", "N"), (2, "b", "n2")]
    # an assignment to a column the target lacks stays an error without WITH SCHEMA EVOLUTION
    err = error_of(
        lake, "MERGE INTO t USING (VALUES (1, 3)) s(id, qty) ON t.id = s.id WHEN MATCHED THEN UPDATE SET qty = s.qty"
    )
    assert err.code is ErrorCode.COLUMN_NOT_FOUND


def test_explicit_assignments_to_source_columns_evolve_the_schema(lake: Engine) -> None:
    _evolving_target(lake)
    lake.execute(
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (2, 'x', 7), (4, 'y', 8)) s(id, tag, score) "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET tag = s.tag "
        "WHEN NOT MATCHED THEN INSERT (id, score) VALUES (s.id, s.score)"
    )
    # tag (assigned by UPDATE) and score (named by INSERT) are added, in the source's order
    assert _describe(lake)[3:] == [("tag", "varchar"), ("score", "integer")]
    assert lake.execute("SELECT id, tag, score FROM t ORDER BY id").rows() == [
        (1, None, None),
        (2, "x", None),
        (4, None, 8),
    ]
    # a column neither side has is not something the statement can add
    err = error_of(
        lake,
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (1, 1)) s(id, a) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET nowhere = s.a",
    )
    assert err.code is ErrorCode.COLUMN_NOT_FOUND
    assert len(_describe(lake)) == 5


def test_a_failing_merge_with_schema_evolution_adds_nothing(lake: Engine) -> None:
    _evolving_target(lake)
    before = (_history(lake), _describe(lake))
    err = error_of(
        lake,
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (1, 'x', 5), (1, 'y', 6)) s(id, v, qty) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *",
    )
    assert err.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
    err = error_of(
        lake,
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (SELECT 9 AS id, NULL AS nothing) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *",
    )
    assert err.code is ErrorCode.TYPE_MISMATCH and "nothing" in err.message
    assert (_history(lake), _describe(lake)) == before
    assert lake.execute("SELECT * FROM t ORDER BY id").rows() == [(1, "a", "n1"), (2, "b", "n2")]


def test_merge_with_schema_evolution_that_changes_no_row_still_adds_the_columns(lake: Engine) -> None:
    _evolving_target(lake)
    res = lake.execute(
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (SELECT 9 AS id, CAST(1.5 AS DOUBLE) AS extra WHERE false) s "
        "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    )
    assert res.row_count == 0 and res.metrics["added_columns"] == ["extra"]
    assert _describe(lake)[-1] == ("extra", "double")
    (version, op, metrics), *_ = _history(lake)
    assert (version, op, metrics["added_columns"], metrics["files_added"]) == (2, "write", ["extra"], 0)


def test_a_write_that_began_before_a_schema_change_conflicts(lake: Engine, tmp_path) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, v VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO t VALUES (1, 'a')")
    other = JournalHarness(str(tmp_path), version_type="bigint")
    try:
        for change in (
            "ALTER TABLE t RENAME COLUMN v TO w",
            "MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (5, 1)) s(id, n) ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT *",
        ):
            merge_handle = other.begin("t")
            fragments = other.write(merge_handle, [(INSERT, {"id": 7, "v": "late"}, None)])
            lake.execute(change)
            with pytest.raises(MergekitError) as err:
                other.finish(merge_handle, fragments)
            other.metadata.abort_merge(session=other.session(), merge_handle=merge_handle)
            assert err.value.code is ErrorCode.TRANSACTION_CONFLICT and "concurrent" in err.value.message
        assert lake.execute("SELECT id FROM t ORDER BY id").rows() == [(1,), (5,)]
    finally:
        other.connector.shutdown()


# -- through the SPI, without Spark (also run on a PostgreSQL catalog by test_postgres.py) ------------------------


def test_schema_changes_through_the_spi_keep_each_versions_columns(make_harness) -> None:
    from mergekit.spi import ColumnMetadata, TableVersion

    t = make_harness(version_type="bigint")
    t.create("t", [("id", pa.int64()), ("a", pa.int32(), "integer"), ("b", pa.float32(), "real")], key=["id"])
    t.insert("t", {"id": 1, "a": 10, "b": 1.5}, {"id": 2, "a": 20, "b": 2.5})  # version 1
    session, meta = t.session(), t.metadata
    meta.rename_column(session=session, table_handle=t.handle("t"), source="a", target="n")  # 2
    meta.set_column_type(session=session, table_handle=t.handle("t"), column="n", type=pa.int64(), type_name="bigint")
    meta.set_column_type(session=session, table_handle=t.handle("t"), column="b", type=pa.float64(), type_name="double")
    meta.drop_column(session=session, table_handle=t.handle("t"), column="b")  # 5
    meta.add_column(session=session, table_handle=t.handle("t"), column=ColumnMetadata(name="b", type=pa.string()))
    t.insert("t", {"id": 3, "n": 9_000_000_000, "b": "new"})  # 7
    assert t.read("t") == [
        {"id": 1, "n": 10, "b": None},
        {"id": 2, "n": 20, "b": None},
        {"id": 3, "n": 9_000_000_000, "b": "new"},
    ]
    assert t.read("t", version=TableVersion(version=1)) == [{"id": 1, "a": 10, "b": 1.5}, {"id": 2, "a": 20, "b": 2.5}]
    assert t.read("t", version=TableVersion(version=4)) == [{"id": 1, "n": 10, "b": 1.5}, {"id": 2, "n": 20, "b": 2.5}]
    assert list(t.read("t_journal")[0]) == ["id", "n", "b", "version_number", "subsequent_version_number"]
    # a merge begun under the old columns conflicts with a later change of them
    merge_handle = t.begin("t")
    fragments = t.write(merge_handle, [(INSERT, {"id": 4, "n": 4, "b": "x"}, None)])
    meta.rename_column(session=session, table_handle=t.handle("t"), source="b", target="c")
    with pytest.raises(MergekitError) as err:
        t.finish(merge_handle, fragments)
    meta.abort_merge(session=session, merge_handle=merge_handle)
    assert err.value.code is ErrorCode.TRANSACTION_CONFLICT
    with pytest.raises(MergekitError) as err:
        meta.drop_column(session=session, table_handle=t.handle("t"), column="id")
    assert err.value.code is ErrorCode.NOT_SUPPORTED
    # MERGE WITH SCHEMA EVOLUTION: the spec with the new column is committed with the rows
    added = ColumnMetadata(name="d", type=pa.date32(), type_name="date")
    merge_handle = meta.begin_merge_adding_columns(
        session=session, table_handle=t.handle("t"), update_case_columns={}, added_columns=[added]
    )
    before = t.handle("t").snapshot_seq
    assert [c.name for c in meta.get_table_metadata(session=session, table_handle=t.handle("t")).visible_columns] == [
        "id",
        "n",
        "c",
    ]
    t.finish(merge_handle, t.write(merge_handle, [(INSERT, {"id": 5, "n": 5, "c": "y", "d": None}, None)]))
    assert [r["id"] for r in t.read("t")] == [1, 2, 3, 5] and "d" in t.read("t")[0]
    assert "d" not in t.read("t", version=TableVersion(version=before))[0]
