"""What a failed statement says, on PostgreSQL and SQLite: the user's key columns (never the connector's row
version) and the database's own schema name (never the engine's ``default``), whatever name the statement used."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit.errors import MergekitError
from tests.helpers import error_of
from tests.sqldb.dbs import Db, database  # noqa: F401 - the fixture of both databases

pytestmark = pytest.mark.spark


def test_duplicate_matches_name_the_key_columns(database: Db) -> None:
    db = database
    db.sql("CREATE TABLE big (id BIGINT PRIMARY KEY, v TEXT NOT NULL)")
    db.sql("CREATE TABLE stock (shop INTEGER, item VARCHAR(10), qty INTEGER, PRIMARY KEY (shop, item))")
    db.sql("INSERT INTO big VALUES (1, 'a'), (2, 'b')")
    db.sql("INSERT INTO stock VALUES (1, 'it''s', 1)")
    duplicate = "[MERGE_TARGET_ROW_MULTIPLE_MATCHES] One MERGE target table row matched more than one source row"
    by_id = "MERGE INTO big t USING (VALUES (2, 'x'), (2, 'y')) s(id, v) ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v"
    assert str(error_of(db.engine, by_id)) == f"{duplicate} (target row: id = 2)"
    by_shop_and_item = (
        "MERGE INTO stock t USING (VALUES (1, 'it''s'), (1, 'it''s')) s(shop, item) "
        "ON t.shop = s.shop AND t.item = s.item WHEN MATCHED THEN DELETE"
    )
    assert str(error_of(db.engine, by_shop_and_item)) == f"{duplicate} (target row: shop = 1, item = 'it''s')"
    assert db.sql("SELECT id, v FROM big ORDER BY id") == [(1, "a"), (2, "b")]
    assert db.staging_tables() == []


def test_messages_name_the_database_schema(database: Db) -> None:
    db = database
    s = db.schema
    db.sql("CREATE TABLE big (id BIGINT PRIMARY KEY, v TEXT NOT NULL)")
    db.sql("CREATE TABLE log (at INTEGER, msg TEXT)")
    db.sql("INSERT INTO big VALUES (1, 'a'), (2, 'b')")
    key = "big_pkey" if db.kind == "postgresql" else "big.id"
    for statement in (
        "UPDATE big SET id = 2 WHERE id = 1",
        f"MERGE INTO {db.catalog}.default.big t USING (VALUES 1) s(id) ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 2",
    ):
        message = str(error_of(db.engine, statement))
        if db.kind == "postgresql":
            assert message == (
                f"[CONSTRAINT_VIOLATION] Cannot apply the statement to table {s}.big: duplicate key value violates "
                f'unique constraint "{key}" DETAIL: Key (id)=(2) already exists.'
            )
        else:
            assert (
                message
                == f"[CONSTRAINT_VIOLATION] Cannot apply the statement to table {s}.big: UNIQUE constraint failed: {key}"
            )
    assert str(error_of(db.engine, "DELETE FROM log WHERE at + 0 = 1")).startswith(
        f"[NOT_SUPPORTED] Table {s}.log has no primary key"
    )
    assert db.sql("SELECT id, v FROM big ORDER BY id") == [(1, "a"), (2, "b")]
    assert db.staging_tables() == []


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_a_row_the_database_refuses_while_staging_is_named_by_its_table(database: Db) -> None:
    """PostgreSQL's CONTEXT (``COPY _mk_stage_..., line 1``) names the connector's statement, not the user's."""
    db = database
    db.sql("CREATE TABLE big (id BIGINT PRIMARY KEY, v TEXT NOT NULL)")
    with pytest.raises(MergekitError) as info:
        db.engine.insert_arrow("big", pa.table({"id": [1], "v": ["a\x00b"]}))
    assert str(info.value) == (
        '[STORAGE_ERROR] Cannot stage rows for table public.big: invalid byte sequence for encoding "UTF8": 0x00'
    )
    assert db.sql("SELECT count(*) FROM big") == [(0,)]
    assert db.staging_tables() == []
