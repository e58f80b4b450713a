"""The driver tier (docs/architecture.md, "The driver tier"): an INSERT of VALUES rows of constants runs in the
engine's process without a Spark job, with the rows, errors and commits the Spark tier gives. Every statement here
runs on both tiers (``SET SESSION driver_tier``) against each connector, and the two must agree; the statements
the driver declines run on Spark with the same result."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError

from .test_insert_arrow import spark_jobs

TABLE = "CREATE TABLE t (k integer, v varchar, d double, b boolean, dt date, s smallint, nn integer NOT NULL)"

# (statement, the tier it takes when the driver tier is on)
CASES = [
    ("INSERT INTO t VALUES (1, 'a', 7, true, DATE '2020-01-01', 3, 1), (2, NULL, NULL, NULL, NULL, NULL, 2)", "driver"),
    ("INSERT INTO t (nn, k) VALUES (1, -5), (2, 2 * 21), (3, 7 - 4), (4, NULL + 1)", "driver"),
    ("INSERT INTO t (NN, V) VALUES (1, 'é'), (2, ''), (3, 'Ω''s')", "driver"),
    ("INSERT INTO t (nn, dt) VALUES (1, DATE '2020-01-31' + 1), (2, DATE '2024-03-01' - 1)", "driver"),
    ("INSERT INTO t (nn, b) VALUES (1, 1 < 2), (2, NULL IS NULL), (3, 'a' > 'b')", "driver"),
    ("INSERT INTO t (nn) VALUES 1, 2, 3", "driver"),
    # the values out of each column's reach fail the same way
    ("INSERT INTO t (nn, s) VALUES (1, 40000)", "driver"),
    ("INSERT INTO t (nn) VALUES (NULL)", "driver"),
    ("INSERT INTO t (nn) VALUES (1), (2147483647 + 1)", "driver"),
    ("INSERT INTO t (nn, dt) VALUES (1, DATE '9999-12-31' + 1)", "driver"),
    ("INSERT INTO t (nn, k) VALUES (1, 5 % 0)", "spark"),
    # what the driver leaves to Spark: its analysis, its functions, the literals the Arrow compiler does not type
    ("INSERT INTO t (nn, v) VALUES (1, upper('x'))", "spark"),
    ("INSERT INTO t (nn, d) VALUES (1, 1.5), (2, 2.5e0), (3, -0.1), (4, 1e-3)", "driver"),
    ("INSERT INTO t (nn, k) VALUES (1, 1.5)", "spark"),  # a DECIMAL into an INTEGER: Spark's rounding cast
    ("INSERT INTO t (nn, d) VALUES (1, 1234567890123456.5)", "spark"),  # 17 digits: beyond the lowering's DECIMALs
    ("INSERT INTO t (nn, k) VALUES (1, 3000000000)", "spark"),
    ("INSERT INTO t (nn, v) VALUES (1, 5)", "spark"),
    ("INSERT INTO t (nn, k) VALUES (1, 2), (3, 'x')", "spark"),
    ("INSERT INTO t (nn, k) VALUES (1, 2, 3)", "spark"),
    ("INSERT INTO t (nn, NN) VALUES (1, 2)", "spark"),
    ("INSERT INTO t (nn, zz) VALUES (1, 2)", "spark"),
    ("INSERT INTO t (nn) SELECT 1", "spark"),
]


def _catalog(connector: str, tmp_path) -> dict:
    if connector in ("journal", "partitioned"):
        return {"connector": connector, "warehouse": str(tmp_path / "wh")}
    if connector in MERGE_TABLES:  # merge tables of journal children
        return {"connector": "partitioned", "warehouse": str(tmp_path / "wh")}
    if connector == "sqldb":
        return {"connector": "sqldb", "uri": f"sqlite:///{tmp_path / 'db.sqlite'}"}
    return {"connector": "memory"}


_tables = itertools.count()


def _outcome(engine: Engine, sql: str, tier: str) -> tuple:
    """(strategy, row count, the table's rows) or (the error's code, its message, the table's row count), the
    statement run on a new table ``t`` with the driver tier ``tier``."""
    name = f"t{next(_tables)}"
    engine.execute(TABLE.replace("TABLE t ", f"TABLE {name} "))
    sql = sql.replace("INTO t ", f"INTO {name} ")
    engine.execute(f"SET SESSION driver_tier = '{tier}'")
    try:
        result = engine.execute(sql)
    except MergekitError as err:
        return ("error", err.code, str(err), engine.execute(f"SELECT count(*) FROM {name}").rows())
    finally:
        engine.execute("RESET SESSION driver_tier")
    rows = sorted(engine.execute(f"SELECT * FROM {name}").rows(), key=lambda r: r[-1])
    return (result.metrics["strategy"], result.row_count, rows)


# every case on the memory connector; on the others, what reaches the connector (rows of each type, a failure)
SOME = [0, 1, 2, 3, 5, 7, 11]


@pytest.mark.parametrize("connector", ["memory", "journal", "sqldb"])
def test_both_tiers_agree(spark, tmp_path, connector: str) -> None:
    engine = Engine(spark=spark, catalogs={"lake": _catalog(connector, tmp_path)})
    try:
        for i, (sql, tier) in enumerate(CASES):
            if connector != "memory" and i not in SOME:
                continue
            driver, spark_tier = _outcome(engine, sql, "auto"), _outcome(engine, sql, "off")
            assert driver[1:] == spark_tier[1:], sql
            assert spark_tier[0] != "driver_append", sql
            if driver[0] == "error":
                assert driver[3] == [(0,)], sql  # nothing committed
            else:
                assert (driver[0] == "driver_append") == (tier == "driver"), (sql, driver[0])
    finally:
        engine.close()


def test_outcomes_are_trinos(spark, tmp_path) -> None:
    """What both tiers agree on is right: the values as written, the errors in Trino's words."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute(TABLE)
    try:
        assert _outcome(engine, CASES[0][0], "auto") == (
            "driver_append",
            2,
            [(1, "a", 7.0, True, dt.date(2020, 1, 1), 3, 1), (2, None, None, None, None, None, 2)],
        )
        assert _outcome(engine, CASES[1][0], "auto")[2] == [
            (-5, None, None, None, None, None, 1),
            (42, None, None, None, None, None, 2),
            (3, None, None, None, None, None, 3),
            (None, None, None, None, None, None, 4),
        ]
        errors = {sql: _outcome(engine, sql, "auto")[1:3] for sql, _ in CASES[6:11]}
        assert list(errors.values()) == [
            (ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, "[NUMERIC_VALUE_OUT_OF_RANGE] Out of range for smallint: 40000"),
            (ErrorCode.CONSTRAINT_VIOLATION, "[CONSTRAINT_VIOLATION] NULL value not allowed for NOT NULL column: nn"),
            (ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, "[NUMERIC_VALUE_OUT_OF_RANGE] Numeric overflow in addition"),
            (ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, "[NUMERIC_VALUE_OUT_OF_RANGE] Date out of range: 9999-12-31 + 1"),
            (ErrorCode.DIVISION_BY_ZERO, "[DIVISION_BY_ZERO] Division by zero"),
        ]
    finally:
        engine.close()


def test_a_driver_insert_runs_no_spark_job_and_explain_names_it(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute(TABLE)
    try:
        with spark_jobs(spark) as jobs:
            result = engine.execute("INSERT INTO t (k, v, nn) VALUES (1, 'a', 1), (2, 'b', 2)")
        assert (result.row_count, result.metrics["strategy"], jobs) == (2, "driver_append", [])
        # EXPLAIN evaluates nothing: a value that would overflow is explained, not raised
        (text,) = engine.execute("EXPLAIN INSERT INTO t (nn) VALUES (2147483647 + 1)").rows()[0]
        assert "Strategy: driver_append (the VALUES rows evaluated in Arrow and written on the driver" in text
        engine.execute("SET SESSION driver_tier = 'off'")
        (text,) = engine.execute("EXPLAIN INSERT INTO t (nn) VALUES (1)").rows()[0]
        assert "Strategy: insert_from_source" in text
    finally:
        engine.close()


def test_the_environment_sets_the_tiers_default_and_set_session_overrides_it(spark, monkeypatch) -> None:
    """``MERGEKIT_DRIVER_TIER=off`` (how ``make conformance TIER=off`` runs the cases on Spark) turns the tier off for
    every engine of the process; SHOW SESSION shows it, SET SESSION still wins, a bad value is refused by name."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute(TABLE)
    insert = "INSERT INTO t (k, nn) VALUES (1, 1)"
    try:
        monkeypatch.setenv("MERGEKIT_DRIVER_TIER", "off")
        assert engine.execute(insert).metrics["strategy"] == "insert_from_source"
        shown = {row[0]: row[1:3] for row in engine.execute("SHOW SESSION").rows()}
        assert shown["driver_tier"] == ("off", "off")
        engine.execute("SET SESSION driver_tier = 'auto'")
        assert engine.execute(insert).metrics["strategy"] == "driver_append"
        engine.execute("RESET SESSION driver_tier")
        monkeypatch.setenv("MERGEKIT_DRIVER_TIER", "sometimes")
        with pytest.raises(MergekitError) as caught:
            engine.execute(insert)
        assert caught.value.code is ErrorCode.INVALID_SESSION_PROPERTY
        assert "driver_tier must be 'auto' or 'off', got 'sometimes'" in str(caught.value)
        assert "MERGEKIT_DRIVER_TIER" in str(caught.value)
        monkeypatch.delenv("MERGEKIT_DRIVER_TIER")
        assert engine.execute("SELECT count(*) FROM t").rows() == [(2,)]
    finally:
        engine.close()


def test_what_the_driver_declines_for_the_table_runs_on_spark(spark, tmp_path) -> None:
    """A DEFAULT to evaluate, a CHECK constraint: the same VALUES, on Spark. A bounded varchar stays on the driver,
    with the store assignment every writer applies."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path)}})
    try:
        engine.execute("CREATE TABLE c (k integer, n integer CHECK (n > 0))")
        engine.execute("CREATE TABLE f (k integer, n integer DEFAULT 7)")
        engine.execute("CREATE TABLE b (k integer, v varchar(2))")
        assert engine.execute("INSERT INTO c VALUES (1, 2)").metrics["strategy"] == "insert_from_source"
        with pytest.raises(MergekitError) as caught:
            engine.execute("INSERT INTO c VALUES (2, 0)")
        assert caught.value.code is ErrorCode.CONSTRAINT_VIOLATION
        assert engine.execute("INSERT INTO f (k) VALUES (1)").metrics["strategy"] == "insert_from_source"
        assert engine.execute("INSERT INTO f VALUES (2, 3)").metrics["strategy"] == "driver_append"
        assert sorted(engine.execute("SELECT * FROM f").rows()) == [(1, 7), (2, 3)]
        with pytest.raises(MergekitError) as caught:
            engine.execute("INSERT INTO b VALUES (1, 'abc')")
        assert caught.value.code is ErrorCode.INVALID_CAST_ARGUMENT and "Cannot truncate" in str(caught.value)
        assert engine.execute("SELECT count(*) FROM b").rows() == [(0,)]
    finally:
        engine.close()


BOUNDED_INSERTS = [
    "INSERT INTO {t} VALUES (1, 'ab', 'ab'), (2, 'abc', 'abc'), (3, NULL, NULL), (4, '', ''), (5, 'é', 'é')",
    "INSERT INTO {t} VALUES (1, 'abc   ', 'ab  ')",  # spaces past the length are cut
    "INSERT INTO {t} (k, c) VALUES (1, ' a')",
    "INSERT INTO {t} VALUES (1, 'abcd', 'a')",  # fails: non-space characters past varchar(3)
    "INSERT INTO {t} VALUES (1, 'a', 'ab c')",  # fails: char(3)
    "INSERT INTO {t} VALUES (1, 'a', 'a'), (2, 'éééé', 'b')",  # fails at the second row: nothing is written
]


@pytest.mark.parametrize("connector", ["memory", "journal"])
def test_bounded_strings_are_stored_alike_on_both_tiers(spark, tmp_path, connector: str) -> None:
    """VARCHAR(n) and CHAR(n) columns take the driver tier's INSERT of VALUES: the same stored values (CHAR padded),
    the same error and nothing written, as on Spark."""
    engine = Engine(spark=spark, catalogs={"lake": _catalog(connector, tmp_path)})
    try:
        for sql in BOUNDED_INSERTS:
            outcomes = []
            for tier in ("auto", "off"):
                name = f"b{next(_tables)}"
                engine.execute(f"CREATE TABLE {name} (k integer, v varchar(3), c char(3))")
                engine.execute(f"SET SESSION driver_tier = '{tier}'")
                try:
                    result = engine.execute(sql.format(t=name))
                    outcome: tuple = (result.metrics["strategy"], result.row_count)
                except MergekitError as err:
                    outcome = ("error", err.code, str(err))
                finally:
                    engine.execute("RESET SESSION driver_tier")
                rows = engine.execute(f"SELECT k, v, c, length(c) FROM {name} ORDER BY k").rows()
                outcomes.append((outcome, rows))
            (driver, driver_rows), (on_spark, spark_rows) = outcomes
            assert driver_rows == spark_rows, sql
            assert driver[0] in ("driver_append", "error") and on_spark[0] in ("insert_from_source", "error"), sql
            assert driver[1:] == on_spark[1:], sql
        assert spark_rows == []  # (the last statement fails on both)
    finally:
        engine.close()


def test_a_failing_commit_on_the_driver_changes_nothing(spark, tmp_path) -> None:
    """The journal refuses a second row for a primary key in its commit: on the driver tier too the statement fails
    with the connector's error, abort_merge runs, and the table and its history are as before."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path)}})
    try:
        engine.execute("CREATE TABLE p (id integer, v varchar, PRIMARY KEY (id))")
        engine.execute("INSERT INTO p VALUES (1, 'a')")
        history = engine.execute("DESCRIBE HISTORY p").rows()
        outcomes = []
        for tier in ("auto", "off"):
            engine.execute(f"SET SESSION driver_tier = '{tier}'")
            with pytest.raises(MergekitError) as caught:
                engine.execute("INSERT INTO p VALUES (1, 'b')")
            outcomes.append((caught.value.code, str(caught.value)))
            assert engine.execute("SELECT * FROM p").rows() == [(1, "a")]
            assert engine.execute("DESCRIBE HISTORY p").rows() == history
        assert outcomes[0] == outcomes[1]
        engine.execute("SET SESSION driver_tier = 'auto'")
        assert engine.execute("INSERT INTO p VALUES (2, 'b')").metrics["strategy"] == "driver_append"
        assert sorted(engine.execute("SELECT * FROM p").rows()) == [(1, "a"), (2, "b")]
    finally:
        engine.close()


# ---- MERGE of a VALUES source into a table with an index (the journal's and sqldb's primary key) ---------------

KEYED = "CREATE TABLE {name} (id integer, v varchar, n integer NOT NULL, PRIMARY KEY (id))"
MERGES = [
    # (statement over target t, the tier it takes when the driver tier is on)
    (
        "MERGE INTO {t} AS t USING (VALUES (5, 'x', 1), (2000, 'y', 2), (7, 'z', 3)) s(id, v, n) ON t.id = s.id "
        "WHEN MATCHED AND s.n = 3 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + s.n "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.n)",
        "driver",
    ),
    (
        "MERGE INTO {t} AS t USING (VALUES (5, 'a'), (5, 'b')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
        "driver",
    ),
    # a NULL key, an overflow: one error a statement (two, in two of Spark's tasks, race to be the one reported)
    (
        "MERGE INTO {t} AS x USING (VALUES (NULL, 'q', 4), (8, 'r', 4)) s(id, v, n) ON x.id = s.id "
        "WHEN MATCHED THEN UPDATE SET n = x.n + s.n WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, s.n)",
        "driver",
    ),
    (
        "MERGE INTO {t} AS x USING (VALUES (8, 'r', 2147483647), (9, 's', 1)) s(id, v, n) ON x.id = s.id "
        "WHEN MATCHED THEN UPDATE SET n = x.n + s.n WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, s.n)",
        "driver",
    ),
    (
        "MERGE INTO {t} USING (VALUES (3, 'p'), (NULL, 'q'), (4000, 'r')) s(id, v) ON {t}.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = NULL WHEN NOT MATCHED AND s.id IS NOT NULL THEN INSERT (id, n) VALUES (s.id, 0)",
        "driver",
    ),
    (
        "MERGE INTO {t} AS t USING (VALUES (6, 'z')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = NULL",
        "driver",
    ),
    (
        "MERGE INTO {t} AS t USING (VALUES (9, 'r')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v || 'x'",
        "driver",
    ),
    (
        "MERGE INTO {t} AS t USING (VALUES (6, NULL)) s(id, n) ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = s.n",
        "driver",  # typed by Spark (a column of NULLs only), then looked up on the driver: a small source
    ),
    (
        "MERGE INTO {t} AS t USING (VALUES (1, 2.5)) s(id, d) ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = 1",
        "driver",  # a DECIMAL the driver does not type: Spark types it, the lookup runs on the driver
    ),
]


NUMERIC = "CREATE TABLE {name} (id integer, amount double, price decimal(10, 2), PRIMARY KEY (id))"
NUMERIC_MERGES = [
    # DOUBLE and DECIMAL literals in the source: DOUBLE arithmetic with a DECIMAL operand converts it (correctly
    # rounded, as Spark's Decimal.toDouble); a DECIMAL widens exactly into DECIMAL(10, 2)
    (
        "MERGE INTO {t} AS t USING (VALUES (1, 12.25, 1.5E0), (2000, 0.1, 2.5E-1), (3, 0.07, -0.0E0)) "
        "s(id, p, a) ON t.id = s.id WHEN MATCHED THEN UPDATE SET amount = t.amount + s.p + s.a, price = s.p "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.a, s.p)",
        "driver",
    ),
    (
        "MERGE INTO {t} AS t USING (VALUES (4, 0.1E0), (5, -1.5E0)) s(id, a) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET amount = -s.a * 3 + t.amount",
        "driver",
    ),
    (
        "MERGE INTO {t} AS t USING (VALUES (6, 0.333), (7, 1.05)) s(id, p) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET price = s.p",  # three decimals into DECIMAL(10, 2): Spark rounds
        "spark",
    ),
    ("UPDATE {t} SET amount = amount * 0.1 + 0.000001 WHERE id IN (8, 9)", "driver"),
    ("UPDATE {t} SET price = 12.5 WHERE id = 8", "driver"),
]


def test_double_and_decimal_literals_agree_on_both_tiers(spark, tmp_path) -> None:
    engine = Engine(spark=spark, catalogs={"lake": _catalog("journal", tmp_path)})
    try:
        for sql, tier in NUMERIC_MERGES:
            outcomes = []
            for mode in ("auto", "off"):
                name = f"n{next(_tables)}"
                engine.execute(NUMERIC.format(name=name))
                engine.execute(
                    f"INSERT INTO {name} VALUES " + ", ".join(f"({i}, {i}.1E0, {i}.05)" for i in range(1, 11))
                )
                engine.execute(f"SET SESSION driver_tier = '{mode}'")
                try:
                    result = engine.execute(sql.format(t=name))
                finally:
                    engine.execute("RESET SESSION driver_tier")
                rows = engine.execute(f"SELECT * FROM {name} ORDER BY id").rows()
                outcomes.append((result.metrics.get("tier"), result.row_count, rows))
            assert outcomes[0][1:] == outcomes[1][1:], sql
            assert (outcomes[0][0], outcomes[1][0]) == (tier, "spark"), sql
    finally:
        engine.close()


# merge tables of journal children, partitioned on the key (RANGE ON (id): each key is looked up in the one child
# that may hold it): the parent of each child (a nested merge table before its children) and its bounds. NULL keys
# have a child, so that a NULL key fails as in a journal table (the journal's sink refuses it).
MERGE_TABLES = {
    "merge_table": [
        ("", "FROM RANGE MINVALUE TO 5 WITH NULL VALUES"),
        ("", "FROM 5 TO 100"),
        ("", "FROM 100 TO RANGE MAXVALUE"),
    ],
    "nested_merge_table": [
        ("", "FROM RANGE MINVALUE TO 5 WITH NULL VALUES"),
        ("", "FROM 5 TO 100"),  # a merge table itself
        ("_1", "FROM 5 TO 8"),
        ("_1", "FROM 8 TO 100"),
        ("", "FROM 100 TO RANGE MAXVALUE"),
    ],
}


# A merge table's statements cost a few seconds each on Spark (a plan over its children's scans): on merge tables
# run the statements whose keys reach several children, or another child than their rows' (key moves), the errors
# each kind of failure gives (a NULL key, an overflow, a duplicate match, a refused key, an unknown column) and
# one of each statement the driver leaves to Spark; on the nested merge table, those that reach several children.
SUBSETS = {
    "merge_table": {"merges": [0, 1, 2, 3, 4, 6, 7], "keyed_dml": [1, 5, 7, 10, 13, 14, 16, 18, 19, 20, 25]},
    "nested_merge_table": {"merges": [0, 1, 2, 3], "keyed_dml": [1, 5, 13, 18, 20]},
}


def _create_keyed(engine: Engine, connector: str, ddl: str, name: str) -> None:
    """``ddl`` (a CREATE TABLE keyed by id) as table ``name``: a plain table, or for a merge table connector a merge
    table (``MERGE_TABLES``) over children ``{name}_0``, ``{name}_1``, ..."""
    if connector not in MERGE_TABLES:
        engine.execute(ddl.format(name=name))
        return
    children = MERGE_TABLES[connector]
    merge_table = ddl.replace("CREATE TABLE", "CREATE MERGE TABLE") + " PARTITION BY RANGE ON (id)"
    engine.execute(merge_table.format(name=name))
    parents = {f"{name}{parent}" for parent, _ in children if parent}
    for i in range(len(children)):
        child = f"{name}_{i}"
        engine.execute((merge_table if child in parents else ddl).format(name=child))
    for i, (parent, bounds) in reversed(list(enumerate(children))):  # a nested merge table's children first
        engine.execute(f"ALTER TABLE {name}{parent} ADD TABLE {name}_{i} AS PARTITION {bounds}")


def _merge_outcome(engine: Engine, sql: str, tier: str, connector: str = "journal") -> tuple:
    name = f"m{next(_tables)}"
    _create_keyed(engine, connector, KEYED, name)
    engine.execute(f"INSERT INTO {name} VALUES " + ", ".join(f"({i}, 'v{i}', {i})" for i in range(1, 11)))
    engine.execute(f"SET SESSION driver_tier = '{tier}'")
    try:
        result = engine.execute(sql.format(t=name))
    except MergekitError as err:
        outcome: tuple = ("error", "error", err.code, str(err).replace(name, "{t}"))
    else:
        m = result.metrics
        outcome = (m["strategy"], m["tier"], result.row_count, m["inserted"], m["updated"], m["deleted"])
    finally:
        engine.execute("RESET SESSION driver_tier")
    return (*outcome, sorted(engine.execute(f"SELECT * FROM {name}").rows(), key=repr))


@pytest.mark.parametrize("connector", ["journal", "sqldb", *MERGE_TABLES])
def test_a_merge_of_values_agrees_on_both_tiers(spark, tmp_path, connector: str) -> None:
    engine = Engine(spark=spark, catalogs={"lake": _catalog(connector, tmp_path)})
    try:
        for i, (sql, tier) in enumerate(MERGES):
            if connector in SUBSETS and i not in SUBSETS[connector]["merges"]:
                continue
            driver = _merge_outcome(engine, sql, "auto", connector)
            spark_tier = _merge_outcome(engine, sql, "off", connector)
            assert driver[2:] == spark_tier[2:], sql
            assert spark_tier[1] in ("spark", "error"), sql
            if i == 1:  # two source rows for key 5: the target row is named by its key on every table
                assert driver[3].endswith("(target row: id = 5)"), driver
            if driver[0] != "error":
                assert driver[1] == tier, (sql, driver)
    finally:
        engine.close()


def test_a_driver_merge_runs_no_spark_job(spark, tmp_path) -> None:
    engine = Engine(spark=spark, catalogs={"lake": _catalog("journal", tmp_path)})
    try:
        engine.execute(KEYED.format(name="k"))
        engine.execute("INSERT INTO k VALUES (1, 'a', 1), (2, 'b', 2)")
        upsert = (
            "MERGE INTO k USING (VALUES (2, 'B', 20), (3, 'C', 30)) AS s(id, v, n) ON k.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.n)"
        )
        (text,) = engine.execute("EXPLAIN " + upsert).rows()[0]
        assert "Strategy: index_lookup" in text and "Tier: driver" in text
        with spark_jobs(spark) as jobs:
            result = engine.execute(upsert)
        assert (result.row_count, result.metrics["tier"], jobs) == (2, "driver", [])
        assert engine.execute("SELECT * FROM k ORDER BY id").rows() == [(1, "a", 1), (2, "B", 20), (3, "C", 30)]
        assert [r[0] for r in engine.execute("DESCRIBE HISTORY k").rows()] == [2, 1, 0]  # one commit for the MERGE
    finally:
        engine.close()


# ---- UPDATE and DELETE of rows named by key: the MERGE each means, by the index (mergekit.sql.keyed_as_merge) ----

KEYED_DML = [
    # (statement over target {t}, the tier it takes when the driver tier is on)
    ("UPDATE {t} SET v = 'x' WHERE id = 5", "driver"),
    ("UPDATE {t} SET v = 'x', n = n + 1 WHERE id IN (5, 6, 2000)", "driver"),
    ("UPDATE {t} SET n = n * 2 WHERE id IN (1, 01, 1) AND n > 0", "driver"),  # 1 and 01: one key, updated once
    ("UPDATE {t} AS x SET n = x.n - 1 WHERE 3 = x.id AND v IN ('v3', NULL)", "driver"),
    ("UPDATE {t} SET n = 1 WHERE id IN (2, 3) AND v NOT IN ('v2', NULL)", "driver"),  # NOT IN with a NULL: no row
    ("UPDATE {t} SET id = 12, v = DEFAULT WHERE id = 6", "driver"),
    ("UPDATE {t} SET n = 1 WHERE id = 3 AND id = 4", "driver"),
    ("UPDATE {t} SET n = 1 WHERE id IN (3000000000, -3000000000, 2)", "driver"),  # BIGINT keys
    ("UPDATE {t} SET n = 1 WHERE id = 3 AND n * 3000000000 > 0", "driver"),
    ("DELETE FROM {t} WHERE id = 3 AND n + 9223372036854775807 > 0", "driver"),  # BIGINT overflow
    ("UPDATE {t} SET n = 2147483647 + n WHERE id = 4", "driver"),
    ("UPDATE {t} SET n = NULL WHERE id = 4", "driver"),
    ("UPDATE {t} SET n = 1 WHERE id = 4 AND 1 / 0 = 1", "driver"),
    ("UPDATE {t} SET id = 7 WHERE id = 6", "driver"),  # the connector refuses the second row for key 7
    ("UPDATE {t} SET zz = 1 WHERE id = 2", "driver"),
    ("UPDATE {t} SET n = 'abc' WHERE id = 2", "driver"),
    ("UPDATE {t} SET n = 1 WHERE id = '2'", "driver"),
    ("DELETE FROM {t} WHERE id = 3", "driver"),
    ("DELETE FROM {t} AS d WHERE d.id IN (3, 4, 99) AND v <> 'v4'", "driver"),
    ("DELETE FROM {t} WHERE id = 3 AND n / 0 = 1", "driver"),
    # what the driver leaves to Spark: no key named by literals, a key literal or a clause it does not type
    ("UPDATE {t} SET n = 1 WHERE id = 2 OR id = 3", "scan"),
    # no index on v: a small table (page sources, or local files of at most 4 MB) is read whole on the driver tier
    ("UPDATE {t} SET n = 1 WHERE v = 'v3'", "scan"),
    ("UPDATE {t} SET n = n + 100 WHERE v IN ('v3', 'v4', 'v9') AND n > 3", "scan"),
    ("UPDATE {t} SET n = 1 WHERE id = 2147483648", "spark"),  # 2147483648: its negation is an INTEGER
    ("UPDATE {t} AS x SET v = x.v || 'y' WHERE x.id = 3", "driver"),
    ("UPDATE {t} AS x SET v = x.v || x.n WHERE x.id = 3", "driver"),  # the integer as CAST(n AS VARCHAR) prints it
    ("DELETE FROM {t} WHERE id = NULL", "scan"),  # no key named by a literal: the table read whole
    ("DELETE FROM {t} WHERE id IN (NULL, 3)", "scan"),
]


@pytest.mark.parametrize("connector", ["journal", "sqldb", *MERGE_TABLES])
def test_an_update_or_delete_by_key_agrees_on_both_tiers(spark, tmp_path, connector: str) -> None:
    engine = Engine(spark=spark, catalogs={"lake": _catalog(connector, tmp_path)})
    keyed = KEYED.replace("v varchar", "v varchar DEFAULT 'dv'")
    try:
        for i, (sql, tier) in enumerate(KEYED_DML):
            if connector in SUBSETS and i not in SUBSETS[connector]["keyed_dml"]:
                continue
            outcomes = []
            for run in ("auto", "off"):
                name = f"u{next(_tables)}"
                _create_keyed(engine, connector, keyed, name)
                engine.execute(f"INSERT INTO {name} VALUES " + ", ".join(f"({i}, 'v{i}', {i})" for i in range(1, 11)))
                engine.execute(f"SET SESSION driver_tier = '{run}'")
                try:
                    result = engine.execute(sql.format(t=name))
                    outcome: tuple = (result.metrics.get("tier"), result.statement, result.row_count)
                except MergekitError as err:
                    outcome = ("error", err.code, str(err).replace(name, "{t}"))
                finally:
                    engine.execute("RESET SESSION driver_tier")
                outcomes.append((*outcome, sorted(engine.execute(f"SELECT * FROM {name}").rows())))
            driver, spark_tier = outcomes
            assert driver[1:] == spark_tier[1:], sql
            assert spark_tier[0] != "driver", sql
            expected = tier
            if tier == "scan":  # a small table, read whole on the driver; a DELETE sqldb runs itself (apply_delete)
                expected = "spark" if connector == "sqldb" and sql.startswith("DELETE") else "driver"
            assert driver[0] in (expected, "error"), sql
    finally:
        engine.close()


def test_an_update_by_key_on_the_driver_runs_no_spark_job_and_commits_once(spark, tmp_path) -> None:
    engine = Engine(spark=spark, catalogs={"lake": _catalog("journal", tmp_path)})
    try:
        engine.execute(KEYED.format(name="k"))
        engine.execute("INSERT INTO k VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")
        (text,) = engine.execute("EXPLAIN UPDATE k SET n = n + 1 WHERE id IN (1, 3)").rows()[0]
        assert "Strategy: index_lookup" in text and "Tier: driver" in text
        with spark_jobs(spark) as jobs:
            updated = engine.execute("UPDATE k SET n = n + 1 WHERE id IN (1, 3)")
            deleted = engine.execute("DELETE FROM k WHERE id = 2")
        assert [(r.statement, r.row_count, r.metrics["tier"]) for r in (updated, deleted)] == [
            ("UPDATE", 2, "driver"),
            ("DELETE", 1, "driver"),
        ]
        assert jobs == []
        assert engine.execute("SELECT * FROM k ORDER BY id").rows() == [(1, "a", 2), (3, "c", 4)]
        assert [r[0] for r in engine.execute("DESCRIBE HISTORY k").rows()] == [3, 2, 1, 0]
    finally:
        engine.close()


# ---- queries: a scan of one table read through the connector (memory and sqldb: no files Spark reads) ----------

WIDE = (
    "CREATE TABLE w (k integer, v varchar, d double, b boolean, dt date, s smallint, dec decimal(10,2), "
    "bg bigint, vc varchar(5), c char(3), ts timestamp, tz timestamp with time zone)"
)
WIDE_ROWS = (
    "INSERT INTO w VALUES (1, 'a', 1.5, true, DATE '2020-01-01', 3, 1.25, 5, 'xy', 'ab', TIMESTAMP '2020-01-01 10:00:00', "
    "TIMESTAMP '2024-03-31 01:30:00.123456 +02:00'), "
    "(2, 'B', nan(), false, DATE '1999-12-31', NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
    "(3, 'é', -0.5, NULL, NULL, -4, -3.50, 9007199254740993, '', 'x', TIMESTAMP '1900-01-01 00:00:00.000001', "
    "TIMESTAMP '1900-01-01 00:00:00 UTC'), "
    "(NULL, NULL, NULL, true, DATE '2020-01-01', 7, 0.01, -1, 'z', NULL, NULL, NULL), "
    "(5, 'a', 2.5, false, DATE '2024-02-29', 7, 10.00, 0, 'q', 'qq', TIMESTAMP '9999-12-31 23:59:59.999999', "
    "TIMESTAMP '2024-10-27 02:30:00 Europe/Berlin')"
)
QUERIES = [
    # (query, the tier it takes when the driver tier is on)
    ("SELECT k, v, d, b, dt, s, dec, bg, vc FROM w", "driver"),
    ("SELECT v, k FROM w WHERE k > 1 AND v <> 'a'", "driver"),
    ("SELECT w.k FROM w WHERE v IS NULL OR NOT b", "driver"),
    ("SELECT x.k, x.dt FROM w AS x WHERE x.dt >= DATE '2020-01-01' ORDER BY dt DESC, k", "driver"),
    ("SELECT k, v FROM w ORDER BY v, k DESC", "driver"),
    ("SELECT k, v FROM w ORDER BY v NULLS FIRST, k NULLS FIRST", "driver"),
    ("SELECT count(*) FROM w", "driver"),
    ("SELECT count(*) AS n FROM w WHERE s = 7", "driver"),
    ("SELECT k FROM w WHERE k * 2 > 3", "driver"),
    ("SELECT k FROM w WHERE s + 32767 > 0", "driver"),
    ("SELECT k, ts, tz FROM w", "driver"),  # timestamps as stored: microseconds, UTC instants
    ("SELECT ts, k FROM w WHERE k IN (3, 5) ORDER BY k", "driver"),
    # what the driver leaves to Spark
    ("SELECT * FROM w", "spark"),  # a char(3) column
    ("SELECT k FROM w WHERE ts > TIMESTAMP '2000-01-01 00:00:00'", "spark"),  # timestamp comparisons
    ("SELECT k, tz FROM w ORDER BY tz", "spark"),
    ("SELECT k, d FROM w ORDER BY d", "spark"),  # NaN's place
    ("SELECT k FROM w WHERE d > 1", "spark"),  # DOUBLE comparisons
    ("SELECT k, c FROM w", "spark"),
    ("SELECT k FROM w WHERE upper(v) = 'A'", "spark"),
    ("SELECT k FROM w ORDER BY k LIMIT 2", "spark"),
    ("SELECT k FROM w ORDER BY k NULLS FIRST, v", "spark"),
    ("SELECT k + 1 AS k1 FROM w", "spark"),
]


def _query_outcome(engine: Engine, sql: str, tier: str) -> tuple:
    engine.execute(f"SET SESSION driver_tier = '{tier}'")
    try:
        result = engine.execute(sql)
    except MergekitError as err:
        return ("error", err.code, str(err))
    finally:
        engine.execute("RESET SESSION driver_tier")
    table = result.to_arrow()
    rows = table.to_pylist()
    if "ORDER BY" not in sql:
        rows = sorted(rows, key=repr)
    return (result.metrics.get("tier", "spark"), [(f.name, f.type) for f in table.schema], repr(rows))


@pytest.mark.parametrize("connector", ["memory", "sqldb", "journal", "partitioned"])
def test_a_query_agrees_on_both_tiers(spark, tmp_path, connector: str) -> None:
    engine = Engine(spark=spark, catalogs={"lake": _catalog(connector, tmp_path)})
    try:
        engine.execute(WIDE)
        engine.execute(WIDE_ROWS)
        for sql, tier in QUERIES:
            driver, spark_tier = _query_outcome(engine, sql, "auto"), _query_outcome(engine, sql, "off")
            assert driver[1:] == spark_tier[1:], sql
            assert spark_tier[0] == "spark", sql
            assert driver[0] == tier, sql
    finally:
        engine.close()


CONSTANT_SELECTS = [
    # (query, the tier it takes when the driver tier is on)
    ("SELECT 1", "driver"),
    ("SELECT 1, 2 + 3, 'x' AS s, NULL, true, DATE '2020-01-01' + 1, 3000000000 * 2", "driver"),
    ("SELECT -5 AS neg, 1 IN (1, 2) AS f, 1 IN (2, NULL) AS g, 'a' AS x, 'b' AS x", "driver"),
    ("SELECT DATE '2020-01-01' AS d, DATE '2020-01-02' - DATE '2020-01-01' AS n, NULL IS NULL, 1 + NULL", "driver"),
    ("SELECT 2147483647 + 1", "error"),
    ("SELECT DATE '9999-12-31' + 1", "error"),
    ("SELECT 'a' || 'b', concat('a', NULL, 'c')", "driver"),
    ("SELECT 'a' || 1, 2 || 0.50 || DATE '2024-02-29' || true", "driver"),
    ("SELECT 'a' || 1.5E0", "spark"),  # (Trino's CAST of a double: 1.5E0)
    ("SELECT 1.5", "driver"),
    ("SELECT 1.5E0, -0.05, 2.5E0 * 2 - 0.25", "driver"),
    ("SELECT DOUBLE '2'", "spark"),
    ("SELECT 0.05 * 2", "spark"),  # DECIMAL arithmetic: Spark's
    ("SELECT -2147483648", "spark"),
]


def test_a_select_of_constants_agrees_on_both_tiers(spark) -> None:
    """``SELECT 1`` (what ``mergekit sql`` is first tried with): the same names, types, nullability, values and
    errors on both tiers."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    try:
        for sql, tier in CONSTANT_SELECTS:
            outcomes = []
            for run in ("auto", "off"):
                engine.execute(f"SET SESSION driver_tier = '{run}'")
                try:
                    result = engine.execute(sql)
                    fields = [(f.name, f.type, f.nullable) for f in result.to_arrow().schema]
                    outcomes.append((result.metrics.get("tier", "spark"), fields, result.rows()))
                except MergekitError as err:
                    outcomes.append(("error", err.code, str(err)))
            engine.execute("RESET SESSION driver_tier")
            (driver, spark_tier) = outcomes
            assert driver[1:] == spark_tier[1:], sql
            assert (driver[0], spark_tier[0]) == (tier, "spark" if tier != "error" else "error"), sql
        assert engine.execute("SELECT 1, 'x' AS s").rows() == [(1, "x")]
        concatenated = (
            "SELECT 'a' || 1, 2 || DECIMAL '0.50' || DATE '2024-02-29' || true, 'a' || 1.5E0, concat('b', -7)"
        )
        assert engine.execute(concatenated).rows() == [("a1", "20.502024-02-29true", "a1.5E0", "b-7")]
    finally:
        engine.close()


def test_a_query_of_known_keys_reads_only_their_rows_on_both_tiers(spark, tmp_path) -> None:
    """``WHERE id = 42`` / ``id IN (...)`` on a journal table: the journal's native scan is then its keyed splits
    (those keys' rows in every file, versions resolved), which the driver tier reads as they are, on a table of any
    size; rows after updates, deletes and re-inserts agree with the Spark tier's."""
    engine = Engine(spark=spark, catalogs={"lake": _catalog("journal", tmp_path)})
    try:
        engine.execute(KEYED.format(name="p"))
        engine.execute("INSERT INTO p SELECT x, 'v' || CAST(x AS varchar), x FROM UNNEST(sequence(1, 2000)) u(x)")
        engine.execute("UPDATE p SET v = 'u' WHERE id % 7 = 0")
        engine.execute("DELETE FROM p WHERE id % 11 = 0")
        engine.execute("INSERT INTO p VALUES (22, 'back', 0), (3000, 'new', 1)")
        for sql in (
            "SELECT * FROM p WHERE id = 42",
            "SELECT id, v FROM p WHERE id IN (7, 11, 22, 3000, 5000) ORDER BY id",
            "SELECT count(*) FROM p WHERE id IN (1, 2, 33) AND n > 1",
        ):
            driver, spark_tier = _query_outcome(engine, sql, "auto"), _query_outcome(engine, sql, "off")
            assert (driver[0], spark_tier[0], driver[1:]) == ("driver", "spark", spark_tier[1:]), sql
        assert engine.execute("SELECT id, v FROM p WHERE id IN (7, 11, 22, 3000, 5000) ORDER BY id").rows() == [
            (7, "u"),
            (22, "back"),
            (3000, "new"),
        ]
        (scan,) = engine.execute("SELECT * FROM p WHERE id = 42").metrics["scans"]
        assert scan == {"table": "lake.default.p", "splits": 1}
    finally:
        engine.close()


def test_a_driver_query_runs_no_spark_job_and_what_it_returns(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    try:
        engine.execute("CREATE TABLE q (id integer, v varchar)")
        engine.execute("INSERT INTO q VALUES (2, 'b'), (1, 'a'), (NULL, 'z'), (3, NULL)")
        with spark_jobs(spark) as jobs:
            ordered = engine.execute("SELECT * FROM q ORDER BY id DESC")
            counted = engine.execute("SELECT count(*) FROM q WHERE v IS NOT NULL")
        assert jobs == []
        assert ordered.rows() == [(3, None), (2, "b"), (1, "a"), (None, "z")]  # NULLs last, as Trino sorts
        assert ordered.metrics == {"scans": [{"table": "lake.default.q", "splits": 1}], "tier": "driver"}
        assert (counted.columns, counted.rows()) == (["_col0"], [(3,)])
        # EXPLAIN names the tier that runs the query: the driver's scan, or Spark's plan and why
        with spark_jobs(spark) as jobs:
            (text,) = engine.execute("EXPLAIN SELECT v FROM q WHERE id > 1 ORDER BY v DESC NULLS FIRST").rows()[0]
            (constants,) = engine.execute("EXPLAIN SELECT 2147483647 + 1 AS big").rows()[0]
        assert jobs == []
        assert text.splitlines() == [
            "Scan lake.default.q: v",
            "  where: id > 1",
            "  order by: v DESC (NULLs first)",
            "Tier: driver (read through the connector, filtered and sorted in Arrow in the engine's process: no Spark "
            "job; a table of more than 100,000 rows is found while reading and left to Spark)",
        ]
        assert constants.splitlines()[-1].startswith("Tier: driver (constants evaluated in Arrow")
        (text,) = engine.execute("EXPLAIN SELECT upper(v) FROM q").rows()[0]
        assert text.startswith("Tier: spark (not a scan of one table)\n== Physical Plan ==")
    finally:
        engine.close()


def test_a_large_table_is_left_to_spark_also_when_read_lazily(spark, monkeypatch) -> None:
    """No connector estimates its rows: the driver stops reading past cost.DRIVER_SCAN_MAX_ROWS and Spark reads the
    table (in parallel); ``stream=True`` (the CLI's reads) takes the driver tier too, whose rows are few, and Spark's
    partition-at-a-time reading for a larger table."""
    import mergekit.planner.cost as cost

    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    try:
        engine.execute("CREATE TABLE q (id integer)")
        engine.execute("INSERT INTO q VALUES 1, 2, 3, 4")
        assert engine.execute("SELECT count(*) FROM q").metrics["tier"] == "driver"
        streamed = engine.execute("SELECT id FROM q", stream=True)
        assert (streamed.metrics["tier"], sorted(streamed.rows())) == ("driver", [(i,) for i in range(1, 5)])
        monkeypatch.setattr(cost, "DRIVER_SCAN_MAX_ROWS", 3)
        larger = engine.execute("SELECT count(*) FROM q")
        assert ("tier" not in larger.metrics, larger.rows()) == (True, [(4,)])
        streamed = engine.execute("SELECT id FROM q", stream=True)
        assert (streamed.table, "tier" in streamed.metrics, sorted(streamed.rows())) == (
            None,
            False,
            [(i,) for i in range(1, 5)],
        )
    finally:
        engine.close()
