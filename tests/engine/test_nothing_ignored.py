"""Issue 14's table, row by row, through ``Engine`` on the journal catalog as a user runs it: each statement is
either done as written or refused with a coded error, and a refused statement leaves every table as it was
(rows and commit history compared before and after)."""

from __future__ import annotations

import json

import pytest

from mergekit import Engine
from mergekit.errors import MergekitError


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory) -> Engine:
    engine = Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path_factory.mktemp("nothing-ignored"))}},
    )
    engine.execute("CREATE TABLE s1 (id INTEGER, v VARCHAR, PRIMARY KEY (id))")
    engine.execute("INSERT INTO s1 VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    engine.execute("CREATE TABLE d1 (id INTEGER, v VARCHAR, PRIMARY KEY (id))")
    engine.execute("INSERT INTO d1 VALUES (1, 'x')")
    engine.execute("CREATE TABLE evt (id INTEGER, small TINYINT, price INTEGER)")
    engine.execute("INSERT INTO evt VALUES (1, CAST(100 AS TINYINT), 7)")
    yield engine
    engine.close()


def checksum(engine: Engine) -> str:
    """The tables' rows (sorted) and commit histories, and the list of tables: a refused statement must change
    none of them."""
    state: dict[str, object] = {"tables": sorted(engine.execute("SHOW TABLES").rows())}
    for name in ("s1", "d1", "evt"):
        rows = sorted(engine.execute(f"SELECT * FROM {name}").rows(), key=repr)
        history = [(v, op) for v, _, op, _ in engine.execute(f"DESCRIBE HISTORY {name}").rows()]
        state[name] = (rows, history)
    return json.dumps(state, default=str, sort_keys=True)


REFUSED = [
    ("DELETE FROM s1 WHERE id > 0 LIMIT 1", "[NOT_SUPPORTED] LIMIT in DELETE is not supported"),
    ("UPDATE s1 SET v = 'z' WHERE id > 0 LIMIT 1", "[NOT_SUPPORTED] LIMIT in UPDATE is not supported"),
    ("INSERT INTO d1 VALUES (5, 'a') ON CONFLICT ON CONSTRAINT pk DO NOTHING", "[NOT_SUPPORTED] ON CONSTRAINT"),
    ("INSERT OVERWRITE d1 VALUES (1, 'a') RETURNING *", "[NOT_SUPPORTED] RETURNING in INSERT"),
    ("INSERT INTO d1 VALUES (6, 'a') RETURNING *", "[NOT_SUPPORTED] RETURNING in INSERT"),
    ("UPDATE s1 SET v = 'r' RETURNING id", "[NOT_SUPPORTED] RETURNING in UPDATE"),
    ("DELETE FROM s1 WHERE id = 1 RETURNING *", "[NOT_SUPPORTED] RETURNING in DELETE"),
    (
        "MERGE INTO s1 t USING d1 s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING *",
        "[NOT_SUPPORTED] RETURNING in MERGE",
    ),
    ("CREATE TABLE d2 (id INT, qty INT CHECK (qty IN (SELECT id FROM s1)))", "[NOT_SUPPORTED] cannot use subquery"),
    ("CREATE TABLE d2 (id INT, v VARCHAR DEFAULT upper(w))", "[INVALID_ARGUMENTS] cannot use column reference"),
    ("CREATE TABLE d2 (id INT, qty INT CHECK (qty + 1))", "[TYPE_MISMATCH] CHECK constraint expression must"),
    ("CREATE TABLE d2 (id INT, v INT DEFAULT 'new')", "[TYPE_MISMATCH] column v is of type integer but default"),
    ("ALTER TABLE d1 ADD CONSTRAINT c CHECK (id > 0) NOT VALID", "[NOT_SUPPORTED] NOT VALID in ALTER TABLE"),
    ("ALTER TABLE d1 ADD CONSTRAINT c CHECK (id > 1)", "[CONSTRAINT_VIOLATION] Check constraint violation: (id > 1)"),
    ("ALTER TABLE d1 ADD COLUMN w INT DEFAULT 0", "[NOT_SUPPORTED] DEFAULT in ALTER TABLE ... ADD COLUMN"),
    ("ALTER TABLE d1 DROP CONSTRAINT nope", '[INVALID_ARGUMENTS] constraint "nope" of table lake.default.d1 does not'),
    ("CREATE TABLE d2 (id INT, v VARCHAR UNIQUE)", "[NOT_SUPPORTED] UNIQUE constraint in CREATE TABLE"),
    ("CREATE TABLE d2 (id INT REFERENCES s1 (id))", "[NOT_SUPPORTED] REFERENCES in CREATE TABLE"),
    ("CREATE TABLE d2 (id INT, g INT GENERATED ALWAYS AS (id + 1))", "[NOT_SUPPORTED] GENERATED column"),
    ("CREATE TABLE d2 (id INT, v VARCHAR) USING parquet", "[NOT_SUPPORTED] USING (a file format) in CREATE TABLE"),
    ("CREATE TABLE d2 (id INT, v VARCHAR) PARTITIONED BY (v)", "[NOT_SUPPORTED] PARTITIONED BY in CREATE TABLE"),
    ("CREATE TABLE d2 (id INT) LOCATION 'file:///data/elsewhere'", "[NOT_SUPPORTED] LOCATION in CREATE TABLE"),
    ("DESCRIBE EXTENDED s1", "[NOT_SUPPORTED] DESCRIBE EXTENDED is not supported"),
    ("DELETE FROM s1 WHERE id = " + "(" * 1000 + "1" + ")" * 1000, "[STATEMENT_TOO_DEEP]"),
    ("DELETE l_us", "[SYNTAX_ERROR] line 1:8: mismatched input 'l_us'. Expecting: 'FROM'"),
    ("DELETE F", "[SYNTAX_ERROR] line 1:8: mismatched input 'F'. Expecting: 'FROM'"),
]


@pytest.mark.parametrize(("statement", "message"), REFUSED, ids=[s[:40] for s, _ in REFUSED])
def test_refused_and_nothing_changed(lake: Engine, statement: str, message: str) -> None:
    before = checksum(lake)
    with pytest.raises(MergekitError) as err:
        lake.execute(statement)
    assert str(err.value).startswith(message), str(err.value)
    assert "Traceback" not in str(err.value) and "sqlglot" not in str(err.value)
    assert checksum(lake) == before
    assert lake.execute("SHOW TABLES LIKE 'd2'").rows() == []


def test_unknown_table_property_is_refused_by_name(lake: Engine) -> None:
    before = checksum(lake)
    with pytest.raises(MergekitError) as err:
        lake.execute("CREATE TABLE d2 (id INT) WITH (bogus_prop = 42)")
    assert str(err.value).startswith("[INVALID_TABLE_PROPERTY]") and "bogus_prop" in str(err.value)
    assert checksum(lake) == before


def test_with_before_merge_uses_the_cte(lake: Engine) -> None:
    lake.execute("CREATE TABLE w1 (id INTEGER, v VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO w1 VALUES (1, 'a'), (2, 'b')")
    res = lake.execute(
        "WITH x AS (SELECT id, upper(v) AS v FROM s1 WHERE id >= 2) "
        "MERGE INTO w1 t USING x ON t.id = x.id "
        "WHEN MATCHED THEN UPDATE SET v = x.v WHEN NOT MATCHED THEN INSERT VALUES (x.id, x.v)"
    )
    assert res.row_count == 2 and res.metrics["updated"] == 1 and res.metrics["inserted"] == 1
    assert sorted(lake.execute("SELECT * FROM w1").rows()) == [(1, "a"), (2, "B"), (3, "C")]
    with pytest.raises(MergekitError) as err:  # a CTE read outside the source is refused, not resolved as a table
        lake.execute(
            "WITH x AS (SELECT 1 AS id) MERGE INTO w1 t USING s1 s ON t.id = s.id "
            "WHEN MATCHED AND t.id IN (SELECT id FROM x) THEN DELETE"
        )
    assert str(err.value).startswith("[NOT_SUPPORTED]") and "'x'" in str(err.value)
    lake.execute("DROP TABLE w1")


def test_describe_history_lists_the_journal_commits(lake: Engine) -> None:
    lake.execute("CREATE TABLE h1 (id INTEGER, v VARCHAR, PRIMARY KEY (id))")
    lake.execute("INSERT INTO h1 VALUES (1, 'a'), (2, 'b')")
    lake.execute("UPDATE h1 SET v = 'c' WHERE id = 2")
    res = lake.execute("DESCRIBE HISTORY h1")
    assert res.columns == ["version", "timestamp", "operation", "operation_metrics"]
    rows = res.rows()
    assert [(v, op) for v, _, op, _ in rows] == [(2, "write"), (1, "write"), (0, "create")]
    assert json.loads(rows[0][3])["updates"] == 1 and json.loads(rows[1][3])["inserts"] == 2
    assert rows[0][1] >= rows[1][1] >= rows[2][1]
    # the versions are the ones time travel takes
    assert sorted(lake.execute("SELECT * FROM h1 FOR VERSION AS OF 1").rows()) == [(1, "a"), (2, "b")]
    lake.execute("DROP TABLE h1")


def test_describe_history_on_a_connector_without_versions_is_refused(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("CREATE TABLE m (id INTEGER)")
    with pytest.raises(MergekitError) as err:
        engine.execute("DESCRIBE HISTORY m")
    assert str(err.value) == "[NOT_SUPPORTED] This connector does not support table history"


def test_aliases_on_update_and_delete_targets(lake: Engine) -> None:
    lake.execute("CREATE TABLE a1 (k INTEGER, x VARCHAR, PRIMARY KEY (k))")
    lake.execute("INSERT INTO a1 VALUES (5, 'five'), (6, NULL), (7, 'seven')")
    assert lake.execute("UPDATE a1 AS tg SET x = 'FIVE' WHERE tg.k = 5").row_count == 1
    assert lake.execute("DELETE FROM a1 AS tg WHERE tg.x IS NULL").row_count == 1
    assert sorted(lake.execute("SELECT * FROM a1").rows()) == [(5, "FIVE"), (7, "seven")]
    lake.execute("DROP TABLE a1")


def test_show_tables_like_filters(lake: Engine) -> None:
    names = [n for (n,) in lake.execute("SHOW TABLES LIKE 's_'").rows()]
    assert names == ["s1"]
    assert lake.execute("SHOW TABLES LIKE 'e_t'").rows() == [("evt",)]


def test_create_table_as_with_no_data(lake: Engine) -> None:
    res = lake.execute("CREATE TABLE n1 AS SELECT id, v FROM s1 WITH NO DATA")
    assert res.row_count == 0
    assert lake.execute("SELECT count(*) FROM n1").rows() == [(0,)]
    assert [c for c, *_ in lake.execute("DESCRIBE n1").rows()] == ["id", "v"]
    lake.execute("DROP TABLE n1")


def test_add_column_if_not_exists(lake: Engine) -> None:
    lake.execute("CREATE TABLE c1 (id INTEGER)")
    lake.execute("ALTER TABLE c1 ADD COLUMN IF NOT EXISTS id INTEGER")  # exists: nothing to do
    lake.execute("ALTER TABLE c1 ADD COLUMN IF NOT EXISTS v VARCHAR")
    assert [c for c, *_ in lake.execute("DESCRIBE c1").rows()] == ["id", "v"]
    with pytest.raises(MergekitError) as err:
        lake.execute("ALTER TABLE c1 ADD COLUMN v VARCHAR")
    assert err.value.code.name == "DUPLICATE_COLUMN_NAME"
    lake.execute("DROP TABLE c1")
