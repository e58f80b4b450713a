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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.workload import (  # noqa: E402 - after the path set-up, so `python bench/run.py` works too
    expected_rows,
    generate,
    generate_history,
    label,
    shape,
)

SYSTEMS = ["journal", "partitioned", "pyspark_rewrite", "duckdb", "deltalake", "pyarrow_floor"]
TITLES = {
    "journal": "mergekit, journal table",
    "partitioned": "mergekit, merge table of 8 journal children",
    "pyspark_rewrite": "hand-written PySpark rewrite",
    "duckdb": "DuckDB MERGE INTO (native table)",
    "deltalake": "delta-rs merge (Delta table)",
    "pyarrow_floor": "pyarrow floor (changed rows only)",
}
SPARK_SYSTEMS = {"journal", "partitioned", "pyspark_rewrite"}
LOADED_SYSTEMS = {"journal", "partitioned", "duckdb", "deltalake"}  # systems with a table of their own
CHILDREN = 8

CLAUSES = (
    "WHEN MATCHED AND s.op = 'D' THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET grp = s.grp, name = s.name, amount = t.amount + s.amount, updated = s.updated "
    "WHEN NOT MATCHED THEN INSERT (id, grp, name, amount, updated) VALUES (s.id, s.grp, s.name, s.amount, s.updated)"
)
MERGE_SQL = "MERGE INTO t USING s ON t.id = s.id " + CLAUSES
COLUMNS = "(id BIGINT NOT NULL, grp INTEGER, name VARCHAR(16), amount DOUBLE, updated DATE, PRIMARY KEY (id))"
CREATE_SQL = "CREATE TABLE t " + COLUMNS
# every column of every live row (the journal resolves versions over all of them)
READ_SQL = "SELECT count(*), sum(id), sum(grp), max(name), sum(amount), max(updated) FROM t"
COMPACT_SQL = "CALL lake.system.compact(table => 'default.t')"


def _size(text: str) -> int:
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if text[-1] in "km" else text) * mult)


def _pair_key(n_t: int, n_s: int) -> str:
    return f"{label(n_t)}_{label(n_s)}"


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


def _catalog(system: str, warehouse: str) -> dict[str, Any]:
    if system == "partitioned":
        return {"connector": "partitioned", "warehouse": warehouse, "base": "journal", "version_type": "bigint"}
    return {"connector": "journal", "warehouse": warehouse, "version_type": "bigint"}


def _copy_tree(src: str, dst: str, link: Any) -> None:
    """Copy ``src`` to ``dst``: files for which ``link(name)`` holds are hard-linked (immutable data files), the
    rest (catalogs, logs) copied."""
    if os.path.exists(dst):
        shutil.rmtree(dst)

    def copy(s: str, d: str) -> None:
        if link(os.path.basename(s)):
            os.link(s, d)
        else:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=copy)


def _copy_warehouse(src: str, dst: str) -> None:
    _copy_tree(src, dst, lambda name: name.endswith(".parquet"))


class _PhaseTimer:
    """Wall-clock time spent in named driver-side calls of one statement (profiling only)."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    def wrap(self, obj: Any, attr: str, name: str | None = None) -> None:
        fn = getattr(obj, attr, None)
        if fn is None:  # best effort: the engine changes
            return
        label_ = name or attr

        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.times[label_] = self.times.get(label_, 0.0) + time.perf_counter() - t0

        setattr(obj, attr, timed)


class _Mergekit:
    """MERGE through mergekit's Engine into a fresh copy of the loaded warehouse (journal or partitioned)."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any) -> None:
        self.args, self.paths, self.spark = args, paths, spark
        self.run_wh = os.path.join(args.scratch, "run-warehouse")
        self.engine: Any = None

    def prepare(self) -> None:
        from mergekit import Engine

        if self.engine is not None:
            self.engine.close()
        _copy_warehouse(os.path.join(self.args.base, "warehouse"), self.run_wh)
        self.engine = Engine(spark=self.spark, catalogs={"lake": _catalog(self.args.system, self.run_wh)})
        self.engine.register_dataframe("s", self.spark.read.parquet(self.paths["S"]))

    def run(self, profile: bool) -> dict[str, Any]:
        import mergekit.engine as engine_mod

        timer = _PhaseTimer()
        saved = {name: getattr(engine_mod, name, None) for name in ("run_merge_pipeline", "scan_table")}
        if profile:
            md = self.engine.catalog("lake").get_metadata()
            for attr in (
                "begin_merge",
                "get_splits",
                "finish_merge",
                "finish_merges",
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
            res = self.engine.execute(MERGE_SQL)
            elapsed = time.perf_counter() - t0
        finally:
            for name, fn in saved.items():
                if fn is not None:
                    setattr(engine_mod, name, fn)
        out: dict[str, Any] = {"seconds": elapsed, "row_count": res.row_count}
        if profile:
            out["phases"] = timer.times
        return out

    def check(self) -> list[Any]:
        cnt, total = self.engine.execute("SELECT count(*), sum(amount) FROM t").rows()[0]
        return [int(cnt), float(total)]

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()


class _PySparkRewrite:
    """T ⋉̸ S ∪ (T ⋈ S[op≠D] with the new values) ∪ S ⋉̸ T, written as a new Parquet data set."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any) -> None:
        self.paths, self.spark = paths, spark
        self.out_dir = os.path.join(args.scratch, "pyspark-out")

    def prepare(self) -> None:
        shutil.rmtree(self.out_dir, ignore_errors=True)

    def run(self, profile: bool) -> dict[str, Any]:
        from pyspark.sql import functions as F

        t0 = time.perf_counter()
        t = self.spark.read.parquet(self.paths["T"])
        s = self.spark.read.parquet(self.paths["S"])
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
        unchanged.unionByName(updated).unionByName(inserted).write.mode("overwrite").parquet(self.out_dir)
        return {"seconds": time.perf_counter() - t0}

    def check(self) -> list[Any]:
        row = self.spark.read.parquet(self.out_dir).selectExpr("count(*)", "sum(amount)").collect()[0]
        return [int(row[0]), float(row[1])]

    def close(self) -> None:
        pass


class _DuckDB:
    """DuckDB's MERGE INTO on a copy of the database file T was loaded into; the source read from Parquet."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any = None) -> None:
        self.args, self.paths = args, paths
        self.path = os.path.join(args.scratch, "run.duckdb")
        self.con: Any = None
        self.sql = f"MERGE INTO t USING read_parquet('{paths['S']}/*.parquet') AS s ON t.id = s.id " + CLAUSES

    def prepare(self) -> None:
        import duckdb

        if self.con is not None:
            self.con.close()
        for suffix in ("", ".wal"):
            if os.path.exists(self.path + suffix):
                os.remove(self.path + suffix)
        shutil.copyfile(os.path.join(self.args.base, "t.duckdb"), self.path)
        self.con = duckdb.connect(self.path)
        self.con.execute("SET threads = 2")

    def run(self, profile: bool) -> dict[str, Any]:
        t0 = time.perf_counter()
        n = self.con.execute(self.sql).fetchall()[0][0]
        return {"seconds": time.perf_counter() - t0, "row_count": int(n)}

    def check(self) -> list[Any]:
        cnt, total = self.con.execute("SELECT count(*), sum(amount) FROM t").fetchone()
        return [int(cnt), float(total)]

    def close(self) -> None:
        if self.con is not None:
            self.con.close()


class _DeltaLake:
    """delta-rs ``DeltaTable(path).merge(...)`` with the same clauses, on a copy of the Delta table of T."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any = None) -> None:
        self.args, self.paths = args, paths
        self.path = os.path.join(args.scratch, "delta")

    def prepare(self) -> None:
        _copy_tree(os.path.join(self.args.base, "delta"), self.path, lambda name: name.endswith(".parquet"))

    def run(self, profile: bool) -> dict[str, Any]:
        import pyarrow.parquet as pq
        from deltalake import DeltaTable

        t0 = time.perf_counter()
        source = pq.read_table(self.paths["S"])
        metrics = (
            DeltaTable(self.path)
            .merge(
                source=source,
                predicate="t.id = s.id",
                source_alias="s",
                target_alias="t",
                streamed_exec=False,  # the source is in memory: let delta-rs use its statistics to prune files
            )
            .when_matched_delete(predicate="s.op = 'D'")
            .when_matched_update(
                updates={"grp": "s.grp", "name": "s.name", "amount": "t.amount + s.amount", "updated": "s.updated"}
            )
            .when_not_matched_insert(
                updates={c: f"s.{c}" for c in ("id", "grp", "name", "amount", "updated")},
            )
            .execute()
        )
        elapsed = time.perf_counter() - t0
        n = sum(metrics.get(f"num_target_rows_{k}", 0) for k in ("inserted", "updated", "deleted"))
        return {"seconds": elapsed, "row_count": int(n)}

    def check(self) -> list[Any]:
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        amount = DeltaTable(self.path).to_pyarrow_dataset().to_table(columns=["amount"]).column("amount")
        return [len(amount), float(pc.sum(amount).as_py())]

    def close(self) -> None:
        pass


class _PyArrowFloor:
    """Read S and T's (id, amount) with pyarrow, join, write the changed rows and the deleted ids as Parquet."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any = None) -> None:
        self.paths = paths
        self.out_dir = os.path.join(args.scratch, "floor-out")
        self.counts: list[int] = []

    def prepare(self) -> None:
        shutil.rmtree(self.out_dir, ignore_errors=True)
        os.makedirs(self.out_dir)

    def run(self, profile: bool) -> dict[str, Any]:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        t0 = time.perf_counter()
        s = pq.read_table(self.paths["S"])
        t = pq.read_table(self.paths["T"], columns=["id", "amount"]).rename_columns(["id", "t_amount"])
        j = s.join(t, keys="id", join_type="left outer")
        matched = pc.is_valid(j.column("t_amount"))
        deleted = pc.and_(matched, pc.equal(j.column("op"), "D"))
        changed = j.filter(pc.invert(deleted))
        amount = pc.if_else(
            pc.is_valid(changed.column("t_amount")),
            pc.add(changed.column("t_amount"), changed.column("amount")),
            changed.column("amount"),
        )
        changed = changed.select(["id", "grp", "name", "updated"]).append_column("amount", amount)
        changed = changed.select(["id", "grp", "name", "amount", "updated"])
        pq.write_table(changed, os.path.join(self.out_dir, "changed.parquet"))
        pq.write_table(j.filter(deleted).select(["id"]), os.path.join(self.out_dir, "deleted.parquet"))
        elapsed = time.perf_counter() - t0
        self.counts = [changed.num_rows, int(pc.sum(deleted).as_py() or 0)]
        return {"seconds": elapsed, "row_count": sum(self.counts)}

    def check(self) -> list[Any]:
        return list(self.counts)  # [changed rows written, deleted ids written]

    def close(self) -> None:
        pass


_RUNNERS = {
    "journal": _Mergekit,
    "partitioned": _Mergekit,
    "pyspark_rewrite": _PySparkRewrite,
    "duckdb": _DuckDB,
    "deltalake": _DeltaLake,
    "pyarrow_floor": _PyArrowFloor,
}


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
    spark = _session(event_dir, args.conf)
    spark.range(1).count()  # start the JVM side before timing anything
    try:
        memory.watch_jvm(spark.sparkContext._gateway.proc.pid)  # the JVM: driver and, in local mode, executor
    except Exception:  # noqa: BLE001 - best effort
        pass
    return spark


def worker(args: argparse.Namespace) -> None:
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
    cmd = [sys.executable, "-m", "bench.run", "--mode", mode, *extra]
    for kv in _CONF:
        cmd += ["--conf", kv]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{mode} worker failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def _stats(values: list[float]) -> dict[str, float] | None:
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


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _machine() -> dict[str, Any]:
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
    return ["--system", system, "--paths", json.dumps(paths), "--base", base, "--scratch", scratch, "--warm", str(warm)]


def _run_size(args: argparse.Namespace, n_t: int, n_s: int, systems: list[str], problems: list[str]) -> dict:
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


def main() -> None:
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


# ---- reporting --------------------------------------------------------------------------------------------


def _fmt(st: dict[str, float] | None) -> str:
    if not st:
        return "-"
    if st["n"] == 1:
        return f"{st['median']:.2f}"
    return f"{st['median']:.2f} ({st['min']:.2f}–{st['max']:.2f})"


def _mem(s: dict[str, Any], system: str) -> str:
    def peak(key: str) -> float:
        return max((m.get(key, 0) for m in s["memory"]), default=0)

    if system in SPARK_SYSTEMS:
        return " / ".join(f"{peak(k):.0f}" for k in ("python_driver_mib", "jvm_mib", "python_workers_mib", "all_mib"))
    return f"{peak('python_driver_mib'):.0f} / - / - / {peak('all_mib'):.0f}"


def _size_table(entry: dict[str, Any]) -> list[str]:
    lines = [
        "| system | cold median (min–max) s | warm median (min–max) s | runs cold / warm "
        "| peak RSS MiB: Python driver / JVM / Python workers / all |",
        "|---|---|---|---|---|",
    ]
    for system, s in entry["systems"].items():
        if not s["runs"]:
            lines.append(f"| {TITLES[system]} | failed | failed | 0 / 0 | - |")
            continue
        lines.append(
            f"| {TITLES[system]} | {_fmt(s['cold_stats'])} | {_fmt(s['warm_stats'])} "
            f"| {len(s['cold'])} / {len(s['warm'])} | {_mem(s, system)} |"
        )
    return lines


def _history_marks(h: dict[str, Any]) -> list[tuple[str, float | None, list[float] | None]]:
    rows = [("before commit 1 (T as loaded)", None, h["reads"].get("0"))]
    for k in h["marks"]:
        rows.append((f"commit {k}", h["merge_seconds"][k - 1], h["reads"].get(str(k))))
    rows.append(
        (
            f"after `compact` ({h['compact_seconds']:.2f} s); MERGE = commit {h['commits'] + 1}",
            h["merge_after_compaction_seconds"],
            h["reads"].get("compacted"),
        )
    )
    return rows


def _history_table(h: dict[str, Any]) -> list[str]:
    lines = ["| point | MERGE s | full read s (1st, 2nd) |", "|---|---|---|"]
    for name, merge, reads in _history_marks(h):
        m = f"{merge:.2f}" if merge is not None else "-"
        r = ", ".join(f"{x:.2f}" for x in reads) if reads else "-"
        lines.append(f"| {name} | {m} | {r} |")
    return lines


def _summary_lines(report: dict[str, Any]) -> list[str]:
    """The machine-readable last lines: ``ratio NAME VALUE`` and ``seconds NAME VALUE``."""
    lines = []
    for entry in report["sizes"].values():
        key = _pair_key(entry["n_target"], entry["n_source"])
        systems = entry["systems"]
        base = systems.get("journal", {}).get("warm_stats")
        for system, s in systems.items():
            if system == "journal" or not base or not s.get("warm_stats"):
                continue
            lines.append(f"ratio journal_vs_{system}_{key} {base['median'] / s['warm_stats']['median']:.2f}")
        if entry["n_source"] == 1:
            for system, s in systems.items():
                for kind in ("cold", "warm"):
                    st = s.get(f"{kind}_stats")
                    if st:
                        lines.append(f"seconds {system}_1row_{label(entry['n_target'])}_{kind} {st['median']:.2f}")
    h = report.get("history")
    if h:
        c = h["commits"]
        m = h["merge_seconds"]
        mid = max(1, c // 2)
        for k in sorted({1, mid, c}):
            lines.append(f"seconds history_merge_{k} {m[k - 1]:.2f}")
            lines.append(f"seconds history_read_{k} {min(h['reads'][str(k)]):.2f}")
        lines.append(f"seconds history_compact {h['compact_seconds']:.2f}")
        lines.append(f"seconds history_read_compacted {min(h['reads']['compacted']):.2f}")
        lines.append(f"seconds history_merge_after_compaction {h['merge_after_compaction_seconds']:.2f}")
        read_c, read_0 = min(h["reads"][str(c)]), min(h["reads"]["compacted"])
        lines.append(f"ratio history_read_{c}_vs_compacted {read_c / read_0:.2f}")
        lines.append(f"ratio history_merge_{c}_vs_1 {m[c - 1] / m[0]:.2f}")
        n = max(1, min(5, c // 4))
        if c >= 8:
            first, last = statistics.median(m[:n]), statistics.median(m[-n:])
            lines.append(f"ratio history_merge_last{n}_vs_first{n} {last / first:.2f}")
    return lines


def _print_report(report: dict[str, Any]) -> None:
    print()
    for name, entry in report["sizes"].items():
        print(f"{name} (load average start {entry['loadavg_start']}, end {entry['loadavg_end']})")
        for line in _size_table(entry):
            print(line)
        loads = ", ".join(
            f"{k} {v['seconds']:.1f}s{' (cached)' if v['cached'] else ''}" for k, v in entry["loads"].items()
        )
        if loads:
            print(f"loading T: {loads}")
        print()
    h = report.get("history")
    if h:
        print(f"history: {h['n_target']} rows, {h['commits']} MERGEs of {h['n_source']} rows (journal table)")
        for line in _history_table(h):
            print(line)
        print()
    for name, entry in report["sizes"].items():
        for system in ("journal", "partitioned"):
            s = entry["systems"].get(system)
            if not s or not ("stages" in s or any("phases" in r for r in s["runs"])):
                continue
            print(f"profile {name} {system} (first worker):")
            for r in s["runs"]:
                if "phases" in r:
                    phases = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(r["phases"].items(), key=lambda kv: -kv[1]))
                    print(f"  {r['kind']} {r['seconds']:.2f}s: {phases}")
            for st in s.get("stages") or []:
                print(
                    f"  {st.get('run', '')[:12]:12s} stage {st['stage']:3d} tasks {st['tasks']:3d} "
                    f"wall {st['wall_s']:7.2f}s task-run {st['task_run_s']:7.2f}s  {st['name'][:80]}"
                )
            print()
    for problem in report["problems"]:
        print(f"PROBLEM {problem}")
    print(f"wall time {report['wall_seconds']:.0f}s")
    for line in _summary_lines(report):
        print(line)


def _plot(report: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    h = report.get("history")
    sizes = [(k, e) for k, e in report["sizes"].items() if e["systems"]]
    panels = int(bool(sizes)) + int(bool(h))
    if not panels:
        return
    fig, axes = plt.subplots(1, panels, figsize=(7 * panels, 5.6), squeeze=False)
    ax_list = list(axes[0])
    if sizes:
        ax = ax_list.pop(0)
        systems = [s for s in SYSTEMS if any(s in e["systems"] for _, e in sizes)]
        width = 0.8 / max(1, len(systems))
        for i, system in enumerate(systems):
            xs, ys, lo, hi = [], [], [], []
            for j, (_, e) in enumerate(sizes):
                st = (e["systems"].get(system) or {}).get("warm_stats")
                if st:
                    xs.append(j + (i - (len(systems) - 1) / 2) * width)
                    ys.append(st["median"])
                    lo.append(st["median"] - st["min"])
                    hi.append(st["max"] - st["median"])
            ax.bar(xs, ys, width, yerr=[lo, hi], label=TITLES[system], capsize=2)
        ax.set_xticks(range(len(sizes)), [k for k, _ in sizes])
        ax.set_yscale("log")
        ax.set_xlabel("target / source rows")
        ax.set_ylabel("warm MERGE seconds (median, min–max; log scale)")
        ax.set_title("MERGE, warm runs")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
        ax.grid(axis="y", alpha=0.3, which="both")
    if h:
        ax = ax_list.pop(0)
        m = h["merge_seconds"]
        ax.plot(range(1, len(m) + 1), m, ".-", label="MERGE of 10k rows" if h["n_source"] == 10_000 else "MERGE")
        ax.plot([len(m) + 1], [h["merge_after_compaction_seconds"]], "o", label="MERGE after compact")
        read_x = [int(k) for k in h["marks"]]
        ax.plot(read_x, [min(h["reads"][str(k)]) for k in read_x], "s", label="full read (best of 2)")
        ax.plot([len(m) + 0.5], [min(h["reads"]["compacted"])], "D", label="full read after compact")
        ax.axvline(len(m) + 0.5, color="grey", ls=":", lw=1)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("commit")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
        ax.set_title(f"history: {label(h['n_target'])}-row journal table, {h['commits']} MERGEs")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


DOC_BEGIN = "<!-- bench:figures:begin -->"
DOC_END = "<!-- bench:figures:end -->"


def _doc_section(report: dict[str, Any], plot: str | None, doc_path: str) -> list[str]:
    m = report["machine"]
    out = [
        DOC_BEGIN,
        "<!-- Written by `python -m bench.run --write-doc`: edits between these markers are overwritten. -->",
        "",
        f"Command: `{report['command']}` ({report['started']} to {report['finished']}, "
        f"{report['wall_seconds'] / 60:.0f} min).",
        "",
        f"Machine: {m.get('cpu', '?')}, {m.get('cores')} cores, {m.get('memory_gib', '?')} GiB, {m.get('platform')}; "
        f"Python {m.get('python')}, {m.get('java', 'java ?')}, PySpark {m.get('pyspark')}, pyarrow "
        f"{m.get('pyarrow')}, DuckDB {m.get('duckdb')}, deltalake {m.get('deltalake')}. Worker processes per system "
        f"and size: {report['settings']['reps']} (one cold run each); warm runs per worker: "
        f"{report['settings']['warm']}"
        + (f", Spark settings {report['settings']['conf']}" if report["settings"]["conf"] else "")
        + ".",
        "",
    ]
    for entry in report["sizes"].values():
        n_t, n_s = entry["n_target"], entry["n_source"]
        title = f"{label(n_t)} target / {label(n_s)} source" + (" (one update of an existing id)" if n_s == 1 else "")
        out += [f"### {title}", ""]
        out += _size_table(entry)
        out.append("")
        notes = [f"Load average (1, 5, 15 min) at start {entry['loadavg_start']}, at end {entry['loadavg_end']}."]
        if entry.get("check"):
            c = entry["check"]
            notes.append(
                f"Result checked: {c['rows']} rows, sum(amount) {c['sum_amount']} in {', '.join(c['systems'])}."
            )
        if entry["loads"]:
            loads = ", ".join(
                f"{k} {v['seconds']:.1f} s" + (f" (cached, loaded {v['loaded_at']})" if v["cached"] else "")
                for k, v in entry["loads"].items()
            )
            notes.append(f"Loading T into each system's table (once per target size, not part of the MERGE): {loads}.")
        out += [" ".join(notes), ""]
    h = report.get("history")
    if h:
        out += [
            f"### History: {h['commits']} successive MERGEs of {label(h['n_source'])} rows into a "
            f"{label(h['n_target'])}-row journal table",
            "",
        ]
        out += _history_table(h)
        out += [
            "",
            f"Full read: `{READ_SQL}` through `engine.execute`, twice in a row at each point. Compaction: "
            f"`{COMPACT_SQL}` ({h['compact_seconds']:.2f} s). Load average at start {h['loadavg_start']}, at end "
            f"{h['loadavg_end']}.",
            "",
        ]
    if plot:
        rel = os.path.relpath(os.path.abspath(plot), os.path.dirname(os.path.abspath(doc_path)))
        out += [f"![warm MERGE times per system and size; history scenario]({rel})", ""]
    out += ["The last lines of the run's output (mergekit journal warm median / other warm median):", "", "```"]
    out += _summary_lines(report)
    out += ["```"]
    if report["problems"]:
        out += ["", "Problems in this run:", ""] + [f"- {p}" for p in report["problems"]]
    out.append(DOC_END)
    return out


def _write_doc(report: dict[str, Any], path: str, plot: str | None) -> None:
    with open(path) as f:
        text = f.read()
    if DOC_BEGIN not in text or DOC_END not in text:
        raise SystemExit(f"{path} has no {DOC_BEGIN} ... {DOC_END} section to replace")
    head, rest = text.split(DOC_BEGIN, 1)
    _, tail = rest.split(DOC_END, 1)
    with open(path, "w") as f:
        f.write(head + "\n".join(_doc_section(report, plot, path)) + tail)


if __name__ == "__main__":
    main()
