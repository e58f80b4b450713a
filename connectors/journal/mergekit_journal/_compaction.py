"""Compaction: rewriting some of a table's files into fewer, larger ones sorted by key, by hand (``CALL compact``,
:mod:`._procedures`) or automatically after a commit (:func:`auto_compact`).

A rewrite reads the files, sorts their rows by key and version, sets ``subsequent_version_number`` on every version
a later one in them supersedes, writes them under ``data/<merge id>/`` and, in one catalog transaction, records a
``compact`` commit that removes the old files and adds the new ones (no new row version: the table's rows are the
same). Nothing is visible before that transaction commits: a crash leaves the table as it was and orphan files that
``vacuum`` deletes. Time travel to a version before the rewrite keeps reading the old files until ``vacuum``.

Automatic compaction (Delta's auto compaction, an LSM's tiering) keeps reads flat without a manual CALL. After each
commit of a table whose ``auto_compact`` property is on (the default), :func:`plan_auto_compaction` looks at the
newest files, in commit order: the *run* is the longest suffix of small files (``SMALL_FILE_SHARE``) in which no
file holds more rows than the newer ones of the run together (and no raw journal file, whose versions only a full
resolution may order). When the run has ``auto_compact_files`` files or more, they are merged into one sorted file
placed after every other (a suffix stays a suffix, so version order is kept); every row is rewritten about log2(n)
times in all, and the table keeps about ``auto_compact_files`` + log2(n) small files. When a run is due, or the
table has ``auto_compact_files`` files after its base (the rows that version resolution must anti-join), and those
hold more than ``FULL_COMPACTION_DELTA_FRACTION`` of its rows, the whole table is compacted instead (as ``CALL
compact``), up to ``FULL_COMPACTION_MAX_ROWS`` rows (a larger table: the run only).

Automatic compactions run in the background (:class:`Compactions`: one thread per connector, started when a commit
makes one due and ended when none is left), so a writer's statement returns as soon as its commit is made; the
connector's ``shutdown`` (``Engine.close``) and the end of the process wait for the compactions due to finish. A
compaction that fails (a concurrent compaction or TRUNCATE took its files, a change of columns, a full disk) is logged
and leaves the table as the commits left it; the next commit tries again.

Commits that land while a compaction runs do not stop it: its files take the place in commit order of the files
they replace (``mk_files.order_seq``: the snapshot the compaction read), before those commits, whose files
supersede versions of the rewritten rows as they did those of the replaced files. That holds when those commits
only wrote rows (``write``); after any other (a TRUNCATE, a change of columns or properties, another compaction)
the compaction is refused with ``TRANSACTION_CONFLICT`` and its files deleted.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mergekit.errors import ErrorCode, MergekitError

from ._files import lookup_cache
from ._files.storage import ROW_GROUP_ROWS, S, V, concat, dictionary_columns, filesystem, join_path, read_versioned
from ._handles import AUTO_COMPACT_FILES, OP_COLUMN, JournalTableHandle, encode_value
from ._snapshots import FileRow, SnapshotMetadata, _now_us, commit_order

__all__ = [
    "AutoCompaction",
    "Compactions",
    "auto_compact",
    "plan_auto_compaction",
    "compact_files",
    "retention_cutoff",
    "AUTO_COMPACT_FILES",
    "FULL_COMPACTION_DELTA_FRACTION",
    "FULL_COMPACTION_MAX_ROWS",
]

_log = logging.getLogger(__name__)

# A full compaction replaces the run's merge once the files after the base hold this share of the table's rows
# (the anti join a read pays grows with them: 600k superseding keys cost 1.7 s of a 3.4 s read of 10M rows).
FULL_COMPACTION_DELTA_FRACTION = 0.025
# Files of at most rows_per_file / SMALL_FILE_SHARE rows are small: only they are merged in runs (a 1M-row MERGE's
# files are not, so the MERGE is not followed by a rewrite of its own output).
SMALL_FILE_SHARE = 8
# The largest table compacted in full automatically: a full compaction reads the table into the driver's memory.
FULL_COMPACTION_MAX_ROWS = 20_000_000


@attrs.frozen
class AutoCompaction:
    """What :func:`plan_auto_compaction` chose: ``files`` to rewrite, in full (the whole snapshot) or as a run."""

    files: tuple[FileRow, ...]
    full: bool


def plan_auto_compaction(
    files: Sequence[FileRow],
    *,
    min_files: int,
    base_files: int,
    small_rows: int,
    raw_file_ids: frozenset[int] = frozenset(),
) -> AutoCompaction | None:
    """The automatic compaction due after a commit whose snapshot has ``files`` (the first ``base_files`` of them,
    in commit order, are the base), or None (module docstring). Files of more than ``small_rows`` rows never join a
    run: a bulk load's or a large MERGE's files are left alone."""
    ordered = sorted(files, key=commit_order)
    run: list[FileRow] = []
    total = 0
    for f in reversed(ordered):
        if f.file_id in raw_file_ids or f.row_count > small_rows or (run and f.row_count > total):
            break
        run.append(f)
        total += f.row_count
    need = max(2, min_files)
    if len(run) < need and len(ordered) - base_files < need:
        return None
    rows = sum(f.row_count for f in ordered)
    deltas = sum(f.row_count for f in ordered[base_files:])
    if rows <= FULL_COMPACTION_MAX_ROWS and deltas > FULL_COMPACTION_DELTA_FRACTION * rows:
        return AutoCompaction(tuple(ordered), full=True)
    return AutoCompaction(tuple(reversed(run)), full=False) if len(run) >= need else None


class Compactions:
    """The automatic compactions due in one connector's tables, run one at a time by a background thread (module
    docstring). ``submit`` queues tables after a commit (a table already queued is compacted once, from its
    snapshot when its turn comes); ``wait`` blocks until none is queued or running."""

    def __init__(self, metadata: SnapshotMetadata) -> None:
        self._metadata = metadata
        self._lock = threading.Condition()
        self._queued: dict[int, JournalTableHandle] = {}
        self._worker: threading.Thread | None = None

    def submit(self, handles: Sequence[JournalTableHandle]) -> None:
        with self._lock:
            for h in handles:
                self._queued[h.table_id] = h
            if self._queued and self._worker is None:
                # not a daemon: the end of the process waits for the compaction (a kill leaves only orphan files)
                self._worker = threading.Thread(target=self._run, name="mergekit-journal-compaction")
                self._worker.start()

    def _run(self) -> None:
        ended = False
        try:
            while True:
                with self._lock:
                    if not self._queued:  # (under the lock: a submit now starts a new worker)
                        self._worker, ended = None, True
                        self._lock.notify_all()
                        return
                    h = self._queued.pop(next(iter(self._queued)))
                compact_if_due(self._metadata, h)
        finally:
            if not ended:  # whatever stopped the thread, ``wait`` must not wait for it forever
                with self._lock:
                    self._worker = None
                    self._lock.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no compaction is queued or running (False: ``timeout`` seconds passed first)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._worker is None, timeout)


def auto_compact(metadata: SnapshotMetadata, handles: Sequence[JournalTableHandle]) -> None:
    """After a commit to each table of ``handles``: queue their automatic compactions (``metadata.compactions``),
    which run in the background; never raises."""
    try:
        metadata.compactions.submit(
            [h for h in handles if not h.time_travel and h.spec.stream is None and h.spec.auto_compact]
        )
    except Exception as exc:  # the commit stands (a thread that cannot start: the next commit tries again)
        _log.warning("automatic compaction not started: %s", exc)


def compact_if_due(metadata: SnapshotMetadata, h: JournalTableHandle) -> None:
    """The automatic compaction of ``h``'s table, if one is due at its current snapshot; never raises."""
    from ._scan_planning import _base_prefix  # (scan planning builds on the metadata mixins this module serves)

    try:
        with metadata.catalog.read() as cur:
            rows = cur.execute("SELECT current_seq, schema_seq FROM mk_tables WHERE table_id = ?", (h.table_id,))
            if not rows or rows[0][1] != h.schema_seq:  # dropped, or its columns changed since: next time
                return
            h = attrs.evolve(h, snapshot_seq=rows[0][0])
            files = metadata.files_at(cur, h.table_id, h.snapshot_seq)
            if len(files) < max(2, h.spec.auto_compact_files):
                return
            raw = cur.execute(
                "SELECT f.file_id FROM mk_files f JOIN mk_commits c ON c.table_id = f.table_id AND "
                "c.seq = f.added_seq WHERE f.table_id = ? AND f.removed_seq IS NULL AND c.operation = 'raw'",
                (h.table_id,),
            )
        ordered = sorted(files, key=commit_order)
        due = plan_auto_compaction(
            ordered,
            min_files=h.spec.auto_compact_files,
            base_files=_base_prefix(ordered),
            small_rows=max(1, metadata.config.rows_per_file // SMALL_FILE_SHARE),
            raw_file_ids=frozenset(r[0] for r in raw),
        )
        if due is None:
            return
        merge_id = f"auto-compact-{uuid.uuid4().hex[:12]}"
        cutoff = retention_cutoff(metadata, h, metadata.config.retention) if due.full else None
        compact_files(metadata, h, due.files, cutoff=cutoff, merge_id=merge_id, summary={"auto": True}, full=due.full)
    except Exception as exc:  # the commits stand; the next commit tries again
        _log.warning("automatic compaction of journal table %s skipped: %s", h.logical, exc)


def retention_cutoff(metadata: SnapshotMetadata, h: JournalTableHandle, retention: int | None) -> int | None:
    """The row version at or before which superseded versions go when ``retention`` versions are kept (None: all)."""
    if retention is None:
        return None
    with metadata.catalog.read() as cur:
        rows = cur.execute(
            "SELECT row_version FROM mk_commits WHERE table_id = ? AND seq = ?",
            (h.table_id, max(0, h.snapshot_seq - retention)),
        )
    return rows[0][0] if rows else None


def _with_subsequent(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """Sort by key and version; set ``__s`` of each superseded version to the next version of its key."""
    # At equal versions the tombstone sorts first, so the live row of a key swap stays the latest.
    order = [(k, "ascending") for k in key] + [(V, "ascending"), ("__tomb", "descending")]
    table = table.append_column("__tomb", pc.is_valid(table.column(S)))
    table = table.take(pc.sort_indices(table, sort_keys=order)).drop_columns(["__tomb"])
    n = table.num_rows
    if n <= 1:
        return table
    same = None
    for k in key:
        col = table.column(k)
        eq = pc.fill_null(pc.equal(col.slice(0, n - 1), col.slice(1)), False)
        same = eq if same is None else pc.and_(same, eq)
    assert same is not None
    next_v = pc.if_else(same, table.column(V).slice(1), pa.scalar(None, pa.int64()))
    next_v = pa.concat_arrays(
        [next_v.combine_chunks() if isinstance(next_v, pa.ChunkedArray) else next_v, pa.nulls(1, pa.int64())]
    )
    subsequent = pc.coalesce(table.column(S), next_v)
    return table.set_column(table.schema.get_field_index(S), S, subsequent)


def compact_files(
    metadata: SnapshotMetadata,
    h: JournalTableHandle,
    files: Sequence[FileRow],
    *,
    cutoff: int | None,
    merge_id: str,
    summary: dict[str, Any],
    full: bool = True,
) -> dict[str, Any]:
    """Rewrite ``files`` of ``h`` into files sorted by key (module docstring) and commit them. ``full``: ``files`` are
    the whole snapshot (the new files supersede nothing); else a suffix of it in commit order. ``cutoff``: drop
    versions superseded at or before this row version (history beyond the retention; full rewrites only).
    ``TRANSACTION_CONFLICT`` when another commit removed one of ``files`` meanwhile."""
    spec = h.spec
    stored = [c.name for c in spec.columns]
    data = concat(read_versioned(metadata.config.warehouse, spec, f.ref(), stored) for f in files)
    assert data is not None
    data = _with_subsequent(data, spec.key)
    if cutoff is not None:
        # Keep live rows and versions superseded after the cutoff; older history goes.
        keep = pc.or_(pc.is_null(data.column(S)), pc.fill_null(pc.greater(data.column(S), cutoff), False))
        data = data.filter(keep)
    fs, base = filesystem(metadata.config.warehouse)
    schema = spec.explicit_file_schema
    written: list[dict[str, Any]] = []
    per_file = max(1, metadata.config.rows_per_file)
    supersedes = not full and any(f.supersedes for f in files)
    try:
        for i, start in enumerate(range(0, data.num_rows, per_file)):
            chunk = data.slice(start, per_file)
            out = pa.table(
                [chunk.column(c.name) for c in spec.columns]
                + [chunk.column(OP_COLUMN), chunk.column(V), chunk.column(S)],
                names=schema.names,  # the columns' physical names (``TableSpec.physical``)
            ).cast(schema)
            rel = join_path(h.location, "data", merge_id, f"compacted-{i:05d}.parquet")
            full_path = join_path(base, rel)
            fs.create_dir(full_path.rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(full_path) as stream:
                pq.write_table(
                    out,
                    stream,
                    row_group_size=ROW_GROUP_ROWS,  # as the sinks write: a lookup decodes one row group
                    use_dictionary=dictionary_columns(schema, [spec.physical(k) for k in spec.key]),
                )
            versions = pc.min_max(chunk.column(V))
            keys = pc.min_max(chunk.column(spec.key[0]))
            written.append(
                {
                    "path": rel,
                    "rows": chunk.num_rows,
                    "size": fs.get_file_info(full_path).size or 0,
                    "key_min": encode_value(keys["min"].as_py()),
                    "key_max": encode_value(keys["max"].as_py()),
                    "min_version": versions["min"].as_py(),
                    "max_version": versions["max"].as_py(),
                }
            )
        seq = _commit(metadata, h, files, written, merge_id, supersedes, {**summary, "rows": data.num_rows})
    except BaseException:
        try:
            fs.delete_dir(join_path(base, h.location, "data", merge_id))
        except (FileNotFoundError, OSError):
            pass
        raise
    # committed (nothing may delete the new files now): lookups read them from here on
    lookup_cache.cache.drop_files({join_path(base, f.path) for f in files})
    return {
        "table": str(h.logical),
        "version": seq,
        "files_removed": len(files),
        "files_added": len(written),
        "rows": data.num_rows,
    }


def _commit(
    metadata: SnapshotMetadata,
    h: JournalTableHandle,
    files: Sequence[FileRow],
    written: Sequence[dict[str, Any]],
    merge_id: str,
    supersedes: bool,
    summary: dict[str, Any],
) -> int:
    """The ``compact`` commit: ``files`` removed, ``written`` added, in one transaction; the new version."""
    ids = [f.file_id for f in files]
    marks = ", ".join("?" for _ in ids)
    with metadata.catalog.write(lock_table_id=h.table_id) as cur:
        rows = cur.execute(
            "SELECT current_seq, last_row_version, last_committed_at, schema_seq FROM mk_tables WHERE table_id = ?",
            (h.table_id,),
        )
        current, last_rv, last_at, schema_seq = rows[0]
        # Commits since the files were read: the new files go before them in commit order (``order_seq``), which
        # keeps the table's rows when those commits only wrote rows (module docstring).
        other = cur.execute(
            "SELECT seq, operation FROM mk_commits WHERE table_id = ? AND seq > ? AND seq <= ? AND operation <> 'write' "
            "ORDER BY seq LIMIT 1",
            (h.table_id, h.snapshot_seq, current),
        )
        if other:
            seq, operation = other[0]
            raise MergekitError(
                ErrorCode.TRANSACTION_CONFLICT,
                f"Table {h.logical} was changed by a concurrent {operation.upper().replace('_', ' ')} (version {seq}) "
                "during its compaction",
            )
        still = cur.execute(
            f"SELECT COUNT(*) FROM mk_files WHERE table_id = ? AND removed_seq IS NULL AND file_id IN ({marks})",
            (h.table_id, *ids),
        )
        if still[0][0] != len(ids):
            raise MergekitError(
                ErrorCode.TRANSACTION_CONFLICT, f"Table {h.logical} was truncated or compacted concurrently"
            )
        if schema_seq != h.schema_seq:  # the files were read and written with the columns of before
            raise MergekitError(
                ErrorCode.TRANSACTION_CONFLICT,
                f"The columns of table {h.logical} were changed by a concurrent statement during its compaction",
            )
        seq = current + 1
        committed_at = max(_now_us(), last_at + 1)
        cur.execute(
            "INSERT INTO mk_commits (table_id, seq, row_version, committed_at, operation, merge_id, files_added, "
            "summary) VALUES (?, ?, ?, ?, 'compact', ?, ?, ?)",
            (
                h.table_id,
                seq,
                last_rv,
                committed_at,
                merge_id,
                len(written),
                json.dumps({"files_removed": len(ids), **summary}),
            ),
        )
        cur.execute(
            f"UPDATE mk_files SET removed_seq = ? WHERE table_id = ? AND removed_seq IS NULL AND file_id IN ({marks})",
            (seq, h.table_id, *ids),
        )
        for w in written:
            cur.execute(
                "INSERT INTO mk_files (table_id, path, added_seq, removed_seq, row_count, size_bytes, key_min, "
                "key_max, min_version, max_version, explicit_versions, supersedes, vacuumed, order_seq) "
                "VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, 1, ?, 0, ?)",
                (
                    h.table_id,
                    w["path"],
                    seq,
                    w["rows"],
                    w["size"],
                    w["key_min"],
                    w["key_max"],
                    w["min_version"],
                    w["max_version"],
                    int(supersedes),
                    h.snapshot_seq,  # in commit order where the files it replaces were
                ),
            )
        cur.execute(
            "UPDATE mk_tables SET current_seq = ?, last_committed_at = ? WHERE table_id = ?",
            (seq, committed_at, h.table_id),
        )
    return seq
