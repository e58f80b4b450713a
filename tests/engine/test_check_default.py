"""CHECK constraints and column defaults (issue 16, items 2 and 3), as a user meets them, on the journal connector and
on the partitioned connector (plain tables and merge tables), through SQL and the DataFrame builder.

A row that fails a CHECK fails the statement with CONSTRAINT_VIOLATION and Trino's message, naming the constraint,
and nothing changes (rows and commit history compared before and after); a NULL result passes. Defaults fill the
columns an INSERT omits and every ``DEFAULT`` written as a value, and both survive a new Engine on the warehouse.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import CheckConstraint, ConnectorSession, SchemaTableName

pytestmark = pytest.mark.spark


def _engine(spark, connector: str, warehouse: Path) -> Engine:
    return Engine(spark=spark, catalogs={"lake": {"connector": connector, "warehouse": str(warehouse)}})


@pytest.fixture(params=["journal", "partitioned"])
def connector(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def lake(spark, connector: str, tmp_path: Path) -> Engine:
    engine = _engine(spark, connector, tmp_path / "wh")
    yield engine
    engine.close()


def state(engine: Engine, *tables: str) -> str:
    """Rows (sorted) and commit history of ``tables``: what a failed statement must leave as it was."""
    out = {}
    for name in tables:
        rows = sorted(engine.execute(f"SELECT * FROM {name}").rows(), key=repr)
        history = [(v, op) for v, _, op, _ in engine.execute(f"DESCRIBE HISTORY {name}").rows()]
        out[name] = (rows, history)
    return json.dumps(out, default=str, sort_keys=True)


def fails(engine: Engine, sql: str, code: ErrorCode, text: str, *tables: str) -> MergekitError:
    """``sql`` fails with ``code`` and a message containing ``text``, and ``tables`` are unchanged."""
    before = state(engine, *tables)
    with pytest.raises(MergekitError) as info:
        engine.execute(sql)
    assert info.value.code is code, str(info.value)
    assert text in str(info.value), str(info.value)
    assert state(engine, *tables) == before
    return info.value


ACCOUNTS = (
    "CREATE TABLE accounts (id INTEGER NOT NULL, balance INTEGER DEFAULT -1 CHECK (balance <> 0), "
    "status VARCHAR DEFAULT 'new', opened DATE DEFAULT current_date, "
    "CONSTRAINT small CHECK (balance < 1000), PRIMARY KEY (id))"
)
BALANCE_CHECK = "Check constraint violation: (balance <> 0) (constraint accounts_balance_check)"
SMALL_CHECK = "Check constraint violation: (balance < 1000) (constraint small)"


def rows(engine: Engine, table: str = "accounts") -> list[tuple]:
    return sorted(engine.execute(f"SELECT id, balance, status FROM {table}").rows())


def test_defaults_fill_omitted_columns_and_default_values(lake: Engine) -> None:
    lake.execute(ACCOUNTS)
    assert lake.execute("DESCRIBE accounts").rows() == [
        ("id", "integer", "not null", ""),
        ("balance", "integer", "default -1", ""),
        ("status", "varchar", "default 'new'", ""),
        ("opened", "date", "default CURRENT_DATE", ""),
    ]
    lake.execute("INSERT INTO accounts (id) VALUES (1)")
    lake.execute("INSERT INTO accounts VALUES (2, DEFAULT, 'vip', DEFAULT), (3, 5, DEFAULT, NULL)")
    lake.execute("INSERT INTO accounts (status, id) SELECT 'bulk', 4")
    assert rows(lake) == [(1, -1, "new"), (2, -1, "vip"), (3, 5, "new"), (4, -1, "bulk")]
    assert lake.execute("SELECT count(*) FROM accounts WHERE opened = current_date").rows() == [(3,)]
    assert lake.execute("SELECT opened FROM accounts WHERE id = 3").rows() == [(None,)]
    # DEFAULT VALUES: every column's default; id has none and is NOT NULL
    fails(
        lake,
        "INSERT INTO accounts DEFAULT VALUES",
        ErrorCode.CONSTRAINT_VIOLATION,
        "NULL value not allowed for NOT NULL column: id",
        "accounts",
    )
    lake.execute("CREATE TABLE events (kind VARCHAR DEFAULT 'ping', n BIGINT DEFAULT 2 * 21)")
    assert lake.execute("INSERT INTO events DEFAULT VALUES").row_count == 1
    assert lake.execute("SELECT * FROM events").rows() == [("ping", 42)]
    # MERGE ... WHEN NOT MATCHED THEN INSERT DEFAULT VALUES (PostgreSQL): one row of defaults per source row
    merged = lake.execute(
        "MERGE INTO events e USING (VALUES 'a', 'ping') s(kind) ON e.kind = s.kind "
        "WHEN NOT MATCHED THEN INSERT DEFAULT VALUES"
    )
    assert merged.row_count == 1
    assert lake.execute("SELECT * FROM events").rows() == [("ping", 42), ("ping", 42)]
    fails(
        lake,
        "MERGE INTO accounts t USING (VALUES 99) s(id) ON t.id = s.id WHEN NOT MATCHED THEN INSERT DEFAULT VALUES",
        ErrorCode.CONSTRAINT_VIOLATION,
        "NULL value not allowed for NOT NULL column: id",
        "accounts",
    )


def test_default_as_a_value_in_update_and_merge(lake: Engine) -> None:
    lake.execute(ACCOUNTS)
    lake.execute("INSERT INTO accounts VALUES (1, 10, 'a', NULL), (2, 20, 'b', NULL)")
    lake.execute("UPDATE accounts SET balance = DEFAULT, status = DEFAULT WHERE id = 1")
    lake.execute("UPDATE accounts SET opened = DEFAULT WHERE id = 2")  # a column's default: current_date
    assert rows(lake) == [(1, -1, "new"), (2, 20, "b")]
    assert lake.execute("SELECT opened = current_date FROM accounts WHERE id = 2").rows() == [(True,)]
    res = lake.execute(
        "MERGE INTO accounts t USING (VALUES (2, 7), (3, 8), (4, 9)) AS s(id, amount) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET status = DEFAULT, balance = s.amount "
        "WHEN NOT MATCHED AND s.id = 3 THEN INSERT (id, balance, status) VALUES (s.id, DEFAULT, 'x') "
        "WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"
    )
    assert res.row_count == 3
    assert rows(lake) == [(1, -1, "new"), (2, 7, "new"), (3, -1, "x"), (4, -1, "new")]
    # a column without a default: DEFAULT is NULL, in SET too (not "keep the old value")
    lake.execute("CREATE TABLE plain (id INTEGER, v VARCHAR)")
    lake.execute("INSERT INTO plain VALUES (1, 'a')")
    lake.execute("UPDATE plain SET v = DEFAULT")
    lake.execute("INSERT INTO plain VALUES (2, DEFAULT)")
    assert sorted(lake.execute("SELECT * FROM plain").rows()) == [(1, None), (2, None)]
    fails(lake, "UPDATE plain SET v = DEFAULT || 'x'", ErrorCode.SYNTAX_ERROR, "DEFAULT is allowed only", "plain")


def test_check_violations_change_nothing(lake: Engine) -> None:
    lake.execute(ACCOUNTS)
    lake.execute("INSERT INTO accounts (id, balance) VALUES (1, 10), (2, 20)")
    fails(lake, "INSERT INTO accounts (id, balance) VALUES (3, 5), (4, 0)", ErrorCode.CONSTRAINT_VIOLATION,
          BALANCE_CHECK, "accounts")  # fmt: skip
    fails(lake, "INSERT INTO accounts (id, balance) VALUES (5, 1000)", ErrorCode.CONSTRAINT_VIOLATION, SMALL_CHECK,
          "accounts")  # fmt: skip
    fails(lake, "UPDATE accounts SET balance = balance - 10", ErrorCode.CONSTRAINT_VIOLATION, BALANCE_CHECK,
          "accounts")  # fmt: skip
    merge = (
        "MERGE INTO accounts t USING (VALUES (1, 5), (9, {n})) AS s(id, amount) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET balance = t.balance + s.amount "
        "WHEN NOT MATCHED THEN INSERT (id, balance) VALUES (s.id, s.amount)"
    )
    fails(lake, merge.format(n=0), ErrorCode.CONSTRAINT_VIOLATION, BALANCE_CHECK, "accounts")  # the INSERT branch
    fails(lake, merge.format(n=5).replace("t.balance + s.amount", "t.balance * 100"), ErrorCode.CONSTRAINT_VIOLATION,
          SMALL_CHECK, "accounts")  # fmt: skip
    # NULL passes, as in SQL; DELETE is never checked
    assert lake.execute("INSERT INTO accounts (id, balance) VALUES (6, NULL)").row_count == 1
    assert lake.execute("UPDATE accounts SET balance = NULL WHERE id = 2").row_count == 1
    assert lake.execute("DELETE FROM accounts WHERE id = 6").row_count == 1
    assert rows(lake) == [(1, 10, "new"), (2, None, "new")]
    assert lake.execute(merge.format(n=3)).row_count == 2
    assert rows(lake) == [(1, 15, "new"), (2, None, "new"), (9, 3, "new")]


def test_the_dataframe_builder_is_checked_and_takes_defaults(lake: Engine, spark) -> None:
    lake.execute(ACCOUNTS)
    lake.execute("INSERT INTO accounts (id, balance) VALUES (1, 10)")
    source = spark.createDataFrame([(1, -10), (2, 3)], "id INT, amount INT")
    builder = (
        lake.merge_into("accounts", source=source, on="accounts.id = s.id")
        .when_matched_update({"balance": "accounts.balance + s.amount"})
        .when_not_matched_insert({"id": "s.id"})
    )
    before = state(lake, "accounts")
    with pytest.raises(MergekitError) as info:
        builder.execute()
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION and BALANCE_CHECK in str(info.value)
    assert state(lake, "accounts") == before
    ok = spark.createDataFrame([(1, 5), (2, 3)], "id INT, amount INT")
    res = (
        lake.merge_into("accounts", source=ok, on="accounts.id = s.id")
        .when_matched_update({"balance": "accounts.balance + s.amount", "status": "DEFAULT"})
        .when_not_matched_insert({"id": "s.id", "status": "'df'"})
        .execute()
    )
    assert res.row_count == 2
    assert rows(lake) == [(1, 15, "new"), (2, -1, "df")]


def test_add_and_drop_constraint(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, qty INTEGER)")
    lake.execute("INSERT INTO t VALUES (1, 5), (2, -1), (3, NULL)")
    err = fails(lake, "ALTER TABLE t ADD CONSTRAINT positive CHECK (qty > 0)", ErrorCode.CONSTRAINT_VIOLATION,
                "Check constraint violation: (qty > 0) (constraint positive): 1 existing row of table", "t")  # fmt: skip
    assert "lake.default.t" in str(err)
    lake.execute("INSERT INTO t VALUES (4, -7)")  # still unconstrained
    lake.execute("DELETE FROM t WHERE qty < 0")
    assert lake.execute("ALTER TABLE t ADD CONSTRAINT positive CHECK (qty > 0)").row_count is None
    assert "CONSTRAINT positive CHECK (qty > 0)" in lake.execute("SHOW CREATE TABLE t").rows()[0][0]
    fails(lake, "INSERT INTO t VALUES (5, -5)", ErrorCode.CONSTRAINT_VIOLATION,
          "Check constraint violation: (qty > 0) (constraint positive)", "t")  # fmt: skip
    fails(lake, "ALTER TABLE t ADD CONSTRAINT positive CHECK (qty > 1)", ErrorCode.INVALID_ARGUMENTS,
          'constraint "positive" for table default.t already exists', "t")  # fmt: skip
    fails(lake, "ALTER TABLE t DROP COLUMN qty", ErrorCode.NOT_SUPPORTED, "positive", "t")
    lake.execute("ALTER TABLE t DROP CONSTRAINT positive")
    lake.execute("INSERT INTO t VALUES (5, -5)")
    fails(lake, "ALTER TABLE t DROP CONSTRAINT positive", ErrorCode.INVALID_ARGUMENTS,
          'constraint "positive" of table lake.default.t does not exist', "t")  # fmt: skip
    assert lake.execute("ALTER TABLE t DROP CONSTRAINT IF EXISTS positive").statement == "ALTER TABLE"
    assert sorted(lake.execute("SELECT * FROM t").rows(), key=repr) == [(1, 5), (3, None), (5, -5)]
    lake.execute("ALTER TABLE t ADD CHECK (qty <> 0)")  # PostgreSQL's unnamed form: the engine names it
    assert [c.name for c in _metadata(lake, "t").check_constraints] == ["t_qty_check"]
    history = [op for _, _, op, _ in lake.execute("DESCRIBE HISTORY t").rows()]
    assert history[:4] == ["add_constraint", "write", "drop_constraint", "add_constraint"]


def test_set_and_drop_default(lake: Engine) -> None:
    lake.execute("CREATE TABLE t (id INTEGER, v VARCHAR, n INTEGER DEFAULT 1)")
    lake.execute("INSERT INTO t (id) VALUES (1)")
    lake.execute("ALTER TABLE t ALTER COLUMN v SET DEFAULT 'x' || 'y'")
    lake.execute("ALTER TABLE t ALTER n DROP DEFAULT")
    lake.execute("INSERT INTO t (id) VALUES (2)")
    assert sorted(lake.execute("SELECT * FROM t").rows()) == [(1, None, 1), (2, "xy", None)]  # old rows keep theirs
    assert lake.execute("DESCRIBE t").rows()[1:] == [
        ("v", "varchar", "default 'x' || 'y'", ""),
        ("n", "integer", "", ""),
    ]
    fails(lake, "ALTER TABLE t ALTER COLUMN n SET DEFAULT 'abc'", ErrorCode.TYPE_MISMATCH,
          "column n is of type integer but default expression is of type varchar", "t")  # fmt: skip
    fails(lake, "ALTER TABLE t ALTER COLUMN n SET DEFAULT id + 1", ErrorCode.INVALID_ARGUMENTS,
          "cannot use column reference in DEFAULT expression", "t")  # fmt: skip
    fails(lake, "ALTER TABLE t ALTER COLUMN nope SET DEFAULT 1", ErrorCode.COLUMN_NOT_FOUND, "nope", "t")


def test_create_table_checks_its_definitions(lake: Engine) -> None:
    for sql, code, text in [
        ("CREATE TABLE d (a INT DEFAULT 'x')", ErrorCode.TYPE_MISMATCH, "column a is of type integer"),
        ("CREATE TABLE d (a INT CHECK (a + 1))", ErrorCode.TYPE_MISMATCH, "must evaluate to a boolean"),
        ("CREATE TABLE d (a INT CHECK (b > 0))", ErrorCode.COLUMN_NOT_FOUND, "b"),
        (
            "CREATE TABLE d (a INT, CONSTRAINT x CHECK (a > 0), CONSTRAINT x CHECK (a < 9))",
            ErrorCode.INVALID_ARGUMENTS,
            'constraint "x"',
        ),  # fmt: skip
    ]:
        with pytest.raises(MergekitError) as info:
            lake.execute(sql)
        assert info.value.code is code and text in str(info.value), str(info.value)
    assert lake.execute("SHOW TABLES LIKE 'd'").rows() == []
    # unnamed constraints get PostgreSQL's names: <table>_<column>_check, or <table>_check over several columns
    lake.execute(
        "CREATE TABLE d (a INT CHECK (a > 0), b INT, CHECK (a < b), CHECK (a < 10), CONSTRAINT d_check1 CHECK (b < 99))"
    )
    text = lake.execute("SHOW CREATE TABLE d").rows()[0][0]
    assert text == (
        "CREATE TABLE lake.default.d (\n   a integer,\n   b integer,\n   CONSTRAINT d_a_check CHECK (a > 0),\n"
        "   CONSTRAINT d_check CHECK (a < b),\n   CONSTRAINT d_a_check1 CHECK (a < 10),\n"
        "   CONSTRAINT d_check1 CHECK (b < 99)\n)"
    )
    lake.execute("DROP TABLE d")
    lake.execute(text.replace("lake.default.d", "d"))  # SHOW CREATE TABLE's text creates the same table
    assert lake.execute("SHOW CREATE TABLE d").rows()[0][0] == text


def test_defaults_and_constraints_survive_a_new_engine(spark, connector: str, tmp_path: Path) -> None:
    first = _engine(spark, connector, tmp_path / "wh")
    first.execute(ACCOUNTS)
    first.execute("ALTER TABLE accounts ADD CONSTRAINT lower CHECK (balance > -100)")
    first.execute("ALTER TABLE accounts ALTER COLUMN status SET DEFAULT 'again'")
    first.close()
    second = _engine(spark, connector, tmp_path / "wh")
    try:
        second.execute("INSERT INTO accounts (id) VALUES (1)")
        assert rows(second) == [(1, -1, "again")]
        fails(second, "INSERT INTO accounts (id, balance) VALUES (2, -100)", ErrorCode.CONSTRAINT_VIOLATION,
              "(balance > -100) (constraint lower)", "accounts")  # fmt: skip
        fails(second, "UPDATE accounts SET balance = 0", ErrorCode.CONSTRAINT_VIOLATION, BALANCE_CHECK, "accounts")
        assert [c.name for c in _metadata(second, "accounts").check_constraints] == [
            "accounts_balance_check",
            "small",
            "lower",
        ]
    finally:
        second.close()


def _metadata(engine: Engine, table: str):
    meta = engine.catalog("lake").get_metadata()
    session = ConnectorSession(catalog="lake")
    handle = meta.get_table_handle(session=session, table=SchemaTableName(schema="default", table=table))
    return meta.get_table_metadata(session=session, table_handle=handle)


def test_journal_add_constraint_refuses_rows_it_did_not_check(spark, tmp_path: Path) -> None:
    """The engine checks the rows of one snapshot; a commit after it would let unchecked rows in, so the journal
    refuses to record the constraint on the old snapshot's handle."""
    engine = _engine(spark, "journal", tmp_path / "wh")
    try:
        engine.execute("CREATE TABLE t (id INTEGER, qty INTEGER)")
        meta = engine.catalog("lake").get_metadata()
        session = ConnectorSession(catalog="lake")
        checked = meta.get_table_handle(session=session, table=SchemaTableName(schema="default", table="t"))
        engine.execute("INSERT INTO t VALUES (1, -1)")  # a concurrent writer, after the rows were checked
        with pytest.raises(MergekitError) as info:
            meta.add_check_constraint(
                session=session, table_handle=checked, constraint=CheckConstraint(name="p", expression="qty > 0")
            )
        assert info.value.code is ErrorCode.TRANSACTION_CONFLICT
        assert _metadata(engine, "t").check_constraints == ()
    finally:
        engine.close()


def test_index_lookup_merge_does_not_skip_checks(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A MERGE the journal's index would run in Arrow runs the Spark plan when the table has a CHECK, and says why."""
    import mergekit.planner.cost as cost

    monkeypatch.setattr(cost, "LOOKUP_MIN_KEYS", -1)  # every source takes the lookup path when it can
    engine = _engine(spark, "journal", tmp_path / "wh")
    try:
        engine.execute("CREATE TABLE k (id BIGINT, qty BIGINT, PRIMARY KEY (id))")
        engine.execute("INSERT INTO k VALUES (1, 5), (2, 6)")
        merge = (
            "MERGE INTO k t USING (VALUES (CAST(1 AS BIGINT), CAST(-3 AS BIGINT))) AS s(id, qty) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET qty = s.qty"
        )
        assert engine.execute(merge).metrics["strategy"] == "index_lookup"  # without a CHECK: Arrow
        engine.execute("UPDATE k SET qty = 5 WHERE id = 1")
        engine.execute("ALTER TABLE k ADD CONSTRAINT positive CHECK (qty > 0)")
        explained = engine.execute("EXPLAIN " + merge).rows()[0][0]
        assert "CHECK positive (qty > 0)" in explained
        assert "Index lookup not taken: the table has CHECK constraints" in explained
        fails(engine, merge, ErrorCode.CONSTRAINT_VIOLATION, "(qty > 0) (constraint positive)", "k")
        res = engine.execute(merge.replace("-3", "3"))
        assert res.metrics["strategy"] == "spark_join" and res.row_count == 1
    finally:
        engine.close()


# ---- merge tables: a merge table's constraint holds for every child ---------------------------------------


@pytest.fixture
def parts(spark, tmp_path: Path) -> Engine:
    engine = _engine(spark, "partitioned", tmp_path / "wh")
    engine.execute(
        "CREATE MERGE TABLE m (id INTEGER NOT NULL, qty INTEGER DEFAULT 5 CHECK (qty >= 0)) PARTITION BY RANGE ON (id)"
    )
    engine.execute("CREATE TABLE c1 (id INTEGER NOT NULL, qty INTEGER)")
    engine.execute("CREATE TABLE c2 (id INTEGER NOT NULL, qty INTEGER)")
    engine.execute("ALTER TABLE m ADD TABLE c1 AS PARTITION FROM 0 TO 100")
    engine.execute("ALTER TABLE m ADD TABLE c2 AS PARTITION FROM 100 TO 200")
    yield engine
    engine.close()


MERGE_CHECK = "Check constraint violation: (qty >= 0) (constraint m_qty_check)"


def test_merge_table_constraint_holds_for_every_child(parts: Engine) -> None:
    assert "CONSTRAINT m_qty_check CHECK (qty >= 0)" in parts.execute("SHOW CREATE TABLE m").rows()[0][0]
    parts.execute("INSERT INTO m (id) VALUES (1), (150)")  # routed to both children, with the merge table's default
    assert sorted(parts.execute("SELECT * FROM m").rows()) == [(1, 5), (150, 5)]
    fails(parts, "INSERT INTO m VALUES (2, 1), (151, -1)", ErrorCode.CONSTRAINT_VIOLATION, MERGE_CHECK, "c1", "c2")
    fails(parts, "UPDATE m SET qty = qty - 6 WHERE id > 100", ErrorCode.CONSTRAINT_VIOLATION, MERGE_CHECK, "c1", "c2")
    fails(parts, "MERGE INTO m USING (VALUES (1, -1)) AS s(id, q) ON m.id = s.id WHEN MATCHED THEN UPDATE SET qty = s.q",
          ErrorCode.CONSTRAINT_VIOLATION, MERGE_CHECK, "c1", "c2")  # fmt: skip
    # a direct write to a child is checked against the merge table's constraints too
    fails(parts, "INSERT INTO c2 VALUES (152, -2)", ErrorCode.CONSTRAINT_VIOLATION, MERGE_CHECK, "c1", "c2")
    assert "CONSTRAINT m_qty_check CHECK (qty >= 0)" in parts.execute("SHOW CREATE TABLE c2").rows()[0][0]
    # a new constraint: every child's rows are checked first, then the children hold it too
    fails(parts, "ALTER TABLE m ADD CONSTRAINT cap CHECK (qty < 5)", ErrorCode.CONSTRAINT_VIOLATION,
          "Check constraint violation: (qty < 5) (constraint cap): 2 existing rows of table lake.default.m violate it",
          "c1", "c2")  # fmt: skip
    parts.execute("ALTER TABLE m ADD CONSTRAINT cap CHECK (qty < 6)")
    assert [c.name for c in _metadata(parts, "c1").check_constraints] == ["cap", "m_qty_check"]
    fails(parts, "INSERT INTO c1 VALUES (3, 6)", ErrorCode.CONSTRAINT_VIOLATION, "(qty < 6) (constraint cap)", "c1")
    fails(parts, "ALTER TABLE c1 DROP CONSTRAINT cap", ErrorCode.NOT_SUPPORTED, "belongs to a MERGE TABLE", "c1")
    parts.execute("ALTER TABLE m DROP CONSTRAINT cap")
    assert [c.name for c in _metadata(parts, "c1").check_constraints] == ["m_qty_check"]
    parts.execute("INSERT INTO c1 VALUES (3, 6)")
    parts.execute("ALTER TABLE m ALTER COLUMN qty SET DEFAULT 1")
    parts.execute("INSERT INTO m (id) VALUES (4)")
    assert sorted(parts.execute("SELECT * FROM m").rows()) == [(1, 5), (3, 6), (4, 1), (150, 5)]


def test_a_child_joins_only_if_its_rows_and_constraints_fit(parts: Engine) -> None:
    parts.execute("CREATE TABLE c3 (id INTEGER NOT NULL, qty INTEGER)")
    parts.execute("INSERT INTO c3 VALUES (250, -3)")
    fails(parts, "ALTER TABLE m ADD TABLE c3 AS PARTITION FROM 200 TO 300", ErrorCode.CONSTRAINT_VIOLATION,
          f"{MERGE_CHECK}: 1 existing row of table lake.default.c3 violates it", "c3")  # fmt: skip
    assert parts.execute("SELECT count(*) FROM range_partitions").rows() == [(2,)]
    parts.execute("UPDATE c3 SET qty = 3")
    parts.execute("ALTER TABLE c3 ADD CONSTRAINT own CHECK (qty < 10)")
    # writes through the merge table check its constraints only: a child may not have one of its own
    fails(parts, "ALTER TABLE m ADD TABLE c3 AS PARTITION FROM 200 TO 300", ErrorCode.INVALID_PARTITION,
          "(CHECK constraint own: qty < 10)", "c3")  # fmt: skip
    parts.execute("ALTER TABLE c3 DROP CONSTRAINT own")
    parts.execute("ALTER TABLE m ADD TABLE c3 AS PARTITION FROM 200 TO 300")
    fails(parts, "ALTER TABLE c3 ADD CONSTRAINT own CHECK (qty < 10)", ErrorCode.NOT_SUPPORTED,
          "it is a PARTITION of MERGE TABLE 'default.m'", "c3")  # fmt: skip
    assert sorted(parts.execute("SELECT * FROM m").rows()) == [(250, 3)]
