"""Rewrite handlers for Trino's regular expression functions.

Both engines use Java's syntax (Trino through joni, see the deviations in ``_spark_translate``); what differs is
around the matches: Trino's regexp_extract is NULL without a match or for a group that did not take part in it
(Spark: ''), regexp_position counts code points and is -1 without a match, Trino keeps the empty first piece
of a split at a zero-width match (Java drops it), and after an empty match Trino steps over a whole code point
where Java steps into a surrogate pair. Forms that cannot be matched exactly are refused, at translation time
or (when it depends on the data) with NOT_SUPPORTED at run time. A constant pattern is read here
(``regex_groups``) to know its capturing groups. Registered in ``HANDLERS`` (see ``_spark_rewrite``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from mergekit.errors import ErrorCode
from mergekit.sql.spark.build import case_when, cast_to, checked, dup, int_value, lit, spark_fn, strict_args
from mergekit.sql.spark.rewrite import Out, Rewriter, handler_registry
from mergekit.sql.spark.types import TrinoType, expect_args, is_integral, is_string, not_supported

HANDLERS, _handles = handler_registry()
_BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT
_REFUSED = ErrorCode.NOT_SUPPORTED
_ASTRAL = r"[\x{10000}-\x{10FFFF}]"


# ---- reading a constant pattern


@dataclass(frozen=True)
class Groups:
    """The capturing groups of a Java pattern: ``mandatory[i]`` is True when group ``i + 1`` takes part in every
    match (it is not in an alternative, under a quantifier that allows zero, or in a lookaround)."""

    mandatory: tuple[bool, ...]
    names: frozenset[str]
    backreferences: bool

    @property
    def count(self) -> int:
        return len(self.mandatory)


def regex_groups(pattern: str) -> Groups | None:
    """The groups of ``pattern``, or None when it uses what this reader does not follow (comments mode)."""
    i, n = 0, len(pattern)
    # open groups: [group number or None, optional (lookaround), index into `levels`]
    stack: list[list[Any]] = []
    levels: list[dict[str, Any]] = [{"alt": False, "groups": []}]  # groups directly at each nesting level
    parent: dict[int, int | None] = {}
    optional: dict[int, bool] = {}
    level_of: dict[int, int] = {}
    names: set[str] = set()
    backrefs = False
    count = 0
    while i < n:
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            if nxt.isdigit() and nxt != "0" or nxt == "k":
                backrefs = True
            i += 2
            continue
        if c == "[":
            i = _skip_class(pattern, i)
            continue
        if c == "(":
            kind, length, name = _group_kind(pattern, i)
            if kind == "comments":
                return None
            if kind == "flags":
                i += length
                continue
            number = None
            if kind in ("capturing", "named"):
                count += 1
                number = count
                if name:
                    names.add(name)
                parent[number] = stack[-1][0] if stack else None
                level_of[number] = len(levels) - 1
                optional[number] = any(frame[1] for frame in stack)
                levels[-1]["groups"].append(number)
            stack.append([number, kind == "lookaround", len(levels)])
            levels.append({"alt": False, "groups": []})
            i += length
            continue
        if c == ")" and stack:
            number, _, _ = stack.pop()
            inner = levels.pop()
            if inner["alt"]:
                for g in _descendants(inner, parent):
                    optional[g] = True
            quantified = pattern[i + 1 : i + 2] in ("?", "*") or pattern.startswith("{0", i + 1)
            if quantified:
                for g in _descendants(inner, parent) | ({number} if number else set()):
                    optional[g] = True
            if number is not None:
                levels[-1]["groups"].extend(_descendants(inner, parent))
            else:
                levels[-1]["groups"].extend(inner["groups"])
            i += 1
            continue
        if c == "|":
            levels[-1]["alt"] = True
        i += 1
    if levels[0]["alt"]:
        for g in levels[0]["groups"]:
            optional[g] = True
    return Groups(tuple(not optional.get(g, False) for g in range(1, count + 1)), frozenset(names), backrefs)


def _descendants(level: dict[str, Any], parent: dict[int, int | None]) -> set[int]:
    """The groups inside a level (nested ones were added to it when their own group closed)."""
    return set(level["groups"])


def _skip_class(pattern: str, i: int) -> int:
    """The index after the character class opening at ``i`` (classes nest in Java: ``[a-z&&[^b]]``)."""
    depth, i = 0, i
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            depth += 1
            i += 1
            if pattern[i : i + 1] == "^":
                i += 1
            if pattern[i : i + 1] == "]":  # a ']' first in a class is literal
                i += 1
            continue
        if c == "]":
            depth -= 1
            i += 1
            if depth == 0:
                return i
            continue
        i += 1
    return n


def _group_kind(pattern: str, i: int) -> tuple[str, int, str | None]:
    """What the ``(`` at ``i`` opens, and the length of its opening."""
    if pattern[i + 1 : i + 2] != "?":
        return "capturing", 1, None
    rest = pattern[i + 2 :]
    if rest.startswith(("=", "!")):
        return "lookaround", 3, None
    if rest.startswith(("<=", "<!")):
        return "lookaround", 4, None
    if rest.startswith("<"):
        end = rest.find(">")
        return "named", 3 + end, rest[1:end] if end > 0 else ""
    if rest.startswith((":", ">")):
        return "group", 3, None
    j = 0
    while j < len(rest) and (rest[j].isalpha() or rest[j] == "-"):
        j += 1
    flags = rest[:j]
    if "x" in flags:
        return "comments", 0, None
    if rest[j : j + 1] == ":":
        return "group", 3 + j, None
    return "flags", 3 + j, None  # (?i) and friends: no group


def _constant(e: exp.Expr) -> str | None:
    return e.this if isinstance(e, exp.Literal) and e.is_string else None


def _group_number(e: exp.Expr | None) -> int | None:
    return 0 if e is None else int_value(e)


# ---- guards


def _empty_match_guard(s: exp.Expr, p: exp.Expr, name: str) -> tuple[exp.Expr, ErrorCode, str]:
    """After an empty match Java steps one UTF-16 unit (into a surrogate pair), Trino one code point: refuse the
    data where that shows (a pattern matching the empty string on text outside the Basic Multilingual Plane)."""
    cond = exp.and_(
        exp.RegexpLike(this=lit(""), expression=dup(p)),
        exp.RegexpLike(this=dup(s), expression=lit(_ASTRAL)),
        copy=False,
    )
    return (
        cond,
        _REFUSED,
        f"{name} of a pattern matching the empty string on characters outside the BMP is not supported",
    )


def _strings(name: str, types: list[Any], signature: str) -> None:
    expect_args(name, types, signature, is_string, is_string)


def _group_checks(group: exp.Expr, groups: Groups | None) -> list[tuple[exp.Expr, ErrorCode, Any]]:
    checks: list[tuple[exp.Expr, ErrorCode, Any]] = [
        (exp.LT(this=dup(group), expression=lit(0)), _BAD, "Group cannot be negative")
    ]
    if groups is not None:
        message = spark_fn(
            "CONCAT", lit(f"Pattern has {groups.count} groups. Cannot access group "), cast_to(dup(group), "STRING")
        )
        checks.append((exp.GT(this=dup(group), expression=lit(groups.count)), _BAD, message))
    return checks


def _extract_group(
    node: exp.Expr, types: dict[str, Any], name: str
) -> tuple[exp.Expr, exp.Expr, exp.Expr, Groups | None]:
    s, p, group = node.this, node.expression, node.args.get("group")
    _strings(name, [types["this"], types["expression"]], f"{name}(varchar(x), JoniRegExp)")
    if group is not None:
        expect_args(
            name,
            [types["this"], types["expression"], types.get("group")],
            f"{name}(varchar(x), JoniRegExp, bigint)",
            is_string,
            is_string,
            is_integral,
        )
    group = group if group is not None else lit(0)
    pattern = _constant(p)
    groups = regex_groups(pattern) if pattern is not None else None
    number = _group_number(group)
    if number != 0:
        # a group that may not take part in a match is NULL in Trino and '' in Spark: only mandatory ones
        if groups is None:
            raise not_supported(f"{name} of a group needs a constant pattern on Spark")
        candidates = [number] if number is not None else list(range(1, groups.count + 1))
        if any(0 < g <= groups.count and not groups.mandatory[g - 1] for g in candidates):
            raise not_supported(f"{name} of a group that may not take part in a match is not supported on Spark")
    return s, p, cast_to(group, "INT"), groups


@_handles(exp.RegexpExtract)
def _regexp_extract(rw: Rewriter, node: exp.RegexpExtract, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    s, p, group, groups = _extract_group(node, types, "regexp_extract")
    value = case_when(
        [(exp.RegexpLike(this=dup(s), expression=dup(p)), spark_fn("REGEXP_EXTRACT", dup(s), dup(p), dup(group)))],
        exp.Null(),
    )
    return checked(value, [s, p, group], _group_checks(group, groups), safe)


@_handles(exp.RegexpExtractAll)
def _regexp_extract_all(
    rw: Rewriter, node: exp.RegexpExtractAll, types: dict[str, Any], t: TrinoType, safe: bool
) -> Out:
    s, p, group, groups = _extract_group(node, types, "regexp_extract_all")
    value = spark_fn("REGEXP_EXTRACT_ALL", dup(s), dup(p), dup(group))
    checks = _group_checks(group, groups) + [_empty_match_guard(s, p, "regexp_extract_all")]
    return checked(value, [s, p, group], checks, safe)


@_handles(exp.RegexpCount)
def _regexp_count(rw: Rewriter, node: exp.RegexpCount, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    s, p = node.this, node.expression
    _strings("regexp_count", [types["this"], types["expression"]], "regexp_count(varchar(x), JoniRegExp)")
    value = cast_to(spark_fn("REGEXP_COUNT", dup(s), dup(p)), "BIGINT")
    return checked(value, [s, p], [_empty_match_guard(s, p, "regexp_count")], safe)


@_handles("regexp_position")
def _regexp_position(rw: Rewriter, node: exp.Anonymous, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """The code point position of the first match (Spark's regexp_instr counts UTF-16 units): the length of the
    shortest prefix the pattern matches after, ``^([\\s\\S]*?)(?=pattern)``."""
    args = list(node.expressions)
    if len(args) != 2:
        raise not_supported("regexp_position with a start or occurrence argument is not supported")
    s, p = args
    _strings("regexp_position", list(types["expressions"]), "regexp_position(varchar(x), JoniRegExp)")
    pattern = _constant(p)
    groups = regex_groups(pattern) if pattern is not None else None
    if groups is None or groups.backreferences:
        raise not_supported("regexp_position needs a constant pattern without back references on Spark")
    prefix = spark_fn("REGEXP_EXTRACT", dup(s), lit(f"^([\\s\\S]*?)(?={pattern})"), lit(1))
    found = exp.Add(this=exp.Length(this=prefix), expression=lit(1))
    value = case_when(
        [
            (exp.EQ(this=exp.Length(this=dup(s)), expression=lit(0)), lit(-1)),
            (exp.RegexpLike(this=dup(s), expression=dup(p)), found),
        ],
        lit(-1),
    )
    return strict_args(cast_to(value, "INT"), s, p), None


@_handles(exp.RegexpSplit)
def _regexp_split(rw: Rewriter, node: exp.RegexpSplit, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    """Java's split drops the empty first piece of a zero-width match at the start, which Trino keeps."""
    if node.args.get("limit") is not None:
        raise not_supported("regexp_split with a limit is not supported")
    s, p = node.this, node.expression
    _strings("regexp_split", [types["this"], types["expression"]], "regexp_split(varchar(x), JoniRegExp)")
    at_start = spark_fn("CONCAT", lit("^(?:"), dup(p), lit(")"))
    zero_width_first = exp.or_(
        exp.RegexpLike(this=lit(""), expression=dup(p)),
        exp.and_(
            exp.RegexpLike(this=dup(s), expression=at_start),
            exp.EQ(this=spark_fn("REGEXP_EXTRACT", dup(s), at_start.copy(), lit(0)), expression=lit("")),
            copy=False,
        ),
        copy=False,
    )
    message = "regexp_split of a pattern that matches the empty string at the start is not supported"
    return checked(spark_fn("SPLIT", dup(s), dup(p), lit(-1)), [s, p], [(zero_width_first, _REFUSED, message)], safe)


# ---- regexp_replace


def replacement_error(replacement: str, groups: Groups) -> str | None:
    """Trino's error for a replacement string (``$n``, ``${name}``, ``\\x``), or None when it is valid."""
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "$":
            i += 1
            if i == n:
                return f"Illegal replacement sequence: {replacement}"
            if replacement[i] == "{":
                end = replacement.find("}", i)
                name = replacement[i + 1 : end if end >= 0 else n]
                if name not in groups.names:
                    return f"Illegal replacement sequence: unknown group {{ {name} }}"
                i = (end if end >= 0 else n) + 1
                continue
            if not replacement[i].isdigit() or not replacement[i].isascii():
                return f"Illegal replacement sequence: {replacement}"
            if int(replacement[i]) > groups.count:
                return f"Illegal replacement sequence: unknown group {replacement[i]}"
            i += 1
            continue
        if c == "\\":
            i += 1
            if i == n:
                return f"Illegal replacement sequence: {replacement}"
        i += 1
    return None


@_handles(exp.RegexpReplace)
def _regexp_replace(rw: Rewriter, node: exp.RegexpReplace, types: dict[str, Any], t: TrinoType, safe: bool) -> Out:
    if any(node.args.get(k) is not None for k in ("position", "occurrence", "modifiers")):
        raise not_supported("regexp_replace with extra arguments is not supported")
    s, p, r = node.this, node.expression, node.args.get("replacement")
    if isinstance(r, exp.Lambda):
        raise not_supported("regexp_replace with a lambda is not supported on Spark")
    r = r if r is not None else lit("")
    _strings("regexp_replace", [types["this"], types["expression"]], "regexp_replace(varchar(x), JoniRegExp)")
    checks = [_empty_match_guard(s, p, "regexp_replace")]
    pattern, text = _constant(p), _constant(r)
    groups = regex_groups(pattern) if pattern is not None else None
    if text is not None and groups is not None:
        error = replacement_error(text, groups)
        if error is not None:
            checks.insert(0, (exp.true(), _BAD, error))
    return checked(spark_fn("REGEXP_REPLACE", dup(s), dup(p), dup(r)), [s, p, r], checks, safe)
