"""Streaming jobs (``CREATE STREAMING JOB``): one MERGE or INSERT per micro-batch, exactly once.

A job is stored as a folder under the engine's ``streams_dir``: ``job.json`` (its name, statement and duplicate
policy) and ``checkpoint/`` (Spark's offsets and commit logs). ``RUN STREAMING JOB`` processes every commit
available now and stops (``Trigger.AvailableNow``); ``START STREAMING JOB`` keeps running until ``STOP``. Each
micro-batch, on the driver:

1. skip it if the target already holds its batch id (``get_job_batch``): Spark replays a batch whose target
   commit happened but whose own checkpoint commit did not (a crash in between);
2. compute the batch's source rows (``continuous.ContinuousQuery.emit``: deterministic for the batch's
   offsets, so a replay sees the same rows); nothing emitted: nothing to do;
3. apply the duplicate policy to the source keys the ON condition equates (MERGE only): ``error`` (the default)
   fails the batch naming a duplicated key; ``last`` keeps the last row per key by the stream's monotonic column
   (when the source has it), then by arrival;
4. run the statement through the ordinary MERGE/INSERT pipeline and merge SPI, its ``ConnectorSession``
   carrying the ``JobBatch`` the connector commits with the rows (``mergekit.spi._jobs``).

A batch that fails stops the job with its error (``StreamHandle.exception``); nothing of that batch is
committed, and the next run starts again from it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError
from mergekit.result import Result
from mergekit.spi import JOB_BATCH_PROPERTY, JobBatch

from .context import StatementContext
from .continuous import ContinuousQuery, StreamHandle, batch_ranges, start_commits_query

__all__ = ["JobStore", "job_batch_runner", "FAULT_AFTER_COMMIT"]

#: Test hook: the process exits right after the target committed this batch id (before Spark's checkpoint).
FAULT_AFTER_COMMIT = "MERGEKIT_FAULT_EXIT_AFTER_JOB_COMMIT"


class JobStore:
    """The jobs of an engine, one folder each under ``root``."""

    def __init__(self, root: str | None) -> None:
        self.root = Path(root) if root is not None else None

    def _dir(self, name: str) -> Path:
        if self.root is None:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                "Streaming jobs need a directory for their state: Engine(streams_dir=...) (Engine.local() uses "
                "<warehouse>/_streams)",
            )
        return self.root / name

    def checkpoint(self, name: str) -> str:
        return str(self._dir(name) / "checkpoint")

    def exists(self, name: str) -> bool:
        return (self._dir(name) / "job.json").exists()

    def save(self, job: msql.CreateStreamingJob) -> None:
        folder = self._dir(job.name)
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "name": job.name,
            # what the target records batch ids under: a job created again under the same name starts afresh
            "id": f"{job.name}-{uuid.uuid4().hex[:12]}",
            "statement": job.statement,
            "duplicates": job.duplicates,
            "compact_every": job.compact_every,
            "max_commits_per_batch": job.max_commits_per_batch,
        }
        tmp = folder / "job.json.tmp"
        tmp.write_text(json.dumps(data, indent=2))
        os.replace(tmp, folder / "job.json")

    def load(self, name: str) -> msql.CreateStreamingJob:
        path = self._dir(name) / "job.json"
        if not path.exists():
            raise MergekitError(ErrorCode.STREAMING_JOB_NOT_FOUND, f"Streaming job '{name}' does not exist")
        data = json.loads(path.read_text())
        options = (
            f" WITH (duplicates = '{data['duplicates']}', compact_every = {int(data['compact_every'])}, "
            f"max_commits_per_batch = {int(data.get('max_commits_per_batch', 0))})"
        )
        statement = msql.parse_statement(f"CREATE STREAMING JOB {data['name']}{options} AS {data['statement']}")
        assert isinstance(statement, msql.CreateStreamingJob)
        return statement

    def job_id(self, name: str) -> str:
        """The id a job's batches are committed under (its name and a suffix fixed when it was created)."""
        data = json.loads((self._dir(name) / "job.json").read_text())
        return str(data.get("id") or name)

    def drop(self, name: str) -> None:
        shutil.rmtree(self._dir(name))

    def names(self) -> list[str]:
        if self.root is None or not self.root.exists():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "job.json").exists())


def job_target(job: msql.CreateStreamingJob) -> msql.QualifiedName:
    body = job.body
    assert isinstance(body, msql.Merge | msql.Insert)
    return body.target


def check_job(ctx: StatementContext, job: msql.CreateStreamingJob) -> ContinuousQuery:
    """What ``CREATE STREAMING JOB`` checks before storing anything: the source is a streaming query a continuous
    run evaluates, and the target's connector commits a batch id with its rows."""
    prepared = ContinuousQuery(ctx, job.source)
    target = ctx.resolve(job_target(job))
    meta = target.connector.get_metadata()
    try:
        meta.get_job_batch(session=ctx.session(target.catalog), table_handle=target.handle, job=job.name)
    except MergekitError as exc:
        if exc.code is not ErrorCode.NOT_SUPPORTED:
            raise
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED,
            f"Table {target.full_name} cannot be the target of a streaming job: {exc.message}",
        ) from exc
    return prepared


def job_batch_runner(
    engine: Any, job: msql.CreateStreamingJob, job_id: str, prepared: ContinuousQuery, handle: StreamHandle
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function of a job (the steps in the module's docstring)."""
    body = job.body
    assert isinstance(body, msql.Merge | msql.Insert)
    keys: tuple[str, ...] = ()
    if isinstance(body, msql.Merge):
        keys = msql.merge_source_keys(body.on, (body.source.alias or msql.JOB_SOURCE).lower())
    stream = prepared.streams[0].table.metadata.stream
    order_column = stream.monotonic[0].name if stream is not None and stream.monotonic else None

    def run(df: DataFrame, batch_id: int) -> None:
        ranges = batch_ranges(df)
        if not ranges:
            return  # no commit arrived: nothing to run, nothing to record
        entry: dict[str, Any] = {"batch": batch_id, "commits": ranges, "started_at": time.time()}
        try:
            with engine._lock:
                target, last = engine._in_statement(lambda ctx: _last_batch(ctx, job, job_id))
                if last is not None and last >= batch_id:
                    entry["skipped"] = f"batch {batch_id} was committed already (last committed: {last})"
                    handle.progress.append(entry)
                    return
                source = engine._in_statement(lambda ctx: _source_rows(ctx, prepared, ranges))
                if source is None:
                    entry["rows"] = 0
                    handle.progress.append(entry)
                    return
                # cached: computed once for the MERGE's several reads, and with its true size for the join planning
                # (a checkpointed scan has no size estimate, so Spark would shuffle the whole target to join it)
                source = _apply_policy(source, job, keys, order_column, batch_id).persist()
                try:
                    entry["rows"] = source.count()
                    engine.register_dataframe(msql.JOB_SOURCE, source)
                    try:
                        result: Result = engine._run(
                            job.body, connector_properties={JOB_BATCH_PROPERTY: JobBatch(job_id, batch_id)}
                        )
                    finally:
                        engine.unregister_dataframe(msql.JOB_SOURCE)
                finally:
                    source.unpersist()
                entry["committed_at"] = time.time()  # when the batch's rows became visible
                entry["count"] = result.row_count
                entry["metrics"] = {
                    k: v for k, v in result.metrics.items() if k in ("per_case", "inserted", "updated", "deleted")
                }
                handle.progress.append(entry)
                if os.environ.get(FAULT_AFTER_COMMIT) == str(batch_id):
                    os._exit(17)  # a crash between the target's commit and Spark's checkpoint (tests)
                if job.compact_every and (batch_id + 1) % job.compact_every == 0:
                    entry["compacted"] = _compact(engine, target)
        except BaseException as exc:
            handle.failure.append(exc)
            raise

    return run


def _last_batch(ctx: StatementContext, job: msql.CreateStreamingJob, job_id: str) -> tuple[Any, int | None]:
    """The job's target (resolved now) and the last batch id it committed there."""
    target = ctx.resolve(job_target(job))
    meta = target.connector.get_metadata()
    return target, meta.get_job_batch(session=ctx.session(target.catalog), table_handle=target.handle, job=job_id)


def _compact(engine: Any, target: Any) -> str:
    """The target's ``compact`` procedure, after the batch committed (its failure, e.g. a concurrent writer's
    conflict, is reported in the batch's progress and does not stop the job: the batch is committed already)."""
    if "compact" not in target.connector.get_procedures():
        return "no compact procedure"
    name = target.name
    call = f"CALL {target.catalog}.system.compact(table => '{name.schema}.{name.table}')"
    try:
        engine._run(msql.parse_statement(call))
    except MergekitError as exc:
        return f"failed: {exc}"
    return "compacted"


def _source_rows(ctx: StatementContext, prepared: ContinuousQuery, ranges: dict[int, tuple[int, int]]) -> Any:
    df = prepared.emit(ctx, ranges)
    if df is None:
        return None
    return df.localCheckpoint(eager=True)  # computed now: the statement's views are dropped when it ends


def _apply_policy(
    source: DataFrame, job: msql.CreateStreamingJob, keys: tuple[str, ...], order_column: str | None, batch_id: int
) -> DataFrame:
    if not keys:
        return source
    present = {c.lower(): c for c in source.columns}
    missing = [k for k in keys if k not in present]
    if missing:
        return source  # the ON condition computes its keys: the MERGE's own duplicate-match check applies
    cols = [present[k] for k in keys]
    if job.duplicates == "error":
        dup = source.groupBy(*cols).count().where("count > 1").limit(1).collect()
        if dup:
            shown = ", ".join(f"{c}={dup[0][c]!r}" for c in cols)
            raise MergekitError(
                ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES,
                f"Streaming job '{job.name}', batch {batch_id}: {dup[0]['count']} source rows have the key "
                f"({shown}); the job's duplicate policy is 'error' (CREATE STREAMING JOB ... WITH (duplicates = "
                "'last') keeps the last one)",
            )
        return source
    arrival = source.withColumn("mk_arrival", F.monotonically_increasing_id())
    order = [F.col("mk_arrival").desc()]
    if order_column is not None and order_column in present:
        order.insert(0, F.col(present[order_column]).desc_nulls_last())
    ranked = arrival.withColumn("mk_rank", F.row_number().over(Window.partitionBy(*cols).orderBy(*order)))
    return ranked.where("mk_rank = 1").drop("mk_rank", "mk_arrival")


def start_job(engine: Any, store: JobStore, name: str, *, trigger: str | None) -> StreamHandle:
    """Start job ``name``'s streaming query (``trigger`` None: everything available now, then stop)."""
    job = store.load(name)
    prepared = engine._in_statement(lambda ctx: check_job(ctx, job))
    handle = StreamHandle(name=name, query=None)
    runner = job_batch_runner(engine, job, store.job_id(name), prepared, handle)
    handle.query = start_commits_query(
        engine.spark,
        prepared.payload(engine._catalogs),
        runner,
        checkpoint=store.checkpoint(name),
        trigger=trigger,
        name=f"mk_job_{name}",
        max_commits=job.max_commits_per_batch,
    )
    return handle


def progress_table(progress: list[dict[str, Any]]) -> pa.Table:
    """One row per micro-batch: its id, the source rows, the statement's row count, whether it was skipped."""
    return pa.table(
        {
            "batch": pa.array([p["batch"] for p in progress], pa.int64()),
            "source_rows": pa.array([p.get("rows") for p in progress], pa.int64()),
            "count": pa.array([p.get("count") for p in progress], pa.int64()),
            "skipped": pa.array([p.get("skipped") for p in progress], pa.string()),
        }
    )
