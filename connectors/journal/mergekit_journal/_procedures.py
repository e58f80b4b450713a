"""``compact`` and ``vacuum``: the seed's "background archival tasks", and garbage collection.

``compact`` rewrites a snapshot's files into fresh files sorted by key (:mod:`._compaction`, which also compacts
automatically after commits), populating
``subsequent_version_number`` on every superseded version (so later reads of those files need no version
resolution, and their key ranges are narrow for pruning), and drops history older than ``retention``
versions. It removes the old files from the *next* version only: time travel to earlier versions keeps
reading them until ``vacuum`` deletes them.

``vacuum`` deletes (a) files that the latest commits no longer reference, once the commit that removed
them is older than the grace period, and (b) orphan files no commit ever referenced (aborted or crashed
writers), once they are older than the grace period, so in-flight writers are never disturbed.
"""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ConnectorSession, SchemaTableName

from ._compaction import compact_files, retention_cutoff
from ._files.storage import filesystem, join_path
from ._handles import JournalTableHandle
from ._metadata import JournalMetadata, _now_us

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


def compact(
    metadata: JournalMetadata, *, session: ConnectorSession, table: Any, retention: int | None = None
) -> dict[str, Any]:
    """Rewrite the live files of ``table``; keep ``retention`` versions of history (None: all of it).

    Runs on the driver and reads the whole snapshot: it is a maintenance job, sized by the table. The automatic
    compactions this process's commits made due run first (one of them committing meanwhile would refuse this one).
    """
    metadata.compactions.wait()
    h = _logical_handle(metadata, session, table)
    spec = h.spec
    if spec.stream is not None:  # its commits are its offsets: rewriting them would lose them
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot compact stream '{h.logical}'")
    retention = metadata.config.retention if retention is None else retention
    with metadata.catalog.read() as cur:
        files = metadata.files_at(cur, h.table_id, h.snapshot_seq)
    cutoff = retention_cutoff(metadata, h, retention)
    if not files:
        return {"table": str(h.logical), "files_removed": 0, "files_added": 0, "rows": 0}
    return compact_files(
        metadata, h, files, cutoff=cutoff, merge_id=f"compact-{session.query_id}", summary={"retention": retention}
    )


def vacuum(
    metadata: JournalMetadata,
    *,
    session: ConnectorSession,
    table: Any = None,
    retain_seconds: float = DEFAULT_RETAIN_SECONDS,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Delete unreferenced files older than ``retain_seconds`` (default 7 days) in ``table`` (None: all). The
    automatic compactions this process's commits made due run first: the files one is writing are not yet
    referenced."""
    metadata.compactions.wait()
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
