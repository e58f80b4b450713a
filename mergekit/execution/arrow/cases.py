"""The Arrow evaluator of the WHEN clauses (MERGE by index lookups, :mod:`.lookup`): step 3 of the MERGE
plan in Python, over a joined table of source and target rows.

:func:`compile_lookup` compiles a plan's cases into a :class:`LookupProgram` when every part of them evaluates
in Arrow exactly as Spark's CASE does (:meth:`~mergekit.sql.Expression.lowered` trees of integers, strings,
dates and booleans; arithmetic in DOUBLE, and date arithmetic: :func:`shift_dates`, :func:`days_between`), else
returns None and the Spark plan runs. It shares the cases'
semantics with the Spark evaluator (:mod:`.merge_rows`): which rows a case takes
(:meth:`~mergekit.planner.PlannedCase.rows_taken`), what an unassigned column holds
(:attr:`~mergekit.planner.PlannedCase.keeps_unassigned`), the NOT NULL message, and the merge-row columns
(:mod:`.layout`). :func:`evaluate_cases` produces the merge rows: the first case, in order, whose rows and
condition hold takes a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.dml.layout import CASE, OP, ROW_ID, UID, UNCHANGED
from mergekit.planner import JoinKind, MergePlan, not_null_violation
from mergekit.spi import ColumnHandle, MergeOperation
from mergekit.sql import DATE_DAYS, Apply, Const, Lowered, Ref, date_overflow_message

__all__ = [
    "LookupProgram",
    "compile_lookup",
    "JoinedRows",
    "evaluate_cases",
    "value_family",
    "date_arithmetic",
    "shift_dates",
    "days_between",
]

_SOURCE = "s:"  # prefixes of the joined table's columns
_TARGET = "t:"

Evaluator = Callable[["JoinedRows"], Any]  # an Arrow array, chunked array or scalar over the joined rows


# ---- types -----------------------------------------------------------------------------------------------


def value_family(t: pa.DataType) -> str | None:
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


def date_arithmetic(op: str, types: Sequence[pa.DataType]) -> str | None:
    """Which date arithmetic ``op`` of operands of ``types`` is (an extension, docs/sql.md; the Spark translation's
    ``date_arithmetic_type``): ``shift`` (``date + integer``, ``integer + date``, ``date - integer``: days),
    ``between`` (``date - date``: INTEGER days), or None."""
    kinds = tuple("date" if pa.types.is_date32(t) else "integer" if pa.types.is_integer(t) else "" for t in types)
    if op == "add" and kinds in (("date", "integer"), ("integer", "date")):
        return "shift"
    if op == "subtract" and kinds == ("date", "integer"):
        return "shift"
    if op == "subtract" and kinds == ("date", "date"):
        return "between"
    return None


def shift_dates(dates: pa.Array, days: pa.Array, subtract: bool) -> pa.Array:
    """``dates + days`` (``- days`` when ``subtract``) as date32, NULL where either is NULL; a result outside
    DATE's range (:data:`~mergekit.sql.DATE_DAYS`) raises NUMERIC_VALUE_OUT_OF_RANGE worded as the Spark
    translation words it. The range is tested on ``days`` against the bounds less each date's day number, so
    nothing overflows."""
    start = dates.cast(pa.int32()).cast(pa.int64())
    n = days.cast(pa.int64())
    low, high = (pa.scalar(v, pa.int64()) for v in DATE_DAYS)
    if subtract:  # start - n in range: start - high <= n <= start - low
        first, last = pc.subtract(start, high), pc.subtract(start, low)
    else:  # start + n in range: low - start <= n <= high - start
        first, last = pc.subtract(low, start), pc.subtract(high, start)
    bad = pc.fill_null(pc.or_(pc.less(n, first), pc.greater(n, last)), False)
    if pc.any(bad).as_py():
        i = int(np.flatnonzero(bad.to_numpy(zero_copy_only=False))[0])
        message = date_overflow_message(_date_text(start[i].as_py()), "-" if subtract else "+", n[i].as_py())
        raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message)
    moved = pc.subtract(start, n) if subtract else pc.add(start, n)
    return moved.cast(pa.int32()).cast(pa.date32())


def days_between(a: pa.Array, b: pa.Array) -> pa.Array:
    """``a - b`` of dates: the INTEGER number of days (Spark's DATEDIFF), NULL where either is NULL."""
    return pc.subtract(a.cast(pa.int32()).cast(pa.int64()), b.cast(pa.int32()).cast(pa.int64())).cast(pa.int32())


def _date_text(days: int) -> str:
    """A day number as Spark prints a DATE (proleptic Gregorian; a year past 9999 with a sign)."""
    z = days + 719468  # days since 0000-03-01
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    text = f"{year:04d}" if 0 <= year <= 9999 else (f"+{year}" if year > 0 else f"-{-year:04d}")
    return f"{text}-{month:02d}-{day:02d}"


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

    def compile(self, node: Lowered) -> tuple[Evaluator, pa.DataType, bool]:
        """The evaluator of ``node``, its Arrow type, and whether it may fail on a row (date arithmetic outside
        DATE's range; everything else here cannot)."""
        if isinstance(node, Ref):
            name = self.column(node)
            return (lambda t, n=name: t.column(n)), self.type_of(name), False
        if isinstance(node, Const):
            arrow_type = _CONST_TYPES[node.kind]
            scalar = pa.scalar(node.value, arrow_type)
            return (lambda t, s=scalar: s), arrow_type, False
        assert isinstance(node, Apply)
        if node.op == "negate" and isinstance(node.args[0], Const) and node.args[0].kind == "integer":
            return self.compile(Const(-node.args[0].value, "integer"))  # a negative literal
        args = [self.compile(a) for a in node.args]
        types = [t for _, t, _ in args]
        fns = [f for f, _, _ in args]
        may_fail = any(m for _, _, m in args)
        if node.op in _COMPARE:
            families = {value_family(t) for t in types} - {"null"}
            if None in families or len(families) > 1:
                raise _Unsupported(f"comparison of {types}")
            return _binary(getattr(pc, _COMPARE[node.op]), fns), pa.bool_(), may_fail
        if node.op in ("and", "or", "not"):
            if any(value_family(t) not in ("boolean", "null") for t in types):
                raise _Unsupported(f"{node.op} of {types}")
            if node.op != "not" and args[1][2]:
                raise _Unsupported(f"{node.op} whose right side may fail")  # Spark evaluates it only where needed
            fns = [_as_boolean(f) if pa.types.is_null(t) else f for f, t, _ in args]  # a NULL literal
            if node.op == "not":
                return _unary(pc.invert, fns[0]), pa.bool_(), may_fail
            return _binary(pc.and_kleene if node.op == "and" else pc.or_kleene, fns), pa.bool_(), may_fail
        if node.op in ("is_null", "is_not_null"):
            if value_family(types[0]) is None and not pa.types.is_floating(types[0]):
                raise _Unsupported(f"{node.op} of {types[0]}")
            return _unary(pc.is_null if node.op == "is_null" else pc.is_valid, fns[0]), pa.bool_(), may_fail
        dates = date_arithmetic(node.op, types)
        if dates is not None:
            result = pa.date32() if dates == "shift" else pa.int32()
            return _dates(node.op, dates, fns, types, args[1][2]), result, may_fail or dates == "shift"
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
            return _unary(pc.negate, fns[0]), pa.float64(), may_fail
        return _binary(getattr(pc, _ARITHMETIC[node.op]), fns, cast=pa.float64()), pa.float64(), may_fail


def _dates(op: str, kind: str, fns: Sequence[Evaluator], types: Sequence[pa.DataType], lazy: bool) -> Evaluator:
    """Date arithmetic over the joined rows (:func:`shift_dates`, :func:`days_between`). ``lazy``: the right operand
    may fail, so it is computed only where the left one is not NULL (as Spark's operators do)."""

    def run(t: JoinedRows) -> Any:
        n = t.num_rows
        a = _column(fns[0](t), n, types[0])
        if lazy and a.null_count:
            valid = pc.is_valid(a)
            todo = pc.indices_nonzero(valid)
            part = _column(fns[1](t.take(todo)), len(todo), types[1])
            b = pc.replace_with_mask(pa.nulls(n, types[1]), valid, part)
        else:
            b = _column(fns[1](t), n, types[1])
        if kind == "between":
            return days_between(a, b)
        date_first = pa.types.is_date32(types[0])
        return shift_dates(a if date_first else b, b if date_first else a, op == "subtract")

    return run


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
    return value_family(value) == "string" and value_family(column) == "string"


# ---- the program -----------------------------------------------------------------------------------------


@attrs.frozen
class _Case:
    number: int
    target_present: bool | None  # the rows the case takes (PlannedCase.rows_taken; the join is RIGHT)
    operation: MergeOperation | None  # None: DO NOTHING
    condition: Evaluator | None
    # the condition may fail on a row: evaluated only on the rows Spark's CASE evaluates it on (those of the
    # case's kind that no earlier case took), else over every row
    condition_may_fail: bool
    # per data column: ("expr", fn), ("target", None) (the target's current value), ("null", None) or ("storage",
    # None): NULL that the storage replaces by its default (PlannedCase.storage_defaults: no NOT NULL check)
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

    def compile_expr(expr: Any) -> tuple[Evaluator, pa.DataType, bool]:
        lowered = expr.lowered()
        if lowered is None:
            raise _Unsupported(expr.sql)
        return compiler.compile(lowered)

    data = list(plan.target.columns)
    try:
        cases = []
        for case in plan.cases:
            condition, condition_may_fail = None, False
            if case.condition is not None:
                condition, ctype, condition_may_fail = compile_expr(case.condition)
                if value_family(ctype) not in ("boolean", "null"):
                    return None
            values: list[tuple[str, Evaluator | None]] = []
            for column, expr in zip(data, case.values, strict=True):
                if column.name in case.storage_defaults:
                    values.append(("storage", None))
                    continue
                if expr is None:
                    values.append(("target", None) if case.keeps_unassigned else ("null", None))
                    continue
                fn, vtype, _ = compile_expr(expr)
                if not _assignable(vtype, column.type):
                    return None
                values.append(("expr", fn))
            target_present, source_present = case.rows_taken(plan.join)
            if source_present is not None:
                return None  # a RIGHT join has a source row on every row: no case of the plan asks this
            cases.append(
                _Case(case.number, target_present, case.operation, condition, condition_may_fail, tuple(values))
            )
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


def evaluate_cases(program: LookupProgram, rows: JoinedRows, page_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """The merge rows of ``rows`` in pages of at most ``page_rows``: the first case whose kind and condition hold
    for a row produces it; rows no case takes produce none. A condition that cannot fail is evaluated over every
    row, one that may (date arithmetic) only where Spark's CASE evaluates it; the values of a case only over the
    rows it takes."""
    n = rows.num_rows
    matched = pc.is_valid(rows.ti).to_numpy(zero_copy_only=False)
    taken = np.zeros(n, dtype=bool)
    for case in program.cases:
        available = ~taken
        if case.target_present is not None:
            available &= matched if case.target_present else ~matched
        if case.condition is not None and available.any():
            if case.condition_may_fail:
                candidates = np.flatnonzero(available)
                holds = _mask(case.condition(rows.take(pa.array(candidates))), len(candidates))
                available[candidates] = holds.to_numpy(zero_copy_only=False)
            else:
                available &= _mask(case.condition(rows), n).to_numpy(zero_copy_only=False)
        indices = np.flatnonzero(available)
        if not len(indices):
            continue
        taken |= available
        if case.operation is None:
            continue  # DO NOTHING: the rows are taken and produce no merge row
        page = _case_page(program, case, rows.take(pa.array(indices)))
        for start in range(0, page.num_rows, page_rows):  # sinks get pages of the size Spark's would have
            yield page.slice(start, page_rows)


def _case_page(program: LookupProgram, case: _Case, rows: JoinedRows) -> pa.RecordBatch:
    n = rows.num_rows
    assert case.operation is not None
    arrays: list[pa.Array] = []
    same = pa.repeat(pa.scalar(case.operation is MergeOperation.UPDATE), n)  # no-op update elimination
    for name, arrow_type, (how, fn) in zip(program.data_columns, program.data_types, case.values, strict=True):
        if how == "target":
            arrays.append(_column(rows.column(_TARGET + name), n, arrow_type))
            continue
        value = _column(fn(rows), n, arrow_type) if fn is not None else pa.nulls(n, arrow_type)
        if how != "storage" and name in program.not_null and value.null_count:
            raise MergekitError(ErrorCode.CONSTRAINT_VIOLATION, not_null_violation(name))
        arrays.append(value)
        if case.operation is MergeOperation.UPDATE:
            old = _column(rows.column(_TARGET + name), n, arrow_type)
            equal = pc.or_kleene(pc.and_(pc.is_null(value), pc.is_null(old)), pc.equal(value, old))
            same = pc.and_(same, pc.fill_null(equal, False))
    names = [*program.data_columns, OP, CASE, ROW_ID, UNCHANGED]
    arrays.append(pa.repeat(pa.scalar(case.operation.value, pa.int8()), n))
    arrays.append(pa.repeat(pa.scalar(case.number, pa.int32()), n))
    arrays.append(_column(rows.column(_TARGET + program.row_id), n, program.row_id_type))
    arrays.append(same)
    if program.check_duplicates:
        names.append(UID)
        arrays.append(_column(rows.column(UID), n, pa.int64()))
    return pa.RecordBatch.from_arrays(arrays, names=names)
