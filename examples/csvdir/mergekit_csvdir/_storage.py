"""The on-disk format of a csvdir table. Nothing here knows about mergekit's SPI.

A catalog is a directory (the ``root`` option), a schema a sub-directory, a table a folder::

    <root>/<schema>/<table>/
        _manifest.json                       the table: columns, live data files, version
        _manifest.lock                       taken while a commit swaps the manifest
        <query id>-<sink>-<uuid>.csv         an immutable data file (header line, then rows)
        <query id>-<sink>-<uuid>.deletes.csv an immutable deletion file: (file, pos) of removed rows

Files are never changed after they are written. A row disappears when a deletion file that names its
``(file, pos)`` is listed for its data file in the manifest (Iceberg calls these *position deletes*).
A file is visible only once the manifest lists it, and the manifest is replaced in one ``os.replace``,
so readers see either the old table or the new one, never half a commit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

MANIFEST = "_manifest.json"
LOCK = "_manifest.lock"
DELETION_SCHEMA = pa.schema([pa.field("file", pa.string(), nullable=False), pa.field("pos", pa.int64(), False)])

# Nulls are written as an empty, unquoted field and every other value is quoted, so an empty string
# ("") and NULL stay different (the reader is told that quoted fields are never null).
_WRITE_OPTIONS = pacsv.WriteOptions(include_header=True, quoting_style="all_valid")
# A one-column row holding NULL is an empty line: it must not be skipped. Text values may hold newlines.
_PARSE_OPTIONS = pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False)


@attrs.frozen(kw_only=True)
class Column:
    """A column as declared: ``type_name`` is the SQL text (``decimal(10,2)``) so nothing is lost."""

    name: str
    type_name: str
    nullable: bool = True


@attrs.frozen(kw_only=True)
class DataFile:
    """A live data file: its name in the table folder, how many rows it holds, and the deletion files
    (and how many rows they remove) that apply to it."""

    name: str
    rows: int
    deletes: tuple[str, ...] = ()
    deleted: int = 0


@attrs.frozen(kw_only=True)
class Manifest:
    """One version of a table. ``version`` grows by one per commit; it is what conflict checks compare."""

    version: int
    columns: tuple[Column, ...]
    files: tuple[DataFile, ...] = ()

    def to_json(self) -> str:
        return json.dumps(attrs.asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        raw: dict[str, Any] = json.loads(text)
        return cls(
            version=raw["version"],
            columns=tuple(Column(**c) for c in raw["columns"]),
            files=tuple(DataFile(**{**f, "deletes": tuple(f["deletes"])}) for f in raw["files"]),
        )


def read_manifest(table_dir: str) -> Manifest | None:
    """The table's current manifest, or None when the folder holds no table."""
    try:
        with open(os.path.join(table_dir, MANIFEST), encoding="utf-8") as f:
            return Manifest.from_json(f.read())
    except FileNotFoundError:
        return None


def write_manifest(table_dir: str, manifest: Manifest) -> None:
    """Replace the manifest atomically: write a temporary file, flush it to disk, then ``os.replace``,
    which POSIX guarantees to be atomic within one file system."""
    tmp = os.path.join(table_dir, f".{MANIFEST}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(manifest.to_json())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(table_dir, MANIFEST))


@contextlib.contextmanager
def manifest_lock(table_dir: str) -> Iterator[None]:
    """Serialise read-check-replace of the manifest between processes of one machine (or an NFS that
    honours ``flock``). On an object store you would use a conditional PUT instead."""
    with open(os.path.join(table_dir, LOCK), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def new_file_name(query_id: str, sink_id: int, suffix: str = ".csv") -> str:
    """Staged files start with the query id, so ``abort_merge`` finds them; the uuid keeps a retried
    Spark task from overwriting the files of its first attempt."""
    return f"{query_id}-{sink_id}-{uuid.uuid4().hex[:12]}{suffix}"


def open_writer(path: str, schema: pa.Schema) -> pacsv.CSVWriter:
    return pacsv.CSVWriter(path, schema, write_options=_WRITE_OPTIONS)


def read_batches(path: str, schema: pa.Schema, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """Stream a data file as record batches of ``columns`` (a subset of ``schema``), parsed with the
    declared types: CSV has no types, so the manifest supplies them and nothing is guessed."""
    # At least one column is read so batches carry row counts (and row positions stay right).
    include = list(columns) or [schema.names[0]]
    convert = pacsv.ConvertOptions(
        column_types=schema,
        include_columns=include,
        strings_can_be_null=True,
        quoted_strings_can_be_null=False,
    )
    with pacsv.open_csv(path, parse_options=_PARSE_OPTIONS, convert_options=convert) as reader:
        for batch in reader:
            yield batch.select(list(columns))


def write_deletions(path: str, deletions: pa.Table) -> None:
    pacsv.write_csv(deletions.cast(DELETION_SCHEMA), path, write_options=_WRITE_OPTIONS)


def deleted_positions(paths: Sequence[str], file_name: str) -> pa.Array:
    """Positions of ``file_name`` removed by the deletion files ``paths``."""
    convert = pacsv.ConvertOptions(column_types=DELETION_SCHEMA)
    chunks = []
    for path in paths:
        table = pacsv.read_csv(path, parse_options=_PARSE_OPTIONS, convert_options=convert)
        chunks.append(table.filter(pc.equal(table["file"], file_name))["pos"].combine_chunks())
    return pa.concat_arrays(chunks) if chunks else pa.array([], pa.int64())
