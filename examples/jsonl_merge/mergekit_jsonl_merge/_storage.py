"""The storage format, with no SPI in it: the manifest, JSON-lines data and deletion files, the lock.

A table is a folder::

    _manifest.json                          {"version": 3, "columns": [...], "files": [...], ...}
    _manifest.lock                          held (fcntl.flock) while a commit swaps the manifest
    <merge prefix>-<sink>-<uuid>.jsonl      a data file: one JSON object per row, keyed by column name
    <merge prefix>-<sink>-<uuid>.deletes.jsonl   a deletion file: {"file": ..., "pos": ...} per removed row

Files never change once written. The manifest lists the live data files, and for each one the deletion
files that name some of its rows (by 0-based line number, Iceberg's position deletes). A commit writes a
new manifest next to the old one and swaps it in with ``os.replace``: readers see the old table or the new.

JSON has no decimal, date, timestamp or binary values: those are stored as text (Arrow's own rendering of
the value, base64 for binary) and converted back with the column's declared Arrow type, never guessed.
Non-finite REAL/DOUBLE values are stored as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import math
import os
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute

MANIFEST = "_manifest.json"
LOCK = "_manifest.lock"
DATA_SUFFIX = ".jsonl"
DELETES_SUFFIX = ".deletes.jsonl"
FORMAT = 1


@attrs.frozen(kw_only=True)
class ColumnSpec:
    """One column as the manifest stores it: the SQL type as declared (``decimal(12,2)``, ``char(5)``)."""

    name: str
    type_name: str
    nullable: bool = True
    hidden: bool = False
    comment: str | None = None
    default: str | None = None


@attrs.frozen(kw_only=True)
class DataFile:
    """A live data file: its row count, and the deletion files naming some of its rows."""

    name: str
    rows: int
    deletes: tuple[str, ...] = ()
    deleted: int = 0
    # (column, min, max) of the rows written, as stored JSON values; (column, None, None): all NULL.
    # A column without an entry (added later, or a type without an order) is not pruned on.
    stats: tuple[tuple[str, Any, Any], ...] = ()


@attrs.frozen(kw_only=True)
class Manifest:
    version: int
    columns: tuple[ColumnSpec, ...]
    files: tuple[DataFile, ...] = ()
    check_constraints: tuple[tuple[str, str], ...] = ()  # (name, expression), in declaration order
    comment: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "comment": self.comment,
            "columns": [attrs.asdict(c) for c in self.columns],
            "check_constraints": [{"name": n, "expression": e} for n, e in self.check_constraints],
            "files": [
                {
                    "name": f.name,
                    "rows": f.rows,
                    "deletes": list(f.deletes),
                    "deleted": f.deleted,
                    "stats": {column: [low, high] for column, low, high in f.stats},
                }
                for f in self.files
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        if data.get("format") != FORMAT:
            raise ValueError(f"unknown manifest format {data.get('format')!r}")
        return cls(
            version=int(data["version"]),
            comment=data.get("comment"),
            columns=tuple(ColumnSpec(**c) for c in data["columns"]),
            check_constraints=tuple((c["name"], c["expression"]) for c in data.get("check_constraints", ())),
            files=tuple(
                DataFile(
                    name=f["name"],
                    rows=f["rows"],
                    deletes=tuple(f["deletes"]),
                    deleted=f["deleted"],
                    stats=tuple((column, low, high) for column, (low, high) in f.get("stats", {}).items()),
                )
                for f in data["files"]
            ),
        )

    def referenced_files(self) -> set[str]:
        names = {f.name for f in self.files}
        for f in self.files:
            names.update(f.deletes)
        return names


def read_manifest(directory: str) -> Manifest | None:
    """The table's current manifest, or None when the folder holds no table."""
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
            return Manifest.from_json(json.load(f))
    except FileNotFoundError:
        return None


def write_manifest(directory: str, manifest: Manifest) -> None:
    """Atomically replace the manifest: write a temporary file, fsync it, ``os.replace`` it."""
    temporary = os.path.join(directory, f".manifest-{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(manifest.to_json(), f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, os.path.join(directory, MANIFEST))
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
    fsync_directory(directory)


def fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def manifest_lock(directory: str) -> Iterator[None]:
    """Held while a commit reads, checks and swaps the manifest (every writer on this machine)."""
    with open(os.path.join(directory, LOCK), "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# ---- values


def is_supported_type(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_boolean(arrow_type)
        or pa.types.is_integer(arrow_type)
        or pa.types.is_floating(arrow_type)
        or pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_binary(arrow_type)
        or pa.types.is_decimal(arrow_type)
        or pa.types.is_date32(arrow_type)
        or pa.types.is_timestamp(arrow_type)
    )


def _as_text(arrow_type: pa.DataType) -> bool:
    return pa.types.is_decimal(arrow_type) or pa.types.is_date32(arrow_type) or pa.types.is_timestamp(arrow_type)


def _encode_float(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _decode_float(value: Any) -> float | None:
    if isinstance(value, str):
        return float(value)  # "NaN", "Infinity", "-Infinity"
    return value


def encode_column(array: pa.Array) -> list[Any]:
    """An Arrow column as JSON values."""
    arrow_type = array.type
    if _as_text(arrow_type):
        return array.cast(pa.string()).to_pylist()
    if pa.types.is_binary(arrow_type):
        return [None if v is None else base64.b64encode(v).decode("ascii") for v in array.to_pylist()]
    if pa.types.is_floating(arrow_type):
        return [_encode_float(v) for v in array.to_pylist()]
    return array.to_pylist()


_DATE = re.compile(r"^(-?\d{4,})-(\d\d)-(\d\d)$")
_TIMESTAMP = re.compile(r"^(-?\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?Z?$")


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date with a year 0, as Arrow renders dates."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def parse_wide(text: str | None, arrow_type: pa.DataType) -> int | None:
    """A date or timestamp Arrow's parser refuses (a year outside 0000-9999), as days or microseconds."""
    if text is None:
        return None
    pattern = _DATE if pa.types.is_date32(arrow_type) else _TIMESTAMP
    match = pattern.match(text)
    if match is None:
        raise ValueError(f"cannot read {text!r} as {arrow_type}")
    parts = match.groups()
    days = days_from_civil(int(parts[0]), int(parts[1]), int(parts[2]))
    if pa.types.is_date32(arrow_type):
        return days
    seconds = days * 86400 + int(parts[3]) * 3600 + int(parts[4]) * 60 + int(parts[5])
    return seconds * 1_000_000 + int((parts[6] or "").ljust(6, "0"))


def decode_column(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    """JSON values back into an Arrow column of the declared type."""
    if _as_text(arrow_type):
        text = pa.array(values, pa.string())
        try:
            return text.cast(arrow_type)
        except pa.ArrowInvalid:
            if pa.types.is_decimal(arrow_type):
                raise
            storage = pa.int32() if pa.types.is_date32(arrow_type) else pa.int64()
            return pa.array([parse_wide(v, arrow_type) for v in values], storage).cast(arrow_type)
    if pa.types.is_binary(arrow_type):
        return pa.array([None if v is None else base64.b64decode(v) for v in values], arrow_type)
    if pa.types.is_floating(arrow_type):
        return pa.array([_decode_float(v) for v in values], arrow_type)
    return pa.array(values, arrow_type)


def encode_lines(batch: pa.RecordBatch, names: Sequence[str]) -> Iterator[str]:
    """The rows of ``batch`` (its first ``len(names)`` columns) as JSON lines keyed by ``names``."""
    columns = [encode_column(batch.column(i)) for i in range(len(names))]
    for values in zip(*columns, strict=True):
        yield json.dumps(dict(zip(names, values, strict=True)), ensure_ascii=False, allow_nan=False) + "\n"


def read_positions(directory: str, deletion_files: Iterable[str], data_file: str) -> set[int]:
    """The deleted row positions of ``data_file``, from the deletion files its manifest entry names."""
    positions: set[int] = set()
    for name in deletion_files:
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                if record["file"] == data_file:
                    positions.add(record["pos"])
    return positions


def read_rows(path: str, deleted: set[int], batch_rows: int) -> Iterator[tuple[list[int], list[dict[str, Any]]]]:
    """Live rows of a data file in chunks: (positions, row objects)."""
    positions: list[int] = []
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as f:
        for pos, line in enumerate(f):
            if pos in deleted:
                continue
            positions.append(pos)
            rows.append(json.loads(line))
            if len(rows) >= batch_rows:
                yield positions, rows
                positions, rows = [], []
    if rows:
        yield positions, rows


# ---- statistics for pruning


def has_stats(arrow_type: pa.DataType) -> bool:
    """Types whose min/max a file records: those whose order Python reproduces exactly (no floats: NaN)."""
    return (
        pa.types.is_integer(arrow_type)
        or pa.types.is_decimal(arrow_type)
        or pa.types.is_string(arrow_type)
        or pa.types.is_date32(arrow_type)
        or pa.types.is_timestamp(arrow_type)
    )


def min_max(arrays: Sequence[pa.Array]) -> tuple[Any, Any]:
    """The stored JSON values of the smallest and largest non-null value of ``arrays`` (None, None: all NULL)."""
    chunked = pa.chunked_array(arrays)
    result = pa.compute.min_max(chunked)
    low, high = result["min"], result["max"]
    if not low.is_valid:
        return None, None
    encoded = encode_column(pa.array([low, high], chunked.type))
    return encoded[0], encoded[1]
