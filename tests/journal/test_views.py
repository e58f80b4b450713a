"""Views stored in the journal catalog (``mk_views``) and used through the Engine: they persist across Engine
instances on one warehouse, DROP / OR REPLACE / IF NOT EXISTS, views and tables share one namespace, the
refusals (DML into a view, DROP TABLE of a view, cycles, a dropped underlying table), a failing CREATE VIEW
creates nothing, and views as the source of every DML statement. The last test drives the SPI alone."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ConnectorSession, ConnectorViewDefinition, SchemaTableName, ViewColumn
from tests.helpers import fails

pytestmark = pytest.mark.spark


def _engine(spark, warehouse: str, connector: str = "journal", **kwargs) -> Engine:
    return Engine(spark=spark, catalogs={"lake": {"connector": connector, "warehouse": warehouse}}, **kwargs)


@pytest.fixture
def warehouse(tmp_path) -> str:
    return str(tmp_path / "w")


@pytest.fixture
def lake(spark, warehouse):
    engine = _engine(spark, warehouse)
    engine.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR, units INTEGER)")
    engine.execute("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
    yield engine
    engine.close()


def views(engine: Engine) -> list[str]:
    return [r[0] for r in engine.execute("SHOW VIEWS").rows()]


def test_views_persist_across_engines_and_list_describe(spark, warehouse, lake) -> None:
    lake.execute("CREATE VIEW big (key, label) COMMENT 'large ones' AS SELECT id, upper(name) FROM t WHERE units > 10")
    lake.execute("CREATE VIEW big2 AS SELECT * FROM big WHERE key < 3")
    assert lake.execute("SELECT * FROM big2").rows() == [(2, "B")]
    lake.close()
    again = _engine(spark, warehouse)  # a new Engine (and connector) on the same warehouse
    try:
        assert views(again) == ["big", "big2"]
        assert [r[0] for r in again.execute("SHOW TABLES").rows()] == ["big", "big2", "t", "t_journal"]
        assert again.execute("DESCRIBE big").rows() == [("key", "integer", "", ""), ("label", "varchar", "", "")]
        assert sorted(again.execute("SELECT key, label FROM big").rows()) == [(2, "B"), (3, "C")]
        # another default schema: the view's names still resolve where they were written (Trino's semantics)
        elsewhere = _engine(spark, warehouse, default_schema="other")
        assert sorted(elsewhere.execute("SELECT * FROM lake.default.big2").rows()) == [(2, "B")]
        elsewhere.close()
    finally:
        again.close()


def test_drop_replace_and_if_not_exists(lake) -> None:
    lake.execute("CREATE VIEW v AS SELECT id FROM t")
    fails(
        lake,
        "CREATE VIEW v AS SELECT name FROM t",
        ErrorCode.TABLE_ALREADY_EXISTS,
        "View 'lake.default.v' already exists",
    )
    lake.execute("CREATE VIEW IF NOT EXISTS v AS SELECT name FROM t")  # nothing happens
    assert lake.execute("SELECT * FROM v ORDER BY id").rows() == [(1,), (2,), (3,)]
    lake.execute("CREATE OR REPLACE VIEW v AS SELECT name FROM t")
    assert lake.execute("SELECT * FROM v ORDER BY name").rows() == [("a",), ("b",), ("c",)]
    lake.execute("DROP VIEW v")
    assert views(lake) == []
    fails(lake, "DROP VIEW v", ErrorCode.TABLE_NOT_FOUND, "View 'lake.default.v' does not exist")
    lake.execute("DROP VIEW IF EXISTS v")
    fails(lake, "SELECT * FROM v", ErrorCode.TABLE_NOT_FOUND, "v")


def test_one_namespace_and_the_refusals(lake) -> None:
    lake.execute("CREATE VIEW v AS SELECT id, units FROM t")
    fails(lake, "CREATE TABLE v (a INTEGER)", ErrorCode.TABLE_ALREADY_EXISTS, "View 'default.v' already exists")
    fails(
        lake, "CREATE VIEW t AS SELECT 1 AS a", ErrorCode.TABLE_ALREADY_EXISTS, "Table 'lake.default.t' already exists"
    )
    fails(lake, "CREATE VIEW t_journal AS SELECT 1 AS a", ErrorCode.TABLE_ALREADY_EXISTS, "already exists")
    fails(lake, "DROP TABLE v", ErrorCode.NOT_SUPPORTED, "'lake.default.v' is a view: use DROP VIEW")
    fails(lake, "DROP VIEW t", ErrorCode.NOT_SUPPORTED, "'lake.default.t' is a table: use DROP TABLE")
    refused = {
        "INSERT INTO v VALUES (9, 9)": "Inserting into views is not supported: 'lake.default.v' is a view",
        "UPDATE v SET units = 0": "Updating views is not supported",
        "DELETE FROM v WHERE id = 1": "Deleting from views is not supported",
        "MERGE INTO v USING t ON v.id = t.id WHEN MATCHED THEN DELETE": "Merging into views is not supported",
        "TRUNCATE TABLE v": "Truncating views is not supported",
        "ALTER TABLE v ADD COLUMN z INTEGER": "'lake.default.v' is a view, not a table",
    }
    for sql, text in refused.items():
        fails(lake, sql, ErrorCode.NOT_SUPPORTED, text)
    fails(lake, "SELECT * FROM v FOR VERSION AS OF 1", ErrorCode.NOT_SUPPORTED, "Time travel")
    # a cycle, made through OR REPLACE, is refused at CREATE; one left behind by a dropped view at use
    lake.execute("CREATE VIEW w AS SELECT * FROM v")
    fails(
        lake,
        "CREATE OR REPLACE VIEW v AS SELECT * FROM w",
        ErrorCode.VIEW_IS_RECURSIVE,
        "'lake.default.v' is recursive",
    )
    assert lake.execute("SELECT COUNT(*) FROM w").rows() == [(3,)]
    # the underlying table dropped: the view names itself when used
    lake.execute("CREATE TABLE u (a INTEGER)")
    lake.execute("CREATE VIEW over_u AS SELECT a FROM u")
    lake.execute("CREATE VIEW over_over_u AS SELECT * FROM over_u")
    lake.execute("DROP TABLE u")
    fails(
        lake,
        "SELECT * FROM over_over_u",
        ErrorCode.INVALID_VIEW,
        "Failed analyzing stored view 'lake.default.over_u': Table 'lake.default.u' does not exist",
    )


def test_a_failing_create_view_creates_nothing(lake) -> None:
    fails(lake, "CREATE VIEW bad AS SELECT nope FROM t", ErrorCode.COLUMN_NOT_FOUND, "nope")
    fails(lake, "CREATE VIEW bad AS SELECT * FROM missing", ErrorCode.TABLE_NOT_FOUND, "missing")
    fails(lake, "CREATE VIEW bad (a) AS SELECT id, name FROM t", ErrorCode.INVALID_VIEW, "lists 1 column names")
    fails(lake, "CREATE VIEW bad AS SELECT id, id FROM t", ErrorCode.DUPLICATE_COLUMN_NAME, "'id'")
    fails(lake, "CREATE OR REPLACE VIEW IF NOT EXISTS bad AS SELECT 1 AS a", ErrorCode.SYNTAX_ERROR, "both")
    fails(lake, "CREATE MATERIALIZED VIEW bad AS SELECT 1 AS a", ErrorCode.NOT_SUPPORTED, "MATERIALIZED")
    assert views(lake) == []


def test_views_as_the_source_of_dml(lake) -> None:
    lake.execute("CREATE TABLE target (id INTEGER PRIMARY KEY, units INTEGER)")
    lake.execute("CREATE VIEW src (k, u) AS SELECT id, units * 2 FROM t WHERE id >= 2")
    lake.execute("INSERT INTO target SELECT k, u FROM src")
    assert lake.execute("SELECT * FROM target ORDER BY id").rows() == [(2, 40), (3, 60)]
    merged = lake.execute(
        "MERGE INTO target USING src s ON target.id = s.k WHEN MATCHED THEN UPDATE SET units = s.u + 1 "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.u)"
    )
    assert merged.row_count == 2
    lake.execute("UPDATE target SET units = 0 FROM src WHERE target.id = src.k AND src.k = 3")
    lake.execute("DELETE FROM target WHERE id IN (SELECT k FROM src WHERE u = 40)")
    assert lake.execute("SELECT * FROM target ORDER BY id").rows() == [(3, 0)]
    lake.execute("CREATE TABLE copy AS SELECT * FROM src")
    assert lake.execute("SELECT * FROM copy ORDER BY k").rows() == [(2, 40), (3, 60)]


def test_partitioned_catalog_delegates_views_and_keeps_merge_tables_apart(spark, warehouse) -> None:
    engine = _engine(spark, warehouse, connector="partitioned")
    try:
        engine.execute("CREATE MERGE TABLE m (id INTEGER)")
        engine.execute("CREATE TABLE c (id INTEGER)")
        engine.execute("INSERT INTO c VALUES (1), (2)")
        engine.execute("CREATE VIEW v AS SELECT id FROM c WHERE id > 1")
        assert engine.execute("SELECT * FROM v").rows() == [(2,)]
        fails(engine, "CREATE VIEW m AS SELECT 1 AS a", ErrorCode.TABLE_ALREADY_EXISTS, "already exists")
        fails(engine, "CREATE MERGE TABLE v (id INTEGER)", ErrorCode.TABLE_ALREADY_EXISTS, "already in use")
        assert views(engine) == ["v"]
    finally:
        engine.close()


def test_the_spi_stores_views_in_the_catalog_transaction(make_harness) -> None:
    lake = make_harness()
    meta, session = lake.metadata, ConnectorSession(catalog="lake")
    name = SchemaTableName(schema="s", table="v")
    definition = ConnectorViewDefinition(
        sql="SELECT 1 AS a", columns=[ViewColumn(name="a", type="integer")], comment="c", catalog="lake", schema="s"
    )
    assert meta.get_view(session=session, name=name) is None
    meta.create_view(session=session, name=name, definition=definition, replace=False)
    assert meta.get_view(session=session, name=name) == definition
    assert list(meta.list_views(session=session, schema="s")) == [name]
    assert "s" in meta.list_schemas(session=session)
    with pytest.raises(MergekitError) as caught:
        meta.create_view(session=session, name=name, definition=definition, replace=False)
    assert caught.value.code is ErrorCode.TABLE_ALREADY_EXISTS
    replaced = ConnectorViewDefinition(sql="SELECT 2 AS b", columns=[ViewColumn(name="b", type="integer")])
    meta.create_view(session=session, name=name, definition=replaced, replace=True)
    assert make_harness().metadata.get_view(session=session, name=name) == replaced  # another connector: stored
    with pytest.raises(MergekitError) as caught:
        lake.create("s.v", [("id", pa.int64())])
    assert caught.value.code is ErrorCode.TABLE_ALREADY_EXISTS
    meta.drop_view(session=session, name=name)
    assert meta.get_view(session=session, name=name) is None
    with pytest.raises(MergekitError) as caught:
        meta.drop_view(session=session, name=name)
    assert caught.value.code is ErrorCode.TABLE_NOT_FOUND
