"""DECIMAL arithmetic, comparison and store assignment as Spark types and rounds them, for the Arrow compiler
(:mod:`.compiler`) on the row-level path: pure functions of Arrow types and arrays."""

from __future__ import annotations

import decimal
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["as_decimal_type", "assign_decimal", "common_decimal", "decimal_result"]


# an integer operand of DECIMAL arithmetic or comparison, as Spark widens it: the DECIMAL that holds every value
_INTEGER_DECIMALS = {
    8: pa.decimal128(3, 0),
    16: pa.decimal128(5, 0),
    32: pa.decimal128(10, 0),
    64: pa.decimal128(20, 0),
}


def as_decimal_type(t: pa.DataType) -> pa.DataType | None:
    """``t`` as a DECIMAL operand: itself, an integer's widening, NULL's; None for any other type."""
    if pa.types.is_decimal128(t):
        return t
    if pa.types.is_integer(t):
        return _INTEGER_DECIMALS[t.bit_width]
    return pa.decimal128(1, 0) if pa.types.is_null(t) else None


def decimal_result(op: str, types: Sequence[pa.DataType]) -> pa.DataType | None:
    """The DECIMAL type of ``op`` over DECIMAL and integer operands, by Spark's (and Arrow's) rules: ``+``/``-``
    scale max(s1, s2), integer digits max + 1; ``*`` precision p1 + p2 + 1, scale s1 + s2. None when an operand is
    neither, none is a DECIMAL, or the result would pass 38 digits (where Spark reduces the scale: left to it)."""
    if op not in ("add", "subtract", "multiply", "negate") or not any(pa.types.is_decimal128(t) for t in types):
        return None
    widened = [as_decimal_type(t) for t in types]
    if any(w is None for w in widened):
        return None
    if op == "negate":
        return widened[0]
    (p1, s1), (p2, s2) = ((w.precision, w.scale) for w in widened)  # type: ignore[union-attr]
    if op == "multiply":
        precision, scale = p1 + p2 + 1, s1 + s2
    else:
        scale = max(s1, s2)
        precision = max(p1 - s1, p2 - s2) + scale + 1
    return pa.decimal128(precision, scale) if precision <= 38 else None


def common_decimal(types: Sequence[pa.DataType]) -> pa.DataType | None:
    """The DECIMAL in which DECIMAL and integer values compare exactly (None: another type, or over 38 digits)."""
    widened = [as_decimal_type(t) for t in types]
    if any(w is None for w in widened) or not any(pa.types.is_decimal128(t) for t in types):
        return None
    scale = max(w.scale for w in widened)  # type: ignore[union-attr]
    digits = max(w.precision - w.scale for w in widened)  # type: ignore[union-attr]
    return pa.decimal128(digits + scale, scale) if digits + scale <= 38 else None


def assign_decimal(array: pa.Array, column: pa.DataType) -> pa.Array:
    """DECIMAL or integer values into a DECIMAL column, as Spark's store assignment casts: rounded half away from
    zero to the column's scale; a value with more integer digits than the column holds fails (the message
    mergekit.execution.failures gives Spark's NUMERIC_VALUE_OUT_OF_RANGE)."""
    source = as_decimal_type(array.type)
    assert source is not None
    array = array.cast(source)
    rounded = array
    if source.scale > column.scale:
        rounded = pc.round(array, ndigits=column.scale, round_mode="half_towards_infinity")
    try:
        return rounded.cast(column)
    except pa.ArrowInvalid:
        limit = decimal.Decimal(10) ** (column.precision - column.scale)
        first = next(v for v in rounded.to_pylist() if v is not None and abs(v) >= limit)
        message = f"Decimal overflow: {first} does not fit in DECIMAL({column.precision}, {column.scale})"
        raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message) from None
