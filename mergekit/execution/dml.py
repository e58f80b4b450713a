"""Running a :class:`~mergekit.planner.MergePlan` on Spark (DESIGN.md §3, steps 1-8).

1-3. One Spark SQL query: the target scan with ``$present`` and a unique ``$uid``, joined to the source,
     and a searched CASE that yields the merge row (a struct of the new column values, the operation and
     the case number) or NULL when no WHEN clause applies; NULL rows are dropped.
5.   The row change processor (pure pyarrow, :mod:`mergekit.execution.processors`) in ``mapInArrow``.
6.   Redistribution: ``repartition`` on a routing key: inserts by the insert layout's columns (new values),
     deletes and updates by the update layout's columns (old values) or by the target row's unique id.
4,7. Writer tasks on executors: the duplicate-match check (all changes of one target row meet in one task,
     because they are routed by that row), then ``create_merge_sink`` / ``store_merged_rows`` / ``finish``.
     Fragments and counts come back to the driver, which calls ``finish_merge`` (or ``abort_merge``).
8.   Row count and metrics from the writers' counts.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from mergekit.errors import ErrorCode, MergekitError
from mergekit.planner import JoinKind, MergePlan, PlannedCase
from mergekit.spi import (
    MERGE_PAGE_LAYOUT,
    ConnectorMergeTableHandle,
    ConnectorPageSinkProvider,
    ConnectorSession,
    MergeOperation,
    RowChangeParadigm,
)
from mergekit.sql import Expression, MergeCaseKind

from .processors import (
    INSERT_FROM_UPDATE,
    MERGE_CASE,
    OLD_PREFIX,
    ChangeOnlyUpdatedColumnsMergeProcessor,
    DeleteAndInsertMergeProcessor,
    RowChangeProcessor,
)
from .types import coercible, spark_sql_type, trino_name

__all__ = ["MergeQueryBuilder", "DmlStats", "run_merge_pipeline", "q", "gather", "merge_page_schema"]

OP = MERGE_PAGE_LAYOUT.operation
CASE = MERGE_PAGE_LAYOUT.case_number
ROW_ID = MERGE_PAGE_LAYOUT.row_id
UID = "$uid"
SEQ = "$seq"
MR = "$mr"
PRESENT = "$present"
SPRESENT = "$spresent"
SRC = "$src"


def q(name: str) -> str:
    """Backtick-quote a Spark identifier."""
    return "`" + name.replace("`", "``") + "`"


def _lit(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@attrs.frozen(kw_only=True)
class MergeQueryBuilder:
    """Builds the Spark SQL of the merge rows for one plan.

    ``render`` turns a statement expression into Spark SQL (tables in subqueries already bound);
    ``column_types`` are the Spark types of the target's visible columns; ``row_id_type`` the Spark type of
    the row id column; ``target_view``/``source_from`` the FROM items.
    """

    plan: MergePlan
    render: Callable[[Expression], str]
    column_types: Mapping[str, T.DataType]
    row_id_type: T.DataType
    target_view: str | None
    source_from: str | None = None  # Spark SQL FROM item for the source (no alias)
    source_columns: tuple[str, ...] = ()  # INSERT: names given to source columns by position
    computed: tuple[tuple[str, str], ...] = ()  # (name, Spark SQL over the new column values): ComputedColumn
    # Equality conjuncts of ON as Spark SQL (target side, source side). With any, the join is a shuffle join
    # partitioned on them, so every merge row of one target row comes out of one task (see ``colocated``).
    join_keys: tuple[tuple[str, str], ...] = ()
    # Pre-filter the target to rows whose join keys occur in the source (a broadcast semi join): a RIGHT
    # join then shuffles the rows that can match, not the whole target. Only when the source is small.
    reduce_target: bool = False
    # How the source's key values are collected for dynamic pruning (see ``Engine._source_key_values``):
    # None (not worth it), "distinct" (a DISTINCT ... LIMIT into Python values) or "arrow" (every key value
    # through Arrow, deduplicated on the driver: sources of up to millions of keys).
    collect_key_values: str | None = None
    # Target columns whose value sets the connector puts to use ("arrow" collects only for these).
    value_set_columns: frozenset[str] = frozenset()
    # Per join key: the target column when the target side is a bare column (``t.id``), else None.
    key_columns: tuple[str | None, ...] = ()
    # A large source joined on one equality: worth a MERGE by index lookups (``Engine._lookup_merge``).
    lookup: bool = False

    @property
    def colocated(self) -> bool:
        """Whether all merge rows of a target row are produced by one task of the join stage, so the
        duplicate-match check can run there without another shuffle."""
        return bool(self.join_keys) and self.plan.join in (JoinKind.RIGHT, JoinKind.FULL)

    # ---- FROM clause -------------------------------------------------------------------------------

    def _target_sub(self) -> str:
        alias = q(self.plan.target_alias)
        source = f"{q(self.target_view or '')} AS {alias}"
        if self.reduce_target and self.join_keys:
            keys = ", ".join(f"{s} AS `$k{i}`" for i, (_, s) in enumerate(self.join_keys))
            on = " AND ".join(f"{t} = `$keys`.`$k{i}`" for i, (t, _) in enumerate(self.join_keys))
            source = (
                f"(SELECT /*+ BROADCAST(`$keys`) */ {alias}.* FROM {source} LEFT SEMI JOIN "
                f"(SELECT {keys} FROM {self.source_sub()}) AS `$keys` ON {on}) AS {alias}"
            )
        return f"(SELECT *, TRUE AS {q(PRESENT)}, monotonically_increasing_id() AS {q(UID)} FROM {source}) AS {alias}"

    def join_keys_sql(self) -> str:
        """The source side's join keys over the source (to estimate their size)."""
        keys = ", ".join(f"{s} AS `$k{i}`" for i, (_, s) in enumerate(self.join_keys))
        return f"SELECT {keys} FROM {self.source_sub()}"

    def key_values_sql(self, index: int, limit: int | None = None) -> str:
        """The non-null values of the source side of join key ``index``: up to ``limit`` distinct ones, or
        (no limit) every row's."""
        key = self.join_keys[index][1]
        if limit is None:
            return f"SELECT {key} AS `$k` FROM {self.source_sub()} WHERE {key} IS NOT NULL"
        return f"SELECT DISTINCT {key} AS `$k` FROM {self.source_sub()} WHERE {key} IS NOT NULL LIMIT {limit}"

    def source_sub(self) -> str:
        """The source as a FROM item under its alias, with a `$spresent` column (TRUE on every row)."""
        plan = self.plan
        relation = plan.source
        aliases = getattr(relation, "column_aliases", ())
        inner = f"{self.source_from} AS {q(SRC)}"
        if aliases:
            inner += "(" + ", ".join(q(a) for a in aliases) + ")"
        return f"(SELECT *, TRUE AS {q(SPRESENT)} FROM {inner}) AS {q(plan.source_alias or SRC)}"

    def from_clause(self) -> str:
        plan = self.plan
        if plan.join is JoinKind.SCAN:
            where = f" WHERE {self.render(plan.where)}" if plan.where is not None else ""
            return f"FROM {self._target_sub()}{where}"
        if plan.join is JoinKind.SOURCE:
            cols = ", ".join(q(c) for c in self.source_columns)
            return f"FROM ({self.source_from}) AS {q(SRC)}({cols})"
        on = self.render(plan.on) if plan.on is not None else "TRUE"
        if plan.join is JoinKind.ANTI:
            return f"FROM {self.source_sub()} LEFT ANTI JOIN {self._target_sub()} ON {on}"
        join = "FULL OUTER JOIN" if plan.join is JoinKind.FULL else "RIGHT OUTER JOIN"
        return f"FROM {self._target_sub()} {join} {self.source_sub()} ON {on}"

    # ---- CASE -------------------------------------------------------------------------------------

    def _has_target(self) -> bool:
        return self.plan.join in (JoinKind.RIGHT, JoinKind.FULL, JoinKind.SCAN)

    def _target_ref(self, column: str) -> str:
        return f"{q(self.plan.target_alias)}.{q(column)}"

    def case_guard(self, case: PlannedCase) -> str:
        plan = self.plan
        t_present = f"{q(plan.target_alias)}.{q(PRESENT)}"
        s_present = f"{q(plan.source_alias or SRC)}.{q(SPRESENT)}"
        if plan.join in (JoinKind.SCAN, JoinKind.SOURCE, JoinKind.ANTI):
            guard = "TRUE"
        elif case.kind is MergeCaseKind.MATCHED:
            guard = f"{t_present} IS NOT NULL"
            if plan.join is JoinKind.FULL:
                guard += f" AND {s_present} IS NOT NULL"
        elif case.kind is MergeCaseKind.NOT_MATCHED:
            guard = f"{t_present} IS NULL"
        else:
            guard = f"{s_present} IS NULL"
        if case.condition is not None:
            guard = f"({guard}) AND ({self.render(case.condition)})"
        return guard

    def raw_value(self, case: PlannedCase, index: int) -> str | None:
        """The case's own expression for column ``index`` (before coercion), or None."""
        if self.plan.join is JoinKind.SOURCE:
            column = self.plan.target.columns[index].name
            if column in case.set_columns:
                return f"{q(SRC)}.{q(self.source_columns[case.set_columns.index(column)])}"
            return None
        expr = case.values[index]
        return self.render(expr) if expr is not None else None

    def value(self, case: PlannedCase, index: int, value_types: Mapping[tuple[int, int], T.DataType]) -> str:
        column = self.plan.target.columns[index]
        target_type = self.column_types[column.name]
        type_sql = spark_sql_type(target_type)
        raw = self.raw_value(case, index)
        if raw is None:
            if case.operation is not MergeOperation.INSERT and self._has_target():
                return self._target_ref(column.name)
            if case.operation is MergeOperation.DELETE:
                return f"CAST(NULL AS {type_sql})"
            raw = "NULL"
        value_type = value_types.get((case.number, index))
        if (
            value_type is not None
            and isinstance(value_type, T.FractionalType)
            and isinstance(target_type, T.IntegralType)
        ):
            raw = f"ROUND({raw})"  # Trino rounds when casting a fraction to an integer; Spark truncates
        value = f"CAST(({raw}) AS {type_sql})"
        if not column.nullable:
            message = _lit(f"[CONSTRAINT_VIOLATION] NULL value not allowed for NOT NULL column: {column.name}")
            value = f"COALESCE({value}, raise_error({message}))"
        return value

    def merge_row(self, value_types: Mapping[tuple[int, int], T.DataType]) -> str:
        whens = []
        for case in self.plan.cases:
            fields = []
            for i, column in enumerate(self.plan.target.columns):
                fields.append(f"{_lit(column.name)}, {self.value(case, i, value_types)}")
            fields.append(f"{_lit(OP)}, CAST({case.operation.value} AS TINYINT)")
            fields.append(f"{_lit(CASE)}, {case.number}")
            whens.append(f"WHEN {self.case_guard(case)} THEN named_struct({', '.join(fields)})")
        return "CASE " + " ".join(whens) + " END"

    def _internal_columns(self) -> list[str]:
        plan = self.plan
        row_id_sql = spark_sql_type(self.row_id_type)
        if self._has_target():
            cols = [
                f"{self._target_ref(UID)} AS {q(UID)}",
                f"{self._target_ref(plan.target.row_id.name)} AS {q(ROW_ID)}",
            ]
            cols += [f"{self._target_ref(c)} AS {q(OLD_PREFIX + c)}" for c in plan.redistribution_columns]
        else:
            cols = [f"CAST(NULL AS BIGINT) AS {q(UID)}", f"CAST(NULL AS {row_id_sql}) AS {q(ROW_ID)}"]
            cols += [
                f"CAST(NULL AS {spark_sql_type(self.column_types[c])}) AS {q(OLD_PREFIX + c)}"
                for c in plan.redistribution_columns
            ]
        cols.append(f"monotonically_increasing_id() AS {q(SEQ)}")
        return cols

    def merge_rows_sql(self, value_types: Mapping[tuple[int, int], T.DataType]) -> str:
        # A shuffle (sort-merge) join on the equality keys, never a broadcast of the target: see ``colocated``.
        hint = f"/*+ MERGE({q(self.plan.target_alias)}) */ " if self.colocated else ""
        inner = (
            f"SELECT {hint}{self.merge_row(value_types)} AS {q(MR)}, {', '.join(self._internal_columns())} "
            f"{self.from_clause()}"
        )
        outer = [f"{q(MR)}.{q(c.name)} AS {q(c.name)}" for c in self.plan.target.columns]
        outer += [f"{q(MR)}.{q(OP)} AS {q(OP)}", f"{q(MR)}.{q(CASE)} AS {q(CASE)}", q(ROW_ID), q(UID), q(SEQ)]
        outer += [q(OLD_PREFIX + c) for c in self.plan.redistribution_columns]
        rows = f"SELECT {', '.join(outer)} FROM ({inner}) AS `$rows` WHERE {q(MR)} IS NOT NULL"
        if not self.computed:
            return rows
        # the insert layout's computed columns, over each merge row's new values (appended to merge pages)
        extra = ", ".join(f"{sql} AS {q(name)}" for name, sql in self.computed)
        return f"SELECT *, {extra} FROM ({rows}) AS `$computed`"

    def probe_sql(self) -> tuple[str, list[tuple[int, int]]]:
        """A query whose output types are the raw values of every case (and whose analysis checks the ON
        clause and case conditions), for type checking before anything runs."""
        items: list[str] = []
        keys: list[tuple[int, int]] = []
        for case in self.plan.cases:
            for i in range(len(self.plan.target.columns)):
                raw = self.raw_value(case, i)
                if raw is not None:
                    items.append(f"({raw}) AS `$v{case.number}_{i}`")
                    keys.append((case.number, i))
            items.append(f"({self.case_guard(case)}) AS `$c{case.number}`")
        return f"SELECT {', '.join(items) or '1'} {self.from_clause()}", keys


def check_types(
    plan: MergePlan, builder: MergeQueryBuilder, probe_schema: T.StructType, keys: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], T.DataType]:
    """Trino's typesMatchForInsert over every assigned value; raises TYPE_MISMATCH with Trino's message."""
    by_name = {f.name: f.dataType for f in probe_schema.fields}
    value_types = {(n, i): by_name[f"$v{n}_{i}"] for (n, i) in keys}
    for field in probe_schema.fields:
        if field.name.startswith("$c") and not isinstance(field.dataType, T.BooleanType | T.NullType):
            what = "The MERGE predicate" if plan.statement == "MERGE" else "WHERE clause predicate"
            raise MergekitError(
                ErrorCode.TYPE_MISMATCH, f"{what} must evaluate to a boolean: actual type {trino_name(field.dataType)}"
            )
    for case in plan.cases:
        idx = [i for (n, i) in keys if n == case.number]
        bad = [
            i
            for i in idx
            if not coercible(value_types[(case.number, i)], builder.column_types[plan.target.columns[i].name])
        ]
        if not bad:
            continue
        table = ", ".join(trino_name(builder.column_types[plan.target.columns[i].name]) for i in idx)
        exprs = ", ".join(trino_name(value_types[(case.number, i)]) for i in idx)
        if plan.statement == "UPDATE":
            message = f"UPDATE table column types don't match SET expressions: Table: [{table}], Expressions: [{exprs}]"
        elif plan.statement == "INSERT":
            message = f"Insert query has mismatched column types: Table: [{table}], Query: [{exprs}]"
        else:
            message = (
                f"MERGE table column types don't match for MERGE case {case.number}, SET expressions: "
                f"Table: [{table}], Expressions: [{exprs}]"
            )
        raise MergekitError(ErrorCode.TYPE_MISMATCH, message)
    return value_types


# ---- executors -------------------------------------------------------------------------------------------


@attrs.frozen
class _Process:
    processor: RowChangeProcessor

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                yield self.processor.transform_page(batch)


@attrs.frozen
class _Write:
    """One writer task: duplicate check, one merge sink, counts. Yields a single row back to the driver."""

    provider: ConnectorPageSinkProvider
    session: ConnectorSession
    merge_handle: ConnectorMergeTableHandle
    data_columns: tuple[str, ...]
    check_duplicates: bool
    page_schema: pa.Schema
    processor: RowChangeProcessor | None = None  # set when processing is fused into the writer

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        sink_id = (ctx.stageId() << 20) + ctx.partitionId() if ctx is not None else 0
        page_columns = [*self.data_columns, OP, CASE, ROW_ID, *self.page_schema.names[len(self.data_columns) + 3 :]]
        sink = None
        counts: dict[tuple[int, int], int] = {}
        changed_uids: list[np.ndarray] = []
        changed_pages: list[pa.RecordBatch] = []
        try:
            for batch in batches:
                if self.processor is not None and batch.num_rows:
                    batch = self.processor.transform_page(batch)
                if not batch.num_rows:
                    continue
                ops = batch.column(OP)
                if self.check_duplicates:
                    changed = pc.is_in(ops, value_set=pa.array([2, 3, 5], pa.int8()))
                    if pc.any(changed).as_py():
                        rows = batch.filter(changed).select([UID, ROW_ID])
                        changed_pages.append(rows)
                        changed_uids.append(rows.column(0).to_numpy(zero_copy_only=False))
                _count(counts, batch.column(MERGE_CASE), ops)
                if sink is None:
                    sink = self.provider.create_merge_sink(
                        session=self.session, merge_handle=self.merge_handle, sink_id=sink_id
                    )
                sink.store_merged_rows(_conform(batch.select(page_columns), self.page_schema))
            if changed_uids:
                _check_duplicates(changed_uids, changed_pages)
            fragments = list(sink.finish()) if sink is not None else []
        except BaseException:
            if sink is not None:
                try:
                    sink.abort()
                except Exception:  # noqa: BLE001 - the original failure matters more
                    pass
            raise
        stats = {"counts": counts, "pid": os.getpid(), "sink_id": sink_id}
        yield pa.record_batch(
            {
                "fragments": pa.array([pickle.dumps(fragments)], pa.binary()),
                "stats": pa.array([pickle.dumps(stats)], pa.binary()),
            }
        )


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


def _check_duplicates(uids: list[np.ndarray], pages: list[pa.RecordBatch]) -> None:
    all_uids = np.concatenate(uids)
    values, counts = np.unique(all_uids, return_counts=True)
    dupes = values[counts > 1]
    if not len(dupes):
        return
    uid = dupes[0]
    row_id: Any = None
    for page in pages:
        index = pc.index(page.column(0), pa.scalar(int(uid), pa.int64())).as_py()
        if index >= 0:
            row_id = page.column(1)[index].as_py()
            break
    raise MergekitError(
        ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES,
        f"One MERGE target table row matched more than one source row (target row id: {row_id!r})",
    )


# ---- driver ---------------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class DmlStats:
    row_count: int
    inserted: int
    updated: int
    deleted: int
    per_case: Mapping[int, Mapping[str, int]]
    writer_pids: tuple[int, ...]
    sinks: int

    def metrics(self) -> dict[str, Any]:
        return {
            "inserted": self.inserted,
            "updated": self.updated,
            "deleted": self.deleted,
            "per_case": {k: dict(v) for k, v in sorted(self.per_case.items())},
            "sinks": self.sinks,
        }


def _processor(plan: MergePlan) -> RowChangeProcessor:
    names = [c.name for c in plan.target.columns]
    if plan.paradigm is RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW:
        layout = plan.target.insert_layout
        return DeleteAndInsertMergeProcessor(names, layout.partition_columns if layout else ())
    return ChangeOnlyUpdatedColumnsMergeProcessor(names)


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
        f for f in rows.schema.fields if f.name in (UID, SEQ) or f.name.startswith(OLD_PREFIX) or f.name in computed
    ]
    # the processor nulls some of these (the row id and uid of insert halves), whatever Spark inferred
    return T.StructType([T.StructField(f.name, f.dataType, True) for f in out])


def _computed_names(plan: MergePlan) -> tuple[str, ...]:
    layout = plan.target.insert_layout
    return tuple(c.name for c in layout.computed_columns) if layout is not None else ()


def _route_expr(plan: MergePlan) -> str:
    il = plan.target.insert_layout
    ul = plan.target.update_layout
    insert_key = f"hash({', '.join(q(c) for c in il.partition_columns)})" if il else f"hash({q(SEQ)})"
    update_key = f"hash({', '.join(q(OLD_PREFIX + c) for c in ul.partition_columns)})" if ul else f"hash({q(UID)})"
    return f"CASE WHEN {q(OP)} IN (1, 4) THEN {insert_key} ELSE {update_key} END"


def run_merge_pipeline(
    spark: SparkSession,
    plan: MergePlan,
    rows: DataFrame,
    *,
    provider: ConnectorPageSinkProvider,
    session: ConnectorSession,
    merge_handle: ConnectorMergeTableHandle,
    colocated: bool = False,
) -> tuple[list[Any], DmlStats]:
    """Processor, redistribution and sinks over the merge rows; returns every sink's fragments and counts.
    Raises on any task failure (the caller aborts the merge).

    ``colocated``: every merge row of a target row comes out of one task of ``rows`` (a shuffle join on the
    ON clause's equality keys, see :attr:`MergeQueryBuilder.colocated`). Then the duplicate-match check runs
    in those tasks and, when the connector asks for no redistribution, processor and sink too: no shuffle
    after the join at all."""
    processor = _processor(plan)
    data_columns = tuple(c.name for c in plan.target.columns)
    page_schema = merge_page_schema(plan)
    writer_schema = "fragments binary, stats binary"
    needs_shuffle = (
        (plan.duplicate_check and not colocated)
        or plan.target.insert_layout is not None
        or plan.target.update_layout is not None
    )
    if needs_shuffle:
        processed = rows.mapInArrow(_Process(processor), _processed_schema(rows, plan))
        partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "2")
        from pyspark.sql import functions as F

        routed = processed.repartition(partitions, F.expr(_route_expr(plan)))
        writer = _Write(provider, session, merge_handle, data_columns, plan.duplicate_check, page_schema)
        out = routed.mapInArrow(writer, writer_schema)
    else:
        # no routing: the sequence number (and, with no duplicate check, the target row's uid) would only be
        # converted to Arrow and shipped to the writer for nothing
        unused = [SEQ] if plan.duplicate_check else [SEQ, UID]
        rows = rows.drop(*[c for c in unused if c in rows.columns])
        writer = _Write(provider, session, merge_handle, data_columns, plan.duplicate_check, page_schema, processor)
        out = rows.mapInArrow(writer, writer_schema)
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
    """Every writer's fragments and counts (one row per writer task: ``_Write``)."""
    fragments: list[Any] = []
    counts: dict[tuple[int, int], int] = {}
    pids: list[int] = []
    sinks = 0
    for row in collected:
        fragments.extend(pickle.loads(row["fragments"]))
        stats = pickle.loads(row["stats"])
        pids.append(stats["pid"])
        if stats["counts"]:
            sinks += 1
        for key, n in stats["counts"].items():
            counts[key] = counts.get(key, 0) + n
    return fragments, _stats(counts, pids, sinks)


_SKEW_JOIN = "spark.sql.adaptive.skewJoin.enabled"


def _collect(spark: SparkSession, out: DataFrame, colocated: bool) -> list[Any]:
    """Run the writers. A co-located plan must keep each target row in one task: adaptive execution's skew
    handling would split a large source partition and copy the target partition to each piece, so it is off
    while this statement runs."""
    if not colocated:
        return out.collect()
    before = spark.conf.get(_SKEW_JOIN, None)
    spark.conf.set(_SKEW_JOIN, "false")
    try:
        return out.collect()
    finally:
        if before is None:
            spark.conf.unset(_SKEW_JOIN)
        else:
            spark.conf.set(_SKEW_JOIN, before)


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
