"""What a version of a journal table is: table handles, the snapshot's file rows, time travel and history.

Every other part of ``JournalMetadata`` builds on ``SnapshotMetadata``: it holds the catalog connection and the
options, finds a table by name (its logical name or its journal's, ``<table>_journal``), pins a handle to a
version (the latest, ``FOR VERSION AS OF`` or ``FOR TIMESTAMP AS OF``), opens the change feed of a range of
versions, lists a table's commits and describes its columns. A version is the set of catalog file rows
(``FileRow``) added at or before it and not removed by it: ``files_at``. Split planning (``_scan_planning``)
and the commit protocol (``_commit``) read those rows, and DDL (``_ddl``) and commits take their time from
``_now_us``; they live here so that none of those modules imports another.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnMetadata,
    ConnectorMetadata,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    SchemaTableName,
    TableCommit,
    TableVersion,
)

from ._catalog import Catalog, Cursor
from ._config import JournalConfig
from ._handles import (
    CHANGE_STREAM,
    CHANGE_STREAM_PROPERTY,
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    HIDDEN_ROW_ID,
    FileRef,
    JournalTableHandle,
    TableSpec,
    decode_value,
)

__all__ = ["SnapshotMetadata", "FileRow", "commit_order"]


def _now_us() -> int:
    """Now, in microseconds since the epoch: the clock of ``committed_at``."""
    return int(time.time() * 1_000_000)


def _to_us(ts: dt.datetime) -> int:
    """A timestamp in microseconds since the epoch (naive: UTC), as ``mk_commits.committed_at`` stores it."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.UTC)
    delta = ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@attrs.frozen(kw_only=True)
class FileRow:
    """A catalog file row with its commit's version, decoded."""

    file_id: int
    path: str
    added_seq: int
    removed_seq: int | None
    row_version: int
    committed_at: int
    explicit_versions: bool
    supersedes: bool
    key_min: Any
    key_max: Any
    min_version: int
    max_version: int
    row_count: int
    size_bytes: int
    vacuumed: bool
    # where the file sits in the table's commit order: its commit (``added_seq``), or for a compaction's output
    # the snapshot the compaction read (it may commit after later writes: ``_compaction``)
    order_seq: int

    def ref(self) -> FileRef:
        """The file as page sources and sinks see it (no catalog ids)."""
        return FileRef(
            path=self.path,
            seq=self.added_seq,
            row_version=self.row_version,
            explicit_versions=self.explicit_versions,
            committed_at=self.committed_at,
        )


def commit_order(f: FileRow) -> tuple[int, int]:
    """The sort key of a snapshot's files in commit order, oldest first (``FileRow.order_seq``)."""
    return (f.order_seq, f.file_id)


_FILE_COLUMNS = (
    "f.file_id, f.path, f.added_seq, f.removed_seq, c.row_version, c.committed_at, f.explicit_versions, "
    "f.supersedes, f.key_min, f.key_max, f.min_version, f.max_version, f.row_count, f.size_bytes, f.vacuumed, "
    "COALESCE(f.order_seq, f.added_seq)"
)
# From the files to their commits, in that order (SQLite's CROSS JOIN keeps it; PostgreSQL plans it as any join):
# SQLite would otherwise scan every file row of the table for each of its commits, a cost that grows with the
# square of the table's history. Queries go on with ``AND <conditions>``.
_FILE_JOIN = "FROM mk_files f CROSS JOIN mk_commits c WHERE c.table_id = f.table_id AND c.seq = f.added_seq"


def _file_row(r: tuple[Any, ...]) -> FileRow:
    return FileRow(
        file_id=r[0],
        path=r[1],
        added_seq=r[2],
        removed_seq=r[3],
        row_version=r[4],
        committed_at=r[5],
        explicit_versions=bool(r[6]),
        supersedes=bool(r[7]),
        key_min=decode_value(r[8]),
        key_max=decode_value(r[9]),
        min_version=r[10],
        max_version=r[11],
        row_count=r[12],
        size_bytes=r[13],
        vacuumed=bool(r[14]),
        order_seq=r[15],
    )


def _is_stream(spec_json: str) -> bool:
    """Whether a table's spec (``TableSpec`` JSON) is a stream's; the text test spares parsing most specs."""
    return '"stream"' in spec_json and TableSpec.from_json(spec_json).stream is not None


def _overlaps(a_lo: Any, a_hi: Any, b_lo: Any, b_hi: Any) -> bool:
    """Whether two key ranges may share a key; unknown bounds (None) or incomparable values may."""
    if a_lo is None or a_hi is None or b_lo is None or b_hi is None:
        return True
    try:
        return not (a_hi < b_lo or b_hi < a_lo)
    except TypeError:
        return True


class SnapshotMetadata(ConnectorMetadata):
    """The base of ``JournalMetadata``: the catalog, table lookup, handles, versions, history and columns.
    ``catalog`` is the SQLite or PostgreSQL catalog; ``config`` the options."""

    # the automatic compactions (``_compaction.Compactions``), set by ``JournalMetadata``
    compactions: Any

    def __init__(self, *, catalog_name: str, config: JournalConfig, catalog: Catalog) -> None:
        self.catalog_name = catalog_name
        self.config = config
        self.catalog = catalog

    # ---- names ------------------------------------------------------------------------------------------

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        """Every schema with a table or created by ``CREATE SCHEMA``, and ``default``."""
        with self.catalog.read() as cur:
            names = {r[0] for r in cur.execute("SELECT schema_name FROM mk_schemas")}
            names |= {r[0] for r in cur.execute("SELECT DISTINCT schema_name FROM mk_tables")}
            names |= {r[0] for r in cur.execute("SELECT DISTINCT schema_name FROM mk_views")}
        return sorted(names | {"default"})

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        """Each table twice: its logical name and its journal's (``<table>_journal``); a stream once."""
        with self.catalog.read() as cur:
            if schema is None:
                rows = cur.execute("SELECT schema_name, table_name, spec FROM mk_tables")
            else:
                rows = cur.execute(
                    "SELECT schema_name, table_name, spec FROM mk_tables WHERE schema_name = ?", (schema,)
                )
        out = []
        for s, t, spec_json in sorted(rows):
            out.append(SchemaTableName(schema=s, table=t))
            if not _is_stream(spec_json):
                out.append(SchemaTableName(schema=s, table=t + self.config.journal_suffix))
        return out

    def list_companion_tables(
        self, *, session: ConnectorSession, schema: str | None
    ) -> Mapping[SchemaTableName, SchemaTableName]:
        """Each table's journal (``<table>_journal``), mapped to the table."""
        suffix = self.config.journal_suffix
        names = self.list_tables(session=session, schema=schema)
        listed = set(names)
        out = {}
        for name in names:
            base = SchemaTableName(schema=name.schema, table=name.table[: -len(suffix)])
            if suffix and name.table.endswith(suffix) and base.table and base in listed:
                out[name] = base
        return out

    def _table_row(self, cur: Cursor, schema: str, name: str) -> tuple[Any, ...] | None:
        rows = cur.execute(
            "SELECT table_id, location, spec, current_seq, schema_seq FROM mk_tables "
            "WHERE schema_name = ? AND table_name = ?",
            (schema, name),
        )
        return rows[0] if rows else None

    def _lookup(self, cur: Cursor, table: SchemaTableName) -> tuple[tuple[Any, ...], str, SchemaTableName] | None:
        """The catalog row of a logical table or of a journal table (``kind`` 'logical' or 'journal'), and the
        logical table's name; None when neither exists."""
        row = self._table_row(cur, table.schema, table.table)
        if row is not None:
            return row, "logical", table
        suffix = self.config.journal_suffix
        if suffix and table.table.endswith(suffix) and len(table.table) > len(suffix):
            logical = SchemaTableName(schema=table.schema, table=table.table[: -len(suffix)])
            row = self._table_row(cur, logical.schema, logical.table)
            if row is not None and not _is_stream(row[2]):  # a stream has no journal to read or write raw
                return row, "journal", logical
        return None

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        """A handle pinned to the latest version, or to ``version`` (time travel: read-only); None when the table
        does not exist."""
        with self.catalog.read() as cur:
            found = self._lookup(cur, table)
            if found is None:
                return None
            (table_id, location, spec_json, current_seq, schema_seq), kind, logical = found
            seq = current_seq
            if version is not None:
                seq = self._resolve_version(cur, table_id, table, current_seq, version)
                spec_json = self._spec_at(cur, table_id, seq) or spec_json  # the columns that version had
        return JournalTableHandle(
            table=table,
            table_id=table_id,
            kind=kind,
            logical=logical,
            snapshot_seq=seq,
            spec=TableSpec.from_json(spec_json),
            location=location,
            time_travel=version is not None,
            schema_seq=schema_seq,
        )

    def _spec_at(self, cur: Cursor, table_id: int, seq: int) -> str | None:
        """The table's definition (``TableSpec`` JSON) as of version ``seq``: the last one recorded at or before
        it, the first one recorded for an earlier version (a column added before definitions were recorded), or
        None when the definition never changed (``mk_tables.spec`` is the only one)."""
        rows = cur.execute(
            "SELECT spec FROM mk_table_specs WHERE table_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
            (table_id, seq),
        )
        if not rows:
            rows = cur.execute("SELECT spec FROM mk_table_specs WHERE table_id = ? ORDER BY seq LIMIT 1", (table_id,))
        return str(rows[0][0]) if rows else None

    def _record_spec(self, cur: Cursor, table_id: int, spec: TableSpec, seq: int) -> None:
        """Inside a write transaction, with the commit of version ``seq``: ``spec`` becomes the table's definition
        from ``seq`` on (``schema_seq``); the definition it replaces is recorded first if it never was, so time
        travel to an earlier version keeps reading that version's columns."""
        rows = cur.execute("SELECT spec, schema_seq FROM mk_tables WHERE table_id = ?", (table_id,))
        if not rows:
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, "Table was dropped")
        old_json, old_seq = rows[0]
        if not cur.execute("SELECT COUNT(*) FROM mk_table_specs WHERE table_id = ?", (table_id,))[0][0]:
            cur.execute(
                "INSERT INTO mk_table_specs (table_id, seq, spec) VALUES (?, ?, ?)", (table_id, old_seq, old_json)
            )
        text = spec.to_json()
        cur.execute("INSERT INTO mk_table_specs (table_id, seq, spec) VALUES (?, ?, ?)", (table_id, seq, text))
        cur.execute("UPDATE mk_tables SET spec = ?, schema_seq = ? WHERE table_id = ?", (text, seq, table_id))

    def _resolve_version(
        self, cur: Cursor, table_id: int, table: SchemaTableName, current_seq: int, version: TableVersion
    ) -> int:
        if version.version is not None:
            seq = int(version.version)
            if seq < 0 or seq > current_seq:
                raise MergekitError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"Version {seq} of table {table} does not exist (latest is {current_seq})",
                )
        elif version.timestamp is not None:
            rows = cur.execute(
                "SELECT MAX(seq) FROM mk_commits WHERE table_id = ? AND committed_at <= ?",
                (table_id, _to_us(version.timestamp)),
            )
            if not rows or rows[0][0] is None:
                raise MergekitError(
                    ErrorCode.INVALID_ARGUMENTS,
                    f"Table {table} did not exist at {version.timestamp.isoformat()}",
                )
            seq = int(rows[0][0])
        else:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, "A table version needs a version or a timestamp")
        gone = cur.execute(
            "SELECT COUNT(*) FROM mk_files WHERE table_id = ? AND added_seq <= ? "
            "AND (removed_seq IS NULL OR removed_seq > ?) AND vacuumed = 1",
            (table_id, seq, seq),
        )
        if gone[0][0]:
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS, f"Version {seq} of table {table} is no longer available (vacuumed)"
            )
        return seq

    def get_changes_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, from_version: int, to_version: int | None = None
    ) -> ConnectorTableHandle:
        """The change feed of commits ``from_version``..``to_version`` (inclusive; None: the latest).

        Its scan yields the table's visible columns plus ``_change_type`` ('insert' | 'update' | 'delete'),
        ``_commit_version`` and ``_commit_timestamp``. An update that moves a row to another key appears as
        a delete of the old key and an insert of the new one.
        """
        handle = self.get_table_handle(session=session, table=table)
        if handle is None:
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{table}' does not exist")
        assert isinstance(handle, JournalTableHandle)
        to_seq = handle.snapshot_seq if to_version is None else int(to_version)
        if from_version < 0 or to_seq > handle.snapshot_seq or from_version > to_seq:
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Invalid change range {from_version}..{to_seq} for table {table} (latest version is "
                f"{handle.snapshot_seq})",
            )
        return attrs.evolve(handle, kind="changes", from_seq=int(from_version), snapshot_seq=to_seq)

    def get_table_history(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> Sequence[TableCommit]:
        """Every commit in ``mk_commits`` up to the handle's snapshot, newest first; ``metrics`` is the summary
        the commit recorded (rows inserted/updated/deleted and files for a write) plus ``files_added``."""
        h = self._handle(table_handle)
        with self.catalog.read() as cur:
            rows = cur.execute(
                "SELECT seq, committed_at, operation, files_added, summary FROM mk_commits "
                "WHERE table_id = ? AND seq <= ? ORDER BY seq DESC",
                (h.table_id, h.snapshot_seq),
            )
        return [
            TableCommit(
                version=int(seq),
                committed_at=dt.datetime.fromtimestamp(committed_at / 1_000_000, dt.UTC),
                operation=str(operation),
                metrics={"files_added": int(files_added), **(json.loads(summary) if summary else {})},
            )
            for seq, committed_at, operation, files_added, summary in rows
        ]

    # ---- metadata ----------------------------------------------------------------------------------------

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
        """The columns of the handle's kind: the logical table (its version field hidden), the journal (both
        version fields, in the journal's declared order) or the change feed (plus the change columns)."""
        h = self._handle(table_handle)
        spec = h.spec
        version_col = ColumnMetadata(name=spec.version_field, type=spec.version_arrow_type, nullable=False)
        subsequent_col = ColumnMetadata(name=spec.subsequent_field, type=spec.version_arrow_type)
        properties = {
            "version_type": spec.version_type,
            "key": list(spec.key),
            "snapshot_version": h.snapshot_seq,
        }
        if h.kind == "logical":
            columns = [*spec.columns, attrs.evolve(version_col, hidden=True)]
            key = () if spec.hidden_key else spec.key
        elif h.kind == "journal":
            by_name = {c.name: c for c in spec.columns}
            by_name[spec.version_field] = version_col
            by_name[spec.subsequent_field] = subsequent_col
            columns = [by_name[n] for n in spec.journal_order]
            if spec.hidden_key:
                columns.append(spec.column(HIDDEN_ROW_ID))
            key = ()
        else:
            columns = [
                *spec.visible,
                ColumnMetadata(name=CHANGE_TYPE, type=pa.string(), nullable=False),
                ColumnMetadata(name=COMMIT_VERSION, type=pa.int64(), nullable=False),
                ColumnMetadata(name=COMMIT_TIMESTAMP, type=pa.timestamp("us", tz="UTC"), nullable=False),
            ]
            key = ()
        checks = spec.check_constraints if h.kind != "changes" else ()  # the change feed is read-only
        change_stream = spec.change_stream and h.kind == "logical" and not h.time_travel
        if spec.change_stream:
            properties[CHANGE_STREAM_PROPERTY] = True
        return ConnectorTableMetadata(
            table=h.table,
            columns=columns,
            primary_key=key,
            properties=properties,
            check_constraints=checks,
            stream=spec.stream if h.kind == "logical" else None,
            change_stream=CHANGE_STREAM if change_stream else None,
        )

    def _handle(self, table_handle: ConnectorTableHandle) -> JournalTableHandle:
        if not isinstance(table_handle, JournalTableHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a journal table handle: {table_handle!r}")
        return table_handle

    # ---- the snapshot's files -----------------------------------------------------------------------------

    def files_at(self, cur: Cursor, table_id: int, seq: int) -> list[FileRow]:
        """The files of version ``seq`` of a table: added at or before it and not removed by it, in file id order."""
        # live files and files removed after ``seq``, each by a range of the index ``mk_files_live``: the cost
        # follows the snapshot's files, not every file the table ever had
        select = f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} AND f.table_id = ? AND f.added_seq <= ? AND "
        rows = cur.execute(select + "f.removed_seq IS NULL", (table_id, seq))
        rows += cur.execute(select + "f.removed_seq > ?", (table_id, seq, seq))
        return sorted((_file_row(r) for r in rows), key=lambda f: f.file_id)
