"""Streams (seed 001, Calcite's streaming SQL) in the journal: append-only tables read by commit.

A stream is a journal table whose ``TableSpec.stream`` holds its ``StreamDefinition`` (monotonic columns,
slack): it has no declared key (the hidden ``_row_id`` is its key, as for any table created without one), no
``<t>_journal`` twin, and only INSERT reaches it. Each committed INSERT is one journal commit (one version, its
files added by it); ``mk_stream_commits`` records per commit its row count, the low and high of every
monotonic column and the stream's *high-water mark* after it (lists in the definition's order, values encoded
as ``encode_value`` does, so a RENAME COLUMN does not touch them).

The monotonicity check runs inside the catalog write transaction that makes the commit visible
(``CommitMetadata._record_commit`` calls :func:`record_stream_commit`): that transaction holds the table's
lock (SQLite: the database's write lock; PostgreSQL: the table row ``FOR UPDATE``), so the high-water mark it
reads is the one of the last commit, and of two concurrent inserters the second to commit is checked against
the first one's rows. The statistics come from the sinks (``JournalFragment.monotonic``); a fragment without
them is read.

Rows within a commit are put in order at read time: a commit's rows may come from several sinks, each writing
its own files, so no sink sees them all. A stream split holds all the files of one commit and its page source
sorts their rows stably by the first monotonic column (``_files.page_source``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnHandle,
    ConnectorSession,
    ConnectorSplit,
    ConnectorTableHandle,
    StreamCommit,
    monotonic_violation,
)

from .._catalog import Cursor
from .._files.storage import read_versioned
from .._handles import FileRef, JournalFragment, JournalSplit, JournalTableHandle, TableSpec, decode_value, encode_value
from .._snapshots import _FILE_COLUMNS, _FILE_JOIN, SnapshotMetadata, _file_row
from .change_feed import change_stream_commits, change_stream_splits

__all__ = [
    "StreamReadMetadata",
    "check_definition",
    "check_append_only",
    "record_stream_commit",
    "renamed_stream",
    "check_stream_alter",
    "append_only",
]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def append_only(table: str) -> MergekitError:
    return MergekitError(ErrorCode.STREAM_NOT_ALLOWED, f"Stream '{table.upper()}' is append-only")


def _orderable(t: pa.DataType) -> bool:
    """Types whose values the catalog can record and compare (``encode_value``)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
    )


def check_definition(spec: TableSpec, table: str) -> None:
    """``INVALID_ARGUMENTS`` unless every monotonic column is a visible column of an orderable type, named
    once, and the slack suits the first one (a non-negative interval for a date or timestamp column, a
    non-negative integer for an integer column)."""
    stream = spec.stream
    assert stream is not None
    by_name = {c.name: c for c in spec.visible}
    names = [m.name for m in stream.monotonic]
    if len(set(names)) != len(names):
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Stream '{table}' names a monotonic column twice")
    for m in stream.monotonic:
        column = by_name.get(m.name)
        if column is None:
            raise MergekitError(
                ErrorCode.COLUMN_NOT_FOUND, f"Monotonic column '{m.name}' is not a column of stream '{table}'"
            )
        if not _orderable(column.type):
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Column '{m.name}' of stream '{table}' cannot be monotonic: type {column.type} is not supported",
            )
    slack = stream.slack
    if slack is None:
        return
    if not stream.monotonic:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Stream '{table}' has a slack but no monotonic column")
    first = by_name[stream.monotonic[0].name].type
    if isinstance(slack, dt.timedelta):
        ok = (pa.types.is_timestamp(first) or pa.types.is_date(first)) and slack >= dt.timedelta(0)
    else:
        ok = isinstance(slack, int) and not isinstance(slack, bool) and pa.types.is_integer(first) and slack >= 0
    if not ok:
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS,
            f"Slack {slack!r} of stream '{table}' does not suit its monotonic column "
            f"'{stream.monotonic[0].name}' of type {first}",
        )


def renamed_stream(spec: TableSpec, source: str, target: str) -> TableSpec:
    """``spec`` after RENAME COLUMN ``source`` TO ``target``: a monotonic column keeps its place in the
    definition under its new name."""
    if spec.stream is None or source not in {m.name for m in spec.stream.monotonic}:
        return spec
    monotonic = [attrs.evolve(m, name=target) if m.name == source else m for m in spec.stream.monotonic]
    return attrs.evolve(spec, stream=attrs.evolve(spec.stream, monotonic=monotonic))


def check_stream_alter(old: TableSpec, new: TableSpec, table: str) -> None:
    """A column change of a stream must leave every monotonic column in place with an orderable type
    (``NOT_SUPPORTED`` for DROP COLUMN of one)."""
    if new.stream is None:
        return
    names = {c.name: c for c in new.visible}
    for m in new.stream.monotonic:
        if m.name not in names:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot drop monotonic column '{m.name}' of stream '{table}'")
    check_definition(new, table)


def check_append_only(h: JournalTableHandle, frags: Sequence[JournalFragment]) -> None:
    """``STREAM_NOT_ALLOWED`` when a stream's fragments hold anything but inserted rows (the engine refuses
    UPDATE, DELETE and MERGE on a stream earlier, and the sinks refuse such rows: this is defence)."""
    if h.spec.stream is None:
        return
    if any(f.updates or f.deletes or f.moves or f.explicit_versions for f in frags):
        raise append_only(h.logical.table)


def _fragment_stats(warehouse: str, spec: TableSpec, f: JournalFragment) -> dict[str, tuple[Any, Any, int]]:
    """(low, high, nulls) per monotonic column of one fragment: what its sink recorded, else read from it."""
    assert spec.stream is not None
    names = [m.name for m in spec.stream.monotonic]
    recorded = {name: (lo, hi, nulls) for name, lo, hi, nulls in f.monotonic}
    if all(n in recorded for n in names) or not f.row_count:
        return recorded
    ref = FileRef(path=f.path, seq=0, row_version=0, explicit_versions=False)
    t = read_versioned(warehouse, spec, ref, names)
    out = {}
    for name in names:
        col = t.column(name)
        valid = col.drop_null()
        lo = min(valid.to_pylist()) if len(valid) else None
        hi = max(valid.to_pylist()) if len(valid) else None
        out[name] = (lo, hi, col.null_count)
    return out


def _beyond(value: Any, bound: Any, descending: bool) -> bool:
    return bool(value > bound) if descending else bool(value < bound)


def record_stream_commit(
    cur: Cursor, h: JournalTableHandle, frags: Sequence[JournalFragment], seq: int, warehouse: str
) -> None:
    """Inside the write transaction of commit ``seq`` of a stream: check its rows against the stream's
    high-water mark (``CONSTRAINT_VIOLATION``: nothing is committed, the transaction rolls back) and record
    the commit's row count, low/high and the new high-water mark in ``mk_stream_commits``."""
    stream = h.spec.stream
    assert stream is not None
    table = h.logical.table
    check_append_only(h, frags)
    stats = [_fragment_stats(warehouse, h.spec, f) for f in frags]
    prev = cur.execute(
        "SELECT water FROM mk_stream_commits WHERE table_id = ? ORDER BY seq DESC LIMIT 1", (h.table_id,)
    )
    water = [decode_value(v) for v in json.loads(prev[0][0])] if prev else [None] * len(stream.monotonic)
    lows, highs, waters = [], [], []
    for i, m in enumerate(stream.monotonic):
        if any(s[m.name][2] for s in stats):
            raise MergekitError(
                ErrorCode.CONSTRAINT_VIOLATION,
                f"Column '{m.name.upper()}' of stream '{table.upper()}' is monotonic: NULL is not allowed",
            )
        values = [v for s in stats for v in s[m.name][:2] if v is not None]
        lo, hi = (min(values), max(values)) if values else (None, None)
        mark = water[i] if i < len(water) else None
        if lo is not None and mark is not None:
            slack = stream.slack if i == 0 else None
            oldest = hi if m.descending else lo  # the value furthest back
            bound = mark
            if slack is not None:
                bound = mark + slack if m.descending else mark - slack
            if _beyond(oldest, bound, m.descending):
                raise MergekitError(ErrorCode.CONSTRAINT_VIOLATION, monotonic_violation(table, m.name, oldest, mark))
        if lo is None:
            new_mark = mark
        elif mark is None:
            new_mark = lo if m.descending else hi
        else:
            new_mark = min(mark, lo) if m.descending else max(mark, hi)
        lows.append(encode_value(lo))
        highs.append(encode_value(hi))
        waters.append(encode_value(new_mark))
    cur.execute(
        "INSERT INTO mk_stream_commits (table_id, seq, row_count, low, high, water) VALUES (?, ?, ?, ?, ?, ?)",
        (
            h.table_id,
            seq,
            sum(f.row_count for f in frags),
            json.dumps(lows),
            json.dumps(highs),
            json.dumps(waters),
        ),
    )


class StreamReadMetadata(SnapshotMetadata):
    """``get_stream_commits`` and ``get_stream_splits`` of a journal stream (part of ``JournalMetadata``)."""

    def _stream_handle(self, table_handle: ConnectorTableHandle) -> JournalTableHandle:
        h = self._handle(table_handle)
        if h.kind == "changes" and h.spec.change_stream:  # a table's change feed (``_streams.change_feed``)
            return h
        if h.kind != "logical" or h.spec.stream is None:
            raise MergekitError(ErrorCode.STREAM_NOT_ALLOWED, f"'{h.table.table.upper()}' is not a stream")
        return h

    def _stream_rows(self, cur: Cursor, h: JournalTableHandle, after: int | None, up_to: int | None) -> list[Any]:
        sql = (
            "SELECT s.seq, s.row_count, c.committed_at, s.low, s.high, c.files_added FROM mk_stream_commits s "
            "JOIN mk_commits c ON c.table_id = s.table_id AND c.seq = s.seq WHERE s.table_id = ?"
        )
        params: list[Any] = [h.table_id]
        if after is not None:
            sql += " AND s.seq > ?"
            params.append(int(after))
        if up_to is not None:
            sql += " AND s.seq <= ?"
            params.append(int(up_to))
        return cur.execute(sql + " ORDER BY s.seq", params)

    def get_stream_commits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        after: int | None = None,
        up_to: int | None = None,
    ) -> Sequence[StreamCommit]:
        """The stream's commits with ``after < version <= up_to`` (None: unbounded; the latest commits, not
        the handle's snapshot), in version order, from ``mk_stream_commits`` alone."""
        h = self._stream_handle(table_handle)
        if h.kind == "changes":
            with self.catalog.read() as cur:
                return change_stream_commits(cur, h, after, up_to)
        with self.catalog.read() as cur:
            rows = self._stream_rows(cur, h, after, up_to)
        assert h.spec.stream is not None
        names = [m.name for m in h.spec.stream.monotonic]
        out = []
        for seq, row_count, committed_at, low, high, _ in rows:
            lows = [decode_value(v) for v in json.loads(low)]
            highs = [decode_value(v) for v in json.loads(high)]
            out.append(
                StreamCommit(
                    version=int(seq),
                    row_count=int(row_count),
                    committed_at=_EPOCH + dt.timedelta(microseconds=int(committed_at)),
                    low=dict(zip(names, lows, strict=False)),
                    high=dict(zip(names, highs, strict=False)),
                )
            )
        return out

    def get_stream_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        after: int | None,
        up_to: int,
    ) -> Sequence[ConnectorSplit]:
        """One split per commit with rows, ``after < version <= up_to``, in version order: the commit's files,
        read by the page source in the order of the first monotonic column (mode ``stream``).
        ``STREAM_NOT_ALLOWED`` when a commit's files are gone (vacuumed)."""
        h = self._stream_handle(table_handle)
        if h.kind == "changes":
            with self.catalog.read() as cur:
                return change_stream_splits(cur, h, after, up_to)
        with self.catalog.read() as cur:
            commits = self._stream_rows(cur, h, after, up_to)
            sql = f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} AND f.table_id = ? AND f.added_seq <= ?"
            params: list[Any] = [h.table_id, int(up_to)]
            if after is not None:
                sql += " AND f.added_seq > ?"
                params.append(int(after))
            files = [_file_row(r) for r in cur.execute(sql + " ORDER BY f.added_seq, f.file_id", params)]
        by_seq: dict[int, list[Any]] = {}
        for f in files:
            by_seq.setdefault(f.added_seq, []).append(f)
        splits: list[ConnectorSplit] = []
        for seq, row_count, committed_at, _, _, files_added in commits:
            if not row_count:
                continue
            found = by_seq.get(seq, [])
            if len(found) != files_added or any(f.vacuumed for f in found):
                when = (_EPOCH + dt.timedelta(microseconds=int(committed_at))).isoformat()
                raise MergekitError(
                    ErrorCode.STREAM_NOT_ALLOWED,
                    f"Insufficient history in stream '{h.logical.table.upper()}': the rows of version {seq} "
                    f"(committed {when}) are no longer retained",
                )
            splits.append(JournalSplit(mode="stream", files=[f.ref() for f in found]))
        return splits
