"""The Arrow evaluator of the WHEN clauses (MERGE by index lookups, :mod:`mergekit.execution.dml.lookup`): step 3
of the MERGE plan in Python, over a joined table of source and target rows.

:func:`compile_lookup` compiles a plan's cases with :mod:`.compiler` (the one Arrow compiler of lowered trees,
columns resolved here against the joined table, :class:`JoinedColumns`) into a :class:`LookupProgram` when every
part of them evaluates in Arrow exactly as Spark's CASE does, else returns None and the Spark plan runs. It shares
the cases' semantics with the Spark evaluator (:mod:`mergekit.execution.dml.merge_rows`): which rows a case takes
(:meth:`~mergekit.planner.PlannedCase.rows_taken`), what an unassigned column holds
(:attr:`~mergekit.planner.PlannedCase.keeps_unassigned`), the NOT NULL message, and the merge-row columns
(:mod:`mergekit.execution.dml.layout`). :func:`evaluate_cases` produces the merge rows: the first case, in order,
whose rows and condition hold takes a row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.dml.layout import CASE, OP, ROW_ID, UID, UNCHANGED
from mergekit.planner import JoinKind, MergePlan, not_null_violation
from mergekit.spi import ColumnHandle, MergeOperation
from mergekit.sql import Ref

from .compiler import ArrowCompiler, Compiled, Unsupported, assign, assignable, column_of, mask_of, value_family

__all__ = ["LookupProgram", "compile_lookup", "JoinedColumns", "JoinedRows", "evaluate_cases"]

_SOURCE = "s:"  # prefixes of the joined table's columns
_TARGET = "t:"


@attrs.frozen
class JoinedColumns:
    """Column resolution over the joined table: ``alias.column`` of the target (``t:<column>``) or the source
    (``s:<column>``), or an unqualified name only one side has. ``used``: the joined columns the cases read."""

    target_alias: str
    source_alias: str
    target_types: Mapping[str, pa.DataType]
    source_types: Mapping[str, pa.DataType]
    used: set[str] = attrs.field(factory=set)

    def resolve(self, ref: Ref) -> tuple[str, pa.DataType]:
        in_target = ref.name in self.target_types
        in_source = ref.name in self.source_types
        if ref.qualifier == self.target_alias and in_target:
            target = True
        elif ref.qualifier == self.source_alias and in_source:
            target = False
        elif ref.qualifier is None and in_target != in_source:
            target = in_target
        else:
            raise Unsupported(f"column {ref}")
        name = (_TARGET if target else _SOURCE) + ref.name
        self.used.add(name)
        return name, (self.target_types if target else self.source_types)[ref.name]


# ---- the program -----------------------------------------------------------------------------------------


@attrs.frozen
class _Case:
    number: int
    target_present: bool | None  # the rows the case takes (PlannedCase.rows_taken; the join is RIGHT)
    operation: MergeOperation | None  # None: DO NOTHING
    # a condition that may fail on a row (Compiled.may_fail) is evaluated only on the rows Spark's CASE evaluates
    # it on (those of the case's kind that no earlier case took), else over every row
    condition: Compiled | None
    # per data column: ("expr", value), ("target", None) (the target's current value), ("null", None) or
    # ("storage", None): NULL that the storage replaces by its default (PlannedCase.storage_defaults: no NOT NULL
    # check)
    values: tuple[tuple[str, Compiled | None], ...]


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
    columns = JoinedColumns(plan.target_alias.lower(), plan.source_alias.lower(), target_types, source_types)
    compiler = ArrowCompiler(columns)  # no subqueries: a MERGE's lowering has none

    def compile_expr(expr: Any) -> Compiled:
        lowered = expr.lowered()
        if lowered is None:
            raise Unsupported(expr.sql)
        return compiler.compile(lowered)

    data = list(plan.target.columns)
    try:
        cases = []
        for case in plan.cases:
            condition = compile_expr(case.condition) if case.condition is not None else None
            if condition is not None and value_family(condition.type) not in ("boolean", "null"):
                return None
            values: list[tuple[str, Compiled | None]] = []
            for column, expr in zip(data, case.values, strict=True):
                if column.name in case.storage_defaults:
                    values.append(("storage", None))
                    continue
                if expr is None:
                    values.append(("target", None) if case.keeps_unassigned else ("null", None))
                    continue
                value = compile_expr(expr)
                if not assignable(value.type, column.type):
                    return None
                values.append(("expr", value))
            target_present, source_present = case.rows_taken(plan.join)
            if source_present is not None:
                return None  # a RIGHT join has a source row on every row: no case of the plan asks this
            cases.append(_Case(case.number, target_present, case.operation, condition, tuple(values)))
    except Unsupported:
        return None
    source_columns = tuple(sorted(c[len(_SOURCE) :] for c in columns.used if c.startswith(_SOURCE)))
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


class JoinedRows:
    """The join's output, columns taken on demand: source column ``s:<name>`` is the source's row ``si[i]``,
    target column ``t:<name>`` the target's row ``ti[i]`` (null when unmatched), ``$uid`` is ``ti``. The
    compiler's :class:`~.compiler.Rows`."""

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
    row, one that may (integer or date arithmetic) only where Spark's CASE evaluates it; the values of a case only
    over the rows it takes."""
    n = rows.num_rows
    matched = pc.is_valid(rows.ti).to_numpy(zero_copy_only=False)
    taken = np.zeros(n, dtype=bool)
    for case in program.cases:
        available = ~taken
        if case.target_present is not None:
            available &= matched if case.target_present else ~matched
        if case.condition is not None and available.any():
            if case.condition.may_fail:
                candidates = np.flatnonzero(available)
                available[candidates] = mask_of(case.condition.fn(rows.take(pa.array(candidates))), len(candidates))
            else:
                available &= mask_of(case.condition.fn(rows), n)
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
    for name, arrow_type, (how, value) in zip(program.data_columns, program.data_types, case.values, strict=True):
        if how == "target":
            arrays.append(column_of(rows.column(_TARGET + name), n, arrow_type))
            continue
        # Spark's CAST of the value to the column's type (a narrower integer: range-checked)
        new = assign(value.fn(rows), n, value.type, arrow_type) if value is not None else pa.nulls(n, arrow_type)
        if how != "storage" and name in program.not_null and new.null_count:
            raise MergekitError(ErrorCode.CONSTRAINT_VIOLATION, not_null_violation(name))
        arrays.append(new)
        if case.operation is MergeOperation.UPDATE:
            old = column_of(rows.column(_TARGET + name), n, arrow_type)
            equal = pc.or_kleene(pc.and_(pc.is_null(new), pc.is_null(old)), pc.equal(new, old))
            same = pc.and_(same, pc.fill_null(equal, False))
    names = [*program.data_columns, OP, CASE, ROW_ID, UNCHANGED]
    arrays.append(pa.repeat(pa.scalar(case.operation.value, pa.int8()), n))
    arrays.append(pa.repeat(pa.scalar(case.number, pa.int32()), n))
    arrays.append(column_of(rows.column(_TARGET + program.row_id), n, program.row_id_type))
    arrays.append(same)
    if program.check_duplicates:
        names.append(UID)
        arrays.append(column_of(rows.column(UID), n, pa.int64()))
    return pa.RecordBatch.from_arrays(arrays, names=names)
