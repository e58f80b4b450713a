"""Streaming jobs (seed 001's continuous DML, made exactly once): a job's micro-batch commits with its data.

A *streaming job* (``CREATE STREAMING JOB j AS MERGE INTO t USING (SELECT STREAM ...) s ...`` or ``... AS INSERT
INTO t SELECT STREAM ...``) runs one ordinary MERGE or INSERT per micro-batch of its streaming query, through the
same merge SPI as any statement (``begin_merge``, page sinks, ``finish_merge``). Spark's micro-batch engine
delivers a batch *at least* once: after a crash between the target's commit and Spark's own checkpoint it
replays the batch, with the same id and the same input. A job is exactly once because the target records the
batch id **in the same atomic commit as the batch's rows**, and the engine skips a batch whose id the target
already holds (Delta Lake's ``txnAppId`` / ``txnVersion``, made automatic).

The contract, for a connector that accepts jobs as targets:

* During a job's micro-batch, the engine puts a :class:`JobBatch` in the statement's
  ``ConnectorSession.properties`` under :data:`JOB_BATCH_PROPERTY`, for every SPI call of that statement
  (driver and executors). ``finish_merge`` must record ``(job, batch_id)`` for the table inside the same
  transaction that makes the rows visible, **also when there are no fragments** (a batch that changed nothing is
  still done: without a record it would run again after a crash, against a table other writers may have
  changed since). If the table already holds a batch id ``>= batch_id`` for ``job`` when the commit runs (two
  runners of one job), ``finish_merge`` raises ``TRANSACTION_CONFLICT`` and commits nothing.
* :meth:`JobMetadata.get_job_batch` returns the highest batch id recorded for ``job`` on the table.

A connector that does not implement :meth:`JobMetadata.get_job_batch` (the default raises ``NOT_SUPPORTED`` with
:data:`JOBS_MESSAGE`) cannot be a job's target: the engine refuses the job when it is created, before any batch
runs, rather than run it at least once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from mergekit.errors import ErrorCode, MergekitError

if TYPE_CHECKING:
    from ._model import ConnectorSession, ConnectorTableHandle

__all__ = ["JOB_BATCH_PROPERTY", "JOBS_MESSAGE", "JobBatch", "JobMetadata"]

#: The key of ``ConnectorSession.properties`` that holds the :class:`JobBatch` of a job's micro-batch.
JOB_BATCH_PROPERTY = "mergekit.job_batch"

#: The message of the ``NOT_SUPPORTED`` a connector without job support raises.
JOBS_MESSAGE = "This connector cannot commit a streaming job's batches exactly once"


@attrs.frozen
class JobBatch:
    """One micro-batch of a streaming job: ``job`` is the job's name (unique per engine state directory),
    ``batch_id`` Spark's micro-batch id, which increases by one per batch and repeats only on a replay."""

    job: str
    batch_id: int


class JobMetadata:
    """The job method of :class:`~mergekit.spi.ConnectorMetadata` (a base class of it)."""

    def get_job_batch(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        job: str,
    ) -> int | None:
        """The highest batch id of ``job`` committed into the table, or None when none was.

        Called on the driver before each micro-batch of a job (a batch whose id is not above it is skipped), and
        once when the job is created (to check the connector supports jobs). Reads the latest committed state,
        not the handle's snapshot. Default: ``NOT_SUPPORTED`` with :data:`JOBS_MESSAGE`."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, JOBS_MESSAGE)
