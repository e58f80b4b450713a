"""Arithmetic and cast failures get Trino's codes and words (DESIGN.md §5: overflow is an error), whichever
statement raised them and wherever Spark evaluated it; never Spark's advice (try_*, turning ANSI mode off), never an
internal error code; and the failed statement changes nothing."""

from __future__ import annotations

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode, ErrorType
from mergekit.execution.failures import translate_error

OUT_OF_RANGE = ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE
BY_ZERO = ErrorCode.DIVISION_BY_ZERO
BAD_CAST = ErrorCode.INVALID_CAST_ARGUMENT

ROW = (
    "(1, CAST(100 AS TINYINT), CAST(30000 AS SMALLINT), 2000000000, 9000000000000000000, 5.00, 'abc', 1.5, "
    "DATE '2020-01-01')"
)

CASES = [
    # UPDATE: assignments evaluated by Spark ahead of the merge sinks (Python workers)
    ("UPDATE evt SET small = small + CAST(127 AS TINYINT)", OUT_OF_RANGE, "tinyint addition overflow: 100 + 127"),
    ("UPDATE evt SET small = small - CAST(-100 AS TINYINT)", OUT_OF_RANGE, "tinyint subtraction overflow: 100 - -100"),
    ("UPDATE evt SET si = si * CAST(2 AS SMALLINT)", OUT_OF_RANGE, "smallint multiplication overflow: 30000 * 2"),
    ("UPDATE evt SET i = i + i", OUT_OF_RANGE, "Numeric overflow in addition"),
    ("UPDATE evt SET b = -b - b", OUT_OF_RANGE, "Numeric overflow in subtraction"),
    ("UPDATE evt SET price = price % 0", BY_ZERO, "Division by zero"),
    ("UPDATE evt SET i = i % 0", BY_ZERO, "Division by zero"),
    ("UPDATE evt SET i = i / 0", BY_ZERO, "Division by zero"),
    ("UPDATE evt SET small = i", OUT_OF_RANGE, "Out of range for tinyint: 2000000000"),
    ("UPDATE evt SET i = CAST(b AS INTEGER)", OUT_OF_RANGE, "Out of range for integer: 9000000000000000000"),
    ("UPDATE evt SET i = CAST(s AS INTEGER)", BAD_CAST, "Cannot cast 'abc' to INT"),
    (
        "UPDATE evt SET price = CAST(s AS DECIMAL(10,2))",
        BAD_CAST,
        "Cannot cast VARCHAR 'abc' to DECIMAL(10, 2). Value is not a number.",
    ),
    ("UPDATE evt SET dt = CAST(s AS DATE)", BAD_CAST, "Value cannot be cast to date: abc"),
    (
        "UPDATE evt SET price = price * 100000000",
        OUT_OF_RANGE,
        "Decimal overflow: 500000000.00 does not fit in DECIMAL(10, 2)",
    ),
    # MERGE: matched updates and not-matched inserts
    (
        "MERGE INTO evt t USING (VALUES (1, 100)) s(id, v) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET small = t.small + CAST(s.v AS TINYINT)",
        OUT_OF_RANGE,
        "tinyint addition overflow: 100 + 100",
    ),
    (
        "MERGE INTO evt t USING (VALUES (1, 0)) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET price = t.price % s.v",
        BY_ZERO,
        "Division by zero",
    ),
    (
        "MERGE INTO evt t USING (VALUES (2, 1000)) s(id, v) ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, small) VALUES (s.id, CAST(s.v AS TINYINT))",
        OUT_OF_RANGE,
        "Out of range for tinyint: 1000",
    ),
    (
        "MERGE INTO evt t USING (VALUES (1, 'x')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET i = CAST(s.v AS INTEGER)",
        BAD_CAST,
        "Cannot cast 'x' to INT",
    ),
    # INSERT ... SELECT and DELETE
    (
        "INSERT INTO evt (id, small) SELECT 2, small + CAST(127 AS TINYINT) FROM evt",
        OUT_OF_RANGE,
        "tinyint addition overflow: 100 + 127",
    ),
    ("INSERT INTO evt (id, b) SELECT 2, b * 2 FROM evt", OUT_OF_RANGE, "Numeric overflow in multiplication"),
    ("INSERT INTO evt (id, i) SELECT 2, CAST(s AS INTEGER) FROM evt", BAD_CAST, "Cannot cast 'abc' to INT"),
    ("INSERT INTO evt (id, small) SELECT 2, si FROM evt", OUT_OF_RANGE, "Out of range for tinyint: 30000"),
    ("DELETE FROM evt WHERE i / 0 = 1", BY_ZERO, "Division by zero"),
    # SELECT
    ("SELECT price % 0 FROM evt", BY_ZERO, "Division by zero"),
    ("SELECT small * CAST(2 AS TINYINT) FROM evt", OUT_OF_RANGE, "tinyint multiplication overflow: 100 * 2"),
    ("SELECT CAST(s AS BOOLEAN) FROM evt", BAD_CAST, "Cannot cast 'abc' to BOOLEAN"),
    ("SELECT CAST(d * 1e308 * 10 AS BIGINT) FROM evt", BAD_CAST, "Unable to cast Infinity to bigint"),
    ("SELECT CAST(d * nan() AS INTEGER) FROM evt", BAD_CAST, "Cannot cast double NaN to integer"),
    ("SELECT CAST(s AS TIMESTAMP) FROM evt", BAD_CAST, "Value cannot be cast to timestamp: abc"),
]


@pytest.fixture(scope="module", params=["memory", "journal"])
def evt(request, spark, tmp_path_factory) -> tuple[Engine, list]:
    """One table per catalog for all cases, and its rows: each case checks that its failure left it as it was."""
    config = {"connector": request.param}
    if request.param == "journal":
        config["warehouse"] = str(tmp_path_factory.mktemp("journal"))
    engine = Engine(spark=spark, catalogs={"lake": config})
    engine.execute(
        "CREATE TABLE evt (id INTEGER, small TINYINT, si SMALLINT, i INTEGER, b BIGINT, price DECIMAL(10,2), "
        "s VARCHAR, d DOUBLE, dt DATE)"
    )
    engine.execute(f"INSERT INTO evt VALUES {ROW}")
    yield engine, engine.execute("SELECT * FROM evt ORDER BY id").rows()
    engine.close()


@pytest.mark.parametrize(("sql", "code", "message"), CASES, ids=[c[0][:60] for c in CASES])
def test_arithmetic_failure_has_trinos_code_and_words(
    evt: tuple[Engine, list], sql: str, code: ErrorCode, message: str
) -> None:
    engine, rows_at_start = evt
    assert len(rows_at_start) == 1  # the one ROW
    with pytest.raises(MergekitError) as raised:
        engine.execute(sql)
    err = raised.value
    assert (err.code, err.message) == (code, message)
    assert str(err) == f"[{code.name}] {message}"
    assert err.code.type is ErrorType.USER_ERROR
    text = str(err).lower()
    assert "ansi" not in text and "try_" not in text and "sqlstate" not in text
    assert engine.execute("SELECT * FROM evt ORDER BY id").rows() == rows_at_start


# The same failures as they reach the driver from inside a task: in a Py4J Java stack, or in a Python worker's
# traceback (a merge sink's input failing upstream), with Spark's advice appended.
WRAPPED = [
    (
        "An error occurred while calling o46.collectToPython.\n: org.apache.spark.SparkException: Job aborted due to "
        "stage failure: Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 in stage 3.0 (TID 3) "
        "(192.0.2.2 executor driver): org.apache.spark.SparkArithmeticException: [ARITHMETIC_OVERFLOW] long overflow. "
        "Use 'try_multiply' to tolerate overflow and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" "
        'to "false" to bypass this error. SQLSTATE: 22003\n\tat org.apache.spark.sql.errors.ExecutionErrors'
        ".arithmeticOverflowError(ExecutionErrors.scala:150)",
        OUT_OF_RANGE,
        "bigint multiplication overflow",
    ),
    (
        "pyspark.errors.exceptions.captured.PythonException: \n  An exception was thrown from the Python worker. "
        'Please see the stack trace below.\nTraceback (most recent call last):\n  File "worker.py", line 1, in main\n'
        "py4j.protocol.Py4JJavaError: org.apache.spark.SparkArithmeticException: [BINARY_ARITHMETIC_OVERFLOW] 100S + "
        "127S caused overflow. Use `try_add` to ignore overflow problem and return NULL. SQLSTATE: 22003",
        OUT_OF_RANGE,
        "tinyint addition overflow: 100 + 127",
    ),
    (
        "org.apache.spark.SparkException: Task failed while writing rows.\nCaused by: "
        "org.apache.spark.SparkArithmeticException: [REMAINDER_BY_ZERO] Remainder by zero. Use `try_mod` to tolerate "
        'divisor being 0 and return NULL instead. If necessary set "spark.sql.ansi.enabled" to "false" to bypass this '
        "error. SQLSTATE: 22012",
        BY_ZERO,
        "Division by zero",
    ),
    (
        "Caused by: org.apache.spark.SparkArithmeticException: [NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION]  "
        '123456789.00 cannot be represented as Decimal(10, 2). If necessary set "spark.sql.ansi.enabled" to '
        '"false" to bypass this error, and return NULL instead. SQLSTATE: 22003',
        OUT_OF_RANGE,
        "Decimal overflow: 123456789.00 does not fit in DECIMAL(10, 2)",
    ),
    (
        "Caused by: org.apache.spark.SparkArithmeticException: [DATETIME_OVERFLOW] Datetime operation overflow: add "
        "2147483647L DAY to TIMESTAMP '1970-01-01 00:00:00'. SQLSTATE: 22008",
        OUT_OF_RANGE,
        "Datetime overflow: add 2147483647 DAY to TIMESTAMP '1970-01-01 00:00:00'",
    ),
]


@pytest.mark.parametrize(("text", "code", "message"), WRAPPED, ids=[w[2][:40] for w in WRAPPED])
def test_wrapped_spark_arithmetic_errors_are_recognised(text: str, code: ErrorCode, message: str) -> None:
    err = translate_error(RuntimeError(text))
    assert (err.code, err.message) == (code, message)
