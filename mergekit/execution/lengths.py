"""Store assignment of bounded strings: what a value written into a ``VARCHAR(n)`` or ``CHAR(n)`` column becomes.

Trino and PostgreSQL agree. A value of at most n characters is stored as it is. A longer value whose characters past
the n-th are all spaces loses those spaces (SQL's store assignment). Any other longer value fails the statement,
and nothing of it is committed. Trino reports "Cannot truncate non-space characters when casting from varchar(6)
to varchar(3) on INSERT"; PostgreSQL reports "value too long for type character varying(3)".

The check runs where values reach a table: in the writer task before the merge sink sees a page
(:class:`~.pipeline.MergeWriter`, the rows of INSERT, UPDATE and MERGE alike, whatever the strategy) and in the
row-level SPI's task before ``update_rows`` (:mod:`.row_level`). Lengths count characters (code points), not
bytes. ``CHAR(n)`` values are not padded to n: they are stored and read as written, up to n characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnMetadata, MergeOperation

__all__ = ["Bounded", "bounded_columns", "fit", "fit_page"]

_BOUNDED = re.compile(r"\s*(varchar|char|character varying|character)\s*\(\s*(\d+)\s*\)\s*")
#: The operations whose data channels hold values being written (a DELETE's hold the old row, or nothing).
_WRITES = pa.array(
    [MergeOperation.INSERT, MergeOperation.UPDATE, MergeOperation.UPDATE_INSERT],
    pa.int8(),
)


@attrs.frozen
class Bounded:
    """A column whose values have at most ``length`` characters; ``type_name`` as the table declares it."""

    column: str
    length: int
    type_name: str


def bounded_columns(columns: Iterable[ColumnMetadata]) -> tuple[Bounded, ...]:
    """The ``VARCHAR(n)`` / ``CHAR(n)`` columns of ``columns``."""
    found = []
    for c in columns:
        m = _BOUNDED.fullmatch((c.type_name or "").lower())
        if m is not None and (pa.types.is_string(c.type) or pa.types.is_large_string(c.type)):
            found.append(Bounded(column=c.name, length=int(m.group(2)), type_name=c.type_name or ""))
    return tuple(found)


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
        return values
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
    return pc.if_else(over, pc.utf8_slice_codeunits(values, 0, bound.length), values)


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
