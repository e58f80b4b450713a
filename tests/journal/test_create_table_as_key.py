"""A keyed table from a query in one statement (issue 26, row 12): ``CREATE TABLE t (PRIMARY KEY (k, ...)) AS query``
(MySQL's form) and ``CREATE TABLE t WITH (primary_key = ARRAY['k', ...]) AS query``. The key holds for the query's
rows (a repeated or NULL key: CONSTRAINT_VIOLATION and no table) and for every write after; a connector without
primary keys refuses the key by name."""

from __future__ import annotations

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode
from tests.helpers import fails, journal_engine

SOURCE = "SELECT * FROM (VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)) AS v(id, name, grp)"


@pytest.fixture
def engine(spark, tmp_path) -> Engine:
    e = journal_engine(spark, str(tmp_path / "wh"))
    yield e
    e.close()


def _tables(engine: Engine) -> list[str]:
    return [r[0] for r in engine.execute("SHOW TABLES").rows()]


@pytest.mark.parametrize(
    "create",
    [
        f"CREATE TABLE k (PRIMARY KEY (id)) AS {SOURCE}",
        f"CREATE TABLE k WITH (primary_key = ARRAY['id']) AS {SOURCE}",
        f"CREATE TABLE k WITH (primary_key = ARRAY['ID']) AS {SOURCE} WITH DATA",
    ],
)
def test_a_keyed_table_from_a_query(engine: Engine, create: str) -> None:
    result = engine.execute(create)
    assert (result.statement, result.row_count) == ("CREATE TABLE AS", 3)
    (text,) = engine.execute("SHOW CREATE TABLE k").rows()[0]
    assert "PRIMARY KEY (id)" in text and "id integer NOT NULL" in text, text
    fails(engine, "INSERT INTO k VALUES (2, 'again', 0)", ErrorCode.CONSTRAINT_VIOLATION, "Duplicate key (id)=(2)")
    merged = engine.execute(
        "MERGE INTO k USING (VALUES (2, 'B'), (4, 'd')) AS s(id, name) ON k.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)"
    )
    assert merged.row_count == 2
    assert engine.execute("SELECT * FROM k ORDER BY id").rows() == [
        (1, "a", 10),
        (2, "B", 20),
        (3, "c", 30),
        (4, "d", None),
    ]


def test_a_composite_key_and_with_no_data(engine: Engine) -> None:
    engine.execute(f"CREATE TABLE k2 (PRIMARY KEY (grp, name)) AS {SOURCE} WITH NO DATA")
    assert engine.execute("SELECT count(*) FROM k2").rows() == [(0,)]
    assert engine.execute("INSERT INTO k2 VALUES (1, 'a', 10), (2, 'a', 20)").row_count == 2
    fails(engine, "INSERT INTO k2 VALUES (9, 'a', 10)", ErrorCode.CONSTRAINT_VIOLATION, "Duplicate key (grp, name)")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (1, 'c')) AS v(id, name)", "Duplicate key (id)=(1)"),
        (
            "SELECT * FROM (VALUES (1, 'a'), (CAST(NULL AS INTEGER), 'b')) AS v(id, name)",
            "NULL value not allowed for NOT NULL column: id",
        ),
    ],
)
def test_the_key_holds_for_the_querys_rows(engine: Engine, query: str, message: str) -> None:
    for create in (
        f"CREATE TABLE k (PRIMARY KEY (id)) AS {query}",
        f"CREATE TABLE k WITH (primary_key = ARRAY['id']) AS {query}",
    ):
        fails(engine, create, ErrorCode.CONSTRAINT_VIOLATION, message)
        assert _tables(engine) == []


@pytest.mark.parametrize(
    ("create", "code", "message"),
    [
        (f"CREATE TABLE k (PRIMARY KEY (nope)) AS {SOURCE}", ErrorCode.COLUMN_NOT_FOUND, "Primary key column 'nope'"),
        (f"CREATE TABLE k (PRIMARY KEY (id, id)) AS {SOURCE}", ErrorCode.INVALID_ARGUMENTS, "listed twice"),
        (
            f"CREATE TABLE k WITH (primary_key = 'id') AS {SOURCE}",
            ErrorCode.INVALID_TABLE_PROPERTY,
            "expected a non-empty array of column names",
        ),
        (
            f"CREATE TABLE k (PRIMARY KEY (id)) WITH (primary_key = ARRAY['id']) AS {SOURCE}",
            ErrorCode.INVALID_TABLE_PROPERTY,
            "cannot both be given",
        ),
        (
            f"CREATE TABLE k (id INTEGER, PRIMARY KEY (id)) AS {SOURCE}",
            ErrorCode.NOT_SUPPORTED,
            "a column list together with AS query",
        ),
    ],
)
def test_what_is_refused_creates_nothing(engine: Engine, create: str, code: ErrorCode, message: str) -> None:
    fails(engine, create, code, message)
    assert _tables(engine) == []


def test_the_property_on_a_plain_create_table(engine: Engine) -> None:
    engine.execute("CREATE TABLE p (id BIGINT, v VARCHAR) WITH (primary_key = ARRAY['id'])")
    engine.execute("INSERT INTO p VALUES (1, 'a')")
    fails(engine, "INSERT INTO p VALUES (1, 'b')", ErrorCode.CONSTRAINT_VIOLATION, "Duplicate key (id)=(1)")


def test_a_connector_without_primary_keys_refuses_the_key(spark, tmp_path) -> None:
    """The example plugin (examples/csvdir) stores no key: the key is refused by name and no table is left."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "csvdir", "root": str(tmp_path / "csv")}})
    try:
        for create in (
            f"CREATE TABLE k (PRIMARY KEY (id)) AS {SOURCE}",
            f"CREATE TABLE k WITH (primary_key = ARRAY['id']) AS {SOURCE}",
            "CREATE TABLE k (id INTEGER, PRIMARY KEY (id))",
        ):
            fails(
                engine,
                create,
                ErrorCode.NOT_SUPPORTED,
                "This connector does not support primary keys: PRIMARY KEY (id)",
            )
            assert _tables(engine) == []
        assert engine.execute(f"CREATE TABLE k AS {SOURCE}").row_count == 3  # without a key it is created
    finally:
        engine.close()
