"""Schema evolution through the engine on the memory connector (both row change paradigms), and what a connector
that does not implement it answers (the SPI's defaults, seen through the csvdir example plugin)."""

from __future__ import annotations

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode
from mergekit.spi import RENAME_COLUMN_MESSAGE, SCHEMA_EVOLUTION_MESSAGE, SET_COLUMN_TYPE_MESSAGE
from tests.helpers import error_of

pytestmark = pytest.mark.spark


def test_rename_widen_and_drop_on_the_memory_connector(engine: Engine) -> None:
    engine.execute("CREATE TABLE t (id INTEGER, a SMALLINT, r REAL, v VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 1, 1.5, 'x'), (2, 2, 2.5, 'y')")
    engine.execute("ALTER TABLE t RENAME COLUMN a TO n")
    engine.execute("ALTER TABLE t ALTER COLUMN n SET DATA TYPE bigint")
    engine.execute("ALTER TABLE t ALTER COLUMN r SET DATA TYPE double")
    engine.execute("ALTER TABLE t DROP COLUMN v")
    engine.execute(
        "MERGE INTO t USING (VALUES (2, 9000000000), (3, 3)) s(id, n) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET n = s.n WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id, s.n)"
    )
    res = engine.execute("SELECT * FROM t ORDER BY id")
    assert res.columns == ["id", "n", "r"]
    assert res.rows() == [(1, 1, 1.5), (2, 9000000000, 2.5), (3, 3, None)]
    err = error_of(engine, "ALTER TABLE t ALTER COLUMN r SET DATA TYPE real")
    assert err.code is ErrorCode.NOT_SUPPORTED and "Cannot change type from double to real" in err.message


def test_merge_with_schema_evolution_on_the_memory_connector(engine: Engine) -> None:
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    res = engine.execute(
        "MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (1, 'A', 1.5), (3, 'C', 3.5)) s(id, v, Score) "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    assert res.row_count == 2 and res.metrics["added_columns"] == ["score"]
    out = engine.execute("SELECT * FROM t ORDER BY id")
    assert out.columns == ["id", "v", "score"]
    assert [(i, v, None if s is None else float(s)) for i, v, s in out.rows()] == [
        (1, "A", 1.5),
        (2, "b", None),
        (3, "C", 3.5),
    ]
    explain = engine.execute(
        "EXPLAIN MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (1, 2)) s(id, more) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *"
    ).rows()[0][0]
    assert "Schema evolution: adds more integer" in explain
    assert [c for c, *_ in engine.execute("DESCRIBE t").rows()] == ["id", "v", "score"]  # EXPLAIN ran nothing


def test_a_connector_without_schema_evolution_refuses_it_and_changes_nothing(spark, tmp_path) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "csvdir", "root": str(tmp_path)}})
    try:
        engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
        engine.execute("INSERT INTO t VALUES (1, 'a')")
        assert str(error_of(engine, "ALTER TABLE t RENAME COLUMN v TO w")) == f"[NOT_SUPPORTED] {RENAME_COLUMN_MESSAGE}"
        err = error_of(engine, "ALTER TABLE t ALTER COLUMN id SET DATA TYPE bigint")
        assert str(err) == f"[NOT_SUPPORTED] {SET_COLUMN_TYPE_MESSAGE}"
        err = error_of(
            engine,
            "MERGE WITH SCHEMA EVOLUTION INTO t USING (VALUES (1, 'b', 2)) s(id, v, n) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET *",
        )
        assert str(err) == f"[NOT_SUPPORTED] {SCHEMA_EVOLUTION_MESSAGE}"
        res = engine.execute("SELECT * FROM t")
        assert res.columns == ["id", "v"] and res.rows() == [(1, "a")]
    finally:
        engine.close()


def test_the_dataframe_builder_evolves_the_schema_with_update_all_and_insert_all(engine: Engine, spark) -> None:
    engine.execute("CREATE TABLE t (id INTEGER, v VARCHAR)")
    engine.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    source = spark.createDataFrame([(1, "A", 10), (3, "C", 30)], "id INT, v STRING, score INT")
    plain = engine.merge_into("t", source=source, on="t.id = s.id").when_matched_update_all()
    assert plain.execute().row_count == 1  # without evolution, score is not a target column and is not used
    assert [c for c, *_ in engine.execute("DESCRIBE t").rows()] == ["id", "v"]
    result = (
        engine.merge_into("t", source=source, on="t.id = s.id")
        .with_schema_evolution()
        .when_matched_update_all(condition="s.score > 5")
        .when_not_matched_insert_all()
        .execute()
    )
    assert result.row_count == 2 and result.metrics["added_columns"] == ["score"]
    assert engine.execute("SELECT * FROM t ORDER BY id").rows() == [(1, "A", 10), (2, "b", None), (3, "C", 30)]
