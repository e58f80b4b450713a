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

import functools
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ._handles import (
    OP_COLUMN,
    SUBSEQUENT_COLUMN,
    TOMBSTONE_OPS,
    VERSION_COLUMN,
    FileRef,
    TableSpec,
)

__all__ = [
    "filesystem",
    "join_path",
    "read_versioned",
    "latest_rows",
    "live_rows",
    "empty_table",
    "V",
    "S",
]

V = "__v"
S = "__s"


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


def empty_table(spec: TableSpec, columns: Sequence[str]) -> pa.Table:
    types = {f.name: f.type for f in spec.explicit_file_schema}
    types[V] = pa.int64()
    types[S] = pa.int64()
    return pa.table({c: pa.array([], types[c]) for c in columns})


def read_versioned(
    warehouse: str, spec: TableSpec, ref: FileRef, columns: Sequence[str], *, filter_live: bool = False
) -> pa.Table:
    """Read ``columns`` of one file plus ``__v``, ``__s`` and the operation column.

    Columns the file lacks (added by ``ALTER TABLE ADD COLUMN`` after it was written) come back as nulls.
    ``filter_live`` drops tombstones and superseded rows (``__s`` not null) right away.
    """
    fs, base = filesystem(warehouse)
    path = join_path(base, ref.path)
    pf = pq.ParquetFile(fs.open_input_file(path))
    present = set(pf.schema_arrow.names)
    wanted = [c for c in dict.fromkeys([*columns, OP_COLUMN]) if c in present]
    if ref.explicit_versions:
        wanted += [VERSION_COLUMN, SUBSEQUENT_COLUMN]
    table = pf.read(columns=wanted)
    n = table.num_rows
    types = {f.name: f.type for f in spec.file_schema}
    out: dict[str, pa.Array | pa.ChunkedArray] = {}
    for c in dict.fromkeys([*columns, OP_COLUMN]):
        if c in present:
            out[c] = table.column(c)
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
    """The row with the highest ``__v`` per key (the seed's ``MAX(version_number) OVER (PARTITION BY key)``)."""
    if table.num_rows <= 1:
        return table
    # At equal versions a live row beats a tombstone: within one commit a key can be both vacated by a
    # key move and filled by another row (UPDATE ... SET k = 3 - k swaps keys 1 and 2).
    live_first = pc.is_valid(table.column(S))
    order = [(k, "ascending") for k in key] + [(V, "descending"), ("__tomb", "ascending")]
    table = table.append_column("__tomb", live_first)
    table = table.take(pc.sort_indices(table, sort_keys=order)).drop_columns(["__tomb"])
    first = None
    for k in key:
        col = table.column(k)
        changed = pc.not_equal(col.slice(1), col.slice(0, table.num_rows - 1))
        changed = pc.fill_null(changed, True)
        first = changed if first is None else pc.or_(first, changed)
    assert first is not None
    rest = first.combine_chunks() if isinstance(first, pa.ChunkedArray) else first
    mask = pa.concat_arrays([pa.array([True]), rest])
    return table.filter(mask)


def live_rows(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """Latest version per key, kept only when it is live (``subsequent_version_number IS NULL``)."""
    latest = latest_rows(table, key)
    return latest.filter(pc.is_null(latest.column(S)))


def concat(tables: Iterable[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")
