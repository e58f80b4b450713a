"""Schema evolution rules (pure Python): which column type changes are widenings, and which columns a
``MERGE WITH SCHEMA EVOLUTION`` adds to its target.

``ALTER TABLE t ALTER COLUMN c SET DATA TYPE type`` accepts what Trino's Iceberg and Delta connectors accept:
changes every stored value survives unchanged, so files written before the change are read under the new type by
a cast (Spark's Parquet reader widens these types by itself). Anything else is refused with ``NOT_SUPPORTED``
before the connector is asked.

``MERGE WITH SCHEMA EVOLUTION`` follows Delta's rules (docs.delta.io, "Schema evolution in merge"): a source
column the target lacks is added when ``UPDATE SET *`` or ``INSERT *`` would assign it, or when an explicit
``UPDATE SET new = ...`` or ``INSERT (new, ...)`` names a column the target lacks and the source has. An added
column takes the source column's type, is nullable and goes after the target's columns, in the source's order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnMetadata, parse_sql_type, sql_type_name

__all__ = ["WIDENINGS", "type_change_needed", "added_merge_columns"]

WIDENINGS = (
    "a wider integer (tinyint, smallint, integer, bigint), real to double, decimal(p, s) to decimal(p2, s) with "
    "p2 >= p, varchar(n) to a longer varchar or to varchar"
)
"""The widenings ``SET DATA TYPE`` accepts, as the refusal lists them."""

_INTEGER_RANK = {pa.int8(): 0, pa.int16(): 1, pa.int32(): 2, pa.int64(): 3}


def _varchar_length(type_name: str) -> int | None:
    """The length of ``varchar(n)``; None for ``varchar`` (unbounded)."""
    m = re.fullmatch(r"\s*varchar\s*\(\s*(\d+)\s*\)\s*", type_name.lower())
    return int(m.group(1)) if m else None


def _normalized(type_name: str) -> str:
    return re.sub(r"\s+", "", type_name.lower())


def type_change_needed(column: ColumnMetadata, new_type: pa.DataType, new_type_name: str) -> bool:
    """Whether changing ``column`` to ``new_type`` (SQL ``new_type_name``) changes anything: False for the same
    type, True for a widening; a narrowing or a change of type family raises ``NOT_SUPPORTED``."""
    old_name = column.type_name or sql_type_name(column.type)
    old = column.type
    if old == new_type:
        if not pa.types.is_string(old):
            return False
        old_char, new_char = old_name.lower().startswith("char"), new_type_name.lower().startswith("char")
        if not old_char and not new_char:
            old_length, new_length = _varchar_length(old_name), _varchar_length(new_type_name)
            if old_length == new_length:
                return False
            if new_length is None or (old_length is not None and new_length > old_length):
                return True
        elif _normalized(old_name) == _normalized(new_type_name):
            return False
    elif old in _INTEGER_RANK and new_type in _INTEGER_RANK:
        if _INTEGER_RANK[new_type] > _INTEGER_RANK[old]:
            return True
    elif pa.types.is_float32(old) and pa.types.is_float64(new_type):
        return True
    elif pa.types.is_decimal(old) and pa.types.is_decimal(new_type):
        if new_type.scale == old.scale and new_type.precision >= old.precision:
            return True
    raise MergekitError(
        ErrorCode.NOT_SUPPORTED,
        f"Cannot change type from {old_name} to {new_type_name} for column '{column.name}': only widening "
        f"changes are supported ({WIDENINGS})",
    )


def added_merge_columns(
    target: Sequence[ColumnMetadata],
    source: Sequence[ColumnMetadata],
    *,
    star: bool,
    assigned: Sequence[str],
) -> tuple[ColumnMetadata, ...]:
    """The columns a ``MERGE WITH SCHEMA EVOLUTION`` adds to ``target``: source columns (name, type; the name
    as the source spells it, compared case-insensitively) the target lacks that a ``*`` clause (``star``) would
    assign or that an explicit assignment or INSERT column list names (``assigned``), in the source's order,
    nullable. A name assigned explicitly that neither side has is left to the ordinary checks (it is not a
    column the statement can add)."""
    have = {c.name.lower() for c in target}
    wanted = {name.lower() for name in assigned}
    added: list[ColumnMetadata] = []
    seen: set[str] = set()
    for column in source:
        key = column.name.lower()
        if key in have or key in seen or not (star or key in wanted):
            continue
        if pa.types.is_null(column.type):
            raise MergekitError(
                ErrorCode.TYPE_MISMATCH,
                f"Cannot add column '{column.name}' to the MERGE target: its type in the source is unknown (NULL); "
                "cast it in the source",
            )
        type_name = column.type_name or sql_type_name(column.type)
        try:
            parse_sql_type(type_name)  # one of the SQL types a column can have (DESIGN.md section 5)
        except ValueError:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                f"Cannot add column '{column.name}' of type {type_name} to the MERGE target: a table column cannot "
                "have that type",
            ) from None
        seen.add(key)
        added.append(
            ColumnMetadata(name=key, type=column.type, nullable=True, comment=None, type_name=column.type_name)
        )
    return tuple(added)
