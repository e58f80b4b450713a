"""A journal table's change feed as a stream (table property ``change_feed_stream = true``).

Seed 001's Orders is "both a stream and a table". A journal table with this property is both: relational
queries read the table, and ``SELECT STREAM * FROM t`` reads its change feed as a stream, one commit after the
other. The stream holds, per commit that wrote rows, the rows that commit *made live*: inserted rows
(``_change_type`` 'insert', also the new row of an UPDATE that changed the key) and the new values of updated
rows ('update': Delta's ``update_postimage``), with the change feed's columns (the table's, then
``_change_type``, ``_commit_version``, ``_commit_timestamp``). Deleted rows are not in it (a stream's rows only
arrive): ``table_changes('t', from)`` reads them. Commits that wrote no row (DDL, TRUNCATE) are not commits of
the stream; a TRUNCATE does not appear in it.

``_commit_version`` and ``_commit_timestamp`` are its monotonic columns (both strictly increase from commit to
commit: ``_commit``), ``_commit_version`` first; the table's own columns are not monotonic. The engine reads the
stream through the change feed's handle (``get_changes_handle``), which the stream methods of ``.tables``
route here. The property's name and the definition ``get_table_metadata`` reports are in ``_handles``
(``CHANGE_STREAM_PROPERTY``, ``CHANGE_STREAM``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ConnectorSplit, StreamCommit

from .._catalog import Cursor
from .._handles import COMMIT_TIMESTAMP, COMMIT_VERSION, JournalSplit, JournalTableHandle
from .._snapshots import _FILE_COLUMNS, _FILE_JOIN, _file_row

__all__ = ["change_stream_commits", "change_stream_splits"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _commits(cur: Cursor, h: JournalTableHandle, after: int | None, up_to: int | None) -> list[tuple[Any, ...]]:
    """(seq, committed_at, files_added, rows made live) of the writes with ``after < seq <= up_to``."""
    sql = "SELECT seq, committed_at, files_added, summary FROM mk_commits WHERE table_id = ? AND operation IN (?, ?)"
    params: list[Any] = [h.table_id, "write", "raw"]
    if after is not None:
        sql += " AND seq > ?"
        params.append(int(after))
    if up_to is not None:
        sql += " AND seq <= ?"
        params.append(int(up_to))
    out = []
    for seq, committed_at, files_added, summary in cur.execute(sql + " ORDER BY seq", params):
        counts = json.loads(summary) if summary else {}
        live = sum(int(counts.get(k, 0)) for k in ("inserts", "updates", "moves")) if counts else None
        out.append((int(seq), int(committed_at), int(files_added), live))
    return out


def _timestamp(committed_at: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=committed_at)


def change_stream_commits(
    cur: Cursor, h: JournalTableHandle, after: int | None, up_to: int | None
) -> Sequence[StreamCommit]:
    """The stream's commits: the table's writes, each with the number of rows it made live (a raw journal
    insert, which records no counts, reports the rows it added) and its version and time as low and high."""
    out = []
    for seq, committed_at, _, live in _commits(cur, h, after, up_to):
        if live is None:
            rows = cur.execute(
                "SELECT COALESCE(SUM(row_count), 0) FROM mk_files WHERE table_id = ? AND added_seq = ?",
                (h.table_id, seq),
            )
            live = int(rows[0][0])
        bounds = {COMMIT_VERSION: seq, COMMIT_TIMESTAMP: _timestamp(committed_at)}
        out.append(
            StreamCommit(
                version=seq, row_count=live, committed_at=_timestamp(committed_at), low=bounds, high=dict(bounds)
            )
        )
    return out


def change_stream_splits(cur: Cursor, h: JournalTableHandle, after: int | None, up_to: int) -> list[ConnectorSplit]:
    """A ``feed`` split per file of each write ``after < seq <= up_to``, in commit order (then file order);
    ``STREAM_NOT_ALLOWED`` when a commit's files are gone (vacuumed)."""
    splits: list[ConnectorSplit] = []
    for seq, committed_at, files_added, live in _commits(cur, h, after, up_to):
        if live == 0:
            continue  # a DELETE: nothing arrives
        files = [
            _file_row(r)
            for r in cur.execute(
                f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} AND f.table_id = ? AND f.added_seq = ? ORDER BY f.file_id",
                (h.table_id, seq),
            )
        ]
        if len(files) != files_added or any(f.vacuumed for f in files):
            raise MergekitError(
                ErrorCode.STREAM_NOT_ALLOWED,
                f"Insufficient history in stream '{h.logical.table.upper()}': the rows of version {seq} "
                f"(committed {_timestamp(committed_at).isoformat()}) are no longer retained",
            )
        splits.extend(JournalSplit(mode="feed", files=[f.ref()]) for f in files)
    return splits
