"""A 1-row MERGE in the caller's own Spark session with Spark's defaults, against the same in ``Engine.local()``.

Issue 26, row 4: a session with Spark's default ``spark.sql.shuffle.partitions`` (200) used to make every 1-row
MERGE run 200 writer tasks (16-32 s). mergekit now sizes its stages by their data (adaptive execution coalesces
the shuffles it does not size itself), so the cost follows the statement, not the session's settings.

Each side runs in a fresh process: load a journal table of ``--rows`` rows with a primary key, then one cold and
``--warm`` warm 1-row MERGEs (an update of an existing id); the median warm time is the figure. Prints

    RESULT {...}                                   (one line per side)
    ratio 1row_default_session_vs_local X          (median warm, caller's default session / Engine.local)

Not a test: nothing here is asserted by pytest. ``python -m bench.session [--rows 100000] [--warm 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MERGE = (
    "MERGE INTO t USING (VALUES ({id}, 'x{i}', {i}.5)) AS s(id, name, amount) ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET name = s.name, amount = t.amount + s.amount "
    "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.amount)"
)


def _worker(side: str, rows: int, warm: int) -> dict[str, object]:
    warehouse = tempfile.mkdtemp(prefix=f"mergekit-bench-session-{side}-")
    if side == "default_session":
        from pyspark.sql import SparkSession

        # the caller's session as a PySpark user makes it: nothing but the master (PYSPARK_PYTHON points at this
        # interpreter, as a virtualenv user's does)
        spark = SparkSession.builder.master("local[2]").appName("caller").getOrCreate()
        spark.sparkContext.setLogLevel("OFF")
        from mergekit import Engine

        engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": warehouse}})
    else:
        from mergekit import Engine

        engine = Engine.local(warehouse)
    spark = engine.spark
    settings = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    engine.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, amount DOUBLE, PRIMARY KEY (id))")
    engine.register_dataframe("ids", spark.range(rows))
    engine.execute("INSERT INTO t SELECT id, 'n' || CAST(id AS VARCHAR), 1.0 FROM ids")
    times = []
    for i in range(warm + 1):
        start = time.perf_counter()
        result = engine.execute(MERGE.format(id=(i * 7919) % rows, i=i))
        times.append(time.perf_counter() - start)
        assert result.row_count == 1, result
    check = engine.execute("SELECT count(*), sum(amount) FROM t").rows()[0]
    engine.close()
    return {
        "side": side,
        "rows": rows,
        "cold_s": round(times[0], 3),
        "warm_s": [round(t, 3) for t in times[1:]],
        "warm_median_s": round(statistics.median(times[1:]), 3),
        "strategy": result.metrics.get("strategy"),
        "session_settings_after": settings,
        "check": list(check),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--warm", type=int, default=5)
    p.add_argument("--side", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side:
        print("RESULT " + json.dumps(_worker(args.side, args.rows, args.warm)), flush=True)
        return
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    results = {}
    for side in ("default_session", "engine_local"):
        out = subprocess.run(
            [sys.executable, "-m", "bench.session", "--side", side, "--rows", str(args.rows), "--warm", str(args.warm)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            sys.exit(f"{side} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
        results[side] = json.loads(line[len("RESULT ") :])
        print(line, flush=True)
    assert results["default_session"]["check"] == results["engine_local"]["check"], results
    ratio = results["default_session"]["warm_median_s"] / results["engine_local"]["warm_median_s"]
    print(f"ratio 1row_default_session_vs_local {ratio:.2f}", flush=True)


if __name__ == "__main__":
    main()
