"""SQL type names <-> Arrow types, for the types of DESIGN.md §5.

Connectors store column types as SQL text (``varchar(16)``) and need the Arrow type back; the engine shows
SQL names in DESCRIBE and in error messages. Kept here, without sqlglot, so connectors can use it.

The mapping (both directions; the Arrow side is what pages carry):

==============================================  ===========================================================
SQL                                             Arrow
==============================================  ===========================================================
BOOLEAN                                         bool
TINYINT, SMALLINT, INTEGER (INT), BIGINT        int8, int16, int32, int64
REAL (FLOAT), DOUBLE (DOUBLE PRECISION)         float32, float64
DECIMAL(p, s) (NUMERIC)                         decimal128(p, s); DECIMAL alone is DECIMAL(38, 0)
VARCHAR, VARCHAR(n), CHAR(n)                    string (the length is kept only in ``type_name``)
DATE                                            date32
TIMESTAMP, TIMESTAMP(p)                         timestamp("us"): microseconds whatever ``p`` says
TIMESTAMP WITH TIME ZONE                        timestamp("us", tz="UTC")
VARBINARY                                       binary
==============================================  ===========================================================

Lossy on purpose: ``VARCHAR(16)`` and ``VARCHAR`` share one Arrow type, so a connector that must show the
declared type stores ``ColumnMetadata.type_name`` (the engine fills it from the statement) next to the Arrow
type. Both functions are pure and cheap: safe on executors.
"""

from __future__ import annotations

import re

import pyarrow as pa

__all__ = ["sql_type_name", "parse_sql_type"]

# Type names without parameters, after whitespace was normalised and the name lower-cased.
_SIMPLE: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "integer": pa.int32(),
    "int": pa.int32(),  # alias of INTEGER
    "bigint": pa.int64(),
    "real": pa.float32(),
    "float": pa.float32(),  # alias of REAL, as in Trino
    "double": pa.float64(),
    "double precision": pa.float64(),  # ISO spelling of DOUBLE
    "varchar": pa.string(),
    "char": pa.string(),  # CHAR(n) pads in SQL; pages carry the string as stored
    "date": pa.date32(),
    "varbinary": pa.binary(),
    "timestamp": pa.timestamp("us"),  # no zone: wall-clock time, read in the session time zone
    "timestamp with time zone": pa.timestamp("us", tz="UTC"),  # an instant, normalised to UTC
}


def parse_sql_type(text: str) -> pa.DataType:
    """``'decimal(10,2)'`` -> ``pa.decimal128(10, 2)``. Raises ValueError for an unknown type.

    Case and spacing do not matter (``' VarChar ( 16 ) '``). Used by connectors that store column types as
    text (the journal's catalog, the csvdir example's schema file) to rebuild ``ColumnMetadata.type``. A
    DECIMAL outside 1 <= p <= 38, 0 <= s <= p raises ``ValueError("Invalid decimal type: ...")``.

    >>> parse_sql_type("VARCHAR(16)")
    DataType(string)
    >>> parse_sql_type("timestamp(3) with time zone")
    TimestampType(timestamp[us, tz=UTC])
    """
    # normalise: lower case, single spaces, no spaces around parentheses
    t = re.sub(r"\s+", " ", text.strip().lower())
    t = re.sub(r"\s*\(\s*", "(", t)
    t = re.sub(r"\s*\)", ")", t)
    m = re.fullmatch(r"decimal(?:\((\d+)(?:,\s*(\d+))?\))?", t) or re.fullmatch(
        r"numeric(?:\((\d+)(?:,\s*(\d+))?\))?", t
    )
    # DECIMAL / NUMERIC, with optional precision and scale (Trino's defaults: 38 and 0)
    if m:
        precision = int(m.group(1) or 38)
        scale = int(m.group(2) or 0)
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise ValueError(f"Invalid decimal type: {text}")
        return pa.decimal128(precision, scale)
    # a length does not change the Arrow type
    m = re.fullmatch(r"(varchar|char)\((\d+)\)", t)
    if m:
        return pa.string()
    # any precision: pages carry microseconds
    m = re.fullmatch(r"timestamp(?:\((\d+)\))?( with time zone)?", t)
    if m:
        return pa.timestamp("us", tz="UTC") if m.group(2) else pa.timestamp("us")
    if t in _SIMPLE:
        return _SIMPLE[t]
    raise ValueError(f"Unknown type: {text}")


def sql_type_name(arrow_type: pa.DataType) -> str:
    """The SQL name of an Arrow type: ``pa.int32()`` -> ``'integer'``.

    The inverse of :func:`parse_sql_type` for the types it produces (``parse_sql_type(sql_type_name(t)) ==
    t``), plus ``row(...)`` for structs (a composite row id) and ``array(...)`` for lists. Another Arrow type
    comes back as Arrow's own name, for messages only. Lower case, as DESCRIBE shows types.

    >>> sql_type_name(pa.struct([("file", pa.string()), ("pos", pa.int64())]))
    'row(file varchar, pos bigint)'
    """
    t = arrow_type
    # exact integer and floating types first: they are the common case
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
    # decimal128 and decimal256 alike (a DECIMAL never exceeds 38 digits, but Arrow data may use 256)
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    # large variants come from files written by other tools (pyarrow defaults differ between versions)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "varchar"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "varbinary"
    # date64 is named DATE too, and a timestamp of any unit TIMESTAMP (only the name: no conversion here)
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp with time zone" if t.tz else "timestamp"
    # composite values: a struct row id (the journal's composite key), arrays of table properties
    if pa.types.is_struct(t):
        fields = ", ".join(f"{f.name} {sql_type_name(f.type)}" for f in t)
        return f"row({fields})"
    if pa.types.is_list(t):
        return f"array({sql_type_name(t.value_type)})"
    # no SQL name: Arrow's, so a message still says what it is
    return str(t)
