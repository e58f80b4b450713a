"""MERGE into a merge table by index lookups: the merge table's index is its journal children's, each key looked up
in the child its partition bounds allow. Every statement runs twice, on two copies of the same merge table: by
lookups (on Spark's tasks or on the driver tier) and through the Spark plan (lookups off, ``driver_tier = 'off'``);
both must give the same counts, rows, children's rows and errors."""

from __future__ import annotations

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode
from tests.engine.test_insert_arrow import spark_jobs

pytestmark = pytest.mark.spark

LOOKUP = -1  # cost.LOOKUP_MIN_KEYS: every source with a key estimate takes the lookup path when it can
SPARK_PLAN = 10**18  # never

COLUMNS = "(id BIGINT NOT NULL, v VARCHAR, n INTEGER, PRIMARY KEY (id))"
# children c0..c2 of m: keys below 200, 200 to 399, 400 and above
BOUNDS = ["FROM RANGE MINVALUE TO 200", "FROM 200 TO 400", "FROM 400 TO RANGE MAXVALUE"]


def _engine(spark, path) -> Engine:
    # small files: each child's index has cut points of its own
    options = {"connector": "partitioned", "warehouse": str(path), "version_type": "bigint", "rows_per_file": 50}
    return Engine(spark=spark, catalogs={"lake": options})


def _lookup_scan(result) -> dict | None:
    found = [s for s in result.metrics["scans"] if s.get("lookup")]
    return found[0] if found else None


class _Pair:
    """The same merge table in two warehouses: one MERGEs by lookups, the other through the Spark plan."""

    def __init__(self, spark, tmp_path, monkeypatch, *, tier: str) -> None:
        """``tier``: where the lookups run ("spark": tasks by key range; "driver": the engine's process)."""
        import mergekit.planner.cost as cost_module

        self.spark, self.tmp_path, self.monkeypatch, self.cost = spark, tmp_path, monkeypatch, cost_module
        monkeypatch.setattr(cost_module, "DRIVER_LOOKUP_MAX_KEYS", 10**18 if tier == "driver" else -1)
        self.lookup = _engine(spark, tmp_path / "lookup")
        self.reference = _engine(spark, tmp_path / "spark")
        self.reference.execute("SET SESSION driver_tier = 'off'")

    def setup(self, *statements: str) -> None:
        for sql in statements:
            self.lookup.execute(sql)
            self.reference.execute(sql)

    def source(self, name: str, rows, schema: str) -> None:
        path = str(self.tmp_path / f"src-{name}")
        self.spark.createDataFrame(rows, schema).write.mode("overwrite").parquet(path)
        df = self.spark.read.parquet(path)
        self.lookup.register_dataframe(name, df)
        self.reference.register_dataframe(name, df)

    def run(self, engine: Engine, sql: str):
        self.monkeypatch.setattr(self.cost, "LOOKUP_MIN_KEYS", LOOKUP if engine is self.lookup else SPARK_PLAN)
        return engine.execute(sql)

    def merge(self, sql: str):
        """Run ``sql`` both ways: the same counts, rows and children's rows. Returns the lookup run's result."""
        result = self.run(self.lookup, sql)
        reference = self.run(self.reference, sql)
        assert _lookup_scan(result) is not None, result.metrics["scans"]
        assert _lookup_scan(reference) is None and reference.metrics["tier"] == "spark"
        for key in ("inserted", "updated", "deleted", "per_case"):
            assert result.metrics[key] == reference.metrics[key], key
        assert result.row_count == reference.row_count
        assert self.children(self.lookup) == self.children(self.reference)
        return result

    def fails(self, sql: str) -> MergekitError:
        """Run ``sql`` both ways: the same error, and nothing changed."""
        before = self.children(self.lookup)
        errors = []
        for engine in (self.lookup, self.reference):
            with pytest.raises(MergekitError) as info:
                self.run(engine, sql)
            errors.append((info.value.code, str(info.value)))
            assert self.children(engine) == before
        assert errors[0] == errors[1]
        return info.value

    @staticmethod
    def children(engine: Engine) -> list[list[tuple]]:
        return [engine.execute(f"SELECT * FROM c{i} ORDER BY id").rows() for i in range(len(BOUNDS))]


def _merge_table(first: int = 0, last: int = 599) -> list[str]:
    """m over c0..c2, rows ``first``..``last`` (in several files per child), then an update and a delete."""
    statements = [f"CREATE MERGE TABLE m {COLUMNS} PARTITION BY RANGE ON (id)"]
    for i, bounds in enumerate(BOUNDS):
        statements += [f"CREATE TABLE c{i} {COLUMNS}", f"ALTER TABLE m ADD TABLE c{i} AS PARTITION {bounds}"]
    statements += [
        f"INSERT INTO m SELECT id, 'base', CAST(id % 7 AS INTEGER) FROM UNNEST(sequence({first}, {last})) AS x(id)",
        "UPDATE m SET v = 'upd' WHERE id % 10 = 1",
        "DELETE FROM m WHERE id % 10 = 2",
    ]
    return statements


_MERGE = (
    "MERGE INTO m AS t USING src s ON t.id = s.id "
    "WHEN MATCHED AND s.op = 'D' THEN DELETE "
    "WHEN MATCHED AND s.op = 'M' THEN UPDATE SET id = t.id + 1000, v = s.v "
    "WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + s.n "
    "WHEN NOT MATCHED AND s.id IS NOT NULL AND s.op <> 'D' THEN INSERT VALUES (s.id, s.v, s.n)"
)


@pytest.mark.parametrize("tier", ["spark", "driver"])
def test_a_merge_by_lookups_gives_the_spark_plans_result(spark, tmp_path, monkeypatch, tier: str) -> None:
    """Keys of every child, deleted keys, new keys of every child's range and beyond the table's, NULL keys, rows
    moved to the last child by an UPDATE of the key: each row ends up in the child its key belongs to, as
    through the Spark plan, with the same counts."""
    pair = _Pair(spark, tmp_path, monkeypatch, tier=tier)
    pair.setup(*_merge_table(last=549))
    src = []
    for i in [*range(0, 700, 7), 10_000, -5]:
        op = "D" if i % 3 == 0 else "M" if i % 5 == 0 else "U"
        src.append((i, op, f"m{i}", i % 4))
    src += [(None, "U", "nullkey", 1), (12, "U", "back", 1)]  # 12 was deleted: inserted again
    pair.source("src", src, "id BIGINT, op STRING, v STRING, n INT")
    result = pair.merge(_MERGE)

    live = {i: ("upd" if i % 10 == 1 else "base", i % 7) for i in range(550) if i % 10 != 2}
    expected = dict(live)
    for i, op, v, n in src:
        if i in live and op == "D":
            del expected[i]
        elif i in live and op == "M":
            del expected[i]
            expected[i + 1000] = (v, live[i][1])
        elif i in live:
            expected[i] = (v, live[i][1] + n)
        elif i is not None and op != "D":
            expected[i] = (v, n)
    children = pair.children(pair.lookup)
    for i, (low, high) in enumerate([(-(10**9), 200), (200, 400), (400, 10**9)]):
        assert children[i] == sorted((k, *row) for k, row in expected.items() if low <= k < high), i
    assert result.metrics["updated"] == sum(1 for i, op, *_ in src if i in live and op != "D")
    if tier == "spark":
        assert (result.metrics["tier"], _lookup_scan(result)["ranges"]) == ("spark", 2)  # cut at a child's bound
    else:
        assert (result.metrics["tier"], _lookup_scan(result)["ranges"]) == ("driver", 0)


def test_a_merge_by_lookups_fails_as_the_spark_plan_does(spark, tmp_path, monkeypatch) -> None:
    """Two source rows for one target row, a key no child holds: the same error either way, nothing written."""
    pair = _Pair(spark, tmp_path, monkeypatch, tier="spark")
    pair.setup(*_merge_table())
    pair.source("dup", [(i, f"r{i}") for i in range(150, 450)] + [(333, "again")], "id BIGINT, v STRING")
    error = pair.fails("MERGE INTO m t USING dup s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    assert error.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
    # a repeated key no case changes is no error (Trino checks only the rows a case changes)
    pair.merge("MERGE INTO m t USING dup s ON t.id = s.id WHEN MATCHED AND s.v = 'never' THEN DELETE")

    narrow = _Pair(spark, tmp_path / "narrow", monkeypatch, tier="spark")
    narrow.setup(*_merge_table(last=299), "ALTER TABLE m DROP TABLE c2")  # keys from 400 have no child
    narrow.source("new", [(i, f"n{i}") for i in range(390, 410)], "id BIGINT, v STRING")
    error = narrow.fails("MERGE INTO m t USING new s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, 0)")
    assert str(error) == (
        "[PARTITION_NOT_FOUND] INSERT: the insert violates the partition range (NB higher limit exclusive) of values"
    )


def test_explain_names_the_strategy_and_why_a_merge_table_declines_it(engine, spark, tmp_path) -> None:
    """A merge table partitioned ON its key takes index lookups; one partitioned USING an expression asks the engine
    for computed keys (an insert layout): the Spark plan, and EXPLAIN says why."""
    run = engine.execute
    for statement in _merge_table(last=99):
        run(statement)
    run("CREATE MERGE TABLE e (id BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (id)) PARTITION BY VALUES USING (id % 2)")
    for i in range(2):
        run(f"CREATE TABLE e{i} (id BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (id))")
        run(f"ALTER TABLE e ADD TABLE e{i} AS PARTITION IN ({i})")
    spark.createDataFrame([(i, "x") for i in range(0, 300, 3)], "id BIGINT, v STRING").write.parquet(
        str(tmp_path / "src")
    )
    engine.register_dataframe("src", spark.read.parquet(str(tmp_path / "src")))
    upsert = "MERGE INTO {t} t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v"
    (text,) = run("EXPLAIN " + upsert.format(t="m")).rows()[0]
    assert "Strategy: index_lookup" in text and "layout: insert any writer" in text
    (text,) = run("EXPLAIN " + upsert.format(t="e")).rows()[0]
    assert "Strategy: spark_join" in text
    assert "Index lookup not taken: writers must receive rows routed by the connector's layout" in text
    run("INSERT INTO e VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    result = run(upsert.format(t="e"))
    assert (result.row_count, result.metrics["strategy"]) == (1, "spark_join")
    assert run("SELECT * FROM e1 ORDER BY id").rows() == [(1, "a"), (3, "x")]


def test_small_statements_into_a_merge_table_run_on_the_driver_tier(engine, spark) -> None:
    """MERGE of VALUES, UPDATE and DELETE by key: no Spark job, each key in its child, a row moved between
    children by an UPDATE of the key in the statement's one commit."""
    run = engine.execute
    for statement in _merge_table(last=9):
        run(statement)
    run("INSERT INTO m VALUES (250, 'b', 0), (450, 'c', 0)")
    upsert = (
        "MERGE INTO m USING (VALUES (3, 'x', 1), (250, 'y', 2), (700, 'z', 3)) AS s(id, v, n) ON m.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.n)"
    )
    (text,) = run("EXPLAIN " + upsert).rows()[0]
    assert "Strategy: index_lookup" in text and "Tier: driver" in text
    history = [len(run(f"DESCRIBE HISTORY c{i}").rows()) for i in range(3)]
    with spark_jobs(spark) as jobs:
        merged = run(upsert)
        moved = run("UPDATE m SET id = id + 200, v = 'moved' WHERE id IN (4, 450)")
        deleted = run("DELETE FROM m WHERE id IN (5, 251)")
    assert jobs == []
    assert [(r.statement, r.row_count, r.metrics["tier"]) for r in (merged, moved, deleted)] == [
        ("MERGE", 3, "driver"),
        ("UPDATE", 2, "driver"),
        ("DELETE", 1, "driver"),
    ]
    assert [run(f"SELECT id, v FROM c{i} WHERE v <> 'base' ORDER BY id").rows() for i in range(3)] == [
        [(1, "upd"), (3, "x")],
        [(204, "moved"), (250, "y")],
        [(650, "moved"), (700, "z")],
    ]
    assert run("SELECT count(*) FROM m").rows() == [(11,)]
    # one commit per statement in each child it changed: c0 by all three, c1 and c2 by the MERGE and the UPDATE
    assert [len(run(f"DESCRIBE HISTORY c{i}").rows()) - n for i, n in enumerate(history)] == [3, 2, 2]
