"""Issue 29's small-commit bench: many successive 10-row upserts into a big journal table, in one process.

    .venv/bin/python -m bench.small_commits                              # 10M rows, 10,000 upserts of 10 rows
    .venv/bin/python -m bench.small_commits --rows 200k --commits 300    # a small try-out (about a minute)
    .venv/bin/python -m bench.small_commits --rows 200k --commits 300 --profile 25   # + where a commit's time goes

One process, one ``Engine.local(warehouse, connector="journal", version_type="bigint")`` (catalog ``lake``; the
version type is the loaded table's; nothing else set: no ``SET SESSION``, no table property) over a copy of the
journal table ``bench.run`` loads T of ``--rows`` rows into (``T-<n>-seed<seed>/loaded-journal`` under ``--data``,
``PRIMARY KEY (id)``, loaded once and reused while the code that wrote it is unchanged; ``--reload``). Then:

1. **Warm-up** (untimed): ``--warmup`` upserts into a small table of its own in the same catalog, so that the first
   measured commit is not also the process's first statement (imports, the first compilations).
2. **Commits**: ``--commits`` successive upserts of ``--batch`` rows each, as an application writes them::

       MERGE INTO t USING (VALUES (id, grp, name, amount, updated), ...) AS s(id, grp, name, amount, updated)
       ON t.id = s.id
       WHEN MATCHED THEN UPDATE SET grp = s.grp, name = s.name, amount = t.amount + s.amount, updated = s.updated
       WHEN NOT MATCHED THEN INSERT (id, grp, name, amount, updated) VALUES (s.id, s.grp, s.name, s.amount, ...)

   ``--new-fraction`` (0.3) of each batch are new ids, the rest distinct live ids drawn at random (seeded) from all
   ids live so far. ``amount`` (a DOUBLE column) is written as a DOUBLE literal, ``12.25E0``; ``--amount-literal
   decimal`` writes ``12.25`` (a DECIMAL in Trino's SQL), ``integer`` whole numbers. Statements are written before the loop; the loop times each ``engine.execute`` and the wall
   time of the whole run. Figures: commits/s over the whole run, and per window of ``--window`` consecutive commits
   (500; fewer for short runs: at least 5 windows) the lowest ("sustained"), the first and the last; latency
   median / p90 / p99 / max; which tiers and strategies ran (``Result.metrics``), whether Spark started; data files
   in the warehouse; the process's RSS before and after. ``--max-seconds`` stops the loop early (a ``NOTE`` line
   says so; the rates are over the commits made, and the reads follow them).
3. **Full read**: ``bench.run``'s history read (``SELECT count(*), sum(id), sum(grp), max(name), sum(amount),
   max(updated) FROM t``: every column of every live row) of the table and of a copy of it (data files
   hard-linked) after ``CALL compact`` (timed): each once untimed (the first starts Spark), then ``--reads`` (3)
   times each, in turn, so both are read by an equally warm JVM. The figure is median read after the commits /
   median read after compaction (issue 29: at most 1.3).

Every read is checked: row count = ``--rows`` + the new ids, ``sum(amount)`` = T's (pyarrow) + every source row's
amount (an update adds it, an insert sets it), relative tolerance 1e-9; each upsert must change ``--batch`` rows
(inserted and updated as drawn). A mismatch is a ``PROBLEM`` line and exit status 1. Output ends with

    RESULT {...}                                     (everything, also written by --json FILE)
    NOTE stopped after N of M upserts ...            (only with --max-seconds, when it stopped the loop)
    metric small_upserts_commits_done N              (the upserts made: --commits unless --max-seconds stopped them)
    metric small_upserts_commits_per_s V             (the lowest window's commits/s: the sustained rate)
    metric small_upserts_commits_per_s_overall V     (commits / wall time of the loop)
    metric small_upserts_read_vs_compacted V         (median read after the commits / median after compaction)
    seconds small_upserts_read / small_upserts_read_compacted / small_upserts_compact V

Not a test: nothing here is asserted by pytest.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import datetime as dt
import io
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.harness import _copy_warehouse, _loadavg, _now, _size, loaded_journal, start_report  # noqa: E402
from bench.systems import COLUMNS, COMPACT_SQL, READ_SQL, UPSERT_WHEN  # noqa: E402
from bench.workload import EPOCH, label  # noqa: E402

UPSERT = (
    "MERGE INTO {table} USING (VALUES {rows}) AS s(id, grp, name, amount, updated) ON {table}.id = s.id " + UPSERT_WHEN
)


# How a source row writes its amount (``--amount-literal``): a DOUBLE literal (the column's type), a DECIMAL one (what
# ``12.25`` is in Trino) or a whole number (an INTEGER literal).
AMOUNT_LITERALS = {
    "double": lambda cents: f"{cents // 100}.{cents % 100:02d}E0",
    "decimal": lambda cents: f"{cents // 100}.{cents % 100:02d}",
    "integer": lambda cents: str(cents // 100),
}


def _row(rng: random.Random, key: int, amount_literal: str) -> tuple[str, int]:
    """One source row's SQL and its amount in cents (the literal's value is exactly cents / 100)."""
    cents = rng.randrange(100_000)
    if amount_literal == "integer":
        cents -= cents % 100
    day = EPOCH + dt.timedelta(days=rng.randrange(2000))
    amount = AMOUNT_LITERALS[amount_literal](cents)
    return f"({key}, {rng.randrange(1000)}, 'u{key}', {amount}, DATE '{day}')", cents


def _statements(
    n_rows: int, commits: int, batch: int, new_fraction: float, seed: int, amount_literal: str, table: str = "t"
) -> list[dict[str, Any]]:
    """The upserts, drawn before anything is timed: each one's SQL, its inserted and updated rows and the sum of its
    amounts (cents). The live ids are always ``0..next_id-1`` (T's ids, then the new ones; nothing is deleted):
    existing ids are distinct draws from them, new ids continue from ``next_id``."""
    rng = random.Random(seed)
    n_new = min(batch, round(batch * new_fraction))
    next_id = n_rows
    out = []
    for _ in range(commits):
        keys = rng.sample(range(next_id), min(batch - n_new, next_id))
        inserted = batch - len(keys)
        keys += range(next_id, next_id + inserted)
        next_id += inserted
        rng.shuffle(keys)
        rows = [_row(rng, k, amount_literal) for k in keys]
        out.append(
            {
                "sql": UPSERT.format(table=table, rows=", ".join(r for r, _ in rows)),
                "inserted": inserted,
                "updated": batch - inserted,
                "cents": sum(c for _, c in rows),
            }
        )
    return out


def _rss_mib() -> float:
    """This process's resident set now, in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _files(warehouse: str) -> int:
    """Parquet data files under the warehouse (every version's: nothing is vacuumed)."""
    return sum(name.endswith(".parquet") for _, _, names in os.walk(warehouse) for name in names)


def _windows(ends: list[float], start: float, size: int) -> list[float]:
    """Commits/s of each full window of ``size`` consecutive commits, from the commits' end times."""
    rates = []
    for i in range(len(ends) // size):
        before = ends[i * size - 1] if i else start
        rates.append(size / (ends[(i + 1) * size - 1] - before))
    return rates


def _pct(values: list[float], q: float) -> float:
    """The ``q`` quantile by nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * len(s))) - 1))]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="10M", help="rows of the journal table (T of bench/workload.py)")
    p.add_argument("--commits", type=int, default=10_000, help="successive upserts")
    p.add_argument("--batch", type=int, default=10, help="rows per upsert")
    p.add_argument("--new-fraction", type=float, default=0.3, help="share of each batch that are new ids")
    p.add_argument(
        "--amount-literal",
        default="double",
        choices=sorted(AMOUNT_LITERALS),
        help="how the upserts write amount (a DOUBLE column): 12.25E0 (double, the default), 12.25, 12",
    )
    p.add_argument("--window", type=int, default=500, help="commits per window of the sustained rate")
    p.add_argument("--warmup", type=int, default=20, help="untimed upserts into a table of their own first")
    p.add_argument("--reads", type=int, default=3, help="timed full reads each side of the compaction")
    p.add_argument("--max-seconds", type=float, default=0.0, help="stop the upserts after this long (0: never)")
    p.add_argument("--profile", type=int, default=0, help="cProfile the upserts; print this many functions")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", default=os.environ.get("MERGEKIT_BENCH_DATA", "/tmp/mergekit-bench"))
    p.add_argument("--reload", action="store_true", help="load T into the journal again, even if cached")
    p.add_argument("--keep", action="store_true", help="keep the run's warehouse (printed) instead of deleting it")
    p.add_argument("--json", default=None, help="write the RESULT to this JSON file")
    args = p.parse_args()
    n_rows = _size(args.rows)
    problems: list[str] = []
    names = ("commits", "batch", "new_fraction", "amount_literal", "window", "warmup", "reads", "seed")
    out = start_report("bench.small_commits", {"rows": n_rows, **{k: getattr(args, k) for k in names}})
    print(f"[small] load average at start: {out['loadavg_start']}", flush=True)

    # the table: a copy of bench.run's loaded journal table (data files hard-linked)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    info = loaded_journal(args.data, n_rows, args.seed, args.reload, "small")
    out["load"] = info["load"]
    run_dir = os.path.join(args.data, f"small-commits-{label(n_rows)}-seed{args.seed}")
    shutil.rmtree(run_dir, ignore_errors=True)
    warehouse = os.path.join(run_dir, "warehouse")
    compacted_warehouse = os.path.join(run_dir, "compacted")
    _copy_warehouse(os.path.join(info["base"], "warehouse"), warehouse)
    initial_sum = pc.sum(pq.read_table(info["T"], columns=["amount"]).column("amount")).as_py()
    statements = _statements(n_rows, args.commits, args.batch, args.new_fraction, args.seed, args.amount_literal)
    warmups = _statements(0, args.warmup, args.batch, 0.5, args.seed + 1, args.amount_literal, table="warmup")

    from mergekit import Engine

    engine = Engine.local(warehouse, connector="journal", version_type="bigint")
    try:
        # 1. warm-up, on a table of its own
        engine.execute("CREATE TABLE warmup " + COLUMNS)
        for st in warmups:
            engine.execute(st["sql"])
        out["spark_started_by_warmup"] = engine.spark_started

        # 2. the upserts
        tiers: collections.Counter[str] = collections.Counter()
        strategies: collections.Counter[str] = collections.Counter()
        latencies: list[float] = []
        ends: list[float] = []
        rss_before = _rss_mib()
        profiler = cProfile.Profile() if args.profile else None
        size = min(args.window, max(1, args.commits // 5))
        start = time.perf_counter()
        if profiler:
            profiler.enable()
        for k, st in enumerate(statements):
            t0 = time.perf_counter()
            res = engine.execute(st["sql"])
            t1 = time.perf_counter()
            latencies.append(t1 - t0)
            ends.append(t1)
            tiers[str(res.metrics.get("tier"))] += 1
            strategies[str(res.metrics.get("strategy"))] += 1
            got = (res.row_count, res.metrics.get("inserted"), res.metrics.get("updated"))
            if got != (args.batch, st["inserted"], st["updated"]):
                problems.append(
                    f"upsert {k + 1}: (rows, inserted, updated) {got}, expected "
                    f"{(args.batch, st['inserted'], st['updated'])}"
                )
            if (k + 1) % size == 0:
                rate = size / (t1 - (ends[k - size] if k >= size else start))
                print(f"[small] commits {k + 2 - size}-{k + 1}: {rate:.1f}/s", flush=True)
            if args.max_seconds and t1 - start > args.max_seconds and k + 1 < args.commits:
                break
        if profiler:
            profiler.disable()
        done = len(ends)
        wall = ends[-1] - start
        size = min(size, max(1, done // 5))  # at least 5 windows when the loop stopped early
        rates = _windows(ends, start, size)
        out["commits"] = {
            "done": done,
            "stopped_early": done < args.commits,
            "seconds": round(wall, 2),
            "per_s_overall": round(done / wall, 1),
            "window": size,
            "per_s_windows": [round(r, 1) for r in rates],
            "per_s_sustained": round(min(rates), 1) if rates else None,
            "latency_ms": {
                "median": round(statistics.median(latencies) * 1000, 1),
                "p90": round(_pct(latencies, 0.9) * 1000, 1),
                "p99": round(_pct(latencies, 0.99) * 1000, 1),
                "max": round(max(latencies) * 1000, 1),
            },
            "tiers": dict(tiers),
            "strategies": dict(strategies),
            "spark_started": engine.spark_started,
            "rss_mib_before": rss_before,
            "rss_mib_after": _rss_mib(),
            "files_after": _files(warehouse),
        }
        c = out["commits"]
        print(
            f"[small] {done} upserts of {args.batch} rows in {wall:.1f}s: {c['per_s_overall']}/s overall, lowest "
            f"window of {size} {c['per_s_sustained']}/s; latency ms {c['latency_ms']}; tiers {c['tiers']}; "
            f"Spark started: {c['spark_started']}; {c['files_after']} data files",
            flush=True,
        )

        # 3. full reads, before and after compaction
        live = n_rows + sum(st["inserted"] for st in statements[:done])
        total = initial_sum + sum(st["cents"] for st in statements[:done]) / 100

        def read(point: str, catalog: str = "lake") -> float:
            t0 = time.perf_counter()
            row = engine.execute(READ_SQL.replace(" FROM t", f" FROM {catalog}.default.t")).rows()[0]
            seconds = time.perf_counter() - t0
            count, amount = int(row[0]), float(row[4])
            if count != live or abs(amount - total) > 1e-9 * max(1.0, abs(total)):
                problems.append(f"read {point}: {count} rows, sum(amount) {amount!r}; expected {live}, {total!r}")
            return seconds

        # The compacted table is a copy, compacted: the two are read in turn, so that both get a JVM as warm (read
        # one after the other, the second set ran on a JVM that had compiled more of the scan: 1.92-2.10 after about
        # 3,700 upserts, against 1.32 read in turn, 2026-12-02).
        _copy_warehouse(warehouse, compacted_warehouse)
        engine.add_catalog(
            "compacted", {"connector": "journal", "warehouse": compacted_warehouse, "version_type": "bigint"}
        )
        t0 = time.perf_counter()
        engine.execute(COMPACT_SQL.replace("lake.", "compacted."))
        out["compact_seconds"] = round(time.perf_counter() - t0, 3)
        out["files_after_compaction"] = _files(compacted_warehouse)
        out["first_read_seconds"] = round(read("after the upserts (first, untimed)"), 3)
        read("after compaction (first, untimed)", "compacted")
        reads, compacted = [], []
        for _ in range(args.reads):
            reads.append(read("after the upserts"))
            compacted.append(read("after compaction", "compacted"))
    finally:
        engine.close()
        if args.keep:
            print(f"[small] warehouse kept: {warehouse}", flush=True)
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
    out["reads_seconds"] = [round(x, 3) for x in reads]
    out["reads_compacted_seconds"] = [round(x, 3) for x in compacted]
    read_s, compacted_s = statistics.median(reads), statistics.median(compacted)
    out["read_vs_compacted"] = round(read_s / compacted_s, 3)
    out["loadavg_end"] = _loadavg()
    out["finished"] = _now()
    out["problems"] = problems
    print(
        f"[small] full read after the upserts {read_s:.2f}s (median of {out['reads_seconds']}; first, untimed: "
        f"{out['first_read_seconds']}), after compaction ({out['compact_seconds']}s) {compacted_s:.2f}s (median of "
        f"{out['reads_compacted_seconds']}); load average at end {out['loadavg_end']}",
        flush=True,
    )
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(args.profile)
        print(f"[small] profile of the {done} upserts (cumulative):\n{text.getvalue()}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print("RESULT " + json.dumps(out), flush=True)
    for problem in problems:
        print(f"PROBLEM {problem}", flush=True)
    c = out["commits"]
    if c["stopped_early"]:
        print(
            f"NOTE stopped after {done} of {args.commits} upserts (--max-seconds {args.max_seconds:g}): the rates are "
            f"over those, the reads after them",
            flush=True,
        )
    print(f"metric small_upserts_commits_done {done}", flush=True)
    print(f"metric small_upserts_commits_per_s {c['per_s_sustained']}", flush=True)
    print(f"metric small_upserts_commits_per_s_overall {c['per_s_overall']}", flush=True)
    print(f"metric small_upserts_read_vs_compacted {out['read_vs_compacted']:.2f}", flush=True)
    print(f"seconds small_upserts_read {read_s:.2f}", flush=True)
    print(f"seconds small_upserts_read_compacted {compacted_s:.2f}", flush=True)
    print(f"seconds small_upserts_compact {out['compact_seconds']:.2f}", flush=True)
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
