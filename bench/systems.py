"""The benchmark's systems: what each one runs, on what, and the SQL they share.

One runner class per system (``_RUNNERS``), used by the worker process (``bench.harness.worker``): ``prepare``
starts afresh (untimed: a new copy of the table T was loaded into, or an empty output directory), ``run`` times
one MERGE of S, ``check`` returns the result's row count and ``sum(amount)`` (the floor: what it wrote) and
``close`` releases what the runner holds. Also the Spark session every Spark system gets (``_session``:
``local[2]``, mergekit's defaults plus ``--conf``), the catalogs of the two mergekit systems (``_catalog``) and
the statements of the workload (``MERGE_SQL`` and the others).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from typing import Any

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
# The largest MERGE source the journal and merge-table systems read as Arrow (``register_arrow``: the driver tier);
# above it a DataFrame (the Spark tier). Where each is faster (2026-12-03, 2 cores): a 100k-row source into 1M rows
# 0.39-0.90 s from Arrow against 0.68 s from a DataFrame of the file; 1M rows into 10M 4.8-6.3 s against 2.55 s
# (bench.driver_lookup; ``make bench-quick``).
ARROW_SOURCE_MAX_ROWS = 100_000
READ_SQL = "SELECT count(*), sum(id), sum(grp), max(name), sum(amount), max(updated) FROM t"
COMPACT_SQL = "CALL lake.system.compact(table => 'default.t')"
# The WHEN clauses of the small-statement benches' upsert (bench.small_commits, bench.driver_lookup); ``{table}`` is
# the target's name as the statement writes it.
UPSERT_WHEN = (
    "WHEN MATCHED THEN UPDATE SET grp = s.grp, name = s.name, amount = {table}.amount + s.amount, updated = s.updated "
    "WHEN NOT MATCHED THEN INSERT (id, grp, name, amount, updated) VALUES (s.id, s.grp, s.name, s.amount, s.updated)"
)


def _session(event_log: str | None = None, extra: list[str] | None = None):
    """A local Spark session (``local[2]``, mergekit's defaults) with ``extra`` (``KEY=VALUE``) settings and, when
    ``event_log`` is given, an event log written there (``--profile``)."""
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
    """The ``lake`` catalog of a mergekit system: a journal, or a partitioned connector over a journal."""
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
    """Copy a warehouse: Parquet data files hard-linked, catalogs copied."""
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
        # a source of up to ARROW_SOURCE_MAX_ROWS rows (a CDC batch, an API write) is what such a caller has:
        # Arrow rows, read from the Parquet file inside the timed run as DuckDB reads it, which the driver tier
        # MERGEs; a larger one a DataFrame of the files, which Spark reads in parallel
        import pyarrow.dataset as ds

        self.arrow_source = ds.dataset(self.paths["S"]).count_rows() <= ARROW_SOURCE_MAX_ROWS
        if not self.arrow_source:
            self.engine.register_dataframe("s", self.spark.read.parquet(self.paths["S"]))

    def run(self, profile: bool) -> dict[str, Any]:
        import mergekit.execution.dml.run as engine_mod
        import mergekit.execution.dml.target as target_mod

        timer = _PhaseTimer()
        saved = {(engine_mod, "run_merge_pipeline"): engine_mod.run_merge_pipeline}
        saved[(target_mod, "scan_table")] = target_mod.scan_table
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
            timer.wrap(target_mod, "scan_table", "scan_table (driver: plan splits)")
        try:
            t0 = time.perf_counter()
            if self.arrow_source:
                import pyarrow.parquet as pq

                self.engine.register_arrow("s", pq.read_table(self.paths["S"]))
            res = self.engine.execute(MERGE_SQL)
            elapsed = time.perf_counter() - t0
        finally:
            for (module, name), fn in saved.items():
                setattr(module, name, fn)
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


def rewrite(t: Any, s: Any) -> Any:
    """The hand-written MERGE of the source ``s`` into ``t`` (DataFrames): ``T ⋉̸ S ∪ (T ⋈ S[op≠D] with new
    values) ∪ S ⋉̸ T``, what ``pyspark_rewrite`` writes and the streaming bench's ``foreachBatch`` job runs."""
    from pyspark.sql import functions as F

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
    return unchanged.unionByName(updated).unionByName(inserted)


class _PySparkRewrite:
    """T ⋉̸ S ∪ (T ⋈ S[op≠D] with the new values) ∪ S ⋉̸ T, written as a new Parquet data set."""

    def __init__(self, args: argparse.Namespace, paths: dict[str, str], spark: Any) -> None:
        self.paths, self.spark = paths, spark
        self.out_dir = os.path.join(args.scratch, "pyspark-out")

    def prepare(self) -> None:
        shutil.rmtree(self.out_dir, ignore_errors=True)

    def run(self, profile: bool) -> dict[str, Any]:

        t0 = time.perf_counter()
        t = self.spark.read.parquet(self.paths["T"])
        s = self.spark.read.parquet(self.paths["S"])
        rewrite(t, s).write.mode("overwrite").parquet(self.out_dir)
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
