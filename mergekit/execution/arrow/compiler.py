"""The one Arrow compiler of lowered expressions: every place mergekit evaluates SQL in Arrow instead of Spark
compiles with it (the WHEN clauses of a MERGE by index lookups, :mod:`.cases`; the WHERE, SET and CHECK of a
row-level DELETE / UPDATE, :mod:`.rows`).

:class:`ArrowCompiler` turns a lowered tree (:func:`mergekit.sql.analysis.lower.lower` and ``lower_for_rows``:
``Ref``, ``Const``, ``Apply``, ``SubqueryRef``) into a :class:`Compiled`: an evaluator over :class:`Rows` (a page,
or a lookup's joined rows), its Arrow type, and whether it may fail on a row. The caller resolves column
references (:class:`Columns`) and says whether subqueries' results are given (:class:`Features`). It computes what
the Spark translation computes (Trino's semantics on Spark ANSI), or raises :class:`Unsupported` naming what it met:

- comparisons within one type family (:func:`value_family`: integers, strings by code point, dates, booleans; not
  DOUBLE: Spark orders NaN above every number and takes NaN = NaN, Arrow does neither);
- AND / OR / NOT with three-valued logic; IS [NOT] NULL; ``IN`` a list of literals; ``LIKE`` a constant pattern;
- integer ``+ - * %`` and unary minus in the wider operand's type, overflow and division by zero raising what
  :mod:`mergekit.execution.failures` makes of Spark's ANSI errors; ``+ - *`` in DOUBLE (IEEE in both, never an
  error) when an operand is DOUBLE and the other one widens exactly (up to INTEGER);
- date arithmetic (an extension, docs/sql.md: :func:`shift_dates`, :func:`days_between`);
- subqueries whose results Spark computed on the driver (:class:`Lookup`), when the caller enables them.

What may fail on a row is evaluated only on the rows Spark evaluates it on: AND and OR evaluate their right side
only where the left one does not decide, and every other operator its right operand only where the left one is
not NULL (Spark's null-intolerant operators; Trino's too).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.failures import MULTIPLE_ROWS_MESSAGE
from mergekit.spi import sql_type_name
from mergekit.sql import DATE_DAYS, DECIMAL_LITERAL_DIGITS, Apply, Const, Ref, SubqueryRef, date_overflow_message

from .decimals import as_decimal_type, assign_decimal, common_decimal, decimal_result

__all__ = [
    "ArrowCompiler",
    "Columns",
    "Compiled",
    "Features",
    "Lookup",
    "Rows",
    "Unsupported",
    "assign",
    "assignable",
    "column_of",
    "date_arithmetic",
    "days_between",
    "mask_of",
    "shift_dates",
    "spark_not_null",
    "value_family",
]


class Rows(Protocol):
    """What an evaluator reads: ``num_rows`` rows, a column by the name :class:`Columns` gave, and a subset of
    the rows (``take``: evaluated only there). A ``pa.RecordBatch`` is one; so is :class:`.cases.JoinedRows`."""

    @property
    def num_rows(self) -> int: ...

    def column(self, name: str) -> Any: ...

    def take(self, indices: Any) -> Any: ...


Evaluator = Callable[[Any], Any]  # Rows -> an Arrow array, chunked array or scalar


class Unsupported(Exception):
    """The expression leaves what Arrow computes exactly as Spark would; the message names what."""


class Columns(Protocol):
    """The caller's column resolution: a reference -> the rows' column name and its Arrow type, or
    :class:`Unsupported` (unknown, ambiguous, or a type left to Spark)."""

    def resolve(self, ref: Ref) -> tuple[str, pa.DataType]: ...


@attrs.frozen
class Lookup:
    """A subquery's result, computed on the driver by Spark. ``keys``: the correlation key columns' Arrow type
    (empty: uncorrelated). ``rows``: key tuple -> the value(s) for those keys: for ``scalar`` (value, row count),
    for ``in`` (frozenset of non-null values, has a NULL), for ``exists`` True."""

    kind: str
    keys: tuple[pa.DataType, ...]
    rows: Mapping[tuple[Any, ...], Any]
    value_type: pa.DataType | None = None


@attrs.frozen(kw_only=True)
class Features:
    """What one caller compiles and another does not. ``subqueries``: the results of the tree's subqueries, by
    identity of their ``SubqueryRef`` (row-level statements compute them on the driver); None: a subquery is
    :class:`Unsupported` (a MERGE's lowering never produces one)."""

    subqueries: Mapping[int, Lookup] | None = None
    decimals: bool = False  # DECIMAL + - * and comparisons (the row-level path; others leave them to Spark)


@attrs.frozen
class Compiled:
    """An evaluator, the Arrow type of its values, and whether it may raise on some row (overflow, a date out of
    range, division by zero, a correlated scalar subquery with several rows). ``subquery_rows``: it reads a
    correlated scalar subquery, which Spark joins to every row: no operator but AND / OR evaluates its operands
    on fewer rows then."""

    fn: Evaluator
    type: pa.DataType
    may_fail: bool = False
    subquery_rows: bool = False


# ---- types and values ------------------------------------------------------------------------------------------


def value_family(t: pa.DataType) -> str | None:
    """Types that compare the same in Arrow and in Spark, by family (``None``: not handled here). Floating
    point is left out: Spark orders NaN above every number and takes NaN = NaN; Arrow does neither."""
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_null(t):
        return "null"
    return None


_CONST_TYPES = {
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "null": pa.null(),
}


def const_type(node: Const) -> pa.DataType:
    """The Arrow type of a literal: a DECIMAL literal's precision and scale are its digits' (``0.05``:
    DECIMAL(2, 2)), as Trino and Spark type it."""
    if node.kind != "decimal":
        return _CONST_TYPES[node.kind]
    _, digits, exponent = node.value.as_tuple()
    scale = max(0, -int(exponent))
    return pa.decimal128(max(len(digits), scale, 1), scale)


def exact_decimal(t: pa.DataType) -> bool:
    """A DECIMAL whose values convert to DOUBLE correctly rounded by :func:`decimal_to_double` (the literals the
    lowering covers)."""
    return pa.types.is_decimal128(t) and t.precision <= DECIMAL_LITERAL_DIGITS


def decimal_to_double(array: pa.Array) -> pa.Array:
    """DECIMAL values (:func:`exact_decimal`) as DOUBLE, correctly rounded as Spark's ``Decimal.toDouble``: the
    unscaled value (exact in a double) divided once by a power of ten. (Arrow's own cast rounds twice.)"""
    t = array.type
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    words = np.frombuffer(array.buffers()[1], dtype=np.int64)  # little-endian 128-bit: the low word holds it
    unscaled = words[2 * array.offset : 2 * (array.offset + len(array)) : 2]
    values = unscaled.astype(np.float64) / (10.0**t.scale)
    return pa.array(values, pa.float64(), mask=pc.is_null(array).to_numpy(zero_copy_only=False))


_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
# integer operators: Arrow's checked kernel, the symbol and the word in the overflow message
_CHECKED = {
    "add": ("add_checked", "+", "addition"),
    "subtract": ("subtract_checked", "-", "subtraction"),
    "multiply": ("multiply_checked", "*", "multiplication"),
}
_DOUBLE = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide"}  # IEEE: x / 0 is inf
INTEGER_NAMES = {8: "tinyint", 16: "smallint", 32: "integer", 64: "bigint"}  # Trino's, by bit width
_EXACT_IN_DOUBLE = (pa.int8(), pa.int16(), pa.int32())
_NUMBERS = ("integer", "bigint", "double", "decimal")
_WHAT = {"like": "LIKE", "mod": "%", "in": "IN", "negate": "unary minus"}


def column_of(value: Any, n: int, arrow_type: pa.DataType) -> pa.Array:
    """An evaluator's result as an array of ``n`` values of ``arrow_type``."""
    if isinstance(value, pa.Scalar):
        return pa.repeat(value.cast(arrow_type), n) if value.is_valid else pa.nulls(n, arrow_type)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return value if value.type == arrow_type else value.cast(arrow_type)


def mask_of(value: Any, n: int) -> np.ndarray:
    """A condition's result as a numpy boolean mask (NULL: does not hold)."""
    return np.asarray(pc.fill_null(column_of(value, n, pa.bool_()), False).to_numpy(zero_copy_only=False), dtype=bool)


def assignable(value: pa.DataType, column: pa.DataType, *, decimals: bool = False) -> bool:
    """Whether a value of type ``value`` becomes a ``column`` value as Spark's CAST makes it (see :func:`assign`):
    the same type, NULL, an integer (a wider one range-checked), an integer up to INTEGER into a DOUBLE, a string."""
    if value == column or pa.types.is_null(value):
        return True
    if pa.types.is_signed_integer(value) and pa.types.is_signed_integer(column):
        return True
    if pa.types.is_float64(column):
        return value in _EXACT_IN_DOUBLE or exact_decimal(value) or (decimals and pa.types.is_decimal128(value))
    if exact_decimal(value) and pa.types.is_decimal128(column):  # a widening: every value fits exactly
        if column.scale >= value.scale and column.precision - column.scale >= value.precision - value.scale:
            return True
    if decimals and pa.types.is_decimal128(column) and (pa.types.is_decimal128(value) or pa.types.is_integer(value)):
        return True  # rounded half away from zero to the column's scale; too many digits fail (assign)
    return value_family(value) == "string" and value_family(column) == "string"


def assign(value: Any, n: int, value_type: pa.DataType, column: pa.DataType) -> pa.Array:
    """A value assigned to a ``column`` (:func:`assignable`) as a value of its type: a wider integer is cast as
    Spark's ANSI CAST does, an error for a value out of the column's range (worded as :mod:`.failures` words
    Spark's CAST_OVERFLOW)."""
    array = column_of(value, n, value_type)
    if pa.types.is_decimal(value_type) and pa.types.is_float64(column):
        if value_type.precision <= 18:  # Spark's compact DECIMAL: the unscaled long / 10^scale, as here
            return decimal_to_double(array)
        # a wider one: BigDecimal.doubleValue, correctly rounded, as Python's float of a Decimal
        return pa.array([None if v is None else float(v) for v in array.to_pylist()], pa.float64())
    if pa.types.is_decimal128(column) and value_type != column:
        return assign_decimal(array, column)
    if pa.types.is_integer(value_type) and pa.types.is_integer(column) and value_type.bit_width > column.bit_width:
        bits = column.bit_width
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        bad = pc.or_(pc.less(array, low), pc.greater(array, high))
        if pc.any(bad).as_py():
            first = array.filter(pc.fill_null(bad, False))[0].as_py()
            message = f"Out of range for {INTEGER_NAMES[bits]}: {first}"
            raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message)
    return array.cast(column)


def _wider(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    return a if a.bit_width >= b.bit_width else b


# ---- date arithmetic -------------------------------------------------------------------------------------------


def date_arithmetic(op: str, types: Sequence[pa.DataType]) -> str | None:
    """Which date arithmetic ``op`` of operands of ``types`` is (an extension, docs/sql.md; the Spark translation's
    ``date_arithmetic_type``): ``shift`` (``date + integer``, ``integer + date``, ``date - integer``: days),
    ``between`` (``date - date``: INTEGER days), or None."""
    kinds = tuple("date" if pa.types.is_date32(t) else "integer" if pa.types.is_integer(t) else "" for t in types)
    if op == "add" and kinds in (("date", "integer"), ("integer", "date")):
        return "shift"
    if op == "subtract" and kinds == ("date", "integer"):
        return "shift"
    if op == "subtract" and kinds == ("date", "date"):
        return "between"
    return None


def shift_dates(dates: pa.Array, days: pa.Array, subtract: bool) -> pa.Array:
    """``dates + days`` (``- days`` when ``subtract``) as date32, NULL where either is NULL; a result outside
    DATE's range (:data:`~mergekit.sql.DATE_DAYS`) raises NUMERIC_VALUE_OUT_OF_RANGE worded as the Spark
    translation words it. The range is tested on ``days`` against the bounds less each date's day number, so
    nothing overflows."""
    start = dates.cast(pa.int32()).cast(pa.int64())
    n = days.cast(pa.int64())
    low, high = (pa.scalar(v, pa.int64()) for v in DATE_DAYS)
    if subtract:  # start - n in range: start - high <= n <= start - low
        first, last = pc.subtract(start, high), pc.subtract(start, low)
    else:  # start + n in range: low - start <= n <= high - start
        first, last = pc.subtract(low, start), pc.subtract(high, start)
    bad = pc.fill_null(pc.or_(pc.less(n, first), pc.greater(n, last)), False)
    if pc.any(bad).as_py():
        i = int(np.flatnonzero(bad.to_numpy(zero_copy_only=False))[0])
        message = date_overflow_message(_date_text(start[i].as_py()), "-" if subtract else "+", n[i].as_py())
        raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message)
    moved = pc.subtract(start, n) if subtract else pc.add(start, n)
    return moved.cast(pa.int32()).cast(pa.date32())


def days_between(a: pa.Array, b: pa.Array) -> pa.Array:
    """``a - b`` of dates: the INTEGER number of days (Spark's DATEDIFF), NULL where either is NULL."""
    return pc.subtract(a.cast(pa.int32()).cast(pa.int64()), b.cast(pa.int32()).cast(pa.int64())).cast(pa.int32())


def _date_text(days: int) -> str:
    """A day number as Spark prints a DATE (proleptic Gregorian; a year past 9999 with a sign)."""
    z = days + 719468  # days since 0000-03-01
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    text = f"{year:04d}" if 0 <= year <= 9999 else (f"+{year}" if year > 0 else f"-{-year:04d}")
    return f"{text}-{month:02d}-{day:02d}"


# ---- the compiler ----------------------------------------------------------------------------------------------


@attrs.frozen
class ArrowCompiler:
    """Compiles lowered trees over the rows ``columns`` resolves references in, with ``features``."""

    columns: Columns
    features: Features = Features()

    def compile(self, node: Any) -> Compiled:
        if isinstance(node, Ref):
            name, arrow_type = self.columns.resolve(node)
            return Compiled(_read(name), arrow_type)
        if isinstance(node, Const):
            arrow_type = const_type(node)
            return Compiled(_constant(pa.scalar(node.value, arrow_type)), arrow_type)
        if isinstance(node, SubqueryRef):
            return self._subquery(node)
        if not isinstance(node, Apply):
            raise Unsupported(f"the expression {node!r}")
        op = node.op
        if op == "negate" and isinstance(node.args[0], Const) and node.args[0].kind in _NUMBERS:
            return self.compile(Const(-node.args[0].value, node.args[0].kind))  # a negative literal
        args = [self.compile(a) for a in node.args]
        compiled = self._apply(op, args, node.args, self.features.decimals)
        return attrs.evolve(compiled, subquery_rows=any(a.subquery_rows for a in args))

    @staticmethod
    def _apply(op: str, args: Sequence[Compiled], trees: Sequence[Any], decimals: bool) -> Compiled:
        if op in ("and", "or"):
            return _logic(op, *args)
        if op in _COMPARE or op in ("is_distinct", "is_not_distinct"):
            return _compare(op, _dates_from_text(args, trees) if decimals else args, decimals)
        if op == "not":
            return _not(args[0])
        if op in ("is_null", "is_not_null"):
            return _is_null(op, args[0])
        if op == "in":
            return _in_list(args[0], trees[1:])
        if op == "like":
            return _like(args[0], trees[1])
        if op in ("add", "subtract", "multiply", "divide", "mod", "negate"):
            return _arithmetic(op, args, decimals)
        if op == "concat":
            return _concat(args)
        raise Unsupported(f"the operator {op}")

    def _subquery(self, node: SubqueryRef) -> Compiled:
        subqueries = self.features.subqueries
        lookup = subqueries.get(id(node)) if subqueries is not None else None
        if lookup is None:
            raise Unsupported("a subquery")
        outer = [self.compile(r) for r in node.outer]
        for o, k in zip(outer, lookup.keys, strict=True):
            if value_family(o.type) != value_family(k) or value_family(k) is None:
                raise Unsupported(f"a subquery correlated on {type_name(o.type)} and {type_name(k)}")
        if node.kind == "in":
            operand = self.compile(node.operand)
            assert lookup.value_type is not None
            if value_family(operand.type) != value_family(lookup.value_type) or value_family(operand.type) is None:
                raise Unsupported(f"IN of {type_name(operand.type)} with a subquery of {type_name(lookup.value_type)}")
            return Compiled(_in_lookup(operand, outer, lookup), pa.bool_(), operand.may_fail, operand.subquery_rows)
        if node.kind == "exists":
            return Compiled(_exists_lookup(outer, lookup), pa.bool_())
        assert lookup.value_type is not None
        return Compiled(_scalar_lookup(outer, lookup), lookup.value_type, bool(outer), bool(outer))


def _read(name: str) -> Evaluator:
    return lambda rows: rows.column(name)


def _constant(scalar: pa.Scalar) -> Evaluator:
    return lambda rows: scalar


def _operands(left: Compiled, right: Compiled, rows: Any, cast: pa.DataType | None = None) -> tuple[Any, Any]:
    """Both operands of a null-intolerant operator over ``rows``. A right operand that may fail is evaluated only
    where the left one is not NULL, as Spark does (its result is NULL there anyway); both everywhere when either
    reads a correlated subquery (Spark computes ``(SELECT ...) + v * 1000000000`` in a SET for every row)."""
    x = left.fn(rows)
    if right.may_fail and not (left.subquery_rows or right.subquery_rows):
        n = rows.num_rows
        x = column_of(x, n, left.type)
        if x.null_count:
            valid = pc.is_valid(x)
            todo = pc.indices_nonzero(valid)
            part = column_of(right.fn(rows.take(todo)), len(todo), right.type)
            y = pc.replace_with_mask(pa.nulls(n, right.type), valid, part)
        else:
            y = right.fn(rows)
    else:
        y = right.fn(rows)
    if cast is not None:
        x, y = x.cast(cast), y.cast(cast)
    return x, y


def _binary(fn: Callable[..., Any], left: Compiled, right: Compiled, cast: pa.DataType | None = None) -> Evaluator:
    return lambda rows: fn(*_operands(left, right, rows, cast))


def _compare(op: str, args: Sequence[Compiled], decimals: bool = False) -> Compiled:
    common = common_decimal([a.type for a in args]) if decimals else None
    if common is not None:  # DECIMAL with DECIMAL or an integer: exactly, in a DECIMAL that holds both
        args = [Compiled(_cast_to(a, common), common, a.may_fail, a.subquery_rows) for a in args]
        return _compare_values(op, args)
    families = {value_family(a.type) for a in args} - {"null"}
    if None in families or len(families) > 1:
        raise Unsupported(f"a comparison of {' and '.join(type_name(a.type) for a in args)}")
    return _compare_values(op, args)


def _cast_to(arg: Compiled, target: pa.DataType) -> Evaluator:
    return lambda rows: column_of(arg.fn(rows), rows.num_rows, target)


def _compare_values(op: str, args: Sequence[Compiled]) -> Compiled:
    left, right = args
    if op in ("is_distinct", "is_not_distinct"):  # never NULL: two NULLs are not distinct, one NULL is
        distinct = op == "is_distinct"

        def run(rows: Any) -> Any:
            n = rows.num_rows
            x, y = (column_of(v, n, a.type) for v, a in zip(_operands(left, right, rows), args, strict=True))
            if pa.types.is_integer(x.type) and pa.types.is_integer(y.type) and x.type != y.type:
                x, y = x.cast(pa.int64()), y.cast(pa.int64())
            same = pc.fill_null(pc.equal(x, y), False)
            both_null = pc.and_(pc.is_null(x), pc.is_null(y))
            equal = pc.or_(same, both_null)
            return pc.invert(equal) if distinct else equal

        return Compiled(run, pa.bool_(), left.may_fail or right.may_fail)
    return Compiled(_binary(getattr(pc, _COMPARE[op]), left, right), pa.bool_(), left.may_fail or right.may_fail)


def _dates_from_text(args: Sequence[Compiled], trees: Sequence[Any]) -> Sequence[Compiled]:
    """A string literal compared with a DATE is a date, as Spark coerces it (``d = '2024-02-29'``): a literal in
    ISO form (``YYYY-MM-DD``) only; another one is left to Spark (:class:`Unsupported`)."""
    kinds = [value_family(a.type) for a in args]
    if sorted(map(str, kinds)) != ["date", "string"]:
        return args
    text = trees[kinds.index("string")]
    if not (isinstance(text, Const) and text.kind == "string" and _ISO_DATE.fullmatch(text.value)):
        raise Unsupported(f"a comparison of date and {'varchar' if not isinstance(text, Const) else repr(text.value)}")
    try:
        day = dt.date.fromisoformat(text.value)
    except ValueError:
        raise Unsupported(f"a comparison of date and {text.value!r}") from None
    out = list(args)
    out[kinds.index("string")] = Compiled(_constant(pa.scalar(day, pa.date32())), pa.date32())
    return out


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def type_name(t: pa.DataType) -> str:
    """An Arrow type in a refusal, as Trino names it (``decimal(2,1)``, ``bigint``)."""
    try:
        return sql_type_name(t)
    except Exception:  # a type without a SQL name
        return str(t)


def _boolean(arg: Compiled, what: str) -> None:
    if value_family(arg.type) not in ("boolean", "null"):
        raise Unsupported(f"{what} of {type_name(arg.type)}")


def _logic(op: str, left: Compiled, right: Compiled) -> Compiled:
    """AND / OR, three-valued. Spark evaluates the right side only where the left one does not decide the result
    (AND: FALSE, OR: TRUE), so a right side that may fail is evaluated only there."""
    _boolean(left, op.upper())
    _boolean(right, op.upper())
    kleene = pc.and_kleene if op == "and" else pc.or_kleene
    decided_by = op == "or"

    def run(rows: Any) -> Any:
        n = rows.num_rows
        lv = column_of(left.fn(rows), n, pa.bool_())
        if not right.may_fail:
            return kleene(lv, column_of(right.fn(rows), n, pa.bool_()))
        decided = pc.fill_null(pc.equal(lv, pa.scalar(decided_by)), False).to_numpy(zero_copy_only=False)
        todo = np.flatnonzero(~decided)
        rv = pa.nulls(n, pa.bool_())
        if len(todo):
            part = column_of(right.fn(rows.take(pa.array(todo))), len(todo), pa.bool_())
            rv = pc.replace_with_mask(rv, pa.array(~decided), part)
        return kleene(lv, rv)

    return Compiled(run, pa.bool_(), left.may_fail or right.may_fail)


def _not(arg: Compiled) -> Compiled:
    _boolean(arg, "NOT")
    return Compiled(
        lambda rows: pc.invert(column_of(arg.fn(rows), rows.num_rows, pa.bool_())), pa.bool_(), arg.may_fail
    )


def _is_null(op: str, arg: Compiled) -> Compiled:
    if value_family(arg.type) is None and not pa.types.is_floating(arg.type):
        raise Unsupported(f"IS NULL of {type_name(arg.type)}")
    fn = pc.is_null if op == "is_null" else pc.is_valid
    return Compiled(lambda rows: fn(column_of(arg.fn(rows), rows.num_rows, arg.type)), pa.bool_(), arg.may_fail)


def _in_list(operand: Compiled, items: Sequence[Any]) -> Compiled:
    """SQL's ``x IN (values)``: NULL when x is NULL, TRUE when found, else NULL when the list has a NULL."""
    family = value_family(operand.type)
    if family in (None, "null") or not all(isinstance(i, Const) for i in items):
        raise Unsupported("IN with a list of anything but literals")
    if any(value_family(const_type(i)) not in (family, "null") for i in items):
        raise Unsupported("IN with literals of another type than its operand")
    values = [i.value for i in items if i.value is not None]
    miss = pa.scalar(None, pa.bool_()) if len(values) < len(items) else pa.scalar(False)
    common = operand.type  # integers compare in the widest type among the operand and the literals
    if family == "integer":
        for i in items:
            common = _wider(common, const_type(i))
    value_set = pa.array(values, type=common)

    def run(rows: Any) -> Any:
        x = column_of(operand.fn(rows), rows.num_rows, operand.type).cast(common)
        found = pc.is_in(x, value_set=value_set) if values else pa.repeat(pa.scalar(False), rows.num_rows)
        return pc.if_else(pc.is_null(x), pa.scalar(None, pa.bool_()), pc.if_else(found, True, miss))

    return Compiled(run, pa.bool_(), operand.may_fail)


def _like(operand: Compiled, pattern: Any) -> Compiled:
    if value_family(operand.type) != "string" or not (isinstance(pattern, Const) and pattern.kind == "string"):
        raise Unsupported("LIKE with a pattern that is not a literal")
    if "\\" in pattern.value:
        raise Unsupported("LIKE with a backslash in its pattern")
    text = pattern.value

    def run(rows: Any) -> Any:
        return pc.match_like(column_of(operand.fn(rows), rows.num_rows, pa.string()), text)

    return Compiled(run, pa.bool_(), operand.may_fail)


def _concat(args: Sequence[Compiled]) -> Compiled:
    """``a || b``, ``concat(a, b, ...)``: NULL when any operand is (Trino and Spark). An integer, decimal, date or
    boolean operand reads as ``CAST(x AS VARCHAR)`` prints it (the extension of docs/sql.md; Arrow's cast prints
    these as Trino does); a double or timestamp is Spark's (Trino's scientific notation, its precision)."""
    for a in args:
        if value_family(a.type) not in ("string", "null", "integer", "date", "boolean") and not pa.types.is_decimal(
            a.type
        ):
            raise Unsupported(f"a concatenation of {', '.join(type_name(a.type) for a in args)}")

    def run(rows: Any) -> Any:
        n = rows.num_rows
        parts = [column_of(a.fn(rows), n, a.type).cast(pa.string()) for a in args]
        return pc.binary_join_element_wise(*parts, pa.scalar("", pa.string()), null_handling="emit_null")

    return Compiled(run, pa.string(), any(a.may_fail for a in args))


# ---- arithmetic ------------------------------------------------------------------------------------------------


def _arithmetic(op: str, args: Sequence[Compiled], decimals: bool = False) -> Compiled:
    types = [a.type for a in args]
    may_fail = any(a.may_fail for a in args)
    doubles = all(
        pa.types.is_float64(t) or t in _EXACT_IN_DOUBLE or exact_decimal(t) or pa.types.is_null(t) for t in types
    )
    if op == "divide" and not (doubles and any(pa.types.is_float64(t) for t in types)):
        raise Unsupported(f"/ of {' and '.join(map(type_name, types))}")  # integer and DECIMAL division: Spark's
    dates = date_arithmetic(op, types)
    if dates is not None:
        result = pa.date32() if dates == "shift" else pa.int32()
        return Compiled(_dates(op, dates, *args), result, may_fail or dates == "shift")
    if all(pa.types.is_integer(t) or pa.types.is_null(t) for t in types) and any(pa.types.is_integer(t) for t in types):
        result = types[0]
        for t in types[1:]:
            result = _wider(result, t)
        if op == "negate":
            return Compiled(_negate_integer(args[0], result), result, True)
        left, right = args
        return Compiled(_integer_op(op, left, right, result), result, True)
    if op != "mod" and doubles and any(pa.types.is_float64(t) for t in types):
        # a DECIMAL operand becomes a DOUBLE first (Trino's and Spark's coercion), correctly rounded
        args = [_as_double(a) if pa.types.is_decimal(a.type) else a for a in args]
        if op == "negate":
            arg = args[0]
            return Compiled(
                lambda rows: pc.negate(column_of(arg.fn(rows), rows.num_rows, pa.float64())), pa.float64(), may_fail
            )
        left, right = args
        return Compiled(_binary(getattr(pc, _DOUBLE[op]), left, right, pa.float64()), pa.float64(), may_fail)
    decimal = decimal_result(op, types) if decimals else None
    if decimal is not None:
        operands = [_as_decimal(a) for a in args]
        if op == "negate":
            (arg,) = operands
            return Compiled(lambda rows: pc.negate(column_of(arg.fn(rows), rows.num_rows, arg.type)), decimal, may_fail)
        left, right = operands
        fn = getattr(pc, op)
        return Compiled(lambda rows: fn(*_operands(left, right, rows)).cast(decimal), decimal, may_fail)
    raise Unsupported(f"{_WHAT.get(op, op)} of {' and '.join(map(type_name, types))}")


def _as_decimal(arg: Compiled) -> Compiled:
    target = as_decimal_type(arg.type)
    if target == arg.type:
        return arg
    return Compiled(lambda rows: column_of(arg.fn(rows), rows.num_rows, target), target, arg.may_fail)


def _as_double(arg: Compiled) -> Compiled:
    return Compiled(
        lambda rows: decimal_to_double(column_of(arg.fn(rows), rows.num_rows, arg.type)), pa.float64(), arg.may_fail
    )


def _dates(op: str, kind: str, left: Compiled, right: Compiled) -> Evaluator:
    """Date arithmetic (:func:`shift_dates`, :func:`days_between`); ``shift`` may fail (a date out of range)."""

    def run(rows: Any) -> Any:
        n = rows.num_rows
        x, y = _operands(left, right, rows)
        x, y = column_of(x, n, left.type), column_of(y, n, right.type)
        if kind == "between":
            return days_between(x, y)
        date_first = pa.types.is_date32(left.type)
        return shift_dates(x if date_first else y, y if date_first else x, op == "subtract")

    return run


def _integer_op(op: str, left: Compiled, right: Compiled, result: pa.DataType) -> Evaluator:
    def run(rows: Any) -> Any:
        n = rows.num_rows
        x, y = _operands(left, right, rows)
        x, y = column_of(x, n, result), column_of(y, n, result)
        if op == "mod":
            return _remainder(x, y, result)
        name, symbol, operation = _CHECKED[op]
        try:
            return getattr(pc, name)(x, y)
        except pa.ArrowInvalid:
            bits = result.bit_width
            low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
            for a, b in zip(x.to_pylist(), y.to_pylist(), strict=True):
                if a is None or b is None:
                    continue
                value = {"+": a + b, "-": a - b, "*": a * b}[symbol]
                if not low <= value <= high:  # worded as .failures words Spark's overflow
                    message = (
                        f"Numeric overflow in {operation}"
                        if bits >= 32
                        else f"{INTEGER_NAMES[bits]} {operation} overflow: {a} {symbol} {b}"
                    )
                    raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message) from None
            raise

    return run


def _negate_integer(arg: Compiled, result: pa.DataType) -> Evaluator:
    """``-x``: Spark's UnaryMinus raises on the type's smallest value (what :mod:`.failures` makes of it: no
    operands, whatever the type)."""

    def run(rows: Any) -> Any:
        x = column_of(arg.fn(rows), rows.num_rows, result)
        try:
            return pc.negate_checked(x)
        except pa.ArrowInvalid:
            raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, "Numeric value out of range") from None

    return run


def _remainder(x: pa.Array, y: pa.Array, result: pa.DataType) -> pa.Array:
    """Spark's (Java's) ``%``: the sign of the dividend; NULL when either is NULL; by zero an error."""
    valid = pc.and_(pc.is_valid(x), pc.is_valid(y))
    if pc.any(pc.and_(valid, pc.equal(pc.fill_null(y, 1), 0))).as_py():
        raise MergekitError(ErrorCode.DIVISION_BY_ZERO, "Division by zero")
    xs = np.asarray(pc.fill_null(x, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    ys = np.asarray(pc.fill_null(y, 1).to_numpy(zero_copy_only=False), dtype=np.int64)
    ys = np.where(ys == -1, 1, ys)  # x % -1 is 0 (and MIN % -1 must not trap)
    out = np.fmod(xs, ys)
    return pc.if_else(valid, pa.array(out, type=pa.int64()).cast(result), pa.scalar(None, result))


# ---- subqueries (Features.subqueries) --------------------------------------------------------------------------


def _keys(outer: Sequence[Compiled], rows: Any) -> list[tuple[Any, ...]]:
    n = rows.num_rows
    columns = [column_of(o.fn(rows), n, o.type).to_pylist() for o in outer]
    return list(zip(*columns, strict=True)) if columns else [()] * n


def _exists_lookup(outer: Sequence[Compiled], lookup: Lookup) -> Evaluator:
    return lambda rows: pa.array([k in lookup.rows for k in _keys(outer, rows)], type=pa.bool_())


def _in_lookup(operand: Compiled, outer: Sequence[Compiled], lookup: Lookup) -> Evaluator:
    def run(rows: Any) -> Any:
        xs = column_of(operand.fn(rows), rows.num_rows, operand.type).to_pylist()
        out: list[bool | None] = []
        for x, key in zip(xs, _keys(outer, rows), strict=True):
            group = lookup.rows.get(key)
            if group is None:
                out.append(False)  # an empty subquery: FALSE, even for NULL
            elif x is None:
                out.append(None)
            elif x in group[0]:
                out.append(True)
            else:
                out.append(None if group[1] else False)
        return pa.array(out, type=pa.bool_())

    return run


def _scalar_lookup(outer: Sequence[Compiled], lookup: Lookup) -> Evaluator:
    def run(rows: Any) -> Any:
        values: list[Any] = []
        for key in _keys(outer, rows):
            found = lookup.rows.get(key)
            if found is None:
                values.append(None)
                continue
            if found[1] > 1:
                raise MergekitError(ErrorCode.SUBQUERY_MULTIPLE_ROWS, MULTIPLE_ROWS_MESSAGE)
            values.append(found[0])
        return pa.array(values, type=lookup.value_type)

    return run


_NEVER_NULL_OPS = frozenset(
    {"add", "subtract", "multiply", "negate", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "in"}
    | {"is_distinct", "is_not_distinct", "concat"}
)


def spark_not_null(node: Any) -> bool:
    """Whether Spark types a constant expression NOT NULL: literals and what operators make of them, except NULL
    and dates (a DATE literal is a cast in Spark: nullable in the Spark tier's result)."""
    if isinstance(node, Const):
        return node.value is not None and node.kind != "date"
    if isinstance(node, Apply):
        if node.op in ("is_null", "is_not_null"):
            return True
        return node.op in _NEVER_NULL_OPS and all(spark_not_null(a) for a in node.args)
    return False
