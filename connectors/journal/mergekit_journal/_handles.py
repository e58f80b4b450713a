"""Picklable values the journal connector passes between driver and executors.

Handles carry everything an executor needs (the table's spec, its location, the file list of a split), so
page sources and sinks never open the catalog: on a cluster only the driver can reach it.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

import attrs
import pyarrow as pa

from mergekit.spi import (
    CheckConstraint,
    ColumnMetadata,
    ConnectorMergeTableHandle,
    ConnectorSplit,
    ConnectorTableHandle,
    MergeOperation,
    MonotonicColumn,
    SchemaTableName,
    StreamDefinition,
)

from ._config import BIGINT

__all__ = [
    "TableSpec",
    "JournalTableHandle",
    "JournalMergeHandle",
    "FileRef",
    "JournalSplit",
    "JournalFragment",
    "HIDDEN_ROW_ID",
    "ROW_KEY",
    "OP_COLUMN",
    "VERSION_COLUMN",
    "SUBSEQUENT_COLUMN",
    "CHANGE_TYPE",
    "COMMIT_VERSION",
    "COMMIT_TIMESTAMP",
    "CHANGE_STREAM",
    "CHANGE_STREAM_PROPERTY",
    "encode_value",
    "decode_value",
]

HIDDEN_ROW_ID = "_row_id"
"""The key column of a table declared without a key (hidden, varchar ``<statement>-<sink>-<n>``, assigned at INSERT)."""
ROW_KEY = "$journal_key"
"""Name of the merge row-id column: a struct of the key columns, requested from the target scan."""
OP_COLUMN = "__mk_op"
"""Stored in every data file: the merge operation that produced the row (1, 2, 3, 4 or 5)."""
VERSION_COLUMN = "__mk_version"
SUBSEQUENT_COLUMN = "__mk_subsequent"
"""Explicit per-row versions, only in files that hold several versions (compacted or raw journal inserts)."""
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"

AUTO_COMPACT_PROPERTY = "auto_compact"
"""The table property that turns compaction after commits on (the default) or off (``_compaction``)."""
AUTO_COMPACT_FILES_PROPERTY = "auto_compact_files"
"""The table property: how many small files in a row an automatic compaction merges (``_compaction``)."""
AUTO_COMPACT_FILES = 8
"""Its default: measured in bench/small_commits.py (docs/performance.md)."""
CHANGE_STREAM_PROPERTY = "change_feed_stream"
"""The table property that makes a table's change feed a stream (``_streams.change_feed``)."""
CHANGE_STREAM = StreamDefinition(
    monotonic=(MonotonicColumn(name=COMMIT_VERSION), MonotonicColumn(name=COMMIT_TIMESTAMP)), history=True
)
"""The ``change_stream`` ``get_table_metadata`` reports for such a table: both change columns strictly increase."""

TOMBSTONE_OPS = (MergeOperation.DELETE.value, MergeOperation.UPDATE_DELETE.value)
# Rows that give a key that was not live before (INSERT; the new key of an UPDATE that moves a key): under a
# declared key, checked at commit, so such a row supersedes no base row (the base's row of that key, if any,
# was deleted by an earlier delta, which names the key itself).
ARRIVAL_OPS = (MergeOperation.INSERT.value, MergeOperation.UPDATE_INSERT.value)


@attrs.frozen(kw_only=True)
class TableSpec:
    """The shape of a journalled table.

    ``columns``: the stored business columns in declaration order (a hidden ``_row_id`` when no key was
    given); ``key``: key column names; ``journal_order``: column order of ``<t>_journal`` including the two
    version fields (the seed lets them sit anywhere); ``version_type``: ``bigint`` or
    ``timestamp with time zone``.

    Column mapping (Delta's "name" mode): data files hold each column under its *physical* name, which
    never changes. ``physical_names`` maps a column whose physical name differs from its name (it was renamed,
    or added under a name an earlier column's files used); ``retired`` lists the physical names of dropped
    columns, never given out again, so a column re-added under a dropped name does not read the old values.
    Files keep the type they were written with; reads cast them to the column's type (a widening).
    """

    columns: tuple[ColumnMetadata, ...] = attrs.field(converter=tuple)
    key: tuple[str, ...] = attrs.field(converter=tuple)
    hidden_key: bool
    version_field: str
    subsequent_field: str
    version_type: str
    journal_order: tuple[str, ...] = attrs.field(converter=tuple)
    physical_names: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=tuple)
    retired: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    # CHECK constraints, in order (the engine enforces them; a column's DEFAULT text is on its ColumnMetadata)
    check_constraints: tuple[CheckConstraint, ...] = attrs.field(default=(), converter=tuple)
    # set when the table is a stream (``CREATE STREAM``; see ``_streams.tables``): rows are only inserted
    stream: StreamDefinition | None = None
    # table property ``change_feed_stream``: the table's change feed is also a stream (``_streams.change_feed``)
    change_stream: bool = False
    # table properties ``auto_compact`` and ``auto_compact_files``: compaction after commits (``_compaction``)
    auto_compact: bool = True
    auto_compact_files: int = AUTO_COMPACT_FILES

    def physical(self, name: str) -> str:
        """The name column ``name`` has in data files (its own name unless mapped)."""
        for logical, physical in self.physical_names:
            if logical == name:
                return physical
        return name

    def fresh_physical(self, name: str) -> str:
        """A physical name for a new column ``name``: its own unless a column's files or a dropped column's
        ever used it, else ``name#<n>``."""
        used = {self.physical(c.name) for c in self.columns} | set(self.retired)
        used |= {OP_COLUMN, VERSION_COLUMN, SUBSEQUENT_COLUMN}
        candidate, n = name, 0
        while candidate in used:
            n += 1
            candidate = f"{name}#{n}"
        return candidate

    def with_physical(self, mapping: dict[str, str]) -> tuple[tuple[str, str], ...]:
        """``physical_names`` for ``mapping`` (logical -> physical), without the identities, in column order."""
        order = {c.name: i for i, c in enumerate(self.columns)}
        pairs = [(k, v) for k, v in mapping.items() if k != v]
        return tuple(sorted(pairs, key=lambda kv: order.get(kv[0], len(order))))

    @property
    def visible(self) -> tuple[ColumnMetadata, ...]:
        return tuple(c for c in self.columns if not c.hidden)

    def column(self, name: str) -> ColumnMetadata:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def version_arrow_type(self) -> pa.DataType:
        return pa.int64() if self.version_type == BIGINT else pa.timestamp("us", tz="UTC")

    @property
    def key_type(self) -> pa.DataType:
        return pa.struct([pa.field(k, self.column(k).type) for k in self.key])

    @property
    def file_schema(self) -> pa.Schema:
        """Schema of a data file written by a sink: stored columns (by physical name), then the operation."""
        return pa.schema(
            [pa.field(self.physical(c.name), c.type) for c in self.columns] + [pa.field(OP_COLUMN, pa.int8())]
        )

    @property
    def explicit_file_schema(self) -> pa.Schema:
        """Schema of a file that carries its own versions (compaction output, raw journal inserts)."""
        return pa.schema(
            list(self.file_schema) + [pa.field(VERSION_COLUMN, pa.int64()), pa.field(SUBSEQUENT_COLUMN, pa.int64())]
        )

    # -- catalog serialisation (the Arrow schema keeps exact types, including nested ones) --------------

    def to_json(self) -> str:
        extra: dict[str, Any] = {} if self.stream is None else {"stream": _stream_to_json(self.stream)}
        if self.change_stream:
            extra["change_feed_stream"] = True
        if not self.auto_compact:
            extra["auto_compact"] = False
        if self.auto_compact_files != AUTO_COMPACT_FILES:
            extra["auto_compact_files"] = self.auto_compact_files
        fields = []
        for c in self.columns:
            meta = {"nullable": str(c.nullable), "hidden": str(c.hidden)}
            if c.comment is not None:
                meta["comment"] = c.comment
            if c.type_name is not None:
                meta["type_name"] = c.type_name
            if c.default is not None:
                meta["default"] = c.default
            fields.append(pa.field(c.name, c.type, metadata=meta))
        schema_b64 = base64.b64encode(pa.schema(fields).serialize().to_pybytes()).decode()
        return json.dumps(
            {
                "schema": schema_b64,
                "key": list(self.key),
                "hidden_key": self.hidden_key,
                "version_field": self.version_field,
                "subsequent_field": self.subsequent_field,
                "version_type": self.version_type,
                "journal_order": list(self.journal_order),
                "physical_names": dict(self.physical_names),
                "retired": list(self.retired),
                "check_constraints": [[c.name, c.expression] for c in self.check_constraints],
                **extra,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> TableSpec:
        d = json.loads(text)
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(d["schema"])))
        columns = []
        for f in schema:
            meta = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
            columns.append(
                ColumnMetadata(
                    name=f.name,
                    type=f.type,
                    nullable=meta.get("nullable") == "True",
                    hidden=meta.get("hidden") == "True",
                    comment=meta.get("comment"),
                    type_name=meta.get("type_name"),
                    default=meta.get("default"),
                )
            )
        return cls(
            columns=columns,
            key=d["key"],
            hidden_key=d["hidden_key"],
            version_field=d["version_field"],
            subsequent_field=d["subsequent_field"],
            version_type=d["version_type"],
            journal_order=d["journal_order"],
            physical_names=tuple(d.get("physical_names", {}).items()),
            retired=d.get("retired", ()),
            check_constraints=[CheckConstraint(name=n, expression=e) for n, e in d.get("check_constraints", ())],
            stream=_stream_from_json(d["stream"]) if d.get("stream") is not None else None,
            change_stream=bool(d.get("change_feed_stream", False)),
            auto_compact=bool(d.get("auto_compact", True)),
            auto_compact_files=int(d.get("auto_compact_files", AUTO_COMPACT_FILES)),
        )


def _stream_to_json(stream: StreamDefinition) -> dict[str, Any]:
    """A stream's definition as JSON: the monotonic columns, the slack (a timedelta in microseconds) and
    whether it is also a table (history)."""
    slack: Any = None
    if isinstance(stream.slack, dt.timedelta):
        slack = ["timedelta", stream.slack // dt.timedelta(microseconds=1)]
    elif stream.slack is not None:
        slack = ["int", int(stream.slack)]
    return {"monotonic": [[m.name, m.descending] for m in stream.monotonic], "slack": slack, "history": stream.history}


def _stream_from_json(d: dict[str, Any]) -> StreamDefinition:
    slack: dt.timedelta | int | None = None
    if d.get("slack") is not None:
        tag, value = d["slack"]
        slack = dt.timedelta(microseconds=value) if tag == "timedelta" else int(value)
    return StreamDefinition(
        monotonic=[MonotonicColumn(name=n, descending=bool(desc)) for n, desc in d["monotonic"]],
        slack=slack,
        history=bool(d.get("history", False)),
    )


@attrs.frozen(kw_only=True)
class FileRef:
    """One data file as a split sees it. ``row_version`` is the version of every row of a file written by a
    sink (its commit's version, as an int: a number, or microseconds since the epoch for timestamp
    journals); files with ``explicit_versions`` carry per-row versions instead. ``seq`` is the commit that
    added the file (``_commit_version`` in the change feed)."""

    path: str
    seq: int
    row_version: int
    explicit_versions: bool
    committed_at: int = 0


@attrs.frozen(kw_only=True)
class JournalTableHandle(ConnectorTableHandle):
    """A snapshot of one journalled table, seen as ``kind``:

    * ``logical``: ``<t>``, the latest live version per key;
    * ``journal``: ``<t>_journal``, every stored version with both version fields;
    * ``changes``: the change feed of commits ``from_seq``..``snapshot_seq``.

    ``time_travel`` marks a handle from ``FOR VERSION/TIMESTAMP AS OF`` (read-only).
    """

    table_id: int
    kind: str
    logical: SchemaTableName
    snapshot_seq: int
    spec: TableSpec = attrs.field(eq=False, hash=False)
    location: str
    time_travel: bool = False
    from_seq: int | None = None
    schema_seq: int = 0


@attrs.frozen(kw_only=True)
class JournalMergeHandle(ConnectorMergeTableHandle):
    """One statement's write: ``merge_id`` names its staging folder, ``statement_id`` seeds hidden row ids.
    ``added_columns``: columns a ``MERGE WITH SCHEMA EVOLUTION`` adds; the table handle's spec already has them
    (sinks write them) and the commit records that spec with the rows. ``job_batch``: the streaming job's batch
    the statement runs (``_streams.jobs``), recorded in the commit."""

    merge_id: str
    statement_id: int
    raw_journal: bool = False
    update_case_columns: tuple[tuple[int, tuple[str, ...]], ...] = ()
    added_columns: tuple[str, ...] = ()
    job_batch: tuple[str, int] | None = None  # a streaming job's (job, batch id), committed with the rows


@attrs.frozen(kw_only=True)
class JournalSplit(ConnectorSplit):
    """Work for one page source.

    ``mode``: ``plain`` (files without superseded rows: drop tombstones, no version resolution),
    ``resolve`` (files that must be resolved together: latest version per key), ``journal`` (raw rows with
    materialised version fields), ``changes`` (rows of the given commits with their change type) or ``stream``
    (the files of one commit of a stream, their rows sorted stably by its first monotonic column).
    ``feed`` is ``changes`` keeping only inserted rows and the new rows of updates (a change stream's commit).
    ``change_label`` turns a ``resolve``/``plain`` read of the previous snapshot into ``delete`` changes
    (how a TRUNCATE appears in the change feed). ``bucket`` splits a large ``resolve`` group into tasks
    that each resolve a disjoint share of the keys (all versions of a key share its bucket). ``key_values``
    (sorted, of the single key column's type) keeps only rows with one of those keys: the values the engine
    collected from a MERGE source or a ``WHERE key IN (...)``; row groups whose statistics rule them all out
    are not read. With ``exclude_keys``, the opposite: rows with one of those keys are dropped (base rows
    whose keys the deltas supersede).
    """

    mode: str
    files: tuple[FileRef, ...] = attrs.field(converter=tuple)
    change_label: str | None = None
    change_seq: int = 0
    change_committed_at: int = 0
    bucket: tuple[int, int] | None = None  # resolve only the keys with hash(key) % n == i: (i, n)
    key_values: pa.Array | None = attrs.field(default=None, eq=False)
    exclude_keys: bool = False


@attrs.frozen(kw_only=True)
class JournalFragment:
    """What a sink wrote: one Parquet file and the stats ``finish_merge`` needs without reading it.

    ``key_min``/``key_max``: bounds of the first key column over all rows; ``sup_min``/``sup_max``: bounds
    over rows that supersede an earlier version (updates, deletes, key moves), None when there are none.
    """

    path: str
    row_count: int
    size_bytes: int
    key_min: Any
    key_max: Any
    sup_min: Any
    sup_max: Any
    inserts: int
    updates: int
    deletes: int
    moves: int
    explicit_versions: bool = False
    min_explicit_version: int | None = None
    max_explicit_version: int | None = None
    # a stream's file: (column, low, high, null count) of each monotonic column, in the definition's order
    monotonic: tuple[tuple[str, Any, Any, int], ...] = ()


# -- stats encoding: python values <-> JSON text in the catalog, comparable after decoding --------------


def encode_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return json.dumps(["bool", value])
    if isinstance(value, int):
        return json.dumps(["int", value])
    if isinstance(value, float):
        return json.dumps(["float", value])
    if isinstance(value, decimal.Decimal):
        return json.dumps(["decimal", str(value)])
    if isinstance(value, str):
        return json.dumps(["str", value])
    if isinstance(value, bytes):
        return json.dumps(["bytes", base64.b64encode(value).decode()])
    if isinstance(value, dt.datetime):
        return json.dumps(["datetime", value.isoformat()])
    if isinstance(value, dt.date):
        return json.dumps(["date", value.isoformat()])
    return None  # not comparable: no pruning on this file


def decode_value(text: str | None) -> Any:
    if text is None:
        return None
    tag, v = json.loads(text)
    if tag == "decimal":
        return decimal.Decimal(v)
    if tag == "bytes":
        return base64.b64decode(v)
    if tag == "datetime":
        return dt.datetime.fromisoformat(v)
    if tag == "date":
        return dt.date.fromisoformat(v)
    return v
