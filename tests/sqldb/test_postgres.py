"""The sqldb connector against a real PostgreSQL server: tables created outside mergekit, MERGE from any query,
key changes, the database's own constraints, delete pushdown, isolation, and failures that must change nothing
and leave no staging table behind."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.session import local_session
from tests.pg_server import fresh_database

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(pg_server: str) -> str:
    return fresh_database(pg_server)


def make_engine(uri: str, **options: Any) -> Engine:
    catalogs = {"pg": {"connector": "sqldb", "uri": uri, **options}}
    return Engine(spark=local_session(), catalogs=catalogs, default_catalog="pg")


@pytest.fixture
def engine(db: str) -> Iterator[Engine]:
    e = make_engine(db)
    yield e
    e.close()


def sql(uri: str, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(uri, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return list(cur.fetchall()) if cur.description else []


def checksum(uri: str, table: str) -> Any:
    return sql(uri, f"SELECT count(*), md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t")[0]


def staging_tables(uri: str) -> list[str]:
    return [r[0] for r in sql(uri, "SELECT tablename FROM pg_tables WHERE tablename LIKE '\\_mk\\_stage\\_%'")]


def make_customers(uri: str, n: int = 10) -> None:
    sql(uri, "CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL, balance numeric(12,2))")
    sql(uri, "INSERT INTO customers SELECT i, 'c' || i, i * 10 FROM generate_series(1, %s) i", (n,))


# ---- tables created outside mergekit --------------------------------------------------------------------------


def test_tables_created_outside_mergekit_are_visible_with_their_types(engine: Engine, db: str) -> None:
    sql(
        db,
        "CREATE TABLE typed (k integer PRIMARY KEY, s smallint, b bigint, n numeric(10,3), r real, d double precision, "
        "t text, v varchar(5), c char(3), f boolean, day date, ts timestamp, tz timestamptz, bin bytea)",
    )
    sql(
        db,
        "INSERT INTO typed VALUES (1, 2, 3, 4.125, 1.5, 2.25, 'text', 'vv', 'ab', true, '2024-02-29', "
        "'2024-02-29 12:34:56.123456', '2024-02-29 12:34:56+00', '\\x00ff'), "
        "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    )
    assert ("typed",) in engine.execute("SHOW TABLES FROM pg.public").rows()
    described = {row[0]: row[1] for row in engine.execute("DESCRIBE pg.public.typed").rows()}
    assert described == {
        "k": "integer",
        "s": "smallint",
        "b": "bigint",
        "n": "decimal(10,3)",
        "r": "real",
        "d": "double",
        "t": "varchar",
        "v": "varchar(5)",
        "c": "char(3)",
        "f": "boolean",
        "day": "date",
        "ts": "timestamp",
        "tz": "timestamp with time zone",
        "bin": "varbinary",
    }
    rows = engine.execute("SELECT * FROM pg.public.typed ORDER BY k").rows()
    assert rows[0][:11] == (
        1,
        2,
        3,
        decimal.Decimal("4.125"),
        1.5,
        2.25,
        "text",
        "vv",
        "ab ",
        True,
        dt.date(2024, 2, 29),
    )
    assert rows[0][11] == dt.datetime(2024, 2, 29, 12, 34, 56, 123456)
    assert rows[0][13] == b"\x00\xff"
    assert rows[1] == (2,) + (None,) * 13
    # the default schema is public: unqualified names work too
    assert engine.execute("SELECT count(*) FROM typed").rows() == [(2,)]


def test_awkward_values_read_as_postgresql_stores_them(engine: Engine, db: str) -> None:
    """Splits are read as CSV from ``COPY ... TO STDOUT``: NULL against the empty string and the text 'NULL',
    delimiters, quotes and newlines inside text, float specials, bytea and a text key chosen by an index lookup."""
    sql(db, "CREATE TABLE odd (k text PRIMARY KEY, s text, r real, d double precision, f boolean, bin bytea)")
    values = [
        ("a", "", 1.1, float("nan"), True, b""),
        ('b,"quoted"', None, float("inf"), float("-inf"), False, b"\x00,\n"),
        ("c\nline", "NULL", -0.0, 1e308, None, None),
        ("d\\slash", 'x","y\r\nz', None, 0.1 + 0.2, True, b"\\x41"),
    ]
    with psycopg.connect(db, autocommit=True) as conn:
        conn.cursor().executemany("INSERT INTO odd VALUES (%s, %s, %s, %s, %s, %s)", values)
    got = sorted(engine.execute("SELECT * FROM pg.public.odd").rows())
    want = sorted(sql(db, "SELECT k, s, r, d, f, bin FROM odd"))
    assert len(got) == 4
    for g, w in zip(got, want, strict=True):
        assert g[:2] == w[:2] and g[4] == w[4] and (g[5] == (None if w[5] is None else bytes(w[5])))
        real = [None if v is None else repr(np.float32(v)) for v in (g[2], w[2])]  # psycopg: 1.1, Spark: 1.100000023
        assert real[0] == real[1] and repr(g[3]) == repr(w[3])  # NaN, infinities and -0.0 exactly
    # the keys with a comma, a quote, a newline and a backslash are found by key (an array literal of text)
    assert engine.execute("DELETE FROM pg.public.odd WHERE k IN ('b,\"quoted\"', 'c\nline', 'd\\slash')").row_count == 3
    engine.execute(
        "MERGE INTO pg.public.odd t USING (VALUES ('a', 'new')) s(k, v) ON t.k = s.k WHEN MATCHED THEN UPDATE SET s = s.v"
    )
    assert sql(db, "SELECT k, s FROM odd") == [("a", "new")]


def test_a_scan_stopped_early_leaves_no_session_behind(engine: Engine, db: str) -> None:
    sql(db, "CREATE TABLE big (id bigint PRIMARY KEY, v text)")
    sql(db, "INSERT INTO big SELECT i, repeat('x', 100) FROM generate_series(1, 200000) i")
    assert len(engine.execute("SELECT * FROM pg.public.big LIMIT 3").rows()) == 3
    assert engine.execute("SELECT count(*) FROM pg.public.big WHERE id % 1000 = 0").rows() == [(200,)]
    idle = sql(db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY%'")
    assert idle == [(0,)]


def test_unsupported_type_is_refused_by_name_when_read(engine: Engine, db: str) -> None:
    sql(db, "CREATE TABLE docs (id int PRIMARY KEY, body jsonb)")
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT * FROM pg.public.docs")
    assert info.value.code is ErrorCode.NOT_SUPPORTED
    assert "Column 'body' of table public.docs has type jsonb" in str(info.value)


def test_table_without_primary_key_is_read_but_not_changed(engine: Engine, db: str) -> None:
    sql(db, "CREATE TABLE log (at int, msg text)")
    sql(db, "INSERT INTO log VALUES (1, 'a'), (2, 'b')")
    assert sorted(engine.execute("SELECT at, msg FROM pg.public.log").rows()) == [(1, "a"), (2, "b")]
    assert engine.execute("INSERT INTO pg.public.log VALUES (3, 'c')").row_count == 1
    for statement in (
        "UPDATE pg.public.log SET msg = 'x' WHERE at = 1",
        "DELETE FROM pg.public.log WHERE msg = 'a' OR at = 2",
        "MERGE INTO pg.public.log t USING (VALUES 1) s(at) ON t.at = s.at WHEN MATCHED THEN DELETE",
    ):
        with pytest.raises(MergekitError) as info:
            engine.execute(statement)
        assert info.value.code is ErrorCode.NOT_SUPPORTED
        assert "Table public.log has no primary key" in str(info.value)
    assert sql(db, "SELECT count(*) FROM log") == [(3,)]


# ---- MERGE, UPDATE and keys ---------------------------------------------------------------------------------


def test_merge_into_postgres_from_any_query(engine: Engine, db: str) -> None:
    make_customers(db, 5)
    result = engine.execute(
        "MERGE INTO pg.public.customers t USING (SELECT * FROM (VALUES (1, 'one', 1.5), (3, NULL, 0), (7, 'seven', 70)) "
        "AS v(id, name, balance)) s ON t.id = s.id "
        "WHEN MATCHED AND s.name IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET name = s.name, balance = t.balance + s.balance "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.balance)"
    )
    assert result.row_count == 3
    assert sql(db, "SELECT id, name, balance FROM customers ORDER BY id") == [
        (1, "one", decimal.Decimal("11.50")),
        (2, "c2", decimal.Decimal("20.00")),
        (4, "c4", decimal.Decimal("40.00")),
        (5, "c5", decimal.Decimal("50.00")),
        (7, "seven", decimal.Decimal("70.00")),
    ]
    assert staging_tables(db) == []


def test_key_swap_by_update_and_merge(engine: Engine, db: str) -> None:
    make_customers(db, 3)
    assert engine.execute("UPDATE pg.public.customers SET id = 3 - id WHERE id IN (1, 2)").row_count == 2
    assert sql(db, "SELECT id, name FROM customers ORDER BY id") == [(1, "c2"), (2, "c1"), (3, "c3")]
    engine.execute(
        "MERGE INTO pg.public.customers t USING (VALUES (1), (3)) s(id) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET id = 4 - t.id"
    )
    assert sql(db, "SELECT id, name FROM customers ORDER BY id") == [(1, "c3"), (2, "c1"), (3, "c2")]
    # moving a key onto a key that stays is the database's primary key violation: nothing changes
    before = checksum(db, "customers")
    with pytest.raises(MergekitError) as info:
        engine.execute("UPDATE pg.public.customers SET id = 2 WHERE id = 1")
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
    assert checksum(db, "customers") == before
    assert staging_tables(db) == []


def test_composite_key(engine: Engine, db: str) -> None:
    sql(db, "CREATE TABLE stock (shop int, item text, qty int NOT NULL, PRIMARY KEY (shop, item))")
    sql(db, "INSERT INTO stock VALUES (1, 'a', 1), (1, 'b', 2), (2, 'a', 3)")
    engine.execute(
        "MERGE INTO pg.public.stock t USING (VALUES (1, 'a', 10), (2, 'b', 20)) s(shop, item, qty) "
        "ON t.shop = s.shop AND t.item = s.item "
        "WHEN MATCHED THEN UPDATE SET qty = t.qty + s.qty WHEN NOT MATCHED THEN INSERT VALUES (s.shop, s.item, s.qty)"
    )
    engine.execute("DELETE FROM pg.public.stock WHERE qty = 2")
    assert sql(db, "SELECT * FROM stock ORDER BY shop, item") == [(1, "a", 11), (2, "a", 3), (2, "b", 20)]


def test_database_constraints_are_constraint_violations(engine: Engine, db: str) -> None:
    make_customers(db, 3)
    sql(db, "ALTER TABLE customers ADD CONSTRAINT positive CHECK (balance >= 0)")
    before = checksum(db, "customers")
    for statement in (
        "INSERT INTO pg.public.customers VALUES (4, 'd', 1), (1, 'dup', 1)",
        "UPDATE pg.public.customers SET balance = -1 WHERE id = 2",
    ):
        with pytest.raises(MergekitError) as info:
            engine.execute(statement)
        assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION, str(info.value)
    assert checksum(db, "customers") == before
    assert staging_tables(db) == []


def test_created_tables_without_key_get_a_hidden_row_id(engine: Engine, db: str) -> None:
    engine.execute("CREATE TABLE pg.public.notes (n integer, body varchar(20))")
    engine.execute("INSERT INTO pg.public.notes VALUES (1, 'a'), (1, 'b'), (2, 'c')")
    assert engine.execute("UPDATE pg.public.notes SET body = 'x' WHERE n = 1").row_count == 2
    assert sorted(engine.execute("SELECT * FROM pg.public.notes").rows()) == [(1, "x"), (1, "x"), (2, "c")]
    columns = sql(db, "SELECT column_name FROM information_schema.columns WHERE table_name = 'notes' ORDER BY 1")
    assert columns == [("_mk_row_id",), ("body",), ("n",)]


def test_large_merge_reads_only_the_source_keys(engine: Engine, db: str) -> None:
    make_customers(db, 20_000)
    sql(db, "ANALYZE customers")
    src = engine.spark.range(15_000, 25_000).selectExpr(
        "id", "concat('n', id) AS name", "CAST(1 AS DECIMAL(12,2)) AS b"
    )
    result = (
        engine.merge_into("pg.public.customers", source=src, on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({"balance": "t.balance + s.b"})
        .when_not_matched_insert({"id": "s.id", "name": "s.name", "balance": "s.b"})
        .execute()
    )
    assert result.row_count == 10_000
    assert sql(db, "SELECT count(*), sum(balance) FROM customers") == [
        (24_999, decimal.Decimal(sum(i * 10 for i in range(1, 20_001)) + 10_000).quantize(decimal.Decimal("0.01")))
    ]


# ---- delete pushdown ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("merge", [True, False])
def test_delete_pushdown_runs_in_the_database(db: str, merge: bool) -> None:
    make_customers(db, 3000)
    e = make_engine(db, merge=merge)
    sc = e.spark.sparkContext
    group = f"sqldb-pushdown-probe-{merge}"
    try:
        sc.setJobGroup(group, "no Spark job may run in this group")
        try:
            result = e.execute("DELETE FROM pg.public.customers WHERE id < 1000")
        finally:
            sc._jsc.sc().clearJobGroup()
        assert sc.statusTracker().getJobIdsForGroup(group) == []  # no Spark job: the database deleted the rows
        assert result.row_count == 999
        assert result.metrics["pushdown"] is True
        assert "Delete pushdown" in e.execute("EXPLAIN DELETE FROM pg.public.customers WHERE name = 'c5'").rows()[0][0]
        assert e.execute("DELETE FROM pg.public.customers WHERE name IN ('c1000', 'c1001', 'zz')").row_count == 2
        assert e.execute("DELETE FROM pg.public.customers WHERE balance IS NULL").row_count == 0
        # not a conjunction of column-constant comparisons: the row-by-row path
        sc.setJobGroup(group + "-rows", "the row-by-row path runs Spark jobs")
        try:
            result = e.execute("DELETE FROM pg.public.customers WHERE id < 1100 OR id > 5000")
        finally:
            sc._jsc.sc().clearJobGroup()
        assert sc.statusTracker().getJobIdsForGroup(group + "-rows") != []  # the probe sees jobs when there are some
        assert result.metrics.get("pushdown") is not True
        assert result.row_count == 98
    finally:
        e.close()
    assert sql(db, "SELECT count(*), min(id) FROM customers") == [(1901, 1100)]


# ---- isolation and failures ---------------------------------------------------------------------------------


def test_row_locked_by_another_writer_is_a_transaction_conflict(db: str) -> None:
    make_customers(db, 3)
    e = make_engine(db, busy_timeout=1)
    before = checksum(db, "customers")
    try:
        with psycopg.connect(db) as other:
            other.execute("SELECT * FROM customers WHERE id = 2 FOR UPDATE")
            with pytest.raises(MergekitError) as info:
                e.execute("UPDATE pg.public.customers SET name = 'x' WHERE id >= 2")
            assert info.value.code is ErrorCode.TRANSACTION_CONFLICT
            other.rollback()
    finally:
        e.close()
    assert checksum(db, "customers") == before
    assert staging_tables(db) == []


@pytest.mark.parametrize("fault", ["sink_exit:1", "finish"])
@pytest.mark.parametrize("merge", [True, False])
def test_failed_statement_changes_nothing_and_drops_its_staging_table(db: str, fault: str, merge: bool) -> None:
    make_customers(db, 50_000)
    before = checksum(db, "customers")
    e = make_engine(db, merge=merge, fault_injection=fault, batch_rows=5000)
    try:
        with pytest.raises(MergekitError):
            e.execute("UPDATE pg.public.customers SET balance = balance + 1 WHERE id % 3 = 0")
        if merge:
            with pytest.raises(MergekitError):
                e.execute(
                    "MERGE INTO pg.public.customers t USING (SELECT id, name FROM pg.public.customers) s "
                    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = 'x'"
                )
    finally:
        e.close()
    assert checksum(db, "customers") == before
    assert staging_tables(db) == []


def test_a_retried_task_applies_once(db: str, tmp_path: Path) -> None:
    """A separate process with ``local[2,2]`` (a failed task is retried once): the first attempt of a sink kills its
    Python worker on its first page; Spark retries it; the statement commits every row exactly once."""
    make_customers(db, 40_000)
    marker = tmp_path / "died"
    out = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("retry_worker.py")), db, str(marker)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert marker.exists(), "the fault did not fire"
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["row_count"] == 40_000 + 10_000
    assert sql(db, "SELECT count(*), sum(balance) FROM customers") == [
        (
            50_000,
            decimal.Decimal(sum(i * 10 for i in range(1, 40_001)) + 40_000 + 10_000).quantize(decimal.Decimal("0.01")),
        )
    ]
    assert staging_tables(db) == []


def _hand_made_merge(engine: Engine, db: str) -> tuple[Any, Any, Any, Any]:
    """begin_merge on customers and a merge page (UPDATE of id 1 with the row id a scan reads, INSERT of id 3)."""
    import pyarrow as pa

    from mergekit.spi import MERGE_PAGE_LAYOUT, ConnectorSession, SchemaTableName

    connector = engine.catalog("pg")
    meta = connector.get_metadata()
    session = ConnectorSession(catalog="pg")
    handle = meta.get_table_handle(session=session, table=SchemaTableName(schema="public", table="customers"))
    row_id = meta.get_merge_row_id_column_handle(session=session, table_handle=handle)
    assert row_id.type == pa.struct([("id", pa.int64()), ("_mk_xmin", pa.int64())])  # the key and the row version
    ((xmin,),) = sql(db, "SELECT xmin::text::bigint FROM customers WHERE id = 1")
    merge = meta.begin_merge(session=session, table_handle=handle, update_case_columns={0: []})
    data = pa.schema([("id", pa.int64()), ("name", pa.string()), ("balance", pa.decimal128(12, 2))])
    page = pa.RecordBatch.from_arrays(
        [
            pa.array([1, 3], pa.int64()),
            pa.array(["one", "three"]),
            pa.array([decimal.Decimal("1.00"), decimal.Decimal("3.00")], pa.decimal128(12, 2)),
            pa.array([3, 1], pa.int8()),  # UPDATE of id 1, INSERT of id 3
            pa.array([0, 1], pa.int32()),
            pa.array([{"id": 1, "_mk_xmin": xmin}, None], row_id.type),
        ],
        schema=MERGE_PAGE_LAYOUT.schema(data, row_id.type),
    )
    return meta, session, merge, page


def test_only_the_attempts_the_fragments_name_are_applied(engine: Engine, db: str) -> None:
    """Two attempts of one writer task (a retry, a speculative copy) both stage and commit their rows; Spark keeps
    one attempt's result, and only that attempt's rows are applied: every row once."""
    make_customers(db, 2)
    meta, session, merge, page = _hand_made_merge(engine, db)
    provider = engine.catalog("pg").get_page_sink_provider()
    attempts = []
    for _ in range(2):
        sink = provider.create_merge_sink(session=session, merge_handle=merge, sink_id=0)
        sink.store_merged_rows(page)
        attempts.append(sink.finish())
    assert sql(db, f"SELECT count(*) FROM {merge.staging.qualified}") == [(4,)]  # both attempts staged
    meta.finish_merge(session=session, merge_handle=merge, fragments=attempts[1])
    assert sql(db, "SELECT id, name, balance FROM customers ORDER BY id") == [
        (1, "one", decimal.Decimal("1.00")),
        (2, "c2", decimal.Decimal("20.00")),
        (3, "three", decimal.Decimal("3.00")),
    ]
    assert staging_tables(db) == []


def test_a_row_changed_after_the_scan_is_a_conflict_not_a_lost_update(engine: Engine, db: str) -> None:
    """The row id carries the row's xmin: a row another writer updated between the scan and the apply is not
    overwritten with values computed from its old version."""
    make_customers(db, 2)
    meta, session, merge, page = _hand_made_merge(engine, db)
    sink = (
        engine.catalog("pg").get_page_sink_provider().create_merge_sink(session=session, merge_handle=merge, sink_id=0)
    )
    sink.store_merged_rows(page)
    fragments = sink.finish()
    sql(db, "UPDATE customers SET balance = balance + 5 WHERE id = 1")  # another writer, after the scan
    before = checksum(db, "customers")
    with pytest.raises(MergekitError) as info:
        meta.finish_merge(session=session, merge_handle=merge, fragments=fragments)
    assert str(info.value) == (
        "[TRANSACTION_CONFLICT] Table public.customers: 1 of the 1 rows this statement changes were deleted or "
        "changed concurrently"
    )
    meta.abort_merge(session=session, merge_handle=merge)
    assert checksum(db, "customers") == before
    assert staging_tables(db) == []
