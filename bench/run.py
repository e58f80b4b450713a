"""First mergekit benchmark: MERGE on a journal table vs a hand-written PySpark rewrite of the same Parquet data.

    .venv/bin/python -m bench.run                      # 1M/100k and 10M/1M, 3 cold processes x (1 cold + 2 warm runs)
    .venv/bin/python -m bench.run --sizes 1M/100k --reps 2 --warm 2
    .venv/bin/python -m bench.run --profile            # also: per-phase timings and Spark stage times (event log)

Every measured run happens in a worker process started for it: ``cold`` is the first run of a system in a fresh
Spark session (local[2], the engine's default settings), ``warm`` the following runs in that session. Both
systems get the same session settings and the same Parquet files (bench/workload.py, seeded). mergekit's target
is a journal table loaded once per size with ``INSERT INTO t SELECT ... FROM <Parquet DataFrame>``; every run
MERGEs into a fresh copy of that warehouse (data files hard-linked, catalog copied), so each run does the same
work. Only the statement is timed (``engine.execute(MERGE ...)``; for PySpark read + join + write).
Results: one JSON line per run on stdout of the worker, a summary table at the end, ``ratio NAME VALUE`` lines
(mergekit warm median / other warm median), and ``--write-doc`` replaces the figures section of
docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MERGE_SQL = (
    "MERGE INTO t USING s ON t.id = s.id "
    "WHEN MATCHED AND s.op = 'D' THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET grp = s.grp, name = s.name, amount = t.amount + s.amount, updated = s.updated "
    "WHEN NOT MATCHED THEN INSERT (id, grp, name, amount, updated) VALUES (s.id, s.grp, s.name, s.amount, s.updated)"
)
CREATE_SQL = (
    "CREATE TABLE t (id BIGINT NOT NULL, grp INTEGER, name VARCHAR(16), amount DOUBLE, updated DATE, PRIMARY KEY (id))"
)


def _size(text: str) -> int:
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if text[-1] in "km" else text) * mult)


def _label(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


# ---- worker side (runs in its own process, own Spark session) -------------------------------------------


def _session(event_log: str | None = None, extra: list[str] | None = None):
    from mergekit.execution.session import local_session

    conf = dict(kv.split("=", 1) for kv in extra or [])
    if event_log:
        os.makedirs(event_log, exist_ok=True)
        conf.update(
            {
                "spark.eventLog.enabled": "true",
                "spark.eventLog.dir": "file://" + event_log,
                "spark.eventLog.compress": "false",
                "spark.eventLog.rolling.enabled": "false",
            }
        )
    return local_session(master="local[2]", conf=conf)


def _peak_memory(spark) -> dict[str, int]:
    import resource

    out = {"python_driver_peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    try:
        pid = spark.sparkContext._gateway.proc.pid  # the JVM (driver and, in local mode, executor)
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    out["jvm_peak_kib"] = int(line.split()[1])
    except Exception:  # noqa: BLE001 - best effort
        pass
    return out


def _copy_warehouse(src: str, dst: str) -> None:
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, copy_function=os.link, ignore=shutil.ignore_patterns("_catalog.sqlite*"))
    for name in os.listdir(src):
        if name.startswith("_catalog.sqlite"):
            shutil.copy2(os.path.join(src, name), os.path.join(dst, name))


class _PhaseTimer:
    """Wall-clock time spent in named driver-side calls of one statement (profiling only)."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    def wrap(self, obj: Any, attr: str, name: str | None = None) -> None:
        fn = getattr(obj, attr)
        label = name or attr

        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.times[label] = self.times.get(label, 0.0) + time.perf_counter() - t0

        setattr(obj, attr, timed)


def _mergekit_run(spark, paths: dict[str, str], base_wh: str, run_wh: str, profile: bool) -> dict[str, Any]:
    import mergekit.engine as engine_mod
    from mergekit import Engine

    _copy_warehouse(base_wh, run_wh)
    engine = Engine(
        spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": run_wh, "version_type": "bigint"}}
    )
    engine.register_dataframe("s", spark.read.parquet(paths["S"]))
    timer = _PhaseTimer()
    original_pipeline = engine_mod.run_merge_pipeline
    original_scan = engine_mod.scan_table
    if profile:
        md = engine.catalog("lake").get_metadata()
        for attr in (
            "begin_merge",
            "get_splits",
            "finish_merge",
            "_read_keys",
            "_check_primary_key",
            "_check_conflicts",
            "_commit",
        ):
            timer.wrap(md, attr)
        timer.wrap(engine_mod, "run_merge_pipeline", "spark_job (scan+join+case+process+sinks)")
        timer.wrap(engine_mod, "scan_table", "scan_table (driver: plan splits)")
    try:
        t0 = time.perf_counter()
        res = engine.execute(MERGE_SQL)
        elapsed = time.perf_counter() - t0
    finally:
        engine_mod.run_merge_pipeline = original_pipeline
        engine_mod.scan_table = original_scan
    out: dict[str, Any] = {"seconds": elapsed, "row_count": res.row_count}
    if profile:
        out["phases"] = timer.times
    out["_engine"] = engine
    return out


def _pyspark_run(spark, paths: dict[str, str], out_dir: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    t = spark.read.parquet(paths["T"])
    s = spark.read.parquet(paths["S"])
    unchanged = t.join(s, "id", "left_anti")
    updated = (
        t.alias("t")
        .join(s.where(F.col("op") != "D").alias("s"), "id")
        .select(
            "id",
            F.col("s.grp"),
            F.col("s.name"),
            (F.col("t.amount") + F.col("s.amount")).alias("amount"),
            F.col("s.updated"),
        )
    )
    inserted = s.join(t, "id", "left_anti").select("id", "grp", "name", "amount", "updated")
    unchanged.unionByName(updated).unionByName(inserted).write.mode("overwrite").parquet(out_dir)
    return {"seconds": time.perf_counter() - t0}


def _stage_times(event_dir: str) -> list[dict[str, Any]]:
    """Stage durations from the Spark event log (the UI is off; the log has the same facts)."""
    stages = []
    files = [os.path.join(d, n) for d, _, names in os.walk(event_dir) for n in names]
    for name in files:
        with open(name) as f:
            for line in f:
                ev = json.loads(line)
                if ev.get("Event") != "SparkListenerStageCompleted":
                    continue
                info = ev["Stage Info"]
                run_ms = sum(
                    a.get("Value", 0)
                    for a in info.get("Accumulables", [])
                    if a.get("Name") == "internal.metrics.executorRunTime"
                )
                stages.append(
                    {
                        "stage": info["Stage ID"],
                        "name": info["Stage Name"],
                        "tasks": info["Number of Tasks"],
                        "wall_s": (info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1000.0,
                        "task_run_s": run_ms / 1000.0,
                    }
                )
    return sorted(stages, key=lambda s: s["stage"])


def worker(args: argparse.Namespace) -> None:
    paths = json.loads(args.paths)
    event_dir = os.path.join(args.scratch, f"events-{os.getpid()}") if args.profile else None
    spark = _session(event_dir, args.conf)
    spark.range(1).count()  # start the JVM side before timing anything
    results = []
    for i in range(1 + args.warm):
        kind = "cold" if i == 0 else "warm"
        if args.system == "mergekit":
            run_wh = os.path.join(args.scratch, "run-warehouse")
            r = _mergekit_run(spark, paths, args.base_warehouse, run_wh, args.profile)
            engine = r.pop("_engine")
            if args.verify and i == 0:
                cnt, total = engine.execute("SELECT count(*), sum(amount) FROM t").rows()[0]
                r["check"] = [int(cnt), round(float(total), 2)]
            engine.close()
        else:
            out_dir = os.path.join(args.scratch, "pyspark-out")
            r = _pyspark_run(spark, paths, out_dir)
            if args.verify and i == 0:
                row = spark.read.parquet(out_dir).selectExpr("count(*)", "sum(amount)").collect()[0]
                r["check"] = [int(row[0]), round(float(row[1]), 2)]
        r["kind"] = kind
        results.append(r)
    mem = _peak_memory(spark)
    spark.stop()
    stages = _stage_times(event_dir) if event_dir else None
    print("RESULT " + json.dumps({"runs": results, "memory": mem, "stages": stages}), flush=True)


def load_journal(args: argparse.Namespace) -> None:
    """Create the journal table and bulk-load T into it (INSERT ... SELECT from a Parquet DataFrame)."""
    from mergekit import Engine

    paths = json.loads(args.paths)
    spark = _session(None, args.conf)
    if os.path.exists(args.base_warehouse):
        shutil.rmtree(args.base_warehouse)
    engine = Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": args.base_warehouse, "version_type": "bigint"}},
    )
    engine.execute(CREATE_SQL)
    engine.register_dataframe("t_parquet", spark.read.parquet(paths["T"]))
    t0 = time.perf_counter()
    res = engine.execute("INSERT INTO t SELECT id, grp, name, amount, updated FROM t_parquet")
    elapsed = time.perf_counter() - t0
    engine.close()
    spark.stop()
    print("RESULT " + json.dumps({"seconds": elapsed, "rows": res.row_count}), flush=True)


# ---- driver side ------------------------------------------------------------------------------------------


_CONF: list[str] = []


def _spawn(mode: str, extra: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.run", "--mode", mode, *extra]
    for kv in _CONF:
        cmd += ["--conf", kv]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{mode} worker failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="driver", choices=["driver", "worker", "load"])
    p.add_argument("--sizes", default="1M/100k,10M/1M", help="TARGET/SOURCE pairs, comma separated")
    p.add_argument("--reps", type=int, default=3, help="worker processes (= cold runs) per system and size")
    p.add_argument("--warm", type=int, default=2, help="warm runs after the cold one in each worker")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", default=os.environ.get("MERGEKIT_BENCH_DATA", "/tmp/mergekit-bench"))
    p.add_argument("--profile", action="store_true", help="per-phase and per-stage timings (first worker only)")
    p.add_argument("--json", default=None, help="write all results to this JSON file")
    p.add_argument(
        "--conf", action="append", default=[], help="KEY=VALUE Spark setting for every session (both systems)"
    )
    # worker options
    p.add_argument("--system", default="mergekit")
    p.add_argument("--paths", default="{}")
    p.add_argument("--base-warehouse", default="")
    p.add_argument("--scratch", default="")
    p.add_argument("--verify", action="store_true")
    args = p.parse_args()
    if args.mode == "worker":
        return worker(args)
    if args.mode == "load":
        return load_journal(args)

    from bench.workload import generate

    _CONF.extend(args.conf)

    report: dict[str, Any] = {"sizes": {}, "command": " ".join(["python", "-m", "bench.run", *sys.argv[1:]])}
    for pair in args.sizes.split(","):
        n_t, n_s = (_size(x) for x in pair.split("/"))
        label = f"{_label(n_t)}/{_label(n_s)}"
        root = os.path.join(args.data, f"{_label(n_t)}-{_label(n_s)}-seed{args.seed}")
        t0 = time.perf_counter()
        paths = generate(root, n_t, n_s, args.seed)
        print(f"[{label}] workload ready in {time.perf_counter() - t0:.1f}s: {root}", flush=True)
        base_wh = os.path.join(root, "journal-warehouse")
        load = _spawn("load", ["--paths", json.dumps(paths), "--base-warehouse", base_wh])
        print(f"[{label}] journal load (INSERT ... SELECT of {load['rows']} rows): {load['seconds']:.2f}s", flush=True)
        entry: dict[str, Any] = {"load_seconds": load["seconds"], "systems": {}}
        expected = n_t - n_s // 10 + (n_s - n_s // 2 - n_s // 10)
        for rep in range(args.reps):
            # alternate which system goes first, so neither always runs on a cooler machine
            order = ["mergekit", "pyspark"] if rep % 2 == 0 else ["pyspark", "mergekit"]
            for system in order:
                scratch = os.path.join(root, f"scratch-{system}")
                shutil.rmtree(scratch, ignore_errors=True)
                os.makedirs(scratch)
                extra = [
                    "--system",
                    system,
                    "--paths",
                    json.dumps(paths),
                    "--base-warehouse",
                    base_wh,
                    "--scratch",
                    scratch,
                    "--warm",
                    str(args.warm),
                ]
                if rep == 0:
                    extra.append("--verify")
                    if args.profile:
                        extra.append("--profile")
                res = _spawn("worker", extra)
                shutil.rmtree(scratch, ignore_errors=True)
                sys_entry = entry["systems"].setdefault(system, {"cold": [], "warm": [], "memory": [], "runs": []})
                for r in res["runs"]:
                    sys_entry[r["kind"]].append(r["seconds"])
                    sys_entry["runs"].append(r)
                    if "check" in r:
                        sys_entry["check"] = r["check"]
                        assert r["check"][0] == expected, (system, r["check"], expected)
                    if system == "mergekit":
                        assert r["row_count"] == n_s, r
                sys_entry["memory"].append(res["memory"])
                if res.get("stages"):
                    sys_entry["stages"] = res["stages"]
                times = ", ".join(f"{r['kind']} {r['seconds']:.2f}s" for r in res["runs"])
                print(f"[{label}] rep {rep} {system}: {times}", flush=True)
        ms, ps = entry["systems"]["mergekit"], entry["systems"]["pyspark"]
        if ms["check"] != ps["check"]:
            raise AssertionError(f"results differ: mergekit {ms['check']} vs pyspark {ps['check']}")
        for s in entry["systems"].values():
            s["cold_stats"] = _stats(s["cold"])
            s["warm_stats"] = _stats(s["warm"]) if s["warm"] else None
        report["sizes"][label] = entry
    _print_report(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)


def _fmt(st: dict[str, float] | None) -> str:
    if not st:
        return "-"
    return f"{st['median']:.2f} ({st['min']:.2f}–{st['max']:.2f})"


def _print_report(report: dict[str, Any]) -> None:
    print()
    print("| size | system | cold median (min–max) s | warm median (min–max) s | peak RSS JVM / Python driver MiB |")
    print("|---|---|---|---|---|")
    for label, entry in report["sizes"].items():
        for name, s in entry["systems"].items():
            jvm = max((m.get("jvm_peak_kib", 0) for m in s["memory"]), default=0) // 1024
            py = max((m.get("python_driver_peak_kib", 0) for m in s["memory"]), default=0) // 1024
            print(f"| {label} | {name} | {_fmt(s['cold_stats'])} | {_fmt(s['warm_stats'])} | {jvm} / {py} |")
    print()
    for label, entry in report["sizes"].items():
        ms, ps = entry["systems"]["mergekit"], entry["systems"]["pyspark"]
        if ms["warm_stats"] and ps["warm_stats"]:
            print(
                f"ratio pyspark_rewrite_{label.replace('/', '_')} "
                f"{ms['warm_stats']['median'] / ps['warm_stats']['median']:.2f}"
            )
    for label, entry in report["sizes"].items():
        ms = entry["systems"]["mergekit"]
        if "stages" in ms or any("phases" in r for r in ms["runs"]):
            print(f"\nprofile {label} (first worker):")
            for r in ms["runs"]:
                if "phases" in r:
                    phases = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(r["phases"].items(), key=lambda kv: -kv[1]))
                    print(f"  {r['kind']} {r['seconds']:.2f}s: {phases}")
            for st in ms.get("stages", []):
                print(
                    f"  stage {st['stage']:3d} tasks {st['tasks']:3d} wall {st['wall_s']:7.2f}s "
                    f"task-run {st['task_run_s']:7.2f}s  {st['name'][:90]}"
                )


if __name__ == "__main__":
    main()
