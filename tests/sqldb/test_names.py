"""Names with upper-case letters, as psql and the sqlite3 shell create them (quoted): a quoted name reaches the
database's name exactly, an unquoted one its lower-case name or else the one name equal to it ignoring case; column
names ignore case. Every statement kind, on PostgreSQL and SQLite."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.helpers import error_of
from tests.sqldb.dbs import Db, database  # noqa: F401 - the fixture of both databases

pytestmark = pytest.mark.spark


def test_quoted_mixed_case_table_and_columns_in_every_statement(database: Db) -> None:
    db = database
    db.sql('CREATE TABLE "MixedCase" (id INTEGER PRIMARY KEY, "Amount" INTEGER, "Note" TEXT)')
    db.sql("INSERT INTO \"MixedCase\" VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three')")
    full = f'{db.catalog}.{db.schema}."MixedCase"'
    result = db.engine.execute(f"SELECT * FROM {full} ORDER BY id")
    assert result.columns == ["id", "amount", "note"]  # mergekit's column names are lower case
    assert result.rows() == [(1, 10, "one"), (2, 20, "two"), (3, 30, "three")]
    assert db.engine.execute('SELECT "Amount", amount, AMOUNT FROM "MixedCase" WHERE id = 1').rows() == [(10, 10, 10)]
    assert db.engine.execute('INSERT INTO "MixedCase" ("Note", id, "Amount") VALUES (\'four\', 4, 40)').row_count == 1
    assert db.engine.execute(f'UPDATE {full} SET "Amount" = "Amount" + 1 WHERE "Note" = \'one\'').row_count == 1
    assert db.engine.execute('DELETE FROM "MixedCase" WHERE "Amount" = 20').row_count == 1  # pushed down
    assert db.engine.execute('DELETE FROM "MixedCase" WHERE "Amount" + 0 = 30').row_count == 1  # row by row
    merged = db.engine.execute(
        'MERGE INTO "MixedCase" t USING (VALUES (1, 100), (5, 500)) AS s(id, a) ON t.id = s.id '
        'WHEN MATCHED THEN UPDATE SET "Amount" = s.a WHEN NOT MATCHED THEN INSERT (id, "Amount", "Note") '
        "VALUES (s.id, s.a, 'five')"
    )
    assert merged.row_count == 2
    # the database's own names: the rows are where psql / sqlite3 look
    assert db.sql('SELECT id, "Amount", "Note" FROM "MixedCase" ORDER BY id') == [
        (1, 100, "one"),
        (4, 40, "four"),
        (5, 500, "five"),
    ]
    # an unquoted name finds the one database name equal to it ignoring case
    assert db.engine.execute("SELECT count(*) FROM mixedcase").rows() == [(3,)]
    assert db.engine.execute("UPDATE MixedCase SET amount = 0 WHERE id = 5").row_count == 1
    # the row-level SPI writes the same columns
    rows = db.new_engine(merge=False)
    assert rows.execute('UPDATE "MixedCase" SET "Note" = \'x\' WHERE "Amount" + 0 = 40').row_count == 1
    assert db.sql('SELECT "Note" FROM "MixedCase" WHERE id = 4') == [("x",)]
    assert db.staging_tables() == []


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_sqlite_names_ignore_case_even_quoted(database: Db) -> None:
    db = database
    db.sql('CREATE TABLE "Orders" (id INTEGER PRIMARY KEY, "Total" INTEGER)')
    db.engine.execute('INSERT INTO "ORDERS" ("TOTAL", id) VALUES (5, 1)')  # as the sqlite3 shell finds it
    assert db.engine.execute('SELECT "total" FROM "orders"').rows() == [(5,)]
    assert db.sql('SELECT id, "Total" FROM "Orders"') == [(1, 5)]


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_postgresql_names_differing_only_in_case(database: Db) -> None:
    """(SQLite has no two names that differ only in case.)"""
    db = database
    db.sql('CREATE TABLE "Orders" (id INTEGER PRIMARY KEY, v TEXT)')
    db.sql('CREATE TABLE "ORDERS" (id INTEGER PRIMARY KEY, v TEXT)')
    db.sql("INSERT INTO \"Orders\" VALUES (1, 'Orders')")
    db.sql("INSERT INTO \"ORDERS\" VALUES (1, 'ORDERS')")
    err = error_of(db.engine, "SELECT * FROM orders")
    assert str(err) == (
        '[AMBIGUOUS_NAME] Table name orders matches "ORDERS" and "Orders" in the database, which differ only in case: '
        "quote the name to choose one"
    )
    assert db.engine.execute('SELECT v FROM "Orders"').rows() == [("Orders",)]
    assert db.engine.execute('SELECT v FROM "ORDERS"').rows() == [("ORDERS",)]
    db.engine.execute(
        'MERGE INTO "ORDERS" t USING "Orders" s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v || \'!\''
    )
    assert db.sql('SELECT v FROM "ORDERS"') == [("Orders!",)]
    assert db.sql('SELECT v FROM "Orders"') == [("Orders",)]
    # a quoted name is exact, as in the database
    err = error_of(db.engine, 'SELECT * FROM "orders"')
    assert str(err) == f"[TABLE_NOT_FOUND] Table '{db.catalog}.default.orders' does not exist"
    err = error_of(db.engine, f'SELECT * FROM {db.catalog}.{db.schema}."OrderS"')
    assert str(err) == f"[TABLE_NOT_FOUND] Table '{db.catalog}.{db.schema}.OrderS' does not exist"
    # with a lower-case table as well, an unquoted name is that one (the database's own folding)
    db.sql("CREATE TABLE orders (id INTEGER PRIMARY KEY, v TEXT)")
    db.engine.execute("INSERT INTO orders VALUES (7, 'lower')")
    assert db.sql("SELECT id, v FROM orders") == [(7, "lower")]
    assert db.engine.execute('SELECT count(*) FROM "Orders" a JOIN orders b ON a.id < b.id').rows() == [(1,)]
    shown = db.engine.execute("SHOW TABLES").rows()
    assert shown == [("ORDERS",), ("Orders",), ("orders",)]  # as the database spells them
    # columns: mergekit's names ignore case, so two that differ only in case cannot be told apart
    db.sql('CREATE TABLE twins (id INTEGER PRIMARY KEY, "a" INTEGER, "A" INTEGER)')
    err = error_of(db.engine, "SELECT id FROM twins")
    assert str(err) == (
        f'[AMBIGUOUS_NAME] Table {db.schema}.twins has columns "a" and "A", whose names differ only in case: '
        "mergekit's column names ignore case, so it cannot tell them apart"
    )


def test_create_table_and_the_python_api_keep_quoted_names(database: Db) -> None:
    db = database
    db.engine.execute('CREATE TABLE "NewOne" ("Id" BIGINT PRIMARY KEY, Val VARCHAR)')
    db.engine.execute("CREATE TABLE Plain (id BIGINT)")
    tables = {r[0] for r in db.engine.execute("SHOW TABLES").rows()}
    assert tables == {"NewOne", "plain"}  # quoted: as written; unquoted: lower case, as PostgreSQL creates it
    db.engine.insert_arrow(f'{db.catalog}.{db.schema}."NewOne"', pa.table({"ID": [1, 2], "val": ["a", "b"]}))
    db.engine.insert_arrow("newone", pa.table({"id": [3], "VAL": ["c"]}))
    assert sorted(db.sql('SELECT id, val FROM "NewOne"')) == [(1, "a"), (2, "b"), (3, "c")]
    frame = db.engine.table(f'{db.catalog}.{db.schema}."NewOne"')
    assert sorted(tuple(r) for r in frame.collect()) == [(1, "a"), (2, "b"), (3, "c")]
    db.engine.execute('DROP TABLE "NewOne"')
    assert {r[0] for r in db.engine.execute("SHOW TABLES").rows()} == {"plain"}


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_postgresql_schema_with_upper_case(database: Db) -> None:
    db = database
    db.sql('CREATE SCHEMA "Sales"')
    db.sql('CREATE TABLE "Sales"."Q1" (id int PRIMARY KEY, total int)')
    db.engine.execute('INSERT INTO pg."Sales"."Q1" VALUES (1, 5)')
    db.engine.execute("UPDATE pg.sales.q1 SET total = total * 2")
    assert db.sql('SELECT * FROM "Sales"."Q1"') == [(1, 10)]
    assert ("Sales",) in db.engine.execute("SHOW SCHEMAS FROM pg").rows()
    assert db.engine.execute('SHOW TABLES FROM pg."Sales"').rows() == [("Q1",)]


def test_the_shells_table_list_names_each_table_once_under_the_database_schema(database: Db, tmp_path) -> None:
    """Issue 26, R5: ``\\d`` listed every table twice, under ``default`` and again under ``public`` (``main``)."""
    from mergekit.cli.runner import CliState, Runner
    from mergekit.cli.shell import Shell

    db = database
    db.engine.execute("CREATE TABLE orders (id BIGINT NOT NULL, item VARCHAR, PRIMARY KEY (id))")
    db.sql("CREATE TABLE made_outside (id INTEGER PRIMARY KEY)")  # as psql / sqlite3 create it
    config = tmp_path / "catalogs.toml"
    config.write_text(f'[catalogs.{db.catalog}]\nconnector = "sqldb"\nuri = "{db.uri}"\n')
    runner = Runner(CliState(catalog_config=str(config)))  # the command line's engine, on the shared session
    try:
        assert Shell(runner).tables() == [
            (db.catalog, db.schema, "made_outside", ""),
            (db.catalog, db.schema, "orders", ""),
        ]
        assert {"default", db.schema} <= {schema for _, schema in Shell(runner).schemas()}  # both names work
        assert runner.engine.execute(f"SELECT count(*) FROM {db.catalog}.default.orders").rows() == [(0,)]
    finally:
        runner.close()
