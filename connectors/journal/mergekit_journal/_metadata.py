"""Driver side of the journal connector: names, DDL, snapshots, split planning and the commit protocol.

Commit protocol (optimistic, like Iceberg's): sinks write files without versions; ``finish_merge``

1. checks primary keys against the statement's snapshot (only keys the statement inserts, only files whose
   key range can hold them),
2. checks every commit made after the snapshot for a key this statement also changes
   (``TRANSACTION_CONFLICT``), reading only the files those commits added,
3. takes the catalog's write lock, verifies no commit slipped in since step 2 (else repeats step 2 for the
   new commits) and records the files under the next version, in one transaction.

The lock is held only for step 3, so writers on disjoint keys never wait on each other's file reads.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ALL,
    AntiJoin,
    ColumnHandle,
    ColumnMetadata,
    ConnectorMergeTableHandle,
    ConnectorMetadata,
    ConnectorResolvedIndex,
    ConnectorSession,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
    ConnectorTableLayout,
    ConnectorTableMetadata,
    Constraint,
    NativeScan,
    NativeScanUnion,
    RowChangeParadigm,
    SchemaTableName,
    TableVersion,
)

from ._catalog import Catalog, Cursor
from ._config import BIGINT, JournalConfig, normalize_version_type
from ._handles import (
    ARRIVAL_OPS,
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    HIDDEN_ROW_ID,
    OP_COLUMN,
    ROW_KEY,
    SUBSEQUENT_COLUMN,
    TOMBSTONE_OPS,
    FileRef,
    JournalFragment,
    JournalMergeHandle,
    JournalSplit,
    JournalTableHandle,
    TableSpec,
    decode_value,
    encode_value,
)
from ._storage import KeyFilter, concat, filesystem, join_path, live_rows, may_hold, read_versioned

__all__ = ["JournalMetadata", "JournalSplitManager", "FileRow"]

_FILES_PER_PLAIN_SPLIT = 4
# A read filtered by key values (``keyed_splits``) decodes a file fast and hands Spark few rows, so a task's
# fixed cost (tens of ms for a Python task) dominates: larger splits.
_FILES_PER_KEYED_SPLIT = 16
_ROWS_PER_KEYED_SPLIT = 5_000_000
_ROWS_PER_PLAIN_SPLIT = 1_000_000  # a large file gets a split (a Spark task) of its own: a bulk load is few big files
# From this many wanted keys on, the deltas' key columns are probed against them at once (``_delta_hits``).
_PROBE_DELTAS_AT_ONCE = 4096


# Deltas of at most this many rows are broadcast to the base scan's anti join (their keys: tens of MB).
_BROADCAST_DELTA_ROWS = 4_000_000

# From this many delta rows on (single-column keys), base files whose rows the deltas supersede are read by
# page sources that drop the superseded keys themselves, instead of by Spark with an anti join: Spark builds
# and broadcasts a hash table of the keys on the driver and probes it with every base row, and once the table
# outgrows the CPU caches that costs more than decoding the files in Python. After 100 MERGEs of 10k rows (600k
# superseding keys) the anti join cost 1.7 s of a 3.4 s scan of 10M rows; pyarrow reads them, drops the
# keys and hands them to Spark in 2.2 s.
_EXCLUDE_IN_PAGE_SOURCES_ROWS = 200_000
# The driver reads those keys (8 bytes each for a BIGINT): beyond this many delta rows, Spark's anti join again.
_EXCLUDE_IN_PAGE_SOURCES_MAX_ROWS = 20_000_000

# Spark SQL over a delta file's columns: rows that may supersede a base row (see ``ARRIVAL_OPS``).
_SUPERSEDING_ROWS = f"coalesce(`{OP_COLUMN}` NOT IN {tuple(ARRIVAL_OPS)}, true)"

# A resolve group of more rows than this is resolved by several tasks, each for a share of the keys. Every
# bucket reads all the group's files, so the count is capped: parallelism against read amplification. (100
# commits of 10k-row MERGEs leave a 1M-row group: two tasks instead of one cut the full read by ~0.25 s.)
_ROWS_PER_BUCKET = 500_000
_MAX_BUCKETS = 4


def _bucketable(spec: TableSpec) -> bool:
    """Keys the page source can bucket cheaply: a single integer column."""
    return len(spec.key) == 1 and pa.types.is_integer(spec.column(spec.key[0]).type)


def _pack_plain(
    files: Sequence[FileRow], max_files: int = _FILES_PER_PLAIN_SPLIT, max_rows: int = _ROWS_PER_PLAIN_SPLIT
) -> list[list[FileRow]]:
    """Group plain files into splits of at most ``max_files`` files and about ``max_rows`` rows, so small
    files share a task and big ones read in parallel."""
    groups: list[list[FileRow]] = []
    current: list[FileRow] = []
    rows = 0
    for f in files:
        if current and (len(current) >= max_files or rows + f.row_count > max_rows):
            groups.append(current)
            current, rows = [], 0
        current.append(f)
        rows += f.row_count
    if current:
        groups.append(current)
    return groups


def _now_us() -> int:
    return int(time.time() * 1_000_000)


def _to_us(ts: dt.datetime) -> int:
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

    def ref(self) -> FileRef:
        return FileRef(
            path=self.path,
            seq=self.added_seq,
            row_version=self.row_version,
            explicit_versions=self.explicit_versions,
            committed_at=self.committed_at,
        )


_FILE_COLUMNS = (
    "f.file_id, f.path, f.added_seq, f.removed_seq, c.row_version, c.committed_at, f.explicit_versions, "
    "f.supersedes, f.key_min, f.key_max, f.min_version, f.max_version, f.row_count, f.size_bytes, f.vacuumed"
)
_FILE_JOIN = "FROM mk_files f JOIN mk_commits c ON c.table_id = f.table_id AND c.seq = f.added_seq"


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
    )


def _overlaps(a_lo: Any, a_hi: Any, b_lo: Any, b_hi: Any) -> bool:
    """Whether two key ranges may share a key; unknown bounds (None) or incomparable values may."""
    if a_lo is None or a_hi is None or b_lo is None or b_hi is None:
        return True
    try:
        return not (a_hi < b_lo or b_hi < a_lo)
    except TypeError:
        return True


class _Pruner:
    """Whether a file's key range can hold a row a constraint allows (on the first key column). Many
    allowed values (a MERGE source's keys) are sorted once and probed by bisection per file."""

    def __init__(self, first_key: str, constraint: Constraint) -> None:
        values = constraint.equalities.get(first_key)
        self._values: list[Any] | None = None
        self._ordered = False
        if values is not None:
            self._values = [v for v in values if v is not None]
            try:
                self._values.sort()
                self._ordered = True
            except TypeError:
                pass
        self._bounds = constraint.ranges.get(first_key)

    def __call__(self, f: FileRow) -> bool:
        if f.key_min is None or f.key_max is None:
            return True
        try:
            if self._values is not None:
                if self._ordered:
                    if not may_hold(self._values, f.key_min, f.key_max):
                        return False
                elif not any(f.key_min <= v <= f.key_max for v in self._values):
                    return False
            if self._bounds is not None:
                lo, hi = self._bounds
                if lo is not None and f.key_max < lo:
                    return False
                if hi is not None and f.key_min > hi:
                    return False
        except TypeError:
            return True
        return True


def _key_values(spec: TableSpec, constraint: Constraint) -> pa.Array | None:
    """The values a constraint allows for a single-column key (sorted, distinct, of the key's type), or
    None when there is no such constraint or its values do not convert to the key's type."""
    if len(spec.key) != 1:
        return None
    key_type = spec.column(spec.key[0]).type
    try:
        equal = None
        if spec.key[0] in constraint.equalities:
            values = [v for v in constraint.equalities[spec.key[0]] if v is not None]
            equal = pc.unique(pa.array(values, type=key_type)).sort()
        array = constraint.value_sets.get(spec.key[0])
        if array is None:
            return equal
        # sorted and distinct already (the SPI's contract); a safe cast keeps the order
        array = array if array.type == key_type else array.cast(key_type)
        return array if equal is None else array.filter(pc.is_in(array, value_set=equal))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, LookupError, TypeError, ValueError):
        return None


def _values_in_range(values: pa.Array, group: Sequence[FileRow]) -> pa.Array:
    """The ``values`` (of the first key column) that lie within the key range of ``group``'s files; all of
    them when the files' bounds are unknown or not comparable with the values."""
    lows = [f.key_min for f in group]
    highs = [f.key_max for f in group]
    if None in lows or None in highs:
        return values
    try:
        low, high = min(lows), max(highs)
        return values.filter(
            pc.and_(
                pc.greater_equal(values, pa.scalar(low, values.type)),
                pc.less_equal(values, pa.scalar(high, values.type)),
            )
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        return values


def _base_prefix(files: Sequence[FileRow]) -> int:
    """How many of ``files`` (in commit order) form the *base*: the longest prefix in which no file
    supersedes a row of an earlier one (bulk loads, inserts, compaction output). Base files hold only latest
    versions except for keys that later files (the *deltas*) change."""
    base: list[FileRow] = []
    for g in files:
        if g.explicit_versions and g.supersedes:
            break  # raw journal rows: versions only a resolution can order
        if g.supersedes and any(
            g.max_version > f.min_version and _overlaps(f.key_min, f.key_max, g.key_min, g.key_max) for f in base
        ):
            break
        base.append(g)
    return len(base)


def _native_type(t: pa.DataType) -> bool:
    """Types Spark's Parquet reader returns as mergekit expects them."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date32(t)
        or (pa.types.is_timestamp(t) and t.unit == "us")
    )


def _split_files(files: Sequence[FileRow]) -> tuple[list[FileRow], list[list[FileRow]]]:
    """Partition a snapshot's files into plain files and groups that need version resolution.

    A file is *dirty* when a later file that supersedes rows (updates, deletes, key moves, raw journal
    rows) overlaps its key range. All versions of a key live in files whose ranges contain that key, so
    the dirty files plus the files superseding them, grouped by overlapping key ranges, can each be
    resolved on their own; every other file holds only latest versions (inserts are checked against live
    keys, so an insert never hides an older live row).
    """
    superseders = [g for g in files if g.supersedes]
    if not superseders:
        return list(files), []
    resolve: dict[int, FileRow] = {}
    for f in files:
        hits = [
            g
            for g in superseders
            if g.file_id != f.file_id
            and g.max_version > f.min_version
            and _overlaps(f.key_min, f.key_max, g.key_min, g.key_max)
        ]
        if hits:
            resolve[f.file_id] = f
            for g in hits:
                resolve[g.file_id] = g
    plain = [f for f in files if f.file_id not in resolve]
    # Group the resolution set into components of overlapping key ranges (a sweep over sorted ranges).
    groups: list[list[FileRow]] = []
    unknown = [f for f in resolve.values() if f.key_min is None or f.key_max is None]
    known = [f for f in resolve.values() if f.key_min is not None and f.key_max is not None]
    try:
        known.sort(key=lambda f: f.key_min)
    except TypeError:
        unknown, known = list(resolve.values()), []
    hi: Any = None
    for f in known:
        if groups and hi is not None and not f.key_min > hi:
            groups[-1].append(f)
            hi = max(hi, f.key_max)
        else:
            groups.append([f])
            hi = f.key_max
    if unknown:
        merged = [f for g in groups for f in g] + unknown
        groups = [merged]
    return plain, groups


def logical_splits(
    files: Sequence[FileRow],
    spec: TableSpec,
    constraint: Constraint,
    key_values: pa.Array | None = None,
    **label: Any,
) -> list[JournalSplit]:
    """Splits that read ``files`` as the logical table. ``key_values``: only rows with these keys are
    wanted (the splits filter by them, so a resolve group is small and needs no buckets)."""
    plain, groups = _split_files(files)
    keep = _Pruner(spec.key[0], constraint)
    plain = [f for f in plain if keep(f)]
    splits = [
        JournalSplit(mode="plain", files=[f.ref() for f in group], key_values=key_values, **label)
        for group in _pack_plain(plain)
    ]
    for group in groups:
        # Pruning by the key is safe here too: every version of a key shares that key.
        kept = [f for f in group if keep(f)]
        if not kept:
            continue
        refs = [f.ref() for f in kept]
        rows = sum(f.row_count for f in kept)
        buckets = min(_MAX_BUCKETS, -(-rows // _ROWS_PER_BUCKET)) if _bucketable(spec) else 1
        if buckets <= 1 or key_values is not None:
            splits.append(JournalSplit(mode="resolve", files=refs, key_values=key_values, **label))
        else:
            splits.extend(
                JournalSplit(mode="resolve", files=refs, bucket=(i, buckets), **label) for i in range(buckets)
            )
    return splits


def keyed_splits(warehouse: str, spec: TableSpec, files: Sequence[FileRow], values: pa.Array) -> list[JournalSplit]:
    """Splits reading only the rows whose (single) key is one of ``values``: the keys of a MERGE source
    the engine collected, or a ``WHERE key IN (...)``. Base files are read plainly (no resolution), each
    split filtered by the wanted keys its files' ranges can hold, minus the keys that have newer
    versions in the deltas; those resolve in the deltas alone. Which wanted keys the deltas hold is read
    on the driver from the deltas' key columns (only files whose key range can hold a wanted key). Cost:
    the wanted rows' row groups, not the table."""
    first = spec.key[0]
    keys = KeyFilter(first, values)
    ordered = sorted(files, key=lambda f: (f.added_seq, f.file_id))
    cut = _base_prefix(ordered)
    base = [f for f in ordered[:cut] if keys.may_hold(f.key_min, f.key_max)]
    deltas = [f for f in ordered[cut:] if keys.may_hold(f.key_min, f.key_max)]
    hits, touched = _delta_hits(warehouse, spec, deltas, keys)
    splits: list[JournalSplit] = []
    if hits:
        in_deltas = pc.unique(pa.chunked_array(hits).combine_chunks()).sort()
        values = values.filter(pc.invert(pc.is_in(values, value_set=in_deltas)))
        splits.extend(logical_splits(touched, spec, ALL, key_values=in_deltas))
    for group in _pack_plain(base, _FILES_PER_KEYED_SPLIT, _ROWS_PER_KEYED_SPLIT):
        wanted = _values_in_range(values, group)
        if len(wanted):
            splits.append(JournalSplit(mode="plain", files=[f.ref() for f in group], key_values=wanted))
    return splits


def _delta_hits(
    warehouse: str, spec: TableSpec, deltas: Sequence[FileRow], keys: KeyFilter
) -> tuple[list[pa.ChunkedArray], list[FileRow]]:
    """The wanted keys each delta holds, and the deltas that hold any, read on the driver. A few wanted
    keys: each file's row groups that can hold one, filtered. Many (a MERGE source's value set): every
    delta's key column, probed at once, as a hash table of a million keys costs more to build (~50 ms)
    than a delta's key column to read, and a table after 100 MERGEs has 100 deltas."""
    first = spec.key[0]
    if len(keys.values) < _PROBE_DELTAS_AT_ONCE:
        found = [read_versioned(warehouse, spec, f.ref(), [first], keys=keys).column(first) for f in deltas]
        pairs = [(column, f) for column, f in zip(found, deltas, strict=True) if len(column)]
    else:
        read = [(read_versioned(warehouse, spec, f.ref(), [first]).column(first), f) for f in deltas]
        read = [(column, f) for column, f in read if len(column)]
        if not read:
            return [], []
        everything = pa.chunked_array([chunk for column, _ in read for chunk in column.chunks], read[0][0].type)
        mask = keys.mask(everything)
        pairs = []
        start = 0
        for column, f in read:
            found = column.filter(mask.slice(start, len(column)))
            start += len(column)
            if len(found):
                pairs.append((found, f))
    return [column for column, _ in pairs], [f for _, f in pairs]


class JournalMetadata(ConnectorMetadata):
    """One catalog's metadata. ``catalog`` is the SQLite or PostgreSQL catalog; ``config`` the options."""

    def __init__(self, *, catalog_name: str, config: JournalConfig, catalog: Catalog) -> None:
        self.catalog_name = catalog_name
        self.config = config
        self.catalog = catalog

    # ---- names ------------------------------------------------------------------------------------------

    def list_schemas(self, *, session: ConnectorSession) -> Sequence[str]:
        with self.catalog.read() as cur:
            names = {r[0] for r in cur.execute("SELECT schema_name FROM mk_schemas")}
            names |= {r[0] for r in cur.execute("SELECT DISTINCT schema_name FROM mk_tables")}
        return sorted(names | {"default"})

    def create_schema(self, *, session: ConnectorSession, schema: str, properties: Mapping[str, Any]) -> None:
        if schema in self.list_schemas(session=session):
            raise MergekitError(ErrorCode.SCHEMA_ALREADY_EXISTS, f"Schema '{schema}' already exists")
        with self.catalog.write() as cur:
            cur.execute("INSERT INTO mk_schemas (schema_name) VALUES (?)", (schema,))

    def list_tables(self, *, session: ConnectorSession, schema: str | None) -> Sequence[SchemaTableName]:
        with self.catalog.read() as cur:
            if schema is None:
                rows = cur.execute("SELECT schema_name, table_name FROM mk_tables")
            else:
                rows = cur.execute("SELECT schema_name, table_name FROM mk_tables WHERE schema_name = ?", (schema,))
        out = []
        for s, t in sorted(rows):
            out.append(SchemaTableName(schema=s, table=t))
            out.append(SchemaTableName(schema=s, table=t + self.config.journal_suffix))
        return out

    def _table_row(self, cur: Cursor, schema: str, name: str) -> tuple[Any, ...] | None:
        rows = cur.execute(
            "SELECT table_id, location, spec, current_seq, schema_seq FROM mk_tables "
            "WHERE schema_name = ? AND table_name = ?",
            (schema, name),
        )
        return rows[0] if rows else None

    def _lookup(self, cur: Cursor, table: SchemaTableName) -> tuple[tuple[Any, ...], str, SchemaTableName] | None:
        row = self._table_row(cur, table.schema, table.table)
        if row is not None:
            return row, "logical", table
        suffix = self.config.journal_suffix
        if suffix and table.table.endswith(suffix) and len(table.table) > len(suffix):
            logical = SchemaTableName(schema=table.schema, table=table.table[: -len(suffix)])
            row = self._table_row(cur, logical.schema, logical.table)
            if row is not None:
                return row, "journal", logical
        return None

    def get_table_handle(
        self, *, session: ConnectorSession, table: SchemaTableName, version: TableVersion | None = None
    ) -> ConnectorTableHandle | None:
        with self.catalog.read() as cur:
            found = self._lookup(cur, table)
            if found is None:
                return None
            (table_id, location, spec_json, current_seq, schema_seq), kind, logical = found
            seq = current_seq
            if version is not None:
                seq = self._resolve_version(cur, table_id, table, current_seq, version)
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

    # ---- metadata ----------------------------------------------------------------------------------------

    def get_table_metadata(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableMetadata:
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
        return ConnectorTableMetadata(table=h.table, columns=columns, primary_key=key, properties=properties)

    def _handle(self, table_handle: ConnectorTableHandle) -> JournalTableHandle:
        if not isinstance(table_handle, JournalTableHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"Not a journal table handle: {table_handle!r}")
        return table_handle

    # ---- DDL ----------------------------------------------------------------------------------------------

    def create_table(
        self, *, session: ConnectorSession, table_metadata: ConnectorTableMetadata, ignore_existing: bool
    ) -> None:
        """``CREATE TABLE t (...)`` creates ``t`` and its journal ``t_journal``; ``CREATE TABLE t_journal``
        with both version fields (the seed's convention) creates the same pair from the journal's shape."""
        cfg = self.config
        name = table_metadata.table
        columns = [c for c in table_metadata.columns if not c.hidden]
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Duplicate column names in table {name}")
        suffix = cfg.journal_suffix
        journal_style = (
            suffix
            and name.table.endswith(suffix)
            and cfg.version_field in names
            and cfg.subsequent_version_field in names
        )
        version_type = cfg.version_type
        if journal_style:
            logical = SchemaTableName(schema=name.schema, table=name.table[: -len(suffix)])
            version_col = columns[names.index(cfg.version_field)]
            declared = version_col.type_name or (
                "bigint" if pa.types.is_integer(version_col.type) else "timestamp with time zone"
            )
            try:
                version_type = normalize_version_type(declared)
            except MergekitError:
                raise MergekitError(
                    ErrorCode.TYPE_MISMATCH,
                    f"Column '{cfg.version_field}' must be BIGINT or TIMESTAMP, not {declared}",
                ) from None
            journal_order = tuple(names)
            data_columns = [c for c in columns if c.name not in (cfg.version_field, cfg.subsequent_version_field)]
            declared_key = tuple(k for k in table_metadata.primary_key if k != cfg.version_field)
        else:
            logical = name
            for reserved in (cfg.version_field, cfg.subsequent_version_field):
                if reserved in names:
                    raise MergekitError(
                        ErrorCode.INVALID_ARGUMENTS,
                        f"Column name '{reserved}' is reserved for the journal's version fields",
                    )
            data_columns = columns
            journal_order = (*names, cfg.version_field, cfg.subsequent_version_field)
            declared_key = tuple(table_metadata.primary_key)
        listed, configured_key = cfg.declared_key(logical.table)
        key = declared_key or configured_key or ()
        if not key and listed:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"No primary key given for table: {logical.table}")
        data_names = [c.name for c in data_columns]
        for k in key:
            if k not in data_names:
                raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Key column '{k}' is not a column of table {logical}")
        hidden_key = not key
        stored = list(data_columns)
        if hidden_key:
            if HIDDEN_ROW_ID in data_names:
                raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Column name '{HIDDEN_ROW_ID}' is reserved")
            stored.append(ColumnMetadata(name=HIDDEN_ROW_ID, type=pa.string(), nullable=False, hidden=True))
            key = (HIDDEN_ROW_ID,)
        spec = TableSpec(
            columns=stored,
            key=key,
            hidden_key=hidden_key,
            version_field=cfg.version_field,
            subsequent_field=cfg.subsequent_version_field,
            version_type=version_type,
            journal_order=journal_order,
        )
        location = join_path(logical.schema, f"{logical.table}-{uuid.uuid4().hex[:12]}")
        now = _now_us()
        with self.catalog.write() as cur:
            if self._lookup(cur, logical) is not None or self._lookup(cur, name) is not None:
                if ignore_existing:
                    return
                raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{name}' already exists")
            table_id = cur.insert_returning_id(
                "INSERT INTO mk_tables (schema_name, table_name, location, spec, current_seq, last_row_version, "
                "last_committed_at, schema_seq, next_statement) VALUES (?, ?, ?, ?, 0, 0, ?, 0, 1)",
                (logical.schema, logical.table, location, spec.to_json(), now),
            )
            cur.execute(
                "INSERT INTO mk_commits (table_id, seq, row_version, committed_at, operation, merge_id, files_added, "
                "summary) VALUES (?, 0, 0, ?, 'create', NULL, 0, NULL)",
                (table_id, now),
            )

    def drop_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        h = self._handle(table_handle)
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            for t in ("mk_files", "mk_commits", "mk_tables"):
                cur.execute(f"DELETE FROM {t} WHERE table_id = ?", (h.table_id,))
        # The catalog no longer references the files, so readers cannot see them; remove them now.
        fs, base = filesystem(self.config.warehouse)
        try:
            fs.delete_dir(join_path(base, h.location))
        except (FileNotFoundError, OSError):
            pass

    def add_column(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, column: Any) -> None:
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot add a column to {h.table}")
        if not column.nullable:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                "A column added to a journal table must be nullable: existing versions have no value for it",
            )
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            row = self._table_row(cur, h.logical.schema, h.logical.table)
            if row is None:
                raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{h.logical}' does not exist")
            spec = TableSpec.from_json(row[2])
            if column.name in {c.name for c in spec.columns} | {spec.version_field, spec.subsequent_field}:
                raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{column.name}' already exists")
            data = [c for c in spec.columns if not c.hidden]
            hidden = [c for c in spec.columns if c.hidden]
            order = list(spec.journal_order)
            last_data = max(order.index(c.name) for c in data) if data else -1
            order.insert(last_data + 1, column.name)
            spec = attrs.evolve(spec, columns=[*data, column, *hidden], journal_order=order)
            seq = self._commit_meta(cur, h.table_id, "add_column")
            cur.execute(
                "UPDATE mk_tables SET spec = ?, schema_seq = ? WHERE table_id = ?", (spec.to_json(), seq, h.table_id)
            )

    def truncate_table(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> None:
        """Metadata only: the next version simply has no files (history and time travel keep them)."""
        h = self._handle(table_handle)
        if h.kind != "logical" or h.time_travel:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Cannot truncate {h.table}")
        with self.catalog.write(lock_table_id=h.table_id) as cur:
            seq = self._commit_meta(cur, h.table_id, "truncate")
            cur.execute(
                "UPDATE mk_files SET removed_seq = ? WHERE table_id = ? AND removed_seq IS NULL", (seq, h.table_id)
            )

    def _commit_meta(self, cur: Cursor, table_id: int, operation: str) -> int:
        """Record a commit without data files; returns its version."""
        rows = cur.execute(
            "SELECT current_seq, last_row_version, last_committed_at FROM mk_tables WHERE table_id = ?", (table_id,)
        )
        if not rows:
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, "Table was dropped")
        current, last_rv, last_at = rows[0]
        seq = current + 1
        committed_at = max(_now_us(), last_at + 1)
        cur.execute(
            "INSERT INTO mk_commits (table_id, seq, row_version, committed_at, operation, merge_id, files_added, "
            "summary) VALUES (?, ?, ?, ?, ?, NULL, 0, NULL)",
            (table_id, seq, last_rv, committed_at, operation),
        )
        cur.execute(
            "UPDATE mk_tables SET current_seq = ?, last_committed_at = ? WHERE table_id = ?",
            (seq, committed_at, table_id),
        )
        return seq

    # ---- snapshots and splits -------------------------------------------------------------------------

    def files_at(self, cur: Cursor, table_id: int, seq: int) -> list[FileRow]:
        rows = cur.execute(
            f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} WHERE f.table_id = ? AND f.added_seq <= ? "
            "AND (f.removed_seq IS NULL OR f.removed_seq > ?) ORDER BY f.file_id",
            (table_id, seq, seq),
        )
        return [_file_row(r) for r in rows]

    def get_native_scan(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint = ALL,
    ) -> NativeScanUnion | None:
        """The logical table as Spark's own Parquet scans plus page-source splits for the recent files.

        The snapshot's files in commit order are cut into a *base* (the longest prefix in which no file
        supersedes a row of an earlier one: bulk loads, inserts, compaction output) and the *deltas* after
        it. Base files hold only latest versions except for keys the deltas touch, so Spark reads them
        natively, drops deleted rows with a filter and the keys of the deltas with an anti join; the deltas
        (small, recent) resolve their versions in page sources as before. The latest version of a key is
        then a cheap anti join, not a window over the table's history; ``compact`` folds deltas into a base.

        When the constraint names the values of a single-column key (a MERGE source's keys, ``key IN``),
        page sources read only those keys' rows instead (``keyed_splits``): Spark's reader has no late
        materialisation, so it would decode every column of every row to keep a few.
        """
        h = self._handle(table_handle)
        spec = h.spec
        if h.kind != "logical":
            return None
        values = _key_values(spec, constraint)
        if values is not None:
            with self.catalog.read() as cur:
                files = self.files_at(cur, h.table_id, h.snapshot_seq)
            # exactly the rows with those keys: the engine need not filter by them again
            return NativeScanUnion(
                scans=(), splits=keyed_splits(self.config.warehouse, spec, files, values), enforced=spec.key
            )
        if "://" in self.config.warehouse:
            return None
        stored = {c.name: c.type for c in spec.columns}
        if any(c.name not in stored and c.name != ROW_KEY for c in columns):
            return None  # version columns of the logical table: per-file values, read through splits
        if any(not _native_type(t) for t in stored.values()):
            return None
        with self.catalog.read() as cur:
            files = self.files_at(cur, h.table_id, h.snapshot_seq)
        files.sort(key=lambda f: (f.added_seq, f.file_id))
        cut = _base_prefix(files)
        deltas = files[cut:]
        keep = _Pruner(spec.key[0], constraint)
        base = [f for f in files[:cut] if keep(f)]
        wanted = dict.fromkeys([*spec.key, *(c.name for c in columns if c.name != ROW_KEY)])
        file_schema = pa.schema(
            [pa.field(n, stored[n]) for n in wanted]
            + [pa.field(OP_COLUMN, pa.int8()), pa.field(SUBSEQUENT_COLUMN, pa.int64())]
        )
        live = f"`{SUBSEQUENT_COLUMN}` IS NULL AND coalesce(`{OP_COLUMN}` NOT IN {tuple(TOMBSTONE_OPS)}, true)"
        projections = {ROW_KEY: "named_struct(" + ", ".join(f"'{k}', `{k}`" for k in spec.key) + ")"}

        def native(group: Sequence[FileRow], anti_join: AntiJoin | None = None) -> NativeScan:
            return NativeScan(
                format="parquet",
                paths=[self._file_uri(f.path) for f in group],
                schema=file_schema,
                row_filter=live,
                projections=projections,
                anti_join=anti_join,
            )

        touched = [f for f in base if any(_overlaps(f.key_min, f.key_max, d.key_min, d.key_max) for d in deltas)]
        untouched = [f for f in base if f not in touched]
        splits: list[JournalSplit] = []
        delta_rows = sum(d.row_count for d in deltas)
        # Raw journal rows carry their own versions: any of them, even an INSERT, can supersede a base row.
        raw = any(d.explicit_versions for d in deltas)
        if (
            touched
            and len(spec.key) == 1
            and _EXCLUDE_IN_PAGE_SOURCES_ROWS <= delta_rows <= _EXCLUDE_IN_PAGE_SOURCES_MAX_ROWS
        ):
            superseded = self._superseding_keys(spec, deltas, raw=raw)
            for group in _pack_plain(touched):
                excluded = _values_in_range(superseded, group)
                if len(excluded):
                    splits.append(
                        JournalSplit(
                            mode="plain", files=[f.ref() for f in group], key_values=excluded, exclude_keys=True
                        )
                    )
                else:
                    untouched.extend(group)
            touched = []
        scans = [native(untouched)]
        if touched:
            key_schema = pa.schema([pa.field(k, stored[k]) for k in spec.key] + [pa.field(OP_COLUMN, pa.int8())])
            # Only deltas' rows that can supersede a base row: not arrivals of keys that were not live (40% of
            # a MERGE's rows in the bench: fewer keys to broadcast and a smaller hash table to probe 10M rows
            # against).
            delta_keys = NativeScan(
                format="parquet",
                paths=[self._file_uri(d.path) for d in deltas],
                schema=key_schema,
                row_filter=None if raw else _SUPERSEDING_ROWS,
            )
            broadcast = delta_rows <= _BROADCAST_DELTA_ROWS
            scans.append(native(touched, AntiJoin(keys=spec.key, scan=delta_keys, broadcast=broadcast)))
        return NativeScanUnion(scans=scans, splits=[*splits, *logical_splits(deltas, spec, constraint)])

    def get_value_set_columns(self, *, session: ConnectorSession, table_handle: ConnectorTableHandle) -> frozenset[str]:
        """A single-column key: a value set of it sends the read to page sources that read only those keys'
        rows (``keyed_splits``)."""
        h = self._handle(table_handle)
        return frozenset(h.spec.key) if h.kind == "logical" and len(h.spec.key) == 1 else frozenset()

    def resolve_index(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        index_columns: Sequence[ColumnHandle],
        output_columns: Sequence[ColumnHandle],
    ) -> ConnectorResolvedIndex | None:
        """An index on a single-column key of the logical table: its lookups read what a keyed scan reads
        (``keyed_splits``), planned in the task. Cut points between the base files' key ranges (see
        ``partition_points``) send each file's keys to one task."""
        from ._index import JournalIndexHandle, key_range, partition_points

        h = self._handle(table_handle)
        if h.kind != "logical" or len(h.spec.key) != 1 or [c.name for c in index_columns] != list(h.spec.key):
            return None
        with self.catalog.read() as cur:
            files = self.files_at(cur, h.table_id, h.snapshot_seq)
        files.sort(key=lambda f: (f.added_seq, f.file_id))
        points = partition_points(files[: _base_prefix(files)])
        return ConnectorResolvedIndex(
            index_handle=JournalIndexHandle(table_handle=h, files=files),
            partition_points=points,
            key_range=key_range(files),
        )

    def _superseding_keys(self, spec: TableSpec, deltas: Sequence[FileRow], *, raw: bool) -> pa.Array:
        """The distinct values (sorted) of the single key column over the deltas' rows that can supersede a
        base row (not arrivals, see ``ARRIVAL_OPS``, unless ``raw``: the deltas hold raw journal rows), read on
        the driver: key and operation columns only."""
        first = spec.key[0]
        tables = [read_versioned(self.config.warehouse, spec, d.ref(), [first]) for d in deltas]
        found = concat(tables)
        if found is None or not found.num_rows:
            return pa.array([], spec.column(first).type)
        keys = found.column(first)
        if not raw:
            arrival = pc.is_in(found.column(OP_COLUMN), value_set=pa.array(ARRIVAL_OPS, pa.int8()))
            keys = keys.filter(pc.invert(pc.fill_null(arrival, False)))  # no operation recorded: counts
        return pc.unique(keys.combine_chunks()).drop_null().sort()

    def _file_uri(self, path: str) -> str:
        _, base = filesystem(self.config.warehouse)
        return "file://" + join_path(os.path.abspath(base), path)

    def get_splits(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle, constraint: Constraint
    ) -> list[ConnectorSplit]:
        h = self._handle(table_handle)
        spec = h.spec
        with self.catalog.read() as cur:
            if h.kind == "logical":
                return list(logical_splits(self.files_at(cur, h.table_id, h.snapshot_seq), spec, constraint))
            if h.kind == "journal":
                keep = _Pruner(spec.key[0], constraint)
                files = [f for f in self.files_at(cur, h.table_id, h.snapshot_seq) if keep(f)]
                return [JournalSplit(mode="journal", files=[f.ref()]) for f in files]
            return list(self._change_splits(cur, h, constraint))

    def _change_splits(self, cur: Cursor, h: JournalTableHandle, constraint: Constraint) -> list[JournalSplit]:
        assert h.from_seq is not None
        commits = cur.execute(
            "SELECT seq, operation, committed_at, files_added FROM mk_commits WHERE table_id = ? AND seq >= ? "
            "AND seq <= ? ORDER BY seq",
            (h.table_id, h.from_seq, h.snapshot_seq),
        )
        splits: list[JournalSplit] = []
        keep = _Pruner(h.spec.key[0], constraint)
        for seq, operation, committed_at, files_added in commits:
            if operation in ("write", "raw"):
                files = [
                    _file_row(r)
                    for r in cur.execute(
                        f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} WHERE f.table_id = ? AND f.added_seq = ?",
                        (h.table_id, seq),
                    )
                ]
                if len(files) != files_added or any(f.vacuumed for f in files):
                    raise MergekitError(
                        ErrorCode.INVALID_ARGUMENTS,
                        f"The changes of version {seq} of table {h.logical} are no longer available (vacuumed)",
                    )
                files = [f for f in files if keep(f)]
                splits.extend(JournalSplit(mode="changes", files=[f.ref()]) for f in files)
            elif operation == "truncate":
                # Every row live just before the truncate is deleted by it.
                before = self.files_at(cur, h.table_id, seq - 1)
                if any(f.vacuumed for f in before):
                    raise MergekitError(
                        ErrorCode.INVALID_ARGUMENTS,
                        f"The changes of version {seq} of table {h.logical} are no longer available (vacuumed)",
                    )
                splits.extend(
                    logical_splits(
                        before,
                        h.spec,
                        constraint,
                        change_label="delete",
                        change_seq=seq,
                        change_committed_at=committed_at,
                    )
                )
        return splits

    # ---- MERGE ----------------------------------------------------------------------------------------

    def get_row_change_paradigm(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> RowChangeParadigm:
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
        h = self._handle(table_handle)
        return ColumnHandle(name=ROW_KEY, type=h.spec.key_type)

    def get_insert_layout(
        self, *, session: ConnectorSession, table_handle: ConnectorTableHandle
    ) -> ConnectorTableLayout | None:
        return None

    def begin_merge(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        update_case_columns: Mapping[int, Sequence[ColumnHandle]],
    ) -> ConnectorMergeTableHandle:
        h = self._handle(table_handle)
        self._check_writable(h)
        if h.kind == "journal" and update_case_columns:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED, f"{h.table} only accepts INSERT; change rows through {h.logical}"
            )
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
        )

    def finish_merge(
        self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle, fragments: Sequence[Any]
    ) -> None:
        if not isinstance(merge_handle, JournalMergeHandle):
            raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, "finish_merge called without begin_merge")
        h = merge_handle.table_handle
        assert isinstance(h, JournalTableHandle)
        frags = _flatten(fragments)
        if not frags:
            self._delete_merge_dir(h, merge_handle.merge_id)
            return
        try:
            if not merge_handle.raw_journal and h.spec.version_type != self.config.version_type:
                if any(f.updates or f.deletes for f in frags):
                    raise MergekitError(
                        ErrorCode.TYPE_MISMATCH,
                        f"Incorrect journalVersionType! Column '{h.spec.version_field}' is of type: "
                        f"{_seed_type(h.spec.version_type)} but the journalVersionType is "
                        f"{_seed_type(self.config.version_type)}",
                    )
            touched = None
            needs_checks = not merge_handle.raw_journal and not (
                h.spec.hidden_key and all(f.updates == f.deletes == 0 for f in frags)
            )
            if needs_checks:
                touched = self._read_keys(h, frags)
                self._check_primary_key(h, frags, touched)
            self._commit(merge_handle, frags, touched)
        except BaseException:
            self._delete_merge_dir(h, merge_handle.merge_id)
            raise

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
                    continue
                if not merge_handle.raw_journal and h.spec.version_type != self.config.version_type:
                    if any(f.updates or f.deletes for f in frags):
                        raise MergekitError(
                            ErrorCode.TYPE_MISMATCH,
                            f"Incorrect journalVersionType! Column '{h.spec.version_field}' is of type: "
                            f"{_seed_type(h.spec.version_type)} but the journalVersionType is "
                            f"{_seed_type(self.config.version_type)}",
                        )
                touched = None
                if not merge_handle.raw_journal and not (
                    h.spec.hidden_key and all(f.updates == f.deletes == 0 for f in frags)
                ):
                    touched = self._read_keys(h, frags)
                    self._check_primary_key(h, frags, touched)
                prepared.append((merge_handle, frags, touched))
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

    def abort_merge(self, *, session: ConnectorSession, merge_handle: ConnectorMergeTableHandle) -> None:
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
        live_after = rows.filter(pc.is_in(ops, value_set=pa.array([1, 3, 4], pa.int8()))).select(key)
        # One key column: a hash set of its values (~0.05 s for 1M rows) tells whether any repeats; the
        # grouping that names the repeated key (~0.25 s) runs only then.
        if live_after.num_rows > 1 and (len(key) > 1 or len(pc.unique(live_after.column(0))) < live_after.num_rows):
            counts = live_after.group_by(key).aggregate([([], "count_all")])
            dup = counts.filter(pc.greater(counts.column("count_all"), 1))
            if dup.num_rows:
                raise self._duplicate_key(h, dup)
        arrivals = rows.filter(pc.is_in(ops, value_set=pa.array([1, 4], pa.int8()))).select(key)
        if not arrivals.num_rows or h.spec.hidden_key:
            return
        departures = rows.filter(pc.is_in(ops, value_set=pa.array([2, 5], pa.int8()))).select(key)
        if departures.num_rows:
            arrivals = arrivals.join(departures, keys=key, join_type="left anti")
            if not arrivals.num_rows:
                return
        first = arrivals.column(key[0])
        mm = pc.min_max(first)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        with self.catalog.read() as cur:
            files = [
                f for f in self.files_at(cur, h.table_id, h.snapshot_seq) if _overlaps(f.key_min, f.key_max, lo, hi)
            ]
        existing = []
        stored = list(dict.fromkeys(key))
        for f in files:
            t = read_versioned(self.config.warehouse, h.spec, f.ref(), stored)
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
                if operation in ("truncate", "add_column"):
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
                    f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} WHERE f.table_id = ? AND f.added_seq > ? AND "
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
        for mh, _, _ in items:
            h = mh.table_handle
            assert isinstance(h, JournalTableHandle)
            checked[h.table_id] = h.snapshot_seq
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
                        "SELECT current_seq, last_row_version, last_committed_at FROM mk_tables WHERE table_id = ?",
                        (table_id,),
                    )
                    if not rows:
                        raise MergekitError(ErrorCode.TRANSACTION_CONFLICT, "A table was dropped concurrently")
                    state[table_id] = rows[0]
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
        summary = json.dumps(
            {
                "inserts": sum(f.inserts for f in frags),
                "updates": sum(f.updates for f in frags),
                "deletes": sum(f.deletes for f in frags),
                "moves": sum(f.moves for f in frags),
                "files": len(frags),
                "rows": sum(f.row_count for f in frags),
            }
        )
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
        cur.execute(
            "UPDATE mk_tables SET current_seq = ?, last_row_version = ?, last_committed_at = ? WHERE table_id = ?",
            (seq, row_version, committed_at, h.table_id),
        )
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


class JournalSplitManager(ConnectorSplitManager):
    """Plans splits on the driver from the catalog (see ``_split_files`` for the plain/resolve choice)."""

    def __init__(self, metadata: JournalMetadata) -> None:
        self._metadata = metadata

    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        return self._metadata.get_splits(session=session, table_handle=table_handle, constraint=constraint)
