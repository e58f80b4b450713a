"""MERGE by index lookups: the join, the CASE and the writers in one Python task per share of the source.

For a MERGE whose ON clause is one equality between a target column the connector indexes
(``ConnectorMetadata.resolve_index``) and a source expression, and whose WHEN clauses use only what evaluates
the same in Arrow as in Spark (``Expression.lowered``), the target is never scanned as a whole:

1. Spark reads the source once and sends each row, by its key, to the task of the key's range (the
   connector's ``partition_points``, else a hash of the key): one shuffle, of the source only.
2. Each task looks up the target rows of its distinct keys (``ConnectorIndex.lookup``), joins them to its source
   rows in Arrow (a hash join), evaluates the WHEN clauses in order (first match wins, as the CASE of the
   Spark plan), checks NOT NULL columns, and hands the merge rows to the same writer as the Spark plan
   (duplicate-match check, row change processor, merge sink).

Every source row with a given key is in one task, so every merge row of a target row is produced there and
the duplicate-match check needs no further shuffle. Statements outside that shape run the Spark plan
(:mod:`mergekit.execution.dml`); the result is the same either way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from mergekit.errors import ErrorCode, MergekitError
from mergekit.planner import JoinKind, MergePlan
from mergekit.spi import (
    ColumnHandle,
    ConnectorIndexHandle,
    ConnectorIndexProvider,
    ConnectorMergeTableHandle,
    ConnectorPageSinkProvider,
    ConnectorSession,
    MergeOperation,
)
from mergekit.sql import Apply, Const, Lowered, MergeCaseKind, Ref

from .dml import CASE, OP, ROW_ID, UID, DmlStats, _processor, _Write, gather, merge_page_schema, q
from .scan import conform_page

__all__ = ["LookupProgram", "compile_lookup", "run_lookup_merge", "KEY", "arrow_join_type", "binary_collation"]

KEY = "$key"
_SOURCE = "s:"  # prefixes of the joined table's columns
_TARGET = "t:"

Evaluator = Callable[["JoinedRows"], Any]  # an Arrow array, chunked array or scalar over the joined rows


# ---- types -----------------------------------------------------------------------------------------------


def _family(t: pa.DataType) -> str | None:
    """Types that compare the same in Arrow and in Spark, by family (``None``: not handled here). Floating
    point is left out: Spark orders NaN above every number and takes NaN = NaN; Arrow does neither."""
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_null(t):
        return "null"
    return None


_CONST_TYPES = {
    "integer": pa.int32(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "null": pa.null(),
}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
_ARITHMETIC = {"add": "add", "subtract": "subtract", "multiply": "multiply"}


class _Unsupported(Exception):
    """The statement leaves the subset: run the Spark plan."""


@attrs.frozen
class _Compiler:
    """Resolves lowered trees against the joined table's columns and checks their types."""

    target_alias: str
    source_alias: str
    target_types: Mapping[str, pa.DataType]
    source_types: Mapping[str, pa.DataType]
    used: set[str] = attrs.field(factory=set)  # joined-table columns the compiled trees read

    def column(self, ref: Ref) -> str:
        in_target = ref.name in self.target_types
        in_source = ref.name in self.source_types
        if ref.qualifier == self.target_alias and in_target:
            name = _TARGET + ref.name
        elif ref.qualifier == self.source_alias and in_source:
            name = _SOURCE + ref.name
        elif ref.qualifier is None and in_target != in_source:
            name = (_TARGET if in_target else _SOURCE) + ref.name
        else:
            raise _Unsupported(f"column {ref}")
        self.used.add(name)
        return name

    def type_of(self, column: str) -> pa.DataType:
        if column.startswith(_TARGET):
            return self.target_types[column[len(_TARGET) :]]
        return self.source_types[column[len(_SOURCE) :]]

    def compile(self, node: Lowered) -> tuple[Evaluator, pa.DataType]:
        if isinstance(node, Ref):
            name = self.column(node)
            return (lambda t, n=name: t.column(n)), self.type_of(name)
        if isinstance(node, Const):
            arrow_type = _CONST_TYPES[node.kind]
            scalar = pa.scalar(node.value, arrow_type)
            return (lambda t, s=scalar: s), arrow_type
        assert isinstance(node, Apply)
        if node.op == "negate" and isinstance(node.args[0], Const) and node.args[0].kind == "integer":
            return self.compile(Const(-node.args[0].value, "integer"))  # a negative literal
        args = [self.compile(a) for a in node.args]
        types = [t for _, t in args]
        fns = [f for f, _ in args]
        if node.op in _COMPARE:
            families = {_family(t) for t in types} - {"null"}
            if None in families or len(families) > 1:
                raise _Unsupported(f"comparison of {types}")
            return _binary(getattr(pc, _COMPARE[node.op]), fns), pa.bool_()
        if node.op in ("and", "or", "not"):
            if any(_family(t) not in ("boolean", "null") for t in types):
                raise _Unsupported(f"{node.op} of {types}")
            fns = [_as_boolean(f) if pa.types.is_null(t) else f for f, t in args]  # a NULL literal
            if node.op == "not":
                return _unary(pc.invert, fns[0]), pa.bool_()
            return _binary(pc.and_kleene if node.op == "and" else pc.or_kleene, fns), pa.bool_()
        if node.op in ("is_null", "is_not_null"):
            if _family(types[0]) is None and not pa.types.is_floating(types[0]):
                raise _Unsupported(f"{node.op} of {types[0]}")
            return _unary(pc.is_null if node.op == "is_null" else pc.is_valid, fns[0]), pa.bool_()
        # Arithmetic only in DOUBLE (IEEE in both, never an error); an INTEGER operand widens exactly.
        if not any(pa.types.is_float64(t) for t in types) or not all(
            pa.types.is_float64(t)
            or pa.types.is_int32(t)
            or pa.types.is_int16(t)
            or pa.types.is_int8(t)
            or pa.types.is_null(t)
            for t in types
        ):
            raise _Unsupported(f"{node.op} of {types}")
        if node.op == "negate":
            return _unary(pc.negate, fns[0]), pa.float64()
        return _binary(getattr(pc, _ARITHMETIC[node.op]), fns, cast=pa.float64()), pa.float64()


def _as_boolean(arg: Evaluator) -> Evaluator:
    return lambda t: arg(t).cast(pa.bool_())


def _unary(fn: Callable[..., Any], arg: Evaluator) -> Evaluator:
    return lambda t: fn(arg(t))


def _binary(fn: Callable[..., Any], args: Sequence[Evaluator], cast: pa.DataType | None = None) -> Evaluator:
    left, right = args

    def run(t: pa.Table) -> Any:
        a, b = left(t), right(t)
        if cast is not None:
            a, b = a.cast(cast), b.cast(cast)
        return fn(a, b)

    return run


def _assignable(value: pa.DataType, column: pa.DataType) -> bool:
    """Whether a value of type ``value`` becomes a ``column`` value exactly (Spark's CAST would agree)."""
    if value == column or pa.types.is_null(value):
        return True
    if pa.types.is_signed_integer(value) and pa.types.is_signed_integer(column):
        return value.bit_width <= column.bit_width
    if pa.types.is_float64(column):
        return pa.types.is_int8(value) or pa.types.is_int16(value) or pa.types.is_int32(value)
    return _family(value) == "string" and _family(column) == "string"


# ---- the program -----------------------------------------------------------------------------------------


@attrs.frozen
class _Case:
    number: int
    kind: MergeCaseKind
    operation: MergeOperation
    condition: Evaluator | None
    # per data column: ("expr", fn), ("target", None) (the target's current value) or ("null", None)
    values: tuple[tuple[str, Evaluator | None], ...]


@attrs.frozen
class LookupProgram:
    """What a lookup task evaluates: the cases over the joined table, and which columns it needs."""

    cases: tuple[_Case, ...]
    data_columns: tuple[str, ...]
    data_types: tuple[pa.DataType, ...]
    not_null: frozenset[str]
    source_columns: tuple[str, ...]  # source columns the cases read
    target_columns: tuple[str, ...]  # target columns the merge rows carry (all data columns + row id)
    row_id: str
    row_id_type: pa.DataType
    check_duplicates: bool


def compile_lookup(
    plan: MergePlan,
    source_types: Mapping[str, pa.DataType],
    target_columns: Sequence[ColumnHandle],
    type_names: Mapping[str, str],
) -> LookupProgram | None:
    """The plan's cases as Arrow evaluators, or None when any part of them is outside what Arrow evaluates
    as Spark does (then the Spark plan runs). ``type_names``: the target columns' SQL type names (CHAR
    columns compare with padding in Trino: left to Spark)."""
    if plan.join is not JoinKind.RIGHT or plan.source_alias is None:
        return None
    target_types = {c.name: c.type for c in target_columns}
    if any(name.lower().startswith("char") for name in type_names.values()):
        return None
    compiler = _Compiler(plan.target_alias.lower(), plan.source_alias.lower(), target_types, source_types)

    def compile_expr(expr: Any) -> tuple[Evaluator, pa.DataType]:
        lowered = expr.lowered()
        if lowered is None:
            raise _Unsupported(expr.sql)
        return compiler.compile(lowered)

    data = list(plan.target.columns)
    try:
        cases = []
        for case in plan.cases:
            condition = None
            if case.condition is not None:
                condition, ctype = compile_expr(case.condition)
                if _family(ctype) not in ("boolean", "null"):
                    return None
            values: list[tuple[str, Evaluator | None]] = []
            for column, expr in zip(data, case.values, strict=True):
                if expr is None:
                    keep = case.operation is not MergeOperation.INSERT
                    values.append(("target", None) if keep else ("null", None))
                    continue
                fn, vtype = compile_expr(expr)
                if not _assignable(vtype, column.type):
                    return None
                values.append(("expr", fn))
            cases.append(_Case(case.number, case.kind, case.operation, condition, tuple(values)))
    except _Unsupported:
        return None
    source_columns = tuple(sorted(c[len(_SOURCE) :] for c in compiler.used if c.startswith(_SOURCE)))
    return LookupProgram(
        cases=tuple(cases),
        data_columns=tuple(c.name for c in data),
        data_types=tuple(c.type for c in data),
        not_null=frozenset(c.name for c in data if not c.nullable),
        source_columns=source_columns,
        target_columns=tuple(c.name for c in target_columns),
        row_id=plan.target.row_id.name,
        row_id_type=plan.target.row_id.type,
        check_duplicates=plan.duplicate_check,
    )


def _mask(value: Any, n: int) -> pa.Array:
    """A condition's result as a boolean array without nulls (NULL: the case does not apply)."""
    if isinstance(value, pa.Scalar):
        return pa.repeat(pa.scalar(bool(value.is_valid and value.as_py()), pa.bool_()), n)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return pc.fill_null(value, False)


def _column(value: Any, n: int, arrow_type: pa.DataType) -> pa.Array:
    if isinstance(value, pa.Scalar):
        return pa.repeat(value.cast(arrow_type), n) if value.is_valid else pa.nulls(n, arrow_type)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return value if value.type == arrow_type else value.cast(arrow_type)


class JoinedRows:
    """The join's output, columns taken on demand: source column ``s:<name>`` is the source's row ``si[i]``,
    target column ``t:<name>`` the target's row ``ti[i]`` (null when unmatched), ``$uid`` is ``ti``."""

    def __init__(self, source: pa.Table, target: pa.Table, si: pa.Array, ti: pa.Array) -> None:
        self.source, self.target, self.si, self.ti = source, target, si, ti
        self.num_rows = len(si)
        self._columns: dict[str, pa.Array] = {}

    def column(self, name: str) -> pa.Array:
        found = self._columns.get(name)
        if found is None:
            if name == UID:
                found = self.ti
            elif name.startswith(_SOURCE):
                found = self.source.column(name[len(_SOURCE) :]).take(self.si)
            else:
                found = self.target.column(name[len(_TARGET) :]).take(self.ti)
            if isinstance(found, pa.ChunkedArray):
                found = found.combine_chunks()
            self._columns[name] = found
        return found

    def take(self, indices: pa.Array) -> JoinedRows:
        return JoinedRows(self.source, self.target, self.si.take(indices), self.ti.take(indices))


def merge_rows(program: LookupProgram, rows: JoinedRows, page_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """The merge rows of ``rows`` in pages of at most ``page_rows``: the first case whose kind and condition hold
    for a row produces it; rows no case takes produce none. Conditions are evaluated over every row (the lowered
    subset cannot fail), the values of a case only over the rows it takes."""
    n = rows.num_rows
    matched = pc.is_valid(rows.ti).to_numpy(zero_copy_only=False)
    taken = np.zeros(n, dtype=bool)
    for case in program.cases:
        available = (matched if case.kind is MergeCaseKind.MATCHED else ~matched) & ~taken
        if case.condition is not None and available.any():
            available &= _mask(case.condition(rows), n).to_numpy(zero_copy_only=False)
        indices = np.flatnonzero(available)
        if not len(indices):
            continue
        taken |= available
        page = _case_page(program, case, rows.take(pa.array(indices)))
        for start in range(0, page.num_rows, page_rows):  # sinks get pages of the size Spark's would have
            yield page.slice(start, page_rows)


def _case_page(program: LookupProgram, case: _Case, rows: JoinedRows) -> pa.RecordBatch:
    n = rows.num_rows
    arrays: list[pa.Array] = []
    for name, arrow_type, (how, fn) in zip(program.data_columns, program.data_types, case.values, strict=True):
        if how == "target":
            arrays.append(_column(rows.column(_TARGET + name), n, arrow_type))
            continue
        value = _column(fn(rows), n, arrow_type) if fn is not None else pa.nulls(n, arrow_type)
        if name in program.not_null and value.null_count:
            raise MergekitError(ErrorCode.CONSTRAINT_VIOLATION, f"NULL value not allowed for NOT NULL column: {name}")
        arrays.append(value)
    names = [*program.data_columns, OP, CASE, ROW_ID]
    arrays.append(pa.repeat(pa.scalar(case.operation.value, pa.int8()), n))
    arrays.append(pa.repeat(pa.scalar(case.number, pa.int32()), n))
    arrays.append(_column(rows.column(_TARGET + program.row_id), n, program.row_id_type))
    if program.check_duplicates:
        names.append(UID)
        arrays.append(_column(rows.column(UID), n, pa.int64()))
    return pa.RecordBatch.from_arrays(arrays, names=names)


# ---- the task --------------------------------------------------------------------------------------------


@attrs.frozen
class _LookupMerge:
    """One task: its share of the source in, the writer's one row (fragments, counts) out."""

    program: LookupProgram
    index_provider: ConnectorIndexProvider
    index_handle: ConnectorIndexHandle
    key_column: ColumnHandle
    output_columns: tuple[ColumnHandle, ...]
    join_type: pa.DataType
    source_schema: pa.Schema
    writer: _Write
    page_rows: int

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pages = list(batches)
        source = pa.Table.from_batches(pages) if pages else self.source_schema.empty_table()
        if not source.schema.equals(self.source_schema):
            source = source.select(self.source_schema.names).cast(self.source_schema)
        yield from self.writer(self._merge_rows(source))

    def _merge_rows(self, source: pa.Table) -> Iterator[pa.RecordBatch]:
        if not source.num_rows:
            return
        keys = source.column(KEY)
        wanted = pc.unique(keys.drop_null()).sort() if keys.null_count < len(keys) else pa.array([], keys.type)
        target = self._lookup(wanted)
        target_keys = target.column(self.key_column.name).cast(self.join_type)
        left = pa.table({"k": keys, "si": pa.array(np.arange(source.num_rows, dtype=np.int64))})
        right = pa.table({"k": target_keys, "ti": pa.array(np.arange(target.num_rows, dtype=np.int64))})
        pairs = left.join(right, keys="k", join_type="left outer", use_threads=False)
        si = pairs.column("si").combine_chunks()
        ti = pairs.column("ti").combine_chunks()
        yield from merge_rows(self.program, JoinedRows(source, target, si, ti), self.page_rows)

    def _lookup(self, wanted: pa.Array) -> pa.Table:
        schema = pa.schema([pa.field(c.name, c.type) for c in self.output_columns])
        if not len(wanted):
            return schema.empty_table()
        index = self.index_provider.get_index(
            session=self.writer.session,
            index_handle=self.index_handle,
            lookup_columns=(self.key_column,),
            output_columns=self.output_columns,
        )
        wanted = _representable(wanted, self.key_column.type)  # a larger key matches no narrower one
        source = index.lookup(pa.table({self.key_column.name: wanted.cast(self.key_column.type)}))
        try:
            pages = [p for p in source if p.num_rows]
        finally:
            source.close()
        if not pages:
            return schema.empty_table()
        return pa.Table.from_batches([conform_page(p, schema) for p in pages], schema=schema)


def _representable(values: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """The integer ``values`` that ``arrow_type`` (a narrower integer) can hold; other values as they are."""
    if not pa.types.is_integer(arrow_type) or values.type == arrow_type:
        return values
    bounds = np.iinfo(arrow_type.to_pandas_dtype())
    low, high = pa.scalar(int(bounds.min), values.type), pa.scalar(int(bounds.max), values.type)
    return values.filter(pc.and_(pc.greater_equal(values, low), pc.less_equal(values, high)))


# ---- the driver ------------------------------------------------------------------------------------------


def spark_literal(value: Any) -> str | None:
    """A partition point as a Spark SQL literal (None: a type this does not render)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"CAST({value} AS BIGINT)"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"DATE'{value.isoformat()}'"
    return None


def bucket_expr(points: Sequence[Any], key_range: tuple[Any, Any] | None, partitions: int) -> tuple[str, int] | None:
    """Spark SQL giving each row the task of its key: ranges cut at up to ``partitions - 1`` of ``points``
    (evenly spaced among them), keys outside ``key_range`` (they find nothing) spread over all ranges by hash,
    NULL keys to the first; and the number of ranges. None without usable points."""
    n = len(points)
    if not n or partitions < 2:
        return None
    chosen = sorted({points[min(n - 1, max(0, round(i * (n + 1) / partitions) - 1))] for i in range(1, partitions)})
    literals = [spark_literal(p) for p in chosen]
    if any(lit is None for lit in literals):
        return None
    ranges = len(literals) + 1
    key = q(KEY)
    spread = f"WHEN {key} IS NULL THEN 0"  # matches nothing; routed deterministically, as a retried task must
    bounds = [spark_literal(b) for b in key_range] if key_range is not None else [None, None]
    if bounds[0] is not None and bounds[1] is not None:
        spread += f" WHEN {key} < {bounds[0]} OR {key} > {bounds[1]} THEN pmod(hash({key}), {ranges})"
    whens = " ".join(f"WHEN {key} < {lit} THEN {i}" for i, lit in enumerate(literals))
    return f"CASE {spread} {whens} ELSE {ranges - 1} END", ranges


def run_lookup_merge(
    spark: SparkSession,
    plan: MergePlan,
    program: LookupProgram,
    source: DataFrame,
    *,
    join_type: pa.DataType,
    index_provider: ConnectorIndexProvider,
    index_handle: ConnectorIndexHandle,
    partition_points: Sequence[Any],
    key_range: tuple[Any, Any] | None,
    key_column: ColumnHandle,
    output_columns: Sequence[ColumnHandle],
    provider: ConnectorPageSinkProvider,
    session: ConnectorSession,
    merge_handle: ConnectorMergeTableHandle,
    stats: dict[str, Any],
) -> tuple[list[Any], DmlStats]:
    """Run the lookup plan over ``source`` (the source columns the cases read plus ``$key``, the join key in
    the type both sides are compared in). Returns every sink's fragments and counts, as ``run_merge_pipeline``."""
    from pyspark.sql.pandas.types import to_arrow_type

    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or "2")
    bucketing = bucket_expr(partition_points, key_range, partitions)
    if bucketing is not None:
        expr, ranges = bucketing
        routed = source.repartitionById(ranges, F.expr(expr))
        stats["ranges"] = ranges
    else:
        routed = source.repartition(partitions, F.col(q(KEY)))
        stats["ranges"] = None
    source_schema = pa.schema([pa.field(f.name, to_arrow_type(f.dataType), True) for f in source.schema.fields])
    data_columns = tuple(c.name for c in plan.target.columns)
    writer = _Write(
        provider,
        session,
        merge_handle,
        data_columns,
        plan.duplicate_check,
        merge_page_schema(plan),
        _processor(plan),
    )
    task = _LookupMerge(
        program=program,
        index_provider=index_provider,
        index_handle=index_handle,
        key_column=key_column,
        output_columns=tuple(output_columns),
        join_type=join_type,
        source_schema=source_schema,
        writer=writer,
        page_rows=int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") or "10000"),
    )
    out = routed.mapInArrow(task, "fragments binary, stats binary")
    return gather(out.collect())


def arrow_join_type(source: T.DataType, target: pa.DataType) -> pa.DataType | None:
    """The type a source key (Spark type) and a target key column (Arrow type) are compared in, when Arrow
    compares them exactly as Spark's ``=`` does: integers (as BIGINT), byte-wise strings, dates; None for
    fractions, decimals, timestamps (rounding, zones) and collated strings. Used by the lookup join and by the
    value sets of the Spark plan."""
    if isinstance(source, T.IntegralType) and pa.types.is_integer(target):
        return pa.int64()
    if isinstance(source, T.StringType) and _family(target) == "string":
        return pa.string() if binary_collation(source) else None
    if isinstance(source, T.DateType) and pa.types.is_date32(target):
        return pa.date32()
    return None


def binary_collation(t: T.DataType) -> bool:
    """Whether a Spark type compares as Arrow does: anything but a string with a collation other than the default
    (byte-wise) one."""
    return not isinstance(t, T.StringType) or getattr(t, "collation", "UTF8_BINARY") in ("UTF8_BINARY", None)
