"""MERGE by index lookups (mergekit.execution.dml.lookup): a large source's rows meet the target rows the journal
looks up for their keys in the same task; the join and the WHEN clauses run in Arrow. Every test runs the same
statement through the Spark plan on a copy of the table and expects the same rows and counts."""

from __future__ import annotations

import datetime

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode

pytestmark = pytest.mark.spark

LOOKUP = -1  # _LOOKUP_MIN_KEYS: every source with a key estimate takes the lookup path when it can
SPARK_PLAN = 10**18  # never


def _engine(spark, path, **options) -> Engine:
    return Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": str(path), "version_type": "bigint", **options}},
        default_catalog="lake",
    )


def _parquet(spark, path, rows, schema):
    spark.createDataFrame(rows, schema).write.mode("overwrite").parquet(str(path))
    return spark.read.parquet(str(path))


def _lookup_scan(result) -> dict | None:
    found = [s for s in result.metrics["scans"] if s.get("lookup")]
    return found[0] if found else None


class _Pair:
    """The same table in two warehouses: one MERGEs by lookups, the other through the Spark plan."""

    def __init__(self, spark, tmp_path, monkeypatch, *, tier: str | None = None, **options) -> None:
        """``tier``: where the lookups run ("spark": tasks by key range; "driver": the engine's process); None:
        where the engine's cost functions put them (a small source: the driver)."""
        import mergekit.planner.cost as cost_module

        self.spark, self.tmp_path, self.monkeypatch, self.module = spark, tmp_path, monkeypatch, cost_module
        if tier is not None:
            monkeypatch.setattr(cost_module, "DRIVER_LOOKUP_MAX_KEYS", 10**18 if tier == "driver" else -1)
        self.lookup = _engine(spark, tmp_path / "lookup", **options)
        self.reference = _engine(spark, tmp_path / "spark", **options)

    def setup(self, *statements: str) -> None:
        for sql in statements:
            self.lookup.execute(sql)
            self.reference.execute(sql)

    def source(self, name: str, rows, schema: str) -> None:
        df = _parquet(self.spark, self.tmp_path / f"src-{name}", rows, schema)
        self.lookup.register_dataframe(name, df)
        self.reference.register_dataframe(name, df)

    def run(self, engine: Engine, sql: str, threshold: int):
        self.monkeypatch.setattr(self.module, "LOOKUP_MIN_KEYS", threshold)
        return engine.execute(sql)

    def merge(self, sql: str, *, looked_up: bool = True):
        """Run ``sql`` both ways; both must give the same counts and leave the same rows. Returns the lookup
        run's result and the rows."""
        result = self.run(self.lookup, sql, LOOKUP)
        reference = self.run(self.reference, sql, SPARK_PLAN)
        assert _lookup_scan(reference) is None
        assert (_lookup_scan(result) is not None) is looked_up, result.metrics["scans"]
        for key in ("inserted", "updated", "deleted", "per_case"):
            assert result.metrics[key] == reference.metrics[key], key
        assert result.row_count == reference.row_count
        rows = self.rows(self.lookup)
        assert rows == self.rows(self.reference)
        return result, rows

    @staticmethod
    def rows(engine: Engine) -> list[tuple]:
        return engine.execute("SELECT * FROM t ORDER BY 1").rows()


# (without automatic compaction, which would rewrite the key histories these tests build into one sorted file)
_TABLE = (
    "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR, n INTEGER, x DOUBLE, d DATE, PRIMARY KEY (id)) "
    "WITH (auto_compact = false)"
)


def _history_statements() -> list[str]:
    """Base files over 0..599 (several files: the index has cut points), then deltas: updates, deletes, keys
    deleted and back, keys only in deltas."""
    return [
        _TABLE,
        "INSERT INTO t SELECT id, 'base', CAST(id % 7 AS INTEGER), id * 0.5, DATE '2024-01-01' "
        "FROM UNNEST(sequence(0, 599)) AS x(id)",
        "UPDATE t SET v = 'upd', n = NULL WHERE id % 10 = 1",
        "DELETE FROM t WHERE id % 10 = 2",
        "INSERT INTO t SELECT id, 'back', 3, 1.5, DATE '2024-02-02' FROM UNNEST(sequence(2, 599, 30)) AS x(id)",
        "INSERT INTO t SELECT id, 'delta', 4, 2.5, NULL FROM UNNEST(sequence(600, 619)) AS x(id)",
    ]


_MERGE = (
    "MERGE INTO t USING src s ON t.id = s.id "
    "WHEN MATCHED AND s.op = 'D' THEN DELETE "
    "WHEN MATCHED AND (s.op = 'U' OR t.n IS NULL) THEN UPDATE SET v = s.v, n = s.n, x = t.x + s.x, d = s.d "
    "WHEN NOT MATCHED AND s.id IS NOT NULL AND NOT (s.op = 'D') THEN INSERT VALUES (s.id, s.v, s.n, s.x, s.d) "
    "WHEN NOT MATCHED AND s.id IS NOT NULL THEN INSERT (id, v) VALUES (s.id, 'fallthrough')"
)


@pytest.mark.parametrize("tier", ["spark", "driver"])
def test_lookup_merge_gives_the_spark_plans_result(spark, tmp_path, monkeypatch, tier: str) -> None:
    """Every kind of key history, keys between and beyond the files' ranges, NULL keys and values, conditions
    with three-valued logic, a DOUBLE sum, cases no row reaches: the lookup path's rows and counts are the
    Spark plan's, and what a user expects, on either tier."""
    pair = _Pair(spark, tmp_path, monkeypatch, tier=tier, rows_per_file=100)
    pair.setup(*_history_statements())
    live = {r[0]: r[1:] for r in pair.rows(pair.lookup)}
    day = datetime.date(2025, 5, 5)
    src = []
    for i in [*range(0, 640, 3), 10_000, 10_003, -5]:
        op = "D" if i % 9 == 0 else ("U" if i % 2 == 0 else "K")
        src.append((i, op, f"m{i}", None if i % 5 == 0 else i % 11, 0.25, day))
    src += [(None, "I", "nullkey", 1, 1.0, day), (None, "D", "nullkey-d", 2, 2.0, day)]
    # no operation: NULL conditions take no case, except where OR or a later case decides
    src += [(11, None, "op11", 1, 1.0, day), (13, None, "op13", 1, 1.0, day), (651, None, "op651", 1, 1.0, day)]
    pair.source("src", src, "id BIGINT, op STRING, v STRING, n INT, x DOUBLE, d DATE")
    result, rows = pair.merge(_MERGE)

    expected = dict(live)
    for i, op, v, n, x, d in src:
        if i in live:
            if op == "D":
                del expected[i]
            elif op == "U" or live[i][1] is None:
                expected[i] = (v, n, live[i][2] + x if live[i][2] is not None else None, d)
        elif i is not None and op is not None and op != "D":
            expected[i] = (v, n, x, d)
        elif i is not None:
            expected[i] = ("fallthrough", None, None, None)
    assert rows == sorted((i, *r) for i, r in expected.items())
    if tier == "spark":
        assert _lookup_scan(result)["ranges"] >= 2  # the journal's files cut the keys into ranges, one task each
    else:
        assert (_lookup_scan(result)["ranges"], result.metrics["tier"]) == (0, "driver")  # no task: this process


def test_lookup_merge_of_a_single_row_and_of_an_empty_source(spark, tmp_path, monkeypatch) -> None:
    pair = _Pair(spark, tmp_path, monkeypatch)
    pair.setup(_TABLE, "INSERT INTO t VALUES (1, 'a', 1, 1.0, NULL), (2, 'b', 2, 2.0, NULL)")
    pair.source("src", [(2, "U", "B", 20, 0.5, None)], "id BIGINT, op STRING, v STRING, n INT, x DOUBLE, d DATE")
    _, rows = pair.merge(_MERGE)
    assert rows == [(1, "a", 1, 1.0, None), (2, "B", 20, 2.5, None)]
    pair.source("src", [], "id BIGINT, op STRING, v STRING, n INT, x DOUBLE, d DATE")
    result, after = pair.merge(_MERGE)
    assert result.row_count == 0 and after == rows


def test_lookup_merge_errors_leave_the_table_unchanged(spark, tmp_path, monkeypatch) -> None:
    """Two source rows for one target row, and a NULL for a NOT NULL column, fail with the Spark plan's codes
    and leave every committed row as it was."""
    pair = _Pair(spark, tmp_path, monkeypatch, rows_per_file=50)
    pair.setup(
        "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR NOT NULL, PRIMARY KEY (id))",
        "INSERT INTO t SELECT id, 'base' FROM UNNEST(sequence(0, 199)) AS x(id)",
    )
    before = pair.rows(pair.lookup)
    repeated = [(i, f"r{i}") for i in range(0, 150)] + [(77, "again")]
    pair.source("dup", repeated, "id BIGINT, v STRING")
    nulls = [(i, None if i == 250 else f"n{i}") for i in range(100, 260)]
    pair.source("nulls", nulls, "id BIGINT, v STRING")
    statements = {
        "MERGE INTO t USING dup s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v": (
            ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
        ),
        "MERGE INTO t USING nulls s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)": ErrorCode.CONSTRAINT_VIOLATION,
    }
    import mergekit.execution.dml.run as statement_module

    calls = []
    real = statement_module.run_lookup_merge
    monkeypatch.setattr(statement_module, "run_lookup_merge", lambda *a, **k: calls.append(1) or real(*a, **k))
    for sql, code in statements.items():
        for engine, threshold in ((pair.lookup, LOOKUP), (pair.reference, SPARK_PLAN)):
            with pytest.raises(MergekitError) as info:
                pair.run(engine, sql, threshold)
            assert info.value.code is code, info.value
            assert pair.rows(engine) == before
    assert len(calls) == 2  # both statements ran on the lookup path in the lookup engine
    # a repeated key that no case changes is no error (Trino checks only rows a case changes)
    pair.merge("MERGE INTO t USING dup s ON t.id = s.id WHEN MATCHED AND s.v = 'never' THEN DELETE")


def test_lookup_merge_key_types_and_what_falls_back_to_spark(spark, tmp_path, monkeypatch) -> None:
    """An INTEGER source key joins a BIGINT key exactly; VARCHAR keys compare byte-wise (case and trailing
    blanks differ). Statements Arrow would not evaluate as Spark does run the Spark plan instead: DOUBLE keys,
    functions, division, comparisons of DOUBLEs (NaN), a second ON conjunct."""
    pair = _Pair(spark, tmp_path, monkeypatch, rows_per_file=60)
    pair.setup(
        "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR, n INTEGER, x DOUBLE, PRIMARY KEY (id))",
        "INSERT INTO t SELECT id, 'base', CAST(id AS INTEGER), id * 1.0 FROM UNNEST(sequence(0, 299)) AS x(id)",
    )
    pair.source("ints", [(i, f"i{i}", i * 2) for i in range(0, 400, 4)], "id INT, v STRING, n INT")
    pair.merge(
        "MERGE INTO t USING ints s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n "
        "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, s.n)"
    )
    pair.source("dbl", [(float(i), "dbl") for i in range(1, 300, 4)], "id DOUBLE, v STRING")
    pair.merge("MERGE INTO t USING dbl s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v", looked_up=False)
    for fallback in (
        "MERGE INTO t USING ints s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = upper(s.v)",
        "MERGE INTO t USING ints s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = t.n / 2",
        "MERGE INTO t USING ints s ON t.id = s.id WHEN MATCHED AND t.x > 10 THEN DELETE",
        "MERGE INTO t USING ints s ON t.id = s.id AND s.n > 10 WHEN MATCHED THEN DELETE",
    ):
        pair.merge(fallback, looked_up=False)

    narrow = _Pair(spark, tmp_path / "narrow", monkeypatch)
    narrow.setup(
        "CREATE TABLE t (id INTEGER NOT NULL, v VARCHAR, PRIMARY KEY (id))",
        "INSERT INTO t SELECT id, 'base' FROM UNNEST(sequence(0, 99)) AS x(id)",
    )
    # BIGINT source keys beyond INTEGER's range match nothing (Spark widens the target's key to compare)
    huge = [(i, "hit") for i in range(0, 100, 9)] + [(5_000_000_000, "miss"), (-(2**40), "miss")]
    narrow.source("huge", huge, "id BIGINT, v STRING")
    result, rows = narrow.merge("MERGE INTO t USING huge s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    assert result.row_count == 12 and len(rows) == 100 and sum(v == "hit" for _, v in rows) == 12

    strings = _Pair(spark, tmp_path / "strings", monkeypatch, rows_per_file=30)
    strings.setup(
        "CREATE TABLE t (code VARCHAR NOT NULL, n INTEGER, PRIMARY KEY (code))",
        "INSERT INTO t SELECT 'k' || CAST(i AS VARCHAR), i FROM UNNEST(sequence(0, 99)) AS x(i)",
    )
    src = [(f"k{i}", i + 1000) for i in range(0, 120, 4)] + [("K8", 1), ("k8 ", 2)]
    strings.source("src", src, "code STRING, n INT")
    _, rows = strings.merge(
        "MERGE INTO t USING src s ON s.code = t.code WHEN MATCHED THEN UPDATE SET n = s.n "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.code, s.n)"
    )
    found = dict(rows)
    assert found["k8"] == 1008 and found["K8"] == 1 and found["k8 "] == 2 and found["k9"] == 9 and len(found) == 107


def test_update_that_moves_a_key_by_lookup(spark, tmp_path, monkeypatch) -> None:
    """SET on the key column itself: the old key disappears, the new one appears (the journal's key move)."""
    pair = _Pair(spark, tmp_path, monkeypatch)
    pair.setup(
        "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (id))",
        "INSERT INTO t SELECT id, 'base' FROM UNNEST(sequence(0, 99)) AS x(id)",
    )
    pair.source("moves", [(i, i + 1000) for i in range(0, 100, 10)], "id BIGINT, new_id BIGINT")
    _, rows = pair.merge("MERGE INTO t USING moves s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = s.new_id")
    ids = {r[0] for r in rows}
    assert len(rows) == 100 and 1000 in ids and 0 not in ids and 1090 in ids and 1 in ids


def test_lookup_merge_computes_date_arithmetic(spark, tmp_path, monkeypatch) -> None:
    """Date arithmetic (an extension to Trino) runs in Arrow on the lookup path with the Spark plan's results. A date
    out of range fails with the Spark plan's error and changes nothing; a condition that would overflow on a row an
    earlier case took is not evaluated on it, as in Spark's CASE."""
    pair = _Pair(spark, tmp_path, monkeypatch, rows_per_file=50)
    pair.setup(
        "CREATE TABLE t (id BIGINT NOT NULL, d DATE, n INTEGER, PRIMARY KEY (id))",
        "INSERT INTO t SELECT id, DATE '2024-01-01' + CAST(id AS INTEGER), NULL FROM UNNEST(sequence(0, 199)) AS x(id)",
    )
    day = datetime.date(2025, 1, 1)
    rows = [(i, i % 5 - 2, day if i % 2 else None) for i in range(0, 240, 3)] + [(7, 2_000_000_000, day)]
    pair.source("src", rows, "id BIGINT, days INT, d DATE")
    _, after = pair.merge(
        "MERGE INTO t USING src s ON t.id = s.id "
        "WHEN MATCHED AND s.days > 1000 THEN DELETE "
        "WHEN MATCHED AND t.d + s.days > DATE '2024-01-31' THEN UPDATE SET d = t.d - s.days, n = s.d - t.d "
        "WHEN NOT MATCHED THEN INSERT (id, d) VALUES (s.id, s.days + s.d)"
    )
    expected = {i: (datetime.date(2024, 1, 1) + datetime.timedelta(days=i), None) for i in range(200)}
    for i, days, d in rows:
        if i not in expected:
            expected[i] = (d + datetime.timedelta(days=days) if d else None, None)
        elif days > 1000:
            del expected[i]
        elif expected[i][0] + datetime.timedelta(days=days) > datetime.date(2024, 1, 31):
            old = expected[i][0]
            expected[i] = (old - datetime.timedelta(days=days), (d - old).days if d else None)
    assert after == sorted((i, *v) for i, v in expected.items())
    pair.source(
        "bad", [(i, 2_000_000_000 if i == 8 else 1, day) for i in range(0, 20, 4)], "id BIGINT, days INT, d DATE"
    )
    before = pair.rows(pair.lookup)
    statement = "MERGE INTO t USING bad s ON t.id = s.id WHEN MATCHED THEN UPDATE SET d = t.d + s.days"
    for engine, threshold in ((pair.lookup, LOOKUP), (pair.reference, SPARK_PLAN)):
        with pytest.raises(MergekitError) as info:
            pair.run(engine, statement, threshold)
        assert str(info.value) == "[NUMERIC_VALUE_OUT_OF_RANGE] Date out of range: 2024-01-09 + 2000000000"
        assert pair.rows(engine) == before


def test_lookup_merge_computes_integer_arithmetic(spark, tmp_path, monkeypatch) -> None:
    """Integer arithmetic runs in Arrow on the lookup path (issue 27: the compiler row-level statements use) with
    the Spark plan's results and errors: overflow as Spark's ANSI arithmetic raises it, negation, a wider integer
    into a narrower column (Spark's CAST), and what may overflow evaluated only where Spark evaluates it: not on a
    row an earlier case took (7), not where the left side of AND decides (8), not where the left operand is NULL
    (multiples of 15). Each failing statement changes nothing."""
    pair = _Pair(spark, tmp_path, monkeypatch, rows_per_file=50)
    pair.setup(
        "CREATE TABLE t (id BIGINT NOT NULL, n INTEGER, small TINYINT, b BIGINT, PRIMARY KEY (id))",
        "INSERT INTO t SELECT id, CAST(id AS INTEGER), CAST(id % 100 AS TINYINT), id * 1000 "
        "FROM UNNEST(sequence(0, 199)) AS x(id)",
    )
    rows = [(i, i % 7 - 3, None if i % 5 == 0 else i, 2_000_000_000 if i % 5 == 0 else 1) for i in range(0, 240, 3)]
    rows += [(7, 2_000_000_000, 1, 1), (8, -2_000_000_000, 1, 1)]
    pair.source("src", rows, "id BIGINT, k INT, m INT, big INT")
    _, after = pair.merge(
        "MERGE INTO t USING src s ON t.id = s.id "
        "WHEN MATCHED AND s.k > 1000 THEN DELETE "
        "WHEN MATCHED AND s.k > 0 AND t.n * s.k > 10 THEN UPDATE SET n = t.n * s.k - s.m, small = s.k + 1, "
        "b = t.b + s.id * 2 "
        "WHEN MATCHED AND s.m + t.n * s.big > 100 THEN UPDATE SET n = -t.n "
        "WHEN NOT MATCHED THEN INSERT (id, n, small, b) VALUES (s.id, -s.k, s.k, s.id * s.k)"
    )
    found = {r[0]: r[1:] for r in after}
    assert 7 not in found and found[8] == (8, 8, 8000) and found[201] == (-2, 2, 402)  # k = 201 % 7 - 3 = 2
    assert found[18] == (0, 2, 18036) and found[15] == (15, 15, 15000) and found[57] == (-57, 57, 57000)

    pair.source("bad", [(3, 1, 1, 1), (99, -(2**31), 2**31 - 1, 1000)], "id BIGINT, k INT, m INT, big INT")
    before = pair.rows(pair.lookup)
    assert before == pair.rows(pair.reference)
    for sets, message in (
        ("n = s.m - t.n", "Numeric overflow in subtraction"),  # t.n of row 99 is -99 now
        ("small = t.small + t.small", "tinyint addition overflow: 99 + 99"),
        ("n = -s.k", "Numeric value out of range"),
        ("small = s.big", "Out of range for tinyint: 1000"),
    ):
        statement = f"MERGE INTO t USING bad s ON t.id = s.id WHEN MATCHED THEN UPDATE SET {sets}"
        for engine, threshold in ((pair.lookup, LOOKUP), (pair.reference, SPARK_PLAN)):
            with pytest.raises(MergekitError) as info:
                pair.run(engine, statement, threshold)
            assert str(info.value) == f"[NUMERIC_VALUE_OUT_OF_RANGE] {message}", statement
            assert pair.rows(engine) == before
    # the same statements where nothing overflows take the lookup path
    pair.source("good", [(3, 1, 1, 5), (98, 2, 3, 4)], "id BIGINT, k INT, m INT, big INT")
    pair.merge("MERGE INTO t USING good s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = -s.k + t.n, small = s.big")
