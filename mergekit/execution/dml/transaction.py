"""The connector's transaction around a statement's writes: ``abort_merge`` on any failure, the failure as a coded
error. Shared by the MERGE plan (:mod:`.run`) and the driver tier's writes (:mod:`.append`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mergekit.errors import MergekitError
from mergekit.execution.failures import translate_error
from mergekit.spi import ConnectorMergeTableHandle, ConnectorMetadata, ConnectorSession

__all__ = ["Replan", "aborted_on_failure"]


class Replan(Exception):
    """Raised inside the transaction when a plan made for the driver tier cannot run as planned (the connector's
    index went away after planning): the transaction is aborted and the statement planned again, by Spark."""


@contextmanager
def aborted_on_failure(
    metadata: ConnectorMetadata, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle
) -> Iterator[None]:
    """``abort_merge`` on any failure inside the block, and the failure as a coded error: nothing becomes visible."""
    try:
        yield
    except BaseException as exc:
        try:
            metadata.abort_merge(session=session, merge_handle=merge_handle)
        except Exception:  # report the original failure
            pass
        if isinstance(exc, Exception) and not isinstance(exc, MergekitError | Replan):
            raise translate_error(exc) from exc
        raise
