"""Decoded row groups of the journal's data files, kept in memory for key lookups: the journal's buffer pool.

A lookup of a few keys (a MERGE's index lookup, ``WHERE id = 42``) reads the row groups whose key statistics may
hold them, and Parquet decodes a row group's column chunks whole: 128k rows to find one (``ROW_GROUP_ROWS``). A
10-row upsert into a 10M-row table spent three quarters of its time there, decoding the same row groups again
statement after statement. So the lookups of this process keep what they decoded: each column of each row group
they read, and each file's footer, up to :data:`CAPACITY_BYTES` in all (when full, entries at random go:
``LookupCache``). DuckDB's buffer pool and PostgreSQL's shared buffers do the same for their pages. On the
bench's 10M-row table a 10-row upsert took 151-188 ms without it, 108-114 ms with 256 MiB (62% of the lookups found
their row group) and 44.5 ms with room for all of the table's row groups (515 MiB: 95%).

A data file never changes once written (every file's name is new), but an entry is keyed by the file's size and
modification time as well as its path, so a file replaced under the same name is read again. Full scans (a
query's read of the table, compaction) do not go through the cache: they would only push the lookups' row groups
out. Only the engine's own process keeps one (the driver tier's lookups, point queries): a Spark task's lookups
read their share of a large source's keys once, and a cache in every Python worker would multiply the memory for
little. ``MERGEKIT_JOURNAL_LOOKUP_CACHE_MB`` sets the capacity (``0`` turns the cache off).

The cache also keeps each small file's integer key column sorted (:func:`held_keys`): which of a statement's keys a
delta holds is then a binary search, not a read and a filter of its row groups.
"""

from __future__ import annotations

import functools
import os
import random
import sys
import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

__all__ = ["CAPACITY_BYTES", "LookupCache", "cache", "read_row_groups", "held_keys", "SORTED_KEYS_MAX_ROWS"]

#: 512 MiB: the row groups of the bench's 10M rows of five columns (docs/performance.md, "Small commits").
CAPACITY_BYTES = int(float(os.environ.get("MERGEKIT_JOURNAL_LOOKUP_CACHE_MB", "512")) * 1024 * 1024)
# What a footer is counted as (its Thrift metadata and Arrow schema: a few kB for the journal's files).
_FOOTER_BYTES = 16 * 1024


class LookupCache:
    """Up to ``capacity`` bytes; safe to share between threads. When full, entries chosen at random go: in least
    recently used order, a statement whose keys fall in every row group of a table a little larger than the cache
    evicts each row group just before it needs it again, and finds none (after a full compaction of the bench's
    10M-row table, whose files then carry explicit version columns, 10k-row MERGEs went from 0.5 to 2.5 s); at
    random it finds about capacity / working set of them. The entries of files a compaction replaced go at once
    (:meth:`drop_files`)."""

    def __init__(self, capacity: int, *, seed: int | None = None) -> None:
        self.capacity = capacity
        self._entries: dict[tuple[Any, ...], tuple[Any, int, int]] = {}  # key -> (value, bytes, index in _keys)
        self._keys: list[tuple[Any, ...]] = []
        self._random = random.Random(seed)
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def size(self) -> int:
        return self._size

    def get(self, key: tuple[Any, ...]) -> Any | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            return found[0]

    def put(self, key: tuple[Any, ...], value: Any, nbytes: int) -> None:
        if nbytes > self.capacity:
            return
        with self._lock:
            if key in self._entries:
                self._remove(key)
            while self._keys and self._size + nbytes > self.capacity:
                self._remove(self._keys[self._random.randrange(len(self._keys))])
            self._entries[key] = (value, nbytes, len(self._keys))
            self._keys.append(key)
            self._size += nbytes

    def _remove(self, key: tuple[Any, ...]) -> None:
        _, nbytes, at = self._entries.pop(key)
        last = self._keys.pop()
        if at < len(self._keys):  # the last key takes the removed one's place
            self._keys[at] = last
            value, size, _ = self._entries[last]
            self._entries[last] = (value, size, at)
        self._size -= nbytes

    def drop_files(self, paths: set[str]) -> None:
        """Forget every entry of the files at ``paths`` (as :func:`read_row_groups` was given them)."""
        with self._lock:
            for key in [k for k in self._entries if len(k) > 1 and k[1] in paths]:
                self._remove(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._keys.clear()
            self._size = 0


cache = LookupCache(CAPACITY_BYTES)


def read_row_groups(
    fs: pafs.FileSystem,
    path: str,
    columns: Sequence[str],
    choose_groups: Any,
    *,
    threads: bool,
    pick: Any = None,
) -> tuple[pa.Table, set[str]]:
    """``columns`` (those the file has) of the row groups ``choose_groups(metadata)`` picks of the file at
    ``path``, and the names of the file's columns. Through :data:`cache` unless its capacity is 0 or this is a
    Spark worker (PySpark's worker module is loaded in its Python workers only).

    ``pick(table, memo)``, when given, keeps the wanted rows: of each cached row group's table (one chunk a
    column) before they are put together, so a lookup's few rows are taken without the row groups' columns being
    joined; without the cache, of the table read. ``memo(name, compute)`` keeps a small fact about the row group
    in the cache (whether its keys ascend), or is None where nothing is cached."""
    if cache.capacity <= 0 or "pyspark.worker" in sys.modules:
        pf = pq.ParquetFile(fs.open_input_file(path))
        present = set(pf.schema_arrow.names)
        wanted = [c for c in columns if c in present]
        groups = choose_groups(pf)
        if len(groups) == pf.metadata.num_row_groups:
            table = pf.read(columns=wanted, use_threads=threads)
        else:
            table = pf.read_row_groups(groups, columns=wanted, use_threads=threads)
        return (table if pick is None else pick(table, None)), present
    info = fs.get_file_info(path)
    stamp = (path, info.size, info.mtime_ns)
    footer = cache.get(("footer", *stamp))
    pf = None
    if footer is None:
        pf = pq.ParquetFile(fs.open_input_file(path))
        footer = (pf.metadata, pf.schema_arrow)
        cache.put(("footer", *stamp), footer, _FOOTER_BYTES)
    metadata, schema = footer
    present = set(schema.names)
    wanted = [c for c in columns if c in present]
    parts = []
    for group in choose_groups(_Footer(metadata)):
        found = {c: cache.get(("column", *stamp, group, c)) for c in wanted}
        missing = [c for c in wanted if found[c] is None]
        if missing:
            if pf is None:
                pf = pq.ParquetFile(fs.open_input_file(path), metadata=metadata)
            read = pf.read_row_group(group, columns=missing, use_threads=threads)
            for c in missing:
                column = read.column(c).combine_chunks()
                found[c] = column
                cache.put(("column", *stamp, group, c), column, column.nbytes)
        part = pa.table({c: found[c] for c in wanted}, schema=pa.schema([schema.field(c) for c in wanted]))
        if pick is not None:
            part = pick(part, functools.partial(_memo, (*stamp, group)))
        parts.append(part)
    if not parts:
        return pa.schema([schema.field(c) for c in wanted]).empty_table(), present
    return pa.concat_tables(parts), present


def _memo(where: tuple[Any, ...], name: str, compute: Any) -> Any:
    """A small fact about a row group (``where``: its file's stamp and its number), computed once while the cache
    keeps it."""
    key = ("memo", *where, name)
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.put(key, value, 64)
    return value


#: The largest file whose key column :func:`held_keys` keeps sorted (a delta of small commits; 8 bytes a row).
SORTED_KEYS_MAX_ROWS = 1 << 20


def held_keys(
    fs: pafs.FileSystem, path: str, column: str, arrow_type: pa.DataType, values: pa.Array
) -> pa.Array | None:
    """Which of ``values`` (integers of ``arrow_type``, no nulls) the file's ``column`` holds, found in the
    file's key column kept sorted in :data:`cache`: a small MERGE asks every delta of the table which of its keys
    it holds, statement after statement, and a search of a sorted array answers in microseconds where reading the
    column's row groups and filtering them took about a quarter of a millisecond a file. None when that does not apply (not integers, nulls, no cache, a large file): read the file."""
    if cache.capacity <= 0 or "pyspark.worker" in sys.modules or values.null_count:
        return None
    if not (pa.types.is_integer(arrow_type) and values.type == arrow_type):
        return None
    info = fs.get_file_info(path)
    key = ("sorted-keys", path, info.size, info.mtime_ns, column, str(arrow_type))
    ordered = cache.get(key)
    if ordered is None:
        table, present = read_row_groups(
            fs, path, [column], lambda pf: list(range(pf.metadata.num_row_groups)), threads=False
        )
        if column not in present or table.num_rows > SORTED_KEYS_MAX_ROWS:
            return None
        keys = table.column(column)
        if keys.null_count:
            return None
        ordered = keys.cast(arrow_type).to_numpy().copy()  # (NumPy, through pyarrow: the connector imports pyarrow)
        ordered.sort()
        cache.put(key, ordered, ordered.nbytes + 64)
    if not len(ordered) or not len(values):
        return values.slice(0, 0)
    wanted = values.to_numpy()
    at = ordered.searchsorted(wanted).clip(0, len(ordered) - 1)
    return values.filter(pa.array(ordered[at] == wanted))


class _Footer:
    """What ``choose_groups`` reads of a ParquetFile, from a cached footer."""

    def __init__(self, metadata: pq.FileMetaData) -> None:
        self.metadata = metadata
