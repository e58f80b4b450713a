"""``compact`` and ``vacuum``: the seed's "background archival tasks", and garbage collection.

``compact`` rewrites a snapshot's files into fresh files sorted by key, populating
``subsequent_version_number`` on every superseded version (so later reads of those files need no version
resolution, and their key ranges are narrow for pruning), and drops history older than ``retention``
versions. It removes the old files from the *next* version only: time travel to earlier versions keeps
reading them until ``vacuum`` deletes them.

``vacuum`` deletes (a) files that the latest commits no longer reference, once the commit that removed
them is older than the grace period, and (b) orphan files no commit ever referenced (aborted or crashed
writers), once they are older than the grace period, so in-flight writers are never disturbed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ConnectorSession, SchemaTableName

from ._handles import OP_COLUMN, JournalTableHandle, encode_value
from ._metadata import JournalMetadata, _now_us
from ._storage import S, V, concat, dictionary_columns, filesystem, join_path, read_versioned

__all__ = ["compact", "vacuum"]

DEFAULT_RETAIN_SECONDS = 7 * 24 * 3600


def _table_name(table: Any, default_schema: str = "default") -> SchemaTableName:
    if isinstance(table, SchemaTableName):
        return table
    parts = str(table).lower().split(".")
    if len(parts) == 1:
        return SchemaTableName(schema=default_schema, table=parts[0])
    return SchemaTableName(schema=parts[-2], table=parts[-1])


def _logical_handle(metadata: JournalMetadata, session: ConnectorSession, table: Any) -> JournalTableHandle:
    name = _table_name(table)
    handle = metadata.get_table_handle(session=session, table=name)
    if handle is None:
        raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{name}' does not exist")
    assert isinstance(handle, JournalTableHandle)
    if handle.kind != "logical":
        handle = metadata.get_table_handle(session=session, table=handle.logical)
        assert isinstance(handle, JournalTableHandle)
    return handle


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


def compact(
    metadata: JournalMetadata, *, session: ConnectorSession, table: Any, retention: int | None = None
) -> dict[str, Any]:
    """Rewrite the live files of ``table``; keep ``retention`` versions of history (None: all of it).

    Runs on the driver and reads the whole snapshot: it is a maintenance job, sized by the table.
    """
    h = _logical_handle(metadata, session, table)
    spec = h.spec
    if spec.stream is not None:  # its commits are its offsets: rewriting them would lose them
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot compact stream '{h.logical}'")
    retention = metadata.config.retention if retention is None else retention
    with metadata.catalog.read() as cur:
        files = metadata.files_at(cur, h.table_id, h.snapshot_seq)
        cutoff = None
        if retention is not None:
            rows = cur.execute(
                "SELECT row_version FROM mk_commits WHERE table_id = ? AND seq = ?",
                (h.table_id, max(0, h.snapshot_seq - retention)),
            )
            cutoff = rows[0][0] if rows else None
    if not files:
        return {"table": str(h.logical), "files_removed": 0, "files_added": 0, "rows": 0}
    stored = [c.name for c in spec.columns]
    data = concat(read_versioned(metadata.config.warehouse, spec, f.ref(), stored) for f in files)
    assert data is not None
    data = _with_subsequent(data, spec.key)
    if cutoff is not None:
        # Keep live rows and versions superseded after the cutoff; older history goes.
        keep = pc.or_(pc.is_null(data.column(S)), pc.fill_null(pc.greater(data.column(S), cutoff), False))
        data = data.filter(keep)
    fs, base = filesystem(metadata.config.warehouse)
    merge_id = f"compact-{session.query_id}"
    schema = spec.explicit_file_schema
    written: list[dict[str, Any]] = []
    per_file = max(1, metadata.config.rows_per_file)
    try:
        for i, start in enumerate(range(0, data.num_rows, per_file)):
            chunk = data.slice(start, per_file)
            out = pa.table(
                [chunk.column(c.name) for c in spec.columns]
                + [chunk.column(OP_COLUMN), chunk.column(V), chunk.column(S)],
                names=schema.names,  # the columns' physical names (``TableSpec.physical``)
            ).cast(schema)
            rel = join_path(h.location, "data", merge_id, f"compacted-{i:05d}.parquet")
            full = join_path(base, rel)
            fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(full) as stream:
                pq.write_table(
                    out, stream, use_dictionary=dictionary_columns(schema, [spec.physical(k) for k in spec.key])
                )
            first = chunk.column(spec.key[0])
            versions = pc.min_max(chunk.column(V))
            keys = pc.min_max(first)
            written.append(
                {
                    "path": rel,
                    "rows": chunk.num_rows,
                    "size": fs.get_file_info(full).size or 0,
                    "key_min": encode_value(keys["min"].as_py()),
                    "key_max": encode_value(keys["max"].as_py()),
                    "min_version": versions["min"].as_py(),
                    "max_version": versions["max"].as_py(),
                }
            )
        with metadata.catalog.write(lock_table_id=h.table_id) as cur:
            ids = [f.file_id for f in files]
            still = cur.execute(
                "SELECT COUNT(*) FROM mk_files WHERE table_id = ? AND removed_seq IS NULL AND file_id IN "
                f"({', '.join('?' for _ in ids)})",
                (h.table_id, *ids),
            )
            if still[0][0] != len(ids):
                raise MergekitError(
                    ErrorCode.TRANSACTION_CONFLICT, f"Table {h.logical} was truncated or compacted concurrently"
                )
            rows = cur.execute(
                "SELECT current_seq, last_row_version, last_committed_at FROM mk_tables WHERE table_id = ?",
                (h.table_id,),
            )
            current, last_rv, last_at = rows[0]
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
                    json.dumps({"files_removed": len(ids), "rows": data.num_rows, "retention": retention}),
                ),
            )
            cur.execute(
                "UPDATE mk_files SET removed_seq = ? WHERE table_id = ? AND removed_seq IS NULL AND file_id IN "
                f"({', '.join('?' for _ in ids)})",
                (seq, h.table_id, *ids),
            )
            for w in written:
                cur.execute(
                    "INSERT INTO mk_files (table_id, path, added_seq, removed_seq, row_count, size_bytes, key_min, "
                    "key_max, min_version, max_version, explicit_versions, supersedes, vacuumed) "
                    "VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, 1, 0, 0)",
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
                    ),
                )
            cur.execute(
                "UPDATE mk_tables SET current_seq = ?, last_committed_at = ? WHERE table_id = ?",
                (seq, committed_at, h.table_id),
            )
    except BaseException:
        try:
            fs.delete_dir(join_path(base, h.location, "data", merge_id))
        except (FileNotFoundError, OSError):
            pass
        raise
    return {
        "table": str(h.logical),
        "version": seq,
        "files_removed": len(files),
        "files_added": len(written),
        "rows": data.num_rows,
    }


def vacuum(
    metadata: JournalMetadata,
    *,
    session: ConnectorSession,
    table: Any = None,
    retain_seconds: float = DEFAULT_RETAIN_SECONDS,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Delete unreferenced files older than ``retain_seconds`` (default 7 days) in ``table`` (None: all)."""
    cutoff_us = _now_us() - int(float(retain_seconds) * 1_000_000)
    cutoff_s = cutoff_us / 1_000_000
    fs, base = filesystem(metadata.config.warehouse)
    if table is None:
        with metadata.catalog.read() as cur:
            tables = cur.execute("SELECT table_id, location FROM mk_tables")
    else:
        h = _logical_handle(metadata, session, table)
        tables = [(h.table_id, h.location)]
    deleted: list[str] = []
    expired_count = 0
    for table_id, location in tables:
        with metadata.catalog.read() as cur:
            expired = cur.execute(
                "SELECT f.file_id, f.path FROM mk_files f JOIN mk_commits c ON c.table_id = f.table_id AND "
                "c.seq = f.removed_seq WHERE f.table_id = ? AND f.removed_seq IS NOT NULL AND f.vacuumed = 0 "
                "AND c.committed_at < ?",
                (table_id, cutoff_us),
            )
            referenced = {r[0] for r in cur.execute("SELECT path FROM mk_files WHERE table_id = ?", (table_id,))}
        for file_id, path in expired:
            expired_count += 1
            deleted.append(path)
            if not dry_run:
                # Mark first: a crash after marking leaves an orphan (vacuum deletes it next time), never a
                # catalog entry pointing at a missing file that time travel would try to read.
                with metadata.catalog.write() as cur:
                    cur.execute("UPDATE mk_files SET vacuumed = 1 WHERE file_id = ?", (file_id,))
                _delete(fs, join_path(base, path))
        root = join_path(base, location)
        try:
            infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        except (FileNotFoundError, OSError):
            infos = []
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            rel = info.path[len(base) :].lstrip("/") if info.path.startswith(base) else info.path
            if rel in referenced:
                continue
            mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
            if mtime < cutoff_s:
                deleted.append(rel)
                if not dry_run:
                    _delete(fs, info.path)
        if not dry_run:
            _remove_empty_dirs(fs, join_path(root, "data"), cutoff_s)
    return {
        "deleted_files": len(deleted),
        "expired_files": expired_count,
        "orphan_files": len(deleted) - expired_count,
        "paths": deleted,
        "dry_run": dry_run,
    }


def _delete(fs: pafs.FileSystem, path: str) -> None:
    try:
        fs.delete_file(path)
    except (FileNotFoundError, OSError):
        pass


def _remove_empty_dirs(fs: pafs.FileSystem, root: str, cutoff_s: float) -> None:
    """Remove empty statement folders older than the grace period (a young one may be about to be written)."""
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=False, allow_not_found=True))
    except (FileNotFoundError, OSError):
        return
    for info in infos:
        young = info.mtime is not None and info.mtime.timestamp() >= cutoff_s
        if info.type == pafs.FileType.Directory and not young:
            inner = fs.get_file_info(pafs.FileSelector(info.path, recursive=True))
            if not inner:
                try:
                    fs.delete_dir(info.path)
                except OSError:
                    pass
