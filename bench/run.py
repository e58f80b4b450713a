"""Issue 6's benchmark: one MERGE workload, six systems, four sizes, and a history scenario.

    .venv/bin/python -m bench.run --history                   # everything (`make bench` adds --write-doc/--plot)
    .venv/bin/python -m bench.run --sizes 1M/100k,10M/10k --systems journal,pyspark_rewrite,duckdb --reps 2
    .venv/bin/python -m bench.run --sizes 200k/20k --history --history-rows 200k --history-commits 5 --reps 1
    .venv/bin/python -m bench.run --profile                   # + per-phase timings and Spark stage times (event log)

Systems (``--systems``): ``journal`` (mergekit MERGE on a journal table), ``partitioned`` (mergekit MERGE on a
MonetDB-style merge table, RANGE-partitioned on id over 8 journal child tables), ``pyspark_rewrite`` (the
hand-written PySpark rewrite of the same Parquet data), ``duckdb`` (DuckDB's MERGE INTO on a native DuckDB
table), ``deltalake`` (delta-rs ``DeltaTable.merge``), ``pyarrow_floor`` (pyarrow reads T's id and amount,
joins S and writes only the changed rows: a floor for any system that writes changes rather than rewriting).

Every measured run happens in a worker process started for it: ``cold`` is the first run of a system in a fresh
process (for the Spark systems a fresh Spark session, local[2], the engine's default settings), ``warm`` the
following runs in that process. All systems read the same Parquet files (bench/workload.py, seeded). The
systems with a table of their own (journal, partitioned, duckdb, deltalake) load T into it once per target size
(timed and reported; kept under ``--data`` and reused while the code that wrote it is unchanged) and every run
MERGEs into a fresh copy of it (data files hard-linked, catalogs copied), so each run does the same work. Only
the statement is timed. A background thread samples the memory of the worker, its JVM and the JVM's Python
workers (psutil). Results: a summary table, ``ratio NAME VALUE`` and ``seconds NAME VALUE`` lines at the end
(ratio = mergekit journal warm median / other warm median), ``--json`` for everything, ``--write-doc`` replaces
the figures section of docs/performance.md and ``--plot`` draws a PNG.
"""


# The benchmark lives in four modules: bench.systems (what each system runs), bench.harness (worker processes and
# the driver that spawns them), bench.report (tables, summary lines, plot, docs section) and this one, the
# command line, which is also what the harness spawns as its workers (`python -m bench.run --mode worker ...`).

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.harness import (  # noqa: E402 - after the path set-up, so `python bench/run.py` works too
    _CONF,
    _machine,
    _now,
    _run_history,
    _run_size,
    _size,
    history_worker,
    load,
    worker,
)
from bench.report import _plot, _print_report, _write_doc  # noqa: E402
from bench.systems import SYSTEMS  # noqa: E402
from bench.workload import label  # noqa: E402


def main() -> None:
    """Parse the command line; in a worker mode run that worker, else run (or ``--from-json``: reload) the
    benchmark and report it. Exits 1 when the run found problems."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="driver", choices=["driver", "worker", "load", "history"])
    p.add_argument(
        "--sizes", default="1M/100k,10M/1M,10M/10k,10M/1", help="TARGET/SOURCE pairs, comma separated ('' for none)"
    )
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma separated, from: " + ", ".join(SYSTEMS))
    p.add_argument("--reps", type=int, default=3, help="worker processes (= cold runs) per system and size")
    p.add_argument("--warm", type=int, default=2, help="warm runs after the cold one in each worker")
    p.add_argument("--history", action="store_true", help="also run the history scenario (journal table)")
    p.add_argument("--history-rows", default="10M", help="rows of the history scenario's table")
    p.add_argument("--history-source", default="10k", help="rows of each MERGE's source in the history scenario")
    p.add_argument("--history-commits", type=int, default=100, help="successive MERGEs of the history scenario")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", default=os.environ.get("MERGEKIT_BENCH_DATA", "/tmp/mergekit-bench"))
    p.add_argument("--reload", action="store_true", help="load T into every system again, even if cached")
    p.add_argument("--profile", action="store_true", help="per-phase and per-stage timings (first worker only)")
    p.add_argument("--json", default=None, help="write all results to this JSON file")
    p.add_argument("--write-doc", default=None, help="replace the figures section of this Markdown file")
    p.add_argument("--plot", default=None, help="draw the figures into this PNG (matplotlib)")
    p.add_argument(
        "--from-json", default=None, help="run nothing: print, --plot and --write-doc a --json file's report"
    )
    p.add_argument("--conf", action="append", default=[], help="KEY=VALUE Spark setting for every Spark session")
    # worker options
    p.add_argument("--system", default="journal")
    p.add_argument("--paths", default="{}")
    p.add_argument("--base", default="")
    p.add_argument("--scratch", default="")
    p.add_argument("--n-target", type=int, default=0)
    p.add_argument("--verify", action="store_true")
    args = p.parse_args()
    if args.mode == "worker":
        return worker(args)
    if args.mode == "load":
        return load(args)
    if args.mode == "history":
        return history_worker(args)

    if args.from_json:
        with open(args.from_json) as f:
            report = json.load(f)
        if args.plot:
            _plot(report, args.plot)
        if args.write_doc:
            _write_doc(report, args.write_doc, args.plot)
        return _print_report(report)

    _CONF.extend(args.conf)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        p.error(f"unknown systems {unknown}; choose from {SYSTEMS}")
    report: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "-m", "bench.run", *sys.argv[1:]]),
        "started": _now(),
        "machine": _machine(),
        "settings": {"reps": args.reps, "warm": args.warm, "seed": args.seed, "conf": args.conf, "systems": systems},
        "sizes": {},
        "history": None,
    }
    problems: list[str] = []
    wall0 = time.perf_counter()
    for pair in [x for x in args.sizes.split(",") if x.strip()]:
        n_t, n_s = (_size(x) for x in pair.split("/"))
        report["sizes"][f"{label(n_t)}/{label(n_s)}"] = _run_size(args, n_t, n_s, systems, problems)
    if args.history:
        report["history"] = _run_history(args, problems)
    report["finished"] = _now()
    report["wall_seconds"] = round(time.perf_counter() - wall0, 1)
    report["problems"] = problems
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    if args.plot:
        _plot(report, args.plot)
    if args.write_doc:
        _write_doc(report, args.write_doc, args.plot)
    _print_report(report)
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
