"""Schema evolution of a journal table: its ``TableSpec`` after ADD, RENAME and DROP COLUMN and SET DATA TYPE.

Data files are never rewritten. Each column keeps the *physical* name its files use (``TableSpec.physical``):
a rename changes only the name readers see, a dropped column's physical name is retired (never given out
again, so a column re-added under that name starts empty), and a column added under a name some column's files
already use gets a fresh one (``name#1``). A widening changes only the declared type: files written before it
hold the narrower type and every read casts them (``_storage.read_versioned``; Spark's Parquet reader widens
integers, REAL and decimals by itself). The DDL methods (``_ddl``) and ``MERGE WITH SCHEMA EVOLUTION``
(``_commit``) build the new spec here and record it with the commit that makes it current
(``SnapshotMetadata._record_spec``), so time travel reads an earlier version under the columns it had.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pyarrow as pa

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import ColumnMetadata

from ._handles import HIDDEN_ROW_ID, TableSpec

__all__ = ["with_columns", "renamed", "retyped", "dropped", "reserved_names"]


def reserved_names(spec: TableSpec) -> set[str]:
    """Names a business column cannot take: the journal's version fields and the hidden row id."""
    return {spec.version_field, spec.subsequent_field, HIDDEN_ROW_ID}


def _column(spec: TableSpec, name: str, table: str) -> ColumnMetadata:
    for c in spec.columns:
        if c.name == name and not c.hidden:
            return c
    raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{name}' does not exist in table {table}")


def _new_name(spec: TableSpec, name: str) -> None:
    if name in {c.name for c in spec.columns} or name in reserved_names(spec):
        raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{name}' already exists")


def with_columns(spec: TableSpec, columns: Sequence[ColumnMetadata]) -> TableSpec:
    """``spec`` with nullable ``columns`` appended after the business columns (and, in ``<t>_journal``, before the
    version fields), each under a physical name no file of the table used for another column."""
    mapping = dict(spec.physical_names)
    data = [c for c in spec.columns if not c.hidden]
    hidden = [c for c in spec.columns if c.hidden]
    order = list(spec.journal_order)
    for column in columns:
        _new_name(spec, column.name)
        if not column.nullable:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED,
                "A column added to a journal table must be nullable: existing versions have no value for it",
            )
        mapping[column.name] = spec.fresh_physical(column.name)
        last_data = max(order.index(c.name) for c in data) if data else -1
        order.insert(last_data + 1, column.name)
        data.append(column)
        spec = attrs.evolve(spec, columns=[*data, *hidden], journal_order=order)
        spec = attrs.evolve(spec, physical_names=spec.with_physical(mapping))
    return spec


def renamed(spec: TableSpec, source: str, target: str, table: str) -> TableSpec:
    """``spec`` with column ``source`` named ``target`` (in the key and the journal's column order too); its files
    keep the physical name."""
    _column(spec, source, table)
    _new_name(spec, target)
    mapping = {c.name: spec.physical(c.name) for c in spec.columns}
    physical = mapping.pop(source)
    columns = [attrs.evolve(c, name=target) if c.name == source else c for c in spec.columns]
    mapping[target] = physical
    spec = attrs.evolve(
        spec,
        columns=columns,
        key=[target if k == source else k for k in spec.key],
        journal_order=[target if n == source else n for n in spec.journal_order],
    )
    return attrs.evolve(spec, physical_names=spec.with_physical(mapping))


def retyped(spec: TableSpec, column: str, new_type: pa.DataType, type_name: str, table: str) -> TableSpec:
    """``spec`` with ``column`` declared ``type_name`` (a widening the engine checked; files keep their type and
    reads cast them). Refuses a change Arrow cannot cast every stored value of safely."""
    old = _column(spec, column, table)
    widening = (
        old.type == new_type
        or (pa.types.is_integer(old.type) and pa.types.is_integer(new_type) and new_type.bit_width > old.type.bit_width)
        or (pa.types.is_float32(old.type) and pa.types.is_float64(new_type))
        or (
            pa.types.is_decimal(old.type)
            and pa.types.is_decimal(new_type)
            and new_type.scale == old.type.scale
            and new_type.precision >= old.type.precision
        )
    )
    if not widening:
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED,
            f"Cannot change type from {old.type_name or old.type} to {type_name} for column '{column}' of table "
            f"{table}: its data files could not be read under the new type",
        )
    columns = [attrs.evolve(c, type=new_type, type_name=type_name) if c.name == column else c for c in spec.columns]
    return attrs.evolve(spec, columns=columns)


def dropped(spec: TableSpec, column: str, table: str) -> TableSpec:
    """``spec`` without ``column``; its physical name is retired. A key column cannot be dropped (rows are
    versioned by it), nor the last business column."""
    _column(spec, column, table)
    if column in spec.key:
        raise MergekitError(
            ErrorCode.NOT_SUPPORTED, f"Cannot drop column '{column}': it is part of the key of table {table}"
        )
    if len(spec.visible) == 1:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "Cannot drop the only column in a table")
    mapping = {c.name: spec.physical(c.name) for c in spec.columns}
    retired = (*spec.retired, mapping.pop(column))
    spec = attrs.evolve(
        spec,
        columns=[c for c in spec.columns if c.name != column],
        journal_order=[n for n in spec.journal_order if n != column],
        retired=retired,
    )
    return attrs.evolve(spec, physical_names=spec.with_physical(mapping))
