"""Bulk loading a merge table from Parquet and CSV files routes every row like INSERT, in one commit."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from mergekit import MergekitError
from mergekit.errors import ErrorCode
from tests.helpers import assert_rows


def _merge_table(run) -> None:  # type: ignore[no-untyped-def]
    run("CREATE MERGE TABLE sales (id INTEGER, yr INTEGER, amount DOUBLE) PARTITION BY RANGE ON (yr)")
    run("CREATE TABLE sales_old (id INTEGER, yr INTEGER, amount DOUBLE)")
    run("CREATE TABLE sales_new (id INTEGER, yr INTEGER, amount DOUBLE)")
    run("ALTER TABLE sales ADD TABLE sales_old AS PARTITION FROM RANGE MINVALUE TO 2020")
    run("ALTER TABLE sales ADD TABLE sales_new AS PARTITION FROM 2020 TO RANGE MAXVALUE")


def test_parquet_and_csv_files_route_like_insert(engine, spark, tmp_path) -> None:
    run = engine.execute
    _merge_table(run)
    rows = pa.table(
        {
            "id": pa.array(range(1, 201), pa.int32()),
            "yr": pa.array([2000 + i % 40 for i in range(200)], pa.int32()),
            "amount": pa.array([float(i) for i in range(200)]),
        }
    )
    pq.write_table(rows.slice(0, 100), tmp_path / "part1.parquet")
    pacsv.write_csv(rows.slice(100), tmp_path / "part2.csv")
    engine.register_dataframe("staged_parquet", spark.read.parquet(str(tmp_path / "part1.parquet")))
    csv = spark.read.option("header", True).schema("id INT, yr INT, amount DOUBLE").csv(str(tmp_path / "part2.csv"))
    engine.register_dataframe("staged_csv", csv)
    assert run("INSERT INTO sales SELECT * FROM staged_parquet").row_count == 100
    assert run("INSERT INTO sales SELECT id, yr, amount FROM staged_csv").row_count == 100
    old = [(r["id"], r["yr"], r["amount"]) for r in rows.to_pylist() if r["yr"] < 2020]
    new = [(r["id"], r["yr"], r["amount"]) for r in rows.to_pylist() if r["yr"] >= 2020]
    assert_rows(run("SELECT * FROM sales_old").rows(), old)
    assert_rows(run("SELECT * FROM sales_new").rows(), new)
    assert run("SELECT count(*) FROM sales").rows() == [(200,)]


def test_a_file_row_that_fits_no_partition_loads_nothing(engine, spark, tmp_path) -> None:
    run = engine.execute
    run("CREATE MERGE TABLE s (id INTEGER, yr INTEGER) PARTITION BY RANGE ON (yr)")
    run("CREATE TABLE s_a (id INTEGER, yr INTEGER)")
    run("ALTER TABLE s ADD TABLE s_a AS PARTITION FROM 2000 TO 2010")
    pq.write_table(
        pa.table({"id": pa.array([1, 2], pa.int32()), "yr": pa.array([2005, 2030], pa.int32())}), tmp_path / "f.parquet"
    )
    engine.register_dataframe("staged", spark.read.parquet(str(tmp_path / "f.parquet")))
    with pytest.raises(MergekitError) as info:
        run("INSERT INTO s SELECT * FROM staged")
    assert info.value.code is ErrorCode.PARTITION_NOT_FOUND
    assert run("SELECT count(*) FROM s").rows() == [(0,)]
