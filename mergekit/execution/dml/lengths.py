"""Store assignment of bounded strings: what a value written into a ``VARCHAR(n)`` or ``CHAR(n)`` column becomes.

Trino and PostgreSQL agree. A value of at most n characters is stored as it is. A longer value whose characters past
the n-th are all spaces loses those spaces (SQL's store assignment). Any other longer value fails the statement,
and nothing of it is committed. Trino reports "Cannot truncate non-space characters when casting from varchar(6)
to varchar(3) on INSERT"; PostgreSQL reports "value too long for type character varying(3)".

The check runs where values reach a table: in the writer task before the merge sink sees a page
(:class:`~.pipeline.MergeWriter`, the rows of INSERT, UPDATE and MERGE alike, whatever the strategy) and in the
row-level SPI's task before ``update_rows`` (:mod:`.row_level`). Lengths count characters (code points), not
bytes. A ``CHAR(n)`` value is then padded with spaces to n characters, as Trino and PostgreSQL present it, so it is
stored and read with exactly n (the SQL layer compares CHAR values without regard to trailing spaces).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnMetadata, Constraint, MergeOperation

__all__ = ["Bounded", "bounded_columns", "char_columns", "without_char_columns", "fit", "fit_page"]

_BOUNDED = re.compile(r"\s*(varchar|char|character varying|character)\s*\(\s*(\d+)\s*\)\s*")
#: The operations whose data channels hold values being written (a DELETE's hold the old row, or nothing).
_WRITES = pa.array(
    [MergeOperation.INSERT, MergeOperation.UPDATE, MergeOperation.UPDATE_INSERT],
    pa.int8(),
)


@attrs.frozen
class Bounded:
    """A column whose values have at most ``length`` characters; ``type_name`` as the table declares it; ``pad``:
    a ``CHAR(n)``, whose values are padded with spaces to exactly ``length``."""

    column: str
    length: int
    type_name: str
    pad: bool = False


def bounded_columns(columns: Iterable[ColumnMetadata]) -> tuple[Bounded, ...]:
    """The ``VARCHAR(n)`` / ``CHAR(n)`` columns of ``columns``."""
    found = []
    for c in columns:
        m = _BOUNDED.fullmatch((c.type_name or "").lower())
        if m is not None and (pa.types.is_string(c.type) or pa.types.is_large_string(c.type)):
            pad = m.group(1) in ("char", "character")
            found.append(Bounded(column=c.name, length=int(m.group(2)), type_name=c.type_name or "", pad=pad))
    return tuple(found)


def char_columns(columns: Iterable[ColumnMetadata]) -> frozenset[str]:
    """The ``CHAR(n)`` columns of ``columns``: their stored values are padded, so a value compared with them in the
    connector (pruning by key values or ranges, pushed predicates) would not meet the SQL layer's semantics."""
    return frozenset(b.column for b in bounded_columns(columns) if b.pad)


def without_char_columns(constraint: Constraint | None, columns: Iterable[ColumnMetadata]) -> Constraint | None:
    """``constraint`` without its conditions on ``CHAR(n)`` columns: they hold the statement's values as written
    (``c = 'ab'``, a MERGE source's keys), which the stored padded values do not equal, so a connector pruning by
    them would drop rows the statement matches. The statement's own filter still applies (in Spark)."""
    chars = char_columns(columns)
    if constraint is None or not chars:
        return constraint
    return Constraint(
        equalities={c: v for c, v in constraint.equalities.items() if c not in chars},
        ranges={c: v for c, v in constraint.ranges.items() if c not in chars},
        value_sets={c: v for c, v in constraint.value_sets.items() if c not in chars},
    )


def fit(values: pa.Array, bound: Bounded, statement: str, rows: pa.Array | None = None) -> pa.Array:
    """``values`` as ``bound``'s column stores them: trailing spaces past its length cut; a longer value with other
    characters there raises ``INVALID_CAST_ARGUMENT``. ``rows``: a boolean mask of the values being written (None:
    all of them); ``statement`` names the statement in the message (``INSERT``, ``UPDATE``, ``MERGE``)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)) or not len(values):
        return values
    over = pc.fill_null(pc.greater(pc.utf8_length(values), bound.length), False)
    if rows is not None:
        over = pc.and_(over, pc.fill_null(rows, False))
    if not pc.any(over).as_py():
        return _padded(values, bound, rows)
    past = pc.utf8_slice_codeunits(values, bound.length)
    bad = pc.and_(over, pc.invert(pc.fill_null(pc.match_substring_regex(past, r"^ *$"), True)))
    if pc.any(bad).as_py():
        value = values[pc.index(bad, True).as_py()].as_py()
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise MergekitError(
            ErrorCode.INVALID_CAST_ARGUMENT,
            f"Cannot truncate non-space characters when casting from varchar({len(value)}) to {bound.type_name} "
            f"on {statement or 'write'}: column {bound.column}, value '{shown}'",
        )
    return _padded(pc.if_else(over, pc.utf8_slice_codeunits(values, 0, bound.length), values), bound, rows)


def _padded(values: pa.Array, bound: Bounded, rows: pa.Array | None) -> pa.Array:
    """A ``CHAR(n)`` column's values (those of ``rows``) padded with spaces to n characters."""
    if not bound.pad:
        return values
    short = pc.fill_null(pc.less(pc.utf8_length(values), bound.length), False)
    if rows is not None:
        short = pc.and_(short, pc.fill_null(rows, False))
    if not pc.any(short).as_py():
        return values
    return pc.if_else(short, pc.utf8_rpad(values, bound.length, " "), values)


def fit_page(page: pa.RecordBatch, bounds: tuple[Bounded, ...], operation: str, statement: str) -> pa.RecordBatch:
    """:func:`fit` over the data channels of a merge page, for its rows that write values (column ``operation``:
    INSERT, UPDATE, UPDATE_INSERT)."""
    if not bounds or not page.num_rows:
        return page
    writes = pc.is_in(page.column(operation), value_set=_WRITES)
    for bound in bounds:
        i = page.schema.get_field_index(bound.column)
        if i < 0:
            continue
        old = page.column(i)
        new = fit(old, bound, statement, writes)
        if new is not old:
            page = page.set_column(i, page.schema.field(i), new)
    return page
