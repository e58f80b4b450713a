"""Small statements on the driver tier against the same on Spark (``SET SESSION driver_tier = 'off'``).

Issue 29 (docs/architecture.md, "The driver tier"): an ``INSERT INTO t VALUES ...`` of constants, a ``MERGE INTO t
USING (VALUES ...) AS s(...) ON t.id = s.id ...`` into a table with an index, an UPDATE or DELETE by key and a point
SELECT, run in the engine's process without a Spark job. One process; a journal table (primary key, ``--rows`` rows loaded), a sqldb
table in SQLite (same) and a memory table (INSERT only: it has no index); for each, ``--statements`` statements of
each kind, alternating the two tiers statement by statement so both see the same machine load:

- ``insert``: 10 new rows of constants;
- ``upsert1``: a 1-row MERGE (update of an existing id or insert of a new one), Trino's upsert;
- ``upsert10``: the same with 10 source rows;
- ``update1``: ``UPDATE t SET n = n + 1 WHERE id = <an existing id>`` (the MERGE it means, by the index);
- ``delete1``: ``DELETE FROM t WHERE id = <an id inserted by an earlier statement>``;
- ``point``: ``SELECT * FROM t WHERE id = <an existing id>`` (the journal reads that key's rows through its splits).

Prints

    RESULT {...}                                   (per connector, statement and tier: median and p90 seconds)
    ratio <statement>_<connector>_driver_vs_spark X  (median, driver tier / Spark tier)

Not a test: nothing here is asserted by pytest. ``python -m bench.driver_tier [--statements 60] [--rows 100000]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time

UPSERT = (
    "MERGE INTO {table} AS t USING (VALUES {rows}) AS s(id, name, n) ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET name = s.name, n = t.n + s.n WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.n)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=60)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()

    from mergekit import Engine

    warehouse = tempfile.mkdtemp(prefix="mergekit-bench-driver-tier-")
    catalogs = {
        "journal": {"connector": "journal", "warehouse": warehouse},
        "sqldb": {"connector": "sqldb", "uri": f"sqlite:///{warehouse}/db.sqlite"},
        "memory": {"connector": "memory"},
    }
    engine = Engine.local(warehouse, catalogs=catalogs)
    rng = random.Random(42)
    try:
        for catalog in catalogs:
            engine.execute(f"CREATE TABLE {catalog}.default.t (id bigint, name varchar, n integer, PRIMARY KEY (id))")
            for start in range(0, args.rows, 10_000):  # sequence() holds at most 10,000 entries (Trino)
                engine.execute(
                    f"INSERT INTO {catalog}.default.t SELECT id, 'name ' || CAST(id AS varchar), CAST(id % 1000 AS "
                    f"integer) FROM UNNEST(sequence({start}, {min(start + 10_000, args.rows) - 1})) AS x(id)"
                )
        next_id = args.rows

        def statement(kind: str, table: str) -> str:
            nonlocal next_id
            if kind == "insert":
                rows = [f"({next_id + i}, 'new {next_id + i}', {i})" for i in range(10)]
                next_id += 10
                return f"INSERT INTO {table} VALUES {', '.join(rows)}"
            if kind == "update1":
                return f"UPDATE {table} SET n = n + 1 WHERE id = {rng.randrange(args.rows)}"
            if kind == "delete1":
                return f"DELETE FROM {table} WHERE id = {rng.randrange(args.rows, next_id)}"
            if kind == "point":
                return f"SELECT * FROM {table} WHERE id = {rng.randrange(args.rows)}"
            n = 1 if kind == "upsert1" else 10
            ids = [rng.randrange(args.rows) if rng.random() < 0.7 else next_id + i for i in range(n)]
            next_id += n
            return UPSERT.format(table=table, rows=", ".join(f"({i}, 'upd {i}', 1)" for i in dict.fromkeys(ids)))

        keyed = ("insert", "upsert1", "upsert10", "update1", "delete1", "point")
        kinds = {"journal": keyed, "sqldb": keyed, "memory": ("insert",)}
        times: dict[tuple[str, str, str], list[float]] = {}
        for i in range(args.statements + 2):  # the first two of each side warm up
            for tier in ("auto", "off"):
                engine.execute(f"SET SESSION driver_tier = '{tier}'")
                for catalog, statements in kinds.items():
                    for kind in statements:
                        sql = statement(kind, f"{catalog}.default.t")
                        start = time.perf_counter()
                        result = engine.execute(sql)
                        elapsed = time.perf_counter() - start
                        if kind == "point":
                            result.rows()
                        ran = result.metrics.get("tier", "spark")  # (a query on Spark names no tier)
                        assert (ran == "driver") == (tier == "auto"), (sql, result.metrics)
                        if i >= 2:
                            times.setdefault((catalog, kind, tier), []).append(elapsed)
        for catalog, statements in kinds.items():
            for kind in statements:
                medians = {}
                for tier in ("auto", "off"):
                    t = sorted(times[(catalog, kind, tier)])
                    medians[tier] = statistics.median(t)
                    record = {
                        "connector": catalog,
                        "statement": kind,
                        "tier": "driver" if tier == "auto" else "spark",
                        "statements": len(t),
                        "table_rows": args.rows,
                        "median_s": round(medians[tier], 4),
                        "p90_s": round(t[int(len(t) * 0.9) - 1], 4),
                    }
                    print("RESULT " + json.dumps(record), flush=True)
                print(f"ratio {kind}_{catalog}_driver_vs_spark {medians['auto'] / medians['off']:.3f}", flush=True)
    finally:
        engine.close()


if __name__ == "__main__":
    main()
