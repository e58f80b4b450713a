"""Statements the differential test against PostgreSQL found mergekit running differently (make fuzz N=2000,
seed 16, with the dates and zones features), kept as plain tests through Engine.execute."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError


@pytest.fixture(params=["journal", "memory"])
def engine(spark, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Engine]:
    config = {"connector": request.param}
    if request.param == "journal":
        config["warehouse"] = str(tmp_path / "wh")
    e = Engine(spark=spark, catalogs={"lake": config})
    yield e
    e.close()


def test_values_rows_whose_cells_check_their_own_errors(engine: Engine) -> None:
    """A VALUES cell that raises its own errors (date arithmetic past DATE's range, a varchar(n) cast, a column
    DEFAULT of date arithmetic written as DEFAULT) used to make Spark refuse the whole inline table; each row is now
    evaluated as a row, with Trino's error only where a value fails."""
    engine.execute("CREATE TABLE d (k INTEGER NOT NULL, b DATE DEFAULT (DATE '2020-02-28' + 1))")
    engine.execute("INSERT INTO d VALUES (1, DEFAULT), (2, NULL), (3, DATE '2020-01-01' + 1)")
    assert sorted(engine.execute("SELECT k, b FROM d").rows()) == [
        (1, dt.date(2020, 2, 29)),
        (2, None),
        (3, dt.date(2020, 1, 2)),
    ]
    with pytest.raises(MergekitError) as raised:
        engine.execute("INSERT INTO d VALUES (4, DATE '9999-12-31' + 1), (5, NULL)")
    assert raised.value.code is ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE
    assert "Date out of range: 9999-12-31 + 1" in str(raised.value)
    assert engine.execute("SELECT count(*) FROM d").rows() == [(3,)]
    with pytest.raises(MergekitError) as raised:
        engine.execute("SELECT * FROM (VALUES (CAST(12345 AS VARCHAR(3)))) t(x)")
    assert str(raised.value) == "[INVALID_CAST_ARGUMENT] Value cannot be represented as varchar(3)"


def test_a_when_matched_condition_is_not_evaluated_on_source_rows_that_match_nothing(engine: Engine) -> None:
    """``WHEN MATCHED AND CAST(s.w AS BIGINT) ...`` over a source row 'zz' that matches no target row: Trino and
    PostgreSQL never try the clause on it. Spark turned the drop of rows no clause takes into a filter on the
    source below the join, evaluating the cast on every source row."""
    engine.execute("CREATE TABLE tgt (k INTEGER NOT NULL, c INTEGER)")
    engine.execute("INSERT INTO tgt VALUES (4, 1), (3, 2)")
    source = "(VALUES (4, 2147483646, 'zz'), (1, 3, '12')) AS s(k, x, w)"
    result = engine.execute(
        f"MERGE INTO tgt AS t USING {source} ON t.k = s.x "
        "WHEN MATCHED AND CAST(s.w AS BIGINT) IS NOT NULL THEN UPDATE SET c = t.c + 10"
    )
    assert result.row_count == 1
    assert sorted(engine.execute("SELECT k, c FROM tgt").rows()) == [(3, 12), (4, 1)]
    with pytest.raises(MergekitError) as raised:  # a matched row's condition still fails where Trino's does
        engine.execute(
            "MERGE INTO tgt AS t USING (VALUES (4, 'zz')) AS s(x, w) ON t.k = s.x "
            "WHEN MATCHED AND CAST(s.w AS BIGINT) IS NOT NULL THEN DELETE"
        )
    assert raised.value.code is ErrorCode.INVALID_CAST_ARGUMENT
