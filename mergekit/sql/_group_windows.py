"""Calcite's group window functions (seed 001's current revision): ``GROUP BY TUMBLE(t, size [, align])`` with
``TUMBLE_START(...)`` / ``TUMBLE_END(...)``, rewritten into expressions every engine evaluates.

A tumbling window of ``size`` aligned at ``align`` (a ``TIME`` of day, default midnight) holds the rows whose ``t``
lies in ``[start, start + size)`` with ``start = epoch + align + k * size``. In milliseconds since the epoch,
``d = date_diff('millisecond', epoch, t)`` and ``start = d - ((d - align) mod size)`` (the mod made non-negative),
so ``TUMBLE(t, ...)`` in GROUP BY becomes ``date_add('millisecond', start, epoch)``, ``TUMBLE_START(...)`` the
same expression, and ``TUMBLE_END(...)`` ``date_add('millisecond', size, <that expression>)``: an expression of
the grouping expression, as GROUP BY requires.

Calcite's rules, with its messages (``STREAM_NOT_ALLOWED`` is not the code: they hold for relational queries too,
``SYNTAX_ERROR``): ``Group function '$TUMBLE' can only appear in GROUP BY clause``; ``Call to auxiliary group
function 'TUMBLE_END' must have matching call to group function '$TUMBLE' in GROUP BY clause`` (structurally:
``TUMBLE(t, i)`` does not match ``TUMBLE_END(t, i, TIME '00:00:00')``). ``HOP`` and ``SESSION`` are refused by
name (``NOT_SUPPORTED``) until they are built.
"""

from __future__ import annotations

import datetime
import re

import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError

from ._dialect import DIALECT

__all__ = ["rewrite_group_windows"]

_GROUP = {"TUMBLE", "HOP", "SESSION"}
_AUXILIARY = {f"{g}_{edge}": g for g in _GROUP for edge in ("START", "END")}
_EPOCH = "TIMESTAMP '1970-01-01 00:00:00.000'"
_UNIT_MS = {
    "MILLISECOND": 1,
    "SECOND": 1000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
    "WEEK": 7 * 86_400_000,
}


def _name(node: exp.Expression) -> str | None:
    return str(node.this).upper() if isinstance(node, exp.Anonymous) else None


def _syntax(message: str) -> MergekitError:
    return MergekitError(ErrorCode.SYNTAX_ERROR, message)


def _interval_ms(node: exp.Expression, what: str) -> int:
    if isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal):
        unit = str(node.args.get("unit").name if node.args.get("unit") is not None else "").upper().rstrip("S")
        if unit in _UNIT_MS and re.fullmatch(r"\d+", str(node.this.this).strip()):
            value = int(str(node.this.this).strip()) * _UNIT_MS[unit]
            if value > 0:
                return value
    raise MergekitError(
        ErrorCode.NOT_SUPPORTED, f"{what} must be a positive INTERVAL literal of whole seconds, minutes, hours or days"
    )


def _align_ms(node: exp.Expression | None) -> int:
    if node is None:
        return 0
    text = node.name if isinstance(node, exp.Cast | exp.Literal) else None
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        text = str(node.this.this)
    if text:
        try:
            t = datetime.time.fromisoformat(text.strip() if len(text.strip()) > 5 else text.strip() + ":00")
            return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000
        except ValueError:
            pass
    raise MergekitError(ErrorCode.NOT_SUPPORTED, "the alignment of TUMBLE must be a TIME literal")


def _key(call: exp.Anonymous) -> tuple[str, ...]:
    return tuple(e.sql(dialect="trino") for e in call.expressions)


def _start(call: exp.Anonymous) -> exp.Expression:
    args = call.expressions
    if len(args) not in (2, 3):
        raise _syntax(
            f"Invalid number of arguments to function 'TUMBLE'. Was expecting 2 or 3 arguments, got {len(args)}"
        )
    size = _interval_ms(args[1], "The size of TUMBLE")
    align = _align_ms(args[2] if len(args) == 3 else None) % size
    t = args[0].sql(dialect="trino")
    d = f"date_diff('millisecond', {_EPOCH}, {t})"
    return _expression(f"date_add('millisecond', {d} - ((({d} - {align}) % {size}) + {size}) % {size}, {_EPOCH})")


def _expression(text: str) -> exp.Expression:
    return sqlglot.parse_one(f"SELECT {text}", read=DIALECT).expressions[0]  # type: ignore[attr-defined]


def rewrite_group_windows(tree: exp.Expression) -> exp.Expression:
    """``tree`` (unchanged when it uses no group window function) with every TUMBLE call rewritten; the errors
    above for misplaced or unmatched calls."""
    if not any(_name(n) in _GROUP or _name(n) in _AUXILIARY for n in tree.find_all(exp.Anonymous)):
        return tree
    tree = tree.copy()
    for select in list(tree.find_all(exp.Select)):
        group = select.args.get("group")
        grouped: dict[tuple[str, tuple[str, ...]], exp.Expression] = {}
        for key in list(group.expressions) if group is not None else []:
            name = _name(key)
            if name in _GROUP:
                if name != "TUMBLE":
                    raise MergekitError(
                        ErrorCode.NOT_SUPPORTED, f"The group window function {name} is not supported yet"
                    )
                assert isinstance(key, exp.Anonymous)
                start = _start(key)
                grouped[(name, _key(key))] = start
                key.replace(start.copy())
        for node in list(select.find_all(exp.Anonymous)):
            if node.find_ancestor(exp.Select) is not select:
                continue  # a sub-query's own
            name = _name(node)
            if name in _GROUP:
                raise _syntax(f"Group function '${name}' can only appear in GROUP BY clause")
            if name in _AUXILIARY:
                base = _AUXILIARY[name]
                start = grouped.get((base, _key(node)))
                if start is None:
                    raise _syntax(
                        f"Call to auxiliary group function '{name}' must have matching call to group function "
                        f"'${base}' in GROUP BY clause"
                    )
                size = _interval_ms(node.expressions[1], f"The size of {base}")
                value = start.copy()
                if name.endswith("_END"):
                    value = _expression(f"date_add('millisecond', {size}, {start.sql(dialect='trino')})")
                node.replace(value)
    return tree
