"""Trino's types as the Trino SQL -> Spark SQL translation sees them, and Trino's typing rules.

The value class ``TrinoType`` (a Trino type: name, precision/scale or length, type arguments), the constants for
the simple types, reading a type from sqlglot's ``DataType`` or from Trino type text, the Spark type that
stores each one (``spark_type_sql``), and the rules that give an expression its Trino type without looking
at a tree: the common super type of two types, the result type of ``+ - * / %``, and the types of numeric
and ``DECIMAL '...'`` literals. Pure functions of types, so they sit below the tree-walking type inference
(``_spark_infer``) and the rewrite (``_spark_rewrite``) that both use them. ``_spark_translate`` has the
overview of the whole translation.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["spark_type_sql"]


# --------------------------------------------------------------------------------------------------
# errors


def not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


# --------------------------------------------------------------------------------------------------
# Trino types


@dataclass(frozen=True)
class TrinoType:
    """A Trino type. ``name`` is Trino's base name; ``p``/``s`` are precision/scale (or length)."""

    name: str
    p: int | None = None
    s: int | None = None
    args: tuple[TrinoType, ...] = ()
    fields: tuple[str, ...] = ()
    # timestamps only, not part of the type's identity: the zone its values are in (``timestamp with time zone``:
    # Trino keeps a zone per value; mergekit knows it per expression, from a literal's offset, ``AT TIME ZONE`` or
    # the user's Spark session) or the session zone a ``timestamp`` becomes an instant in. None: UTC, the zone
    # mergekit's statements run in; MIXED_ZONE: values of several zones (see ``local_zone``).
    zone: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.p},{self.s})"
        if self.name in ("varchar", "char") and self.p is not None:
            return f"{self.name}({self.p})"
        if self.name in ("timestamp", "timestamp with time zone"):
            base, _, rest = self.name.partition(" ")
            return f"{base}({self.p}){' ' + rest if rest else ''}"
        return self.name

    @property
    def integral(self) -> bool:
        return self.name in _INT_RANK

    @property
    def decimal(self) -> bool:
        return self.name == "decimal"

    @property
    def floating(self) -> bool:
        return self.name in ("real", "double")

    @property
    def exact(self) -> bool:
        return self.integral or self.decimal

    @property
    def numeric(self) -> bool:
        return self.integral or self.decimal or self.floating

    @property
    def string(self) -> bool:
        return self.name in ("varchar", "char")

    @property
    def temporal(self) -> bool:
        return self.name in ("date", "timestamp", "timestamp with time zone")

    @property
    def known(self) -> bool:
        return self.name != "?"

    @property
    def zoned(self) -> bool:
        """A timestamp type whose values are in (or become instants in) a zone other than UTC."""
        return self.zone is not None and self.name in ("timestamp", "timestamp with time zone")


_LITERAL_ZONE = re.compile(
    r"^\s*[+-]?\d{1,6}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{1,2}(?::\d{1,2}(?:\.\d*)?)?)?\s*(.*?)\s*$"
)
_OFFSET = re.compile(r"^([+-])(\d{1,2})(?::?(\d{2}))?$")


def literal_zone(text: str) -> str | None:
    """The zone written in a ``TIMESTAMP '...'`` literal (``+02:00``, ``-05:30``, ``America/New_York``), None for
    UTC or none (the session's zone, UTC)."""
    m = _LITERAL_ZONE.match(text)
    zone = m.group(1) if m else ""
    return checked_zone(zone) if zone else None


MIXED_ZONE = "*"  # an expression whose values come from several zones (CASE over columns of different zones)


def with_zone(t: TrinoType, zone: str | None) -> TrinoType:
    """``t`` with its values in ``zone`` (a timestamp type; other types are returned as they are)."""
    if t.name not in ("timestamp", "timestamp with time zone"):
        return t
    return replace(t, zone=None if zone is None else checked_zone(zone))


def checked_zone(zone: str) -> str | None:
    """A zone name as Trino accepts it (a region such as ``America/New_York``, an offset ``+05:30``, ``UTC``),
    normalised (None for UTC); INVALID_FUNCTION_ARGUMENT for anything else."""
    text = zone.strip()
    if text == MIXED_ZONE:
        return text
    if text.upper() in ("UTC", "Z", "GMT", "UT", "ZULU", "UCT", "UNIVERSAL", "ETC/UTC", "ETC/GMT"):
        return None
    offset = _OFFSET.match(text)
    if offset:
        sign, hours, minutes = offset.groups()
        if int(hours) > 14 or int(minutes or 0) > 59:
            raise MergekitError(ErrorCode.INVALID_FUNCTION_ARGUMENT, f"Invalid zone offset: {zone}")
        text = f"{sign}{int(hours):02d}:{minutes or '00'}"
        return None if text in ("+00:00", "-00:00") else text
    try:
        zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        raise MergekitError(ErrorCode.INVALID_FUNCTION_ARGUMENT, f"Time zone not supported: {zone}") from e
    return text


def common_zone(a: str | None, b: str | None) -> str | None:
    """The zone of values that may come from zone ``a`` or zone ``b``."""
    return a if a == b else MIXED_ZONE


UNKNOWN = TrinoType("unknown")  # Trino's type of a bare NULL: coerces to anything
NOTYPE = TrinoType("?")  # could not be inferred
BOOLEAN = TrinoType("boolean")
TINYINT = TrinoType("tinyint")
SMALLINT = TrinoType("smallint")
INTEGER = TrinoType("integer")
BIGINT = TrinoType("bigint")
REAL = TrinoType("real")
DOUBLE = TrinoType("double")
VARCHAR = TrinoType("varchar")
VARBINARY = TrinoType("varbinary")
DATE = TrinoType("date")
INTERVAL_DS = TrinoType("interval day to second")
INTERVAL_YM = TrinoType("interval year to month")

_INT_RANK = {"tinyint": 1, "smallint": 2, "integer": 3, "bigint": 4}
_INT_DECIMAL_PRECISION = {"tinyint": 3, "smallint": 5, "integer": 10, "bigint": 19}
INT_MIN = {"tinyint": -(2**7), "smallint": -(2**15), "integer": -(2**31), "bigint": -(2**63)}
_SPARK_SIMPLE = {
    "boolean": "BOOLEAN",
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "integer": "INT",
    "bigint": "BIGINT",
    "real": "FLOAT",
    "double": "DOUBLE",
    "varchar": "STRING",
    "char": "STRING",
    "varbinary": "BINARY",
    "date": "DATE",
    "interval day to second": "INTERVAL DAY TO SECOND",
    "interval year to month": "INTERVAL YEAR TO MONTH",
}
MAX_PRECISION = 38


def decimal_type(p: int, s: int) -> TrinoType:
    return TrinoType("decimal", min(p, MAX_PRECISION), s)


def timestamp_type(p: int, tz: bool = False) -> TrinoType:
    return TrinoType("timestamp with time zone" if tz else "timestamp", p)


def as_decimal(t: TrinoType) -> TrinoType:
    """The decimal type an exact operand takes in mixed integer/decimal arithmetic (Trino's coercion)."""
    if t.decimal:
        return t
    return decimal_type(_INT_DECIMAL_PRECISION[t.name], 0)


def _dt_params(dt: exp.DataType) -> list[int]:
    out = []
    for param in dt.expressions:
        if isinstance(param, exp.DataTypeParam):
            try:
                out.append(int(param.this.name))
            except (TypeError, ValueError) as e:
                raise not_supported(f"type parameter {param.sql('trino')} is not supported") from e
    return out


# The sqlglot types that are one Trino type whatever their parameters (``from_datatype``).
_UNPARAMETERIZED = {
    exp.DType.BOOLEAN: BOOLEAN,
    exp.DType.TINYINT: TINYINT,
    exp.DType.SMALLINT: SMALLINT,
    exp.DType.INT: INTEGER,
    exp.DType.BIGINT: BIGINT,
    exp.DType.FLOAT: REAL,
    exp.DType.DOUBLE: DOUBLE,
    exp.DType.VARBINARY: VARBINARY,
    exp.DType.BINARY: VARBINARY,
    exp.DType.DATE: DATE,
    exp.DType.UNKNOWN: NOTYPE,
    exp.DType.NULL: UNKNOWN,
}


def from_datatype(dt: exp.DataType) -> TrinoType:
    """Trino type of a sqlglot DataType parsed with the Trino dialect."""
    kind = dt.this
    if not isinstance(kind, exp.DType):  # INTERVAL DAY TO SECOND and friends
        text = dt.sql("trino").lower()
        if text.startswith("interval"):
            return INTERVAL_YM if ("year" in text or "month" in text) else INTERVAL_DS
        return TrinoType(text)
    D = exp.DType
    params = _dt_params(dt)
    if kind in _UNPARAMETERIZED:
        return _UNPARAMETERIZED[kind]
    if kind == D.DECIMAL:
        p = params[0] if params else 38
        s = params[1] if len(params) > 1 else 0
        return TrinoType("decimal", p, s)
    if kind in (D.VARCHAR, D.TEXT, D.NVARCHAR):
        return TrinoType("varchar", params[0] if params else None)
    if kind in (D.CHAR, D.NCHAR):
        return TrinoType("char", params[0] if params else 1)
    if kind in (D.TIMESTAMP, D.DATETIME, D.TIMESTAMPNTZ):
        return timestamp_type(params[0] if params else 3)
    if kind in (D.TIMESTAMPTZ, D.TIMESTAMPLTZ):
        return timestamp_type(params[0] if params else 3, tz=True)
    if kind == D.ARRAY:
        return TrinoType("array", args=tuple(from_datatype(e) for e in dt.expressions if isinstance(e, exp.DataType)))
    if kind == D.MAP:
        return TrinoType("map", args=tuple(from_datatype(e) for e in dt.expressions if isinstance(e, exp.DataType)))
    if kind == D.STRUCT:
        names, types = [], []
        for i, e in enumerate(dt.expressions):
            if isinstance(e, exp.ColumnDef):
                names.append(e.name)
                types.append(from_datatype(e.args["kind"]))
            elif isinstance(e, exp.DataType):
                names.append(f"_col{i}")
                types.append(from_datatype(e))
        return TrinoType("row", args=tuple(types), fields=tuple(names))
    return TrinoType(kind.value.lower())


def zoned_type_text(type_text: str, zone: str | None) -> str:
    """Type text for a schema (``to_spark_sql``'s ``schema``) whose timestamp values are in ``zone``: the columns of a
    user's DataFrame, whose ``TIMESTAMP`` values the user's Spark session shows in its own zone."""
    return f"{type_text} @{zone}" if zone and type_text.startswith("timestamp") else type_text


def parse_type(text: str) -> TrinoType:
    text, _, zone = text.partition(" @")
    if zone:
        return with_zone(parse_type(text), zone)
    try:
        dt = exp.DataType.build(text, dialect="trino")
    except (ParseError, ValueError) as e:
        raise not_supported(f"unknown type {text!r}") from e
    return from_datatype(dt)


def spark_type(t: TrinoType) -> str:
    if t.name in _SPARK_SIMPLE:
        return _SPARK_SIMPLE[t.name]
    if t.decimal:
        return f"DECIMAL({t.p},{t.s})"
    if t.name in ("timestamp", "timestamp with time zone"):
        if t.p is not None and t.p > 6:
            raise not_supported(f"{t} is not supported: Spark timestamps have microsecond precision")
        return "TIMESTAMP" if t.name == "timestamp with time zone" else "TIMESTAMP_NTZ"
    if t.name == "array" and len(t.args) == 1:
        return f"ARRAY<{spark_type(t.args[0])}>"
    if t.name == "map" and len(t.args) == 2:
        return f"MAP<{spark_type(t.args[0])}, {spark_type(t.args[1])}>"
    if t.name == "row":
        inner = ", ".join(f"`{n.replace('`', '``')}`: {spark_type(a)}" for n, a in zip(t.fields, t.args, strict=False))
        return f"STRUCT<{inner}>"
    raise not_supported(f"type {t} has no Spark equivalent")


def spark_type_sql(trino_type: str) -> str:
    """Spark SQL type for a Trino type text: 'varchar(16)' -> 'STRING', 'integer' -> 'INT',
    'timestamp' -> 'TIMESTAMP_NTZ', 'timestamp with time zone' -> 'TIMESTAMP', 'varbinary' -> 'BINARY', 'real' -> 'FLOAT', ...

    Spark has no bounded strings outside table DDL, so VARCHAR(n) and CHAR(n) both become STRING; TIME,
    JSON, UUID and timestamps finer than microseconds raise NOT_SUPPORTED.
    """
    return spark_type(parse_type(trino_type))


def common_type(a: TrinoType, b: TrinoType) -> TrinoType:
    """Trino's common super type of two types (for CASE, COALESCE, UNION, VALUES, ...)."""
    if a == UNKNOWN:
        return b
    if b == UNKNOWN:
        return a
    if (a.zone is not None or b.zone is not None) and a.temporal and b.temporal:
        if (
            a.name != b.name
            and "timestamp with time zone" in (a.name, b.name)
            and (
                (a.name != "timestamp with time zone" and a.zoned) or (b.name != "timestamp with time zone" and b.zoned)
            )
        ):
            raise not_supported(
                "a TIMESTAMP from a DataFrame whose session is not in UTC cannot be mixed with TIMESTAMP WITH TIME ZONE "
                "values implicitly: CAST it to TIMESTAMP WITH TIME ZONE first"
            )
        return with_zone(common_type(with_zone(a, None), with_zone(b, None)), common_zone(a.zone, b.zone))
    if a == b:
        return a
    if not a.known or not b.known:
        return NOTYPE
    if a.integral and b.integral:
        return a if _INT_RANK[a.name] >= _INT_RANK[b.name] else b
    if a.exact and b.exact:
        da, db = as_decimal(a), as_decimal(b)
        assert da.p is not None and da.s is not None and db.p is not None and db.s is not None
        s = max(da.s, db.s)
        return decimal_type(max(da.p - da.s, db.p - db.s) + s, s)
    if a.numeric and b.numeric:
        return DOUBLE if DOUBLE in (a, b) else REAL
    if a.string and b.string:
        if a.p is None or b.p is None:
            return VARCHAR
        return TrinoType("varchar", max(a.p, b.p))
    if a.name == b.name and a.name in ("timestamp", "timestamp with time zone"):
        return TrinoType(a.name, max(a.p or 0, b.p or 0))
    temporal = {a.name, b.name}
    if temporal <= {"date", "timestamp"}:
        return timestamp_type(max(a.p or 0, b.p or 0))
    if temporal <= {"date", "timestamp", "timestamp with time zone"}:
        return timestamp_type(max(a.p or 0, b.p or 0), tz=True)
    return NOTYPE


def common_of(types: Iterable[TrinoType]) -> TrinoType:
    result = UNKNOWN
    for t in types:
        result = common_type(result, t)
    return result


#: The range of a date computed by date arithmetic, in days since 1970-01-01: 0001-01-01 to 9999-12-31 (ISO SQL's
#: DATE, Spark's documented one and Python's). A result outside it fails rather than wrap around.
DATE_DAYS = (-719162, 2932896)
#: How ``date_overflow_message`` begins (the Spark translation builds the rest in SQL).
DATE_OVERFLOW_PREFIX = "Date out of range: "


def date_overflow_message(date: str, op: str, days: int) -> str:
    """The message of a date computation outside :data:`DATE_DAYS`: ``date`` as Spark prints it, ``op`` ``+``
    or ``-``, ``days`` the integer operand (``Date out of range: 9999-12-31 + 1``)."""
    return f"{DATE_OVERFLOW_PREFIX}{date} {op} {days}"


def date_arithmetic_type(op: type[exp.Expr], a: TrinoType, b: TrinoType) -> TrinoType | None:
    """mergekit's extension to Trino (PostgreSQL's, Spark's, DuckDB's and MySQL's operators): ``date + integer``,
    ``integer + date`` and ``date - integer`` are dates (the integer counts days), ``date - date`` is the INTEGER
    number of days from the second to the first. Trino refuses all four, so no Trino statement changes meaning.
    None for any other operands."""
    if op is exp.Add and ((a == DATE and b.integral) or (a.integral and b == DATE)):
        return DATE
    if op is exp.Sub and a == DATE and b.integral:
        return DATE
    if op is exp.Sub and a == DATE and b == DATE:
        return INTEGER
    return None


def arith_type(op: type[exp.Expr], a: TrinoType, b: TrinoType) -> TrinoType:
    """Result type of ``a op b`` for + - * / % under Trino's rules (and date arithmetic, an extension)."""
    if a == UNKNOWN and b == UNKNOWN:
        return UNKNOWN
    days = date_arithmetic_type(op, a, b)
    if days is not None:
        return days
    if a == UNKNOWN:
        a = b if b.numeric else a
    if b == UNKNOWN:
        b = a if a.numeric else b
    if a.integral and b.integral:
        return a if _INT_RANK[a.name] >= _INT_RANK[b.name] else b
    if a.exact and b.exact:
        da, db = as_decimal(a), as_decimal(b)
        p1, s1, p2, s2 = da.p, da.s, db.p, db.s
        assert p1 is not None and s1 is not None and p2 is not None and s2 is not None
        if op in (exp.Add, exp.Sub):
            return decimal_type(1 + max(s1, s2) + max(p1 - s1, p2 - s2), max(s1, s2))
        if op is exp.Mul:
            if s1 + s2 > MAX_PRECISION:
                raise not_supported(f"decimal multiplication {da} * {db}: result scale exceeds 38")
            return decimal_type(p1 + p2, s1 + s2)
        if op is exp.Div:
            return decimal_type(p1 + s2 + max(s2 - s1, 0), max(s1, s2))
        if op is exp.Mod:
            return decimal_type(min(p2 - s2, p1 - s1) + max(s1, s2), max(s1, s2))
    if a.numeric and b.numeric:
        return DOUBLE if DOUBLE in (a, b) else REAL
    if op in (exp.Add, exp.Sub):
        if a.temporal and b.name.startswith("interval"):
            return a
        if op is exp.Add and b.temporal and a.name.startswith("interval"):
            return b
        if a.name.startswith("interval") and a == b:
            return a
    return NOTYPE


def literal_number_type(text: str) -> TrinoType:
    """Trino's type of a numeric literal: INTEGER/BIGINT, DECIMAL(p,s) for '1.50', DOUBLE for '1e3'."""
    t = text.replace("_", "")
    if re.fullmatch(r"\d+", t):
        v = int(t)
        if v <= 2**31 - 1:
            return INTEGER
        if v <= 2**63 - 1:
            return BIGINT
        raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Invalid numeric literal: {text}")
    m = re.fullmatch(r"(\d*)\.(\d*)", t)
    if m:
        return _decimal_literal_type(m.group(1), m.group(2))
    return DOUBLE


def _decimal_literal_type(int_digits: str, frac_digits: str) -> TrinoType:
    s = len(frac_digits)
    p = max(len(int_digits.lstrip("0")) + s, s, 1)
    if p > MAX_PRECISION:
        raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, "decimal literal exceeds 38 digits")
    return TrinoType("decimal", p, s)


_DECIMAL_TEXT = re.compile(r"\s*[+-]?(\d*)(?:\.(\d*))?\s*")


def typed_decimal_literal(node: exp.Expr) -> TrinoType | None:
    """The type of ``DECIMAL '1.50'``, which sqlglot parses as ``CAST('1.50' AS DECIMAL)``.

    Trino types the literal by its digits (decimal(3,2)); a CAST to a bare DECIMAL would mean
    decimal(38,0). sqlglot leaves no trace of which one was written, so a string literal cast to an
    unparameterised DECIMAL is read as the (far more common) typed literal.
    """
    if (
        isinstance(node, exp.Cast)
        and not isinstance(node, exp.TryCast)
        and isinstance(node.this, exp.Literal)
        and node.this.is_string
        and node.to.is_type(exp.DType.DECIMAL)
        and not node.to.expressions
    ):
        m = _DECIMAL_TEXT.fullmatch(node.this.name)
        if m and (m.group(1) or m.group(2)):
            return _decimal_literal_type(m.group(1) or "", m.group(2) or "")
    return None


def norm(name: str | None) -> str:
    return (name or "").lower()


# --------------------------------------------------------------------------------------------------
# Operand types Trino refuses and Spark would coerce


_COMPARISONS = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.NullSafeNEQ: "IS DISTINCT FROM",
}
_ARITHMETIC = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
# functions of a string argument (``this``): Spark casts a number or date to a string, Trino refuses it
_STRING_FUNCTIONS = {
    exp.Length: "length",
    exp.Upper: "upper",
    exp.Lower: "lower",
    exp.Trim: "trim",
    exp.Substring: "substr",
}


def _family(t: TrinoType) -> str | None:
    """The types that compare with ``t`` (Trino's implicit coercions: numbers widen to each other, a DATE to a
    TIMESTAMP, a TIMESTAMP to one WITH TIME ZONE, VARCHAR and CHAR to each other; nothing to or from text), or None
    for a type whose rule is left to Spark (arrays, rows, NULL, unknown)."""
    if t.numeric:
        return "number"
    if t.string:
        return "string"
    if t.temporal:
        return "datetime"
    if t.name in ("boolean", "varbinary") or t.name.startswith("interval"):
        return t.name
    return None


def comparable(a: TrinoType, b: TrinoType) -> bool:
    """Whether Trino compares values of ``a`` and ``b`` (=, <>, <, >, <=, >=, IS DISTINCT FROM, BETWEEN, IN): they
    have a common super type. ``ts > '2024-01-01'`` does not: write ``ts > TIMESTAMP '2024-01-01 00:00:00'``."""
    if not (a.known and b.known) or UNKNOWN in (a, b):
        return True
    fa, fb = _family(a), _family(b)
    return fa is None or fb is None or fa == fb


def type_mismatch(message: str) -> MergekitError:
    return MergekitError(ErrorCode.TYPE_MISMATCH, message)


def _datetime_hint(other: object, operand: object) -> str:
    """What to write instead of a string literal compared with a date or timestamp (``ts > '2024-01-01'``)."""
    if not (isinstance(other, TrinoType) and other.temporal and isinstance(operand, exp.Literal) and operand.is_string):
        return ""
    text = str(operand.this).replace("'", "''")
    if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", text.strip()):
        return f" (write TIMESTAMP '{text}' or DATE '{text}' for a date-time literal)"
    return f" (write TIMESTAMP '{text}' for a date-time literal)"


def check_operand_types(node: exp.Expr, types: dict[str, object]) -> None:
    """TYPE_MISMATCH, in Trino's words, for operands Trino's analyzer refuses but Spark would coerce (so the
    statement would run with other semantics): a string compared with or added to a number, a date or timestamp
    plus a number (but for date arithmetic, ``date_arithmetic_type``), a string function of a number or date."""
    a, b = types.get("this"), types.get("expression")
    known_a = isinstance(a, TrinoType) and a.known and a.name != "unknown"
    known_b = isinstance(b, TrinoType) and b.known and b.name != "unknown"
    op = _COMPARISONS.get(type(node))
    quantified = isinstance(node.args.get("expression"), (exp.Any, exp.All))  # x = ANY (subquery): Spark checks
    if op is not None and known_a and known_b and not quantified:
        assert isinstance(a, TrinoType) and isinstance(b, TrinoType)
        if not comparable(a, b):
            hint = _datetime_hint(a, node.expression) or _datetime_hint(b, node.this)
            raise type_mismatch(f"Cannot apply operator: {a} {op} {b}{hint}")
    if isinstance(node, exp.Between):
        value, low, high = a, types.get("low"), types.get("high")
        bounds = [t for t in (low, high) if isinstance(t, TrinoType)]
        if isinstance(value, TrinoType) and len(bounds) == 2 and not all(comparable(value, t) for t in bounds):
            hint = _datetime_hint(value, node.args.get("low")) or _datetime_hint(value, node.args.get("high"))
            raise type_mismatch(f"Cannot check if {value} is BETWEEN {bounds[0]} and {bounds[1]}{hint}")
    if isinstance(node, exp.In) and isinstance(a, TrinoType):
        listed = types.get("expressions")
        for t, item in zip(listed if isinstance(listed, list) else [], node.expressions, strict=False):
            if isinstance(t, TrinoType) and not comparable(a, t):
                raise type_mismatch(f"IN value and list items must be the same type: {a}{_datetime_hint(a, item)}")
    op = _ARITHMETIC.get(type(node))
    if op is not None and known_a and known_b:
        assert isinstance(a, TrinoType) and isinstance(b, TrinoType)
        if (
            (a.numeric or a.string or a.temporal)
            and (b.numeric or b.string or b.temporal)
            and not (a.numeric and b.numeric)
            and date_arithmetic_type(type(node), a, b) is None
        ):
            raise type_mismatch(f"Cannot apply operator: {a} {op} {b}")
    name = _STRING_FUNCTIONS.get(type(node))
    if name is not None and known_a:
        assert isinstance(a, TrinoType)
        if not a.string and (a.numeric or a.temporal or a.name == "boolean"):
            raise type_mismatch(f"Unexpected parameters ({a}) for function {name}. Expected: {name}(varchar(x))")


def expect_args(name: str, types: list[Any], expected: str, *accepts: Callable[[TrinoType], bool]) -> None:
    """TYPE_MISMATCH, in Trino's words, when an argument of known type is not one ``name`` accepts (Spark would
    coerce it and compute something else: ``md5('abc')`` hashes the text, Trino refuses a varchar)."""
    for t, ok in zip(types, accepts, strict=False):
        if isinstance(t, TrinoType) and t.known and t != UNKNOWN and not ok(t):
            shown = ", ".join(str(a) if isinstance(a, TrinoType) else "?" for a in types)
            raise type_mismatch(f"Unexpected parameters ({shown}) for function {name}. Expected: {expected}")


def is_string(t: TrinoType) -> bool:
    return t.string


def is_binary(t: TrinoType) -> bool:
    return t.name == "varbinary"


def is_integral(t: TrinoType) -> bool:
    return t.integral


def is_number(t: TrinoType) -> bool:
    return t.numeric


def is_temporal(t: TrinoType) -> bool:
    return t.temporal
