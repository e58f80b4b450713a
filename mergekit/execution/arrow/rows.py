"""The Arrow evaluator of a row-level ``DELETE`` / ``UPDATE`` (seed 003's SPI, :mod:`.row_level`): the ``WHERE``
clause and the ``SET`` values over the pages of an ``UpdatablePageSource``, in the task that read them.

It evaluates exactly what Spark SQL (ANSI, with the SQL layer's Trino rendering) would, for the subset
:func:`mergekit.sql.lower_for_rows` lowers: columns and literals of the integer, string, date and boolean
families, comparisons, AND / OR / NOT (three-valued, and short-circuiting like Spark's, so a failing right side
is evaluated only where the left side does not decide), IS [NOT] NULL, ``IN`` lists, ``LIKE`` with a constant
pattern, integer ``+ - * %`` with overflow and division-by-zero errors worded as :mod:`.errors` words Spark's,
DOUBLE arithmetic, date arithmetic (:func:`.arrow_eval.shift_dates`, shared with the lookup path), and subqueries computed on the driver (:class:`Lookup`). Anything else raises
:class:`Unsupported` naming the construct; the caller refuses the statement with ``NOT_SUPPORTED``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.failures import MULTIPLE_ROWS_MESSAGE
from mergekit.sql import Apply, Const, Ref, SubqueryRef

from .cases import date_arithmetic, days_between, shift_dates, value_family

__all__ = [
    "MULTIPLE_ROWS_MESSAGE",
    "assign",
    "Unsupported",
    "Lookup",
    "Compiled",
    "RowCompiler",
    "mask_of",
    "column_of",
]

Evaluator = Callable[[pa.RecordBatch], Any]  # over a page's rows: an Arrow array or scalar

_CONST_TYPES = {
    "integer": pa.int32(),
    "string": pa.string(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "null": pa.null(),
}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}
_CHECKED = {"add": ("add_checked", "+", "addition"), "subtract": ("subtract_checked", "-", "subtraction")}
_CHECKED["multiply"] = ("multiply_checked", "*", "multiplication")
_TRINO_INT = {8: "tinyint", 16: "smallint", 32: "integer", 64: "bigint"}
_WHAT = {"like": "LIKE", "mod": "%", "in": "IN", "negate": "unary minus"}


class Unsupported(Exception):
    """The expression leaves what this evaluator computes exactly as Spark would; the message names what."""


@attrs.frozen
class Lookup:
    """A subquery's result, computed on the driver by Spark. ``keys``: the correlation key columns' Arrow type
    (empty: uncorrelated). ``rows``: key tuple -> the value(s) for those keys: for ``scalar`` (value, row count),
    for ``in`` (frozenset of non-null values, has a NULL), for ``exists`` True."""

    kind: str
    keys: tuple[pa.DataType, ...]
    rows: Mapping[tuple[Any, ...], Any]
    value_type: pa.DataType | None = None


@attrs.frozen
class Compiled:
    fn: Evaluator
    type: pa.DataType
    may_fail: bool = False


def column_of(value: Any, n: int, arrow_type: pa.DataType) -> pa.Array:
    """An evaluator's result as an array of ``n`` values of ``arrow_type``."""
    if isinstance(value, pa.Scalar):
        return pa.repeat(value.cast(arrow_type), n) if value.is_valid else pa.nulls(n, arrow_type)
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    return value if value.type == arrow_type else value.cast(arrow_type)


def assign(value: Any, n: int, value_type: pa.DataType, column: pa.DataType) -> pa.Array:
    """A SET value as a value of its ``column``'s type: a wider integer is cast as Spark's ANSI CAST does (an error
    for a value out of the column's range, worded as the merge path words it)."""
    array = column_of(value, n, value_type)
    if pa.types.is_integer(value_type) and pa.types.is_integer(column) and value_type.bit_width > column.bit_width:
        bits = column.bit_width
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        bad = pc.or_(pc.less(array, low), pc.greater(array, high))
        if pc.any(bad).as_py():
            first = array.filter(pc.fill_null(bad, False))[0].as_py()
            raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Out of range for {_TRINO_INT[bits]}: {first}")
    return array.cast(column)


def mask_of(value: Any, n: int) -> np.ndarray:
    """A condition's result as a numpy boolean mask (NULL: not selected)."""
    return np.asarray(pc.fill_null(column_of(value, n, pa.bool_()), False).to_numpy(zero_copy_only=False), dtype=bool)


def _wider(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    return a if a.bit_width >= b.bit_width else b


@attrs.define
class RowCompiler:
    """Compiles lowered trees over a page of the target's ``columns`` (name -> Arrow type). ``outer``: the names
    the target may be qualified by; ``lookups``: the subqueries' results, by identity of their SubqueryRef."""

    columns: Mapping[str, pa.DataType]
    outer: frozenset[str]
    lookups: Mapping[int, Lookup] = attrs.field(factory=dict)

    def ref(self, node: Ref) -> str:
        name = next((c for c in self.columns if c.lower() == node.name.lower()), None)
        if name is None or (node.qualifier is not None and node.qualifier.lower() not in self.outer):
            raise Unsupported(f"the column reference {node.qualifier + '.' if node.qualifier else ''}{node.name}")
        return name

    def compile(self, node: Any) -> Compiled:
        if isinstance(node, Ref):
            name = self.ref(node)

            def read(b: pa.RecordBatch, n: str = name) -> Any:
                return b.column(n)

            return Compiled(read, self.columns[name])
        if isinstance(node, Const):
            t = _CONST_TYPES[node.kind]

            def constant(b: pa.RecordBatch, s: pa.Scalar = pa.scalar(node.value, t)) -> Any:
                return s

            return Compiled(constant, t)
        if isinstance(node, SubqueryRef):
            return self._subquery(node)
        assert isinstance(node, Apply)
        op = node.op
        if op in ("and", "or"):
            return self._logic(op, *[self.compile(a) for a in node.args])
        args = [self.compile(a) for a in node.args]
        may_fail = any(a.may_fail for a in args)
        types = [a.type for a in args]
        if op in _COMPARE:
            families = {value_family(t) for t in types} - {"null"}
            if None in families or len(families) > 1:
                raise Unsupported(f"a comparison of {' and '.join(map(str, types))}")
            fn = getattr(pc, _COMPARE[op])
            return Compiled(_binary(fn, args), pa.bool_(), may_fail)
        if op == "not":
            if value_family(types[0]) not in ("boolean", "null"):
                raise Unsupported(f"NOT of {types[0]}")
            a = args[0]
            return Compiled(lambda b: pc.invert(column_of(a.fn(b), b.num_rows, pa.bool_())), pa.bool_(), may_fail)
        if op in ("is_null", "is_not_null"):
            if value_family(types[0]) is None and not pa.types.is_floating(types[0]):
                raise Unsupported(f"IS NULL of {types[0]}")
            fn = pc.is_null if op == "is_null" else pc.is_valid
            a = args[0]
            return Compiled(lambda b: fn(column_of(a.fn(b), b.num_rows, a.type)), pa.bool_(), may_fail)
        if op == "in":
            return self._in_list(args, node.args[1:])
        if op == "like":
            return self._like(args, node.args[1])
        if op in ("add", "subtract", "multiply", "mod", "negate"):
            return self._arithmetic(op, args)
        raise Unsupported(f"the operator {op}")

    # ---- logic ----------------------------------------------------------------------------------------------

    def _logic(self, op: str, left: Compiled, right: Compiled) -> Compiled:
        for side in (left, right):
            if value_family(side.type) not in ("boolean", "null"):
                raise Unsupported(f"{op.upper()} of {side.type}")
        kleene = pc.and_kleene if op == "and" else pc.or_kleene
        decided_by = op == "or"  # AND: a FALSE left side decides; OR: a TRUE one

        def run(b: pa.RecordBatch) -> Any:
            n = b.num_rows
            lv = column_of(left.fn(b), n, pa.bool_())
            if not right.may_fail:
                return kleene(lv, column_of(right.fn(b), n, pa.bool_()))
            # Spark evaluates the right side only where the left one does not decide the result
            decided = pc.fill_null(pc.equal(lv, pa.scalar(decided_by)), False).to_numpy(zero_copy_only=False)
            todo = np.flatnonzero(~decided)
            rv = pa.nulls(n, pa.bool_())
            if len(todo):
                part = column_of(right.fn(b.take(pa.array(todo))), len(todo), pa.bool_())
                mask = np.zeros(n, dtype=bool)
                mask[todo] = True
                rv = pc.replace_with_mask(rv, pa.array(mask), part)
            return kleene(lv, rv)

        return Compiled(run, pa.bool_(), left.may_fail or right.may_fail)

    def _in_list(self, args: Sequence[Compiled], items: Sequence[Any]) -> Compiled:
        operand = args[0]
        family = value_family(operand.type)
        if family in (None, "null") or not all(isinstance(i, Const) for i in items):
            raise Unsupported("IN with a list of anything but literals")
        if any(value_family(_CONST_TYPES[i.kind]) not in (family, "null") for i in items):
            raise Unsupported("IN with literals of another type than its operand")
        values = [i.value for i in items if i.value is not None]
        has_null = len(values) < len(items)
        return Compiled(_membership(operand, values, has_null), pa.bool_(), operand.may_fail)

    def _like(self, args: Sequence[Compiled], pattern: Any) -> Compiled:
        operand = args[0]
        if value_family(operand.type) != "string" or not (isinstance(pattern, Const) and pattern.kind == "string"):
            raise Unsupported("LIKE with a pattern that is not a literal")
        if "\\" in pattern.value:
            raise Unsupported("LIKE with a backslash in its pattern")
        text = pattern.value

        def run(b: pa.RecordBatch) -> Any:
            return pc.match_like(column_of(operand.fn(b), b.num_rows, pa.string()), text)

        return Compiled(run, pa.bool_(), operand.may_fail)

    # ---- arithmetic -----------------------------------------------------------------------------------------

    def _arithmetic(self, op: str, args: Sequence[Compiled]) -> Compiled:
        types = [a.type for a in args]
        dates = date_arithmetic(op, types)
        if dates is not None:
            may_fail = dates == "shift" or any(a.may_fail for a in args)
            return Compiled(_dates(op, dates, args), pa.date32() if dates == "shift" else pa.int32(), may_fail)
        if all(pa.types.is_integer(t) or pa.types.is_null(t) for t in types) and any(
            pa.types.is_integer(t) for t in types
        ):
            result = types[0]
            for t in types[1:]:
                result = _wider(result, t)
            if op == "negate":
                return self._arithmetic("subtract", [Compiled(lambda b: pa.scalar(0, result), result), args[0]])
            return Compiled(_integer_op(op, args, result), result, True)
        doubles = all(pa.types.is_float64(t) or t in (pa.int8(), pa.int16(), pa.int32(), pa.null()) for t in types)
        if op != "mod" and doubles and any(pa.types.is_float64(t) for t in types):
            if op == "negate":
                a = args[0]
                return Compiled(lambda b: pc.negate(column_of(a.fn(b), b.num_rows, pa.float64())), pa.float64())
            fn = getattr(pc, op)
            return Compiled(_binary(fn, args, cast=pa.float64()), pa.float64(), any(a.may_fail for a in args))
        raise Unsupported(f"{_WHAT.get(op, op)} of {' and '.join(map(str, types))}")

    # ---- subqueries -----------------------------------------------------------------------------------------

    def _subquery(self, node: SubqueryRef) -> Compiled:
        lookup = self.lookups.get(id(node))
        if lookup is None:
            raise Unsupported("a subquery")
        outer = [self.compile(r) for r in node.outer]
        for o, k in zip(outer, lookup.keys, strict=True):
            if value_family(o.type) != value_family(k) or value_family(k) is None:
                raise Unsupported(f"a subquery correlated on {o.type} and {k}")
        if node.kind == "in":
            operand = self.compile(node.operand)
            assert lookup.value_type is not None
            if value_family(operand.type) != value_family(lookup.value_type) or value_family(operand.type) is None:
                raise Unsupported(f"IN of {operand.type} with a subquery of {lookup.value_type}")
            return Compiled(_in_lookup(operand, outer, lookup), pa.bool_(), operand.may_fail)
        if node.kind == "exists":
            return Compiled(_exists_lookup(outer, lookup), pa.bool_())
        assert lookup.value_type is not None
        return Compiled(_scalar_lookup(outer, lookup), lookup.value_type, bool(outer))


def _binary(fn: Callable[..., Any], args: Sequence[Compiled], cast: pa.DataType | None = None) -> Evaluator:
    left, right = args

    def run(b: pa.RecordBatch) -> Any:
        x, y = left.fn(b), right.fn(b)
        if cast is not None:
            x, y = x.cast(cast), y.cast(cast)
        return fn(x, y)

    return run


def _dates(op: str, kind: str, args: Sequence[Compiled]) -> Evaluator:
    left, right = args

    def run(b: pa.RecordBatch) -> Any:
        n = b.num_rows
        x = column_of(left.fn(b), n, left.type)
        if right.may_fail and x.null_count:  # as Spark's operators: not computed where the left operand is NULL
            todo = pc.indices_nonzero(pc.is_valid(x))
            part = column_of(right.fn(b.take(todo)), len(todo), right.type)
            y = pc.replace_with_mask(pa.nulls(n, right.type), pc.is_valid(x), part)
        else:
            y = column_of(right.fn(b), n, right.type)
        if kind == "between":
            return days_between(x, y)
        date_first = pa.types.is_date32(left.type)
        return shift_dates(x if date_first else y, y if date_first else x, op == "subtract")

    return run


def _membership(operand: Compiled, values: Sequence[Any], has_null: bool) -> Evaluator:
    """SQL's ``x IN (values)``: NULL when x is NULL, TRUE when found, else NULL when the list has a NULL."""

    def run(b: pa.RecordBatch) -> Any:
        n = b.num_rows
        x = column_of(operand.fn(b), n, operand.type)
        if not values:
            found = pa.repeat(pa.scalar(False), n)
        else:
            found = pc.is_in(
                x, value_set=pa.array(values, type=operand.type if not pa.types.is_null(operand.type) else None)
            )
        miss = pa.scalar(None, pa.bool_()) if has_null else pa.scalar(False)
        return pc.if_else(pc.is_null(x), pa.scalar(None, pa.bool_()), pc.if_else(found, True, miss))

    return run


def _integer_op(op: str, args: Sequence[Compiled], result: pa.DataType) -> Evaluator:
    left, right = args

    def run(b: pa.RecordBatch) -> Any:
        n = b.num_rows
        x, y = column_of(left.fn(b), n, result), column_of(right.fn(b), n, result)
        if op == "mod":
            return _remainder(x, y, result)
        name, symbol, operation = _CHECKED[op]
        try:
            return getattr(pc, name)(x, y)
        except pa.ArrowInvalid:
            xs, ys = x.to_pylist(), y.to_pylist()
            bits = result.bit_width
            low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
            for a, c in zip(xs, ys, strict=True):
                if a is None or c is None:
                    continue
                value = {"+": a + c, "-": a - c, "*": a * c}[symbol]
                if not low <= value <= high:  # worded as .errors words Spark's (the merge path's) overflow
                    message = (
                        f"Numeric overflow in {operation}"
                        if bits >= 32
                        else f"{_TRINO_INT[bits]} {operation} overflow: {a} {symbol} {c}"
                    )
                    raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, message) from None
            raise

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


def _keys(outer: Sequence[Compiled], b: pa.RecordBatch, types: Sequence[pa.DataType]) -> list[tuple[Any, ...]]:
    n = b.num_rows
    columns = [column_of(o.fn(b), n, o.type).to_pylist() for o in outer]
    return list(zip(*columns, strict=True)) if columns else [()] * n


def _exists_lookup(outer: Sequence[Compiled], lookup: Lookup) -> Evaluator:
    def run(b: pa.RecordBatch) -> Any:
        return pa.array([k in lookup.rows for k in _keys(outer, b, lookup.keys)], type=pa.bool_())

    return run


def _in_lookup(operand: Compiled, outer: Sequence[Compiled], lookup: Lookup) -> Evaluator:
    def run(b: pa.RecordBatch) -> Any:
        xs = column_of(operand.fn(b), b.num_rows, operand.type).to_pylist()
        out: list[bool | None] = []
        for x, key in zip(xs, _keys(outer, b, lookup.keys), strict=True):
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
    def run(b: pa.RecordBatch) -> Any:
        values: list[Any] = []
        for key in _keys(outer, b, lookup.keys):
            found = lookup.rows.get(key)
            if found is None:
                values.append(None)
                continue
            if found[1] > 1:
                raise MergekitError(ErrorCode.SUBQUERY_MULTIPLE_ROWS, MULTIPLE_ROWS_MESSAGE)
            values.append(found[0])
        return pa.array(values, type=lookup.value_type)

    return run
