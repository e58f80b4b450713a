"""Calcite's window table functions (CALCITE-3272/3737/3780, ``stream.iq``): ``TABLE(TUMBLE(data, DESCRIPTOR(t),
size [, offset]))``, ``TABLE(HOP(data, DESCRIPTOR(t), slide, size [, offset]))`` and ``TABLE(SESSION(data,
DESCRIPTOR(t) [, DESCRIPTOR(key, ...)], size))``, positionally or with named arguments (``DATA =>``, ``TIMECOL =>``,
``SLIDE =>``, ``SIZE =>``, ``OFFSET =>``, ``KEY =>``). ``data`` is ``TABLE name`` (read as ``(SELECT * FROM
name)`` by the text pre-pass, ``_stream_syntax``) or a sub-query. The result is the data's columns plus
``window_start`` and ``window_end``:

* TUMBLE: one row per input row, in the window of ``size`` holding ``t`` (windows start at ``offset`` past the
  epoch, then every ``size``);
* HOP: one row per window of ``size``, starting every ``slide`` (from ``offset``), that holds ``t``, in the
  order of their starts;
* SESSION: one row per input row, in its session (per key): ``window_start`` the session's first ``t``,
  ``window_end`` its last ``t`` plus ``size`` (the gap), a row ``size`` or more after the one before it opening
  a new session (``_group_windows.sessions_query``);
* a row whose ``t`` is NULL is dropped (CALCITE-7684).

:func:`window_tvf` reads a FROM item (None if it is not one; ``SYNTAX_ERROR`` for a malformed call), and
:func:`rewrite_window_tvfs` replaces each by the derived table that computes it, at rendering. In the modality
rules the function converts to a stream when its data does: a window table function over a stream in a
``SELECT STREAM`` is a stream; in a relational query it reads the stream's history (a stream without
``history`` fails there: ``Cannot convert stream 'ORDERS' to relation``).
"""

from __future__ import annotations

import attrs
import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.parse.dialect import DIALECT

from .group_windows import interval_ms, sessions_query, start_sql

__all__ = ["WindowTVF", "window_tvf", "rewrite_window_tvfs", "mark_streaming"]

STREAMING = "mergekit:streaming"

_PARAMETERS = {
    "TUMBLE": (("DATA", "TIMECOL", "SIZE"), ("OFFSET",)),
    "HOP": (("DATA", "TIMECOL", "SLIDE", "SIZE"), ("OFFSET",)),
    "SESSION": (("DATA", "TIMECOL", "SIZE"), ("KEY",)),
}


@attrs.frozen
class WindowTVF:
    kind: str  # TUMBLE, HOP or SESSION
    data: exp.Subquery
    time: exp.Column
    keys: tuple[exp.Column, ...]
    size: int  # ms: the window's length, or the session gap
    slide: int  # ms (HOP; the size otherwise)
    offset: int  # ms
    alias: exp.TableAlias | None
    streaming: bool = False  # read as a stream (else as a relation: rows sorted by time, as Calcite's input)


def _syntax(message: str) -> MergekitError:
    return MergekitError(ErrorCode.SYNTAX_ERROR, message)


def _call(item: exp.Expression) -> exp.Anonymous | None:
    if not isinstance(item, exp.Table) or item.name or not isinstance(item.this, exp.Anonymous):
        return None
    outer = item.this
    if str(outer.this).upper() != "TABLE" or len(outer.expressions) != 1:
        return None
    inner = outer.expressions[0]
    if isinstance(inner, exp.Anonymous) and str(inner.this).upper() in _PARAMETERS:
        return inner
    return None


def _named(call: exp.Anonymous, kind: str) -> dict[str, exp.Expression]:
    required, optional = _PARAMETERS[kind]
    args = list(call.expressions)
    named = [a for a in args if isinstance(a, exp.Kwarg)]
    if named and len(named) != len(args):
        raise _syntax(f"Window table function {kind} takes its arguments all by name or all by position")
    if named:
        out = {str(a.this.name).upper(): a.expression for a in named}
        unknown = sorted(set(out) - set(required) - set(optional))
        if unknown:
            raise _syntax(f"Window table function {kind} has no parameter {unknown[0]}")
    else:
        high = len(required) + len(optional)
        if not len(required) <= len(args) <= high:
            raise _syntax(
                f"Invalid number of arguments to function '{kind}'. Was expecting {len(required)} or {high} "
                f"arguments, got {len(args)}"
            )
        order = list(required)
        if len(args) > len(required):
            order = ["DATA", "TIMECOL", "KEY", "SIZE"] if kind == "SESSION" else order + list(optional)
        out = dict(zip(order, args, strict=True))
    missing = [p for p in required if p not in out]
    if missing:
        raise _syntax(f"Window table function {kind} needs its {missing[0]} parameter")
    return out


def _descriptor(node: exp.Expression, kind: str, what: str) -> tuple[exp.Column, ...]:
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "DESCRIPTOR" and node.expressions:
        if all(isinstance(c, exp.Column) and not c.table for c in node.expressions):
            return tuple(node.expressions)  # type: ignore[arg-type]
    raise _syntax(f"The {what} of window table function {kind} must be DESCRIPTOR(column)")


def window_tvf(item: exp.Expression) -> WindowTVF | None:
    """The window table function a FROM item calls, or None."""
    call = _call(item)
    if call is None:
        return None
    kind = str(call.this).upper()
    args = _named(call, kind)
    data = args["DATA"]
    if not isinstance(data, exp.Subquery):
        raise _syntax(f"The data of window table function {kind} must be TABLE name or a sub-query")
    time = _descriptor(args["TIMECOL"], kind, "time column")
    if len(time) != 1:
        raise _syntax(f"The time column of window table function {kind} must be one column")
    keys = _descriptor(args["KEY"], kind, "key") if "KEY" in args else ()
    size = interval_ms(args["SIZE"], f"The size of {kind}")
    slide = interval_ms(args["SLIDE"], f"The slide of {kind}") if "SLIDE" in args else size
    offset = interval_ms(args["OFFSET"], f"The offset of {kind}", zero=True) if "OFFSET" in args else 0
    alias = item.args.get("alias")
    return WindowTVF(kind, data, time[0], keys, size, slide, offset, alias, bool(item.meta.get(STREAMING)))


def mark_streaming(item: exp.Expression) -> None:
    """Mark a window table function read as a stream (by ``prepare_stream_query``): its rows then come in
    arrival order (SESSION: in the order sessions close), rather than sorted by time as a relation's."""
    if _call(item) is not None:
        item.meta[STREAMING] = True


def _tvf_tables(tree: exp.Expression) -> list[exp.Table]:
    return [t for t in tree.find_all(exp.Table) if _call(t) is not None]


def rewrite_window_tvfs(tree: exp.Expression) -> exp.Expression:
    """``tree`` (unchanged when it calls none) with every window table function replaced by a derived table."""
    if not _tvf_tables(tree):
        return tree
    tree = tree.copy()
    for table in reversed(_tvf_tables(tree)):  # innermost first
        tvf = window_tvf(table)
        assert tvf is not None
        table.replace(_expand(tvf))
    return tree


def _column(tvf: WindowTVF, table: str = "__mk_in") -> str:
    return exp.column(tvf.time.this.copy(), table=table).sql(dialect=DIALECT)


def _expand(tvf: WindowTVF) -> exp.Subquery:
    t = _column(tvf)
    if tvf.kind == "TUMBLE":
        start = start_sql(t, tvf.size, tvf.offset)
        text = (
            f"SELECT __mk_in.*, {start} AS window_start, date_add('millisecond', {tvf.size}, {start}) AS window_end "
            f"FROM __mk_data AS __mk_in WHERE {t} IS NOT NULL"
        )
    elif tvf.kind == "HOP":
        last = start_sql(t, tvf.slide, tvf.offset)
        start = f"date_add('millisecond', -(CAST(__mk_hop.__mk_k AS BIGINT) * {tvf.slide}), {last})"
        candidates = ", ".join(str(k) for k in reversed(range(-(-tvf.size // tvf.slide))))  # ascending starts
        text = (
            f"SELECT __mk_in.*, {start} AS window_start, date_add('millisecond', {tvf.size}, {start}) AS window_end "
            f"FROM __mk_data AS __mk_in CROSS JOIN UNNEST(ARRAY[{candidates}]) AS __mk_hop(__mk_k) "
            f"WHERE {t} IS NOT NULL AND {t} < date_add('millisecond', {tvf.size}, {start})"
        )
    else:
        on = [f"__mk_s.__mk_k{i} IS NOT DISTINCT FROM __mk_in.{k.sql(dialect=DIALECT)}" for i, k in enumerate(tvf.keys)]
        on += [f"{t} >= __mk_s.__mk_ws", f"{t} < __mk_s.__mk_we"]
        text = (
            "SELECT __mk_in.*, __mk_s.__mk_ws AS window_start, __mk_s.__mk_we AS window_end "
            f"FROM __mk_data AS __mk_in JOIN __mk_sessions AS __mk_s ON {' AND '.join(on)}"
        )
    if not tvf.streaming:  # a relation's rows in the order of its (monotonic) input, as Calcite gives them
        text += f" ORDER BY {t}, window_start"
    query = sqlglot.parse_one(text, read=DIALECT)
    for placeholder in [n for n in query.find_all(exp.Table) if n.name in ("__mk_data", "__mk_sessions")]:
        if placeholder.name == "__mk_data":
            placeholder.replace(tvf.data.this.copy().subquery("__mk_in"))
        else:
            placeholder.replace(_sessions(tvf).subquery("__mk_s"))
    out = query.subquery()
    if tvf.alias is not None:
        out.set("alias", tvf.alias.copy())
    return out


def _sessions(tvf: WindowTVF) -> exp.Select:
    keys = ", ".join(f"__mk_in.{k.sql(dialect=DIALECT)} AS __mk_k{i}" for i, k in enumerate(tvf.keys))
    t = _column(tvf)
    rows = sqlglot.parse_one(
        f"SELECT {keys + ', ' if keys else ''}{t} AS __mk_t FROM __mk_data AS __mk_in WHERE {t} IS NOT NULL",
        read=DIALECT,
    )
    placeholder = next(n for n in rows.find_all(exp.Table) if n.name == "__mk_data")
    placeholder.replace(tvf.data.this.copy().subquery("__mk_in"))
    assert isinstance(rows, exp.Select)
    return sessions_query(rows, len(tvf.keys), tvf.size)
