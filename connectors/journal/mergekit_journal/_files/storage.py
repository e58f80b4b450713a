"""Data files: where they live, how they are read, and how versions are resolved.

Every function here runs on executors as well as on the driver, so it only needs the warehouse URI (never
the catalog). File paths in the catalog are relative to the warehouse, so a warehouse can be moved or
mounted at another path on executors.

Versions are handled as int64 internally (``__v``: the version, ``__s``: the subsequent version): a
number for ``bigint`` journals, microseconds since the epoch for timestamp journals. A row written by a
sink has its commit's version (the file carries none; the catalog knows it); a tombstone's subsequent version
equals its version, as in the seed's DELETE.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .._handles import (
    OP_COLUMN,
    SUBSEQUENT_COLUMN,
    TOMBSTONE_OPS,
    VERSION_COLUMN,
    FileRef,
    TableSpec,
)
from .lookup_cache import read_row_groups

__all__ = [
    "KeyFilter",
    "dictionary_columns",
    "may_hold",
    "filesystem",
    "join_path",
    "read_versioned",
    "latest_rows",
    "live_rows",
    "empty_table",
    "V",
    "S",
    "ROW_GROUP_ROWS",
]

V = "__v"
S = "__s"

# Rows per Parquet row group in every data file the journal writes (sinks and compaction alike). A lookup of one key
# decodes its whole row group: 128k rows of the bench's 5 columns take about 10 ms, a million rows 96 ms (a 10-row
# upsert into 10M rows after a compaction: 83 ms against 309 ms); a full read by Spark is about the same either way.
ROW_GROUP_ROWS = 128 * 1024


@functools.lru_cache(maxsize=16)
def filesystem(warehouse: str) -> tuple[pafs.FileSystem, str]:
    """(file system, base path) for a warehouse URI or local directory. Cached per process."""
    if "://" in warehouse:
        fs, base = pafs.FileSystem.from_uri(warehouse)
    else:
        fs, base = pafs.LocalFileSystem(), warehouse
    return fs, base.rstrip("/")


def join_path(*parts: str) -> str:
    return "/".join(p.strip("/") if i else p.rstrip("/") for i, p in enumerate(parts) if p)


def dictionary_columns(schema: pa.Schema, key: Sequence[str]) -> list[str]:
    """Columns a data file dictionary-encodes: all but the key columns. Keys are unique within a file, so a
    dictionary never pays for them, and decoding one that overflowed into plain pages costs readers about
    four times a plain column."""
    return [name for name in schema.names if name not in key]


def empty_table(spec: TableSpec, columns: Sequence[str]) -> pa.Table:
    types = {f.name: f.type for f in spec.explicit_file_schema}
    types.update({c.name: c.type for c in spec.columns})
    types[V] = pa.int64()
    types[S] = pa.int64()
    return pa.table({c: pa.array([], types[c]) for c in columns})


def may_hold(ordered: Sequence[Any], low: Any, high: Any) -> bool:
    """Whether a value of the sorted ``ordered`` lies in ``[low, high]`` (unknown bounds or values that do
    not compare: yes)."""
    if low is None or high is None:
        return True
    try:
        i = bisect.bisect_left(ordered, low)
        return i < len(ordered) and ordered[i] <= high
    except TypeError:
        return True


# From this many values on, a key filter hashes only the values within a file's key range (``KeyFilter._within``).
_SLICE_FROM = 4096


class _SortedArray(Sequence[Any]):
    """A sorted Arrow array as a sequence for ``bisect``: each probe converts one value (about 20 per search in a
    million), not the whole array."""

    def __init__(self, values: pa.Array) -> None:
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, index: Any) -> Any:
        return self._values[index].as_py()  # bisect asks for single positions only


class KeyFilter:
    """Rows whose first key column holds one of ``values`` (sorted, of the column's type): row groups are
    skipped by their statistics, the rest filtered. Built once per split; used by many files. With
    ``exclude``, rows whose key is *not* one of them (every row group is read)."""

    def __init__(self, column: str, values: pa.Array, *, exclude: bool = False) -> None:
        self.column = column
        self.values = values
        self.exclude = exclude
        self._sorted: Sequence[Any] | None = None

    def _ordered(self) -> Sequence[Any]:
        if self._sorted is None:
            # a large set is searched in place: a million keys are not turned into Python objects
            large = len(self.values) >= _SLICE_FROM and not self.values.null_count
            self._sorted = _SortedArray(self.values) if large else self.values.to_pylist()
        return self._sorted

    def may_hold(self, low: Any, high: Any) -> bool:
        """Whether some value lies in ``[low, high]`` (unknown bounds: yes)."""
        return may_hold(self._ordered(), low, high)

    def _within(self, column: pa.ChunkedArray | pa.Array) -> pa.Array:
        """The values that lie between the column's least and greatest value: a file covers a slice of a large
        key set, and hashing only that slice is what ``is_in`` then costs."""
        ordered = self._ordered()
        if not isinstance(ordered, _SortedArray):
            return self.values
        bounds = pc.min_max(column)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        try:
            start = bisect.bisect_left(ordered, low)
            stop = bisect.bisect_right(ordered, high)
        except TypeError:  # no bounds (an all-null column), or bounds that do not compare with the values
            return self.values
        return self.values.slice(start, stop - start)

    def row_groups(self, pf: pq.ParquetFile, name: str | None = None) -> list[int]:
        """The row groups whose statistics of the key column (``name`` in the file, when the file names it
        differently) may hold a wanted value."""
        meta = pf.metadata
        names = [meta.schema.column(j).path for j in range(meta.num_columns)]
        name = name or self.column
        if self.exclude or name not in names:
            return list(range(meta.num_row_groups))
        j = names.index(name)
        keep = []
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(j).statistics
            if stats is None or not stats.has_min_max or self.may_hold(stats.min, stats.max):
                keep.append(i)
        return keep

    def take(self, table: pa.Table, column: pa.ChunkedArray | pa.Array, memo: Any = None) -> pa.Table:
        """The rows of ``table`` whose ``column`` (its key, of the key's type) :meth:`mask` keeps, in their order.
        An integer key column in ascending order (a sorted file: bulk loads, compaction output, a MERGE's runs)
        is searched for the values (0.09 ms for a lookup in a 128k-row group, against 0.6 ms for a hash probe of
        every row and a filter); any other through :meth:`mask`. ``memo`` (``read_row_groups``'): whether the
        row group's keys ascend is checked once while the lookup cache holds it."""
        if not self.exclude and pa.types.is_integer(column.type) and pa.types.is_integer(self.values.type):
            if not column.null_count and not self.values.null_count:
                found = column.to_numpy()  # (NumPy arrays, through pyarrow: the connector imports only pyarrow)

                def ascending() -> bool:
                    return len(found) < 2 or bool((found[1:] >= found[:-1]).all())

                if memo("ascending", ascending) if memo is not None else ascending():
                    wanted = self._within(column).to_numpy()
                    if len(wanted) < 2 or bool((wanted[1:] >= wanted[:-1]).all()):
                        low = found.searchsorted(wanted, "left")
                        counts = found.searchsorted(wanted, "right") - low
                        if counts.max(initial=0) <= 1:  # (versions of one key in a file: the mask below)
                            return table.take(pa.array(low[counts > 0]))
        return table.filter(self.mask(column))

    def mask(self, column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
        values = self._within(column)
        if values.type != column.type:
            values = values.cast(column.type)
        found = pc.is_in(column, value_set=values)
        return pc.invert(found) if self.exclude else found


def read_versioned(
    warehouse: str,
    spec: TableSpec,
    ref: FileRef,
    columns: Sequence[str],
    *,
    filter_live: bool = False,
    keys: KeyFilter | None = None,
    threads: bool = True,
) -> pa.Table:
    """Read ``columns`` of one file plus ``__v``, ``__s`` and the operation column.

    Columns the file lacks (added by ``ALTER TABLE ADD COLUMN`` after it was written) come back as nulls.
    Columns are read under their physical names (``TableSpec.physical``: a renamed column's files keep the
    name it was written under) and cast to the column's type (files written before a widening hold the
    narrower type). ``filter_live`` drops tombstones and superseded rows (``__s`` not null) right away; ``keys`` keeps only
    rows with one of its key values. ``threads``: decode columns in parallel (the driver); page sources on
    executors read single-threaded, as each Spark task has one core.
    """
    fs, base = filesystem(warehouse)
    path = join_path(base, ref.path)
    names = list(dict.fromkeys([*columns, OP_COLUMN]))
    physical = {c: c if c == OP_COLUMN else spec.physical(c) for c in names}
    types = {c.name: c.type for c in spec.columns}
    types[OP_COLUMN] = pa.int8()
    wanted = list(dict.fromkeys(physical.values()))
    if ref.explicit_versions:
        wanted += [VERSION_COLUMN, SUBSEQUENT_COLUMN]
    if keys is None or keys.exclude:  # a scan of the whole file
        pf = pq.ParquetFile(fs.open_input_file(path))
        present = set(pf.schema_arrow.names)
        table = pf.read(columns=[c for c in wanted if c in present], use_threads=threads)
    else:  # a lookup: the row groups that may hold the keys, through the lookup cache
        key_name = spec.physical(keys.column)

        def pick(part: pa.Table, memo: Any) -> pa.Table:
            if key_name not in part.column_names:
                return part
            key_values = part.column(key_name)
            if keys.column in types and key_values.type != types[keys.column]:
                key_values = key_values.cast(types[keys.column])
                memo = None  # (whether the cast values ascend is not the stored column's fact)
            return keys.take(part, key_values, memo)

        table, present = read_row_groups(
            fs, path, wanted, lambda pf: keys.row_groups(pf, key_name), threads=threads, pick=pick
        )
    if keys is not None and keys.exclude and spec.physical(keys.column) in present:
        key_values = table.column(spec.physical(keys.column))
        if keys.column in types and key_values.type != types[keys.column]:
            key_values = key_values.cast(types[keys.column])
        table = keys.take(table, key_values)
    n = table.num_rows
    out: dict[str, pa.Array | pa.ChunkedArray] = {}
    for c in names:
        if physical[c] in present:
            out[c] = table.column(physical[c])
            if c in types and out[c].type != types[c]:
                out[c] = out[c].cast(types[c])  # written before a widening (SET DATA TYPE)
        else:
            out[c] = pa.nulls(n, types[c])
    ops = out[OP_COLUMN]
    is_tomb = pc.is_in(ops, value_set=pa.array(TOMBSTONE_OPS, pa.int8()))
    version = pa.scalar(ref.row_version, pa.int64())
    if ref.explicit_versions:
        # A raw journal INSERT that gave no version gets its commit's (the seed's DEFAULT).
        out[V] = pc.fill_null(table.column(VERSION_COLUMN), version)
        out[S] = table.column(SUBSEQUENT_COLUMN)
    else:
        out[V] = pa.repeat(version, n)
        out[S] = pc.if_else(is_tomb, version, pa.scalar(None, pa.int64()))
    result = pa.table(out)
    if filter_live:
        result = result.filter(pc.is_null(result.column(S)))
    return result


def latest_rows(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """The row with the highest ``__v`` per key (the seed's ``MAX(version_number) OVER (PARTITION BY key)``).

    Rows are ranked by version (highest first) and, at equal versions, live before tombstones: within one
    commit a key can be both vacated by a key move and filled by another row (UPDATE ... SET k = 3 - k swaps
    keys 1 and 2). Each key keeps its first row in that ranking, found by a hash aggregation over the keys (a
    sort by key and version would cost about three times as much).
    """
    n = table.num_rows
    if n <= 1:
        return table
    ranking = pa.table({V: table.column(V), "__tomb": pc.is_valid(table.column(S))})
    order = pc.sort_indices(ranking, sort_keys=[(V, "descending"), ("__tomb", "ascending")])
    positions = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)
    ranked = table.select(list(key)).take(order).append_column("__p", positions)
    first = ranked.group_by(list(key), use_threads=False).aggregate([("__p", "min")]).column("__p_min")
    winners = pc.take(order, first)
    return table.take(pc.take(winners, pc.sort_indices(winners)))


def live_rows(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """Latest version per key, kept only when it is live (``subsequent_version_number IS NULL``)."""
    latest = latest_rows(table, key)
    return latest.filter(pc.is_null(latest.column(S)))


def concat(tables: Iterable[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")
