"""Streams (seed 001, Calcite's streaming SQL): append-only logs a connector stores, read by offset.

A *stream* is a catalog object like a table: ``CREATE STREAM orders (rowtime TIMESTAMP, productId INTEGER,
...)`` reaches :meth:`ConnectorMetadata.create_table` with :attr:`ConnectorTableMetadata.stream` set, and
``get_table_metadata`` returns it with ``stream`` set, which is how the engine tells streams from tables
(``SHOW STREAMS``, ``DESCRIBE``, the modality rules of ``SELECT STREAM``). Rows only ever arrive: ``INSERT`` goes
through the ordinary write path (``begin_merge`` / page sinks / ``finish_merge`` with INSERT rows only), and the
engine refuses UPDATE, DELETE, MERGE and TRUNCATE on a stream before any connector method runs.

One committed INSERT is one *commit* of the stream, numbered by a version that increases strictly with each
commit (a connector may skip versions, e.g. for DDL); the versions are the stream's offsets. The connector must:

* enforce monotonicity **at commit, atomically with it** (inside the same catalog transaction as the commit):
  for each :class:`MonotonicColumn`, every new value must be at least (at most, for a descending column) the
  stream's high-water mark so far minus :attr:`StreamDefinition.slack`; NULL is refused. Otherwise
  ``finish_merge`` raises ``CONSTRAINT_VIOLATION`` with :func:`monotonic_violation`'s message and commits
  nothing. Two concurrent inserters must never both commit rows out of order: the second to commit is checked
  against the first one's rows.
* return each commit's rows from ``get_stream_splits`` sorted (stably) by the first monotonic column (at write or
  at read time), and answer :meth:`StreamMetadata.get_stream_commits` and :meth:`StreamMetadata.get_stream_splits` for any
  range of versions it retains.

Both methods run on the driver. The engine's streaming source may call them from a Python process that Spark
starts for the source (not the engine's own process): a connector whose state lives in one process (memory)
refuses streams in ``create_table`` with :data:`STREAMS_MESSAGE`.

*Change streams.* A table (not a stream) whose ``get_table_metadata`` sets
:attr:`~mergekit.spi.ConnectorTableMetadata.change_stream` is also a stream of its change feed: ``SELECT STREAM
* FROM t`` reads it, relational queries read the table as always, and UPDATE, DELETE and MERGE stay allowed. The
engine gets the change feed's handle (``get_changes_handle(from_version=0)``) and calls both methods with it:
``get_stream_commits`` lists the table's commits that changed rows, ``get_stream_splits`` yields the change
feed's columns (the table's, then ``_change_type``, ``_commit_version``, ``_commit_timestamp``) for the rows the
connector puts in the stream (the journal: inserted rows and the new values of updated rows, Delta's
``insert`` and ``update_postimage``; never deleted rows), one commit after the other. The definition's
monotonic columns are change feed columns, ``_commit_version`` first.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mergekit.errors import ErrorCode, MergekitError

if TYPE_CHECKING:
    from ._model import ColumnHandle, ConnectorSession, ConnectorTableHandle
    from ._read import ConnectorSplit

__all__ = [
    "MonotonicColumn",
    "StreamDefinition",
    "StreamCommit",
    "StreamMetadata",
    "STREAMS_MESSAGE",
    "monotonic_violation",
]

# What a connector that cannot store streams raises from create_table (and the defaults below).
STREAMS_MESSAGE = "This connector does not support streams"


@attrs.frozen(kw_only=True)
class MonotonicColumn:
    """A column whose values never go back: ascending (the default) or ``descending``. A ``TIMESTAMP`` column
    named ``rowtime`` is monotonic ascending unless declared otherwise; any other column is monotonic only by
    ``MONOTONIC [ASCENDING | DESCENDING]`` in ``CREATE STREAM``."""

    name: str
    descending: bool = False


def _monotonic(values: Iterable[MonotonicColumn]) -> tuple[MonotonicColumn, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True)
class StreamDefinition:
    """What makes a table a stream. ``monotonic``: its monotonic columns, in declaration order (the first one
    drives watermarks and window emission; a stream may have none, then streaming aggregation and ORDER BY
    are refused). ``slack``: how much older than the newest value so far a new value of the first monotonic
    column may be (quasi-monotonic streams, CALCITE-1096): a :class:`datetime.timedelta` for a temporal column,
    an ``int`` for an integer column, None for strictly monotonic. ``history``: the stream is also a table
    (``WITH (history = true)``): relational queries read the rows it retains (seed 001's Orders, "both a stream
    and a table"); without it a relational query over the stream fails with ``STREAM_NOT_ALLOWED``."""

    monotonic: tuple[MonotonicColumn, ...] = attrs.field(default=(), converter=_monotonic)
    slack: datetime.timedelta | int | None = None
    history: bool = False


@attrs.frozen(kw_only=True)
class StreamCommit:
    """One commit of a stream, as :meth:`StreamMetadata.get_stream_commits` lists it. ``low``/``high``: the
    smallest and largest value of each monotonic column in the commit's rows (Python scalars: ``datetime`` for
    timestamps, ``int`` for integers), which the engine uses to find the commits a window or a watermark
    needs without reading rows."""

    version: int
    row_count: int
    committed_at: datetime.datetime
    low: Mapping[str, Any] = attrs.field(factory=dict, eq=False, hash=False)
    high: Mapping[str, Any] = attrs.field(factory=dict, eq=False, hash=False)


def monotonic_violation(stream: str, column: str, value: object, high_water: object) -> str:
    """The message of the ``CONSTRAINT_VIOLATION`` a commit out of monotonic order fails with."""
    return (
        f"Column '{column.upper()}' of stream '{stream.upper()}' is monotonic: {value} is older than "
        f"{high_water} already in the stream"
    )


class StreamMetadata:
    """The stream methods of :class:`~mergekit.spi.ConnectorMetadata` (a base class of it; override them on
    the connector's metadata). Defaults raise ``NOT_SUPPORTED`` with :data:`STREAMS_MESSAGE`."""

    def get_stream_commits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        after: int | None = None,
        up_to: int | None = None,
    ) -> Sequence[StreamCommit]:
        """The stream's commits with ``after < version <= up_to`` (``after`` None: from the first retained;
        ``up_to`` None: to the latest), in version order. Called on the driver (or the streaming source's
        process) each time a streaming query plans a micro-batch; cheap: catalog rows, not data."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, STREAMS_MESSAGE)

    def get_stream_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        after: int | None,
        up_to: int,
    ) -> Sequence[ConnectorSplit]:
        """Splits of the rows of the commits ``after < version <= up_to``, in version order, read by the
        connector's page source provider like any split and yielding ``columns``; the rows of one commit come
        in the order the commit stored them. Raise ``STREAM_NOT_ALLOWED`` when the range reaches commits the
        stream no longer retains ("Insufficient history in stream ..."). Called where
        :meth:`get_stream_commits` is."""
        raise MergekitError(ErrorCode.NOT_SUPPORTED, STREAMS_MESSAGE)
