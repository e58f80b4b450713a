"""Small INSERTs of constants on the driver tier against the same on Spark (``SET SESSION driver_tier = 'off'``).

Issue 29's first step: ``INSERT INTO t VALUES ...`` of constants runs in the engine's process without a Spark job
(docs/architecture.md, "The driver tier"). One process, one journal table with a primary key and one memory table;
for each, ``--statements`` INSERTs of ``--rows`` new rows each, alternating the two tiers statement by statement so
both see the same machine load. Prints

    RESULT {...}                                       (per connector and tier: median and p90 seconds)
    ratio insert_values_<connector>_driver_vs_spark X  (median, driver tier / Spark tier)

Not a test: nothing here is asserted by pytest. ``python -m bench.driver_insert [--statements 100] [--rows 10]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=100)
    parser.add_argument("--rows", type=int, default=10)
    args = parser.parse_args()

    from mergekit import Engine

    warehouse = tempfile.mkdtemp(prefix="mergekit-bench-driver-insert-")
    engine = Engine.local(
        warehouse, catalogs={"lake": {"connector": "journal", "warehouse": warehouse}, "mem": {"connector": "memory"}}
    )
    try:
        for table in ("lake.default.t", "mem.default.t"):
            engine.execute(f"CREATE TABLE {table} (id bigint, name varchar, n integer, PRIMARY KEY (id))")
        times: dict[tuple[str, str], list[float]] = {}
        next_id = 0
        for i in range(args.statements + 2):  # the first two of each side warm up
            for tier in ("auto", "off"):
                engine.execute(f"SET SESSION driver_tier = '{tier}'")
                for table in ("lake.default.t", "mem.default.t"):
                    rows = []
                    for _ in range(args.rows):
                        rows.append(f"({next_id}, 'name {next_id}', {next_id % 1000})")
                        next_id += 1
                    start = time.perf_counter()
                    result = engine.execute(f"INSERT INTO {table} VALUES {', '.join(rows)}")
                    elapsed = time.perf_counter() - start
                    assert result.row_count == args.rows
                    assert (result.metrics["strategy"] == "driver_append") == (tier == "auto"), result.metrics
                    if i >= 2:
                        times.setdefault((table.split(".")[0], tier), []).append(elapsed)
        for connector in ("lake", "mem"):
            medians = {}
            for tier in ("auto", "off"):
                t = sorted(times[(connector, tier)])
                medians[tier] = statistics.median(t)
                record = {
                    "connector": "journal" if connector == "lake" else "memory",
                    "tier": "driver" if tier == "auto" else "spark",
                    "statements": len(t),
                    "rows": args.rows,
                    "median_s": round(medians[tier], 4),
                    "p90_s": round(t[int(len(t) * 0.9) - 1], 4),
                }
                print("RESULT " + json.dumps(record))
            name = "journal" if connector == "lake" else "memory"
            print(f"ratio insert_values_{name}_driver_vs_spark {medians['auto'] / medians['off']:.3f}")
    finally:
        engine.close()


if __name__ == "__main__":
    main()
