"""The storage format, with no SPI in it: manifests, JSON-lines data files, value codecs and the table lock.

A table is a folder::

    <table>/
      _table.json                      the manifest: version, columns, constraints, the live data files
      _table.lock                      held (fcntl.flock) while a commit reads and swaps the manifest
      data/<statement>-<uuid>.jsonl    a data file: one JSON object per line, keyed by column name
      _staging/<statement>/...         what a running statement staged (removed by its commit or abort)

Data files never change once the manifest lists them: a commit that deletes or updates rows writes new files
and swaps the manifest (``os.replace``), so readers see the old table or the new one.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError

MANIFEST = "_table.json"
LOCK = "_table.lock"
DATA = "data"
STAGING = "_staging"
FORMAT = 1

# Row ids pack (file number, line) into a BIGINT: 2**32 lines per data file at most.
POSITION_BITS = 32
MAX_FILE_ROWS = 1 << POSITION_BITS

_MIN_DATE, _MAX_DATE = -719162, 2932896  # 0001-01-01 and 9999-12-31 as days since the epoch
_MIN_TS, _MAX_TS = -62135596800_000000, 253402300799_999999  # the same years in microseconds


def row_id(number: int, position: int) -> int:
    return (number << POSITION_BITS) | position


def split_row_id(value: int) -> tuple[int, int]:
    return value >> POSITION_BITS, value & (MAX_FILE_ROWS - 1)


# ---- value codecs: JSON has numbers, strings, booleans and null; everything else is stored as text


def is_storable(type: pa.DataType) -> bool:
    return (
        pa.types.is_boolean(type)
        or pa.types.is_integer(type)
        or pa.types.is_floating(type)
        or pa.types.is_string(type)
        or pa.types.is_large_string(type)
        or pa.types.is_decimal(type)
        or pa.types.is_date32(type)
        or pa.types.is_timestamp(type)
        or pa.types.is_binary(type)
        or pa.types.is_large_binary(type)
    )


def _stored_as_text(type: pa.DataType) -> bool:
    return pa.types.is_decimal(type) or pa.types.is_date32(type) or pa.types.is_timestamp(type)


def encode(array: pa.Array, type: pa.DataType, column: str) -> list[Any]:
    """The JSON values of ``array`` (a column of declared type ``type``)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.type != type:
        array = array.cast(type)
    if pa.types.is_binary(type) or pa.types.is_large_binary(type):
        return [None if v is None else base64.b64encode(v).decode("ascii") for v in array.to_pylist()]
    if not _stored_as_text(type):
        return array.to_pylist()
    if pa.types.is_date32(type) or pa.types.is_timestamp(type):
        low, high = (_MIN_DATE, _MAX_DATE) if pa.types.is_date32(type) else (_MIN_TS, _MAX_TS)
        bounds = pc.min_max(array.cast(pa.int32() if pa.types.is_date32(type) else pa.int64()))
        lowest, highest = bounds["min"].as_py(), bounds["max"].as_py()
        if lowest is not None and (lowest < low or highest > high):
            raise MergekitError(
                ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE,
                f"jsonl-rowlevel stores {type} values of years 1 to 9999 only (column {column})",
                column=column,
            )
    return array.cast(pa.string()).to_pylist()


def decode(values: Sequence[Any], type: pa.DataType) -> pa.Array:
    """The Arrow array of JSON ``values`` stored for a column of declared type ``type``."""
    if pa.types.is_binary(type) or pa.types.is_large_binary(type):
        return pa.array([None if v is None else base64.b64decode(v) for v in values], type=type)
    if _stored_as_text(type):
        return pa.array(values, type=pa.string()).cast(type)
    return pa.array(values, type=type)


def encode_batch(batch: pa.RecordBatch, columns: Sequence[tuple[str, pa.DataType]]) -> list[str]:
    """JSON lines of the first ``len(columns)`` channels of ``batch``: the values of those (name, declared type)
    columns, one JSON object per row keyed by column name."""
    names = [name for name, _ in columns]
    values = [encode(batch.column(i), type, name) for i, (name, type) in enumerate(columns)]
    return [dumps(dict(zip(names, row, strict=True))) for row in zip(*values, strict=True)]


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


# ---- files


def write_lines(path: str, lines: Iterable[str]) -> int:
    """Write a new file (never one a manifest lists) and fsync it; returns the number of lines."""
    count = 0
    with open(path, "x", encoding="utf-8") as f:
        for line in lines:
            f.write(line)
            count += 1
        f.flush()
        os.fsync(f.fileno())
    return count


def read_lines(path: str, start: int = 0, count: int | None = None) -> Iterator[str]:
    """Lines ``start`` .. ``start + count`` of a data file."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i < start:
                continue
            if count is not None and i >= start + count:
                break
            yield line


class LineWriter:
    """A file written line by line by an executor (a sink or a page source), opened lazily."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows = 0
        self._file: IO[str] | None = None

    def write(self, lines: Iterable[str]) -> None:
        if self._file is None:
            self._file = open(self.path, "x", encoding="utf-8")  # closed by close() or discard()
        for line in lines:
            self._file.write(line)
            self.rows += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def discard(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path)


# ---- manifests


def read_manifest(table_dir: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(table_dir, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        return None
    if manifest.get("format") != FORMAT:
        raise MergekitError(ErrorCode.STORAGE_ERROR, f"{table_dir}: unknown manifest format {manifest.get('format')!r}")
    return manifest


def _write_temporary(table_dir: str, manifest: dict[str, Any]) -> str:
    temporary = os.path.join(table_dir, f".{MANIFEST}-{uuid.uuid4().hex}")
    with open(temporary, "x", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    return temporary


def replace_manifest(table_dir: str, manifest: dict[str, Any]) -> None:
    """Swap in a new manifest: atomic, readers see the old one or the new one."""
    temporary = _write_temporary(table_dir, manifest)
    try:
        os.replace(temporary, os.path.join(table_dir, MANIFEST))
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def create_manifest(table_dir: str, manifest: dict[str, Any]) -> bool:
    """Write the first manifest of a table unless one exists (atomically); False when it existed."""
    temporary = _write_temporary(table_dir, manifest)
    try:
        os.link(temporary, os.path.join(table_dir, MANIFEST))
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(temporary)


@contextlib.contextmanager
def locked(table_dir: str) -> Iterator[None]:
    """Hold the table's lock: check and swap of the manifest are one step for every writer on the machine."""
    fd = os.open(os.path.join(table_dir, LOCK), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def new_data_file(table_dir: str, statement: str) -> str:
    """A fresh data file path (relative to the table folder) named after the statement that writes it."""
    return os.path.join(DATA, f"{statement}-{uuid.uuid4().hex}.jsonl")
