"""Rewrite handlers for Trino's date and time functions beyond date_add/date_diff/date_trunc/extract.

date_format (MySQL specifiers) and format_datetime (Joda patterns) are read here, at translation time, and
rebuilt from Spark's ``date_format`` with java.time patterns (quoted literals, so no character is misread) plus
computed fields Spark's patterns lack (ISO week and week-year); date_parse builds a regular expression mirroring
Joda's parser (at most N digits per field, no backtracking, case variants of names) and makes the timestamp from
the fields it captures. All round or truncate to milliseconds as Trino does. Also to_unixtime, from_unixtime,
to_iso8601, to_milliseconds, millisecond, year_of_week, date, current_timezone, and with_timezone /
at_timezone to UTC (timestamp with time zone values are UTC instants on Spark). Registered in ``HANDLERS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode

from ._spark_build import _case, _cast, _checked, _dup, _failed, _fn, _is_null, _lit
from ._spark_handlers_casts import _convert, _round_timestamp
from ._spark_rewrite import _Handler, _need, _Out, _registrar, _Rewriter
from ._spark_types import _T, DATE, _not_supported, _timestamp, expect_args, is_string, is_temporal
from ._spark_zones import zoned_to_instant

HANDLERS: dict[Any, _Handler] = {}
_handles = _registrar(HANDLERS)
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT

# A formatted value is a list of pieces: ("pattern", java.time pattern letters), ("text", literal text),
# ("field", a builder of a Spark string expression from the timestamp), ("error", Trino's message).
_Piece = tuple[str, Any]


def _zpad(value: exp.Expr, width: int) -> exp.Expr:
    """``value`` as decimal text, zero-padded to at least ``width`` digits (never cut, unlike LPAD)."""
    text = _cast(value, "STRING")
    return _fn(
        "IF",
        exp.GTE(this=exp.Length(this=text), expression=_lit(width)),
        text.copy(),
        _fn("LPAD", text.copy(), _lit(width), _lit("0")),
    )


def _week(ts: exp.Expr) -> exp.Expr:
    return _fn("WEEKOFYEAR", ts)


def _week_year(ts: exp.Expr) -> exp.Expr:
    return exp.Extract(this=exp.var("YEAROFWEEK"), expression=ts)


def _iso_dow(ts: exp.Expr) -> exp.Expr:
    return exp.Add(this=_fn("WEEKDAY", ts), expression=_lit(1))


def _field(build: Callable[[exp.Expr], exp.Expr], width: int) -> _Piece:
    return ("field", lambda ts: _zpad(build(ts), width))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _render(pieces: list[_Piece], ts: exp.Expr) -> exp.Expr:
    """The Spark expression concatenating the pieces: a run of pattern letters and literal text becomes one
    ``date_format`` with the text quoted (a run of text alone, a literal); computed fields stand alone."""
    parts: list[exp.Expr] = []
    run: list[_Piece] = []

    def flush() -> None:
        if any(kind == "pattern" for kind, _ in run):
            pattern, text = "", ""
            for kind, value in run + [("pattern", "")]:  # adjacent texts are quoted together ('a''b' is a'b)
                if kind == "text":
                    text += value
                    continue
                pattern += (_quote(text) if text else "") + value
                text = ""
            parts.append(_fn("DATE_FORMAT", _dup(ts), _lit(pattern)))
        elif run:
            parts.append(_lit("".join(value for _, value in run)))
        run.clear()

    for piece in pieces:
        if piece[0] in ("pattern", "text"):
            run.append(piece)
        else:
            flush()
            parts.append(piece[1](_dup(ts)))
    flush()
    if not parts:
        return _lit("")
    return parts[0] if len(parts) == 1 else _fn("CONCAT", *parts)


def _millis(ts: exp.Expr, src: _T) -> exp.Expr:
    """The timestamp rounded to milliseconds, as Trino's formatting functions do."""
    if src == DATE:
        return _cast(ts, "TIMESTAMP_NTZ")
    if src.p is not None and src.p <= 3:
        return ts
    return _round_timestamp(ts, 3, tz=src.name != "timestamp")


def _format(
    node: exp.Anonymous, types: dict[str, Any], safe: bool, name: str, read: Callable[[str, _T], list[_Piece]]
) -> _Out:
    args = list(node.expressions)
    if len(args) != 2:
        raise _not_supported(f"{name} takes two arguments")
    ts, fmt = args
    src, tfmt = list(types["expressions"])
    expect_args(name, [src, tfmt], f"{name}(timestamp(p), varchar(x))", is_temporal, is_string)
    _need(src, name)
    if isinstance(fmt, exp.Null):
        return _cast(exp.Null(), "STRING"), None
    if not (isinstance(fmt, exp.Literal) and fmt.is_string):
        raise _not_supported(f"{name} needs a constant format on Spark")
    pieces = read(fmt.this, src)
    errors = [p[1] for p in pieces if p[0] == "error"]
    if errors:
        return _checked(exp.Null(), [ts], [(exp.true(), _BAD, errors[0])], safe)
    value = _render(pieces, _millis(ts, src))
    return _case([(_is_null(ts), exp.Null())], value), None


# ---- MySQL formats (date_format, date_parse)

_MYSQL: dict[str, list[_Piece]] = {
    "a": [("pattern", "EEE")],
    "b": [("pattern", "MMM")],
    "c": [("pattern", "M")],
    "d": [("pattern", "dd")],
    "e": [("pattern", "d")],
    "f": [("pattern", "SSSSSS")],
    "H": [("pattern", "HH")],
    "h": [("pattern", "hh")],
    "I": [("pattern", "hh")],
    "i": [("pattern", "mm")],
    "j": [("pattern", "DDD")],
    "k": [("pattern", "H")],
    "l": [("pattern", "h")],
    "M": [("pattern", "MMMM")],
    "m": [("pattern", "MM")],
    "p": [("pattern", "a")],
    "r": [
        ("pattern", "hh"),
        ("text", ":"),
        ("pattern", "mm"),
        ("text", ":"),
        ("pattern", "ss"),
        ("text", " "),
        ("pattern", "a"),
    ],
    "S": [("pattern", "ss")],
    "s": [("pattern", "ss")],
    "T": [("pattern", "HH"), ("text", ":"), ("pattern", "mm"), ("text", ":"), ("pattern", "ss")],
    "v": [_field(_week, 2)],
    "x": [_field(_week_year, 4)],
    "W": [("pattern", "EEEE")],
    "Y": [("pattern", "yyyy")],
    "y": [("pattern", "yy")],
}
_MYSQL_UNSUPPORTED = set("wUuVXD")


def _mysql_tokens(fmt: str) -> list[tuple[str, str]]:
    """("spec", letter) and ("text", char) items of a MySQL format, as Trino reads it (``%x`` of another
    letter is the letter itself; a trailing ``%`` is dropped)."""
    out, escaped = [], False
    for c in fmt:
        if escaped:
            out.append(("spec", c) if c in _MYSQL or c in _MYSQL_UNSUPPORTED else ("text", c))
            escaped = False
        elif c == "%":
            escaped = True
        else:
            out.append(("text", c))
    return out


def _read_mysql(fmt: str, src: _T) -> list[_Piece]:
    pieces: list[_Piece] = []
    for kind, c in _mysql_tokens(fmt):
        if kind == "text":
            pieces.append(("text", c))
        elif c in _MYSQL_UNSUPPORTED:
            return [("error", f"%{c} not supported in date format string")]
        else:
            pieces.extend(_MYSQL[c])
    return pieces


@_handles("date_format")
def _date_format(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _format(node, types, safe, "date_format", _read_mysql)


# ---- Joda patterns (format_datetime)


def _joda_tokens(pattern: str) -> list[tuple[str, str]]:
    """("letters", run of one letter) and ("text", literal) tokens of a Joda pattern."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c.isascii() and c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            out.append(("letters", pattern[i:j]))
            i = j
        elif c == "'":
            j, text = i + 1, ""
            while j < n:
                if pattern[j] == "'":
                    if pattern[j + 1 : j + 2] == "'":
                        text += "'"
                        j += 2
                        continue
                    j += 1
                    break
                text += pattern[j]
                j += 1
            out.append(("text", "'" if text == "" and j == i + 2 else text))  # '' alone is a quote
            i = j
        else:
            j = i
            while j < n and not (pattern[j].isascii() and pattern[j].isalpha()) and pattern[j] != "'":
                j += 1
            out.append(("text", pattern[i:j]))
            i = j
    return out


def _hour_field(letter: str) -> Callable[[exp.Expr], exp.Expr]:
    def hour(ts: exp.Expr) -> exp.Expr:
        h = _fn("HOUR", ts)
        if letter == "h":
            return exp.Add(
                this=exp.Mod(this=exp.Paren(this=exp.Add(this=h, expression=_lit(11))), expression=_lit(12)),
                expression=_lit(1),
            )
        if letter == "K":
            return exp.Mod(this=h, expression=_lit(12))
        if letter == "k":
            return _fn("IF", exp.EQ(this=h, expression=_lit(0)), _lit(24), h.copy())
        return h

    return hour


_NUMERIC: dict[str, Callable[[exp.Expr], exp.Expr]] = {
    "d": lambda ts: _fn("DAY", ts),
    "H": _hour_field("H"),
    "h": _hour_field("h"),
    "K": _hour_field("K"),
    "k": _hour_field("k"),
    "m": lambda ts: _fn("MINUTE", ts),
    "s": lambda ts: _fn("SECOND", ts),
}


def _joda_piece(letters: str, src: _T) -> _Piece:
    c, n = letters[0], len(letters)
    zoned = src.name == "timestamp with time zone"
    if c == "G":
        return ("pattern", "G")
    if c in "yY":
        return ("pattern", "yy" if n == 2 else "y" * n)
    if c == "x":
        if n == 2:
            return _field(lambda ts: _fn("PMOD", _week_year(ts), _lit(100)), 2)
        return _field(_week_year, n)
    if c == "w":
        return _field(_week, n)
    if c == "e":
        return _field(_iso_dow, n)
    if c == "E":
        return ("pattern", "EEEE" if n >= 4 else "EEE")
    if c == "D":
        return ("pattern", "D" * n) if n <= 3 else _field(lambda ts: _fn("DAYOFYEAR", ts), n)
    if c == "M":
        return ("pattern", "MMMM" if n >= 4 else "M" * n)
    if c in _NUMERIC:
        return ("pattern", c * n) if n <= 2 else _field(_NUMERIC[c], n)
    if c == "a":
        return ("pattern", "a")
    if c == "S":
        if n > 9:
            raise _not_supported("format_datetime with more than 9 fraction digits is not supported")
        return ("pattern", "S" * n)
    if c in "zZ":
        if not zoned:
            return (
                "error",
                "format_datetime for TIMESTAMP type, cannot use 'Z' nor 'z' in format, as this type does not contain TZ information",
            )
        if c == "z":
            return ("text", "UTC" if n < 4 else "Coordinated Universal Time")
        return ("text", {1: "+0000", 2: "+00:00"}.get(n, "UTC"))
    if c == "C":
        raise _not_supported("format_datetime with the century field C is not supported")
    return ("error", f"Illegal pattern component: {letters}")


def _read_joda(pattern: str, src: _T) -> list[_Piece]:
    pieces = [("text", value) if kind == "text" else _joda_piece(value, src) for kind, value in _joda_tokens(pattern)]
    errors = [p for p in pieces if p[0] == "error"]
    return errors[:1] or pieces


@_handles("format_datetime")
def _format_datetime(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _format(node, types, safe, "format_datetime", _read_joda)


# ---- date_parse

_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
]  # fmt: skip
# Joda's parsers: at most N digits (a numeric field does not backtrack), names in their own, lower or upper case
_DIGITS = {"Y": r"([+-]?\d{1,4}+)", "m": r"(\d{1,2}+)", "c": r"(\d{1,2}+)", "d": r"(\d{1,2}+)", "e": r"(\d{1,2}+)",
           "H": r"(\d{1,2}+)", "k": r"(\d{1,2}+)", "h": r"(\d{1,2}+)", "I": r"(\d{1,2}+)", "l": r"(\d{1,2}+)",
           "i": r"(\d{1,2}+)", "s": r"(\d{1,2}+)", "S": r"(\d{1,2}+)", "f": r"(\d{1,9}+)", "j": r"(\d{1,3}+)"}  # fmt: skip
_FIELD = {"Y": "year", "m": "month", "c": "month", "d": "day", "e": "day", "H": "hour", "k": "hour", "h": "hour12",
          "I": "hour12", "l": "hour12", "i": "minute", "s": "second", "S": "second", "f": "fraction", "j": "doy",
          "b": "month_name", "M": "month_name", "p": "halfday"}  # fmt: skip


def _names(words: list[str]) -> str:
    variants = {v for w in words for v in (w, w.lower(), w.upper())}
    return "((?>" + "|".join(sorted(variants, key=lambda v: (-len(v), v))) + "))"


_NAME_PATTERNS = {"b": _names(_MONTHS + [m[:3] for m in _MONTHS]), "M": _names(_MONTHS + [m[:3] for m in _MONTHS]),
                  "p": _names(["AM", "PM"])}  # fmt: skip


def _parse_plan(fmt: str) -> tuple[str, dict[str, int]]:
    """The regular expression a Joda parser of the MySQL format ``fmt`` accepts, and the group of each field."""
    regex, fields, group = ["^"], {}, 0
    tokens: list[tuple[str, str]] = []
    for kind, c in _mysql_tokens(fmt):
        if kind == "spec" and c == "T":
            tokens += [("spec", "H"), ("text", ":"), ("spec", "i"), ("text", ":"), ("spec", "s")]
        elif kind == "spec" and c == "r":
            tokens += [
                ("spec", "h"),
                ("text", ":"),
                ("spec", "i"),
                ("text", ":"),
                ("spec", "s"),
                ("text", " "),
                ("spec", "p"),
            ]
        else:
            tokens.append((kind, c))
    for kind, c in tokens:
        if kind == "text":
            regex.append(re.escape(c) if c.isascii() else c)
            continue
        if c in _MYSQL_UNSUPPORTED:
            raise _PlanError(f"%{c} not supported in date format string")
        if c not in _FIELD:
            raise _not_supported(f"date_parse with %{c} is not supported on Spark")
        name = _FIELD[c]
        if name in fields:
            raise _not_supported(f"date_parse with the {name} field twice is not supported")
        group += 1
        fields[name] = group
        regex.append(_DIGITS.get(c) or _NAME_PATTERNS[c])
    regex.append("$")
    if "hour12" in fields and "halfday" not in fields:
        raise _not_supported("date_parse of a 12-hour clock without %p is not supported")
    if "halfday" in fields and "hour12" not in fields:
        raise _not_supported("date_parse of %p without a 12-hour clock is not supported")
    if "doy" in fields and ({"month", "month_name", "day"} & fields.keys()):
        raise _not_supported("date_parse of a day of the year with a month or day is not supported")
    if "month" in fields and "month_name" in fields:
        raise _not_supported("date_parse with the month field twice is not supported")
    return "".join(regex), fields


class _PlanError(Exception):
    pass


@_handles("date_parse")
def _date_parse(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    args = list(node.expressions)
    if len(args) != 2:
        raise _not_supported("date_parse takes two arguments")
    s, fmt = args
    expect_args("date_parse", list(types["expressions"]), "date_parse(varchar(x), varchar(y))", is_string, is_string)
    if isinstance(fmt, exp.Null):
        return _cast(exp.Null(), "TIMESTAMP_NTZ"), None
    if not (isinstance(fmt, exp.Literal) and fmt.is_string):
        raise _not_supported("date_parse needs a constant format on Spark")
    try:
        regex, fields = _parse_plan(fmt.this)
    except _PlanError as e:
        return _checked(exp.Null(), [s], [(exp.true(), _BAD, str(e))], safe)

    def part(name: str, default: int) -> exp.Expr:
        if name not in fields:
            return _lit(default)
        return _cast(_fn("REGEXP_EXTRACT", _dup(s), _lit(regex), _lit(fields[name])), "INT")

    month = part("month", 1)
    if "month_name" in fields:
        name = _fn(
            "LOWER",
            _fn("SUBSTRING", _fn("REGEXP_EXTRACT", _dup(s), _lit(regex), _lit(fields["month_name"])), _lit(1), _lit(3)),
        )
        position = exp.Paren(
            this=exp.Sub(this=_fn("INSTR", _lit("janfebmaraprmayjunjulaugsepoctnovdec"), name), expression=_lit(1))
        )
        month = _cast(exp.Add(this=exp.IntDiv(this=position, expression=_lit(3)), expression=_lit(1)), "INT")
    hour = part("hour", 0)
    if "hour12" in fields:
        pm = _fn("LOWER", _fn("REGEXP_EXTRACT", _dup(s), _lit(regex), _lit(fields["halfday"])))
        hour = exp.Add(
            this=exp.Mod(this=part("hour12", 0), expression=_lit(12)),
            expression=_fn("IF", exp.EQ(this=pm, expression=_lit("pm")), _lit(12), _lit(0)),
        )
    fraction = _lit(0)
    if "fraction" in fields:
        digits = _fn("REGEXP_EXTRACT", _dup(s), _lit(regex), _lit(fields["fraction"]))
        fraction = _cast(_fn("SUBSTRING", _fn("RPAD", digits, _lit(3), _lit("0")), _lit(1), _lit(3)), "INT")
    second = part("second", 0)
    seconds = _cast(
        exp.Add(this=second, expression=exp.Div(this=fraction, expression=_lit(1000.0), typed=False, safe=False)),
        "DECIMAL(8,6)",
    )
    year = part("year", 1970)
    make = "TRY_MAKE_TIMESTAMP_NTZ" if safe else "MAKE_TIMESTAMP_NTZ"  # inside TRY an invalid date is NULL
    stamp = _fn(make, year, month, part("day", 1) if "doy" not in fields else _lit(1), hour, part("minute", 0), seconds)
    if "doy" in fields:
        stamp = _fn("TIMESTAMPADD", exp.var("DAY"), exp.Sub(this=part("doy", 1), expression=_lit(1)), stamp)
    checks: list[tuple[exp.Expr, ErrorCode, Any]] = [
        (
            exp.not_(exp.RegexpLike(this=_dup(s), expression=_lit(regex)), copy=False),
            _BAD,
            _fn("CONCAT", _lit('Invalid format: "'), _dup(s), _lit('"')),
        )
    ]
    ranges = {
        "second": (0, 59),
        "minute": (0, 59),
        "hour": (0, 23),
        "hour12": (1, 12),
        "month": (1, 12),
        "day": (1, 31),
    }
    for field, (low, high) in ranges.items():
        if field in fields:
            value = part(field, 0)
            bad = exp.not_(exp.Between(this=value, low=_lit(low), high=_lit(high)), copy=False)
            checks.append(
                (
                    bad,
                    _BAD,
                    _fn(
                        "CONCAT",
                        _lit("Value "),
                        _cast(value.copy(), "STRING"),
                        _lit(f" for {field} must be in the range [{low},{high}]"),
                    ),
                )
            )
    if "doy" in fields:
        days = _fn(
            "IF",
            exp.EQ(
                this=_fn("DAY", _fn("LAST_DAY", _fn("MAKE_DATE", part("year", 1970), _lit(2), _lit(1)))),
                expression=_lit(29),
            ),
            _lit(366),
            _lit(365),
        )
        bad = exp.not_(exp.Between(this=part("doy", 1), low=_lit(1), high=days), copy=False)
        checks.append((bad, _BAD, "Value for dayOfYear is out of range"))
    value, fail = _checked(stamp, [s], checks, safe)
    if safe:
        fail = exp.or_(fail, _failed(value, s), copy=False) if fail is not None else _failed(value, s)
    return value, fail


# ---- unix time, ISO 8601, intervals


@_handles(exp.TimeToUnix)
def _to_unixtime(rw: _Rewriter, node: exp.TimeToUnix, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino: epoch milliseconds / 1000.0 plus the sub-millisecond fraction / 1e12 (in picoseconds)."""
    src = _need(types["this"], "to_unixtime")
    expect_args(
        "to_unixtime", [src], "to_unixtime(timestamp(p) with time zone)", lambda u: u.name.startswith("timestamp")
    )
    micros = _fn("UNIX_MICROS", _cast(node.this, "TIMESTAMP"))
    below = _fn("PMOD", micros, _lit(1000))
    millis = exp.IntDiv(this=exp.Paren(this=exp.Sub(this=micros.copy(), expression=below)), expression=_lit(1000))
    seconds = exp.Div(this=_cast(millis, "DOUBLE"), expression=_lit(1000.0), typed=False, safe=False)
    fraction = exp.Div(
        this=_cast(exp.Mul(this=below.copy(), expression=_lit(1000000)), "DOUBLE"),
        expression=_lit(1e12),
        typed=False,
        safe=False,
    )
    return exp.Add(this=seconds, expression=fraction), None


@_handles(exp.UnixToTime)
def _from_unixtime(rw: _Rewriter, node: exp.UnixToTime, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Math.round(x * 1000) milliseconds (NaN is 0), within Trino's packed range of 2^51 milliseconds."""
    if any(node.args.get(k) is not None for k in ("zone", "hours", "minutes", "scale", "format")):
        raise _not_supported("from_unixtime with a time zone or offset is not supported (values are UTC on Spark)")
    x = node.this
    expect_args("from_unixtime", [types["this"]], "from_unixtime(double)", lambda u: u.numeric)
    scaled = exp.Mul(this=_cast(_dup(x), "DOUBLE"), expression=_lit(1000))
    millis = _fn("IF", _fn("ISNAN", _dup(x)), _lit(0.0), _fn("FLOOR", exp.Add(this=scaled, expression=_lit(0.5))))
    # floor(scaled + 0.5) within [-2^51, 2^51 - 1], tested before FLOOR (a BIGINT on Spark) can overflow
    out_of_range = exp.and_(
        exp.not_(_fn("ISNAN", _dup(x)), copy=False),
        exp.or_(
            exp.LT(this=scaled.copy(), expression=_lit(-(2**51) - 0.5)),
            exp.GTE(this=scaled.copy(), expression=_lit(2**51 - 0.5)),
            copy=False,
        ),
        copy=False,
    )
    value = _fn("TIMESTAMP_MILLIS", _cast(millis, "BIGINT"))
    message = _fn("CONCAT", _lit("Millis overflow: "), _cast(_dup(x), "STRING"))
    return _checked(value, [x], [(out_of_range, _BAD, message)], safe)


@_handles("to_iso8601")
def _to_iso8601(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    args = list(node.expressions)
    if len(args) != 1:
        raise _not_supported("to_iso8601 takes one argument")
    (x,) = args
    src = _need(list(types["expressions"])[0], "to_iso8601")
    if src == DATE:
        return _fn("DATE_FORMAT", x, _lit("yyyy-MM-dd")), None
    if not src.name.startswith("timestamp"):
        raise _not_supported(f"to_iso8601({src}) is not supported")
    p = 3 if src.p is None else src.p
    pattern = "yyyy-MM-dd'T'HH:mm:ss" + ("." + "S" * p if p else "") + ("'Z'" if src.name != "timestamp" else "")
    return _fn("DATE_FORMAT", x, _lit(pattern)), None


@_handles("to_milliseconds")
def _to_milliseconds(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    (x,) = list(node.expressions) or [None]
    src = _need(list(types["expressions"])[0], "to_milliseconds")
    if src.name != "interval day to second":
        raise _not_supported(f"to_milliseconds({src}) is not supported")
    micros = _fn("UNIX_MICROS", exp.Add(this=_fn("TIMESTAMP_MICROS", _lit(0)), expression=x))
    return exp.IntDiv(this=micros, expression=_lit(1000)), None


# ---- fields, conversions, zones


@_handles("millisecond")
def _millisecond(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    (x,) = list(node.expressions)
    src = _need(list(types["expressions"])[0], "millisecond")
    if src == DATE:
        return _cast(_lit(0), "BIGINT"), None
    if not src.name.startswith("timestamp"):
        raise _not_supported(f"millisecond({src}) is not supported")
    fraction = exp.Mul(this=_fn("DATE_PART", _lit("SECOND"), x), expression=_lit(1000))
    return _cast(_fn("PMOD", _fn("FLOOR", fraction), _lit(1000)), "BIGINT"), None


@_handles(exp.YearOfWeek, "yow")
def _year_of_week(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
    src = _need(types["expressions"][0] if isinstance(node, exp.Anonymous) else types["this"], "year_of_week")
    if not src.temporal:
        raise _not_supported(f"year_of_week({src}) is not supported")
    return _cast(_week_year(x), "BIGINT"), None


@_handles(exp.Date)
def _date(rw: _Rewriter, node: exp.Date, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.args.get("zone") is not None or node.expressions:
        raise _not_supported("date() takes one argument")
    return _convert(node.this, types["this"], DATE, safe)


@_handles(exp.CurrentTimezone)
def _current_timezone(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _lit("UTC"), None


def _zone_literal(zone: exp.Expr, name: str) -> None:
    if not (isinstance(zone, exp.Literal) and zone.is_string):
        raise _not_supported(f"{name} with a zone that is not a literal is not supported")


@_handles("with_timezone")
def _with_timezone(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """``with_timezone(timestamp, zone)``: the timestamp's date-time in ``zone`` (its zone kept in ``t``)."""
    ts, zone = list(node.expressions)
    _zone_literal(zone, "with_timezone")
    expect_args(
        "with_timezone",
        list(types["expressions"]),
        "with_timezone(timestamp(p), varchar(x))",
        lambda u: u.name == "timestamp",
        is_string,
    )
    return (_cast(ts, "TIMESTAMP") if t.zone is None else zoned_to_instant(ts, t.zone)), None


@_handles("at_timezone")
def _at_timezone(rw: _Rewriter, node: exp.Anonymous, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """``at_timezone(timestamp with time zone, zone)``: the same instant, in ``zone``."""
    ts, zone = list(node.expressions)
    _zone_literal(zone, "at_timezone")
    expect_args(
        "at_timezone",
        list(types["expressions"]),
        "at_timezone(timestamp(p) with time zone, varchar(x))",
        lambda u: u.name.startswith("timestamp"),
        is_string,
    )
    return _instant(ts, types["expressions"][0]), None


@_handles(exp.AtTimeZone)
def _at_time_zone(rw: _Rewriter, node: exp.AtTimeZone, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """``x AT TIME ZONE zone``: the instant of ``x`` (a ``timestamp`` is one in the session's zone), in ``zone``."""
    _zone_literal(node.args["zone"], "AT TIME ZONE")
    src = types["this"]
    if not (isinstance(src, _T) and (src.name.startswith("timestamp") or src.name == "unknown")):
        raise _not_supported(f"AT TIME ZONE of {src} is not supported")
    return _instant(node.this, src), None


def _instant(x: exp.Expr, src: _T) -> exp.Expr:
    """``x`` as an instant (Spark TIMESTAMP): a ``timestamp`` is read in its session's zone (UTC, or the user's)."""
    if src.name == "timestamp with time zone":
        return x
    return zoned_to_instant(x, src.zone) if src.zoned and src.zone is not None else _cast(x, "TIMESTAMP")


def result_types() -> dict[str, _T]:
    """Types of the functions above that sqlglot parses as anonymous calls (for ``_spark_infer``)."""
    return {"date_parse": _timestamp(3)}
