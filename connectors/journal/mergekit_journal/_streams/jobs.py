"""Streaming jobs' exactly-once commits (``mergekit.spi._jobs``): a job's batch id is recorded in
``mk_job_batches`` inside the catalog transaction that commits the batch's rows, so a batch Spark replays after a
crash is recognised and skipped."""

from __future__ import annotations

from typing import Any

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import JOB_BATCH_PROPERTY, ConnectorSession, ConnectorTableHandle, JobBatch

from .._catalog import Cursor
from .._snapshots import SnapshotMetadata

__all__ = ["JobCommitMetadata", "job_batch_of", "record_job_batch"]


def job_batch_of(session: ConnectorSession) -> tuple[str, int] | None:
    """The ``(job, batch_id)`` of the statement's session, when it runs a job's micro-batch."""
    value: Any = session.properties.get(JOB_BATCH_PROPERTY)
    if value is None:
        return None
    if not isinstance(value, JobBatch):
        raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"{JOB_BATCH_PROPERTY} is not a JobBatch: {value!r}")
    return (value.job, value.batch_id)


def record_job_batch(cur: Cursor, table_id: int, job_batch: tuple[str, int], table: str) -> None:
    """Inside a commit's write transaction (the table locked): record the batch, or fail when the job already
    committed this batch or a later one (two runners of one job) and nothing is committed."""
    job, batch_id = job_batch
    rows = cur.execute("SELECT batch_id FROM mk_job_batches WHERE table_id = ? AND job = ?", (table_id, job))
    if rows and int(rows[0][0]) >= batch_id:
        raise MergekitError(
            ErrorCode.TRANSACTION_CONFLICT,
            f"Streaming job '{job}' already committed batch {int(rows[0][0])} into {table}: batch {batch_id} "
            "was run twice (is another runner of this job active?)",
        )
    if rows:
        cur.execute("UPDATE mk_job_batches SET batch_id = ? WHERE table_id = ? AND job = ?", (batch_id, table_id, job))
    else:
        cur.execute("INSERT INTO mk_job_batches (table_id, job, batch_id) VALUES (?, ?, ?)", (table_id, job, batch_id))


class JobCommitMetadata(SnapshotMetadata):
    """``get_job_batch`` (part of ``JournalMetadata``)."""

    def get_job_batch(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, job: str) -> int | None:
        """The highest batch id ``job`` committed into the table (the latest state, not the handle's snapshot)."""
        h = self._handle(table_handle)
        with self.catalog.read() as cur:
            rows = cur.execute("SELECT batch_id FROM mk_job_batches WHERE table_id = ? AND job = ?", (h.table_id, job))
        return int(rows[0][0]) if rows else None
