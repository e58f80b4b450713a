"""Where the Spark tier starts to pay for itself for a MERGE by index lookups of an in-memory source.

``planner/cost.py``'s bounds for the driver tier (``DRIVER_LOOKUP_MAX_KEYS`` for a source Spark would read,
``DRIVER_ARROW_MAX_ROWS`` for an Arrow table registered with ``Engine.register_arrow``) come from here. One process,
one ``Engine.local`` over a journal table of each ``--rows`` size (BIGINT ``id`` primary key, 5 columns, loaded with
``insert_arrow`` in random id order and compacted), then for each ``--sources`` size an upsert (half the source rows
update random live ids, half insert new ones) from an Arrow table registered by name::

    MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET ... WHEN NOT MATCHED THEN INSERT ...

``--reps`` times on each tier, alternating (``SET SESSION driver_tier = 'auto'`` with the bounds lifted, then
``'off'``): the driver tier reads the Arrow table as it is; the Spark tier reads a DataFrame made of it (what a
statement on Spark does with a registered Arrow table). Each timed run includes ``register_arrow``. The first run of
each pair is not counted (warm-up). Prints::

    RESULT {...}
    seconds driver_lookup_<rows>_<source>_<tier> V      (median)
    ratio driver_lookup_<rows>_<source>_driver_vs_spark V

Not a test: nothing here is asserted by pytest. ``python -m bench.driver_lookup [--rows 1M,10M] [--sources
10k,100k,1M] [--reps 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.harness import _loadavg, _size, start_report  # noqa: E402
from bench.systems import UPSERT_WHEN  # noqa: E402
from bench.workload import label  # noqa: E402

UPSERT = "MERGE INTO t USING s ON t.id = s.id " + UPSERT_WHEN.format(table="t")


def _rows(ids: list[int]) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "grp": pa.array([i % 10 for i in ids], pa.int32()),
            "name": pa.array([f"n{i}" for i in ids]),
            "amount": pa.array([float(i % 1000) for i in ids]),
            "updated": pa.array([19000 + i % 1000 for i in ids], pa.int32()).cast(pa.date32()),
        }
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="1M,10M", help="target table sizes")
    p.add_argument("--sources", default="10k,100k,1M", help="source sizes (at most a tenth of the table is used)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    from mergekit import Engine
    from mergekit.planner import cost

    out = start_report("bench.driver_lookup", {"rows": args.rows, "sources": args.sources, "reps": args.reps})
    rnd = random.Random(42)
    results: dict[str, Any] = {}
    lines: list[str] = []
    for n in [_size(x) for x in args.rows.split(",")]:
        with tempfile.TemporaryDirectory(prefix="mk-driver-lookup-") as warehouse:
            engine = Engine.local(warehouse, connector="journal", version_type="bigint")
            engine.execute(
                "CREATE TABLE t (id bigint, grp integer, name varchar, amount double, updated date, PRIMARY KEY (id))"
            )
            ids = list(range(n))
            rnd.shuffle(ids)
            for start in range(0, n, 2_000_000):
                engine.insert_arrow("t", _rows(ids[start : start + 2_000_000]))
            engine.execute("CALL lake.system.compact(table => 'default.t')")
            next_id = n
            for k in [_size(x) for x in args.sources.split(",")]:
                if k > n // 10:
                    continue
                times: dict[str, list[float]] = {"driver": [], "spark": []}
                for rep in range(args.reps + 1):
                    for tier in ("driver", "spark"):
                        source = _rows(rnd.sample(range(n), k // 2) + list(range(next_id, next_id + k - k // 2)))
                        next_id += k - k // 2
                        engine.execute(f"SET SESSION driver_tier = '{'auto' if tier == 'driver' else 'off'}'")
                        saved = cost.DRIVER_LOOKUP_MAX_KEYS, cost.DRIVER_ARROW_MAX_ROWS
                        cost.DRIVER_LOOKUP_MAX_KEYS = cost.DRIVER_ARROW_MAX_ROWS = 1 << 40
                        try:
                            t0 = time.perf_counter()
                            engine.register_arrow("s", source)
                            res = engine.execute(UPSERT)
                            seconds = time.perf_counter() - t0
                        finally:
                            cost.DRIVER_LOOKUP_MAX_KEYS, cost.DRIVER_ARROW_MAX_ROWS = saved
                        assert res.row_count == k and res.metrics.get("tier", "spark") == tier, (res.metrics, tier)
                        print(f"[driver_lookup] {label(n)}/{label(k)} rep {rep} {tier}: {seconds:.3f}s", flush=True)
                        if rep:
                            times[tier].append(seconds)
                key = f"{label(n)}_{label(k)}"
                med = {tier: statistics.median(v) for tier, v in times.items()}
                results[key] = {"seconds": times, "median": med}
                for tier in ("driver", "spark"):
                    lines.append(f"seconds driver_lookup_{key}_{tier} {med[tier]:.3f}")
                lines.append(f"ratio driver_lookup_{key}_driver_vs_spark {med['driver'] / med['spark']:.2f}")
            engine.close()
    out["results"] = results
    out["loadavg_end"] = _loadavg()
    print("RESULT " + json.dumps(out, default=str), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    for line in lines:
        print(line, flush=True)


if __name__ == "__main__":
    main()
