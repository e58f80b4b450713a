"""The journal's MERGE protocol on the driver: ``begin_merge``, ``finish_merge(s)``, ``abort_merge``, the
primary key and conflict checks, and the catalog transaction that records a commit.

Commit protocol (optimistic, like Iceberg's): sinks write files without versions; ``finish_merge``

1. checks primary keys against the statement's snapshot (only keys the statement inserts, only files whose
   key range can hold them),
2. checks every commit made after the snapshot for a key this statement also changes
   (``TRANSACTION_CONFLICT``), reading only the files those commits added,
3. takes the catalog's write lock, verifies no commit slipped in since step 2 (else repeats step 2 for the
   new commits) and records the files under the next version, in one transaction.

The lock is held only for step 3, so writers on disjoint keys never wait on each other's file reads. A
stream's commit is checked for monotonicity in step 3, under the lock (``_streams.record_stream_commit``).
``finish_merges`` does the same for several tables (the children of a partitioned merge table) in one
transaction.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    ConnectorMergeTableHandle,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableLayout,
    MergeOperation,
    RowChangeParadigm,
)

from ._catalog import Cursor
from ._compaction import auto_compact
from ._config import BIGINT
from ._evolution import with_columns
from ._files.storage import KeyFilter, concat, filesystem, join_path, live_rows, read_versioned
from ._handles import (
    ARRIVAL_OPS,
    OP_COLUMN,
    ROW_KEY,
    TOMBSTONE_OPS,
    FileRef,
    JournalFragment,
    JournalMergeHandle,
    JournalTableHandle,
    encode_value,
)
from ._snapshots import _FILE_COLUMNS, _FILE_JOIN, SnapshotMetadata, _file_row, _now_us, _overlaps
from ._streams.jobs import job_batch_of, record_job_batch
from ._streams.tables import append_only, check_append_only, record_stream_commit

__all__ = ["CommitMetadata"]


class CommitMetadata(SnapshotMetadata):
    """Writes: the row change paradigm, ``begin_merge``, the checks and the commit (part of ``JournalMetadata``)."""

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
        """``CHANGE_ONLY_UPDATED_COLUMNS``: a sink writes a new version of each changed row."""
        h = self._handle(table_handle)
        self._check_writable(h)
        return RowChangeParadigm.CHANGE_ONLY_UPDATED_COLUMNS

    def _check_writable(self, h: JournalTableHandle) -> None:
        if h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot modify a past version of {h.table}")
        if h.kind == "changes":
            raise MergekitError(ErrorCode.NOT_SUPPORTED, "Cannot modify a change feed")

    def get_merge_row_id_column_handle(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ColumnHandle:
        """The row id is the key: a struct column ``$journal_key`` of the key columns."""
        h = self._handle(table_handle)
        return ColumnHandle(name=ROW_KEY, type=h.spec.key_type)

    def get_insert_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        """No layout: inserts need no redistribution."""
        return None

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
    ) -> ConnectorMergeTableHandle:
        """Reserve the statement's id and name its merge (the directory its sinks write under). The journal table
        accepts only INSERT; time travel and the change feed are read-only."""
        h = self._handle(table_handle)
        self._check_writable(h)
        if h.kind == "journal" and update_case_columns:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED, f"{h.table} only accepts INSERT; change rows through {h.logical}"
            )
        if h.spec.stream is not None and update_case_columns:
            raise append_only(h.logical.table)
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            rows = cur.execute("SELECT next_statement FROM mk_tables WHERE table_id = ?", (h.table_id,))
            if not rows:
                raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{h.logical}' does not exist")
            statement_id = rows[0][0]
            cur.execute("UPDATE mk_tables SET next_statement = ? WHERE table_id = ?", (statement_id + 1, h.table_id))
        return JournalMergeHandle(
            table_handle=h,
            merge_id=f"{session.query_id}-{uuid.uuid4().hex[:8]}",
            statement_id=statement_id,
            raw_journal=h.kind == "journal",
            update_case_columns=tuple(
                (int(case), tuple(c.name for c in cols)) for case, cols in sorted(update_case_columns.items())
            ),
            job_batch=job_batch_of(session),
        )

    def begin_merge_adding_columns(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
        added_columns: Sequence[ColumnMetadata],
    ) -> ConnectorMergeTableHandle:
        """``MERGE WITH SCHEMA EVOLUTION``: ``begin_merge`` with the table's spec widened by ``added_columns``
        (``_evolution.with_columns``) in the merge handle, so the sinks write them; ``finish_merge`` records that
        spec in the same catalog transaction as the rows (``_record_commit``)."""
        h = self._handle(table_handle)
        if h.kind != "logical":
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot add columns to {h.table}")
        spec = with_columns(h.spec, added_columns)
        merge_handle = self.begin_merge(session=session, table_handle=h, update_case_columns=update_case_columns)
        assert isinstance(merge_handle, JournalMergeHandle)
        return attrs.evolve(
            merge_handle,
            table_handle=attrs.evolve(h, spec=spec),
            added_columns=tuple(c.name for c in added_columns),
        )

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        """Check and commit one statement's fragments (the commit protocol above); on any failure delete what
        its sinks wrote."""
        if not isinstance(merge_handle, JournalMergeHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merge called without begin_merge")
        h = merge_handle.table_handle
        assert isinstance(h, JournalTableHandle)
        frags = _flatten(fragments)
        if not frags and not merge_handle.added_columns:
            self._delete_merge_dir(h, merge_handle.merge_id)
            if merge_handle.job_batch is not None:  # a job's batch that changed nothing is done all the same
                with self.catalog.write(lock_table_id=h.table_id) as cur:
                    record_job_batch(cur, h.table_id, merge_handle.job_batch, str(h.logical))
            return
        try:
            # a MERGE that adds columns commits them even when it changed no row
            self._commit(merge_handle, frags, self._checked(merge_handle, h, frags) if frags else None)
        except BaseException:
            self._delete_merge_dir(h, merge_handle.merge_id)
            raise
        if frags:
            auto_compact(self, [h])  # after the commit: never fails it (``_compaction``)

    def _checked(
        self, merge_handle: JournalMergeHandle, h: JournalTableHandle, frags: list[JournalFragment]
    ) -> pa.Table | None:
        """The checks before one table's commit (version type of the statement's updates, primary key); the keys
        the fragments touch, read for them, or None when no check needed them."""
        check_append_only(h, frags)
        if not merge_handle.raw_journal and h.spec.version_type != self.config.version_type:
            if any(f.updates or f.deletes for f in frags):
                raise MergekitError(
                    ErrorCode.TYPE_MISMATCH,
                    f"Incorrect journalVersionType! Column '{h.spec.version_field}' is of type: "
                    f"{_seed_type(h.spec.version_type)} but the journalVersionType is "
                    f"{_seed_type(self.config.version_type)}",
                )
        if merge_handle.raw_journal or (h.spec.hidden_key and all(f.updates == f.deletes == 0 for f in frags)):
            return None
        touched = self._read_keys(h, frags)
        self._check_primary_key(h, frags, touched)
        return touched

    def finish_merges(
        self,
        *,
        session: ConnectorSession,
        merges: Sequence[tuple[ConnectorMergeTableHandle, Sequence[Any]]],
    ) -> None:
        """Several tables' merges in one catalog transaction (used by the partitioned connector for the
        children of a merge table): every check of every table runs first, then one commit records them all."""
        prepared: list[tuple[JournalMergeHandle, list[JournalFragment], pa.Table | None]] = []
        handles = []
        for merge_handle, _ in merges:
            if not isinstance(merge_handle, JournalMergeHandle):
                raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merges called without begin_merge")
            handles.append(merge_handle)
        if len({mh.table_handle.table_id for mh in handles}) != len(handles):  # type: ignore[attr-defined]
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merges got two merges of one table")
        try:
            for merge_handle, fragments in merges:
                assert isinstance(merge_handle, JournalMergeHandle)
                h = merge_handle.table_handle
                assert isinstance(h, JournalTableHandle)
                frags = _flatten(fragments)
                if not frags:
                    if merge_handle.added_columns:  # the columns are added to every table, rows or not
                        prepared.append((merge_handle, frags, None))
                    continue
                prepared.append((merge_handle, frags, self._checked(merge_handle, h, frags)))
            if prepared:
                self._commit_many(prepared)
        except BaseException:
            for mh in handles:
                self._delete_merge_dir(mh.table_handle, mh.merge_id)  # type: ignore[arg-type]
            raise
        committed = {id(mh) for mh, _, _ in prepared}
        for mh in handles:
            if id(mh) not in committed:
                self._delete_merge_dir(mh.table_handle, mh.merge_id)  # type: ignore[arg-type]
        auto_compact(self, [mh.table_handle for mh, frags, _ in prepared if frags])  # type: ignore[misc]

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
        """Delete what the sinks wrote, unless the merge committed after all."""
        if not isinstance(merge_handle, JournalMergeHandle):
            return
        h = merge_handle.table_handle
        assert isinstance(h, JournalTableHandle)
        with self.catalog.read() as cur:
            committed = cur.execute("SELECT COUNT(*) FROM mk_commits WHERE merge_id = ?", (merge_handle.merge_id,))
        if not committed[0][0]:
            self._delete_merge_dir(h, merge_handle.merge_id)

    def _delete_merge_dir(self, h: JournalTableHandle, merge_id: str) -> None:
        fs, base = filesystem(self.config.warehouse)
        try:
            fs.delete_dir(join_path(base, h.location, "data", merge_id))
        except (FileNotFoundError, OSError):
            pass  # nothing staged, or already gone; vacuum removes anything left

    # -- checks -----------------------------------------------------------------------------------------

    def _read_keys(self, h: JournalTableHandle, frags: Sequence[JournalFragment]) -> pa.Table:
        """Key columns and operation of every row this statement wrote (cost: the rows it touched)."""
        cols = [*h.spec.key, OP_COLUMN]
        tables = []
        for f in frags:
            ref = FileRef(path=f.path, seq=0, row_version=0, explicit_versions=False)
            tables.append(read_versioned(self.config.warehouse, h.spec, ref, cols).select(cols))
        result = concat(tables)
        assert result is not None
        return result

    def _check_primary_key(self, h: JournalTableHandle, frags: Sequence[JournalFragment], rows: pa.Table) -> None:
        key = list(h.spec.key)
        ops = rows.column(OP_COLUMN)
        live_after = rows.filter(
            pc.is_in(ops, value_set=pa.array([*ARRIVAL_OPS, MergeOperation.UPDATE], pa.int8()))
        ).select(key)
        # One key column: a hash set of its values (~0.05 s for 1M rows) tells whether any repeats; the
        # grouping that names the repeated key (~0.25 s) runs only then.
        if live_after.num_rows > 1 and (len(key) > 1 or len(pc.unique(live_after.column(0))) < live_after.num_rows):
            counts = live_after.group_by(key).aggregate([([], "count_all")])
            dup = counts.filter(pc.greater(counts.column("count_all"), 1))
            if dup.num_rows:
                raise self._duplicate_key(h, dup)
        arrivals = rows.filter(pc.is_in(ops, value_set=pa.array(ARRIVAL_OPS, pa.int8()))).select(key)
        if not arrivals.num_rows or h.spec.hidden_key:
            return
        departures = rows.filter(pc.is_in(ops, value_set=pa.array(TOMBSTONE_OPS, pa.int8()))).select(key)
        if departures.num_rows:
            arrivals = arrivals.join(departures, keys=key, join_type="left anti")
            if not arrivals.num_rows:
                return
        # only files whose key range can hold an arriving key, and in them the row groups that can (statistics)
        wanted = KeyFilter(key[0], pc.unique(arrivals.column(key[0])).drop_null().sort())
        with self.catalog.read() as cur:
            files = [f for f in self.files_at(cur, h.table_id, h.snapshot_seq) if wanted.may_hold(f.key_min, f.key_max)]
        existing = []
        stored = list(dict.fromkeys(key))
        for f in files:
            t = read_versioned(self.config.warehouse, h.spec, f.ref(), stored, keys=wanted)
            t = t.join(arrivals, keys=key, join_type="left semi")
            if t.num_rows:
                existing.append(t)
        found = concat(existing)
        if found is not None and found.num_rows:
            live = live_rows(found, key)
            if live.num_rows:
                raise self._duplicate_key(h, live.select(key))

    def _duplicate_key(self, h: JournalTableHandle, keys: pa.Table) -> MergekitError:
        row = keys.slice(0, 1).to_pylist()[0]
        cols = ", ".join(h.spec.key)
        vals = ", ".join(repr(row[k]) for k in h.spec.key)
        return MergekitError(
            ErrorCode.CONSTRAINT_VIOLATION,
            f"Duplicate key ({cols})=({vals}) violates the primary key of table {h.logical}",
        )

    def _check_conflicts(self, h: JournalTableHandle, touched: pa.Table | None, after: int, upto: int) -> None:
        """Raise TRANSACTION_CONFLICT when a commit in (after, upto] changed a key this statement touches."""
        with self.catalog.read() as cur:
            commits = cur.execute(
                "SELECT seq, operation FROM mk_commits WHERE table_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
                (h.table_id, after, upto),
            )
            for seq, operation in commits:
                if operation in (
                    "truncate",
                    "add_column",
                    "drop_column",
                    "rename_column",
                    "set_column_type",
                    "add_constraint",  # rows written after it was checked against the table's rows: unchecked
                    "drop_constraint",
                    "set_default",
                ):
                    raise MergekitError(
                        ErrorCode.TRANSACTION_CONFLICT,
                        f"Table {h.logical} was changed by a concurrent {operation.upper().replace('_', ' ')} "
                        f"(version {seq}) after this statement started",
                    )
            if touched is None or not touched.num_rows:
                return
            files = [
                _file_row(r)
                for r in cur.execute(
                    f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} AND f.table_id = ? AND f.added_seq > ? AND "
                    "f.added_seq <= ? AND c.operation IN ('write', 'raw')",
                    (h.table_id, after, upto),
                )
            ]
        key = list(h.spec.key)
        mm = pc.min_max(touched.column(key[0]))
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        keys = touched.select(key)
        for f in files:
            if not _overlaps(f.key_min, f.key_max, lo, hi):
                continue
            t = read_versioned(self.config.warehouse, h.spec, f.ref(), key).select(key)
            hit = t.join(keys, keys=key, join_type="left semi")
            if hit.num_rows:
                row = hit.slice(0, 1).to_pylist()[0]
                vals = ", ".join(repr(row[k]) for k in key)
                raise MergekitError(
                    ErrorCode.TRANSACTION_CONFLICT,
                    f"Key ({', '.join(key)})=({vals}) of table {h.logical} was changed by a concurrent commit "
                    f"(version {f.added_seq}) after this statement started",
                )

    # -- commit -----------------------------------------------------------------------------------------

    def _commit(self, mh: JournalMergeHandle, frags: Sequence[JournalFragment], touched: pa.Table | None) -> int:
        return self._commit_many([(mh, frags, touched)])[0]

    def _commit_many(
        self, items: Sequence[tuple[JournalMergeHandle, Sequence[JournalFragment], pa.Table | None]]
    ) -> list[int]:
        """Commit every item (one table each) in ONE catalog transaction: all become visible or none.

        Conflict checks run outside the lock for each table; then the write transaction locks every table
        (in table id order, so two multi-table writers cannot deadlock), re-verifies that no commit slipped
        in, and records each table's next version. Returns the new versions, in item order."""
        checked = {}
        schema_seqs = {}
        for mh, _, _ in items:
            h = mh.table_handle
            assert isinstance(h, JournalTableHandle)
            checked[h.table_id] = h.snapshot_seq
            schema_seqs[h.table_id] = (h.schema_seq, h.logical)
        while True:
            for mh, _, touched in items:
                h = mh.table_handle
                assert isinstance(h, JournalTableHandle)
                with self.catalog.read() as cur:
                    rows = cur.execute("SELECT current_seq FROM mk_tables WHERE table_id = ?", (h.table_id,))
                if not rows:
                    raise MergekitError(ErrorCode.TRANSACTION_CONFLICT, f"Table {h.logical} was dropped concurrently")
                current = rows[0][0]
                if current > checked[h.table_id]:
                    if not mh.raw_journal:
                        self._check_conflicts(h, touched, checked[h.table_id], current)
                    checked[h.table_id] = current
            ids = sorted(checked)
            with self.catalog.write(lock_table_id=ids[0] if len(ids) == 1 else None) as cur:
                if len(ids) > 1:
                    self.catalog.lock_tables(cur, ids)
                stale = False
                state = {}
                for table_id in ids:
                    rows = cur.execute(
                        "SELECT current_seq, last_row_version, last_committed_at, schema_seq FROM mk_tables "
                        "WHERE table_id = ?",
                        (table_id,),
                    )
                    if not rows:
                        raise MergekitError(ErrorCode.TRANSACTION_CONFLICT, "A table was dropped concurrently")
                    started_with, logical = schema_seqs[table_id]
                    if rows[0][3] != started_with:  # its columns changed: rows written for the old ones
                        raise MergekitError(
                            ErrorCode.TRANSACTION_CONFLICT,
                            f"The columns of table {logical} were changed by a concurrent statement (version "
                            f"{rows[0][3]}) after this statement started",
                        )
                    state[table_id] = rows[0][:3]
                    if rows[0][0] != checked[table_id]:
                        stale = True
                if stale:
                    continue  # a commit slipped in between the check and the lock: check it too
                return [self._record_commit(cur, mh, frags, state[mh.table_handle.table_id]) for mh, frags, _ in items]  # type: ignore[attr-defined]

    def _record_commit(
        self, cur: Cursor, mh: JournalMergeHandle, frags: Sequence[JournalFragment], state: tuple[Any, ...]
    ) -> int:
        h = mh.table_handle
        assert isinstance(h, JournalTableHandle)
        raw = mh.raw_journal
        max_explicit = max((f.max_explicit_version for f in frags if f.max_explicit_version is not None), default=None)
        counts = {
            "inserts": sum(f.inserts for f in frags),
            "updates": sum(f.updates for f in frags),
            "deletes": sum(f.deletes for f in frags),
            "moves": sum(f.moves for f in frags),
            "files": len(frags),
            "rows": sum(f.row_count for f in frags),
        }
        if mh.added_columns:
            counts["added_columns"] = list(mh.added_columns)  # type: ignore[assignment]
        summary = json.dumps(counts)
        current, last_rv, last_at = state
        seq = current + 1
        committed_at = max(_now_us(), last_at + 1)
        if h.spec.version_type == BIGINT:
            row_version = max(last_rv + 1, (max_explicit or 0))
        else:
            row_version = max(committed_at, last_rv + 1, (max_explicit or 0) + 1)
            committed_at = row_version
        cur.execute(
            "INSERT INTO mk_commits (table_id, seq, row_version, committed_at, operation, merge_id, "
            "files_added, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (h.table_id, seq, row_version, committed_at, "raw" if raw else "write", mh.merge_id, len(frags), summary),
        )
        for f in frags:
            min_v = row_version
            if f.explicit_versions and f.min_explicit_version is not None:
                min_v = min(min_v, f.min_explicit_version)
            cur.execute(
                "INSERT INTO mk_files (table_id, path, added_seq, removed_seq, row_count, size_bytes, "
                "key_min, key_max, min_version, max_version, explicit_versions, supersedes, vacuumed) "
                "VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                (
                    h.table_id,
                    f.path,
                    seq,
                    f.row_count,
                    f.size_bytes,
                    encode_value(f.key_min),
                    encode_value(f.key_max),
                    min_v,
                    row_version,
                    int(f.explicit_versions),
                    int(raw or f.sup_min is not None or f.updates + f.deletes + f.moves > 0),
                ),
            )
        if h.spec.stream is not None:  # checked against the stream's high-water mark under this transaction's lock
            record_stream_commit(cur, h, frags, seq, self.config.warehouse)
        if mh.job_batch is not None:  # a streaming job's batch id, in the same transaction as its rows
            record_job_batch(cur, h.table_id, mh.job_batch, str(h.logical))
        cur.execute(
            "UPDATE mk_tables SET current_seq = ?, last_row_version = ?, last_committed_at = ? WHERE table_id = ?",
            (seq, row_version, committed_at, h.table_id),
        )
        if mh.added_columns:  # MERGE WITH SCHEMA EVOLUTION: the new columns and the rows in one transaction
            self._record_spec(cur, h.table_id, h.spec, seq)
        return seq


def _seed_type(version_type: str) -> str:
    return "BIGINT" if version_type == BIGINT else "TIMESTAMP"


def _flatten(fragments: Sequence[Any]) -> list[JournalFragment]:
    out: list[JournalFragment] = []
    for f in fragments:
        if isinstance(f, JournalFragment):
            out.append(f)
        elif isinstance(f, (list, tuple)):
            out.extend(_flatten(f))
        elif f is not None:
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a journal fragment: {f!r}")
    return out
