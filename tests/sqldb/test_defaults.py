"""The database's own defaults: a column an INSERT or a MERGE's INSERT leaves out (or writes as DEFAULT) gets the
database's DEFAULT, sequence (serial), identity or SQLite rowid, as an INSERT in psql or sqlite3 does; an explicit
NULL stays NULL. On PostgreSQL and SQLite, through every path that inserts rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit.errors import MergekitError
from tests.helpers import error_of
from tests.sqldb.dbs import Db, database  # noqa: F401 - the fixture of both databases

pytestmark = pytest.mark.spark

EVENTS = {
    "postgresql": "CREATE TABLE ev (id serial PRIMARY KEY, code bigint GENERATED ALWAYS AS IDENTITY, name text, "
    "status text DEFAULT 'new', created_at timestamptz NOT NULL DEFAULT now())",
    "sqlite": "CREATE TABLE ev (id INTEGER PRIMARY KEY, name TEXT, status TEXT DEFAULT 'new', "
    "created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
}


def _rows(db: Db) -> list[tuple[object, ...]]:
    """(name, status, whether created_at is set) by name; the ids are 1, 2, ... (rows of one statement arrive in
    no particular order)."""
    assert db.sql("SELECT id FROM ev ORDER BY id") == [(i,) for i in range(1, len(db.sql("SELECT id FROM ev")) + 1)]
    return [(n, s, bool(c)) for n, s, c in db.sql("SELECT name, status, created_at IS NOT NULL FROM ev ORDER BY name")]


def test_omitted_columns_take_the_database_defaults(database: Db) -> None:
    db = database
    db.sql(EVENTS[db.kind])
    assert db.engine.execute("INSERT INTO ev (name) VALUES ('a'), ('b')").row_count == 2
    db.engine.execute("INSERT INTO ev (name, status) VALUES ('c', NULL)")  # an explicit NULL stays NULL
    db.engine.execute("INSERT INTO ev (name, status) VALUES ('d', DEFAULT), ('e', DEFAULT)")
    db.engine.execute("INSERT INTO ev (name) SELECT name || '2' FROM ev WHERE name = 'a'")  # from a query
    assert _rows(db) == [
        ("a", "new", True),
        ("a2", "new", True),
        ("b", "new", True),
        ("c", None, True),
        ("d", "new", True),
        ("e", "new", True),
    ]
    if db.kind == "postgresql":  # the identity column took its values too
        assert db.sql("SELECT code FROM ev ORDER BY id") == [(1,), (2,), (3,), (4,), (5,), (6,)]
    before = _rows(db)
    assert str(error_of(db.engine, "INSERT INTO ev (name, created_at) VALUES ('x', NULL)")) == (
        "[CONSTRAINT_VIOLATION] NULL value not allowed for NOT NULL column: created_at"
    )
    assert str(error_of(db.engine, "INSERT INTO ev (name, status) VALUES ('x', DEFAULT), ('y', 'old')")) == (
        "[NOT_SUPPORTED] Column status takes the database's own default: write DEFAULT for it in every VALUES row "
        "of the INSERT, or leave the column out"
    )
    assert str(error_of(db.engine, "UPDATE ev SET status = DEFAULT WHERE id = 1")) == (
        "[NOT_SUPPORTED] SET status = DEFAULT: the database computes this column's default, which mergekit can only "
        "leave to it when a row is inserted"
    )
    assert _rows(db) == before
    assert db.staging_tables() == []


def test_merge_inserts_take_the_database_defaults(database: Db) -> None:
    db = database
    db.sql(EVENTS[db.kind])
    db.engine.execute("INSERT INTO ev (name) VALUES ('a')")
    db.engine.execute("INSERT INTO ev (name) VALUES ('b')")
    merged = db.engine.execute(
        "MERGE INTO ev t USING (VALUES (1, 'A'), (100, 'n1'), (101, 'n2')) AS s(id, name) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name "
        "WHEN NOT MATCHED AND s.id = 100 THEN INSERT (name) VALUES (s.name) "
        "WHEN NOT MATCHED THEN INSERT (name, status, created_at) VALUES (s.name, DEFAULT, TIMESTAMP '2024-01-02 03:04:05')"
    )
    assert merged.row_count == 3
    assert merged.metrics["per_case"][1]["inserted"] == merged.metrics["per_case"][2]["inserted"] == 1
    insert_only = db.engine.execute(
        "MERGE INTO ev t USING (VALUES ('n3')) AS s(name) ON t.name = s.name WHEN NOT MATCHED THEN INSERT (name) "
        "VALUES (s.name)"
    )
    assert insert_only.row_count == 1
    looked_up = db.engine.execute(  # the WHEN clauses in Arrow, over the rows looked up by key
        "MERGE INTO ev t USING (VALUES (2, 'B'), (102, 'n4')) AS s(id, name) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (name) VALUES (s.name)"
    )
    assert (looked_up.row_count, looked_up.metrics["strategy"]) == (2, "index_lookup")
    assert _rows(db) == [
        ("A", "new", True),
        ("B", "new", True),
        ("n1", "new", True),
        ("n2", "new", True),
        ("n3", "new", True),
        ("n4", "new", True),
    ]
    assert db.sql("SELECT CAST(created_at AS TEXT) FROM ev WHERE name = 'n2'")[0][0].startswith("2024-01-02 03:04:05")
    assert db.staging_tables() == []


def test_insert_arrow_and_default_values_take_the_database_defaults(database: Db) -> None:
    db = database
    db.sql(EVENTS[db.kind])
    result = db.engine.insert_arrow("ev", pa.table({"name": ["arrow"]}))
    assert result.metrics["strategy"] == "driver_append"  # on the driver, no Spark job
    db.engine.insert_arrow("ev", pa.table({"name": ["null status"], "status": pa.array([None], pa.string())}))
    assert _rows(db) == [("arrow", "new", True), ("null status", None, True)]
    with pytest.raises(MergekitError) as info:
        db.engine.insert_arrow("ev", pa.table({"name": ["x"], "created_at": pa.array([None], pa.timestamp("us"))}))
    assert str(info.value) == "[CONSTRAINT_VIOLATION] NULL value not allowed for NOT NULL column: created_at"
    ticks = "id serial PRIMARY KEY, at timestamptz DEFAULT now()"
    if db.kind == "sqlite":
        ticks = "id INTEGER PRIMARY KEY, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP"
    db.sql(f"CREATE TABLE ticks ({ticks})")
    db.engine.execute("INSERT INTO ticks DEFAULT VALUES")  # every column from the database
    db.engine.execute("INSERT INTO ticks DEFAULT VALUES")
    assert db.sql("SELECT id, at IS NOT NULL FROM ticks ORDER BY id") == [(1, True), (2, True)]
    assert db.staging_tables() == []


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_rows_with_a_generated_always_identity_can_change(database: Db) -> None:
    """PostgreSQL refuses to set a GENERATED ALWAYS column, even to its own value: UPDATE sets only the columns the
    statement assigns, and a row whose key changes keeps its identity value."""
    db = database
    db.sql(EVENTS[db.kind])
    db.engine.execute("INSERT INTO ev (name) VALUES ('a')")
    db.engine.execute("INSERT INTO ev (name) VALUES ('b')")
    assert db.engine.execute("UPDATE ev SET name = 'x' WHERE id = 1").row_count == 1
    db.engine.execute("MERGE INTO ev t USING (VALUES 2) s(id) ON t.id = s.id WHEN MATCHED THEN UPDATE SET status = 'm'")
    assert db.engine.execute("UPDATE ev SET id = 3 - id").row_count == 2  # a key swap: delete and insert again
    assert db.new_engine(merge=False).execute("UPDATE ev SET id = id + 10").row_count == 2
    assert db.sql("SELECT id, code, name, status FROM ev ORDER BY id") == [(11, 2, "b", "m"), (12, 1, "x", "new")]
