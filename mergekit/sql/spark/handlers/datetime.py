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
from mergekit.sql.spark.build import case_when, cast_to, checked, dup, failed, is_null, lit, spark_fn
from mergekit.sql.spark.rewrite import Out, Rewriter, call_args, handler_registry, need_type
from mergekit.sql.spark.types import DATE, TrinoType, expect_args, is_string, is_temporal, not_supported, timestamp_type
from mergekit.sql.spark.zones import zoned_to_instant

from .casts import convert_value, round_timestamp

HANDLERS, _handles = handler_registry()
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT

# A formatted value is a list of pieces: ("pattern", java.time pattern letters), ("text", literal text),
# ("field", a builder of a Spark string expression from the timestamp), ("error", Trino's message).
_Piece = tuple[str, Any]


def _zpad(value: exp.Expr, width: int) -> exp.Expr:
    """``value`` as decimal text, zero-padded to at least ``width`` digits (never cut, unlike LPAD)."""
    text = cast_to(value, "STRING")
    return spark_fn(
        "IF",
        exp.GTE(this=exp.Length(this=text), expression=lit(width)),
        text.copy(),
        spark_fn("LPAD", text.copy(), lit(width), lit("0")),
    )


def _week(ts: exp.Expr) -> exp.Expr:
    return spark_fn("WEEKOFYEAR", ts)


def _week_year(ts: exp.Expr) -> exp.Expr:
    return exp.Extract(this=exp.var("YEAROFWEEK"), expression=ts)


def _iso_dow(ts: exp.Expr) -> exp.Expr:
    return exp.Add(this=spark_fn("WEEKDAY", ts), expression=lit(1))


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
            parts.append(spark_fn("DATE_FORMAT", dup(ts), lit(pattern)))
        elif run:
            parts.append(lit("".join(value for _, value in run)))
        run.clear()

    for piece in pieces:
        if piece[0] in ("pattern", "text"):
            run.append(piece)
        else:
            flush()
            parts.append(piece[1](dup(ts)))
    flush()
    if not parts:
        return lit("")
    return parts[0] if len(parts) == 1 else spark_fn("CONCAT", *parts)


def _millis(ts: exp.Expr, src: TrinoType) -> exp.Expr:
    """The timestamp rounded to milliseconds, as Trino's formatting functions do."""
    if src == DATE:
        return cast_to(ts, "TIMESTAMP_NTZ")
    if src.p is not None and src.p <= 3:
        return ts
    return round_timestamp(ts, 3, tz=src.name != "timestamp")


def _format(
    node: exp.Anonymous, types: dict[str, Any], safe: bool, name: str, read: Callable[[str, TrinoType], list[_Piece]]
) -> Out:
    ts, fmt = call_args(node, name, 2)
    src, tfmt = list(types["expressions"])
    expect_args(name, [src, tfmt], f"{name}(timestamp(p), varchar(x))", is_temporal, is_string)
    need_type(src, name)
    if isinstance(fmt, exp.Null):
        return cast_to(exp.Null(), "STRING"), None
    if not (isinstance(fmt, exp.Literal) and fmt.is_string):
        raise not_supported(f"{name} needs a constant format on Spark")
    pieces = read(fmt.this, src)
    errors = [p[1] for p in pieces if p[0] == "error"]
    if errors:
        return checked(exp.Null(), [ts], [(exp.true(), _BAD, errors[0])], safe)
    value = _render(pieces, _millis(ts, src))
    return case_when([(is_null(ts), exp.Null())], value), None


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


def _read_mysql(fmt: str, src: TrinoType) -> list[_Piece]:
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
def _date_format(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
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
        h = spark_fn("HOUR", ts)
        if letter == "h":
            return exp.Add(
                this=exp.Mod(this=exp.Paren(this=exp.Add(this=h, expression=lit(11))), expression=lit(12)),
                expression=lit(1),
            )
        if letter == "K":
            return exp.Mod(this=h, expression=lit(12))
        if letter == "k":
            return spark_fn("IF", exp.EQ(this=h, expression=lit(0)), lit(24), h.copy())
        return h

    return hour


_NUMERIC: dict[str, Callable[[exp.Expr], exp.Expr]] = {
    "d": lambda ts: spark_fn("DAY", ts),
    "H": _hour_field("H"),
    "h": _hour_field("h"),
    "K": _hour_field("K"),
    "k": _hour_field("k"),
    "m": lambda ts: spark_fn("MINUTE", ts),
    "s": lambda ts: spark_fn("SECOND", ts),
}


def _joda_piece(letters: str, src: TrinoType) -> _Piece:
    c, n = letters[0], len(letters)
    zoned = src.name == "timestamp with time zone"
    if c == "G":
        return ("pattern", "G")
    if c in "yY":
        return ("pattern", "yy" if n == 2 else "y" * n)
    if c == "x":
        if n == 2:
            return _field(lambda ts: spark_fn("PMOD", _week_year(ts), lit(100)), 2)
        return _field(_week_year, n)
    if c == "w":
        return _field(_week, n)
    if c == "e":
        return _field(_iso_dow, n)
    if c == "E":
        return ("pattern", "EEEE" if n >= 4 else "EEE")
    if c == "D":
        return ("pattern", "D" * n) if n <= 3 else _field(lambda ts: spark_fn("DAYOFYEAR", ts), n)
    if c == "M":
        return ("pattern", "MMMM" if n >= 4 else "M" * n)
    if c in _NUMERIC:
        return ("pattern", c * n) if n <= 2 else _field(_NUMERIC[c], n)
    if c == "a":
        return ("pattern", "a")
    if c == "S":
        if n > 9:
            raise not_supported("format_datetime with more than 9 fraction digits is not supported")
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
        raise not_supported("format_datetime with the century field C is not supported")
    return ("error", f"Illegal pattern component: {letters}")


def _read_joda(pattern: str, src: TrinoType) -> list[_Piece]:
    pieces = [("text", value) if kind == "text" else _joda_piece(value, src) for kind, value in _joda_tokens(pattern)]
    errors = [p for p in pieces if p[0] == "error"]
    return errors[:1] or pieces


@_handles("format_datetime")
def _format_datetime(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
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
            raise not_supported(f"date_parse with %{c} is not supported on Spark")
        name = _FIELD[c]
        if name in fields:
            raise not_supported(f"date_parse with the {name} field twice is not supported")
        group += 1
        fields[name] = group
        regex.append(_DIGITS.get(c) or _NAME_PATTERNS[c])
    regex.append("$")
    if "hour12" in fields and "halfday" not in fields:
        raise not_supported("date_parse of a 12-hour clock without %p is not supported")
    if "halfday" in fields and "hour12" not in fields:
        raise not_supported("date_parse of %p without a 12-hour clock is not supported")
    if "doy" in fields and ({"month", "month_name", "day"} & fields.keys()):
        raise not_supported("date_parse of a day of the year with a month or day is not supported")
    if "month" in fields and "month_name" in fields:
        raise not_supported("date_parse with the month field twice is not supported")
    return "".join(regex), fields


class _PlanError(Exception):
    pass


@_handles("date_parse")
def _date_parse(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    s, fmt = call_args(node, "date_parse", 2)
    expect_args("date_parse", list(types["expressions"]), "date_parse(varchar(x), varchar(y))", is_string, is_string)
    if isinstance(fmt, exp.Null):
        return cast_to(exp.Null(), "TIMESTAMP_NTZ"), None
    if not (isinstance(fmt, exp.Literal) and fmt.is_string):
        raise not_supported("date_parse needs a constant format on Spark")
    try:
        regex, fields = _parse_plan(fmt.this)
    except _PlanError as e:
        return checked(exp.Null(), [s], [(exp.true(), _BAD, str(e))], safe)

    def part(name: str, default: int) -> exp.Expr:
        if name not in fields:
            return lit(default)
        return cast_to(spark_fn("REGEXP_EXTRACT", dup(s), lit(regex), lit(fields[name])), "INT")

    month = part("month", 1)
    if "month_name" in fields:
        name = spark_fn(
            "LOWER",
            spark_fn(
                "SUBSTRING", spark_fn("REGEXP_EXTRACT", dup(s), lit(regex), lit(fields["month_name"])), lit(1), lit(3)
            ),
        )
        position = exp.Paren(
            this=exp.Sub(this=spark_fn("INSTR", lit("janfebmaraprmayjunjulaugsepoctnovdec"), name), expression=lit(1))
        )
        month = cast_to(exp.Add(this=exp.IntDiv(this=position, expression=lit(3)), expression=lit(1)), "INT")
    hour = part("hour", 0)
    if "hour12" in fields:
        pm = spark_fn("LOWER", spark_fn("REGEXP_EXTRACT", dup(s), lit(regex), lit(fields["halfday"])))
        hour = exp.Add(
            this=exp.Mod(this=part("hour12", 0), expression=lit(12)),
            expression=spark_fn("IF", exp.EQ(this=pm, expression=lit("pm")), lit(12), lit(0)),
        )
    fraction = lit(0)
    if "fraction" in fields:
        digits = spark_fn("REGEXP_EXTRACT", dup(s), lit(regex), lit(fields["fraction"]))
        fraction = cast_to(spark_fn("SUBSTRING", spark_fn("RPAD", digits, lit(3), lit("0")), lit(1), lit(3)), "INT")
    second = part("second", 0)
    seconds = cast_to(
        exp.Add(this=second, expression=exp.Div(this=fraction, expression=lit(1000.0), typed=False, safe=False)),
        "DECIMAL(8,6)",
    )
    year = part("year", 1970)
    make = "TRY_MAKE_TIMESTAMP_NTZ" if safe else "MAKE_TIMESTAMP_NTZ"  # inside TRY an invalid date is NULL
    stamp = spark_fn(
        make, year, month, part("day", 1) if "doy" not in fields else lit(1), hour, part("minute", 0), seconds
    )
    if "doy" in fields:
        stamp = spark_fn("TIMESTAMPADD", exp.var("DAY"), exp.Sub(this=part("doy", 1), expression=lit(1)), stamp)
    checks: list[tuple[exp.Expr, ErrorCode, Any]] = [
        (
            exp.not_(exp.RegexpLike(this=dup(s), expression=lit(regex)), copy=False),
            _BAD,
            spark_fn("CONCAT", lit('Invalid format: "'), dup(s), lit('"')),
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
            bad = exp.not_(exp.Between(this=value, low=lit(low), high=lit(high)), copy=False)
            checks.append(
                (
                    bad,
                    _BAD,
                    spark_fn(
                        "CONCAT",
                        lit("Value "),
                        cast_to(value.copy(), "STRING"),
                        lit(f" for {field} must be in the range [{low},{high}]"),
                    ),
                )
            )
    if "doy" in fields:
        days = spark_fn(
            "IF",
            exp.EQ(
                this=spark_fn("DAY", spark_fn("LAST_DAY", spark_fn("MAKE_DATE", part("year", 1970), lit(2), lit(1)))),
                expression=lit(29),
            ),
            lit(366),
            lit(365),
        )
        bad = exp.not_(exp.Between(this=part("doy", 1), low=lit(1), high=days), copy=False)
        checks.append((bad, _BAD, "Value for dayOfYear is out of range"))
    value, fail = checked(stamp, [s], checks, safe)
    if safe:
        fail = exp.or_(fail, failed(value, s), copy=False) if fail is not None else failed(value, s)
    return value, fail


# ---- unix time, ISO 8601, intervals


@_handles(exp.TimeToUnix)
def _to_unixtime(rw: Rewriter, node: exp.TimeToUnix, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Trino: epoch milliseconds / 1000.0 plus the sub-millisecond fraction / 1e12 (in picoseconds)."""
    src = need_type(types["this"], "to_unixtime")
    expect_args(
        "to_unixtime", [src], "to_unixtime(timestamp(p) with time zone)", lambda u: u.name.startswith("timestamp")
    )
    micros = spark_fn("UNIX_MICROS", cast_to(node.this, "TIMESTAMP"))
    below = spark_fn("PMOD", micros, lit(1000))
    millis = exp.IntDiv(this=exp.Paren(this=exp.Sub(this=micros.copy(), expression=below)), expression=lit(1000))
    seconds = exp.Div(this=cast_to(millis, "DOUBLE"), expression=lit(1000.0), typed=False, safe=False)
    fraction = exp.Div(
        this=cast_to(exp.Mul(this=below.copy(), expression=lit(1000000)), "DOUBLE"),
        expression=lit(1e12),
        typed=False,
        safe=False,
    )
    return exp.Add(this=seconds, expression=fraction), None


@_handles(exp.UnixToTime)
def _from_unixtime(rw: Rewriter, node: exp.UnixToTime, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Math.round(x * 1000) milliseconds (NaN is 0), within Trino's packed range of 2^51 milliseconds."""
    if any(node.args.get(k) is not None for k in ("zone", "hours", "minutes", "scale", "format")):
        raise not_supported("from_unixtime with a time zone or offset is not supported (values are UTC on Spark)")
    x = node.this
    expect_args("from_unixtime", [types["this"]], "from_unixtime(double)", lambda u: u.numeric)
    scaled = exp.Mul(this=cast_to(dup(x), "DOUBLE"), expression=lit(1000))
    millis = spark_fn(
        "IF", spark_fn("ISNAN", dup(x)), lit(0.0), spark_fn("FLOOR", exp.Add(this=scaled, expression=lit(0.5)))
    )
    # floor(scaled + 0.5) within [-2^51, 2^51 - 1], tested before FLOOR (a BIGINT on Spark) can overflow
    out_of_range = exp.and_(
        exp.not_(spark_fn("ISNAN", dup(x)), copy=False),
        exp.or_(
            exp.LT(this=scaled.copy(), expression=lit(-(2**51) - 0.5)),
            exp.GTE(this=scaled.copy(), expression=lit(2**51 - 0.5)),
            copy=False,
        ),
        copy=False,
    )
    value = spark_fn("TIMESTAMP_MILLIS", cast_to(millis, "BIGINT"))
    message = spark_fn("CONCAT", lit("Millis overflow: "), cast_to(dup(x), "STRING"))
    return checked(value, [x], [(out_of_range, _BAD, message)], safe)


@_handles("to_iso8601")
def _to_iso8601(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (x,) = call_args(node, "to_iso8601", 1)
    src = need_type(list(types["expressions"])[0], "to_iso8601")
    if src == DATE:
        return spark_fn("DATE_FORMAT", x, lit("yyyy-MM-dd")), None
    if not src.name.startswith("timestamp"):
        raise not_supported(f"to_iso8601({src}) is not supported")
    p = 3 if src.p is None else src.p
    pattern = "yyyy-MM-dd'T'HH:mm:ss" + ("." + "S" * p if p else "") + ("'Z'" if src.name != "timestamp" else "")
    return spark_fn("DATE_FORMAT", x, lit(pattern)), None


@_handles("to_milliseconds")
def _to_milliseconds(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (x,) = list(node.expressions) or [None]
    src = need_type(list(types["expressions"])[0], "to_milliseconds")
    if src.name != "interval day to second":
        raise not_supported(f"to_milliseconds({src}) is not supported")
    micros = spark_fn("UNIX_MICROS", exp.Add(this=spark_fn("TIMESTAMP_MICROS", lit(0)), expression=x))
    return exp.IntDiv(this=micros, expression=lit(1000)), None


# ---- fields, conversions, zones


@_handles("millisecond")
def _millisecond(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    (x,) = list(node.expressions)
    src = need_type(list(types["expressions"])[0], "millisecond")
    if src == DATE:
        return cast_to(lit(0), "BIGINT"), None
    if not src.name.startswith("timestamp"):
        raise not_supported(f"millisecond({src}) is not supported")
    fraction = exp.Mul(this=spark_fn("DATE_PART", lit("SECOND"), x), expression=lit(1000))
    return cast_to(spark_fn("PMOD", spark_fn("FLOOR", fraction), lit(1000)), "BIGINT"), None


@_handles(exp.YearOfWeek, "yow")
def _year_of_week(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    x = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
    src = need_type(types["expressions"][0] if isinstance(node, exp.Anonymous) else types["this"], "year_of_week")
    if not src.temporal:
        raise not_supported(f"year_of_week({src}) is not supported")
    return cast_to(_week_year(x), "BIGINT"), None


@_handles(exp.Date)
def _date(rw: Rewriter, node: exp.Date, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if node.args.get("zone") is not None or node.expressions:
        raise not_supported("date() takes one argument")
    return convert_value(node.this, types["this"], DATE, safe)


@_handles(exp.CurrentTimezone)
def _current_timezone(rw: Rewriter, node: exp.Expr, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    return lit("UTC"), None


def _zone_call(node: exp.Anonymous, types: dict[str, Any], name: str, accepts: str) -> exp.Expr:
    """The timestamp argument of ``name(ts, zone)``, checked: a literal zone, ``ts`` of a type ``accepts``."""
    ts, zone = list(node.expressions)
    if not (isinstance(zone, exp.Literal) and zone.is_string):
        raise not_supported(f"{name} with a zone that is not a literal is not supported")
    expect_args(
        name,
        list(types["expressions"]),
        f"{name}({accepts}, varchar(x))",
        lambda u: u.name == "timestamp" if accepts == "timestamp(p)" else u.name.startswith("timestamp"),
        is_string,
    )
    return ts


@_handles("with_timezone")
def _with_timezone(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """``with_timezone(timestamp, zone)``: the timestamp's date-time in ``zone`` (its zone kept in ``t``)."""
    ts = _zone_call(node, types, "with_timezone", "timestamp(p)")
    return (cast_to(ts, "TIMESTAMP") if t.zone is None else zoned_to_instant(ts, t.zone)), None


@_handles("at_timezone")
def _at_timezone(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """``at_timezone(timestamp with time zone, zone)``: the same instant, in ``zone``."""
    ts = _zone_call(node, types, "at_timezone", "timestamp(p) with time zone")
    return _instant(ts, types["expressions"][0]), None


@_handles(exp.AtTimeZone)
def _at_time_zone(rw: Rewriter, node: exp.AtTimeZone, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """``x AT TIME ZONE zone``: the instant of ``x`` (a ``timestamp`` is one in the session's zone), in ``zone``."""
    zone = node.args["zone"]
    if not (isinstance(zone, exp.Literal) and zone.is_string):
        raise not_supported("AT TIME ZONE with a zone that is not a literal is not supported")
    src = types["this"]
    if not (isinstance(src, TrinoType) and (src.name.startswith("timestamp") or src.name == "unknown")):
        raise not_supported(f"AT TIME ZONE of {src} is not supported")
    return _instant(node.this, src), None


def _instant(x: exp.Expr, src: TrinoType) -> exp.Expr:
    """``x`` as an instant (Spark TIMESTAMP): a ``timestamp`` is read in its session's zone (UTC, or the user's)."""
    if src.name == "timestamp with time zone":
        return x
    return zoned_to_instant(x, src.zone) if src.zoned and src.zone is not None else cast_to(x, "TIMESTAMP")


def result_types() -> dict[str, TrinoType]:
    """Types of the functions above that sqlglot parses as anonymous calls (for ``_spark_infer``)."""
    return {"date_parse": timestamp_type(3)}
