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

When each piece is used (all on the driver unless said otherwise):

* ``CREATE MERGE TABLE t (...) PARTITION BY ...``: the engine builds a :class:`PartitionScheme` and calls
  ``ConnectorMetadata.create_merge_table(scheme=...)`` once;
* ``ALTER TABLE t {ADD | SET} TABLE c AS PARTITION ...``: the engine evaluates the bounds in Spark, builds
  :class:`PartitionBounds` and calls ``set_table_partition`` once, with a :data:`RowsCheck` the connector
  calls (at most once per statement) to count the child's existing rows outside the bounds;
* every scan of a merge table: the connector prunes children with :meth:`PartitionBounds.may_match`;
* every write (merge sinks, on executors): the connector routes rows with :meth:`PartitionBounds.matches`.

``ComputedColumn`` lives in ``_model`` (a layout carries it) and is re-exported here for older imports.
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

from ._model import ComputedColumn, SchemaTableName

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


# Partition values (bounds, list values, keys) are typed ``Any`` on purpose: they are Python scalars of the
# scheme's key type (int, str, Decimal, date, datetime, bool), compared with ``<`` and ``==``, and a union of
# those types would not type-check the comparisons. ``_coerce`` guards comparisons across types.


class PartitionMethod(enum.Enum):
    """``PARTITION BY RANGE`` (children hold ranges of keys) or ``PARTITION BY VALUES`` (lists of keys)."""

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

    Built by the engine for ``CREATE MERGE TABLE`` and handed to ``create_merge_table``, which stores it;
    ``get_partition_scheme`` returns it (driver, once per statement that reads or writes the merge table or
    changes its partitions). A connector that routes by an expression declares it as a
    :class:`ComputedColumn` of its insert layout (``expression`` as the SQL text) to receive the key per row.
    """

    method: PartitionMethod
    column: str | None = None  # ON (column)
    expression: str | None = None  # USING (expression), SQL text as written
    expression_columns: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    key_type: pa.DataType
    key_type_name: str

    @property
    def key_expression(self) -> str:
        """SQL text of the key: the quoted column, or the expression.

        What the engine evaluates in Spark for the :data:`RowsCheck` of ``set_table_partition``, and what a
        connector puts in a :class:`ComputedColumn` to receive the key of every merge row."""
        if self.column is not None:
            return '"' + self.column.replace('"', '""') + '"'
        assert self.expression is not None
        return self.expression

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the key depends on: an UPDATE that sets one of them may move the row to another
        child (the connector then needs ``DELETE_ROW_AND_INSERT_ROW`` and an insert layout on the key)."""
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


@attrs.frozen(kw_only=True)
class PartitionBounds:
    """The keys one child holds. Values are Python scalars of the scheme's key type (``int``, ``str``,
    ``Decimal``, ``datetime``, ``date``), already evaluated and cast by the engine.

    Ranges are ``[minimum, maximum)`` (lower inclusive, upper exclusive); ``minimum`` None means
    ``RANGE MINVALUE`` and ``maximum`` None ``RANGE MAXVALUE``; ``FROM x TO x`` holds exactly ``x``
    (current MonetDB releases). ``with_nulls``: the child also holds rows whose key is NULL.

    Built by the engine from ``AS PARTITION ...`` for ``set_table_partition``; the connector stores the
    bounds of each child and uses them to route rows (:meth:`matches`, in sinks on executors), to prune reads
    (:meth:`may_match`, on the driver) and to refuse overlaps (:meth:`overlaps`, on the driver). The
    methods are pure: no I/O, safe on executors, and they never raise for a value of the key type.
    """

    kind: PartitionKind
    minimum: Any = None  # RANGE: lower bound, inclusive; None = RANGE MINVALUE
    maximum: Any = None  # RANGE: upper bound, exclusive (unless equal to minimum); None = RANGE MAXVALUE
    values: tuple[Any, ...] = attrs.field(default=(), converter=_tuple)  # VALUES: the list, as declared
    with_nulls: bool = False  # WITH NULL VALUES, or FOR NULL VALUES (kind NULL)

    # -- what the partition holds ------------------------------------------------------------------------

    @property
    def holds_values(self) -> bool:
        """False only for ``FOR NULL VALUES``: a child that holds nothing but NULL keys."""
        return self.kind is not PartitionKind.NULL

    @property
    def holds_everything(self) -> bool:
        """``FROM RANGE MINVALUE TO RANGE MAXVALUE``: every non-NULL key."""
        return self.kind is PartitionKind.RANGE and self.minimum is None and self.maximum is None

    def _interval(self) -> tuple[Any, bool, Any, bool]:
        """(low, low inclusive, high, high inclusive); None bounds are open.

        ``FROM x TO x`` is the one range whose upper bound is inclusive: MonetDB accepts it and it holds x."""
        if self.minimum is not None and self.maximum is not None and self.minimum == self.maximum:
            return self.minimum, True, self.maximum, True
        return self.minimum, True, self.maximum, False

    def contains(self, value: Any) -> bool:
        """Whether a key (a Python scalar, None for NULL) belongs here.

        The scalar twin of :meth:`matches`, for one value at a time: the overlap checks of
        ``set_table_partition`` and the ``INSERT`` of a single row. ``value`` must be of the bounds' type."""
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
        """A boolean mask, never null: which keys belong here (pyarrow compute, vectorised).

        Called by merge sinks on executors, once per page and child, to route the rows of a page: ``keys``
        is the key column (or the computed key channel) of the page, of the scheme's key type."""
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        # NULL keys follow with_nulls alone; the comparisons below yield null for them, filled with False
        nulls = pc.is_null(keys)
        # FOR NULL VALUES: no value is inside; VALUES: membership; RANGE: the comparisons its bounds ask for
        if self.kind is PartitionKind.NULL:
            inside = pa.repeat(pa.scalar(False), len(keys))
        elif self.kind is PartitionKind.VALUES:
            inside = pc.is_in(keys, value_set=pa.array(list(self.values), keys.type))
        else:
            lo, lo_inc, hi, hi_inc = self._interval()
            inside = pa.repeat(pa.scalar(True), len(keys))
            # bounds become scalars of the keys' type, so that decimals and timestamps compare exactly
            if lo is not None:
                lo_s = pa.scalar(lo, keys.type)
                inside = pc.and_(inside, pc.greater_equal(keys, lo_s) if lo_inc else pc.greater(keys, lo_s))
            if hi is not None:
                hi_s = pa.scalar(hi, keys.type)
                inside = pc.and_(inside, pc.less_equal(keys, hi_s) if hi_inc else pc.less(keys, hi_s))
        inside = pc.fill_null(inside, False)
        # the mask is never null, so a sink can filter with it directly
        if self.with_nulls:
            return pc.or_(inside, nulls)
        return pc.and_(inside, pc.invert(nulls))

    def may_match(self, constraint: tuple[Any, ...] | None) -> bool:
        """Pruning: False only when no key satisfying ``constraint`` can be here. ``constraint`` is
        ``("values", frozenset)``, ``("range", low, high)`` (inclusive, either None), ``("null",)`` or None
        (no constraint). Values of another type than the bounds never prune.

        Called by the connector on the driver, once per child and scan, with the statement's predicate on the
        partition key (``col = v``, ``col IN (...)``, ``col BETWEEN a AND b``, ``col IS NULL``). Pruning is a
        hint: answering True for a child that holds no matching row is always correct, only slower."""
        if constraint is None:
            return True
        # A TypeError from comparing values of different types (after _coerce) means: cannot tell, keep it.
        try:
            if constraint[0] == "null":
                return self.with_nulls
            if constraint[0] == "values":
                return any(v is not None and self.contains(_coerce(v, self._sample())) for v in constraint[1])
            if constraint[0] == "range":
                if self.kind is PartitionKind.NULL:
                    return False
                low, high = (_coerce(v, self._sample()) for v in constraint[1:3])
                # a value list may match if one of its values lies within [low, high]
                if self.kind is PartitionKind.VALUES:
                    return any((low is None or v >= low) and (high is None or v <= high) for v in self.values)
                # a range [lo, hi) misses [low, high] when it starts after high or ends at or before low
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
        # A non-null bound, whose Python type constraint values are coerced to before comparing.
        for v in (self.minimum, self.maximum, *self.values):
            if v is not None:
                return v
        return None

    # -- conflicts -----------------------------------------------------------------------------------------

    def overlaps(self, other: PartitionBounds) -> bool:
        """Whether two children would both hold some non-NULL key.

        Called by ``set_table_partition`` (driver) against every other child before recording a partition:
        MonetDB refuses an overlapping range or value list, naming the conflicting child. NULL keys are
        checked separately (only one child may hold them)."""
        # FOR NULL VALUES holds no value; NULL keys are not overlaps here (see above)
        if not self.holds_values or not other.holds_values:
            return False
        # lists against lists: a common value; a list against a range: a value inside the range
        if self.kind is PartitionKind.VALUES and other.kind is PartitionKind.VALUES:
            return bool(set(self.values) & set(other.values))
        if self.kind is PartitionKind.VALUES:
            return any(other.contains(v) for v in self.values)
        if other.kind is PartitionKind.VALUES:
            return any(self.contains(v) for v in other.values)
        a_lo, a_li, a_hi, a_hi_inc = self._interval()
        b_lo, b_li, b_hi, b_hi_inc = other._interval()
        # the larger lower bound must be below the smaller upper bound: compute the intersection's lower bound
        # (None: unbounded) and whether it is inclusive, then its upper bound likewise
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
        # an open end on both sides (after taking the tighter bounds) always shares a key
        if lo is None or hi is None:
            return True
        if lo < hi:
            return True
        # equal bounds share exactly that key, if both sides include it (FROM x TO x against ...)
        return bool(lo == hi and lo_inc and hi_inc)

    # -- messages --------------------------------------------------------------------------------------------

    def describe_range(self) -> str:
        """MonetDB's wording of a range in conflict messages: ``5 to 10``, ``absolute min value to 7``.

        Called by the connector on the driver when ``set_table_partition`` refuses an overlap, to name both
        ranges the way MonetDB's error messages do (the partitioned connector's tests compare them verbatim)."""
        low = "absolute min value" if self.minimum is None else format_partition_value(self.minimum)
        high = "absolute max value" if self.maximum is None else format_partition_value(self.maximum)
        return f"{low} to {high}"


def _coerce(value: Any, sample: Any) -> Any:
    """A constraint value in the bounds' Python type where that is lossless (int vs Decimal, date vs
    datetime); otherwise unchanged (a TypeError later means: do not prune).

    Constraint values come from SQL literals as the engine evaluated them, and may be of a wider type than the
    key: ``WHERE id = 3.0`` on an integer key, ``WHERE day = DATE '2024-01-01'`` on a timestamp key."""
    # nothing to compare with: keep the value (None never prunes, an empty list holds nothing anyway)
    if value is None or sample is None:
        return value
    # integral decimals compare with integer keys; integers with decimal keys
    if isinstance(sample, int) and isinstance(value, decimal.Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(sample, decimal.Decimal) and isinstance(value, int):
        return decimal.Decimal(value)
    # a date against timestamp bounds means its midnight (a datetime is also a date: test for it first)
    if isinstance(sample, dt.datetime) and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return dt.datetime(value.year, value.month, value.day)
    # booleans are ints to Python: never coerce them, let equality decide
    if isinstance(sample, bool) or isinstance(value, bool):
        return value
    # any other mix of types (a string against integer bounds) cannot be compared: refuse, so nothing prunes
    if type(sample) is not type(value) and not (isinstance(sample, dt.datetime) and isinstance(value, dt.datetime)):
        raise TypeError("incomparable")
    return value


def format_partition_value(value: Any) -> str:
    """How bounds and list values appear in system tables and messages (MonetDB prints them as text).

    Used by the connector for ``range_partitions`` / ``value_partitions`` and in its conflict messages, so
    every connector prints a bound the way MonetDB does: timestamps with microseconds, booleans lower-case."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# The callback ``set_table_partition`` receives: it runs a Spark job, so a connector calls it once, after its
# own cheap checks (membership, schema, overlaps) passed, and before it records the new partition.
RowsCheck = Callable[[SchemaTableName, Sequence[tuple[PartitionScheme, PartitionBounds]]], Sequence[int]]
"""Given by the engine to ``set_table_partition`` (driver side): ``check(table, levels)`` reads ``table``'s
current rows in Spark, computes each level's partition key (column or expression) and returns, per level,
how many rows the bounds do not hold. The connector raises with its own wording when one is non-zero."""
