"""Type inference over a Trino sqlglot tree, for the Trino SQL -> Spark SQL translation.

``Typer`` gives every node its Trino type: literals, columns (through the caller's ``schema``, subqueries,
CTEs, VALUES and outer scopes), and the operators and functions whose Spark translation depends on types,
by the per-node rules of ``_TYPE_RULES`` built on the typing rules of ``_spark_types``. It only reads the
tree; the rewrite (``_spark_rewrite`` and its handlers) asks it for the types of the original nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlglot import exp

from .types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INTEGER,
    INTERVAL_DS,
    INTERVAL_YM,
    MIXED_ZONE,
    NOTYPE,
    UNKNOWN,
    VARBINARY,
    VARCHAR,
    TrinoType,
    arith_type,
    common_of,
    common_type,
    decimal_type,
    from_datatype,
    literal_number_type,
    literal_zone,
    norm,
    parse_type,
    timestamp_type,
    typed_decimal_literal,
    with_zone,
)

_SETOPS = (exp.Union, exp.Intersect, exp.Except)
_Cols = list[tuple[str, TrinoType]]


class Typer:
    """Trino types of the expressions of one tree. Columns resolve through enclosing SELECT scopes
    (FROM/JOIN relations: schema tables, CTEs, subqueries, VALUES), then through ``schema`` directly
    (for lone expressions such as a MERGE condition)."""

    def __init__(self, schema: Mapping[str, Mapping[str, str]] | None) -> None:
        self.schema: dict[tuple[str, ...], _Cols] = {}
        for table, columns in (schema or {}).items():
            key = tuple(norm(part.strip('`"')) for part in table.split("."))
            self.schema[key] = [(norm(c), parse_type(t)) for c, t in columns.items()]
        self._types: dict[int, tuple[exp.Expr, TrinoType]] = {}
        self._relations: dict[int, tuple[exp.Expr, _Cols | None]] = {}
        self._busy: set[int] = set()

    # ---- public

    def type_of(self, node: exp.Expr) -> TrinoType:
        hit = self._types.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        if id(node) in self._busy:  # a recursive reference (e.g. WITH RECURSIVE)
            return NOTYPE
        self._busy.add(id(node))
        try:
            t = self._infer(node)
        finally:
            self._busy.discard(id(node))
        self._types[id(node)] = (node, t)
        return t

    def query_columns(self, query: exp.Expr) -> _Cols | None:
        """Output (name, type) pairs of a query or relation; None when not known."""
        hit = self._relations.get(id(query))
        if hit is not None and hit[0] is query:
            return hit[1]
        self._relations[id(query)] = (query, None)  # guards recursion
        cols = self._query_columns(query)
        self._relations[id(query)] = (query, cols)
        return cols

    def relations(self, select: exp.Select) -> list[tuple[str, _Cols | None]]:
        """The FROM relations of ``select`` (alias or table name, or "") with their columns (None: not known)."""
        return [(alias, self.query_columns(rel)) for alias, rel in self._sources(select)]

    # ---- relations

    def _query_columns(self, q: exp.Expr) -> _Cols | None:
        if isinstance(q, exp.Subquery):
            cols = self.query_columns(q.this)
            return _rename(cols, q.args.get("alias"))
        if isinstance(q, exp.Select):
            out: _Cols = []
            for proj in q.expressions:
                if isinstance(proj, exp.Star):
                    for _, rel in self._sources(q):
                        rel_cols = self.query_columns(rel)
                        if rel_cols is None:
                            return None
                        out.extend(rel_cols)
                elif isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star):
                    rel_cols = None
                    for alias, rel in self._sources(q):
                        if alias == norm(proj.table):
                            rel_cols = self.query_columns(rel)
                    if rel_cols is None:
                        return None
                    out.extend(rel_cols)
                else:
                    out.append((norm(proj.alias_or_name), self.type_of(proj)))
            return out
        if isinstance(q, _SETOPS):
            left = self.query_columns(q.left)
            right = self.query_columns(q.right)
            if left is None:
                return None
            if right is None or len(right) != len(left):
                return [(n, NOTYPE) for n, _ in left]
            return [(n, common_type(t, u)) for (n, t), (_, u) in zip(left, right, strict=False)]
        if isinstance(q, exp.Values):
            rows = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in q.expressions]
            width = len(rows[0]) if rows else 0
            types = [common_of(self.type_of(r[i]) for r in rows if len(r) > i) for i in range(width)]
            cols = [(f"_col{i}", t) for i, t in enumerate(types)]
            return _rename(cols, q.args.get("alias"))
        if isinstance(q, exp.Table):
            return self._table_columns(q)
        if isinstance(q, exp.Unnest):
            elements: list[TrinoType] = []
            for array in q.expressions:
                t = self.type_of(array)
                elements.extend(t.args if t.name in ("array", "map") else [NOTYPE])
            return _rename([(f"_col{i}", t) for i, t in enumerate(elements)], q.args.get("alias"))
        return None

    def _table_columns(self, table: exp.Table) -> _Cols | None:
        name = norm(table.name)
        if not table.args.get("db"):
            cte = _find_cte(table, name)
            if cte is not None:
                return _rename(self.query_columns(cte.this), cte.args.get("alias"))
        parts = tuple(norm(p.name) for p in table.parts)
        cols = self._schema_lookup(parts)
        return _rename(cols, table.args.get("alias")) if cols is not None else None

    def _schema_lookup(self, parts: tuple[str, ...]) -> _Cols | None:
        if parts in self.schema:
            return self.schema[parts]
        matches = [
            cols for key, cols in self.schema.items() if key[-len(parts) :] == parts or parts[-len(key) :] == key
        ]
        return matches[0] if len(matches) == 1 else None

    @staticmethod
    def _sources(select: exp.Select) -> list[tuple[str, exp.Expr]]:
        rels: list[exp.Expr] = []
        from_ = select.args.get("from_")
        if from_ is not None:
            rels.append(from_.this)
        rels.extend(j.this for j in select.args.get("joins") or [])
        out = []
        for rel in rels:
            alias = rel.args.get("alias")
            if alias is not None and alias.name:
                out.append((norm(alias.name), rel))
            elif isinstance(rel, exp.Table):
                out.append((norm(rel.name), rel))
            else:
                out.append(("", rel))
        return out

    # ---- columns

    def _column(self, col: exp.Column) -> TrinoType:
        name, qual = norm(col.name), norm(col.table)
        child: exp.Expr = col
        scope = col.parent
        while scope is not None:
            if isinstance(scope, exp.Select):
                found, t = self._in_select(scope, child, name, qual)
                if found:
                    return t
            elif isinstance(scope, _SETOPS) and child is scope.args.get("order") and not qual:
                cols = self.query_columns(scope)
                for n, t in cols or []:
                    if n == name:
                        return t
            child, scope = scope, scope.parent
        return self._schema_column(name, qual)

    def _in_select(self, select: exp.Select, child: exp.Expr, name: str, qual: str) -> tuple[bool, TrinoType]:
        if not qual and child is select.args.get("order"):
            for proj in select.expressions:  # ORDER BY sees output names first
                if isinstance(proj, exp.Alias) and norm(proj.alias) == name:
                    return True, self.type_of(proj)
        unknown_source = False
        for alias, rel in self._sources(select):
            if qual and alias != qual:
                continue
            cols = self.query_columns(rel)
            if cols is None:
                if qual:
                    return True, NOTYPE
                unknown_source = True
                continue
            for n, t in cols:
                if n == name:
                    return True, t
            if qual:
                return True, NOTYPE
        return unknown_source, NOTYPE

    def _schema_column(self, name: str, qual: str) -> TrinoType:
        if qual:
            cols = self._schema_lookup(tuple(qual.split(".")))
            return next((t for n, t in cols or [] if n == name), NOTYPE)
        found = {t for cols in self.schema.values() for n, t in cols if n == name}
        return found.pop() if len(found) == 1 else NOTYPE

    # ---- expressions

    def _infer(self, node: exp.Expr) -> TrinoType:
        handler = _TYPE_RULES.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, (exp.Predicate, exp.Connector, exp.Not)):
            return BOOLEAN
        return NOTYPE

    def arg(self, node: exp.Expr, key: str = "this") -> TrinoType:
        value = node.args.get(key)
        return self.type_of(value) if isinstance(value, exp.Expr) else NOTYPE


def _rename(cols: _Cols | None, alias: exp.Expr | None) -> _Cols | None:
    if cols is None or alias is None:
        return cols
    names = [norm(c.name) for c in alias.args.get("columns") or []]
    if not names:
        return cols
    return [(names[i] if i < len(names) else n, t) for i, (n, t) in enumerate(cols)]


def _find_cte(node: exp.Expr, name: str) -> exp.CTE | None:
    """The CTE a table reference ``name`` denotes: the nearest enclosing WITH that defines it, unless the
    reference sits inside that very CTE (a non-recursive CTE cannot see itself)."""
    parent = node.parent
    while parent is not None:
        with_ = parent.args.get("with_") if isinstance(parent, exp.Query) else None
        if with_ is not None:
            for cte in with_.expressions:
                if isinstance(cte, exp.CTE) and norm(cte.alias) == name and not _is_within(node, cte):
                    return cte
        parent = parent.parent
    return None


def _is_within(node: exp.Expr, ancestor: exp.Expr) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent  # type: ignore[assignment]
    return False


def _literal_type(_: Typer, node: exp.Literal) -> TrinoType:
    if node.is_string:
        return TrinoType("varchar", len(node.this))
    if isinstance(node.parent, exp.Neg) and node.this == str(2**63):
        return BIGINT  # -9223372036854775808
    return literal_number_type(node.this)


def _cast_type(ty: Typer, node: exp.Cast) -> TrinoType:
    t = typed_decimal_literal(node) or from_datatype(node.to)
    if t.name != "timestamp with time zone":
        return t
    x = node.this
    if isinstance(x, exp.Literal) and x.is_string:
        return with_zone(t, literal_zone(x.this))  # TIMESTAMP '2024-05-05 12:00 +02:00': the literal's zone
    src = ty.type_of(x)
    return with_zone(t, src.zone) if src.name.startswith("timestamp") else t


def _at_time_zone_type(ty: Typer, node: exp.AtTimeZone) -> TrinoType:
    t = ty.arg(node)
    zone = node.args.get("zone")
    if not t.name.startswith("timestamp") or not (isinstance(zone, exp.Literal) and zone.is_string):
        return NOTYPE
    return with_zone(timestamp_type(t.p if t.p is not None else 3, tz=True), zone.this)


def _sum_type(ty: Typer, node: exp.Expr) -> TrinoType:
    t = ty.arg(node)
    if t.integral:
        return BIGINT
    if t.decimal:
        return decimal_type(38, t.s or 0)
    return t if t.floating else NOTYPE


def _avg_type(ty: Typer, node: exp.Expr) -> TrinoType:
    t = ty.arg(node)
    if t.integral:
        return DOUBLE
    return t if (t.decimal or t.floating) else NOTYPE


def _round_type(ty: Typer, node: exp.Expr) -> TrinoType:
    t = ty.arg(node)
    if t.decimal:
        assert t.p is not None and t.s is not None
        if node.args.get("decimals") is None:
            return decimal_type(t.p - t.s + min(1, t.s), 0)
        return decimal_type(t.p + 1, t.s)
    return t


def _floor_type(ty: Typer, node: exp.Expr) -> TrinoType:
    t = ty.arg(node)
    if t.decimal:
        assert t.p is not None and t.s is not None
        return decimal_type(t.p - t.s + min(t.s, 1), 0)
    return t


def _sign_type(ty: Typer, node: exp.Expr) -> TrinoType:
    t = ty.arg(node)
    return decimal_type(1, 0) if t.decimal else t


def _case_type(ty: Typer, node: exp.Case) -> TrinoType:
    branches = [ty.arg(i, "true") for i in node.args.get("ifs") or []]
    if node.args.get("default") is not None:
        branches.append(ty.arg(node, "default"))
    return common_of(branches)


def _if_type(ty: Typer, node: exp.If) -> TrinoType:
    return common_of([ty.arg(node, "true"), ty.arg(node, "false") if node.args.get("false") else UNKNOWN])


def _all_args_common(ty: Typer, node: exp.Expr) -> TrinoType:
    items = [node.this] + list(node.expressions)
    return common_of(ty.type_of(e) for e in items if isinstance(e, exp.Expr))


def _interval_type(_: Typer, node: exp.Interval) -> TrinoType:
    unit = node.args.get("unit")
    text = unit.sql("trino").upper() if unit is not None else ""
    return INTERVAL_YM if ("YEAR" in text or "MONTH" in text) else INTERVAL_DS


def _subquery_type(ty: Typer, node: exp.Subquery) -> TrinoType:
    cols = ty.query_columns(node.this)
    return cols[0][1] if cols and len(cols) == 1 else NOTYPE


def _sequence_type(ty: Typer, node: exp.GenerateSeries) -> TrinoType:
    start = ty.arg(node, "start")
    return TrinoType("array", args=(BIGINT if start.integral else start,))


def _const(t: TrinoType) -> Callable[[Typer, Any], TrinoType]:
    return lambda _ty, _node: t


def _same(key: str = "this") -> Callable[[Typer, Any], TrinoType]:
    return lambda ty, node: ty.arg(node, key)


def _first_arg(ty: Typer, node: exp.Expr) -> TrinoType:
    return ty.type_of(node.expressions[0]) if node.expressions else NOTYPE


def _zoned(ty: Typer, node: exp.Expr) -> TrinoType:
    t = _first_arg(ty, node)
    if not t.name.startswith("timestamp"):
        return NOTYPE
    zone = node.expressions[1] if len(node.expressions) > 1 else None
    return with_zone(
        timestamp_type(t.p if t.p is not None else 3, tz=True),
        zone.this if isinstance(zone, exp.Literal) and zone.is_string else MIXED_ZONE,
    )


_VARCHAR_ARRAY = TrinoType("array", args=(VARCHAR,))
# Result types of the functions sqlglot parses as anonymous calls, by name.
_ANONYMOUS_TYPES: dict[str, Callable[[Typer, Any], TrinoType]] = {
    **{name: _const(DOUBLE) for name in ("nan", "infinity", "e")},
    **{name: _const(BOOLEAN) for name in ("every", "is_finite", "is_infinite", "luhn_check", "is_json_scalar")},
    **{name: _const(INTEGER) for name in ("codepoint", "from_big_endian_32", "regexp_position")},
    **{
        name: _const(BIGINT)
        for name in (
            "hamming_distance",
            "crc32",
            "from_big_endian_64",
            "bit_count",
            "to_milliseconds",
            "millisecond",
            "yow",
            "json_array_length",
        )
    },  # fmt: skip
    **{
        name: _const(VARCHAR)
        for name in ("to_base64url", "to_base", "date_format", "format_datetime", "to_iso8601", "json_extract_scalar")
    },
    **{name: _const(VARBINARY) for name in ("from_base64url", "to_big_endian_32", "to_big_endian_64")},
    **{name: _first_arg for name in ("bitwise_left_shift", "bitwise_right_shift", "bitwise_right_shift_arithmetic")},
    "date_parse": _const(timestamp_type(3)),
    "with_timezone": _zoned,
    "at_timezone": _zoned,
}


def _anonymous_type(ty: Typer, node: exp.Anonymous) -> TrinoType:
    rule = _ANONYMOUS_TYPES.get(norm(node.name))
    return rule(ty, node) if rule is not None else NOTYPE


def _trunc_type(ty: Typer, node: exp.Trunc) -> TrinoType:
    t = ty.arg(node)
    if t.decimal and node.args.get("decimals") is None:
        assert t.p is not None and t.s is not None
        return decimal_type(max(1, t.p - t.s), 0)
    return t


def _rand_type(ty: Typer, node: exp.Rand) -> TrinoType:
    if node.args.get("this") is None:
        return DOUBLE
    return common_of([ty.arg(node), ty.arg(node, "lower") if node.args.get("lower") is not None else UNKNOWN])


def _arith(ty: Typer, node: exp.Binary) -> TrinoType:
    return arith_type(type(node), ty.arg(node, "this"), ty.arg(node, "expression"))


_TYPE_RULES: dict[type, Callable[[Typer, Any], TrinoType]] = {
    exp.Literal: _literal_type,
    exp.HexString: _const(VARBINARY),
    exp.Null: _const(UNKNOWN),
    exp.Boolean: _const(BOOLEAN),
    exp.Column: lambda ty, node: ty._column(node),
    exp.Alias: _same(),
    exp.Paren: _same(),
    exp.Cast: _cast_type,
    exp.TryCast: _cast_type,
    exp.AtTimeZone: _at_time_zone_type,
    exp.Try: _same(),
    exp.Neg: _same(),
    exp.Add: _arith,
    exp.Sub: _arith,
    exp.Mul: _arith,
    exp.Div: _arith,
    exp.Mod: _arith,
    exp.DPipe: _const(VARCHAR),
    exp.Concat: _const(VARCHAR),
    exp.ConcatWs: _const(VARCHAR),
    exp.Lower: _const(VARCHAR),
    exp.Upper: _const(VARCHAR),
    exp.Substring: _const(VARCHAR),
    exp.Trim: _const(VARCHAR),
    exp.Replace: _const(VARCHAR),
    exp.Reverse: _const(VARCHAR),
    exp.Pad: _const(VARCHAR),
    exp.Length: _const(BIGINT),
    exp.StrPosition: _const(BIGINT),
    exp.Abs: _same(),
    exp.Sign: _sign_type,
    exp.Round: _round_type,
    exp.Floor: _floor_type,
    exp.Ceil: _floor_type,
    exp.Pow: _const(DOUBLE),
    exp.Sqrt: _const(DOUBLE),
    exp.Ln: _const(DOUBLE),
    exp.Log: _const(DOUBLE),
    exp.Exp: _const(DOUBLE),
    exp.Radians: _const(DOUBLE),
    exp.Degrees: _const(DOUBLE),
    exp.Tanh: _const(DOUBLE),
    exp.Cosh: _const(DOUBLE),
    exp.Sinh: _const(DOUBLE),
    exp.Atan2: _const(DOUBLE),
    exp.Atan: _const(DOUBLE),
    exp.Acos: _const(DOUBLE),
    exp.Asin: _const(DOUBLE),
    exp.Tan: _const(DOUBLE),
    exp.Cos: _const(DOUBLE),
    exp.Sin: _const(DOUBLE),
    exp.Cbrt: _const(DOUBLE),
    exp.Pi: _const(DOUBLE),
    exp.Case: _case_type,
    exp.If: _if_type,
    exp.Coalesce: _all_args_common,
    exp.Greatest: _all_args_common,
    exp.Least: _all_args_common,
    exp.Nullif: _same(),
    exp.Count: _const(BIGINT),
    exp.CountIf: _const(BIGINT),
    exp.ApproxDistinct: _const(BIGINT),
    exp.Sum: _sum_type,
    exp.Avg: _avg_type,
    exp.Min: _same(),
    exp.Max: _same(),
    exp.AnyValue: _same(),
    exp.ArgMax: _same(),
    exp.ArgMin: _same(),
    exp.LogicalAnd: _const(BOOLEAN),
    exp.LogicalOr: _const(BOOLEAN),
    exp.Stddev: _const(DOUBLE),
    exp.StddevSamp: _const(DOUBLE),
    exp.StddevPop: _const(DOUBLE),
    exp.Variance: _const(DOUBLE),
    exp.VariancePop: _const(DOUBLE),
    exp.RowNumber: _const(BIGINT),
    exp.Rank: _const(BIGINT),
    exp.DenseRank: _const(BIGINT),
    exp.Ntile: _const(BIGINT),
    exp.PercentRank: _const(DOUBLE),
    exp.CumeDist: _const(DOUBLE),
    exp.Lag: _same(),
    exp.Lead: _same(),
    exp.FirstValue: _same(),
    exp.LastValue: _same(),
    exp.NthValue: _same(),
    exp.Window: _same(),
    exp.Filter: _same(),
    exp.IgnoreNulls: _same(),
    exp.RespectNulls: _same(),
    exp.Subquery: _subquery_type,
    exp.DateAdd: _same(),
    exp.DateDiff: _const(BIGINT),
    exp.TimestampTrunc: _same(),
    exp.DateTrunc: _same(),
    exp.CurrentDate: _const(DATE),
    exp.CurrentTimestamp: _const(timestamp_type(3, tz=True)),
    exp.Localtimestamp: _const(timestamp_type(3)),
    exp.Year: _const(BIGINT),
    exp.Quarter: _const(BIGINT),
    exp.Month: _const(BIGINT),
    exp.Day: _const(BIGINT),
    exp.DayOfMonth: _const(BIGINT),
    exp.DayOfWeekIso: _const(BIGINT),
    exp.DayOfYear: _const(BIGINT),
    exp.WeekOfYear: _const(BIGINT),
    exp.Hour: _const(BIGINT),
    exp.Minute: _const(BIGINT),
    exp.Second: _const(BIGINT),
    exp.Extract: _const(BIGINT),
    exp.Interval: _interval_type,
    exp.LastDay: _const(DATE),
    exp.Levenshtein: _const(BIGINT),
    exp.Translate: _const(VARCHAR),
    exp.RegexpReplace: _const(VARCHAR),
    exp.Anonymous: _anonymous_type,
    exp.Array: lambda ty, node: TrinoType("array", args=(common_of(ty.type_of(e) for e in node.expressions),)),
    exp.GenerateSeries: _sequence_type,
    exp.Encode: _const(VARBINARY),
    exp.Grouping: _const(BIGINT),
    exp.Chr: _const(TrinoType("varchar", 1)),
    exp.EndsWith: _const(BOOLEAN),
    exp.Split: _const(_VARCHAR_ARRAY),
    exp.SplitPart: _const(VARCHAR),
    exp.Decode: _const(VARCHAR),
    exp.Typeof: _const(VARCHAR),
    exp.MD5Digest: _const(VARBINARY),
    exp.SHA: _const(VARBINARY),
    exp.SHA2Digest: _const(VARBINARY),
    exp.Hex: _const(VARCHAR),
    exp.Unhex: _const(VARBINARY),
    exp.ToBase64: _const(VARCHAR),
    exp.FromBase64: _const(VARBINARY),
    exp.BitwiseAnd: _const(BIGINT),
    exp.BitwiseOr: _const(BIGINT),
    exp.BitwiseXor: _const(BIGINT),
    exp.BitwiseNot: _const(BIGINT),
    exp.Trunc: _trunc_type,
    exp.WidthBucket: _const(BIGINT),
    exp.FromBase: _const(BIGINT),
    exp.Date: _const(DATE),
    exp.YearOfWeek: _const(BIGINT),
    exp.TimeToUnix: _const(DOUBLE),
    exp.UnixToTime: _const(timestamp_type(3, tz=True)),
    exp.CurrentTimezone: _const(VARCHAR),
    exp.RegexpExtract: _const(VARCHAR),
    exp.RegexpExtractAll: _const(_VARCHAR_ARRAY),
    exp.RegexpCount: _const(BIGINT),
    exp.RegexpSplit: _const(_VARCHAR_ARRAY),
    exp.RegexpLike: _const(BOOLEAN),
}
_TYPE_RULES[exp.Rand] = _rand_type
