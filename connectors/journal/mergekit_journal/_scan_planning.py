"""Reading a journal table: which files a scan reads, how they are grouped into splits, and what Spark reads
natively.

A snapshot's files are *plain* (they hold only latest versions) or need version resolution (a later file that
supersedes rows overlaps their key range); resolution groups are cut by overlapping key ranges and large ones
into key buckets (``logical_splits``). ``get_native_scan`` lets Spark read the *base* (the longest prefix of the
files in commit order in which no file supersedes an earlier one) as Parquet, with an anti join on the keys the
*deltas* after it supersede (or page sources that drop those keys, when there are many); the deltas resolve in
page sources. A scan constrained to the values of a single-column key reads only those keys' rows
(``keyed_splits``), and so do the journal's index lookups (``_index``). Files are pruned by key range
(``_Pruner``). The tuning constants below are module globals so that tests can lower them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ALL,
    AntiJoin,
    ColumnHandle,
    ConnectorResolvedIndex,
    ConnectorSession,
    ConnectorSplit,
    ConnectorTableHandle,
    Constraint,
    NativeScan,
    NativeScanUnion,
)

from ._catalog import Cursor
from ._files.lookup_cache import SORTED_KEYS_MAX_ROWS, held_keys
from ._files.storage import KeyFilter, concat, filesystem, join_path, may_hold, read_versioned
from ._handles import (
    ARRIVAL_OPS,
    OP_COLUMN,
    ROW_KEY,
    SUBSEQUENT_COLUMN,
    TOMBSTONE_OPS,
    JournalSplit,
    JournalTableHandle,
    TableSpec,
)
from ._snapshots import _FILE_COLUMNS, _FILE_JOIN, FileRow, SnapshotMetadata, _file_row, _overlaps, commit_order

__all__ = ["ScanPlanningMetadata", "logical_splits", "keyed_splits"]

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


def _q(name: str) -> str:
    """A column name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


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
    ordered = sorted(files, key=commit_order)
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
    keys: searched in each delta's key column kept sorted by the lookup cache (``held_keys``: integer keys, deltas
    of up to ``SORTED_KEYS_MAX_ROWS``), else each file's row groups that can hold one, filtered. Many (a MERGE
    source's value set): every delta's key column, probed at once, as a hash table of a million keys costs more to
    build (~50 ms) than a delta's key column to read, and a table after 100 MERGEs has 100 deltas."""
    first = spec.key[0]
    if len(keys.values) < _PROBE_DELTAS_AT_ONCE:
        key_type = spec.column(first).type
        fs, base = filesystem(warehouse)
        found = []
        for f in deltas:
            held = None
            if f.row_count <= SORTED_KEYS_MAX_ROWS:
                held = held_keys(fs, join_path(base, f.path), spec.physical(first), key_type, keys.values)
            if held is None:  # (not an integer key, or a large delta: its row groups that may hold them)
                held = read_versioned(warehouse, spec, f.ref(), [first], keys=keys).column(first)
            found.append(pa.chunked_array([held]) if isinstance(held, pa.Array) else held)
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


class ScanPlanningMetadata(SnapshotMetadata):
    """Splits, native scans, value sets and the key index of a journal table (part of ``JournalMetadata``)."""

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
        files.sort(key=commit_order)
        cut = _base_prefix(files)
        deltas = files[cut:]
        keep = _Pruner(spec.key[0], constraint)
        base = [f for f in files[:cut] if keep(f)]
        wanted = dict.fromkeys([*spec.key, *(c.name for c in columns if c.name != ROW_KEY)])
        # Files hold columns under their physical names and the types they were written with: Spark reads them
        # under the current types (it widens integers, REAL and decimals itself) and the projections rename.
        phys = spec.physical
        file_schema = pa.schema(
            [pa.field(phys(n), stored[n]) for n in wanted]
            + [pa.field(OP_COLUMN, pa.int8()), pa.field(SUBSEQUENT_COLUMN, pa.int64())]
        )
        live = f"`{SUBSEQUENT_COLUMN}` IS NULL AND coalesce(`{OP_COLUMN}` NOT IN {tuple(TOMBSTONE_OPS)}, true)"
        projections = {ROW_KEY: "named_struct(" + ", ".join(f"'{k}', {_q(phys(k))}" for k in spec.key) + ")"}
        projections.update({n: _q(phys(n)) for n in wanted if phys(n) != n})

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
            key_schema = pa.schema([pa.field(phys(k), stored[k]) for k in spec.key] + [pa.field(OP_COLUMN, pa.int8())])
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
            anti_join = AntiJoin(keys=[phys(k) for k in spec.key], scan=delta_keys, broadcast=broadcast)
            scans.append(native(touched, anti_join))
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
        from ._index_handle import JournalIndexHandle, key_range, partition_points

        h = self._handle(table_handle)
        if h.kind != "logical" or len(h.spec.key) != 1 or [c.name for c in index_columns] != list(h.spec.key):
            return None
        with self.catalog.read() as cur:
            files = self.files_at(cur, h.table_id, h.snapshot_seq)
        files.sort(key=commit_order)
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
        """Splits for the handle's kind: the logical table (``logical_splits``), the journal's raw rows (a split
        per file) or the change feed (``_change_splits``)."""
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
        """Change feed splits: each write's files read as changes, and a truncate as a delete of every row live
        before it; ``INVALID_ARGUMENTS`` when a commit's files were vacuumed."""
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
                        f"SELECT {_FILE_COLUMNS} {_FILE_JOIN} AND f.table_id = ? AND f.added_seq = ?",
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
