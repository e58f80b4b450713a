"""Calcite's group window functions (seed 001's current revision): ``GROUP BY TUMBLE(t, size [, align])``,
``GROUP BY HOP(t, emit, retain [, align])`` and ``GROUP BY SESSION(t, gap)``, with their auxiliary functions
``TUMBLE_START/END``, ``HOP_START/END`` and ``SESSION_START/END``, rewritten into SQL every engine evaluates.

* **TUMBLE.** A tumbling window of ``size`` aligned at ``align`` (a ``TIME`` of day, default midnight) holds the
  rows whose ``t`` lies in ``[start, start + size)`` with ``start = epoch + align + k * size``. In milliseconds
  since the epoch, ``d = date_diff('millisecond', epoch, t)`` and ``start = d - ((d - align) mod size)`` (the mod
  made non-negative), so ``TUMBLE(t, ...)`` in GROUP BY becomes ``date_add('millisecond', start, epoch)``,
  ``TUMBLE_START(...)`` the same expression, and ``TUMBLE_END(...)`` that plus ``size``.
* **HOP** (``TUMBLE(t, e) = HOP(t, e, e)``): windows of length ``retain`` starting every ``emit`` (aligned as
  above); a row belongs to every window that holds it, ``ceil(retain / emit)`` of them at most. The SELECT gets
  ``CROSS JOIN UNNEST(ARRAY[0, 1, ...]) AS __mk_hop(__mk_k)`` (one row per candidate window), the group key
  becomes the candidate's start ``last_start - __mk_k * emit``, and ``t < start + retain`` joins the WHERE
  clause (a retention that is not a multiple of the emission period leaves some candidates empty).
* **SESSION**: a session (per value of the other GROUP BY keys) is a maximal run of rows, ordered by ``t``,
  each less than ``gap`` after the one before it; ``SESSION_START`` is its first row's ``t``, ``SESSION_END``
  its last row's ``t`` plus ``gap`` (Calcite and Spark agree; a row exactly ``gap`` after the last one opens a
  new session, as Calcite's ``SessionizationEnumerator`` does). The sessions are computed by
  :func:`sessions_query` (gaps and islands over the SELECT's own FROM and WHERE) and joined back to the rows.

Calcite's rules, with its messages (they hold for relational queries too: ``SYNTAX_ERROR``): ``Group function
'$TUMBLE' can only appear in GROUP BY clause``; ``Call to auxiliary group function 'TUMBLE_END' must have
matching call to group function '$TUMBLE' in GROUP BY clause`` (structurally: ``TUMBLE(t, i)`` does not match
``TUMBLE_END(t, i, TIME '00:00:00')``). Sizes are INTERVAL literals of whole seconds, minutes, hours, days or
weeks; one group window function per GROUP BY, none inside GROUPING SETS, ROLLUP or CUBE, and HOP or SESSION
not beside them (``NOT_SUPPORTED``).
"""

from __future__ import annotations

import datetime
import math
import re

import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.parse.dialect import DIALECT

__all__ = ["rewrite_group_windows", "start_sql", "sessions_query", "interval_ms"]

_GROUP = {"TUMBLE", "HOP", "SESSION"}
_AUXILIARY = {f"{g}_{edge}": g for g in _GROUP for edge in ("START", "END")}
_ARITY = {"TUMBLE": (2, 3), "HOP": (3, 4), "SESSION": (2, 2)}
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


def interval_ms(node: exp.Expression, what: str, *, zero: bool = False) -> int:
    """Milliseconds of an INTERVAL literal of whole units; positive (or zero when ``zero``), else NOT_SUPPORTED."""
    if isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal):
        unit = str(node.args.get("unit").name if node.args.get("unit") is not None else "").upper().rstrip("S")
        if unit in _UNIT_MS and re.fullmatch(r"\d+", str(node.this.this).strip()):
            value = int(str(node.this.this).strip()) * _UNIT_MS[unit]
            if value > 0 or zero:
                return value
    kind = "a non-negative" if zero else "a positive"
    raise MergekitError(
        ErrorCode.NOT_SUPPORTED, f"{what} must be {kind} INTERVAL literal of whole seconds, minutes, hours or days"
    )


def _align_ms(node: exp.Expression | None, function: str) -> int:
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
    raise MergekitError(ErrorCode.NOT_SUPPORTED, f"the alignment of {function} must be a TIME literal")


def _key(call: exp.Anonymous) -> tuple[str, ...]:
    return tuple(e.sql(dialect="trino") for e in call.expressions)


def start_sql(t: str, size: int, offset: int) -> str:
    """Trino SQL of the start of the window of ``size`` ms, aligned ``offset`` ms after the epoch, holding ``t``."""
    offset %= size
    d = f"date_diff('millisecond', {_EPOCH}, {t})"
    return f"date_add('millisecond', {d} - ((({d} - {offset}) % {size}) + {size}) % {size}, {_EPOCH})"


def _expression(text: str) -> exp.Expression:
    return sqlglot.parse_one(f"SELECT {text}", read=DIALECT).expressions[0]  # type: ignore[attr-defined]


def _arguments(call: exp.Anonymous) -> list[exp.Expression]:
    name = _name(call) or ""
    args = list(call.expressions)
    low, high = _ARITY[name]
    if not low <= len(args) <= high:
        wanted = f"{low}" if low == high else f"{low} or {high}"
        raise _syntax(
            f"Invalid number of arguments to function '{name}'. Was expecting {wanted} arguments, got {len(args)}"
        )
    return args


def _tumble(call: exp.Anonymous) -> tuple[exp.Expression, exp.Expression]:
    args = _arguments(call)
    size = interval_ms(args[1], "The size of TUMBLE")
    start = start_sql(args[0].sql(dialect="trino"), size, _align_ms(args[2] if len(args) == 3 else None, "TUMBLE"))
    return _expression(start), _expression(f"date_add('millisecond', {size}, {start})")


def _hop(select: exp.Select, call: exp.Anonymous) -> tuple[exp.Expression, exp.Expression]:
    args = _arguments(call)
    emit = interval_ms(args[1], "The emission period of HOP")
    retain = interval_ms(args[2], "The retention period of HOP")
    t = args[0].sql(dialect="trino")
    last = start_sql(t, emit, _align_ms(args[3] if len(args) == 4 else None, "HOP"))
    start = f"date_add('millisecond', -(CAST(__mk_hop.__mk_k AS BIGINT) * {emit}), {last})"
    candidates = ", ".join(str(k) for k in range(math.ceil(retain / emit)))
    join = sqlglot.parse_one(
        f"SELECT 1 FROM __mk CROSS JOIN UNNEST(ARRAY[{candidates}]) AS __mk_hop(__mk_k)", read=DIALECT
    ).args["joins"][0]
    _add_join(select, join)
    _and_where(select, _expression(f"{t} < date_add('millisecond', {retain}, {start})"))
    return _expression(start), _expression(f"date_add('millisecond', {retain}, {start})")


def _session(select: exp.Select, call: exp.Anonymous, keys: list[exp.Expression]) -> tuple[exp.Column, exp.Column]:
    args = _arguments(call)
    gap = interval_ms(args[1], "The gap of SESSION")
    t = args[0]
    rows = select.copy()
    for arg in ("group", "having", "order", "limit", "offset", "windows", "distinct", "qualify"):
        rows.set(arg, None)
    rows.comments = None
    rows.set(
        "expressions",
        [exp.alias_(k.copy(), f"__mk_k{i}") for i, k in enumerate(keys)] + [exp.alias_(t.copy(), "__mk_t")],
    )
    rows.set("where", None)
    where = select.args.get("where")
    condition = exp.Not(this=exp.Is(this=t.copy(), expression=exp.Null()))
    rows.set("where", exp.Where(this=exp.and_(where.this.copy(), condition) if where is not None else condition))
    on = [f"__mk_session.__mk_k{i} IS NOT DISTINCT FROM __mk_key{i}" for i in range(len(keys))]
    on += ["__mk_t >= __mk_session.__mk_ws", "__mk_t < __mk_session.__mk_we"]
    join = sqlglot.parse_one(
        f"SELECT 1 FROM __mk JOIN __mk_sessions AS __mk_session ON {' AND '.join(on)}", read=DIALECT
    )
    join = join.args["joins"][0]
    for column in list(join.find_all(exp.Column)):  # the row's time and keys, as the SELECT computes them
        if column.name == "__mk_t" and not column.table:
            column.replace(t.copy())
        elif column.name.startswith("__mk_key") and not column.table:
            column.replace(keys[int(column.name[len("__mk_key") :])].copy())
    join.this.replace(sessions_query(rows, len(keys), gap).subquery("__mk_session"))
    _add_join(select, join)
    return exp.column("__mk_ws", table="__mk_session"), exp.column("__mk_we", table="__mk_session")


def sessions_query(rows: exp.Select, keys: int, gap: int) -> exp.Select:
    """The sessions of ``rows`` (a query of columns ``__mk_k0, ..., __mk_t``, ``t`` not NULL): one row per
    session, with its keys, ``__mk_ws`` (first ``t``) and ``__mk_we`` (last ``t`` plus ``gap`` ms). A row opens
    a session when it is the first of its keys or at least ``gap`` after the row before it (gaps and islands)."""
    names = [f"__mk_k{i}" for i in range(keys)]
    partition = f"PARTITION BY {', '.join(names)} " if names else ""
    listed = "".join(f"{n}, " for n in names)
    text = (
        f"SELECT {listed}MIN(__mk_t) AS __mk_ws, date_add('millisecond', {gap}, MAX(__mk_t)) AS __mk_we FROM ("
        f"SELECT *, SUM(__mk_new) OVER ({partition}ORDER BY __mk_t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        f" AS __mk_sid FROM (SELECT *, CASE WHEN date_diff('millisecond', LAG(__mk_t) OVER ({partition}ORDER BY "
        f"__mk_t), __mk_t) < {gap} THEN 0 ELSE 1 END AS __mk_new FROM __mk_rows) AS __mk_a) AS __mk_b "
        f"GROUP BY {listed}__mk_sid"
    )
    query = sqlglot.parse_one(text, read=DIALECT)
    placeholder = next(t for t in query.find_all(exp.Table) if t.name == "__mk_rows")
    placeholder.replace(rows.subquery("__mk_rows"))
    assert isinstance(query, exp.Select)
    return query


def _add_join(select: exp.Select, join: exp.Expression) -> None:
    if select.args.get("from_") is None and select.args.get("from") is None:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "A group window function needs a FROM clause")
    select.set("joins", [*(select.args.get("joins") or []), join])


def _and_where(select: exp.Select, condition: exp.Expression) -> None:
    where = select.args.get("where")
    select.set("where", exp.Where(this=exp.and_(where.this, condition) if where is not None else condition))


def rewrite_group_windows(tree: exp.Expression) -> exp.Expression:
    """``tree`` (unchanged when it uses no group window function) with every group window call rewritten; the
    errors above for misplaced or unmatched calls."""
    if not any(_name(n) in _GROUP or _name(n) in _AUXILIARY for n in tree.find_all(exp.Anonymous)):
        return tree
    tree = tree.copy()
    for select in reversed(list(tree.find_all(exp.Select))):  # innermost first: SESSION copies its FROM
        _rewrite_select(select)
    return tree


def _rewrite_select(select: exp.Select) -> None:
    group = select.args.get("group")
    keys = list(group.expressions) if group is not None else []
    calls = [k for k in keys if _name(k) in _GROUP]
    grouped: dict[tuple[str, tuple[str, ...]], tuple[exp.Expression, exp.Expression]] = {}
    if len(calls) > 1:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, "A GROUP BY with more than one group window function")
    sets = list(group.find_all(exp.GroupingSets, exp.Rollup, exp.Cube)) if group is not None else []
    for node in (n for part in sets for n in part.find_all(exp.Anonymous)):
        if _name(node) in _GROUP:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED, f"{_name(node)} in GROUPING SETS, ROLLUP or CUBE is not supported"
            )
    if calls:
        call = calls[0]
        assert isinstance(call, exp.Anonymous) and group is not None
        name = _name(call) or ""
        nested = bool(sets) or any(group.args.get(a) for a in ("grouping_sets", "rollup", "cube"))
        if name != "TUMBLE" and nested:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"{name} with GROUPING SETS, ROLLUP or CUBE is not supported")
        signature = (name, _key(call))
        if name == "TUMBLE":
            grouped[signature] = _tumble(call)
        elif name == "HOP":
            grouped[signature] = _hop(select, call)
        else:
            grouped[signature] = _session(select, call, [k for k in keys if k is not call])
        start, end = grouped[signature]
        call.replace(start.copy())
        if name == "SESSION":
            group.set("expressions", [*group.expressions, end.copy()])
    for node in list(select.find_all(exp.Anonymous)):
        if node.find_ancestor(exp.Select) is not select:
            continue  # a sub-query's own
        name = _name(node)
        if name in _GROUP:
            raise _syntax(f"Group function '${name}' can only appear in GROUP BY clause")
        if name in _AUXILIARY:
            base = _AUXILIARY[name]
            found = grouped.get((base, _key(node)))
            if found is None:
                raise _syntax(
                    f"Call to auxiliary group function '{name}' must have matching call to group function "
                    f"'${base}' in GROUP BY clause"
                )
            node.replace(found[1 if name.endswith("_END") else 0].copy())
