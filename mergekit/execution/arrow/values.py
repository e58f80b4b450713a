"""VALUES rows of constants in Arrow: what the driver tier's ``INSERT INTO t VALUES ...`` writes
(:mod:`mergekit.execution.dml.append`).

Every value is a lowered tree without a column reference (``1``, ``'a'``, ``NULL``, ``-3``, ``DATE '2026-01-01' +
7``, ``2 * 21``), compiled by :mod:`.compiler` (the one Arrow compiler) and assigned to its target column as Spark's
store assignment does (:func:`~.compiler.assign`: a wider integer range-checked, an integer up to INTEGER into a
DOUBLE, an integer into a DECIMAL (one with more digits than the column holds fails), strings as they are).
:func:`compile_values` says why a statement stays on Spark (a value the lowering does not cover, a value that does
not assign to its column exactly, rows of different widths, a column whose rows differ in type family): those are
decided, and worded, by Spark's analysis as before. Nothing is evaluated before
:meth:`ValuesProgram.evaluate`, so EXPLAIN never fails on a value that would.

:func:`compile_source` types a MERGE source ``(VALUES ...) AS s(a, b)`` as Spark's analysis of the rendered VALUES
does (each column the one type its rows share: ``integer`` or ``bigint`` (the wider when rows hold both),
``double``, ``decimal(p, s)`` (the one that holds every row's), ``varchar``, ``boolean`` or ``date``), for the driver
tier's MERGE (:mod:`mergekit.execution.dml.driver`); :class:`SourceColumns` resolves the source's columns for an
expression over them (the join key).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pyarrow as pa

from mergekit import sql as msql
from mergekit.sql import Ref

from .compiler import (
    ArrowCompiler,
    Compiled,
    Unsupported,
    assign,
    assignable,
    column_of,
    exact_decimal,
    value_family,
)

__all__ = ["SourceColumns", "ValuesProgram", "compile_constants", "compile_source", "compile_values"]


@attrs.frozen
class _NoColumns:
    """A VALUES row reads no column: any reference stays on Spark."""

    def resolve(self, ref: Ref) -> tuple[str, pa.DataType]:
        raise Unsupported(f"the column reference {ref.name}")


_ONE_ROW = pa.table({"$": pa.array([0], pa.int8())})


@attrs.frozen
class ValuesProgram:
    """The compiled values, by row and by column, and the target columns' Arrow types."""

    rows: tuple[tuple[Compiled, ...], ...]
    types: tuple[pa.DataType, ...]

    def evaluate(self) -> list[pa.Array]:
        """Each column's values, in the column's type. Rows are evaluated in order, each value once: the first
        that fails (an overflow, a date out of range, a value out of its column's range) raises its coded error."""
        cells: list[list[pa.Array]] = [[] for _ in self.types]
        for row in self.rows:
            for j, (value, column) in enumerate(zip(row, self.types, strict=True)):
                cells[j].append(assign(value.fn(_ONE_ROW), 1, value.type, column))
        return [pa.concat_arrays(c) if c else pa.array([], t) for c, t in zip(cells, self.types, strict=True)]

    def table(self, names: Sequence[str]) -> pa.Table:
        """:meth:`evaluate`'s columns as a table with ``names``."""
        return pa.table(dict(zip(names, self.evaluate(), strict=True)))


def _compiled_rows(rows: Sequence[Sequence[msql.Expression]], width: int) -> list[tuple[Compiled, ...]] | str:
    """Every value of ``rows`` compiled (no column reference), or why Spark evaluates them."""
    compiler = ArrowCompiler(_NoColumns())
    compiled: list[tuple[Compiled, ...]] = []
    for row in rows:
        if len(row) != width:
            return f"a VALUES row has {len(row)} values for {width} columns"
        values: list[Compiled] = []
        for expr in row:
            lowered = expr.lowered()
            if lowered is None:
                return f"the value {expr.sql} is evaluated by Spark"
            try:
                values.append(compiler.compile(lowered))
            except Unsupported as why:
                return f"the value {expr.sql} is evaluated by Spark ({why})"
        compiled.append(tuple(values))
    return compiled


def compile_constants(values: Sequence[msql.Expression]) -> list[pa.Array] | str:
    """``SELECT 1, 'a'``: each value evaluated (in order: the first that fails raises its coded error) as a
    one-row array of its type; or why Spark evaluates them."""
    compiled = _compiled_rows([values], len(values))
    if isinstance(compiled, str):
        return compiled
    return [column_of(v.fn(_ONE_ROW), 1, v.type) for v in compiled[0]]


def compile_values(rows: Sequence[Sequence[msql.Expression]], types: Sequence[pa.DataType]) -> ValuesProgram | str:
    """The program of ``rows`` (each with one value per column of ``types``), or why Spark evaluates them."""
    compiled = _compiled_rows(rows, len(types))
    if isinstance(compiled, str):
        return compiled
    for j, column in enumerate(types):
        values = [row[j] for row in compiled]
        for value, expr in zip(values, (row[j] for row in rows), strict=True):
            # an integer into a DECIMAL column as Spark's store assignment casts it (a value with too many digits
            # fails: assign); other DECIMAL conversions (rounding) are left to Spark
            into_decimal = pa.types.is_signed_integer(value.type) and pa.types.is_decimal128(column)
            if not assignable(value.type, column, decimals=into_decimal):
                return f"the value {expr.sql} ({value.type}) needs Spark's conversion to {column}"
        seen = {value_family(v.type) for v in values if not pa.types.is_null(v.type)}
        if len(seen) > 1:  # Spark types the column by the rows' common type, or refuses them: its analysis decides
            return f"the VALUES rows' column {j + 1} mixes {' and '.join(sorted(str(f) for f in seen))}"
    return ValuesProgram(rows=tuple(compiled), types=tuple(types))


def compile_source(rows: Sequence[Sequence[msql.Expression]], names: Sequence[str]) -> ValuesProgram | str:
    """A MERGE source's VALUES rows typed by column (the type every non-NULL value of the column has), or why
    Spark types them: a value outside the Arrow compiler's subset, rows of other widths, a column of mixed types
    or of NULLs only (Trino's ``unknown``)."""
    compiled = _compiled_rows(rows, len(names))
    if isinstance(compiled, str):
        return compiled
    types: list[pa.DataType] = []
    for j, name in enumerate(names):
        seen = {row[j].type for row in compiled if not pa.types.is_null(row[j].type)}
        if seen and all(pa.types.is_integer(t) for t in seen):  # INTEGER and BIGINT rows: a BIGINT column
            seen = {max(seen, key=lambda t: t.bit_width)}
        if len(seen) > 1 and all(exact_decimal(t) for t in seen):  # DECIMALs: the one that holds them all
            scale = max(t.scale for t in seen)
            wider = pa.decimal128(max(t.precision - t.scale for t in seen) + scale, scale)
            seen = {wider} if exact_decimal(wider) else seen
        if len(seen) != 1:
            return f"the VALUES rows' column {name} " + ("holds only NULLs" if not seen else "mixes types")
        types.append(seen.pop())
    return ValuesProgram(rows=tuple(compiled), types=tuple(types))


@attrs.frozen
class SourceColumns:
    """Column resolution over a source table's ``types`` (name -> Arrow type), a reference unqualified or
    qualified by the source's ``alias``."""

    alias: str
    types: dict[str, pa.DataType]

    def resolve(self, ref: Ref) -> tuple[str, pa.DataType]:
        if ref.name not in self.types or (ref.qualifier is not None and ref.qualifier != self.alias):
            raise Unsupported(f"column {ref}")
        return ref.name, self.types[ref.name]
