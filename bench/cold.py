"""Issue 29's cold figures: a point SELECT from the command line and a 1-row MERGE from a new Python process.

    .venv/bin/python -m bench.cold                       # the 10M-row journal table, 5 runs of each
    .venv/bin/python -m bench.cold --rows 200k --runs 3   # a small try-out

Both start from a copy of the journal table ``bench.run`` loads T of ``--rows`` rows into (``T-<n>-seed<seed>/
loaded-journal`` under ``--data``: BIGINT versions, ``PRIMARY KEY (id)``; loaded once and reused while the code that
wrote it is unchanged, ``--reload``), made afresh before every run (data files hard-linked; not timed). Each run is a
new process, timed from its spawn to its exit (wall), ``--runs`` (5) times each, alternating the two:

- ``cli_select``: ``mergekit --warehouse DIR sql "SELECT * FROM t WHERE id = 42"``: the ``mergekit`` script beside
  this interpreter (``python -m mergekit.cli`` when there is none) with the command line's default catalog over
  that warehouse (docs/cli.md, "Catalogs"), as a user points it at one; its output must show the row.
- ``engine_merge``: ``python -c "from mergekit import Engine; e = Engine.local(DIR, version_type='bigint');
  e.execute('MERGE ...')"``: ``Engine.local``'s default catalog with the table's version type, and the small-commit
  bench's upsert (bench/small_commits.py) of one row, an update of id 42 (``amount`` a DOUBLE literal;
  ``--amount-literal`` as there). The child reports its row count (must be 1), tier, whether Spark started, and the
  seconds it spent importing mergekit, in ``Engine.local`` and in the MERGE.

Before the runs (untimed), the sources of mergekit and its connectors are compiled to bytecode
(``compileall``), as an installed package's are and as Python writes them at the first import, unless
``PYTHONDONTWRITEBYTECODE`` is set (it is on the machine docs/performance.md measures on): without, every run
compiled them again (0.1-0.3 s).

Then one more run of each with Java pointed at nothing (``JAVA_HOME`` a folder that does not exist, as ``make
test-fast`` does): a run that succeeds started no JVM (``no_jvm`` true); one that fails needed one (its error is
kept). Peak RSS per run: the child's ``ru_maxrss`` (``os.wait4``). Output:

    RESULT {...}                        (everything; also written by --json FILE)
    metric cold_cli_select_s V          (median wall seconds; issue 29: under 2 s)
    metric cold_engine_merge_s V        (median wall seconds; issue 29: under 2 s)

A run that fails or answers wrongly is a ``PROBLEM`` line and exit status 1. Not a test: nothing here is asserted
by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.harness import _copy_warehouse, _loadavg, _now, _size, loaded_journal, start_report  # noqa: E402
from bench.small_commits import AMOUNT_LITERALS, UPSERT  # noqa: E402
from bench.workload import label  # noqa: E402

NO_JAVA_HOME = "/nonexistent/mergekit-bench-cold-starts-no-java"
SELECT = "SELECT * FROM t WHERE id = 42"
# engine_merge's child; its phases are seconds from its first line (the interpreter's own start-up is in the wall
# time the parent measures, not in them)
CHILD = """\
import json, time
t0 = time.perf_counter()
from mergekit import Engine
t1 = time.perf_counter()
e = Engine.local({warehouse!r}, version_type="bigint")
t2 = time.perf_counter()
r = e.execute({sql!r})
t3 = time.perf_counter()
print("RESULT " + json.dumps({{"row_count": r.row_count, "tier": r.metrics.get("tier"),
    "strategy": r.metrics.get("strategy"), "spark_started": e.spark_started, "import_s": round(t1 - t0, 3),
    "engine_local_s": round(t2 - t1, 3), "merge_s": round(t3 - t2, 3)}}), flush=True)
"""


def _cli() -> list[str]:
    """The ``mergekit`` script beside this interpreter, else ``python -m mergekit.cli``."""
    script = os.path.join(os.path.dirname(sys.executable), "mergekit")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "mergekit.cli"]


def _run(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` in a new process: wall seconds from spawn to exit, exit status, peak RSS, stdout, stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "wall_s": round(wall, 3),
            "exit": proc.returncode,
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "stdout": out.read(),
            "stderr": err.read(),
        }


def _check(kind: str, run: dict[str, Any]) -> str | None:
    """Why a run's answer is wrong, or None."""
    if run["exit"] != 0:
        return f"exit status {run['exit']}: {run['stderr'].strip()[-500:]}"
    if kind == "cli_select":
        if "(1 row" not in run["stdout"] or "| 42 " not in run["stdout"]:
            return f"the row of id 42 is not in the output: {run['stdout'][-500:]!r}"
        return None
    child = run.get("child")
    if child is None:
        return f"no RESULT line: {run['stdout'][-500:]!r}"
    if child["row_count"] != 1:
        return f"row count {child['row_count']}, expected 1"
    return None


def _compile_sources() -> None:
    """mergekit's and the in-tree connectors' bytecode, written as an installed package has it (not timed)."""
    import compileall
    import glob

    for folder in [os.path.join(ROOT, "mergekit"), *glob.glob(os.path.join(ROOT, "connectors", "*", "mergekit_*"))]:
        compileall.compile_dir(folder, quiet=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="10M", help="rows of the journal table (T of bench/workload.py)")
    p.add_argument("--runs", type=int, default=5, help="timed runs of each")
    p.add_argument(
        "--amount-literal",
        default="double",
        choices=sorted(AMOUNT_LITERALS),
        help="how the MERGE writes amount (a DOUBLE column): 12.25E0 (double, the default), 12.25, 12",
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", default=os.environ.get("MERGEKIT_BENCH_DATA", "/tmp/mergekit-bench"))
    p.add_argument("--reload", action="store_true", help="load T into the journal again, even if cached")
    p.add_argument("--json", default=None, help="write the RESULT to this JSON file")
    args = p.parse_args()
    n_rows = _size(args.rows)
    settings = {"rows": n_rows, "runs": args.runs, "amount_literal": args.amount_literal, "seed": args.seed}
    out = start_report("bench.cold", settings)
    print(f"[cold] load average at start: {out['loadavg_start']}", flush=True)
    info = loaded_journal(args.data, n_rows, args.seed, args.reload, "cold")
    out["load"] = info["load"]
    run_dir = os.path.join(args.data, f"cold-{label(n_rows)}-seed{args.seed}")
    warehouse = os.path.join(run_dir, "warehouse")
    amount = AMOUNT_LITERALS[args.amount_literal](1225)
    merge = UPSERT.format(table="t", rows=f"(42, 7, 'cold', {amount}, DATE '2026-01-01')")
    commands = {
        "cli_select": [*_cli(), "--warehouse", warehouse, "sql", SELECT],
        "engine_merge": [sys.executable, "-c", CHILD.format(warehouse=warehouse, sql=merge)],
    }
    out["commands"] = {"cli_select": commands["cli_select"][:-4] + ["--warehouse", "DIR", "sql", SELECT]}
    out["commands"]["engine_merge"] = merge
    _compile_sources()
    env = dict(os.environ)
    no_java = {**env, "JAVA_HOME": NO_JAVA_HOME}
    problems: list[str] = []
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in commands}
    no_jvm: dict[str, Any] = {}
    try:
        for i in range(args.runs + 1):
            for kind, cmd in commands.items():
                _copy_warehouse(os.path.join(info["base"], "warehouse"), warehouse)  # untimed: a fresh copy
                checking = i == args.runs  # the last round: Java pointed at nothing
                run = _run(cmd, no_java if checking else env)
                line = next((ln for ln in run["stdout"].splitlines() if ln.startswith("RESULT ")), None)
                if line is not None:
                    run["child"] = json.loads(line[len("RESULT ") :])
                wrong = _check(kind, run)
                stderr = run.pop("stderr")
                run.pop("stdout")
                if checking:
                    no_jvm[kind] = {"no_jvm": wrong is None, "wall_s": run["wall_s"]}
                    if wrong is not None:
                        no_jvm[kind]["error"] = stderr.strip()[-800:]
                    what = "ran: no JVM started" if wrong is None else "failed: it starts a JVM"
                    print(f"[cold] {kind} with Java pointed at nothing {what} ({run['wall_s']:.2f}s)", flush=True)
                    continue
                if wrong is not None:
                    problems.append(f"{kind} run {i + 1}: {wrong}")
                runs[kind].append(run)
                extra = f" {run['child']}" if "child" in run else ""
                print(
                    f"[cold] {kind} run {i + 1}: {run['wall_s']:.2f}s wall, {run['peak_rss_mib']} MiB{extra}",
                    flush=True,
                )
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    out["runs"] = runs
    out["no_jvm"] = no_jvm
    medians = {kind: statistics.median(r["wall_s"] for r in rs) for kind, rs in runs.items() if rs}
    out["median_wall_s"] = {k: round(v, 3) for k, v in medians.items()}
    out["loadavg_end"] = _loadavg()
    out["finished"] = _now()
    out["problems"] = problems
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print("RESULT " + json.dumps(out), flush=True)
    for problem in problems:
        print(f"PROBLEM {problem}", flush=True)
    for kind, check in no_jvm.items():
        if not check["no_jvm"]:
            print(f"NOTE {kind} starts a JVM: with Java pointed at nothing it fails", flush=True)
    for kind, name in (("cli_select", "cold_cli_select_s"), ("engine_merge", "cold_engine_merge_s")):
        if kind in medians:
            print(f"metric {name} {medians[kind]:.2f}", flush=True)
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
