"""Continuous runs and streaming jobs of one engine (docs/streaming.md): :class:`StreamingService`.

``Engine.stream(sql)`` starts a continuous ``SELECT STREAM`` (:mod:`.continuous`: Spark Structured Streaming drives
micro-batches over the streams' commits, each evaluated as a batch query over a slice of the log); the streaming
job statements (``CREATE | RUN | START | STOP | DROP STREAMING JOB``, ``SHOW STREAMING JOBS``) manage jobs
(:mod:`.jobs`). The service holds what they share (the jobs' folder, the jobs and runs started here) and runs its
statements through the engine's :class:`~mergekit.execution.runner.StatementRunner`.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError
from mergekit.result import Result

from .continuous import ContinuousQuery, StreamHandle, batch_ranges, start_commits_query
from .jobs import JobStore, check_job, progress_table, start_job

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from mergekit.execution.runner import StatementRunner

__all__ = ["StreamingService", "JOB_STATEMENTS"]

#: The statements the service runs (``StreamingService.handlers``).
JOB_STATEMENTS: tuple[type, ...] = (msql.CreateStreamingJob, msql.JobAction, msql.ShowStreamingJobs)


class StreamingService:
    """The streaming jobs (folders under ``streams_dir``) and continuous runs of one engine."""

    def __init__(self, runner: StatementRunner, streams_dir: str | None) -> None:
        self.runner = runner
        self.streams_dir = streams_dir
        self.jobs = JobStore(streams_dir)
        self.running: dict[str, StreamHandle] = {}  # streaming jobs started here (START STREAMING JOB)
        self.streams: list[StreamHandle] = []  # continuous runs started here (Engine.stream)

    def handlers(self) -> dict[type, Any]:
        """The runner's handlers of the job statements."""
        return {kind: lambda runner, statement, options: run_job_statement(self, statement) for kind in JOB_STATEMENTS}

    def running_job(self, name: str) -> StreamHandle | None:
        return self.running.get(name.lower())

    def start(
        self,
        query: msql.Query,
        *,
        on_batch: Callable[[pa.Table], None] | None,
        trigger: str,
        name: str | None,
        max_commits: int | None = None,
    ) -> StreamHandle:
        """A continuous run of ``query`` (``Engine.stream``): each micro-batch's rows go to ``on_batch``, or are
        kept in the handle's ``emitted``; ``name`` keeps its checkpoint in the jobs' folder."""
        runner = self.runner
        prepared: ContinuousQuery = runner.in_statement(lambda ctx: ContinuousQuery(ctx, query))
        if name is not None:
            checkpoint = self.jobs.checkpoint(f"query_{name}")
            temporary = None
        else:
            temporary = tempfile.mkdtemp(prefix="mergekit-stream-")
            checkpoint = temporary
        handle = StreamHandle(name=name or f"stream_{uuid.uuid4().hex[:8]}", query=None)

        def batch(df: DataFrame, batch_id: int) -> None:
            ranges = batch_ranges(df)
            if not ranges:
                return  # no commit arrived (Spark's first batch of a new query may be empty)
            try:
                rows = runner.in_statement(lambda ctx: _collect(prepared.emit(ctx, ranges)))
            except BaseException as exc:
                handle.failure.append(exc)
                raise
            handle.progress.append(
                {"batch": batch_id, "commits": ranges, "rows": rows.num_rows if rows is not None else 0}
            )
            if rows is None or rows.num_rows == 0:
                return
            if on_batch is not None:
                on_batch(rows)
            else:
                handle.emitted.append(rows)

        handle.query = start_commits_query(
            runner.spark,
            prepared.payload(runner.catalogs),
            batch,
            checkpoint=checkpoint,
            trigger=trigger,
            name=handle.name,
            max_commits=max_commits,
        )
        if temporary is not None:
            handle.cleanup = lambda: shutil.rmtree(temporary, ignore_errors=True)
        self.streams[:] = [h for h in self.streams if h.is_active] + [handle]  # close() stops it
        return handle

    def close(self) -> None:
        """Stop every job and continuous run started here."""
        for handle in [*self.running.values(), *self.streams]:
            handle.stop()
        self.running.clear()
        self.streams.clear()


def _job_state(service: StreamingService, name: str) -> tuple[str, str | None]:
    """``running`` (started here and running), ``failed`` (its last run stopped with an error: the error's
    ``[CODE] message``) or ``stopped``."""
    handle = service.running.get(name)
    if handle is not None:
        error = handle.exception  # (a batch that failed stops the query: failed even before it has stopped)
        if error is not None:
            return "failed", str(error)
        if handle.is_active:
            return "running", None
    recorded = service.jobs.failure(name)
    return ("failed", recorded) if recorded is not None else ("stopped", None)


def _collect(df: Any) -> pa.Table | None:
    return df.toArrow() if df is not None else None


def run_job_statement(
    service: StreamingService, statement: msql.CreateStreamingJob | msql.JobAction | msql.ShowStreamingJobs
) -> Result:
    store, runner = service.jobs, service.runner
    if isinstance(statement, msql.ShowStreamingJobs):
        names = store.names()
        states = [_job_state(service, n) for n in names]
        return Result(
            statement="SHOW STREAMING JOBS",
            table=pa.table(
                {
                    "Job": pa.array(names, pa.string()),
                    "State": pa.array([state for state, _ in states], pa.string()),
                    "Error": pa.array([error for _, error in states], pa.string()),
                }
            ),
        )
    if isinstance(statement, msql.CreateStreamingJob):
        if store.exists(statement.name):
            if statement.if_not_exists:
                return Result(statement="CREATE STREAMING JOB", message=f"Streaming job '{statement.name}' exists")
            raise MergekitError(
                ErrorCode.STREAMING_JOB_ALREADY_EXISTS, f"Streaming job '{statement.name}' already exists"
            )
        runner.in_statement(lambda ctx: check_job(ctx, statement))
        store.save(statement)
        return Result(statement="CREATE STREAMING JOB")
    name = statement.name
    if not store.exists(name):
        if statement.action == "drop" and statement.if_exists:
            return Result(statement="DROP STREAMING JOB")
        raise MergekitError(ErrorCode.STREAMING_JOB_NOT_FOUND, f"Streaming job '{name}' does not exist")
    running = service.running.get(name)
    if running is not None and not running.is_active:
        service.running.pop(name, None)
        running = None
    if statement.action in ("stop", "drop"):
        if running is not None:
            running.stop()
            service.running.pop(name, None)
        if statement.action == "drop":
            store.drop(name)
        else:
            store.clear_failure(name)  # a failed job, stopped: stopped (START or RUN retries the failed batch)
        return Result(statement=f"{statement.action.upper()} STREAMING JOB")
    if running is not None:
        raise MergekitError(ErrorCode.TRANSACTION_CONFLICT, f"Streaming job '{name}' is running already")
    if statement.action == "start":
        service.running[name] = start_job(runner, store, name, trigger="1 second")
        return Result(statement="START STREAMING JOB")
    handle = start_job(runner, store, name, trigger=None)  # RUN: everything available now, then stop
    try:
        handle.await_termination()
        if handle.exception is not None:
            raise handle.exception
    except MergekitError as exc:
        store.record_failure(name, str(exc))  # (a batch's failure is recorded already; the query's is not)
        raise
    done = [p for p in handle.progress if not p.get("skipped")]
    return Result(
        statement="RUN STREAMING JOB",
        row_count=sum(p.get("count") or 0 for p in done),
        table=progress_table(handle.progress),
        metrics={
            "batches": len(handle.progress),
            "skipped": len(handle.progress) - len(done),
            "progress": handle.progress,
        },
    )
