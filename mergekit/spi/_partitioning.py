"""Partitioned (merge) tables in the SPI: partition schemes, partition bounds and computed columns (seed 004).

A *merge table* is a logical table made of child tables. Its *partition scheme* says how a row's
*partition key* is computed (a column, ``ON (col)``, or an SQL expression, ``USING (expr)``) and whether
children hold value ranges (``RANGE``) or value lists (``VALUES``). Each child's *partition bounds* say
which keys it holds. The engine parses MonetDB's DDL, evaluates bound expressions in Spark and calls the
connector's partition methods on :class:`~mergekit.spi.ConnectorMetadata` (``create_merge_table``,
``set_table_partition``, ``drop_table_partition``, ``drop_column``); all default to ``NOT_SUPPORTED``.

Everything here is pure pyarrow and attrs, so a connector routes rows (:meth:`PartitionBounds.matches`)
and prunes children (:meth:`PartitionBounds.may_match`) with the same code the engine uses to check a
child's existing rows.

Connectors cannot evaluate SQL. A connector that needs a value computed from each row (a ``USING``
expression) declares it as a :class:`ComputedColumn` of its insert layout: the engine evaluates the SQL
text in Spark over each merge row's *new* values and appends it to the merge page after the three
trailing channels (see :class:`~mergekit.spi.MergePageLayout`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.compute as pc

from ._model import SchemaTableName

__all__ = [
    "ComputedColumn",
    "PartitionMethod",
    "PartitionKind",
    "PartitionScheme",
    "PartitionBounds",
    "RowsCheck",
    "format_partition_value",
]


def _tuple(values: Iterable[Any]) -> tuple[Any, ...]:
    """Typed converter for attrs tuple fields (``converter=tuple`` defeats type checkers)."""
    return tuple(values)


@attrs.frozen(kw_only=True)
class ComputedColumn:
    """A value the engine computes per merge row and appends to merge pages, after ``$row_id``.

    ``expression`` is SQL text (mergekit's dialect) over the table's visible column names; ``type`` the
    Arrow type of the result (the engine casts to it). Its value is meaningful on INSERT and UPDATE_INSERT
    rows (the new row); on delete rows it may hold anything.
    """

    name: str
    expression: str
    type: pa.DataType


class PartitionMethod(enum.Enum):
    RANGE = "RANGE"
    VALUES = "VALUES"


class PartitionKind(enum.Enum):
    """What one ``AS PARTITION`` clause declares."""

    RANGE = "range"  # FROM min TO max [WITH NULL VALUES]
    VALUES = "values"  # IN (v, ...) [WITH NULL VALUES]
    NULL = "null"  # FOR NULL VALUES


@attrs.frozen(kw_only=True)
class PartitionScheme:
    """``PARTITION BY {RANGE | VALUES} {ON (column) | USING (expression)}`` of a merge table.

    ``column`` or ``expression`` (SQL text over the table's columns) is set, never both.
    ``expression_columns`` are the columns the expression reads. ``key_type`` is the Arrow type of the
    partition key (the column's type, or the expression's result type as the engine analysed it) and
    ``key_type_name`` its SQL name. Float keys never get here: the engine rejects them.
    """

    method: PartitionMethod
    column: str | None = None
    expression: str | None = None
    expression_columns: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    key_type: pa.DataType
    key_type_name: str

    @property
    def key_expression(self) -> str:
        """SQL text of the key: the quoted column, or the expression."""
        if self.column is not None:
            return '"' + self.column.replace('"', '""') + '"'
        assert self.expression is not None
        return self.expression

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the key depends on."""
        return (self.column,) if self.column is not None else self.expression_columns

    @property
    def type_code(self) -> int:
        """MonetDB's ``table_partitions.type``: 5 range/column, 6 range/expression, 9 values/column,
        10 values/expression."""
        base = 5 if self.method is PartitionMethod.RANGE else 9
        return base + (0 if self.column is not None else 1)

    @property
    def table_kind(self) -> str:
        """MonetDB's name for the table in messages: ``RANGE PARTITION TABLE`` / ``LIST PARTITION TABLE``."""
        return "RANGE PARTITION TABLE" if self.method is PartitionMethod.RANGE else "LIST PARTITION TABLE"


def _le(a: Any, b: Any) -> bool:
    return bool(a <= b)


@attrs.frozen(kw_only=True)
class PartitionBounds:
    """The keys one child holds. Values are Python scalars of the scheme's key type (``int``, ``str``,
    ``Decimal``, ``datetime``, ``date``), already evaluated and cast by the engine.

    Ranges are ``[minimum, maximum)`` (lower inclusive, upper exclusive); ``minimum`` None means
    ``RANGE MINVALUE`` and ``maximum`` None ``RANGE MAXVALUE``; ``FROM x TO x`` holds exactly ``x``
    (current MonetDB releases). ``with_nulls``: the child also holds rows whose key is NULL.
    """

    kind: PartitionKind
    minimum: Any = None
    maximum: Any = None
    values: tuple[Any, ...] = attrs.field(default=(), converter=_tuple)
    with_nulls: bool = False

    # -- what the partition holds ------------------------------------------------------------------------

    @property
    def holds_values(self) -> bool:
        return self.kind is not PartitionKind.NULL

    @property
    def holds_everything(self) -> bool:
        """``FROM RANGE MINVALUE TO RANGE MAXVALUE``: every non-NULL key."""
        return self.kind is PartitionKind.RANGE and self.minimum is None and self.maximum is None

    def _interval(self) -> tuple[Any, bool, Any, bool]:
        """(low, low inclusive, high, high inclusive); None bounds are open."""
        if self.minimum is not None and self.maximum is not None and self.minimum == self.maximum:
            return self.minimum, True, self.maximum, True
        return self.minimum, True, self.maximum, False

    def contains(self, value: Any) -> bool:
        """Whether a key (a Python scalar, None for NULL) belongs here."""
        if value is None:
            return self.with_nulls
        if self.kind is PartitionKind.NULL:
            return False
        if self.kind is PartitionKind.VALUES:
            return value in self.values
        lo, lo_inc, hi, hi_inc = self._interval()
        if lo is not None and (value < lo or (value == lo and not lo_inc)):
            return False
        if hi is not None and (value > hi or (value == hi and not hi_inc)):
            return False
        return True

    def matches(self, keys: pa.Array | pa.ChunkedArray) -> pa.Array:
        """A boolean mask, never null: which keys belong here (pyarrow compute, vectorised)."""
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        nulls = pc.is_null(keys)
        if self.kind is PartitionKind.NULL:
            inside = pa.repeat(pa.scalar(False), len(keys))
        elif self.kind is PartitionKind.VALUES:
            inside = pc.is_in(keys, value_set=pa.array(list(self.values), keys.type))
        else:
            lo, lo_inc, hi, hi_inc = self._interval()
            inside = pa.repeat(pa.scalar(True), len(keys))
            if lo is not None:
                lo_s = pa.scalar(lo, keys.type)
                inside = pc.and_(inside, pc.greater_equal(keys, lo_s) if lo_inc else pc.greater(keys, lo_s))
            if hi is not None:
                hi_s = pa.scalar(hi, keys.type)
                inside = pc.and_(inside, pc.less_equal(keys, hi_s) if hi_inc else pc.less(keys, hi_s))
        inside = pc.fill_null(inside, False)
        if self.with_nulls:
            return pc.or_(inside, nulls)
        return pc.and_(inside, pc.invert(nulls))

    def may_match(self, constraint: tuple[Any, ...] | None) -> bool:
        """Pruning: False only when no key satisfying ``constraint`` can be here. ``constraint`` is
        ``("values", frozenset)``, ``("range", low, high)`` (inclusive, either None), ``("null",)`` or None
        (no constraint). Values of another type than the bounds never prune."""
        if constraint is None:
            return True
        try:
            if constraint[0] == "null":
                return self.with_nulls
            if constraint[0] == "values":
                return any(v is not None and self.contains(_coerce(v, self._sample())) for v in constraint[1])
            if constraint[0] == "range":
                if self.kind is PartitionKind.NULL:
                    return False
                low, high = (_coerce(v, self._sample()) for v in constraint[1:3])
                if self.kind is PartitionKind.VALUES:
                    return any((low is None or v >= low) and (high is None or v <= high) for v in self.values)
                lo, lo_inc, hi, hi_inc = self._interval()
                if high is not None and lo is not None and (high < lo):
                    return False
                if low is not None and hi is not None and (low > hi or (low == hi and not hi_inc)):
                    return False
                return True
        except TypeError:
            return True
        return True

    def _sample(self) -> Any:
        for v in (self.minimum, self.maximum, *self.values):
            if v is not None:
                return v
        return None

    # -- conflicts -----------------------------------------------------------------------------------------

    def overlaps(self, other: PartitionBounds) -> bool:
        """Whether two children would both hold some non-NULL key."""
        if not self.holds_values or not other.holds_values:
            return False
        if self.kind is PartitionKind.VALUES and other.kind is PartitionKind.VALUES:
            return bool(set(self.values) & set(other.values))
        if self.kind is PartitionKind.VALUES:
            return any(other.contains(v) for v in self.values)
        if other.kind is PartitionKind.VALUES:
            return any(self.contains(v) for v in other.values)
        a_lo, a_li, a_hi, a_hi_inc = self._interval()
        b_lo, b_li, b_hi, b_hi_inc = other._interval()
        # the larger lower bound must be below the smaller upper bound
        if a_lo is None:
            lo, lo_inc = b_lo, b_li
        elif b_lo is None:
            lo, lo_inc = a_lo, a_li
        elif a_lo == b_lo:
            lo, lo_inc = a_lo, a_li and b_li
        else:
            lo, lo_inc = (a_lo, a_li) if a_lo > b_lo else (b_lo, b_li)
        if a_hi is None:
            hi, hi_inc = b_hi, b_hi_inc
        elif b_hi is None:
            hi, hi_inc = a_hi, a_hi_inc
        elif a_hi == b_hi:
            hi, hi_inc = a_hi, a_hi_inc and b_hi_inc
        else:
            hi, hi_inc = (a_hi, a_hi_inc) if a_hi < b_hi else (b_hi, b_hi_inc)
        if lo is None or hi is None:
            return True
        if lo < hi:
            return True
        return bool(lo == hi and lo_inc and hi_inc)

    def describe_range(self) -> str:
        """MonetDB's wording of a range in conflict messages: ``5 to 10``, ``absolute min value to 7``."""
        low = "absolute min value" if self.minimum is None else format_partition_value(self.minimum)
        high = "absolute max value" if self.maximum is None else format_partition_value(self.maximum)
        return f"{low} to {high}"


def _coerce(value: Any, sample: Any) -> Any:
    """A constraint value in the bounds' Python type where that is lossless (int vs Decimal, date vs
    datetime); otherwise unchanged (a TypeError later means: do not prune)."""
    if value is None or sample is None:
        return value
    if isinstance(sample, int) and isinstance(value, decimal.Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(sample, decimal.Decimal) and isinstance(value, int):
        return decimal.Decimal(value)
    if isinstance(sample, dt.datetime) and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return dt.datetime(value.year, value.month, value.day)
    if isinstance(sample, bool) or isinstance(value, bool):
        return value
    if type(sample) is not type(value) and not (isinstance(sample, dt.datetime) and isinstance(value, dt.datetime)):
        raise TypeError("incomparable")
    return value


def format_partition_value(value: Any) -> str:
    """How bounds and list values appear in system tables and messages (MonetDB prints them as text)."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


RowsCheck = Callable[[SchemaTableName, Sequence[tuple[PartitionScheme, PartitionBounds]]], Sequence[int]]
"""Given by the engine to ``set_table_partition`` (driver side): ``check(table, levels)`` reads ``table``'s
current rows in Spark, computes each level's partition key (column or expression) and returns, per level,
how many rows the bounds do not hold. The connector raises with its own wording when one is non-zero."""
