"""Steps 4-8 of a MERGE (DESIGN.md §3, seed 002): what happens to the merge rows, by name.

- :func:`row_change_processor` (step 5): the connector's paradigm picks the processor
  (:mod:`.processors`, pure pyarrow); :class:`ProcessPages` runs it in Spark tasks.
- :func:`redistribution` (step 6): the routing key. Inserts go by the insert layout's columns (new values),
  deletes and updates by the update layout's columns (old values) or by the target row's unique id.
- :class:`DuplicateCheck` (step 4): all changes of one target row meet in one writer task (they are routed by
  that row, or the join produced them in one task), which refuses a second change of the same row with
  MERGE_TARGET_ROW_MULTIPLE_MATCHES.
- :class:`MergeWriter` (step 7): one writer task. Duplicate check, ``create_merge_sink`` /
  ``store_merged_rows`` / ``finish``; its fragments and counts go back to the driver as one row.
- :func:`gather` (step 8): every writer's fragments (``finish_merge`` receives them as one flat list) and
  the row counts, as :class:`DmlStats`.

:func:`run_merge_pipeline` strings these together over the merge rows of the Spark plan
(:mod:`.merge_rows`); MERGE by index lookups (:mod:`.lookup`) hands its merge rows to the same
:class:`MergeWriter`, with the processor fused into it.
"""

from __future__ import annotations

import datetime as dt
import os
import pickle
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.lazy_pyspark import F, T
from mergekit.execution.session import conf_for_block
from mergekit.planner import MergePlan
from mergekit.spi import (
    MERGE_PAGE_LAYOUT,
    ConnectorMergeTableHandle,
    ConnectorPageSinkProvider,
    ConnectorSession,
    MergeOperation,
    RowChangeParadigm,
)

from .layout import CASE, CHANGES, INSERT_FROM_UPDATE, MERGE_CASE, OLD_PREFIX, OP, ROW_ID, SEQ, UID, UNCHANGED
from .lengths import Bounded, bounded_columns, fit_page
from .merge_rows import q
from .processors import ChangeOnlyUpdatedColumnsMergeProcessor, DeleteAndInsertMergeProcessor, RowChangeProcessor

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "row_change_processor",
    "ProcessPages",
    "redistribution",
    "DuplicateCheck",
    "MergeWriter",
    "DmlStats",
    "gather",
    "merge_page_schema",
    "run_merge_pipeline",
]

WRITER_OUTPUT = "fragments binary, stats binary"


# ---- step 5: the row change processor --------------------------------------------------------------------


def row_change_processor(plan: MergePlan) -> RowChangeProcessor:
    """The processor of the target's paradigm: DELETE_ROW_AND_INSERT_ROW splits each UPDATE in two."""
    names = [c.name for c in plan.target.columns]
    if plan.paradigm is RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW:
        layout = plan.target.insert_layout
        return DeleteAndInsertMergeProcessor(names, layout.partition_columns if layout else ())
    return ChangeOnlyUpdatedColumnsMergeProcessor(names)


@attrs.frozen
class ProcessPages:
    """The processor as a Spark task (``mapInArrow``), before redistribution."""

    processor: RowChangeProcessor

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                yield self.processor.transform_page(batch)


# ---- step 6: redistribution ---------------------------------------------------------------------------------


def redistribution(plan: MergePlan) -> str:
    """Spark SQL over processed merge rows: the routing key of each row (the writer task it goes to)."""
    il = plan.target.insert_layout
    ul = plan.target.update_layout
    insert_key = f"hash({', '.join(q(c) for c in il.partition_columns)})" if il else f"hash({q(SEQ)})"
    update_key = f"hash({', '.join(q(OLD_PREFIX + c) for c in ul.partition_columns)})" if ul else f"hash({q(UID)})"
    inserts = f"{MergeOperation.INSERT.value}, {MergeOperation.UPDATE_INSERT.value}"
    return f"CASE WHEN {q(OP)} IN ({inserts}) THEN {insert_key} ELSE {update_key} END"


# ---- step 4: the duplicate-match check ----------------------------------------------------------------------


class DuplicateCheck:
    """Seed 002's check that no target row is changed twice, over the pages of one writer task.

    Every merge row that changes a target row (:data:`~.layout.CHANGES`) carries that row's :data:`~.layout.UID`;
    the plan sends all of them to one task, so two equal ids in one task are two source rows matching one
    target row. :meth:`verify` runs once the task has seen every page and before its sink finishes, so a
    failed check leaves nothing committed (the driver aborts the merge)."""

    def __init__(self, row_key: tuple[str, ...] = (), row_key_path: tuple[str, ...] = ()) -> None:
        self._row_key = row_key  # TargetTable.row_key: the key fields of a struct row id, which name the row
        self._row_key_path = row_key_path  # TargetTable.row_key_path: where in the row id they are
        self._uids: list[np.ndarray] = []
        self._pages: list[pa.RecordBatch] = []

    def add(self, page: pa.RecordBatch) -> None:
        changed = pc.is_in(page.column(OP), value_set=pa.array(CHANGES, pa.int8()))
        if pc.any(changed).as_py():
            rows = page.filter(changed).select([UID, ROW_ID])
            self._pages.append(rows)
            self._uids.append(rows.column(0).to_numpy(zero_copy_only=False))

    def verify(self) -> None:
        """Raises MERGE_TARGET_ROW_MULTIPLE_MATCHES, naming one target row matched twice: by its key columns
        (``id = 5``) when the row id carries them, else by its row id."""
        if not self._uids:
            return
        values, counts = np.unique(np.concatenate(self._uids), return_counts=True)
        dupes = values[counts > 1]
        if not len(dupes):
            return
        uid = dupes[0]
        row_id: Any = None
        for page in self._pages:
            index = pc.index(page.column(0), pa.scalar(int(uid), pa.int64())).as_py()
            if index >= 0:
                row_id = page.column(1)[index].as_py()
                break
        for name in self._row_key_path:  # () unless the row id wraps the struct of key fields
            row_id = row_id.get(name) if isinstance(row_id, dict) else None
        if self._row_key and isinstance(row_id, dict):
            shown = "target row: " + ", ".join(f"{k} = {sql_literal(row_id.get(k))}" for k in self._row_key)
        else:
            shown = f"target row id: {row_id!r}"
        raise MergekitError(
            ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES,
            f"One MERGE target table row matched more than one source row ({shown})",
        )


def sql_literal(value: Any) -> str:
    """A value as SQL writes it, for messages: ``5``, ``'a''b'``, ``DATE '2024-01-02'``, ``NULL``."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    return str(value)


# ---- step 7: the writer -------------------------------------------------------------------------------------


@attrs.frozen
class MergeWriter:
    """One writer task, on an executor: duplicate check, one merge sink, counts. Yields a single row back to
    the driver (:data:`WRITER_OUTPUT`). On any failure the sink is aborted and the failure raised."""

    provider: ConnectorPageSinkProvider
    session: ConnectorSession
    merge_handle: ConnectorMergeTableHandle
    data_columns: tuple[str, ...]
    check_duplicates: bool
    page_schema: pa.Schema
    processor: RowChangeProcessor | None = None  # set when processing is fused into the writer
    bounds: tuple[Bounded, ...] = ()  # VARCHAR(n) / CHAR(n) columns: values are fitted before the sink sees them
    row_key: tuple[str, ...] = ()  # TargetTable.row_key, for the duplicate-match message
    row_key_path: tuple[str, ...] = ()  # TargetTable.row_key_path

    @classmethod
    def of(
        cls,
        plan: MergePlan,
        provider: ConnectorPageSinkProvider,
        session: ConnectorSession,
        merge_handle: ConnectorMergeTableHandle,
        *,
        processing: bool,
    ) -> MergeWriter:
        """The writer of ``plan``'s merge rows; ``processing``: the rows come unprocessed and the writer runs the
        plan's row-change processor on them (else they come processed)."""
        return cls(
            provider,
            session,
            merge_handle,
            tuple(c.name for c in plan.target.columns),
            plan.duplicate_check,
            merge_page_schema(plan),
            row_change_processor(plan) if processing else None,
            bounded_columns(plan.target.columns),
            row_key=plan.target.row_key,
            row_key_path=plan.target.row_key_path or (),
        )

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ctx = _task_context()
        sink_id = (ctx.stageId() << 20) + ctx.partitionId() if ctx is not None else 0
        page_columns = [*self.data_columns, OP, CASE, ROW_ID, *self.page_schema.names[len(self.data_columns) + 3 :]]
        sink = None
        counts: dict[tuple[int, int], int] = {}
        unchanged = 0
        duplicates = DuplicateCheck(self.row_key, self.row_key_path) if self.check_duplicates else None
        try:
            for batch in batches:
                if self.processor is not None and batch.num_rows:
                    batch = self.processor.transform_page(batch)
                if not batch.num_rows:
                    continue
                if duplicates is not None:
                    duplicates.add(batch)
                _count(counts, batch.column(MERGE_CASE), batch.column(OP))
                batch, same = _without_unchanged(batch)
                unchanged += same
                if not batch.num_rows:
                    continue
                batch = fit_page(batch, self.bounds, OP, str(self.session.properties.get("statement", "")))
                if sink is None:
                    sink = self.provider.create_merge_sink(
                        session=self.session, merge_handle=self.merge_handle, sink_id=sink_id
                    )
                sink.store_merged_rows(_conform(batch.select(page_columns), self.page_schema))
            if duplicates is not None:
                duplicates.verify()
            fragments = list(sink.finish()) if sink is not None else []
        except BaseException:
            if sink is not None:
                try:
                    sink.abort()
                except Exception:  # the original failure matters more
                    pass
            raise
        stats = {
            "counts": counts,
            "pid": os.getpid(),
            "sink_id": sink_id,
            "unchanged": unchanged,
            "wrote": sink is not None,
        }
        yield pa.record_batch(
            {
                "fragments": pa.array([pickle.dumps(fragments)], pa.binary()),
                "stats": pa.array([pickle.dumps(stats)], pa.binary()),
            }
        )


def _without_unchanged(page: pa.RecordBatch) -> tuple[pa.RecordBatch, int]:
    """No-op update elimination: the page without its UPDATE rows whose new values equal the old ones (both halves
    of such an update after a DELETE_ROW_AND_INSERT_ROW processor), and how many updates those were. They were
    counted and duplicate-checked already; a sink never sees them."""
    if UNCHANGED not in page.schema.names:
        return page, 0
    same = pc.fill_null(page.column(UNCHANGED), False)
    if not pc.any(same).as_py():
        return page, 0
    updates = pc.and_(
        same,
        pc.is_in(page.column(OP), value_set=pa.array([MergeOperation.UPDATE, MergeOperation.UPDATE_INSERT], pa.int8())),
    )
    return page.filter(pc.invert(same)), int(pc.sum(updates.cast(pa.int64())).as_py() or 0)


def _count(counts: dict[tuple[int, int], int], cases: pa.Array, ops: pa.Array) -> None:
    """Add the rows per (case number, operation) of one page to ``counts``."""
    keys = pc.fill_null(cases, -1).to_numpy(zero_copy_only=False).astype(np.int64) * 8
    keys += pc.fill_null(ops, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    values, n = np.unique(keys, return_counts=True)
    for key, k in zip(values.tolist(), n.tolist(), strict=True):
        case, op = divmod(key, 8)
        counts[(case, op)] = counts.get((case, op), 0) + k


def _conform(page: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Pages reach sinks with one fixed schema (types and nullability as the table declares them), whatever
    Spark inferred for a particular batch."""
    if page.schema.equals(schema):
        return page
    return pa.RecordBatch.from_arrays([page.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema)


# ---- step 8 and the driver ---------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class DmlStats:
    row_count: int
    inserted: int
    updated: int
    deleted: int
    per_case: Mapping[int, Mapping[str, int]]
    writer_pids: tuple[int, ...]
    sinks: int  # writer tasks that stored rows in a merge sink
    unchanged: int = 0  # updates counted in ``updated`` whose new values equal the old: not written

    def metrics(self) -> dict[str, Any]:
        return {
            "inserted": self.inserted,
            "updated": self.updated,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "per_case": {k: dict(v) for k, v in sorted(self.per_case.items())},
            "sinks": self.sinks,
        }


def _processed_schema(rows: DataFrame, plan: MergePlan) -> T.StructType:
    fields = {f.name: f for f in rows.schema.fields}
    out = [fields[c.name] for c in plan.target.columns]
    out += [
        T.StructField(OP, T.ByteType(), True),
        T.StructField(CASE, T.IntegerType(), True),
        fields[ROW_ID],
        T.StructField(INSERT_FROM_UPDATE, T.ByteType(), True),
        T.StructField(MERGE_CASE, T.IntegerType(), True),
    ]
    computed = _computed_names(plan)
    out += [
        f
        for f in rows.schema.fields
        if f.name in (UID, SEQ, UNCHANGED) or f.name.startswith(OLD_PREFIX) or f.name in computed
    ]
    # the processor nulls some of these (the row id and uid of insert halves), whatever Spark inferred
    return T.StructType([T.StructField(f.name, f.dataType, True) for f in out])


def _computed_names(plan: MergePlan) -> tuple[str, ...]:
    layout = plan.target.insert_layout
    return tuple(c.name for c in layout.computed_columns) if layout is not None else ()


def run_merge_pipeline(
    spark: SparkSession,
    plan: MergePlan,
    rows: DataFrame,
    *,
    provider: ConnectorPageSinkProvider,
    session: ConnectorSession,
    merge_handle: ConnectorMergeTableHandle,
    colocated: bool = False,
    conditions_may_fail: bool = False,
) -> tuple[list[Any], DmlStats]:
    """Processor, redistribution and sinks over the merge rows; returns every sink's fragments and counts.
    Raises on any task failure (the caller aborts the merge).

    ``conditions_may_fail``: a WHEN condition may fail on a row (a cast, a division). The merge rows' sequence
    number (``monotonically_increasing_id``) then stays in the projection over the join: no deterministic filter
    passes a non-deterministic projection, so Spark cannot turn the drop of rows no clause takes (``WHERE $mr IS
    NOT NULL``) into a filter on the source below the join, which would evaluate a WHEN MATCHED condition on
    source rows that match no target row (Trino evaluates it only where a clause is tried).

    ``colocated``: every merge row of a target row comes out of one task of ``rows`` (a shuffle join on the
    ON clause's equality keys, see :attr:`~mergekit.execution.dml.merge_rows.MergeQueryBuilder.colocated`). Then the duplicate-match check runs
    in those tasks and, when the connector asks for no redistribution, processor and sink too: no shuffle
    after the join at all."""
    needs_shuffle = (
        (plan.duplicate_check and not colocated)
        or plan.target.insert_layout is not None
        or plan.target.update_layout is not None
    )
    if needs_shuffle:
        processed = rows.mapInArrow(ProcessPages(row_change_processor(plan)), _processed_schema(rows, plan))
        # no task count: adaptive execution sizes the writer stage by the rows it gets (one task for a 1-row
        # MERGE, whatever the session's spark.sql.shuffle.partitions says)
        routed = processed.repartition(F.expr(redistribution(plan)))
        writer = MergeWriter.of(plan, provider, session, merge_handle, processing=False)
        out = routed.mapInArrow(writer, WRITER_OUTPUT)
    else:
        # no routing: the sequence number (and, with no duplicate check, the target row's uid) would only be
        # converted to Arrow and shipped to the writer for nothing
        unused = ([] if conditions_may_fail else [SEQ]) + ([] if plan.duplicate_check else [UID])
        rows = rows.drop(*[c for c in unused if c in rows.columns])
        writer = MergeWriter.of(plan, provider, session, merge_handle, processing=True)
        out = rows.mapInArrow(writer, WRITER_OUTPUT)
    return gather(_collect(spark, out, colocated))


def merge_page_schema(plan: MergePlan) -> pa.Schema:
    """The schema of the pages merge sinks receive (``MergePageLayout``)."""
    page_schema = MERGE_PAGE_LAYOUT.schema(
        pa.schema([pa.field(c.name, c.type) for c in plan.target.columns]), plan.target.row_id.type
    )
    layout = plan.target.insert_layout
    for c in layout.computed_columns if layout is not None else ():
        page_schema = page_schema.append(pa.field(c.name, c.type))  # after $row_id (MergePageLayout)
    return page_schema


def gather(collected: Sequence[Any]) -> tuple[list[Any], DmlStats]:
    """Every writer's fragments and counts (one row per writer task: :class:`MergeWriter`)."""
    fragments: list[Any] = []
    counts: dict[tuple[int, int], int] = {}
    pids: list[int] = []
    sinks = unchanged = 0
    for row in collected:
        fragments.extend(pickle.loads(row["fragments"]))
        stats = pickle.loads(row["stats"])
        pids.append(stats["pid"])
        sinks += bool(stats["wrote"])
        unchanged += stats["unchanged"]
        for key, n in stats["counts"].items():
            counts[key] = counts.get(key, 0) + n
    return fragments, attrs.evolve(_stats(counts, pids, sinks), unchanged=unchanged)


_SKEW_JOIN = "spark.sql.adaptive.skewJoin.enabled"


def _collect(spark: SparkSession, out: DataFrame, colocated: bool) -> list[Any]:
    """Run the writers. A co-located plan must keep each target row in one task: adaptive execution's skew
    handling would split a large source partition and copy the target partition to each piece, so it is off
    while this statement runs."""
    if not colocated:
        return out.collect()
    with conf_for_block(spark, _SKEW_JOIN, "false"):
        return out.collect()


def _stats(counts: Mapping[tuple[int, int], int], pids: list[int], sinks: int) -> DmlStats:
    inserted = updated = deleted = 0
    per_case: dict[int, dict[str, int]] = {}
    for (case, op), n in counts.items():
        kind = {1: "inserted", 2: "deleted", 3: "updated", 4: "updated"}.get(op)
        if kind is None:
            continue  # UPDATE_DELETE: the update is counted once, on its insert half
        per_case.setdefault(case, {"inserted": 0, "updated": 0, "deleted": 0})[kind] += n
        if kind == "inserted":
            inserted += n
        elif kind == "updated":
            updated += n
        else:
            deleted += n
    return DmlStats(
        row_count=inserted + updated + deleted,
        inserted=inserted,
        updated=updated,
        deleted=deleted,
        per_case=per_case,
        writer_pids=tuple(sorted(set(pids))),
        sinks=sinks,
    )


def _task_context() -> Any:
    """The Spark task this runs in; None in the engine's process, which may not have imported pyspark (a Spark
    worker has)."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import TaskContext

    return TaskContext.get()
