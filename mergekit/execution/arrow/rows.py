"""The Arrow program of a row-level ``DELETE`` / ``UPDATE`` (seed 003's SPI, :mod:`mergekit.execution.dml.row_level`):
the ``WHERE`` clause, the ``SET`` values, NOT NULL and the CHECK constraints over the pages of an
``UpdatablePageSource``, in the task that read them.

The expressions are what :func:`mergekit.sql.lower_for_rows` lowers, compiled by :mod:`.compiler` (the one Arrow
compiler of lowered trees) with the row-level statement's own columns (:class:`PageColumns`: the target's columns
on a page, qualified by the names the statement gives the target) and its subqueries, which Spark computed on the
driver (:class:`~.compiler.Lookup`). :func:`compile_rows` raises :class:`~.compiler.Unsupported` naming what
Arrow does not compute exactly as Spark would; the caller refuses the statement with ``NOT_SUPPORTED``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.planner import not_null_violation
from mergekit.spi import ColumnHandle
from mergekit.sql import Ref

from .compiler import (
    ArrowCompiler,
    Compiled,
    Features,
    Lookup,
    Unsupported,
    assign,
    assignable,
    column_of,
    mask_of,
    type_name,
)

__all__ = ["PageColumns", "RowProgram", "compile_rows"]


@attrs.frozen
class PageColumns:
    """Column resolution over a page of the target's ``columns`` (name -> Arrow type; matched regardless of case),
    a reference qualified only by one of the ``outer`` names the statement gives the target."""

    columns: Mapping[str, pa.DataType]
    outer: frozenset[str]

    def resolve(self, ref: Ref) -> tuple[str, pa.DataType]:
        name = next((c for c in self.columns if c.lower() == ref.name.lower()), None)
        if name is None or (ref.qualifier is not None and ref.qualifier.lower() not in self.outer):
            raise Unsupported(f"the column reference {ref.qualifier + '.' if ref.qualifier else ''}{ref.name}")
        return name, self.columns[name]


@attrs.frozen
class RowProgram:
    """What a task evaluates on each page (pickled to executors with the subqueries' results)."""

    where: Compiled | None
    values: tuple[Compiled, ...]  # by updated column
    value_types: tuple[pa.DataType, ...]  # the updated columns' types
    not_null: tuple[str | None, ...]  # per updated column: its name when NOT NULL
    checks: tuple[tuple[str, Compiled], ...]  # (violation message, evaluator over the new rows)

    def selected(self, page: pa.RecordBatch) -> np.ndarray:
        """The indices of the page's rows the WHERE clause selects (every row without one)."""
        if self.where is None:
            return np.arange(page.num_rows)
        return np.flatnonzero(mask_of(self.where.fn(page), page.num_rows))

    def new_values(self, page: pa.RecordBatch) -> list[pa.Array]:
        """The SET values over ``page`` as values of their columns' types (Spark's CAST), NOT NULL checked."""
        n = page.num_rows
        arrays = []
        for value, arrow_type, not_null in zip(self.values, self.value_types, self.not_null, strict=True):
            array = assign(value.fn(page), n, value.type, arrow_type)
            if not_null is not None and array.null_count:
                raise MergekitError(ErrorCode.CONSTRAINT_VIOLATION, not_null_violation(not_null))
            arrays.append(array)
        return arrays

    def check(self, new_rows: pa.RecordBatch) -> None:
        """CONSTRAINT_VIOLATION when a CHECK constraint is FALSE on a new row (NULL passes, as in SQL)."""
        for message, check in self.checks:
            result = column_of(check.fn(new_rows), new_rows.num_rows, pa.bool_())
            if pc.any(pc.equal(result, False)).as_py():
                raise MergekitError(ErrorCode.CONSTRAINT_VIOLATION, message)


def compile_rows(
    *,
    where: Any,
    updated: Sequence[ColumnHandle],
    values: Sequence[Any],
    checks: Sequence[tuple[str, Any]],
    columns: Mapping[str, pa.DataType],
    outer: frozenset[str],
    not_null: frozenset[str],
    subqueries: Mapping[int, Lookup],
) -> RowProgram:
    """The lowered ``where`` (or None), SET ``values`` (by ``updated`` column) and ``checks`` ((violation message,
    lowered tree) over the new rows, unqualified) compiled over pages of ``columns``; ``subqueries``: their
    results (:class:`~.compiler.Lookup`) by identity of their ``SubqueryRef``. Raises Unsupported."""
    compiler = ArrowCompiler(PageColumns(columns, outer), Features(subqueries=subqueries, decimals=True))
    condition = compiler.compile(where) if where is not None else None
    if condition is not None and not (pa.types.is_boolean(condition.type) or pa.types.is_null(condition.type)):
        raise Unsupported(f"a WHERE clause of type {type_name(condition.type)}")
    compiled = []
    for column, tree in zip(updated, values, strict=True):
        value = compiler.compile(tree)
        if not assignable(value.type, column.type, decimals=True):
            raise Unsupported(
                f"an assignment of {type_name(value.type)} to the {type_name(column.type)} column {column.name}"
            )
        compiled.append(value)
    check_compiler = ArrowCompiler(PageColumns(columns, frozenset()), Features(decimals=True))
    return RowProgram(
        where=condition,
        values=tuple(compiled),
        value_types=tuple(c.type for c in updated),
        not_null=tuple(c.name if c.name in not_null else None for c in updated),
        checks=tuple((message, check_compiler.compile(tree)) for message, tree in checks),
    )
