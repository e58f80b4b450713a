"""Issue 26, a new user's first day: each mistake fails through ``Engine.execute`` with a coded error in words the
user understands (Trino's, where Trino has them), never a Py4J object name, a Spark position or a parser's
internals, and the failed statement changes nothing."""

from __future__ import annotations

import re

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.failures import translate_error

MULTIPLE = ErrorCode.SUBQUERY_MULTIPLE_ROWS
NOT_AGGREGATE = ErrorCode.EXPRESSION_NOT_AGGREGATE
LITERAL = ErrorCode.INVALID_LITERAL
SYNTAX = ErrorCode.SYNTAX_ERROR
MISMATCH = ErrorCode.TYPE_MISMATCH
UNSUPPORTED = ErrorCode.NOT_SUPPORTED

TWO_ROWS = "Scalar sub-query has returned multiple rows"
DATETIME = "(write TIMESTAMP '2024-01-01' or DATE '2024-01-01' for a date-time literal)"

# Spark's and Py4J's internals that must never reach a user
INTERNALS = re.compile(r"\bo\d+\.\w+|\bpos \d+|line \d+, pos|SQLSTATE|Traceback|An error occurred while calling|Py4J")


def _table(engine: Engine) -> list[tuple]:
    return engine.execute("SELECT * FROM t ORDER BY id").rows()


def _refused(engine: Engine, sql: str, code: ErrorCode, message: str) -> MergekitError:
    before = _table(engine)
    with pytest.raises(MergekitError) as raised:
        engine.execute(sql)
    err = raised.value
    assert str(err) == f"[{code.name}] {message}"
    assert err.code is code
    assert not INTERNALS.search(str(err)), str(err)
    assert _table(engine) == before
    return err


@pytest.fixture(scope="module", params=["memory", "journal"])
def lake(request, spark, tmp_path_factory) -> Engine:
    config = {"connector": request.param}
    if request.param == "journal":
        config["warehouse"] = str(tmp_path_factory.mktemp("journal"))
    engine = Engine(spark=spark, catalogs={"lake": config})
    engine.execute("CREATE TABLE t (id INTEGER, v INTEGER, name VARCHAR, ts TIMESTAMP, qty INTEGER)")
    engine.execute(
        "INSERT INTO t VALUES (1, 10, 'a', TIMESTAMP '2024-01-01 00:00:00', 1), "
        "(2, 20, 'b', TIMESTAMP '2024-02-01 00:00:00', 2)"
    )
    engine.execute("CREATE TABLE s (id INTEGER, v INTEGER)")
    engine.execute("INSERT INTO s VALUES (1, 5), (1, 6)")
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def memory(spark) -> Engine:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("CREATE TABLE t (id INTEGER, v INTEGER, name VARCHAR, ts TIMESTAMP, qty INTEGER)")
    engine.execute(
        "INSERT INTO t VALUES (1, 10, 'a', TIMESTAMP '2024-01-01 00:00:00', 1), "
        "(2, 20, 'b', TIMESTAMP '2024-02-01 00:00:00', 2)"
    )
    yield engine
    engine.close()


# ---- row 5: a scalar subquery with several rows, wherever Spark finds out --------------------------------------

SUBQUERIES = [
    "SELECT (SELECT v FROM t)",
    "SELECT id FROM t WHERE v = (SELECT v FROM t)",
    "UPDATE t SET v = (SELECT v FROM t) WHERE id = 1",
    "DELETE FROM t WHERE v = (SELECT v FROM t)",
    "MERGE INTO t USING (SELECT 1 AS id) q ON t.id = q.id WHEN MATCHED THEN UPDATE SET v = (SELECT v FROM t)",
    # correlated: s has two rows for id 1
    "UPDATE t SET v = (SELECT s.v FROM s WHERE s.id = t.id)",
    "DELETE FROM t WHERE v = (SELECT s.v FROM s WHERE s.id = t.id)",
]


@pytest.mark.parametrize("sql", SUBQUERIES)
def test_scalar_subquery_with_several_rows(lake: Engine, sql: str) -> None:
    _refused(lake, sql, MULTIPLE, TWO_ROWS)


def test_scalar_subquery_error_from_a_python_worker() -> None:
    text = (
        "pyspark.errors.exceptions.captured.PythonException: \n  An exception was thrown from the Python worker.\n"
        'Traceback (most recent call last):\n  File "worker.py", line 1, in main\npy4j.protocol.Py4JJavaError: An '
        "error occurred while calling o17545.collectToPython.\n: org.apache.spark.SparkException: "
        "[SCALAR_SUBQUERY_TOO_MANY_ROWS] More than one row returned by a subquery used as an expression. SQLSTATE: 21000"
    )
    assert str(translate_error(RuntimeError(text))) == f"[SUBQUERY_MULTIPLE_ROWS] {TWO_ROWS}"


# Spark failures no statement above reaches any more (the SQL layer refuses them first), as they arrive from Py4J
WRAPPED = [
    (  # Spark's analysis: its position in mergekit's SQL goes, and so do Py4J's object name and the Java class
        "An error occurred while calling o17545.sql.\n: org.apache.spark.sql.AnalysisException: [MISSING_GROUP_BY] "
        "The query does not include a GROUP BY clause. Add GROUP BY or turn it into the window functions using OVER "
        "clauses.; line 1 pos 0;\n'Aggregate [id]",
        "[EXPRESSION_NOT_AGGREGATE] Every expression of the select list must be an aggregate expression or appear in "
        "GROUP BY clause",
    ),
    (
        "An error occurred while calling o133.getResult.\n: org.apache.spark.SparkException: Exception thrown in "
        "awaitResult: \n\tat org.apache.spark.util.SparkThreadUtils\nCaused by: org.apache.spark.SparkException: "
        "[UNKNOWN_CONDITION] What failed. SQLSTATE: 42000\n== SQL (line 1, position 8) ==",
        "[EXECUTION_ERROR] What failed",
    ),
    (  # Spark parses only SQL that mergekit wrote: its syntax error is mergekit's bug, without Spark's position
        "[PARSE_SYNTAX_ERROR] Syntax error at or near '00'. (line 1, pos 23)\n\n== SQL ==\nSELECT 1",
        "[GENERIC_INTERNAL_ERROR] Spark could not parse the SQL mergekit generated for this statement: Syntax error at "
        "or near '00'.",
    ),
    (  # a merge sink that fails in its Python worker: mergekit's task code is on the stack
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n  File "
        '"/site/mergekit/execution/dml/pipeline.py", line 226, in __call__\n    raise\n  File '
        '"/site/mergekit_memory/_connector.py", line 438, in store_merged_rows\n    raise RuntimeError("no")\n'
        "RuntimeError: no",
        "[WRITER_ERROR] Task failed: RuntimeError: no",
    ),
    (  # a Python function of the user's own DataFrame: only the user's frames
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n  File "
        '"/app/job.py", line 21, in boom\n    raise ValueError(x)\nValueError: bad value 0',
        "[FUNCTION_IMPLEMENTATION_ERROR] A Python function failed: ValueError: bad value 0 (in boom, /app/job.py line 21)",
    ),
]


@pytest.mark.parametrize(("text", "expected"), WRAPPED, ids=["analysis", "wrapped", "parse", "sink", "function"])
def test_spark_positions_and_py4j_names_never_reach_the_user(text: str, expected: str) -> None:
    assert str(translate_error(RuntimeError(text))) == expected


# ---- rows 6 to 9 -----------------------------------------------------------------------------------------------

CASES = [
    # 6: a column that is neither aggregated nor grouped
    ("SELECT id, count(*) FROM t", NOT_AGGREGATE, "'id' must be an aggregate expression or appear in GROUP BY clause"),
    ("SELECT name, sum(v) FROM t GROUP BY id", NOT_AGGREGATE, "'name' must be an aggregate expression or appear in GROUP BY clause"),
    ("SELECT count(*) FROM t ORDER BY id", NOT_AGGREGATE, "'id' must be an aggregate expression or appear in GROUP BY clause"),
    ("UPDATE t SET v = (SELECT max(v) + id FROM t)", NOT_AGGREGATE, "'MAX(v) + id' must be an aggregate expression or appear in GROUP BY clause"),
    # 7: typed literals that are no value of their type
    ("INSERT INTO t VALUES (40, 1, 'x', TIMESTAMP '2024-13-45 00:00:00', 1)", LITERAL, "'2024-13-45 00:00:00' is not a valid timestamp literal"),
    ("INSERT INTO t (id, ts) VALUES (40, TIMESTAMP '2024-13-45 00:00:00')", LITERAL, "'2024-13-45 00:00:00' is not a valid timestamp literal"),
    ("SELECT DATE '2024-02-30'", LITERAL, "'2024-02-30' is not a valid date literal"),
    ("UPDATE t SET ts = TIMESTAMP '2024-01-01 24:00:00'", LITERAL, "'2024-01-01 24:00:00' is not a valid timestamp literal"),
    ("DELETE FROM t WHERE ts < TIMESTAMP '2024-01-01 00:00:00 Mars/Olympus'", LITERAL, "'2024-01-01 00:00:00 Mars/Olympus' is not a valid timestamp literal"),
    ("SELECT TIMESTAMP '2024-01-01T00:00:00'", LITERAL, "'2024-01-01T00:00:00' is not a valid timestamp literal"),
    ("SELECT DECIMAL '1.2.3'", LITERAL, "'1.2.3' is not a valid decimal literal"),
    ("SELECT TINYINT '300'", LITERAL, "'300' is not a valid tinyint literal"),
    # ... a CAST is evaluated, and fails as a cast, also inside VALUES (Spark's message there drops the quotes)
    ("INSERT INTO t (id, ts) VALUES (40, CAST('2024-13-45 00:00:00' AS TIMESTAMP))", ErrorCode.INVALID_CAST_ARGUMENT, "Value cannot be cast to timestamp: 2024-13-45 00:00:00"),
    ("INSERT INTO t (id, v) VALUES (40, CAST('abc' AS INTEGER))", ErrorCode.INVALID_CAST_ARGUMENT, "Cannot cast 'abc' to INT"),
    # 8: common mistakes, with the line and column of the user's text
    ("SELEC * FROM t", SYNTAX, "line 1:1: mismatched input 'SELEC'. Expected a statement (did you mean SELECT?)"),
    ("UPDATE t qty = 5", SYNTAX, "line 1:10: SET is missing before 'qty': UPDATE table SET column = value [, ...] [WHERE condition]"),
    ("SELECT `name` FROM t", SYNTAX, "line 1:8: backquoted identifiers are not supported; use double quotes to quote identifiers"),
    ('SELECT * FROM t WHERE name = "a"', ErrorCode.COLUMN_NOT_FOUND, "Column 'a' cannot be resolved (double quotes name a column; for a string use single quotes: 'a')"),
    ("SELECT * FROM t WHERE nme = 'a'", ErrorCode.COLUMN_NOT_FOUND, "Column 'nme' cannot be resolved"),
    ("INSERT INTO t (id, v VALUES (1, 2)", SYNTAX, "line 1:22: mismatched input 'VALUES'. Expecting: ')'"),
    # 9: one comparison rule, Trino's: no implicit casts between text and numbers or datetimes
    ("SELECT * FROM t WHERE id = '1'", MISMATCH, "Cannot apply operator: integer = varchar(1)"),
    ("SELECT * FROM t WHERE ts > '2024-01-01'", MISMATCH, f"Cannot apply operator: timestamp(3) > varchar(10) {DATETIME}"),
    ("SELECT * FROM t WHERE '2024-01-01 10:00' <= ts", MISMATCH, "Cannot apply operator: varchar(16) <= timestamp(3) (write TIMESTAMP '2024-01-01 10:00' for a date-time literal)"),
    ("DELETE FROM t WHERE ts BETWEEN '2024-01-01' AND '2024-12-31'", MISMATCH, f"Cannot check if timestamp(3) is BETWEEN varchar(10) and varchar(10) {DATETIME}"),
    ("SELECT * FROM t WHERE ts IN (TIMESTAMP '2024-01-01 00:00:00', '2024-01-01')", MISMATCH, f"IN value and list items must be the same type: timestamp(3) {DATETIME}"),
    ("UPDATE t SET v = 0 WHERE id IN (1, '2')", MISMATCH, "IN value and list items must be the same type: integer"),
    ("UPDATE t SET v = 0 WHERE name = 1", MISMATCH, "Cannot apply operator: varchar = integer"),
    # ... the table's side of an assignment's types as the table declares them (TIMESTAMP is timestamp(3), as above)
    ("INSERT INTO t (id, ts) VALUES (40, 'x')", MISMATCH, "Insert query has mismatched column types: Table: [integer, timestamp(3)], Query: [integer, varchar]"),
    ("SELECT * FROM t WHERE id == 1", SYNTAX, "line 1:26: mismatched input '=='. Expecting: '=' (SQL compares with a single =)"),
    # a new user's trial (issue 26): a function called with too few or too many arguments, in the name written
    ("SELECT substr('abc')", ErrorCode.FUNCTION_NOT_FOUND, "Unexpected parameters (varchar(3)) for function substr. Expected: substr(string, start[, length])"),
    ("SELECT mod(v, 1, 2) FROM t", ErrorCode.FUNCTION_NOT_FOUND, "Unexpected parameters (integer, integer, integer) for function mod. Expected: mod(n, m)"),
    # ... an ORDER BY or GROUP BY position outside the select list (Trino's code and words)
    ("SELECT id FROM t ORDER BY 5", ErrorCode.INVALID_COLUMN_REFERENCE, "ORDER BY position 5 is not in select list"),
    ("SELECT id, count(*) FROM t GROUP BY 3", ErrorCode.INVALID_COLUMN_REFERENCE, "GROUP BY position 3 is not in select list"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "code", "message"), CASES, ids=[c[0][:60] for c in CASES])
def test_first_day_mistake(memory: Engine, sql: str, code: ErrorCode, message: str) -> None:
    _refused(memory, sql, code, message)


def test_syntax_errors_carry_the_users_line_and_column(memory: Engine) -> None:
    backquotes = "backquoted identifiers are not supported; use double quotes to quote identifiers"
    err = _refused(memory, "SELECT id\nFROM t\nWHERE `v` > 1", SYNTAX, f"line 3:7: {backquotes}")
    assert (err.details["line"], err.details["column"]) == (3, 7)


# ---- the MERGE builder: each piece of SQL it was given is parsed on its own, and a syntax error names it -------

EQUALS = "mismatched input '=='. Expecting: '=' (SQL compares with a single =)"
BUILDER = [
    (lambda b: b, "t.id == s.id", f"in the ON condition 't.id == s.id': line 1:6: {EQUALS}", (1, 6)),
    (
        lambda b: b.when_matched_update({"name": "s.name"}, condition="s.name = 'x"),
        "t.id = s.id",
        "in the WHEN MATCHED condition 's.name = 'x': line 1:10: unterminated string literal: 'x",
        (1, 10),
    ),
    (
        lambda b: b.when_matched_update({"name": "s.name ||"}),
        "t.id = s.id",
        "in the value for column name 's.name ||': line 1:8: the expression ends after '||'; expected an operand",
        (1, 8),
    ),
    (
        lambda b: b.when_not_matched_insert({"id": "s.id", "name": "upper(s.name) +\n  "}),
        "t.id = s.id",
        "in the value for column name 'upper(s.name) +\n  ': line 1:15: the expression ends after '+'; expected an operand",
        (1, 15),
    ),
    (
        lambda b: b.when_not_matched_by_source_delete(condition="t.v >"),
        "t.id = s.id",
        "in the WHEN NOT MATCHED BY SOURCE condition 't.v >': line 1:5: the expression ends after '>'; expected an operand",
        (1, 5),
    ),
    (
        lambda b: b.when_matched_update({"na me": "s.name"}),
        "t.id = s.id",
        "in the column name 'na me': line 1:4: mismatched input 'me'. Expecting: the end of the expression",
        (1, 4),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("clauses", "on", "message", "where"), BUILDER, ids=[b[2][:40] for b in BUILDER])
def test_builder_syntax_errors_name_the_piece(memory: Engine, spark, clauses, on: str, message: str, where) -> None:
    source = spark.createDataFrame([(1, "x")], "id INT, name STRING")
    before = _table(memory)
    with pytest.raises(MergekitError) as raised:
        clauses(memory.merge_into("t", source=source, on=on)).when_matched_delete().execute()
    assert str(raised.value) == f"[SYNTAX_ERROR] {message}"
    assert (raised.value.details["line"], raised.value.details["column"]) == where
    assert _table(memory) == before


# ---- a user's DataFrame that fails while mergekit reads it: the cause kept, a user's code ----------------------


def test_a_malformed_record_in_a_users_file(memory: Engine, spark, tmp_path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("id,v\n1,2\n2,abc\n")
    frame = spark.read.option("mode", "FAILFAST").option("header", "true").schema("id INT, v INT").csv(str(path))
    memory.register_dataframe("csvsrc", frame)
    try:
        message = f'Malformed record [2,null] in file file://{path}: "abc" is not a number'
        for sql in ("INSERT INTO t (id, v) SELECT id, v FROM csvsrc", "SELECT * FROM csvsrc"):
            _refused(memory, sql, ErrorCode.INVALID_CAST_ARGUMENT, message)
    finally:
        memory.unregister_dataframe("csvsrc")


def test_a_failing_python_function_of_a_users_dataframe(memory: Engine, spark) -> None:
    from pyspark.sql.functions import udf

    def boom(x):  # no type hints: Spark would read them as a pandas UDF's
        raise ValueError(f"bad value {x}")

    line = boom.__code__.co_firstlineno + 1
    memory.register_dataframe("udfsrc", spark.range(1).select(udf(boom, "int")("id").alias("x")))
    try:
        for sql in ("SELECT * FROM udfsrc", "INSERT INTO t (id) SELECT x FROM udfsrc"):
            err = _refused(
                memory,
                sql,
                ErrorCode.FUNCTION_IMPLEMENTATION_ERROR,
                f"A Python function failed: ValueError: bad value 0 (in boom, {__file__} line {line})",
            )
            assert err.code.type.value == "INTERNAL_ERROR"
    finally:
        memory.unregister_dataframe("udfsrc")


SERIALS = [
    ("CREATE TABLE x (c SERIAL)", "Type SERIAL", "c", "INTEGER"),
    ("CREATE TABLE x (id INTEGER, big BIGSERIAL)", "Type BIGSERIAL", "big", "BIGINT"),
    ("CREATE TABLE x (c SMALLSERIAL, d INTEGER)", "Type SMALLSERIAL", "c", "SMALLINT"),
    ("CREATE TABLE x (c INTEGER AUTO_INCREMENT)", "AUTO_INCREMENT", "c", "INTEGER or BIGINT"),
    ("CREATE TABLE x (c INTEGER IDENTITY)", "IDENTITY", "c", "INTEGER or BIGINT"),
    ("CREATE TABLE x (c BIGINT GENERATED ALWAYS AS IDENTITY)", "GENERATED AS IDENTITY", "c", "INTEGER or BIGINT"),
    ("ALTER TABLE t ADD COLUMN c SERIAL", "Type SERIAL", "c", "INTEGER"),
]


@pytest.mark.parametrize(("sql", "kind", "column", "type_name"), SERIALS, ids=[s[1] for s in SERIALS])
def test_auto_increment_columns_are_refused_by_name(
    memory: Engine, sql: str, kind: str, column: str, type_name: str
) -> None:
    message = (
        f"{kind} is not supported (column {column}): mergekit does not generate column values. Declare {column} "
        f"{type_name} and give each row its value when you insert it (for example from a sequence of your own, or "
        f"max({column}) + row_number() OVER (ORDER BY ...) in INSERT ... SELECT)"
    )
    _refused(memory, sql, UNSUPPORTED, message)
    assert memory.execute("SHOW TABLES").rows() == [("t",)]


def test_aggregates_and_datetime_comparisons_that_trino_accepts(memory: Engine) -> None:
    assert memory.execute("SELECT id, count(*) FROM t GROUP BY id ORDER BY id").rows() == [(1, 1), (2, 1)]
    assert memory.execute("SELECT t.id AS k, max(v) FROM t GROUP BY 1 ORDER BY k").rows() == [(1, 10), (2, 20)]
    assert memory.execute("SELECT count(*) FILTER (WHERE v > 10), sum(v) OVER () FROM t GROUP BY v").rows() in (
        [(0, 30), (1, 30)],
        [(1, 30), (0, 30)],
    )
    assert memory.execute("SELECT id FROM t WHERE ts > TIMESTAMP '2024-01-15 00:00:00'").rows() == [(2,)]
    assert memory.execute("SELECT id FROM t WHERE ts > DATE '2024-01-15'").rows() == [(2,)]
    assert memory.execute("SELECT id FROM t WHERE ts BETWEEN DATE '2024-01-01' AND DATE '2024-01-02'").rows() == [(1,)]
    assert (
        memory.execute("SELECT DATE '2024-02-29', TIMESTAMP '2024-1-2 3:04'").rows()[0][0].isoformat() == "2024-02-29"
    )


# ---- row 17: procedure arguments are checked for every procedure of every connector ---------------------------


@pytest.fixture(scope="module")
def journal(spark, tmp_path_factory) -> Engine:
    """A journal catalog and a partitioned one over a journal base (whose procedures are the base's)."""
    root = tmp_path_factory.mktemp("procedures")
    engine = Engine(
        spark=spark,
        catalogs={
            "lake": {"connector": "journal", "warehouse": str(root / "journal")},
            "parts": {"connector": "partitioned", "warehouse": str(root / "parts")},
        },
    )
    for catalog in ("lake", "parts"):
        engine.execute(f"CREATE TABLE {catalog}.default.t (id INTEGER, v INTEGER, PRIMARY KEY (id))")
        engine.execute(f"INSERT INTO {catalog}.default.t VALUES (1, 10), (2, 20)")
    yield engine
    engine.close()


COMPACT = "compact takes: table, retention"
VACUUM = "vacuum takes: table, retain_seconds, dry_run"
CALLS = [
    ("CALL lake.system.compact(table => 'default.t', bogus => 1)", f"Unknown argument name: bogus ({COMPACT})"),
    ("CALL lake.system.vacuum(table => 'default.t', bogus => 1)", f"Unknown argument name: bogus ({VACUUM})"),
    ("CALL parts.system.compact(table => 'default.t', bogus => 1)", f"Unknown argument name: bogus ({COMPACT})"),
    ("CALL lake.system.compact(table => 'default.t', table => 'default.t')", "Duplicate procedure argument: table"),
    ("CALL lake.system.compact('default.t', table => 'default.t')", f"Duplicate procedure argument: table ({COMPACT})"),
    ("CALL lake.system.compact('default.t', 3, 4)", f"Too many arguments for procedure ({COMPACT})"),
    ("CALL lake.system.vacuum('default.t', 0, true, 1)", f"Too many arguments for procedure ({VACUUM})"),
    ("CALL lake.system.compact(retention => 1)", f"Required procedure argument 'table' is missing ({COMPACT})"),
]


@pytest.mark.parametrize(("sql", "message"), CALLS, ids=[c[0] for c in CALLS])
def test_procedure_arguments_are_checked(journal: Engine, sql: str, message: str) -> None:
    catalog = sql.split()[1].split(".")[0]
    history = journal.execute(f"DESCRIBE HISTORY {catalog}.default.t").rows() if catalog == "lake" else None
    with pytest.raises(MergekitError) as raised:
        journal.execute(sql)
    assert str(raised.value) == f"[INVALID_ARGUMENTS] {message}"
    if history is not None:
        assert journal.execute(f"DESCRIBE HISTORY {catalog}.default.t").rows() == history


def test_procedure_arguments_by_position_and_by_name(journal: Engine) -> None:
    assert journal.execute("CALL lake.system.compact('default.t', 5)").metrics["files_removed"] >= 1
    assert journal.execute("CALL lake.system.vacuum(dry_run => true)").metrics["dry_run"] is True
    assert journal.execute("SELECT * FROM lake.default.t ORDER BY id").rows() == [(1, 10), (2, 20)]


# ---- unknown catalog options and merge-table properties are refused by name -----------------------------------


def test_unknown_catalog_options_are_refused_by_name(spark, tmp_path) -> None:
    memory = "fail_sink_on, modifications, paradigm"
    refused = [
        ({"connector": "memory", "bogus": 1}, f"Catalog 'lake': unknown option 'bogus' (options: {memory})"),
        ({"connector": "csvdir", "root": str(tmp_path), "bogus": 1}, "Catalog 'lake': unknown option 'bogus' (options: root)"),
        (
            {"connector": "partitioned", "base": "memory", "warehouse": str(tmp_path), "bogus": 1},
            f"Catalog 'lake': unknown option 'bogus' (options: {memory})",
        ),
    ]  # fmt: skip
    for config, message in refused:
        with pytest.raises(MergekitError) as raised:
            Engine(spark=spark, catalogs={"lake": config}).execute("SHOW TABLES")
        assert str(raised.value) == f"[INVALID_ARGUMENTS] {message}"
    # the partitioned connector's warehouse is its registry's folder when the base keeps no files
    engine = Engine(
        spark=spark, catalogs={"lake": {"connector": "partitioned", "base": "memory", "warehouse": str(tmp_path)}}
    )
    assert engine.execute("SHOW TABLES").rows() == []
    engine.close()


def test_a_merge_table_property_is_refused_by_name(journal: Engine) -> None:
    message = (
        "Table property 'x' does not exist: a merge table takes no table properties (its child tables take theirs in "
        "CREATE TABLE)"
    )
    before = journal.execute("SHOW TABLES FROM parts.default").rows()
    for sql in (
        "CREATE MERGE TABLE parts.default.m (a INTEGER, b INTEGER) PARTITION BY RANGE ON (a) WITH (x = 1)",
        "CREATE MERGE TABLE parts.default.m (a INTEGER, b INTEGER) WITH (x = 1)",
    ):
        with pytest.raises(MergekitError) as raised:
            journal.execute(sql)
        assert str(raised.value) == f"[INVALID_TABLE_PROPERTY] {message}"
    assert journal.execute("SHOW TABLES FROM parts.default").rows() == before
