"""Issue 17's streaming bench: a continuous MERGE job against a hand-written PySpark ``foreachBatch`` job.

    .venv/bin/python -m bench.streaming              # 10M-row table, 1M rows in 100 commits: live, drain cap 10, 0
    .venv/bin/python -m bench.streaming --target-rows 200k --rows 20k --commits 10      # a small try-out
    .venv/bin/python -m bench.streaming --json bench/results-streaming.json --write-doc docs/performance.md

Both systems start from the bench's target T (``--target-rows``, bench/workload.py) and take the bench's source S
(``--rows``: unique ids, 50% updates, 10% deletes, 40% inserts, column ``op``), cut into ``--commits`` chunks of
consecutive rows (cached under ``--data`` as one Parquet file per commit, with a ``rowtime`` that increases from
commit to commit). Two ways of feeding them (``--mode live|drain|both``, default both, in one invocation):

- **live**: the job runs first and a feeder commits the chunks while it runs (as fast as it can, ``--interval 0``,
  the default, or one commit every ``--interval`` seconds); no cap on the commits a batch takes (as before the
  drain mode existed). rows/s = source rows / (last batch visible - first commit); per commit, commit-to-visible
  latency = visible time of the batch that took the commit - commit time (median, p95 by nearest rank, max).
  (Until 2026-11-24 mergekit's producer committed with a Spark ``INSERT`` per chunk, 0.2-0.4 s each, which bounded
  its live rate; it now uses ``Engine.insert_arrow``, an append on the driver without a Spark job.)
- **drain**: every chunk is committed first (the same commits as live), then the job starts; rows/s = source rows /
  (last commit's rows visible - the job's start, taken just before ``START STREAMING JOB`` / ``start()``). Both jobs
  take at most ``--max-commits-per-batch`` commits per micro-batch (one drain per value of the comma-separated
  list; default ``10,0``, 0: no limit): mergekit ``CREATE STREAMING JOB j WITH (max_commits_per_batch = N)``,
  PySpark ``.option("maxFilesPerTrigger", N)``.

Each system runs each mode (and cap) in a worker process of its own (as bench/run.py's systems do), one after the
other, with a fresh Spark session (``local[2]``, mergekit's defaults: ``bench.systems._session``):

- ``mergekit``: a copy of the journal warehouse T was loaded into (``bench.harness._ensure_load``: BIGINT
  versions, ``PRIMARY KEY (id)``, cached like bench/run.py's), ``CREATE STREAM events (...)`` and ``CREATE
  STREAMING JOB j AS MERGE INTO t USING (SELECT STREAM ... FROM events) AS s ON t.id = s.id ...`` (the bench's
  clauses; ``compact_every`` left at its default, 50 batches), started with ``START STREAMING JOB j`` (a
  micro-batch every second). The feeder (the worker's main thread) reads each chunk's Parquet file with pyarrow
  and commits it with ``Engine.insert_arrow("events", table)`` (an INSERT on the driver, without a Spark job; the
  run fails if it falls back to a Spark INSERT) through a second ``Engine`` on the same Spark session and catalog: a job's micro-batch holds its engine's statement lock while it runs, so a
  feeder on the job's own engine could only commit between batches, which no separate producer would. Commit
  time: the stream commit's timestamp in the catalog (``DESCRIBE HISTORY events``, which also confirms that the
  i-th INSERT made version i); a batch's start and visible time: its ``started_at`` and ``committed_at`` in
  ``engine.running_job("j").progress`` (a ``compacted`` key: the job compacted its target after that batch).
- ``pyspark``: what a Spark user writes today: the feeder writes each chunk as one Parquet file (pyarrow, into a
  staging folder, then renamed into the watched folder: commit time = after the rename);
  ``spark.readStream.schema(...).parquet(dir)``, ``foreachBatch`` persists the batch and applies the bench's
  anti-join rewrite (``bench.systems._PySparkRewrite``: ``T ⋉̸ S ∪ (T ⋈ S[op≠D] with new values) ∪ S ⋉̸ T``) to
  the latest version of the data set, writes it as a new Parquet data set version and then points a ``_latest``
  file at it (visible = then; started = ``foreachBatch`` called); trigger every second.

Before the measured run each worker warms up on a small copy of the same shape (``--warmup-rows`` of T, the first 3
chunks, same mode and cap; untimed), so neither system's first measured batch pays for JVM code generation and
Python worker start-up. After the last commit: ``processAllAvailable()`` and stop.

The result of every run is checked: row count and ``sum(amount)`` of the final table against the one-shot MERGE of
all of S, computed with pyarrow from T and S (S's ids are unique, so applying its chunks one by one or all at once
gives the same table); for mergekit also the statements' inserted / updated / deleted totals. Output: a table per
run, a plain reading, ``rows_per_s`` / ``seconds`` / ``ratio`` lines (``ratio
stream_rows_per_s_mergekit_vs_pyspark_...`` for live, ``ratio stream_drain_cap<N>_rows_per_s_...`` per drain:
mergekit rows/s over the PySpark job's; issue 17's target >= 2), ``--json``, and ``--write-doc`` replaces the text
between ``<!-- bench:streaming:begin -->`` and ``<!-- bench:streaming:end -->``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import harness  # noqa: E402 - after the path set-up, so `python bench/streaming.py` works too
from bench.harness import _copy_warehouse, _loadavg, _Memory, _now, _size, _start_spark, publish  # noqa: E402
from bench.stream_report import (  # noqa: E402
    WARMUP_COMMITS,
    check_run,
    print_report,
    summarize,
    upgrade,
    write_doc,
)
from bench.systems import CLAUSES, CREATE_SQL, _catalog, rewrite  # noqa: E402
from bench.workload import generate, label  # noqa: E402

SYSTEMS = ["mergekit", "pyspark"]
STREAM_SQL = (
    "CREATE STREAM events (rowtime TIMESTAMP, id BIGINT, op VARCHAR, grp INTEGER, name VARCHAR, amount DOUBLE, "
    "updated DATE)"
)
JOB_SQL = (
    "CREATE STREAMING JOB j{options} AS MERGE INTO t USING (SELECT STREAM id, op, grp, name, amount, updated FROM "
    "events) AS s ON t.id = s.id " + CLAUSES
)
SPARK_SCHEMA = "rowtime TIMESTAMP, id BIGINT, op STRING, grp INT, name STRING, amount DOUBLE, updated DATE"


# ---- workload: the chunks, the expected result ------------------------------------------------------------


def _chunk_dir(data: str, n_t: int, n_s: int, commits: int, seed: int) -> str:
    return os.path.join(data, f"stream-{label(n_t)}-{label(n_s)}-c{commits}-seed{seed}")


def generate_chunks(data: str, paths: dict[str, str], n_t: int, n_s: int, commits: int, seed: int) -> str:
    """S cut into ``commits`` files of consecutive rows, with a ``rowtime`` first column (commit i: 2024-01-01
    plus i minutes, plus the row's position in microseconds); cached. Returns their folder."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = _chunk_dir(data, n_t, n_s, commits, seed)
    marker = os.path.join(root, "chunks.json")
    params = {"n_target": n_t, "n_source": n_s, "commits": commits, "seed": seed}
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == params:
                return root
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    s = pq.read_table(paths["S"])
    bounds = np.linspace(0, s.num_rows, commits + 1).astype(int)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    for i in range(commits):
        part = s.slice(bounds[i], bounds[i + 1] - bounds[i])
        start = int((base + dt.timedelta(minutes=i)).timestamp() * 1_000_000)
        rowtime = pa.array(start + np.arange(part.num_rows, dtype=np.int64), pa.timestamp("us", tz="UTC"))
        cols = {"rowtime": rowtime, **{c: part.column(c) for c in ("id", "op", "grp", "name", "amount", "updated")}}
        pq.write_table(pa.table(cols), os.path.join(root, f"chunk-{i:05d}.parquet"))
    with open(marker, "w") as f:
        json.dump(params, f)
    return root


def _chunks(folder: str, commits: int) -> list[str]:
    return [os.path.join(folder, f"chunk-{i:05d}.parquet") for i in range(commits)]


def expected_result(paths: dict[str, str]) -> dict[str, Any]:
    """Row count and sum(amount) of T after one MERGE of all of S, by pyarrow: T's rows minus the deleted ones plus
    the inserted ones; sum(T.amount) minus the deleted rows' amounts plus S's amounts of updates and inserts
    (``amount = t.amount + s.amount``)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(paths["T"], columns=["id", "amount"])
    s = pq.read_table(paths["S"], columns=["id", "op", "amount"])
    is_del = pc.equal(s.column("op"), "D")
    deleted = pc.is_in(t.column("id"), value_set=s.filter(is_del).column("id").combine_chunks())
    inserted = pc.invert(pc.is_in(s.column("id"), value_set=t.column("id").combine_chunks()))
    total = (
        pc.sum(t.column("amount")).as_py()
        - (pc.sum(t.filter(deleted).column("amount")).as_py() or 0.0)
        + (pc.sum(s.filter(pc.invert(is_del)).column("amount")).as_py() or 0.0)
    )
    rows = t.num_rows - int(pc.sum(deleted).as_py() or 0) + int(pc.sum(inserted).as_py() or 0)
    return {"rows": rows, "sum_amount": total}


# ---- worker side (one process per system) -----------------------------------------------------------------


def _wait_idle(query: Any, timeout: float = 180.0) -> None:
    """Until the streaming query has run its first trigger and waits for the next one (or ``timeout``)."""
    t0 = time.time()
    time.sleep(2.0)
    while time.time() - t0 < timeout:
        status = query.status
        if not status.get("isTriggerActive") and str(status.get("message", "")).startswith("Waiting"):
            return
        time.sleep(0.2)


def _feed(commit: Any, n: int, interval: float, tag: str) -> list[dict[str, Any]]:
    """Call ``commit(i)`` for every chunk, as fast as it goes or one every ``interval`` seconds; returns per commit
    when it started and returned (``commit``'s dict merged in)."""
    out = []
    t0 = time.time()
    for i in range(n):
        if interval > 0:
            time.sleep(max(0.0, t0 + i * interval - time.time()))
        started = time.time()
        extra = commit(i) or {}
        out.append({"i": i, "started": started, "returned": time.time(), **extra})
        if (i + 1) % 10 == 0 or i + 1 == n:
            print(f"[{tag}] fed {i + 1}/{n} commits, {time.time() - t0:.1f}s", file=sys.stderr, flush=True)
    return out


def _warm_target(args: argparse.Namespace, paths: dict[str, str]) -> str:
    """The first ``--warmup-rows`` rows of T as one Parquet file in the scratch folder (the warm-up's target)."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    folder = os.path.join(args.scratch, "warm-T")
    os.makedirs(folder, exist_ok=True)
    table = pads.dataset(paths["T"], format="parquet").head(_size(args.warmup_rows))
    pq.write_table(table, os.path.join(folder, "part-00000.parquet"))
    return folder


def _job_sql(cap: int | None) -> str:
    """Job j's statement: without options (``cap`` None: the live feed, as before the drain mode existed) or
    ``WITH (max_commits_per_batch = cap)`` (0: no limit)."""
    return JOB_SQL.format(options="" if cap is None else f" WITH (max_commits_per_batch = {cap})")


def _mergekit_run(
    spark: Any,
    warehouse: str,
    streams_dir: str,
    chunks: list[str],
    interval: float,
    tag: str,
    drain: bool = False,
    cap: int | None = None,
) -> dict[str, Any]:
    """Job j on the journal table ``t`` of ``warehouse`` and ``chunks`` fed into stream ``events`` through a second
    engine: live (start, wait for the first trigger, feed) or ``drain`` (feed, then start: ``job_start`` is just
    before the START); wait until every commit is processed, stop; the commits, batches and the final table."""
    import pyarrow.parquet as pq

    from mergekit import Engine

    catalogs = {"lake": _catalog("journal", warehouse)}
    engine = Engine(spark=spark, catalogs=catalogs, streams_dir=streams_dir)
    feeder = Engine(spark=spark, catalogs=catalogs)  # the producer: not blocked by the job's statement lock
    try:
        engine.execute(STREAM_SQL)
        job_sql = _job_sql(cap)
        engine.execute(job_sql)

        def commit(i: int) -> None:
            result = feeder.insert_arrow("events", pq.read_table(chunks[i]))
            if result.metrics.get("strategy") != "driver_append":
                raise RuntimeError(f"commit {i}: {result.metrics.get('driver_append_declined')}")

        if drain:
            commits = _feed(commit, len(chunks), 0.0, tag)
            job_start = time.time()
            engine.execute("START STREAMING JOB j")
            start_returned = time.time()
            handle = engine.running_job("j")
        else:
            job_start = time.time()
            engine.execute("START STREAMING JOB j")
            start_returned = time.time()
            handle = engine.running_job("j")
            _wait_idle(handle.query)
            commits = _feed(commit, len(chunks), interval, tag)
        handle.process_all_available()
        processed = time.time()
        if handle.exception is not None:
            raise handle.exception
        engine.execute("STOP STREAMING JOB j")
        progress = [dict(p) for p in handle.progress]
        # version of each INSERT and its commit time in the catalog (the stream's create commit is version 0)
        history = sorted(
            (int(v), ts.timestamp(), op, json.loads(m))
            for v, ts, op, m in engine.execute("DESCRIBE HISTORY events").rows()
        )
        writes = [h for h in history if h[2] != "create"]
        rows_per_chunk = [pq.ParquetFile(c).metadata.num_rows for c in chunks]
        problems = []
        if [h[0] for h in writes] != list(range(1, len(chunks) + 1)):
            problems.append(f"stream versions {[h[0] for h in writes]}, expected 1..{len(chunks)}")
        for c, h in zip(commits, writes, strict=False):
            c["version"], c["committed"] = h[0], h[1]
            if h[3].get("rows") != rows_per_chunk[c["i"]]:
                problems.append(f"commit {c['i']}: version {h[0]} holds {h[3].get('rows')} rows")
            if not (c["started"] - 0.01 <= h[1] <= c["returned"] + 0.01):
                problems.append(f"commit {c['i']}: catalog time outside the insert_arrow call")
        batches = []
        for p in progress:
            b = {k: p.get(k) for k in ("batch", "rows", "count", "skipped", "compacted", "metrics")}
            ranges = list((p.get("commits") or {}).values())
            b["after"], b["up_to"] = ranges[0] if ranges else (None, None)
            b["started"] = p.get("started_at")
            b["visible"] = p.get("committed_at")
            batches.append(b)
        for c in commits:
            hit = [
                b
                for b in batches
                if b["visible"] is not None
                and b["after"] is not None
                and b["after"] < c.get("version", -1) <= b["up_to"]
            ]
            c["batch"] = hit[0]["batch"] if hit else None
        cnt, total = engine.execute("SELECT count(*), sum(amount) FROM t").rows()[0]
        return {
            "job": job_sql,
            "job_start": job_start,
            "start_returned": start_returned,
            "commits": commits,
            "batches": batches,
            "processed": processed,
            "check": [int(cnt), float(total)],
            "problems": problems,
        }
    finally:
        feeder.close()
        engine.close()


def _mergekit_worker(args: argparse.Namespace, paths: dict[str, str], chunks: list[str], spark: Any) -> dict:
    """Warm up on a small journal table, then the measured run on a fresh copy of the loaded warehouse."""
    from mergekit import Engine

    scratch = args.scratch
    warm_wh = os.path.join(scratch, "warm-warehouse")
    engine = Engine(spark=spark, catalogs={"lake": _catalog("journal", warm_wh)})
    engine.execute(CREATE_SQL)
    engine.register_dataframe("t_parquet", spark.read.parquet(_warm_target(args, paths)))
    engine.execute("INSERT INTO t SELECT id, grp, name, amount, updated FROM t_parquet")
    engine.close()
    t0 = time.time()
    drain, cap = args.run == "drain", (args.cap if args.run == "drain" else None)
    warm = chunks[:WARMUP_COMMITS]
    _mergekit_run(spark, warm_wh, os.path.join(scratch, "warm-streams"), warm, 0.0, "warm-up", drain, cap)
    print(f"[mergekit] warm-up done in {time.time() - t0:.1f}s", file=sys.stderr, flush=True)
    wh = os.path.join(scratch, "warehouse")
    _copy_warehouse(os.path.join(args.base, "warehouse"), wh)
    streams = os.path.join(scratch, "streams")
    return _mergekit_run(spark, wh, streams, chunks, args.interval, "mergekit", drain, cap)


def _pyspark_run(
    spark: Any,
    t_dir: str,
    root: str,
    chunks: list[str],
    interval: float,
    tag: str,
    drain: bool = False,
    cap: int | None = None,
) -> dict[str, Any]:
    """A file-source streaming query over ``root/in`` whose ``foreachBatch`` rewrites the latest version of the
    data set (first ``t_dir``) into ``root/out/v-<batch>``; feed ``chunks`` as files: live (start, wait for the
    first trigger, feed) or ``drain`` (feed, then start; ``maxFilesPerTrigger`` = ``cap`` unless 0 or None); wait,
    stop."""
    import pyarrow.parquet as pq

    in_dir, staging, out = (os.path.join(root, d) for d in ("in", "staging", "out"))
    for d in (in_dir, staging, out):
        os.makedirs(d)
    tables = [pq.read_table(c) for c in chunks]  # in memory before the run: the feeder only writes
    state = {"latest": t_dir}
    batches: list[dict[str, Any]] = []
    lock = threading.Lock()

    def on_batch(df: Any, batch_id: int) -> None:
        started = time.time()
        s = df.persist()
        try:
            rows = s.count()
            if rows == 0:
                return
            t = spark.read.parquet(state["latest"])
            new = os.path.join(out, f"v-{batch_id:05d}")
            rewrite(t, s).write.mode("overwrite").parquet(new)
        finally:
            s.unpersist()
        with open(os.path.join(out, "_latest.tmp"), "w") as f:
            f.write(new)
        os.replace(os.path.join(out, "_latest.tmp"), os.path.join(out, "_latest"))  # readers follow this pointer
        previous, state["latest"] = state["latest"], new
        visible = time.time()
        with lock:
            batches.append({"batch": batch_id, "rows": rows, "started": started, "visible": visible})
        if previous != t_dir:
            shutil.rmtree(previous, ignore_errors=True)

    def commit(i: int) -> None:
        name = f"commit-{i:05d}.parquet"
        pq.write_table(tables[i], os.path.join(staging, name))
        os.rename(os.path.join(staging, name), os.path.join(in_dir, name))

    reader = spark.readStream.schema(SPARK_SCHEMA)
    if cap:
        reader = reader.option("maxFilesPerTrigger", cap)
    writer = (
        reader.parquet(in_dir)
        .writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", os.path.join(root, "checkpoint"))
        .trigger(processingTime="1 second")
    )
    if drain:
        commits = _feed(commit, len(chunks), 0.0, tag)
    job_start = time.time()
    query = writer.start()
    start_returned = time.time()
    try:
        if not drain:
            _wait_idle(query)
            commits = _feed(commit, len(chunks), interval, tag)
        query.processAllAvailable()
        processed = time.time()
    finally:
        query.stop()
    batch_of = _file_batches(os.path.join(root, "checkpoint"))
    for c in commits:
        c["committed"] = c["returned"]  # the rename returned: the file is in the folder
        c["batch"] = batch_of.get(f"commit-{c['i']:05d}.parquet")
    row = spark.read.parquet(state["latest"]).selectExpr("count(*)", "sum(amount)").collect()[0]
    return {
        "job": f"maxFilesPerTrigger {cap}" if cap else "maxFilesPerTrigger unset",
        "job_start": job_start,
        "start_returned": start_returned,
        "commits": commits,
        "batches": batches,
        "processed": processed,
        "check": [int(row[0]), float(row[1])],
        "problems": [],
    }


def _file_batches(checkpoint: str) -> dict[str, int]:
    """File name -> the batch that read it, from the file source's log in the query's checkpoint
    (``sources/0/<batch>`` and its compacted ``<batch>.compact`` files: a version line, then one JSON entry per file
    with its ``path`` and ``batchId``)."""
    folder = os.path.join(checkpoint, "sources", "0")
    out: dict[str, int] = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name.endswith(".crc"):
            continue
        with open(os.path.join(folder, name)) as f:
            for line in f.read().splitlines()[1:]:
                if line.strip():
                    entry = json.loads(line)
                    out[os.path.basename(entry["path"])] = int(entry["batchId"])
    return out


def _pyspark_worker(args: argparse.Namespace, paths: dict[str, str], chunks: list[str], spark: Any) -> dict:
    """Warm up on a small copy of T, then the measured run on T's Parquet files."""
    t0 = time.time()
    drain, cap = args.run == "drain", (args.cap if args.run == "drain" else None)
    warm_t, warm_root = _warm_target(args, paths), os.path.join(args.scratch, "warm")
    _pyspark_run(spark, warm_t, warm_root, chunks[:WARMUP_COMMITS], 0.0, "warm-up", drain, cap)
    print(f"[pyspark] warm-up done in {time.time() - t0:.1f}s", file=sys.stderr, flush=True)
    root = os.path.join(args.scratch, "run")
    return _pyspark_run(spark, paths["T"], root, chunks, args.interval, "pyspark", drain, cap)


def worker(args: argparse.Namespace) -> None:
    """``--role worker``: one system's warm-up and measured run of one mode (``--run live|drain``, ``--cap``);
    prints ``RESULT <json>``."""
    paths = json.loads(args.paths)
    chunks = _chunks(paths["chunks"], args.commits)
    memory = _Memory()
    spark = _start_spark(args, memory)
    memory.start()
    run = _mergekit_worker if args.system == "mergekit" else _pyspark_worker
    out = run(args, paths, chunks, spark)
    out["memory"] = memory.stop()
    spark.stop()
    print("RESULT " + json.dumps(out, default=str), flush=True)


# ---- driver side --------------------------------------------------------------------------------------------


def _plan(mode: str, caps: list[int]) -> list[dict[str, Any]]:
    """The runs of one invocation, in order: the live feed, then a backlog drain per cap."""
    runs = [{"name": "live", "mode": "live", "cap": None}] if mode in ("live", "both") else []
    if mode in ("drain", "both"):
        runs += [{"name": f"drain-cap{c}", "mode": "drain", "cap": c} for c in caps]
    return runs


def _spawn(
    args: argparse.Namespace, system: str, run: dict[str, Any], paths: dict[str, str], base: str, scratch: str
) -> dict[str, Any]:
    """Run one system's worker for one run (its progress lines go to stderr); its ``RESULT``, or RuntimeError."""
    cmd = [sys.executable, "-m", "bench.streaming", "--role", "worker", "--system", system]
    cmd += ["--paths", json.dumps(paths), "--base", base, "--scratch", scratch, "--commits", str(args.commits)]
    cmd += ["--interval", str(args.interval), "--warmup-rows", args.warmup_rows]
    cmd += ["--run", run["mode"], "--cap", str(run["cap"] or 0)]
    for kv in args.conf:
        cmd += ["--conf", kv]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{system} worker ({run['name']}) failed (exit {proc.returncode}); its stderr is above")


def _caps(text: str) -> list[int]:
    caps = [int(x) for x in text.split(",") if x.strip()]
    if not caps or any(c < 0 for c in caps):
        raise argparse.ArgumentTypeError("a comma-separated list of numbers >= 0")
    return caps


def _resummarized(report: dict[str, Any]) -> dict[str, Any]:
    """A ``--json`` report of any version, its figures computed from the raw times as this version computes them."""
    report = upgrade(report)
    for run in report["runs"].values():
        for entry in run["systems"].values():
            if entry.get("result"):
                entry["summary"] = summarize(entry["result"], report["settings"]["rows"], run["mode"])
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="both", choices=["live", "drain", "both"], help="what to measure (both)")
    p.add_argument(
        "--max-commits-per-batch",
        type=_caps,
        default=[10, 0],
        help="drain: commits per micro-batch, one drain per value (0: no limit; default 10,0)",
    )
    p.add_argument("--target-rows", default="10M", help="rows of the journal table (T of bench/workload.py)")
    p.add_argument("--rows", default="1M", help="source rows fed in all (S of bench/workload.py)")
    p.add_argument("--commits", type=int, default=100, help="commits the source is fed in")
    p.add_argument("--interval", type=float, default=0.0, help="live: seconds between commits (0: as fast as possible)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma separated, from: " + ", ".join(SYSTEMS))
    p.add_argument("--warmup-rows", default="100k", help="rows of the warm-up's small target")
    harness.add_run_options(p, reload="load T into the journal", figures="streaming")
    # worker options
    p.add_argument("--run", default="live", choices=["live", "drain"], help=argparse.SUPPRESS)
    p.add_argument("--cap", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--system", default="mergekit", help=argparse.SUPPRESS)
    p.add_argument("--paths", default="{}", help=argparse.SUPPRESS)
    p.add_argument("--base", default="", help=argparse.SUPPRESS)
    p.add_argument("--scratch", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role == "worker":
        return worker(args)
    if args.from_json:
        return harness.republish(args, write_doc, print_report, _resummarized)

    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if sorted(set(systems) - set(SYSTEMS)):
        p.error(f"unknown systems; choose from {SYSTEMS}")
    n_t, n_s = _size(args.target_rows), _size(args.rows)
    harness._CONF.extend(args.conf)  # the journal load's Spark settings (and its cache key)
    plan = _plan(args.mode, args.max_commits_per_batch)
    settings = {
        "target_rows": n_t,
        "rows": n_s,
        "commits": args.commits,
        "interval": args.interval,
        "mode": args.mode,
        "max_commits_per_batch": args.max_commits_per_batch,
        "warmup_rows": args.warmup_rows,
        "seed": args.seed,
        "conf": args.conf,
        "systems": systems,
    }
    report = {**harness.start_report("bench.streaming", settings), "runs": {}}
    print(f"[stream] load average at start: {report['loadavg_start']}", flush=True)
    wall0 = time.perf_counter()
    paths = generate(args.data, n_t, n_s, args.seed)
    paths["chunks"] = generate_chunks(args.data, paths, n_t, n_s, args.commits, args.seed)
    report["expected"] = expected_result(paths)
    print(f"[stream] workload ready in {time.perf_counter() - wall0:.1f}s: {paths['chunks']}", flush=True)
    problems: list[str] = []
    base = ""
    if "mergekit" in systems:
        info = harness._ensure_load("journal", paths, n_t, args.reload)
        base = info["base"]
        report["load"] = {k: info[k] for k in ("seconds", "rows", "cached", "loaded_at")}
        how = f"cached, loaded {info['loaded_at']}" if info["cached"] else "now"
        print(f"[stream] journal: T ({info['rows']} rows) loaded in {info['seconds']:.2f}s ({how})", flush=True)
    for run in plan:
        entries: dict[str, Any] = {}
        report["runs"][run["name"]] = {**run, "systems": entries, "loadavg_start": _loadavg()}
        for system in systems:
            tag = f"{run['name']} {system}"
            scratch = os.path.join(_chunk_dir(args.data, n_t, n_s, args.commits, args.seed), f"scratch-{system}")
            shutil.rmtree(scratch, ignore_errors=True)
            os.makedirs(scratch)
            entry: dict[str, Any] = {"loadavg_start": _loadavg(), "started": _now()}
            entries[system] = entry
            print(f"[stream] {tag}: worker starts (load average {entry['loadavg_start']})", flush=True)
            t0 = time.perf_counter()
            try:
                res = _spawn(args, system, run, paths, base, scratch)
            except RuntimeError as e:
                problems.append(str(e))
                print(f"[stream] {tag}: FAILED: {e}", flush=True)
                continue
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            entry["worker_seconds"] = round(time.perf_counter() - t0, 1)
            entry["loadavg_end"] = _loadavg()
            entry["memory"] = res.pop("memory")
            entry["result"] = res
            entry["summary"] = summarize(res, n_s, run["mode"])
            check_run(report, tag, system, entry, problems)
            m = entry["summary"]
            how = (
                f"latency median {m.get('latency', {}).get('median', float('nan')):.2f}s"
                if run["mode"] == "live"
                else f"drained in {m.get('drain_seconds', float('nan')):.1f}s"
            )
            print(
                f"[stream] {tag}: {m.get('rows_per_s', 0):.0f} rows/s, {m['batches_with_commits']} batches, {how} "
                f"(worker {entry['worker_seconds']:.0f}s, load average {entry['loadavg_end']})",
                flush=True,
            )
        report["runs"][run["name"]]["loadavg_end"] = _loadavg()
    report["loadavg_end"] = _loadavg()
    report["finished"] = _now()
    report["wall_seconds"] = round(time.perf_counter() - wall0, 1)
    report["problems"] = problems
    publish(report, args, write_doc, print_report, problems)


if __name__ == "__main__":
    main()
