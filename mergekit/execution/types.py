"""Arrow <-> Spark <-> Trino type names, and Trino's implicit coercion rule for INSERT/UPDATE/MERGE values."""

from __future__ import annotations

import pyarrow as pa

from mergekit.execution.lazy_pyspark import T, pandas_types

__all__ = [
    "spark_type",
    "arrow_type",
    "through_spark",
    "kept_by_spark",
    "spark_sql_type",
    "trino_name",
    "coercible",
    "spark_schema",
]


def spark_type(t: pa.DataType) -> T.DataType:
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz else T.TimestampNTZType()
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable) for f in t])
    return pandas_types.from_arrow_type(t)


def spark_schema(schema: pa.Schema) -> T.StructType:
    return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in schema])


def arrow_type(t: T.DataType) -> pa.DataType:
    if isinstance(t, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(t, T.TimestampNTZType):
        return pa.timestamp("us")
    if isinstance(t, T.StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType)) for f in t.fields])
    return pandas_types.to_arrow_type(t)


#: Arrow types Spark keeps as they are (``arrow_type(spark_type(t)) == t``; so does NULL's): the driver tier's
#: results and rows have these without importing pyspark (tests/engine/test_lazy_spark.py compares each with the
#: round trip).
_SPARK_KEEPS = frozenset(
    [pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.string()]
    + [pa.binary(), pa.date32()]
)


def kept_by_spark(t: pa.DataType) -> bool:
    """Whether Spark reads a value of Arrow type ``t`` as it is (``through_spark(t) == t``), other than NULL."""
    return t in _SPARK_KEEPS or pa.types.is_decimal128(t)


def through_spark(t: pa.DataType) -> pa.DataType:
    """The Arrow type a value of type ``t`` has after Spark: ``arrow_type(spark_type(t))`` (a large string is a
    string, a timestamp microseconds in UTC), computed without pyspark for the types the driver tier uses."""
    if kept_by_spark(t) or t == pa.null():
        return t
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    return arrow_type(spark_type(t))


def spark_sql_type(t: T.DataType) -> str:
    """SQL text of a Spark type for CAST (``DECIMAL(10,2)``, ``STRUCT<a: INT>``)."""
    return (
        t.simpleString().upper()
        if not isinstance(t, T.StructType)
        else ("STRUCT<" + ", ".join(f"`{f.name}`: {spark_sql_type(f.dataType)}" for f in t.fields) + ">")
    )


def trino_name(t: T.DataType) -> str:
    """The Trino name of a Spark type, for messages (``StringType`` -> ``varchar``)."""
    simple = {
        T.StringType: "varchar",
        T.IntegerType: "integer",
        T.LongType: "bigint",
        T.ShortType: "smallint",
        T.ByteType: "tinyint",
        T.DoubleType: "double",
        T.FloatType: "real",
        T.BooleanType: "boolean",
        T.DateType: "date",
        T.TimestampType: "timestamp(6) with time zone",
        T.TimestampNTZType: "timestamp(6)",
        T.BinaryType: "varbinary",
        T.NullType: "unknown",
    }
    for cls, name in simple.items():
        if isinstance(t, cls):
            return name
    if isinstance(t, T.DecimalType):
        return f"decimal({t.precision},{t.scale})"
    if isinstance(t, T.CharType | T.VarcharType):
        return "varchar"
    if isinstance(t, T.StructType):
        return "row(" + ", ".join(f"{f.name} {trino_name(f.dataType)}" for f in t.fields) + ")"
    if isinstance(t, T.ArrayType):
        return f"array({trino_name(t.elementType)})"
    return t.simpleString()


def _category(t: T.DataType) -> str:
    if isinstance(t, T.NullType):
        return "null"
    if isinstance(t, T.NumericType):
        return "numeric"
    if isinstance(t, T.StringType | T.CharType | T.VarcharType):
        return "string"
    if isinstance(t, T.DateType | T.TimestampType | T.TimestampNTZType):
        return "datetime"
    return type(t).__name__


def coercible(value: T.DataType, column: T.DataType) -> bool:
    """Trino's typesMatchForInsert: numbers coerce to any number (BIGINT->INTEGER, DOUBLE->INTEGER), text
    to text, dates to timestamps; NULL to anything; nothing crosses categories (VARCHAR->INTEGER fails)."""
    a, b = _category(value), _category(column)
    return a == "null" or a == b
