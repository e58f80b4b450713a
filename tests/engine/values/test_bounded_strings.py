"""VARCHAR(n) and CHAR(n) lengths are enforced where values reach a table (mergekit/execution/lengths.py), as Trino
and PostgreSQL do: a longer value fails the statement and changes nothing, unless only spaces are past the n-th
character (they are cut). Every path that writes is covered: INSERT, UPDATE, MERGE through the Spark plan, MERGE by
index lookups, ``Engine.insert_arrow`` and the row-level SPI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from tests.rowlevel.rowlevel_connector import RowLevelConnector

pytestmark = pytest.mark.spark


@pytest.fixture
def lake(spark: Any, tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh")}})
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR(3), c CHAR(3), free VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'abc', 'xyz', 'anything at all')")
    yield engine
    engine.close()


def rows(engine: Engine, table: str = "t") -> list[tuple[Any, ...]]:
    return sorted(engine.execute(f"SELECT * FROM {table}").rows())


def refused(engine: Engine, statement: str) -> str:
    before = rows(engine)
    with pytest.raises(MergekitError) as caught:
        engine.execute(statement)
    assert caught.value.code is ErrorCode.INVALID_CAST_ARGUMENT
    assert rows(engine) == before  # nothing of the statement is written
    return caught.value.message


def test_a_longer_value_fails_insert_update_and_merge_and_changes_nothing(lake: Engine) -> None:
    message = refused(lake, "INSERT INTO t VALUES (2, 'ok', 'ok', 'x'), (3, 'abcd', 'ok', 'x')")
    assert message == (
        "Cannot truncate non-space characters when casting from varchar(4) to varchar(3) on INSERT: column v, "
        "value 'abcd'"
    )
    assert "to char(3) on UPDATE: column c, value 'wxyz'" in refused(lake, "UPDATE t SET c = 'wxyz'")
    merge = (
        "MERGE INTO t USING (VALUES (1, 'four'), (9, 'ok')) AS s(id, v) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    assert "on MERGE: column v, value 'four'" in refused(lake, merge)
    assert "value 'toolong'" in refused(lake, "INSERT INTO t (id, v) SELECT 7, 'toolong'")


def test_spaces_past_the_length_are_cut_and_lengths_count_characters(lake: Engine) -> None:
    lake.execute("INSERT INTO t VALUES (2, 'ab     ', 'x    ', 'long text is free   ')")
    lake.execute("INSERT INTO t VALUES (3, 'héé', 'ñ  ', NULL)")  # 3 characters, 5 bytes: fits
    assert rows(lake)[1:] == [(2, "ab ", "x  ", "long text is free   "), (3, "héé", "ñ  ", None)]
    lake.execute("UPDATE t SET v = 'z    ' WHERE id = 1")
    assert rows(lake)[0] == (1, "z  ", "xyz", "anything at all")
    assert "varchar(4) to varchar(3)" in refused(lake, "UPDATE t SET v = 'héll' WHERE id = 3")
    # an UPDATE of another column leaves a fitting value alone; NULL is always fine
    lake.execute("UPDATE t SET free = 'y', v = NULL WHERE id = 2")
    assert rows(lake)[1] == (2, None, "x  ", "y")


def test_merge_by_index_lookups_fits_values_too(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mergekit.planner.cost as cost

    monkeypatch.setattr(cost, "LOOKUP_MIN_KEYS", -1)  # every source with a key estimate takes the lookup path
    warehouse = {"connector": "journal", "warehouse": str(tmp_path / "wh"), "version_type": "bigint"}
    engine = Engine(spark=spark, catalogs={"lake": warehouse})  # no CHAR column: a table with one runs the Spark plan
    try:
        engine.execute("CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR(3), PRIMARY KEY (id))")  # the index
        engine.execute("INSERT INTO t VALUES (1, 'abc')")
        merge = (
            "MERGE INTO t USING s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
        )
        for i, (value, fits) in enumerate([("ok   ", True), ("four", False)]):
            path = str(tmp_path / f"s{i}")
            spark.createDataFrame([(1, value)], "id BIGINT, v STRING").write.parquet(path)
            engine.register_dataframe("s", spark.read.parquet(path))
            if fits:
                result = engine.execute(merge)
                assert result.metrics["strategy"] == "index_lookup", result.metrics
                assert rows(engine) == [(1, "ok ")]
            else:
                assert "value 'four'" in refused(engine, merge)
    finally:
        engine.close()


def test_insert_arrow_checks_lengths_on_the_driver(lake: Engine) -> None:
    before = rows(lake)
    with pytest.raises(MergekitError) as caught:
        lake.insert_arrow("t", pa.table({"id": [5, 6], "v": ["ab", "abcd"]}))
    assert caught.value.code is ErrorCode.INVALID_CAST_ARGUMENT
    assert "on INSERT: column v, value 'abcd'" in str(caught.value)
    assert rows(lake) == before  # nothing of it written
    result = lake.insert_arrow("t", pa.table({"id": [5], "v": ["ab  "]}))
    assert result.metrics["strategy"] == "driver_append"
    assert rows(lake)[-1] == (5, "ab ", None, None)


def test_the_row_level_spi_fits_updated_values(spark: Any, tmp_path: Path) -> None:
    engine = Engine(spark=spark, catalogs={"lake": RowLevelConnector(str(tmp_path))})
    try:
        engine.execute("CREATE TABLE t (id BIGINT, v VARCHAR(3))")
        engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        engine.execute("UPDATE t SET v = 'cc   ' WHERE id = 1")
        assert rows(engine) == [(1, "cc "), (2, "b")]
        assert "on UPDATE: column v, value 'dddd'" in refused(engine, "UPDATE t SET v = 'dddd' WHERE id = 2")
    finally:
        engine.close()
