"""Schema evolution of merge tables (the partitioned connector over the journal): RENAME / DROP COLUMN and widening
SET DATA TYPE change the merge table and every child; MERGE WITH SCHEMA EVOLUTION adds the source's new columns to
every child in the statement's one atomic commit."""

from __future__ import annotations

import json

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode

pytestmark = pytest.mark.spark


def _describe(e: Engine, table: str) -> list[tuple[str, str]]:
    return [(c, t) for c, t, _, _ in e.execute(f"DESCRIBE {table}").rows()]


def _error(e: Engine, sql: str) -> MergekitError:
    with pytest.raises(MergekitError) as err:
        e.execute(sql)
    return err.value


def _merge_table(e: Engine, partition_by: str = "RANGE ON (id)") -> None:
    e.execute(f"CREATE MERGE TABLE m (id INTEGER, a INTEGER, v VARCHAR) PARTITION BY {partition_by}")
    for child in ("c1", "c2"):
        e.execute(f"CREATE TABLE {child} (id INTEGER, a INTEGER, v VARCHAR)")
    if partition_by.startswith("RANGE"):
        e.execute("ALTER TABLE m ADD TABLE c1 AS PARTITION FROM 0 TO 10")
        e.execute("ALTER TABLE m ADD TABLE c2 AS PARTITION FROM 10 TO 100")
        e.execute("INSERT INTO m VALUES (1, 1, 'one'), (11, 11, 'eleven')")


def test_rename_widen_and_drop_change_the_merge_table_and_every_child(engine: Engine) -> None:
    _merge_table(engine)
    engine.execute("ALTER TABLE m RENAME COLUMN a TO amount")
    for table in ("m", "c1", "c2"):
        assert _describe(engine, table) == [("id", "integer"), ("amount", "integer"), ("v", "varchar")]
    assert engine.execute("SELECT * FROM m ORDER BY id").rows() == [(1, 1, "one"), (11, 11, "eleven")]
    # the partition column itself: ON (id) follows the new name, rows still route by it
    engine.execute("ALTER TABLE m RENAME COLUMN id TO k")
    engine.execute("INSERT INTO m VALUES (2, 2, 'two'), (12, 12, 'twelve')")
    engine.execute("UPDATE m SET k = 13 WHERE k = 2")  # moves the row to c2
    assert engine.execute("SELECT k FROM c2 ORDER BY k").rows() == [(11,), (12,), (13,)]
    assert engine.execute("SELECT * FROM lake.sys.table_partitions").rows()[0][4] == 5  # still range on a column
    # widening: the merge table, its children and the partition key's type
    engine.execute("ALTER TABLE m ALTER COLUMN amount SET DATA TYPE bigint")
    engine.execute("ALTER TABLE m ALTER COLUMN k SET DATA TYPE bigint")
    engine.execute("INSERT INTO m VALUES (3, 9000000000, 'big')")
    assert _describe(engine, "c2") == [("k", "bigint"), ("amount", "bigint"), ("v", "varchar")]
    assert engine.execute("SELECT * FROM m ORDER BY k").rows() == [
        (1, 1, "one"),
        (3, 9000000000, "big"),
        (11, 11, "eleven"),
        (12, 12, "twelve"),
        (13, 2, "two"),
    ]
    engine.execute(
        "MERGE INTO m USING (VALUES (1, 5000000000)) s(k, amount) ON m.k = s.k WHEN MATCHED THEN UPDATE SET amount = s.amount"
    )
    # dropping a column that is not the partition key
    engine.execute("ALTER TABLE m DROP COLUMN v")
    for table in ("m", "c1", "c2"):
        assert _describe(engine, table) == [("k", "bigint"), ("amount", "bigint")]
    assert engine.execute("SELECT * FROM m ORDER BY k").rows() == [
        (1, 5000000000),
        (3, 9000000000),
        (11, 11),
        (12, 12),
        (13, 2),
    ]
    # a child's own history still reads its first version under the old names
    first = engine.execute("SELECT * FROM c1 FOR VERSION AS OF 1")
    assert first.columns == ["id", "a", "v"] and first.rows() == [(1, 1, "one")]
    # a new child must match the evolved definition
    engine.execute("CREATE TABLE c3 (k BIGINT, amount BIGINT)")
    engine.execute("ALTER TABLE m ADD TABLE c3 AS PARTITION FROM 100 TO 200")
    engine.execute("INSERT INTO m VALUES (150, 1)")
    assert engine.execute("SELECT * FROM c3").rows() == [(150, 1)]


def test_what_a_merge_table_cannot_change(engine: Engine) -> None:
    _merge_table(engine)
    engine.execute("CREATE MERGE TABLE e (a INTEGER, b INTEGER) PARTITION BY VALUES USING (a + b)")
    before = [_describe(engine, t) for t in ("m", "c1", "c2", "e")]
    refusals = {
        "ALTER TABLE c1 RENAME COLUMN v TO w": (ErrorCode.NOT_SUPPORTED, "PARTITION of a MERGE"),
        "ALTER TABLE c1 ALTER COLUMN a SET DATA TYPE bigint": (ErrorCode.NOT_SUPPORTED, "PARTITION of a MERGE"),
        "ALTER TABLE c1 DROP COLUMN v": (ErrorCode.NOT_SUPPORTED, "PARTITION of a MERGE"),
        "ALTER TABLE m DROP COLUMN id": (ErrorCode.INVALID_PARTITION, "is the partitioned column"),
        "ALTER TABLE e RENAME COLUMN a TO x": (ErrorCode.INVALID_PARTITION, "the expression used in 'e' depends on it"),
        "ALTER TABLE e ALTER COLUMN b SET DATA TYPE bigint": (ErrorCode.INVALID_PARTITION, "depends on it"),
        "ALTER TABLE e DROP COLUMN b": (ErrorCode.INVALID_PARTITION, "depends on it"),
        "ALTER TABLE m ALTER COLUMN a SET DATA TYPE smallint": (ErrorCode.NOT_SUPPORTED, "Cannot change type"),
        "ALTER TABLE m RENAME COLUMN a TO v": (ErrorCode.DUPLICATE_COLUMN_NAME, "already exists"),
    }
    for statement, (code, text) in refusals.items():
        err = _error(engine, statement)
        assert err.code is code and text in err.message, (statement, err)
    assert [_describe(engine, t) for t in ("m", "c1", "c2", "e")] == before


def test_merge_with_schema_evolution_adds_the_columns_to_every_child_in_one_commit(engine: Engine) -> None:
    _merge_table(engine)
    history = {c: len(engine.execute(f"DESCRIBE HISTORY {c}").rows()) for c in ("c1", "c2")}
    # a duplicate match fails the statement: no child takes the column
    err = _error(
        engine,
        "MERGE WITH SCHEMA EVOLUTION INTO m USING (VALUES (1, 5), (1, 6)) s(id, qty) ON m.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *",
    )
    assert err.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
    assert [len(_describe(engine, t)) for t in ("m", "c1", "c2")] == [3, 3, 3]
    # only c1 gets rows; c2 takes the column all the same, in the same commit of the base connector
    res = engine.execute(
        "MERGE WITH SCHEMA EVOLUTION INTO m USING (VALUES (1, 'ONE', 10), (2, 'two', 20)) s(id, v, qty) "
        "ON m.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert res.row_count == 2 and res.metrics["added_columns"] == ["qty"]
    for table in ("m", "c1", "c2"):
        assert _describe(engine, table)[-1] == ("qty", "integer")
    assert engine.execute("SELECT * FROM m ORDER BY id").rows() == [
        (1, 1, "ONE", 10),
        (2, None, "two", 20),
        (11, 11, "eleven", None),
    ]
    for child in ("c1", "c2"):
        rows = engine.execute(f"DESCRIBE HISTORY {child}").rows()
        assert len(rows) == history[child] + 1 and json.loads(rows[0][3])["added_columns"] == ["qty"]
        previous = engine.execute(f"SELECT * FROM {child} FOR VERSION AS OF {rows[1][0]}")
        assert previous.columns == ["id", "a", "v"]
    # a child cannot evolve on its own
    err = _error(
        engine,
        "MERGE WITH SCHEMA EVOLUTION INTO c1 USING (VALUES (1, 1)) s(id, extra) ON c1.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *",
    )
    assert err.code is ErrorCode.NOT_SUPPORTED and "PARTITION of a MERGE" in err.message
    assert len(_describe(engine, "c1")) == 4


def test_plain_tables_of_the_partitioned_catalog_evolve_through_the_base(engine: Engine) -> None:
    engine.execute("CREATE TABLE p (id INTEGER, a INTEGER)")
    engine.execute("INSERT INTO p VALUES (1, 1)")
    engine.execute("ALTER TABLE p RENAME COLUMN a TO b")
    engine.execute("ALTER TABLE p ALTER COLUMN b SET DATA TYPE bigint")
    engine.execute(
        "MERGE WITH SCHEMA EVOLUTION INTO p USING (VALUES (2, 9000000000, 'x')) s(id, b, c) ON p.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    engine.execute("ALTER TABLE p DROP COLUMN c")
    assert engine.execute("SELECT * FROM p ORDER BY id").rows() == [(1, 1), (2, 9000000000)]
