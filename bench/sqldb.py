"""Issue 18's bench: MERGE into a PostgreSQL table through mergekit's ``sqldb`` connector, against PostgreSQL's own
MERGE and against the hand-written PySpark ``foreachPartition`` upsert a Spark user writes today.

    .venv/bin/python -m bench.sqldb                                  # 1M source rows into a 10M-row table
    .venv/bin/python -m bench.sqldb --target-rows 200k --rows 20k    # a small try-out
    .venv/bin/python -m bench.sqldb --json bench/results-sqldb.json --write-doc docs/performance.md

Workload: the bench's T and S (bench/workload.py: ``--target-rows`` rows of T, ``--rows`` rows of S with unique
ids, 50% updates, 10% deletes, 40% inserts, column ``op``) and the bench's MERGE clauses (``bench.systems.CLAUSES``).

PostgreSQL: a throwaway server of its own (``initdb`` under ``--data``, ``T-<n>-seed<seed>/loaded-postgres``;
``pg_ctl`` on a free loopback port; the binaries of /usr/lib/postgresql/<newest>/bin), started with
``PG_SETTINGS`` (the same for every system). T is loaded once (cached while the marker matches; ``--reload``) into
the database ``base``: ``COPY t FROM STDIN`` (CSV written by pyarrow from T's Parquet files), then ``ALTER TABLE t
ADD PRIMARY KEY (id)`` and ``VACUUM ANALYZE t``. Before every measured run (untimed): ``CREATE DATABASE run_...
TEMPLATE base STRATEGY FILE_COPY``, ``pg_prewarm`` of ``t`` and ``t_pkey``, ``CHECKPOINT``,
``pg_stat_statements_reset()``; after it, ``count(*), sum(amount)`` of t against the pyarrow expectation
(``bench.streaming.expected_result``) and the statements PostgreSQL spent its time on (pg_stat_statements).

Systems (``--systems``), each in a worker process of its own (one cold run, then ``--warm`` warm runs, each on a
fresh copy of the database), one after the other:

- ``postgres_merge`` (the reference): ``CREATE TABLE s``, ``COPY s FROM STDIN`` (S as CSV, written before the
  timer), ``ANALYZE s`` (timed as "load S"), then PostgreSQL's own ``MERGE INTO t USING s ON t.id = s.id ...``
  (the bench's clauses, one statement in autocommit: one transaction; timed as the MERGE).
- ``mergekit_sqldb``: ``Engine(catalogs={"pg": {"connector": "sqldb", "uri": ...}})``, S's Parquet file registered
  with ``engine.register_dataframe("s", ...)`` (untimed), timed: ``MERGE INTO pg.public.t AS t USING s ON t.id =
  s.id ...``. Per phase: driver-side wall time in ``begin_merge``, the Spark job (``run_merge_pipeline`` /
  ``run_lookup_merge``) and ``finish_merge`` (best effort while the engine changes).
- ``pyspark_upsert``: ``spark.read.parquet(S).repartition(N).foreachPartition(f)`` (N: ``--upsert-partitions``,
  default the session's parallelism); f opens a psycopg connection, per ``--batch-rows`` rows COPYs the U/I rows
  into a temporary table and runs ``INSERT INTO t SELECT ... ON CONFLICT (id) DO UPDATE SET ... amount = t.amount +
  EXCLUDED.amount ...`` and ``DELETE FROM t WHERE id = ANY(%s)`` for the D ids, and commits once per partition
  (not atomic: a failed task leaves the partitions before it committed). Timed: all of it.

Output: per run seconds, rows/s (source rows / seconds), CPU seconds of the PostgreSQL server and of the client
processes, the load average at its start; ``seconds`` / ``rows_per_s`` / ``ratio mergekit_sqldb_vs_<system>_<T>_<S>``
lines (mergekit seconds / the other's; issue 18's target: at most 1.5 against ``postgres_merge``), ``--json``, and
``--write-doc`` replaces the text between ``<!-- bench:sqldb:begin -->`` and ``<!-- bench:sqldb:end -->``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import harness  # noqa: E402
from bench.doc_section import replace_section  # noqa: E402
from bench.harness import _loadavg, _machine, _Memory, _now, _size, _stage_times, _start_spark, publish  # noqa: E402
from bench.streaming import expected_result  # noqa: E402
from bench.systems import CLAUSES  # noqa: E402
from bench.workload import generate, label  # noqa: E402

SYSTEMS = ["postgres_merge", "mergekit_sqldb", "pyspark_upsert"]
TITLES = {
    "postgres_merge": "PostgreSQL MERGE (S loaded by COPY)",
    "mergekit_sqldb": "mergekit, sqldb connector",
    "pyspark_upsert": "hand-written PySpark foreachPartition upsert",
}
SPARK_SYSTEMS = {"mergekit_sqldb", "pyspark_upsert"}
# The server's settings, the same for every system (on the command line of `postgres`, over initdb's defaults).
PG_SETTINGS = {
    "shared_buffers": "2GB",  # T (about 0.6 GiB at 10M rows) and its key index fit, prewarmed before each run
    "work_mem": "64MB",
    "maintenance_work_mem": "1GB",
    "max_wal_size": "8GB",  # no checkpoint during a run
    "checkpoint_timeout": "30min",
    "effective_cache_size": "8GB",
    "random_page_cost": "1.1",
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track": "all",
    "track_io_timing": "on",
}
LAYOUT = 1  # the loaded database's layout: a change reloads it
COLS = "id, grp, name, amount, updated"
TABLE_SQL = (
    "CREATE TABLE {} (id BIGINT NOT NULL, grp INTEGER, name VARCHAR(16), amount DOUBLE PRECISION, updated DATE{})"
)
PG_MERGE_SQL = "MERGE INTO t USING s ON t.id = s.id " + CLAUSES
MK_MERGE_SQL = "MERGE INTO pg.public.t AS t USING s ON t.id = s.id " + CLAUSES
UPSERT_SQL = (
    f"INSERT INTO t AS t ({COLS}) SELECT {COLS} FROM s_batch ON CONFLICT (id) DO UPDATE SET grp = EXCLUDED.grp, "
    "name = EXCLUDED.name, amount = t.amount + EXCLUDED.amount, updated = EXCLUDED.updated"
)
DOC_BEGIN, DOC_END = "<!-- bench:sqldb:begin -->", "<!-- bench:sqldb:end -->"
RELTOL = 1e-9


# ---- the PostgreSQL server --------------------------------------------------------------------------------


def _pg_bin() -> str:
    """The directory with initdb, pg_ctl and postgres: the newest major version installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]), reverse=True)
    found += [p for p in [shutil.which("initdb")] if p]
    if not found:
        raise SystemExit("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    return os.path.dirname(found[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """A PostgreSQL cluster in ``root/data`` (log in ``root/log``), run as ``postgres`` when we are root."""

    def __init__(self, root: str) -> None:
        self.root, self.data, self.bindir = root, os.path.join(root, "data"), _pg_bin()
        self.port = 0
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([*self.as_user, *cmd], check=check, capture_output=True, text=True)

    def version(self) -> str:
        return self._run(f"{self.bindir}/postgres", "--version").stdout.strip()

    def init(self) -> None:
        if os.path.exists(self.data):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        if self.as_user:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(f"{self.bindir}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    def start(self) -> None:
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):  # left running by an interrupted bench
            self.stop()
        self.port = _free_port()
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
        opts += " ".join(f"-c {k}={v}" for k, v in PG_SETTINGS.items())
        log = os.path.join(self.root, "log")
        self._run(f"{self.bindir}/pg_ctl", "-D", self.data, "-l", log, "-w", "-t", "600", "-o", opts, "start")

    def stop(self) -> None:
        self._run(f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop", check=False)

    @property
    def uri(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}"

    def pid(self) -> int:
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())


def _connect(uri: str, autocommit: bool = True) -> Any:
    import psycopg

    return psycopg.connect(uri, autocommit=autocommit)


def _csv(table: Any) -> bytes:
    """A pyarrow table as CSV with a header (COPY's ``FORMAT csv, HEADER true``)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink)
    return sink.getvalue().to_pybytes()


def _copy(conn: Any, table: str, columns: list[str], chunks: Any) -> None:
    """``COPY table (columns) FROM STDIN`` fed CSV ``chunks`` (bytes)."""
    with conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT csv, HEADER true)") as cp:
        for chunk in chunks:
            cp.write(chunk)


def _load_base(server: PgServer, t_dir: str) -> dict[str, Any]:
    """Database ``base`` with T in ``public.t``: COPY, primary key, VACUUM ANALYZE; timed per step."""
    import pyarrow.parquet as pq

    with _connect(server.uri + "/postgres") as c:
        c.execute("CREATE DATABASE base")
    out: dict[str, Any] = {}
    with _connect(server.uri + "/base") as c:
        c.execute("CREATE EXTENSION pg_prewarm")
        c.execute("CREATE EXTENSION pg_stat_statements")
        c.execute(TABLE_SQL.format("t", ""))
        files = sorted(glob.glob(os.path.join(t_dir, "*.parquet")))
        cols = pq.read_schema(files[0]).names
        t0 = time.perf_counter()
        for name in files:  # CSV of one 1M-row file at a time
            _copy(c, "t", cols, [_csv(pq.read_table(name))])
        out["copy_seconds"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        c.execute("ALTER TABLE t ADD PRIMARY KEY (id)")
        out["primary_key_seconds"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        c.execute("VACUUM ANALYZE t")
        out["vacuum_analyze_seconds"] = round(time.perf_counter() - t0, 2)
        out["rows"] = c.execute("SELECT count(*) FROM t").fetchone()[0]
        sizes = c.execute("SELECT pg_relation_size('t'), pg_relation_size('t_pkey')").fetchone()
        out["table_mib"], out["index_mib"] = (round(x / 2**20) for x in sizes)
    return out


def _ensure_base(root: str, t_dir: str, n_t: int, seed: int, reload: bool) -> tuple[PgServer, dict[str, Any]]:
    """Start the server of ``root``; initialise it and load T unless a matching load is cached there."""
    server = PgServer(root)
    marker = os.path.join(os.path.dirname(root), "loaded-postgres.json")
    params = {"n_target": n_t, "seed": seed, "postgres": server.version(), "layout": LAYOUT}
    if not reload and os.path.exists(marker) and os.path.isdir(server.data):
        with open(marker) as f:
            cached = json.load(f)
        if cached.get("params") == params:
            server.start()
            return server, {**cached["load"], "cached": True}
    if os.path.exists(marker):
        os.remove(marker)
    server.init()
    server.start()
    load = {**_load_base(server, t_dir), "loaded_at": _now()}
    with open(marker, "w") as f:
        json.dump({"params": params, "load": load}, f)
    return server, {**load, "cached": False}


def _drop_run_databases(uri: str) -> None:
    with _connect(uri + "/postgres") as c:
        for (db,) in c.execute("SELECT datname FROM pg_database WHERE datname LIKE 'run\\_%'").fetchall():
            c.execute(f"DROP DATABASE {db} WITH (FORCE)")


# ---- worker side (one process per system) -----------------------------------------------------------------


def _restore(uri: str, db: str) -> str:
    """A fresh copy of ``base`` as ``db``, its table and index in shared buffers, after a checkpoint (untimed)."""
    with _connect(uri + "/postgres") as c:
        c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {db} TEMPLATE base STRATEGY FILE_COPY")
    with _connect(f"{uri}/{db}") as c:
        c.execute("SELECT pg_prewarm('t'), pg_prewarm('t_pkey')")
        c.execute("CHECKPOINT")
        c.execute("SELECT pg_stat_statements_reset()")
    return f"{uri}/{db}"


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its descendants, with the children it has reaped."""
    import psutil

    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def _pg_statements(db_uri: str, top: int = 8) -> tuple[list[dict[str, Any]], float]:
    """The statements of this database PostgreSQL spent most time on since the reset (pg_stat_statements), and
    the execution time of all of them."""
    sql = (
        "SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 160), calls, round(total_exec_time::numeric / 1000, 2),"
        " rows, shared_blks_hit, shared_blks_read, round(wal_bytes / 1048576.0, 1) FROM pg_stat_statements"
        " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND query NOT LIKE '%%pg_stat_statements_reset%%'"
        " ORDER BY total_exec_time DESC LIMIT %s"
    )
    keys = ["query", "calls", "seconds", "rows", "blks_hit", "blks_read", "wal_mib"]
    with _connect(db_uri) as c:
        top_rows = [
            {k: (float(v) if k in ("seconds", "wal_mib") else v) for k, v in zip(keys, r, strict=True)}
            for r in c.execute(sql, (top,)).fetchall()
        ]
        total = c.execute(
            "SELECT coalesce(sum(total_exec_time), 0) / 1000 FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND query NOT LIKE '%pg_stat_statements_reset%'"
        ).fetchone()[0]
    return top_rows, round(float(total), 2)


def _check(db_uri: str) -> list[Any]:
    with _connect(db_uri) as c:
        cnt, total = c.execute("SELECT count(*), sum(amount) FROM t").fetchone()
    return [int(cnt), float(total)]


class _PostgresMerge:
    """S into a staging table by COPY (+ ANALYZE), then PostgreSQL's own MERGE."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any) -> None:
        import pyarrow.parquet as pq

        s = pq.read_table(paths["S"])
        self.columns = s.column_names
        self.csv = os.path.join(args.scratch, "S.csv")
        with open(self.csv, "wb") as f:  # the source in its natural form for COPY: a CSV file (untimed)
            f.write(_csv(s))

    def run(self, db_uri: str) -> dict[str, Any]:
        def chunks() -> Any:
            with open(self.csv, "rb") as f:
                while block := f.read(1 << 20):
                    yield block

        with _connect(db_uri) as c:
            t0 = time.perf_counter()
            c.execute(TABLE_SQL.format("s", ", op VARCHAR(1)"))
            _copy(c, "s", self.columns, chunks())
            t1 = time.perf_counter()
            c.execute("ANALYZE s")
            t2 = time.perf_counter()
            n = c.execute(PG_MERGE_SQL).rowcount
            t3 = time.perf_counter()
        return {
            "seconds": t3 - t2,
            "load_s_seconds": t2 - t0,
            "copy_seconds": t1 - t0,
            "analyze_seconds": t2 - t1,
            "total_seconds": t3 - t0,
            "row_count": n,
        }


class _PhaseTimer:
    """Driver-side wall time in named calls (wrapped for one statement, restored after)."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.saved: list[tuple[Any, str, Any]] = []

    def wrap(self, obj: Any, attr: str, name: str) -> None:
        fn = getattr(obj, attr, None)
        if fn is None:  # best effort: the engine and the connector change
            return

        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.times[name] = round(self.times.get(name, 0.0) + time.perf_counter() - t0, 3)

        self.saved.append((obj, attr, fn))
        setattr(obj, attr, timed)

    def restore(self) -> None:
        for obj, attr, fn in reversed(self.saved):
            setattr(obj, attr, fn)
        self.saved.clear()


class _MergekitSqldb:
    """mergekit's MERGE into the PostgreSQL table through the sqldb connector; S a registered DataFrame."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any) -> None:
        self.paths, self.spark = paths, spark

    def run(self, db_uri: str) -> dict[str, Any]:
        import mergekit.execution.dml.run as statement
        import mergekit.execution.dml.target as target
        from mergekit import Engine

        engine = Engine(spark=self.spark, catalogs={"pg": {"connector": "sqldb", "uri": db_uri}})
        timer = _PhaseTimer()
        try:
            engine.register_dataframe("s", self.spark.read.parquet(self.paths["S"]))
            md = engine.catalog("pg").get_metadata()
            for attr in ("begin_merge", "finish_merge", "abort_merge"):
                timer.wrap(md, attr, attr)
            for attr in ("run_merge_pipeline", "run_lookup_merge", "source_key_values"):
                timer.wrap(statement, attr, attr)
            timer.wrap(target, "scan_table", "scan_table")
            t0 = time.perf_counter()
            res = engine.execute(MK_MERGE_SQL)
            elapsed = time.perf_counter() - t0
        finally:
            timer.restore()
            engine.close()
        metrics = {k: v for k, v in (res.metrics or {}).items() if k not in ("writer_pids",)}
        return {"seconds": elapsed, "row_count": res.row_count, "phases": timer.times, "metrics": metrics}


def _upsert_partition(uri: str, batch_rows: int) -> Any:
    """The function a Spark user hands ``foreachPartition``: a connection per partition, per ``batch_rows`` rows a
    COPY of the U/I rows into a temporary table + ``INSERT ... ON CONFLICT DO UPDATE`` and a ``DELETE`` of the D
    ids; one commit at the end of the partition."""

    def upsert(rows: Any) -> None:
        import psycopg

        with psycopg.connect(uri) as conn:  # commits when the block ends without an error
            conn.execute(TABLE_SQL.format("s_batch", "").replace("CREATE TABLE", "CREATE TEMP TABLE"))
            batch: list[tuple] = []
            deletes: list[int] = []

            def flush() -> None:
                if batch:
                    with conn.cursor().copy(f"COPY s_batch ({COLS}) FROM STDIN") as cp:
                        for r in batch:
                            cp.write_row(r)
                    conn.execute(UPSERT_SQL)
                    conn.execute("TRUNCATE s_batch")
                if deletes:
                    conn.execute("DELETE FROM t WHERE id = ANY(%s::bigint[])", (deletes,))
                batch.clear()
                deletes.clear()

            for r in rows:
                if r.op == "D":
                    deletes.append(r.id)
                else:
                    batch.append((r.id, r.grp, r.name, r.amount, r.updated))
                if len(batch) + len(deletes) >= batch_rows:
                    flush()
            flush()

    return upsert


class _PySparkUpsert:
    """``spark.read.parquet(S).repartition(N).foreachPartition(upsert)``."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any) -> None:
        self.paths, self.spark, self.args = paths, spark, args
        self.partitions = args.upsert_partitions or spark.sparkContext.defaultParallelism

    def run(self, db_uri: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        df = self.spark.read.parquet(self.paths["S"])
        df.repartition(self.partitions).foreachPartition(_upsert_partition(db_uri, self.args.batch_rows))
        return {"seconds": time.perf_counter() - t0, "partitions": self.partitions}


_RUNNERS = {"postgres_merge": _PostgresMerge, "mergekit_sqldb": _MergekitSqldb, "pyspark_upsert": _PySparkUpsert}


def worker(args: argparse.Namespace) -> None:
    """``--role worker``: one cold and ``--warm`` warm runs of ``--system``, each on a fresh copy of the database;
    prints ``RESULT <json>``."""
    paths = json.loads(args.paths)
    memory = _Memory()
    event_dir = os.path.join(args.scratch, "events") if args.system in SPARK_SYSTEMS else None
    spark = _start_spark(args, memory, event_dir) if event_dir else None
    memory.start()
    runner = _RUNNERS[args.system](args, paths, spark)
    runs = []
    for k in range(1 + args.warm):
        kind = "cold" if k == 0 else "warm"
        db_uri = _restore(args.uri, f"run_{args.system}_{k}")
        load, started = _loadavg(), _now()
        print(f"[{args.system}] {kind} run {k} starts, load average {load}", file=sys.stderr, flush=True)
        if spark is not None:  # names the run's Spark jobs in the event log
            spark.sparkContext.setJobDescription(f"{kind} run {k}")
        pg0, me0 = _cpu_seconds(args.pg_pid), _cpu_seconds(os.getpid())
        res = runner.run(db_uri)
        res["pg_cpu_seconds"] = round(_cpu_seconds(args.pg_pid) - pg0, 2)
        res["client_cpu_seconds"] = round(_cpu_seconds(os.getpid()) - me0, 2)
        res.update(kind=kind, loadavg_start=load, loadavg_end=_loadavg(), started=started)
        res["pg_statements"], res["pg_exec_seconds"] = _pg_statements(db_uri)
        res["check"] = _check(db_uri)
        print(f"[{args.system}] {kind} run {k}: {res['seconds']:.2f}s", file=sys.stderr, flush=True)
        runs.append(res)
        with _connect(args.uri + "/postgres") as c:
            c.execute(f"DROP DATABASE run_{args.system}_{k} WITH (FORCE)")
    out = {"runs": runs, "memory": memory.stop()}
    if spark is not None:
        spark.stop()
        stages = _stage_times(event_dir)
        for k, run in enumerate(runs):  # the run's Spark stages, longest first
            mine = [st for st in stages if st["run"] == f"{run['kind']} run {k}"]
            run["spark_stages"] = sorted(mine, key=lambda st: -st["wall_s"])
    print("RESULT " + json.dumps(out, default=str), flush=True)


# ---- driver side --------------------------------------------------------------------------------------------


def _spawn(args: argparse.Namespace, system: str, paths: dict[str, str], uri: str, pg_pid: int) -> dict[str, Any]:
    """Run one system's worker (its progress lines go to stderr); its ``RESULT``, or RuntimeError."""
    scratch = os.path.join(os.path.dirname(paths["S"]), f"scratch-sqldb-{system}")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    cmd = [sys.executable, "-m", "bench.sqldb", "--role", "worker", "--system", system, "--uri", uri]
    cmd += ["--pg-pid", str(pg_pid), "--paths", json.dumps(paths), "--scratch", scratch, "--warm", str(args.warm)]
    cmd += ["--upsert-partitions", str(args.upsert_partitions), "--batch-rows", str(args.batch_rows)]
    for kv in args.conf:
        cmd += ["--conf", kv]
    # PySpark's Python workers import bench.sqldb (the foreachPartition function) from the project folder
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    try:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{system} worker failed (exit {proc.returncode}); its stderr is above")


def _check_runs(report: dict[str, Any], system: str, entry: dict[str, Any], problems: list[str]) -> None:
    exp, n_s = report["expected"], report["settings"]["rows"]
    for i, run in enumerate(entry["runs"]):
        cnt, total = run["check"]
        run["check_ok"] = cnt == exp["rows"] and abs(total - exp["sum_amount"]) <= RELTOL * max(1.0, abs(total))
        if not run["check_ok"]:
            problems.append(
                f"{system} run {i}: {cnt} rows, sum(amount) {total!r}; expected {exp['rows']}, {exp['sum_amount']!r}"
            )
        if run.get("row_count") is not None and run["row_count"] != n_s:
            problems.append(f"{system} run {i}: the MERGE reported {run['row_count']} rows, expected {n_s}")


def _best(entry: dict[str, Any] | None, kind: str, key: str = "seconds") -> float | None:
    """The ``kind`` (cold: the one cold run; warm: the median of the warm runs) value of ``key``."""
    if not entry or not entry.get("runs"):
        return None
    vals = sorted(r[key] for r in entry["runs"] if r["kind"] == kind and r.get(key) is not None)
    return statistics.median(vals) if vals else None


def _lines(report: dict[str, Any]) -> list[str]:
    """The machine-readable ``seconds`` / ``rows_per_s`` / ``ratio`` lines."""
    s = report["settings"]
    size = f"{label(s['target_rows'])}_{label(s['rows'])}"
    systems = report["systems"]
    out = []
    for kind in ("cold", "warm"):
        suffix = "" if kind == "cold" else "_warm"
        for name, entry in systems.items():
            sec = _best(entry, kind)
            if sec is not None:
                out.append(f"seconds sqldb_{name}_{size}{suffix} {sec:.2f}")
                out.append(f"rows_per_s sqldb_{name}_{size}{suffix} {s['rows'] / sec:.0f}")
            if name == "postgres_merge" and sec is not None:
                out.append(f"seconds sqldb_postgres_load_s_{size}{suffix} {_best(entry, kind, 'load_s_seconds'):.2f}")
                out.append(
                    f"seconds sqldb_postgres_copy_merge_{size}{suffix} {_best(entry, kind, 'total_seconds'):.2f}"
                )
        mk = _best(systems.get("mergekit_sqldb"), kind)
        for other, key in (("postgres_merge", "seconds"), ("pyspark_upsert", "seconds")):
            ref = _best(systems.get(other), kind, key)
            if mk is not None and ref:
                out.append(f"ratio mergekit_sqldb_vs_{other}_{size}{suffix} {mk / ref:.2f}")
        ref = _best(systems.get("postgres_merge"), kind, "total_seconds")
        if mk is not None and ref:
            out.append(f"ratio mergekit_sqldb_vs_postgres_copy_merge_{size}{suffix} {mk / ref:.2f}")
    return out


def _table(report: dict[str, Any]) -> list[str]:
    n_s = report["settings"]["rows"]
    rows = [
        "| system | run | MERGE s | rows/s | load S s (COPY + ANALYZE) | COPY + MERGE s | PostgreSQL CPU s | client "
        "CPU s | load average at start | result |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in report["systems"].items():
        if not entry.get("runs"):
            rows.append(f"| {TITLES[name]} | failed | | | | | | | {entry.get('loadavg_start')} | |")
        for r in entry.get("runs", []):
            load_s = total = ""
            if name == "postgres_merge":
                load_s, total = f"{r['load_s_seconds']:.2f}", f"{r['total_seconds']:.2f}"
            result = "ok" if r.get("check_ok") else f"WRONG {r['check']}"
            rows.append(
                f"| {TITLES[name]} | {r['kind']} | {r['seconds']:.2f} | {n_s / r['seconds']:.0f} | {load_s} | {total} "
                f"| {r['pg_cpu_seconds']:.1f} | {r['client_cpu_seconds']:.1f} | {r['loadavg_start']} | {result} |"
            )
    return rows


def _details(report: dict[str, Any]) -> list[str]:
    """Per run: mergekit's phases and, for every system, where PostgreSQL spent its time."""
    out = []
    for name, entry in report["systems"].items():
        mem = entry.get("memory") or {}
        keys = ("python_driver_mib", "jvm_mib", "python_workers_mib", "all_mib")
        if mem:
            out.append(
                f"- **{name}**: peak RSS MiB, Python driver / JVM / Python workers / all: "
                + " / ".join(f"{mem.get(k, 0):.0f}" for k in keys)
            )
        for r in entry.get("runs", []):
            extra = ""
            if r.get("phases"):
                extra = "; driver-side phases (s): " + ", ".join(f"{k} {v:.2f}" for k, v in r["phases"].items())
                extra += f"; strategy {r.get('metrics', {}).get('strategy')}"
                extra += f"; target scans {json.dumps(r.get('metrics', {}).get('scans'), default=str)[:400]}"
            if r.get("partitions"):
                extra = f"; {r['partitions']} partitions"
            pg = f"all statements {r['pg_exec_seconds']:.2f} s" if "pg_exec_seconds" in r else "top statements"
            out.append(f"- **{name}, {r['kind']}** ({r['seconds']:.2f} s{extra}). PostgreSQL ({pg}):")
            stages = r.get("spark_stages") or []
            if stages:
                top = ", ".join(f"{st['name'].replace(ROOT + '/', '')[:60]} {st['wall_s']:.1f}" for st in stages[:4])
                out.append(f"  - Spark: {len(stages)} stages, wall {sum(st['wall_s'] for st in stages):.1f} s; {top}")
            for st in r.get("pg_statements", [])[:5]:
                out.append(
                    f"  - {st['seconds']:.2f} s, {st['calls']} calls, {st['rows']} rows, WAL {st['wal_mib']} MiB, "
                    f"blocks hit/read {st['blks_hit']}/{st['blks_read']}: `{st['query']}`"
                )
    return out


def _doc_section(report: dict[str, Any]) -> list[str]:
    m, s, load = report["machine"], report["settings"], report.get("load", {})
    how = f"cached, loaded {load.get('loaded_at')}" if load.get("cached") else "loaded in this run"
    return [
        DOC_BEGIN,
        "<!-- Written by `python -m bench.sqldb --write-doc`: edits between these markers are overwritten. -->",
        "",
        f"Command: `{report['command']}` ({report['started']} to {report['finished']}, "
        f"{report['wall_seconds'] / 60:.0f} min, the load of T and the checks included).",
        "",
        f"Machine: {m.get('cpu', '?')}, {m.get('cores')} cores, {m.get('memory_gib')} GiB; Python {m.get('python')}, "
        f"{m.get('java')}, PySpark {m.get('pyspark')}, pyarrow {m.get('pyarrow')}, psycopg {m.get('psycopg')}, "
        f"{report['postgres']}. Load average (1, 5, 15 min) at start {report['loadavg_start']}, at end "
        f"{report['loadavg_end']}. Runs per system: 1 cold + {s['warm']} warm.",
        "",
        f"PostgreSQL settings: {', '.join(f'`{k}={v}`' for k, v in PG_SETTINGS.items())}; everything else initdb's "
        f"defaults (fsync, synchronous_commit, full_page_writes and autovacuum on). T: {load.get('rows')} rows, "
        f"table {load.get('table_mib')} MiB + key index {load.get('index_mib')} MiB ({how}: COPY "
        f"{load.get('copy_seconds')} s, primary key {load.get('primary_key_seconds')} s, VACUUM ANALYZE "
        f"{load.get('vacuum_analyze_seconds')} s).",
        "",
        *_table(report),
        "",
        f"Expected result (pyarrow from T and S): {report['expected']['rows']} rows, sum(amount) "
        f"{report['expected']['sum_amount']:.2f}; 'ok' = row count and sum(amount) of t after the run match.",
        "",
        *_details(report),
        "",
        "```",
        *_lines(report),
        "```",
        DOC_END,
    ]


def write_doc(report: dict[str, Any], path: str) -> None:
    """Replace the text between the markers (or add a section with them at the end)."""
    replace_section(path, DOC_BEGIN, DOC_END, "\n".join(_doc_section(report)), heading="## SQL databases (sqldb)")


def print_report(report: dict[str, Any]) -> None:
    for line in _doc_section(report)[2:-1]:
        if not line.startswith("```"):
            print(line)
    for p in report["problems"]:
        print(f"PROBLEM {p}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target-rows", default="10M", help="rows of T (bench/workload.py)")
    p.add_argument("--rows", default="1M", help="rows of S")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma separated, from: " + ", ".join(SYSTEMS))
    p.add_argument("--warm", type=int, default=1, help="warm runs per worker after its cold run (1)")
    p.add_argument("--upsert-partitions", type=int, default=0, help="pyspark_upsert: partitions (0: parallelism)")
    p.add_argument("--batch-rows", type=int, default=50_000, help="pyspark_upsert: rows per COPY + upsert")
    harness.add_run_options(p, reload="initdb and load T", figures="sqldb")
    p.add_argument("--system", default="", help=argparse.SUPPRESS)
    p.add_argument("--uri", default="", help=argparse.SUPPRESS)
    p.add_argument("--pg-pid", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--paths", default="{}", help=argparse.SUPPRESS)
    p.add_argument("--scratch", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role == "worker":
        return worker(args)
    if args.from_json:
        return harness.republish(args, write_doc, print_report)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if set(systems) - set(SYSTEMS):
        p.error(f"unknown systems; choose from {SYSTEMS}")
    n_t, n_s = _size(args.target_rows), _size(args.rows)
    machine = _machine()
    try:
        from importlib.metadata import version

        machine["psycopg"] = version("psycopg")
    except Exception:
        pass
    settings = {
        "target_rows": n_t,
        "rows": n_s,
        "warm": args.warm,
        "seed": args.seed,
        "conf": args.conf,
        "upsert_partitions": args.upsert_partitions,
        "batch_rows": args.batch_rows,
        "pg_settings": PG_SETTINGS,
        "systems": systems,
    }
    report = {**harness.start_report("bench.sqldb", settings, machine), "systems": {}}
    print(f"[sqldb] load average at start: {report['loadavg_start']}", flush=True)
    wall0 = time.perf_counter()
    paths = generate(args.data, n_t, n_s, args.seed)
    report["expected"] = expected_result(paths)
    root = os.path.join(paths["root"], "loaded-postgres")
    t0 = time.perf_counter()
    server, load = _ensure_base(root, paths["T"], n_t, args.seed, args.reload)
    report["postgres"], report["load"] = server.version(), load
    problems: list[str] = []
    print(
        f"[sqldb] {report['postgres']} on {server.uri}, T ready in {time.perf_counter() - t0:.1f}s: {load}", flush=True
    )
    try:
        _drop_run_databases(server.uri)
        for system in systems:
            entry: dict[str, Any] = {"loadavg_start": _loadavg(), "started": _now()}
            report["systems"][system] = entry
            print(f"[sqldb] {system}: worker starts (load average {entry['loadavg_start']})", flush=True)
            t0 = time.perf_counter()
            try:
                res = _spawn(args, system, paths, server.uri, server.pid())
            except RuntimeError as e:
                problems.append(str(e))
                print(f"[sqldb] {system}: FAILED: {e}", flush=True)
                continue
            entry.update(res, worker_seconds=round(time.perf_counter() - t0, 1), loadavg_end=_loadavg())
            _check_runs(report, system, entry, problems)
            times = ", ".join(f"{r['kind']} {r['seconds']:.2f}s" for r in entry["runs"])
            print(f"[sqldb] {system}: {times} (worker {entry['worker_seconds']:.0f}s)", flush=True)
        _drop_run_databases(server.uri)
    finally:
        server.stop()
    report.update(loadavg_end=_loadavg(), finished=_now(), wall_seconds=round(time.perf_counter() - wall0, 1))
    report["problems"] = problems
    publish(report, args, write_doc, print_report, problems)


if __name__ == "__main__":
    main()
