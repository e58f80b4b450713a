"""A statement's Spark jobs seen from the driver: a job group to cancel them and the progress of their stages.

The command line reaches Spark through here (and :mod:`mergekit.execution.session`). It imports this module
before Spark starts, so pyspark is imported for type checking only; the functions work on a running session.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JobProgress", "StageProgress", "cancel_statement_jobs", "job_group"]

_group_ids = itertools.count(1)


@contextmanager
def job_group(spark: SparkSession, description: str = "mergekit statement") -> Iterator[str]:
    """The Spark jobs this thread starts inside run in a new job group, whose id is yielded for
    :func:`cancel_statement_jobs` (their tasks are interrupted when it is cancelled)."""
    group = f"mergekit-{os.getpid()}-{next(_group_ids)}"
    sc = spark.sparkContext
    sc.setJobGroup(group, description, interruptOnCancel=True)
    try:
        yield group
    finally:
        try:
            sc._jsc.sc().clearJobGroup()
        except Exception:  # Spark is stopping
            pass


def cancel_statement_jobs(spark: SparkSession, group: str, reason: str = "cancelled by the user (Ctrl-C)") -> None:
    """Cancel the jobs of ``group`` and any it would still start, and the jobs other threads started; the Spark
    call the statement waits in then fails. May be called from any thread; does nothing once Spark is stopping."""
    sc = spark.sparkContext
    try:
        sc._jsc.sc().cancelJobGroupAndFutureJobs(group, reason)
        sc.cancelAllJobs()  # jobs started from other threads
    except Exception:  # Spark is stopping: nothing left to cancel
        pass


@attrs.frozen
class StageProgress:
    """The active stages of a session's jobs and their tasks; no stages between jobs (planning, a commit)."""

    completed: int = 0
    total: int = 0
    stages: tuple[int, ...] = ()


class JobProgress:
    """Reads the progress of a session's running jobs from Spark's status tracker (a progress bar polls it)."""

    def __init__(self, spark: SparkSession) -> None:
        self._tracker: Any = spark.sparkContext.statusTracker()

    def active(self) -> StageProgress:
        done = total = 0
        stages: list[int] = []
        for stage_id in sorted(self._tracker.getActiveStageIds()):
            info = self._tracker.getStageInfo(stage_id)
            if info is None:
                continue
            stages.append(stage_id)
            done += int(info.numCompletedTasks)
            total += int(info.numTasks)
        return StageProgress(completed=done, total=total, stages=tuple(stages))
