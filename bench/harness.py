"""The benchmark's harness: worker processes that time the systems, and the driver that starts them.

Worker side (each in a process of its own, started as ``python -m bench.run --mode worker|load|history``):
``worker`` times one cold and ``--warm`` warm runs of a system, ``load`` loads T into a system's own table, and
``history_worker`` runs the history scenario; each prints one ``RESULT <json>`` line. ``_Memory`` samples the
memory of the worker, its JVM and the JVM's Python workers meanwhile, and ``_stage_times`` reads the Spark stage
times from the event log (``--profile``).

Driver side: ``_run_size`` generates the workload of a size, loads T into each system once (``_ensure_load``,
cached under ``--data`` while the code that wrote it is unchanged: ``_fingerprint``), spawns the workers
(``_spawn``) in rotating order and checks that the systems' results agree (``_check_results``);
``_run_history`` does the same for the history scenario. ``bench.run`` parses the command line and reports.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from importlib import metadata as importlib_metadata
from typing import Any

from bench.systems import (
    _RUNNERS,
    CHILDREN,
    COLUMNS,
    COMPACT_SQL,
    CREATE_SQL,
    LOADED_SYSTEMS,
    MERGE_SQL,
    READ_SQL,
    SPARK_SYSTEMS,
    _catalog,
    _copy_warehouse,
    _session,
)
from bench.workload import (
    expected_rows,
    generate,
    generate_history,
    generate_target,
    label,
    shape,
    target_root,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_run_options(p: argparse.ArgumentParser, *, reload: str, figures: str) -> None:
    """The options bench.sqldb and bench.streaming share: the seed, the data folder, ``--reload`` (what it does:
    ``reload``), Spark settings, the report's files (``figures``: the name of the Markdown section) and the
    process's role (driver, or a worker it starts)."""
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", default=os.environ.get("MERGEKIT_BENCH_DATA", "/tmp/mergekit-bench"))
    p.add_argument("--reload", action="store_true", help=f"{reload} again, even if cached")
    p.add_argument("--conf", action="append", default=[], help="KEY=VALUE Spark setting for every Spark session")
    p.add_argument("--json", default=None, help="write all results to this JSON file")
    p.add_argument("--write-doc", default=None, help=f"replace the {figures} figures section of this Markdown file")
    p.add_argument("--from-json", default=None, help="run nothing: print and --write-doc a --json file's report")
    p.add_argument("--role", default="driver", choices=["driver", "worker"], help=argparse.SUPPRESS)


def _size(text: str) -> int:
    """``'10M'``, ``'100k'``, ``'1'`` as a number of rows."""
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if text[-1] in "km" else text) * mult)


# ---- memory ----------------------------------------------------------------------------------------------


class _Memory:
    """Peak RSS of this process, of a JVM and of the JVM's descendants (PySpark's Python workers).

    A background thread samples every ``interval`` seconds with psutil; the exact high-water marks the kernel
    keeps (``ru_maxrss`` here, ``VmHWM`` of the JVM) are added at the end. Python workers are forked from one
    daemon, so the sum of their RSS counts pages they share more than once (an upper bound).
    """

    def __init__(self, interval: float = 0.25) -> None:
        import psutil

        self._psutil = psutil
        self.interval = interval
        self.me = psutil.Process()
        self.jvm: Any = None
        self.peak = {"python_driver": 0, "jvm": 0, "python_workers": 0, "python_workers_max_one": 0, "all": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def watch_jvm(self, pid: int) -> None:
        self.jvm = self._psutil.Process(pid)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        err = self._psutil.Error
        try:
            driver = self.me.memory_info().rss
        except err:
            return
        jvm = workers = biggest = 0
        if self.jvm is not None:
            try:
                jvm = self.jvm.memory_info().rss
                kids = self.jvm.children(recursive=True)
            except err:
                kids = []
            for kid in kids:
                try:
                    # only Python workers: a process the JVM spawns for a shell command shows the JVM's RSS
                    if "python" not in kid.name().lower():
                        continue
                    rss = kid.memory_info().rss
                except err:
                    continue
                workers += rss
                biggest = max(biggest, rss)
        p = self.peak
        p["python_driver"] = max(p["python_driver"], driver)
        p["jvm"] = max(p["jvm"], jvm)
        p["python_workers"] = max(p["python_workers"], workers)
        p["python_workers_max_one"] = max(p["python_workers_max_one"], biggest)
        p["all"] = max(p["all"], driver + jvm + workers)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self.sample()
        p = dict(self.peak)
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so a worker's would include its parent's.
        p["python_driver"] = max(p["python_driver"], _vm_hwm(os.getpid()))
        if self.jvm is not None:
            p["jvm"] = max(p["jvm"], _vm_hwm(self.jvm.pid))
        return {k + "_mib": round(v / 2**20, 1) for k, v in p.items()}


def _vm_hwm(pid: int) -> int:
    """The kernel's high-water mark of a process's resident set, in bytes (0 if unknown)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# ---- worker side (runs in its own process) ---------------------------------------------------------------


def _stage_times(event_dir: str) -> list[dict[str, Any]]:
    """Stage durations from the Spark event log (the UI is off; the log has the same facts)."""
    stages = []
    run_of_stage: dict[int, str] = {}  # the job description the worker set: which run (or the check) it was
    files = [os.path.join(d, n) for d, _, names in os.walk(event_dir) for n in names]
    for name in files:
        with open(name) as f:
            for line in f:
                ev = json.loads(line)
                if ev.get("Event") == "SparkListenerJobStart":
                    desc = (ev.get("Properties") or {}).get("spark.job.description") or ""
                    for sid in ev.get("Stage IDs", []):
                        run_of_stage[sid] = desc
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
    for st in stages:
        st["run"] = run_of_stage.get(st["stage"], "")
    return sorted(stages, key=lambda s: s["stage"])


def _start_spark(args: argparse.Namespace, memory: _Memory, event_dir: str | None = None) -> Any:
    """The worker's Spark session, started before anything is timed, its JVM watched by ``memory``."""
    spark = _session(event_dir, args.conf)
    spark.range(1).count()  # start the JVM side before timing anything
    try:
        memory.watch_jvm(spark.sparkContext._gateway.proc.pid)  # the JVM: driver and, in local mode, executor
    except Exception:  # best effort
        pass
    return spark


def worker(args: argparse.Namespace) -> None:
    """``--mode worker``: one cold and ``--warm`` warm runs of ``--system``, each on a fresh copy of the loaded
    table; prints ``RESULT`` with the runs, peak memory, the result check (``--verify``) and stage times."""
    paths = json.loads(args.paths)
    memory = _Memory()
    spark = None
    event_dir = None
    if args.system in SPARK_SYSTEMS:
        event_dir = os.path.join(args.scratch, f"events-{os.getpid()}") if args.profile else None
        spark = _start_spark(args, memory, event_dir)
    memory.start()
    runner = _RUNNERS[args.system](args, paths, spark)
    results = []
    for i in range(1 + args.warm):
        kind = "cold" if i == 0 else "warm"
        if spark is not None:  # names the Spark jobs in the event log (--profile)
            spark.sparkContext.setJobDescription("setup (untimed)")
        runner.prepare()  # untimed: a fresh copy of the loaded table
        if spark is not None:
            spark.sparkContext.setJobDescription(f"{kind} run {i}")
        r = runner.run(args.profile)
        r["kind"] = kind
        results.append(r)
    mem = memory.stop()
    out: dict[str, Any] = {"runs": results, "memory": mem}
    if args.verify:  # every run starts from the same copy, so the last run's result stands for all of them
        if spark is not None:
            spark.sparkContext.setJobDescription("result check")
        out["check"] = runner.check()
    runner.close()
    if spark is not None:
        spark.stop()
    out["stages"] = _stage_times(event_dir) if event_dir else None
    print("RESULT " + json.dumps(out), flush=True)


def load(args: argparse.Namespace) -> None:
    """Load T into the system's own table under ``args.base`` (a new directory); print the time of the load."""
    paths = json.loads(args.paths)
    os.makedirs(args.base)
    t_dir = paths["T"]
    if args.system in ("journal", "partitioned"):
        from mergekit import Engine

        spark = _session(None, args.conf)
        engine = Engine(spark=spark, catalogs={"lake": _catalog(args.system, os.path.join(args.base, "warehouse"))})
        n = args.n_target
        if args.system == "journal":
            engine.execute(CREATE_SQL)
        else:
            engine.execute("CREATE MERGE TABLE t " + COLUMNS + " PARTITION BY RANGE ON (id)")
            for i in range(CHILDREN):
                engine.execute(f"CREATE TABLE t_p{i} " + COLUMNS)
                lo = "RANGE MINVALUE" if i == 0 else str(i * n // CHILDREN)
                hi = "RANGE MAXVALUE" if i == CHILDREN - 1 else str((i + 1) * n // CHILDREN)
                engine.execute(f"ALTER TABLE t ADD TABLE t_p{i} AS PARTITION FROM {lo} TO {hi}")
        engine.register_dataframe("t_parquet", spark.read.parquet(t_dir))
        t0 = time.perf_counter()
        res = engine.execute("INSERT INTO t SELECT id, grp, name, amount, updated FROM t_parquet")
        elapsed = time.perf_counter() - t0
        rows = res.row_count
        engine.close()
        spark.stop()
    elif args.system == "duckdb":
        import duckdb

        con = duckdb.connect(os.path.join(args.base, "t.duckdb"))
        con.execute("SET threads = 2")
        con.execute(CREATE_SQL)
        t0 = time.perf_counter()
        rows = con.execute(
            f"INSERT INTO t SELECT id, grp, name, amount, updated FROM read_parquet('{t_dir}/*.parquet')"
        ).fetchall()[0][0]
        con.execute("CHECKPOINT")
        elapsed = time.perf_counter() - t0
        con.close()
    elif args.system == "deltalake":
        import pyarrow.dataset as pads
        from deltalake import write_deltalake

        t0 = time.perf_counter()
        dataset = pads.dataset(t_dir, format="parquet")
        write_deltalake(os.path.join(args.base, "delta"), dataset.scanner().to_reader())
        elapsed = time.perf_counter() - t0
        rows = dataset.count_rows()
    else:
        raise ValueError(args.system)
    print("RESULT " + json.dumps({"seconds": elapsed, "rows": int(rows)}), flush=True)


def history_worker(args: argparse.Namespace) -> None:
    """``commits`` successive MERGEs into one journal table, reads at marks, compaction, read and MERGE after."""
    from mergekit import Engine

    h = json.loads(args.paths)
    sources: list[str] = h["sources"]
    n_target, n_source, commits = h["n_target"], h["n_source"], h["commits"]
    marks = sorted({1, max(1, commits // 2), commits})
    memory = _Memory()
    spark = _start_spark(args, memory)
    memory.start()
    # Warm-up, so that commit 1 is not also the session's first MERGE: the first two MERGEs of the series into a
    # throwaway copy of the table.
    warm_wh = os.path.join(args.scratch, "warmup-warehouse")
    _copy_warehouse(os.path.join(args.base, "warehouse"), warm_wh)
    engine = Engine(spark=spark, catalogs={"lake": _catalog("journal", warm_wh)})
    for src in sources[:2]:
        engine.register_dataframe("s", spark.read.parquet(src))
        engine.execute(MERGE_SQL)
    engine.close()
    shutil.rmtree(warm_wh)
    run_wh = os.path.join(args.scratch, "warehouse")
    _copy_warehouse(os.path.join(args.base, "warehouse"), run_wh)
    engine = Engine(spark=spark, catalogs={"lake": _catalog("journal", run_wh)})
    _, n_del, n_ins = shape(n_source)

    def timed(sql: str) -> tuple[float, Any]:
        t0 = time.perf_counter()
        res = engine.execute(sql)
        return time.perf_counter() - t0, res

    def read(expected: int) -> list[float]:
        times = []
        for _ in range(2):
            seconds, res = timed(READ_SQL)
            count = int(res.rows()[0][0])
            assert count == expected, f"read after history MERGEs: {count} rows, expected {expected}"
            times.append(seconds)
        return times

    out: dict[str, Any] = {"marks": marks, "merge_seconds": [], "reads": {"0": read(n_target)}}
    live = n_target
    for k in range(1, commits + 1):
        engine.register_dataframe("s", spark.read.parquet(sources[k - 1]))
        seconds, res = timed(MERGE_SQL)
        assert res.row_count == n_source, (k, res.row_count)
        out["merge_seconds"].append(seconds)
        live += n_ins - n_del
        if k in marks:
            out["reads"][str(k)] = read(live)
        print(f"history commit {k}: MERGE {seconds:.2f}s", file=sys.stderr, flush=True)
    out["compact_seconds"], res = timed(COMPACT_SQL)
    out["compact_result"] = res.rows() if res.rows() else None
    out["reads"]["compacted"] = read(live)
    engine.register_dataframe("s", spark.read.parquet(sources[commits]))
    out["merge_after_compaction_seconds"], res = timed(MERGE_SQL)
    assert res.row_count == n_source
    out["memory"] = memory.stop()
    engine.close()
    spark.stop()
    print("RESULT " + json.dumps(out, default=str), flush=True)


# ---- driver side ------------------------------------------------------------------------------------------


_CONF: list[str] = []


def _spawn(mode: str, extra: list[str]) -> dict[str, Any]:
    """Run ``python -m bench.run --mode MODE ...`` (with every ``--conf``) and return its ``RESULT`` line's JSON;
    ``RuntimeError`` with the end of its stderr when it prints none."""
    cmd = [sys.executable, "-m", "bench.run", "--mode", mode, *extra]
    for kv in _CONF:
        cmd += ["--conf", kv]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{mode} worker failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def _stats(values: list[float]) -> dict[str, float] | None:
    """Median, min, max and count of ``values`` (None for none)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


_FINGERPRINTS: dict[str, str] = {}


def _fingerprint(system: str, conf: list[str]) -> str:
    """What a loaded table depends on: the code that wrote it (and the Spark settings), or the library version.
    Taken once per bench run, so that edits to the engine during a run do not load the same table again."""
    if system not in _FINGERPRINTS:
        _FINGERPRINTS[system] = _compute_fingerprint(system, conf)
    return _FINGERPRINTS[system]


def _compute_fingerprint(system: str, conf: list[str]) -> str:
    """A hash of the code or library version a system's loaded table depends on (see ``_fingerprint``)."""
    h = hashlib.sha1()
    if system in ("journal", "partitioned"):
        h.update(importlib_metadata.version("pyspark").encode())
        h.update(json.dumps(sorted(conf)).encode())
        for top in ("mergekit", "connectors/journal", "connectors/partitioned"):
            for d, _, names in sorted(os.walk(os.path.join(ROOT, top))):
                for name in sorted(names):
                    if name.endswith(".py"):
                        with open(os.path.join(d, name), "rb") as f:
                            h.update(name.encode() + f.read())
    else:
        h.update(importlib_metadata.version(system).encode())
    return system + "-" + h.hexdigest()[:16]


def _ensure_load(system: str, paths: dict[str, str], n_target: int, reload: bool) -> dict[str, Any]:
    """The system's table of T under T's root, loaded now or earlier by the same code; its load time."""
    base = os.path.join(paths["root"], f"loaded-{system}")
    marker = os.path.join(base, "load.json")
    key = _fingerprint(system, _CONF)
    if not reload and os.path.exists(marker):
        with open(marker) as f:
            info = json.load(f)
        if info.get("key") == key:
            return {**info, "base": base, "cached": True}
    shutil.rmtree(base, ignore_errors=True)
    res = _spawn(
        "load",
        ["--system", system, "--paths", json.dumps(paths), "--base", base, "--n-target", str(n_target)],
    )
    info = {"key": key, "seconds": res["seconds"], "rows": res["rows"], "loaded_at": _now()}
    with open(marker, "w") as f:
        json.dump(info, f)
    return {**info, "base": base, "cached": False}


def loaded_journal(data: str, n_target: int, seed: int, reload: bool, tag: str) -> dict[str, Any]:
    """The journal table of T of ``n_target`` rows (bench/workload.py), as ``bench.run`` loads and caches it
    (``T-<n>-seed<seed>/loaded-journal``; BIGINT versions, ``PRIMARY KEY (id)``), for the benches that start from
    that table alone (bench.small_commits, bench.cold): ``_ensure_load``'s answer (``base``: the folder whose
    ``warehouse`` holds the table), ``T`` (the folder of T's Parquet files) and ``load`` (what the report keeps of
    the load); says how it was loaded in a line that starts with ``[tag]``."""
    paths = {"T": generate_target(data, n_target, seed), "root": target_root(data, n_target, seed)}
    info = _ensure_load("journal", paths, n_target, reload)
    how = f"cached, loaded {info['loaded_at']}" if info["cached"] else "now"
    print(f"[{tag}] T ({info['rows']} rows) loaded in {info['seconds']:.1f}s ({how})", flush=True)
    load = {k: info[k] for k in ("seconds", "rows", "cached", "loaded_at")}
    return {**info, "T": paths["T"], "load": load}


def _now() -> str:
    """Now, in UTC, to the minute."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def publish(
    report: dict[str, Any], args: argparse.Namespace, write_doc: Any, print_report: Any, problems: list
) -> None:
    """The end of a bench run: ``--json``, ``--write-doc`` (``write_doc(report, path)``), the printed report, and
    exit status 1 when a result check found problems."""
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    if args.write_doc:
        write_doc(report, args.write_doc)
    print_report(report)
    if problems:
        sys.exit(1)


def start_report(module: str, settings: dict[str, Any], machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """The head of a driver's report: its command line (``python -m module ...``), when it started, the machine
    (``_machine()`` unless given), its ``settings`` and the load average at the start."""
    return {
        "command": " ".join([".venv/bin/python", "-m", module, *sys.argv[1:]]),
        "started": _now(),
        "machine": machine if machine is not None else _machine(),
        "settings": settings,
        "loadavg_start": _loadavg(),
    }


def republish(args: argparse.Namespace, write_doc: Any, print_report: Any, prepare: Any = None) -> None:
    """``--from-json``: an earlier run's report (``prepare(report)``'s, when given), to ``--write-doc`` and
    printed, as ``publish`` does at the end of a run."""
    with open(args.from_json) as f:
        report = json.load(f)
    if prepare is not None:
        report = prepare(report)
    if args.write_doc:
        write_doc(report, args.write_doc)
    print_report(report)


def _loadavg() -> list[float]:
    """The load average (1, 5, 15 minutes)."""
    return [round(x, 2) for x in os.getloadavg()]


def _machine() -> dict[str, Any]:
    """The machine and the versions the report names: CPU, cores, memory, platform, Python, Java, libraries."""
    info: dict[str, Any] = {
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        import psutil

        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    for pkg in ("pyspark", "pyarrow", "duckdb", "deltalake"):
        try:
            info[pkg] = importlib_metadata.version(pkg)
        except importlib_metadata.PackageNotFoundError:
            pass
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
        info["java"] = java[0] if java else None
    except OSError:
        pass
    return info


def _worker_args(system: str, paths: dict[str, str], base: str, scratch: str, warm: int) -> list[str]:
    """The command line options of a worker process."""
    return ["--system", system, "--paths", json.dumps(paths), "--base", base, "--scratch", scratch, "--warm", str(warm)]


def _run_size(args: argparse.Namespace, n_t: int, n_s: int, systems: list[str], problems: list[str]) -> dict:
    """One TARGET/SOURCE size: generate the workload, load T into each system that has a table, run ``--reps``
    workers per system in rotating order and check that the results agree; returns the size's report entry."""
    name = f"{label(n_t)}/{label(n_s)}"
    entry: dict[str, Any] = {"n_target": n_t, "n_source": n_s, "loadavg_start": _loadavg(), "started": _now()}
    print(f"[{name}] load average at start: {entry['loadavg_start']}", flush=True)
    t0 = time.perf_counter()
    paths = generate(args.data, n_t, n_s, args.seed)
    print(f"[{name}] workload ready in {time.perf_counter() - t0:.1f}s: {paths['T']}, {paths['S']}", flush=True)
    entry["loads"], bases = {}, {}
    for system in systems:
        if system not in LOADED_SYSTEMS:
            continue
        try:
            info = _ensure_load(system, paths, n_t, args.reload)
        except RuntimeError as e:
            problems.append(f"{name} {system}: load failed: {str(e).strip().splitlines()[-1]}")
            print(f"[{name}] {system}: LOAD FAILED\n{e}", flush=True)
            continue
        bases[system] = info["base"]
        entry["loads"][system] = {k: info[k] for k in ("seconds", "rows", "cached", "loaded_at")}
        how = f"cached, loaded {info['loaded_at']}" if info["cached"] else "now"
        print(f"[{name}] {system}: T ({info['rows']} rows) loaded in {info['seconds']:.2f}s ({how})", flush=True)
    entry["systems"] = {}
    runnable = [s for s in systems if s not in LOADED_SYSTEMS or s in bases]
    size_root = os.path.join(args.data, f"{label(n_t)}-{label(n_s)}-seed{args.seed}")
    expected = expected_rows(n_t, n_s)
    for rep in range(args.reps):
        # rotate the order, so that no system always runs first (or last) on a warmer or busier machine
        order = runnable[rep % len(runnable) :] + runnable[: rep % len(runnable)]
        for system in order:
            scratch = os.path.join(size_root, f"scratch-{system}")
            shutil.rmtree(scratch, ignore_errors=True)
            os.makedirs(scratch)
            extra = _worker_args(system, paths, bases.get(system, ""), scratch, args.warm)
            if rep == 0:
                extra.append("--verify")
                if args.profile and system in ("journal", "partitioned"):
                    extra.append("--profile")
            s = entry["systems"].setdefault(system, {"cold": [], "warm": [], "memory": [], "runs": [], "errors": []})
            try:
                res = _spawn("worker", extra)
            except RuntimeError as e:
                s["errors"].append(str(e))
                problems.append(f"{name} {system} rep {rep}: worker failed: {str(e).strip().splitlines()[-1]}")
                print(f"[{name}] rep {rep} {system}: FAILED\n{e}", flush=True)
                continue
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            for r in res["runs"]:
                s[r["kind"]].append(r["seconds"])
                s["runs"].append(r)
                if "row_count" in r and r["row_count"] != n_s and system != "pyarrow_floor":
                    problems.append(f"{name} {system}: row count {r['row_count']}, expected {n_s}")
            if res.get("check") is not None:
                s["check"] = res["check"]
            s["memory"].append(res["memory"])
            if res.get("stages"):
                s["stages"] = res["stages"]
            times = ", ".join(f"{r['kind']} {r['seconds']:.2f}s" for r in res["runs"])
            print(f"[{name}] rep {rep} {system}: {times}", flush=True)
    _check_results(name, entry, expected, n_s, problems)
    for s in entry["systems"].values():
        s["cold_stats"], s["warm_stats"] = _stats(s["cold"]), _stats(s["warm"])
    entry["loadavg_end"] = _loadavg()
    print(f"[{name}] load average at end: {entry['loadavg_end']}", flush=True)
    return entry


def _check_results(name: str, entry: dict[str, Any], expected: int, n_s: int, problems: list[str]) -> None:
    """Row count and sum(amount) of every system's resulting table agree (the floor: it wrote what changed)."""
    sums = {}
    for system, s in entry["systems"].items():
        check = s.get("check")
        if check is None:
            continue
        if system == "pyarrow_floor":
            n_upd, n_del, n_ins = shape(n_s)
            if check != [n_upd + n_ins, n_del]:
                problems.append(f"{name} pyarrow_floor wrote {check}, expected {[n_upd + n_ins, n_del]}")
            continue
        if check[0] != expected:
            problems.append(f"{name} {system}: {check[0]} rows after the MERGE, expected {expected}")
        sums[system] = check[1]
    if sums:
        ref = statistics.median(sums.values())
        for system, total in sums.items():
            if abs(total - ref) > 1e-9 * max(1.0, abs(ref)):
                problems.append(f"{name} {system}: sum(amount) {total!r} differs from the others' {ref!r}")
        entry["check"] = {"rows": expected, "sum_amount": round(ref, 2), "systems": sorted(sums)}


def _run_history(args: argparse.Namespace, problems: list[str]) -> dict[str, Any] | None:
    """The history scenario: successive MERGEs into one journal table, in one worker; its report entry, or None
    (and a problem) when it fails."""
    n_t, n_s, commits = _size(args.history_rows), _size(args.history_source), args.history_commits
    entry: dict[str, Any] = {"n_target": n_t, "n_source": n_s, "commits": commits, "loadavg_start": _loadavg()}
    print(f"[history] load average at start: {entry['loadavg_start']}", flush=True)
    t0 = time.perf_counter()
    paths = generate(args.data, n_t, n_s, args.seed)  # T (shared with the sizes) and a source, unused here
    sources = generate_history(args.data, n_t, n_s, commits + 1, args.seed)
    print(f"[history] {commits + 1} sources of {n_s} rows ready in {time.perf_counter() - t0:.1f}s", flush=True)
    try:
        info = _ensure_load("journal", paths, n_t, args.reload)
        entry["load"] = {k: info[k] for k in ("seconds", "rows", "cached", "loaded_at")}
        scratch = os.path.join(args.data, f"history-{label(n_t)}-{label(n_s)}-seed{args.seed}", "scratch")
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(scratch)
        h = {"sources": sources, "n_target": n_t, "n_source": n_s, "commits": commits}
        try:
            res = _spawn("history", _worker_args("journal", h, info["base"], scratch, 0))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except RuntimeError as e:
        problems.append(f"history: failed: {str(e).strip().splitlines()[-1]}")
        print(f"[history] FAILED\n{e}", flush=True)
        return None
    entry.update(res)
    entry["loadavg_end"] = _loadavg()
    m = res["merge_seconds"]
    print(f"[history] MERGE at commit 1 {m[0]:.2f}s, {commits // 2} {m[max(1, commits // 2) - 1]:.2f}s, ", end="")
    print(f"{commits} {m[-1]:.2f}s; after compaction {res['merge_after_compaction_seconds']:.2f}s", flush=True)
    print(f"[history] load average at end: {entry['loadavg_end']}", flush=True)
    return entry
