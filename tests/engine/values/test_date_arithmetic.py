"""Date arithmetic, an extension to Trino (issue 26, row 18): ``date + integer``, ``integer + date`` and ``date -
integer`` count days and ``date - date`` is the INTEGER number of days between, as in PostgreSQL; a result outside
DATE's range (0001-01-01 to 9999-12-31) fails with NUMERIC_VALUE_OUT_OF_RANGE and changes nothing. Through the
journal connector, whose statements the differential test compares with PostgreSQL."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode

D = dt.date


@pytest.fixture
def engine(spark, tmp_path) -> Engine:
    e = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh")}})
    e.execute("CREATE TABLE t (k INTEGER, d DATE, i INTEGER, b BIGINT, s SMALLINT, PRIMARY KEY (k))")
    e.execute(
        "INSERT INTO t VALUES (1, DATE '2020-01-31', 1, 30, CAST(-1 AS SMALLINT)), "
        "(2, DATE '2024-02-28', -365, 366, CAST(7 AS SMALLINT)), (3, NULL, 5, NULL, NULL)"
    )
    yield e
    e.close()


def _rows(engine: Engine) -> list[tuple]:
    return engine.execute("SELECT k, d FROM t ORDER BY k").rows()


def test_integers_add_and_subtract_days(engine: Engine) -> None:
    result = engine.execute("SELECT k, d + 1, 1 + d, d - 1, d + i, d - b, s + d, d + 0, d - i + i FROM t ORDER BY k")
    assert result.rows() == [
        (1, D(2020, 2, 1), D(2020, 2, 1), D(2020, 1, 30), D(2020, 2, 1), D(2020, 1, 1), D(2020, 1, 30), D(2020, 1, 31), D(2020, 1, 31)),
        (2, D(2024, 2, 29), D(2024, 2, 29), D(2024, 2, 27), D(2023, 2, 28), D(2023, 2, 27), D(2024, 3, 6), D(2024, 2, 28), D(2024, 2, 28)),
        (3, None, None, None, None, None, None, None, None),
    ]  # fmt: skip
    assert all(t == pa.date32() for t in result.to_arrow().schema.types[1:])


def test_date_minus_date_is_an_integer_number_of_days(engine: Engine) -> None:
    result = engine.execute(
        "SELECT k, d - DATE '2020-01-01', DATE '2020-01-01' - d, d - d, (d + 10) - d FROM t ORDER BY k"
    )
    assert result.rows() == [(1, 30, -30, 0, 10), (2, 1519, -1519, 0, 10), (3, None, None, None, None)]
    assert all(t == pa.int32() for t in result.to_arrow().schema.types[1:])


def test_update_merge_and_conditions_compute_dates(engine: Engine) -> None:
    """The issue's statement, a WHERE comparing dates after arithmetic, and a MERGE reading both sides."""
    assert engine.execute("UPDATE t SET d = d + 1").row_count == 3
    assert _rows(engine) == [(1, D(2020, 2, 1)), (2, D(2024, 2, 29)), (3, None)]
    assert engine.execute("UPDATE t SET d = d - 366 WHERE d + 1 > DATE '2024-01-01'").row_count == 1
    assert _rows(engine) == [(1, D(2020, 2, 1)), (2, D(2023, 2, 28)), (3, None)]
    merged = engine.execute(
        "MERGE INTO t USING (VALUES (1, 2), (3, 4), (9, 1)) AS s(k, n) ON t.k = s.k "
        "WHEN MATCHED AND t.d - s.n < DATE '2020-02-01' THEN UPDATE SET d = t.d + s.n * 10 "
        "WHEN NOT MATCHED THEN INSERT (k, d) VALUES (s.k, DATE '2000-01-01' - s.n)"
    )
    assert merged.row_count == 2  # k 3 has no date: its condition is NULL
    assert _rows(engine) == [(1, D(2020, 2, 21)), (2, D(2023, 2, 28)), (3, None), (9, D(1999, 12, 31))]
    assert engine.execute("SELECT k FROM t WHERE d - DATE '2020-01-01' BETWEEN 0 AND 60").rows() == [(1,)]


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SELECT DATE '9999-12-31' + 1", "Date out of range: 9999-12-31 + 1"),
        ("SELECT DATE '0001-01-01' - 1", "Date out of range: 0001-01-01 - 1"),
        ("UPDATE t SET d = d + 2147483647 WHERE k <> 2", "Date out of range: 2020-01-31 + 2147483647"),
        (
            "UPDATE t SET d = b * 100000000000000000 + d WHERE k = 1",
            "Date out of range: 2020-01-31 + 3000000000000000000",
        ),
        ("UPDATE t SET d = d - 9223372036854775807 WHERE k = 2", "Date out of range: 2024-02-28 - 9223372036854775807"),
        ("UPDATE t SET d = d + 2914335 WHERE k = 2", "Date out of range: 2024-02-28 + 2914335"),
        ("DELETE FROM t WHERE d - 800000 * (2 - k) < DATE '1000-01-01'", "Date out of range: 2020-01-31 - 800000"),
    ],
)
def test_a_date_outside_the_range_is_an_error_and_changes_nothing(engine: Engine, statement: str, message: str) -> None:
    before = _rows(engine)
    with pytest.raises(MergekitError) as info:
        engine.execute(statement)
    assert str(info.value) == f"[NUMERIC_VALUE_OUT_OF_RANGE] {message}"
    assert _rows(engine) == before


def test_the_range_ends_are_dates_and_try_gives_null(engine: Engine) -> None:
    assert engine.execute(
        "SELECT DATE '9999-12-30' + 1, DATE '0001-01-02' - 1, DATE '9999-12-31' - DATE '0001-01-01', "
        "TRY(DATE '9999-12-31' + 1), TRY(d - 5000000000) FROM t WHERE k = 1"
    ).rows() == [(D(9999, 12, 31), D(1, 1, 1), 3652058, None, None)]


def test_errors_of_the_day_count_are_its_own(engine: Engine) -> None:
    with pytest.raises(MergekitError) as info:
        engine.execute("UPDATE t SET d = d + i / (k - 1)")
    assert str(info.value) == "[DIVISION_BY_ZERO] Division by zero"
    assert engine.execute("SELECT k, TRY(d + i / (k - 1)) FROM t ORDER BY k").rows() == [
        (1, None),
        (2, D(2023, 2, 28)),
        (3, None),
    ]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("d + 1.5", "Cannot apply operator: date + decimal(2,1)"),
        ("d + 1e0", "Cannot apply operator: date + double"),
        ("1 - d", "Cannot apply operator: integer - date"),
        ("d + d", "Cannot apply operator: date + date"),
        ("d * 2", "Cannot apply operator: date * integer"),
        ("d + '1'", "Cannot apply operator: date + varchar(1)"),
        ("d - CAST(d AS TIMESTAMP)", "Cannot apply operator: date - timestamp(3)"),
    ],
)
def test_other_operands_are_refused(engine: Engine, expression: str, message: str) -> None:
    with pytest.raises(MergekitError) as info:
        engine.execute(f"SELECT {expression} FROM t")
    assert info.value.code is ErrorCode.TYPE_MISMATCH
    assert str(info.value) == f"[TYPE_MISMATCH] {message}"
