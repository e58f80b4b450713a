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
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.dml.lookup import binary_collation
from mergekit.execution.failures import translate_error
from mergekit.execution.lazy_pyspark import F, T, sql
from mergekit.execution.session import conf_for_block
from mergekit.result import Result
from mergekit.spi import JOB_BATCH_PROPERTY, JobBatch

from .continuous import ContinuousQuery, StreamHandle, batch_ranges, start_commits_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

if TYPE_CHECKING:
    from mergekit.execution.runner import StatementRunner

__all__ = ["JobStore", "as_error", "job_batch_runner", "FAULT_AFTER_COMMIT"]

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

    def record_failure(self, name: str, error: str) -> None:
        """Remember the ``[CODE] message`` that stopped the job's last run (``SHOW STREAMING JOBS`` shows it, also
        to another engine or a later ``mergekit`` command); ``START``, ``RUN`` and ``STOP`` forget it."""
        folder = self._dir(name)
        if not (folder / "job.json").exists():  # dropped meanwhile
            return
        tmp = folder / "failure.json.tmp"
        tmp.write_text(json.dumps({"error": error, "at": time.time()}))
        os.replace(tmp, folder / "failure.json")

    def failure(self, name: str) -> str | None:
        path = self._dir(name) / "failure.json"
        try:
            return str(json.loads(path.read_text())["error"])
        except (OSError, ValueError, KeyError):
            return None

    def clear_failure(self, name: str) -> None:
        (self._dir(name) / "failure.json").unlink(missing_ok=True)

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
    runner: StatementRunner,
    job: msql.CreateStreamingJob,
    job_id: str,
    prepared: ContinuousQuery,
    handle: StreamHandle,
    on_failure: Callable[[BaseException], None] | None = None,
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function of a job (the steps in the module's docstring); ``on_failure`` is told the
    error that fails a batch (and so stops the job)."""
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
            with runner.lock:
                target, last = runner.in_statement(lambda ctx: _last_batch(ctx, job, job_id))
                if last is not None and last >= batch_id:
                    entry["skipped"] = f"batch {batch_id} was committed already (last committed: {last})"
                    handle.progress.append(entry)
                    return
                prepared_source = runner.in_statement(
                    lambda ctx: _source_rows(ctx, prepared, ranges, job, keys, order_column, batch_id)
                )
                if prepared_source is None:
                    entry["rows"] = 0
                    handle.progress.append(entry)
                    return
                source, entry["rows"] = prepared_source
                try:
                    runner.register_dataframe(msql.JOB_SOURCE, source)
                    try:
                        result: Result = runner.run(
                            job.body, connector_properties={JOB_BATCH_PROPERTY: JobBatch(job_id, batch_id)}
                        )
                    finally:
                        runner.unregister_dataframe(msql.JOB_SOURCE)
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
                    entry["compacted"] = _compact(runner, target)
        except BaseException as exc:
            handle.failure.append(exc)
            if on_failure is not None:
                on_failure(exc)
            raise

    return run


def _last_batch(ctx: StatementContext, job: msql.CreateStreamingJob, job_id: str) -> tuple[Any, int | None]:
    """The job's target (resolved now) and the last batch id it committed there."""
    target = ctx.resolve(job_target(job))
    meta = target.connector.get_metadata()
    return target, meta.get_job_batch(session=ctx.session(target.catalog), table_handle=target.handle, job=job_id)


def _compact(runner: StatementRunner, target: Any) -> str:
    """The target's ``compact`` procedure, after the batch committed (its failure, e.g. a concurrent writer's
    conflict, is reported in the batch's progress and does not stop the job: the batch is committed already)."""
    if "compact" not in target.connector.get_procedures():
        return "no compact procedure"
    name = target.name
    call = f"CALL {target.catalog}.system.compact(table => '{name.schema}.{name.table}')"
    try:
        runner.run(msql.parse_statement(call))
    except MergekitError as exc:
        return f"failed: {exc}"
    return "compacted"


def _source_rows(
    ctx: StatementContext,
    prepared: ContinuousQuery,
    ranges: dict[int, tuple[int, int]],
    job: msql.CreateStreamingJob,
    keys: tuple[str, ...],
    order_column: str | None,
    batch_id: int,
) -> tuple[DataFrame, int] | None:
    """The batch's source rows after the duplicate policy, cached, and how many there are; None when the batch
    emits nothing. One Spark job computes them while the statement's views exist, fills the cache (uncompressed)
    and counts them; the ``error`` policy then checks their keys from the cache (:func:`_has_duplicate_keys`).
    Cached, they are computed once for the MERGE's reads and Spark plans the join with their true size (a
    checkpointed scan has none, and Spark would shuffle the whole target to join it)."""
    df = prepared.emit(ctx, ranges)
    if df is None:
        return None
    columns = _key_columns(df, keys)
    policy = job.duplicates if columns else None
    if policy == "last":
        df = _keep_last(df, columns, order_column)
    # the batch's cache lives for one MERGE: building it matters, not its size
    with conf_for_block(ctx.spark, _CACHE_COMPRESSED, "false"):
        df = df.persist()
        try:
            rows = df.count()
            if policy == "error" and _has_duplicate_keys(df, columns, rows):
                _raise_duplicate(df, job, columns, batch_id)
        except BaseException:
            df.unpersist()
            raise
    return df, rows


#: Spark compresses cached columns by default: 0.4 s of a 1.1 s persist of 700k rows (uncompressed: 0.7 s).
_CACHE_COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"


#: Up to this many source rows, the ``error`` policy checks the keys on the driver (Arrow) instead of by a shuffle.
DRIVER_KEY_CHECK_MAX = 4_000_000


def _has_duplicate_keys(source: DataFrame, cols: list[str], rows: int) -> bool:
    """Whether two of the (cached) source's ``rows`` rows have the same key (NULL equal to NULL, as GROUP BY).
    A batch of up to ``DRIVER_KEY_CHECK_MAX`` rows whose key types compare in Arrow exactly as in Spark sends its
    keys to the driver (from the cache: no shuffle, about a tenth of a second for 500k keys); others group in Spark."""
    if rows <= 1:
        return False
    exact = (T.IntegralType, T.DateType, T.BooleanType, T.TimestampType, T.TimestampNTZType, T.StringType)
    types = {f.name: f.dataType for f in source.schema.fields}
    if rows <= DRIVER_KEY_CHECK_MAX and all(isinstance(types[c], exact) and binary_collation(types[c]) for c in cols):
        try:
            keys = source.select(*cols).toArrow()
        except Exception:  # e.g. beyond spark.driver.maxResultSize (long string keys): group them in Spark
            keys = None
        if keys is not None:
            return keys.group_by(cols, use_threads=False).aggregate([([], "count_all")]).num_rows < keys.num_rows
    return source.groupBy(*cols).count().where("count > 1").limit(1).count() > 0


def _key_columns(source: DataFrame, keys: tuple[str, ...]) -> list[str]:
    """The source's columns of the keys the ON condition equates; none when it computes a key (then the MERGE's
    own duplicate-match check applies)."""
    present = {c.lower(): c for c in source.columns}
    if not keys or any(k not in present for k in keys):
        return []
    return [present[k] for k in keys]


def _raise_duplicate(source: DataFrame, job: msql.CreateStreamingJob, cols: list[str], batch_id: int) -> None:
    dup = source.groupBy(*cols).count().where("count > 1").limit(1).collect()
    shown = ", ".join(f"{c}={dup[0][c]!r}" for c in cols)
    raise MergekitError(
        ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES,
        f"Streaming job '{job.name}', batch {batch_id}: {dup[0]['count']} source rows have the key "
        f"({shown}); the job's duplicate policy is 'error' (CREATE STREAMING JOB ... WITH (duplicates = "
        "'last') keeps the last one)",
    )


def _keep_last(source: DataFrame, cols: list[str], order_column: str | None) -> DataFrame:
    """The ``last`` policy: per key, the row with the greatest monotonic column value, then the last to arrive."""
    present = {c.lower(): c for c in source.columns}
    arrival = source.withColumn("mk_arrival", F.monotonically_increasing_id())
    order = [F.col("mk_arrival").desc()]
    if order_column is not None and order_column in present:
        order.insert(0, F.col(present[order_column]).desc_nulls_last())
    ranked = arrival.withColumn("mk_rank", F.row_number().over(sql.Window.partitionBy(*cols).orderBy(*order)))
    return ranked.where("mk_rank = 1").drop("mk_rank", "mk_arrival")


def start_job(runner: StatementRunner, store: JobStore, name: str, *, trigger: str | None) -> StreamHandle:
    """Start job ``name``'s streaming query (``trigger`` None: everything available now, then stop)."""
    job = store.load(name)
    prepared = runner.in_statement(lambda ctx: check_job(ctx, job))
    handle = StreamHandle(name=name, query=None)
    store.clear_failure(name)
    batch = job_batch_runner(
        runner, job, store.job_id(name), prepared, handle, lambda exc: store.record_failure(name, str(as_error(exc)))
    )
    handle.query = start_commits_query(
        runner.spark,
        prepared.payload(runner.catalogs),
        batch,
        checkpoint=store.checkpoint(name),
        trigger=trigger,
        name=f"mk_job_{name}",
        max_commits=job.max_commits_per_batch,
    )
    return handle


def progress_table(progress: list[dict[str, Any]]) -> pa.Table:
    """One row per micro-batch: its id, its source rows (NULL for a skipped batch: not read), the rows its
    statement changed (0 when none ran) and how many batches it skipped (1 for a replay of a committed batch,
    else 0; the reason is in ``metrics["progress"]``)."""
    return pa.table(
        {
            "batch": pa.array([p["batch"] for p in progress], pa.int64()),
            "source_rows": pa.array([None if p.get("skipped") else p.get("rows", 0) for p in progress], pa.int64()),
            "count": pa.array([p.get("count") or 0 for p in progress], pa.int64()),
            "skipped": pa.array([1 if p.get("skipped") else 0 for p in progress], pa.int64()),
        }
    )


def as_error(exc: BaseException) -> MergekitError:
    """What stopped a job, as the coded error a user sees."""
    return exc if isinstance(exc, MergekitError) else translate_error(exc)
