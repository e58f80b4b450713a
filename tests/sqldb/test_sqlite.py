"""The sqldb connector on a SQLite file: tables created outside mergekit, keys, pushdown, failures, the CLI's
catalog file."""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mergekit import Engine
from mergekit.cli.catalogs import load_catalog_config
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.session import local_session

pytestmark = pytest.mark.spark  # engines on local_session(): the shared session


def make_engine(path: Path, **options: Any) -> Engine:
    catalogs = {"db": {"connector": "sqldb", "uri": f"sqlite:///{path}", **options}}
    return Engine(spark=local_session(), catalogs=catalogs, default_catalog="db")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "shop.db"


@pytest.fixture
def engine(path: Path) -> Iterator[Engine]:
    e = make_engine(path)
    yield e
    e.close()


def sql(path: Path, statement: str, params: Any = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(statement, params).fetchall()


def fill(path: Path, statement: str, rows: list[tuple[Any, ...]]) -> None:
    with sqlite3.connect(path) as conn:
        conn.executemany(statement, rows)


def stage_tables(path: Path) -> list[str]:
    return [r[0] for r in sql(path, "SELECT name FROM sqlite_master WHERE name LIKE '\\_mk\\_stage\\_%' ESCAPE '\\'")]


def test_tables_created_outside_mergekit(engine: Engine, path: Path) -> None:
    sql(
        path,
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(8,2), day DATE, ok BOOLEAN)",
    )
    sql(path, "INSERT INTO items VALUES (1, 'a', 1.5, '2024-01-02', 1), (2, 'b', NULL, NULL, 0)")
    assert engine.execute("SHOW TABLES").rows() == [("items",)]
    assert sorted(engine.execute("SELECT * FROM db.main.items").rows()) == [
        (1, "a", decimal.Decimal("1.50"), dt.date(2024, 1, 2), True),
        (2, "b", None, None, False),
    ]
    engine.execute(
        "MERGE INTO items t USING (VALUES (2, 'B'), (3, 'c')) s(id, name) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)"
    )
    assert sql(path, "SELECT id, name FROM items ORDER BY id") == [(1, "a"), (2, "B"), (3, "c")]
    assert engine.execute("UPDATE items SET id = 3 - id WHERE id < 3").row_count == 2  # a key swap
    assert sql(path, "SELECT id, name FROM items ORDER BY id") == [(1, "B"), (2, "a"), (3, "c")]
    assert stage_tables(path) == []


def test_unknown_type_and_missing_key(engine: Engine, path: Path) -> None:
    sql(path, "CREATE TABLE odd (id INTEGER PRIMARY KEY, shape GEOMETRY)")
    sql(path, "CREATE TABLE log (at INT, msg TEXT)")
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT * FROM odd")
    assert info.value.code is ErrorCode.NOT_SUPPORTED and "Column 'shape' of table main.odd" in str(info.value)
    with pytest.raises(MergekitError) as info:
        engine.execute("UPDATE log SET msg = 'x' WHERE at = 1")
    assert info.value.code is ErrorCode.NOT_SUPPORTED and "Table main.log has no primary key" in str(info.value)


def test_constraint_violation_changes_nothing(engine: Engine, path: Path) -> None:
    engine.execute("CREATE TABLE k (id BIGINT PRIMARY KEY, v VARCHAR)")
    engine.execute("INSERT INTO k VALUES (1, 'a'), (2, 'b')")
    with pytest.raises(MergekitError) as info:
        engine.execute("INSERT INTO k VALUES (3, 'c'), (1, 'dup')")
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
    assert sql(path, "SELECT id, v FROM k ORDER BY id") == [(1, "a"), (2, "b")]
    assert stage_tables(path) == []


@pytest.mark.parametrize("merge", [True, False])
def test_delete_pushdown(path: Path, merge: bool) -> None:
    e = make_engine(path, merge=merge)
    try:
        e.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, s VARCHAR, f BOOLEAN)")
        fill(path, "INSERT INTO t VALUES (?, ?, ?)", [(i, str(i), i % 2 == 0) for i in range(1, 2001)])
        result = e.execute("DELETE FROM t WHERE id < 1000 AND f = TRUE")
        assert (result.row_count, result.metrics["pushdown"]) == (499, True)
        assert e.execute("DELETE FROM t WHERE s IN ('1999', '1998', 'x') AND id >= 1998").row_count == 2
        assert e.execute("SELECT count(*) FROM t").rows() == [(1499,)]
    finally:
        e.close()


@pytest.mark.parametrize("fault", ["sink_exit:1", "finish"])
@pytest.mark.parametrize("merge", [True, False])
def test_failures_change_nothing(path: Path, fault: str, merge: bool) -> None:
    setup = make_engine(path)
    setup.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
    fill(path, "INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(1, 30001)])
    setup.close()
    before = sql(path, "SELECT count(*), sum(v), sum(v * id) FROM t")
    e = make_engine(path, merge=merge, fault_injection=fault, batch_rows=5000)
    try:
        with pytest.raises(MergekitError):
            e.execute("UPDATE t SET v = v + 1 WHERE id % 2 = 0")
    finally:
        e.close()
    assert sql(path, "SELECT count(*), sum(v), sum(v * id) FROM t") == before
    assert stage_tables(path) == []


def test_catalog_toml(tmp_path: Path, path: Path) -> None:
    config = tmp_path / "catalogs.toml"
    config.write_text(f'[catalogs.shop]\nconnector = "sqldb"\nuri = "sqlite:///{path}"\nmerge = false\n')
    catalogs, default_catalog, _ = load_catalog_config(str(config))
    e = Engine(spark=local_session(), catalogs=catalogs, default_catalog=default_catalog)
    try:
        e.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR)")
        e.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        assert e.execute("UPDATE t SET v = 'z' WHERE v = 'a' OR id > 5").row_count == 1
        assert e.execute("SELECT * FROM shop.default.t ORDER BY id").rows() == [(1, "z"), (2, "b")]
    finally:
        e.close()


def test_bad_catalog_options() -> None:
    for config, message in (
        ({"connector": "sqldb"}, "option 'uri' is required"),
        ({"connector": "sqldb", "uri": "mysql://x/y"}, "unsupported database URI scheme 'mysql'"),
        ({"connector": "sqldb", "uri": "sqlite:///x.db", "merge": "maybe"}, "option 'merge' must be true or false"),
        ({"connector": "sqldb", "uri": "sqlite:///x.db", "bogus": 1}, "unknown option 'bogus'"),
    ):
        with pytest.raises(MergekitError) as info:
            Engine(spark=local_session(), catalogs={"db": config})
        assert info.value.code is ErrorCode.INVALID_ARGUMENTS, str(info.value)
        assert message in str(info.value)
