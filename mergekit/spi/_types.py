"""SQL type names <-> Arrow types, for the types of DESIGN.md §5.

Connectors store column types as SQL text (``varchar(16)``) and need the Arrow type back; the engine shows
SQL names in DESCRIBE and in error messages. Kept here, without sqlglot, so connectors can use it.
"""

from __future__ import annotations

import re

import pyarrow as pa

__all__ = ["sql_type_name", "parse_sql_type"]

_SIMPLE: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "integer": pa.int32(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "real": pa.float32(),
    "float": pa.float32(),
    "double": pa.float64(),
    "double precision": pa.float64(),
    "varchar": pa.string(),
    "char": pa.string(),
    "date": pa.date32(),
    "varbinary": pa.binary(),
    "timestamp": pa.timestamp("us"),
    "timestamp with time zone": pa.timestamp("us", tz="UTC"),
}


def parse_sql_type(text: str) -> pa.DataType:
    """``'decimal(10,2)'`` -> ``pa.decimal128(10, 2)``. Raises ValueError for an unknown type."""
    t = re.sub(r"\s+", " ", text.strip().lower())
    t = re.sub(r"\s*\(\s*", "(", t)
    t = re.sub(r"\s*\)", ")", t)
    m = re.fullmatch(r"decimal(?:\((\d+)(?:,\s*(\d+))?\))?", t) or re.fullmatch(
        r"numeric(?:\((\d+)(?:,\s*(\d+))?\))?", t
    )
    if m:
        precision = int(m.group(1) or 38)
        scale = int(m.group(2) or 0)
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise ValueError(f"Invalid decimal type: {text}")
        return pa.decimal128(precision, scale)
    m = re.fullmatch(r"(varchar|char)\((\d+)\)", t)
    if m:
        return pa.string()
    m = re.fullmatch(r"timestamp(?:\((\d+)\))?( with time zone)?", t)
    if m:
        return pa.timestamp("us", tz="UTC") if m.group(2) else pa.timestamp("us")
    if t in _SIMPLE:
        return _SIMPLE[t]
    raise ValueError(f"Unknown type: {text}")


def sql_type_name(arrow_type: pa.DataType) -> str:
    """The SQL name of an Arrow type: ``pa.int32()`` -> ``'integer'``."""
    t = arrow_type
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t):
        return "tinyint"
    if pa.types.is_int16(t):
        return "smallint"
    if pa.types.is_int32(t):
        return "integer"
    if pa.types.is_int64(t):
        return "bigint"
    if pa.types.is_float32(t):
        return "real"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "varchar"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "varbinary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp with time zone" if t.tz else "timestamp"
    if pa.types.is_struct(t):
        fields = ", ".join(f"{f.name} {sql_type_name(f.type)}" for f in t)
        return f"row({fields})"
    if pa.types.is_list(t):
        return f"array({sql_type_name(t.value_type)})"
    return str(t)
