"""Trino SQL -> Spark SQL, with Trino's semantics.

mergekit accepts Trino SQL but runs it on Spark (ANSI mode, UTC session time zone). sqlglot's own
``trino -> spark`` transpilation is syntactic: it keeps ``7/2`` as ``7 / 2`` (3.5 on Spark, 3 on Trino),
turns ``date_trunc`` on a DATE into a TIMESTAMP, drops ``TRY``, and so on. This module closes those gaps:

1. a small **type inference** over the Trino tree (``_Typer``): literals, columns (through ``schema``,
   subqueries, CTEs, VALUES and outer scopes) and the operators/functions whose Spark translation depends
   on types, using Trino's typing rules (integer division, decimal precision/scale, ...);
2. a bottom-up **rewrite** (``_Rewriter``) that replaces each construct whose Spark meaning differs by an
   equivalent Spark expression, and evaluates ``TRY(...)`` with Spark's ``try_*`` functions plus an
   explicit "an error was caught" flag (so ``TRY(coalesce(1/0, 5))`` is NULL, as on Trino);
3. **generation** with the Spark dialect, every identifier back-quoted and every ``ORDER BY`` item
   carrying an explicit ``NULLS FIRST/LAST`` (Trino sorts NULLs last in both directions).

Constructs that cannot be translated faithfully raise ``MergekitError(NOT_SUPPORTED)``. Functions are
allow-listed: a Trino function whose Spark namesake differs, or that this module has not vetted, is
refused rather than silently translated.

Known deviations, kept because the alternative is refusing common SQL:

- ``timestamp with time zone`` values are UTC instants on Spark; a value's original zone is not kept
  (``CAST(tz AS varchar)`` prints ``... UTC``). ``CHAR(n)`` values are padded strings (STRING).
- ``DECIMAL '1.5'`` and ``CAST('1.5' AS DECIMAL)`` parse to the same sqlglot tree; both are read as the
  typed literal (Trino would give 2 for the cast, whose type is decimal(38,0)).
- decimal division and ``avg(decimal)`` round Spark's wider quotient to Trino's scale; when Spark had
  to cut its own scale to stay within 38 digits this double rounding can differ in the last digit
  (and a division for which Spark keeps fewer digits than Trino returns raises NOT_SUPPORTED).
- ``approx_distinct`` is Spark's HyperLogLog++; regular expressions are Java's (Trino uses joni);
  ``replace(s, '', x)`` returns ``s``; sequence() has no 10,000-element limit.
- Spark accepts some inputs Trino rejects at analysis time (implicit varchar/number coercions, more
  boolean spellings in CAST); those produce a value instead of an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ErrorLevel, ParseError, UnsupportedError
from sqlglot.generators.spark import SparkGenerator
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["spark_type_sql", "to_spark_sql"]


# --------------------------------------------------------------------------------------------------
# errors


def _not_supported(message: str) -> MergekitError:
    return MergekitError(ErrorCode.NOT_SUPPORTED, message)


# --------------------------------------------------------------------------------------------------
# Trino types


@dataclass(frozen=True)
class _T:
    """A Trino type. ``name`` is Trino's base name; ``p``/``s`` are precision/scale (or length)."""

    name: str
    p: int | None = None
    s: int | None = None
    args: tuple[_T, ...] = ()
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.p},{self.s})"
        if self.name in ("varchar", "char") and self.p is not None:
            return f"{self.name}({self.p})"
        if self.name in ("timestamp", "timestamp with time zone"):
            base, _, rest = self.name.partition(" ")
            return f"{base}({self.p}){' ' + rest if rest else ''}"
        return self.name

    @property
    def integral(self) -> bool:
        return self.name in _INT_RANK

    @property
    def decimal(self) -> bool:
        return self.name == "decimal"

    @property
    def floating(self) -> bool:
        return self.name in ("real", "double")

    @property
    def exact(self) -> bool:
        return self.integral or self.decimal

    @property
    def numeric(self) -> bool:
        return self.integral or self.decimal or self.floating

    @property
    def string(self) -> bool:
        return self.name in ("varchar", "char")

    @property
    def temporal(self) -> bool:
        return self.name in ("date", "timestamp", "timestamp with time zone")

    @property
    def known(self) -> bool:
        return self.name != "?"


UNKNOWN = _T("unknown")  # Trino's type of a bare NULL: coerces to anything
NOTYPE = _T("?")  # could not be inferred
BOOLEAN = _T("boolean")
TINYINT = _T("tinyint")
SMALLINT = _T("smallint")
INTEGER = _T("integer")
BIGINT = _T("bigint")
REAL = _T("real")
DOUBLE = _T("double")
VARCHAR = _T("varchar")
VARBINARY = _T("varbinary")
DATE = _T("date")
INTERVAL_DS = _T("interval day to second")
INTERVAL_YM = _T("interval year to month")

_INT_RANK = {"tinyint": 1, "smallint": 2, "integer": 3, "bigint": 4}
_INT_DECIMAL_PRECISION = {"tinyint": 3, "smallint": 5, "integer": 10, "bigint": 19}
_INT_MIN = {"tinyint": -(2**7), "smallint": -(2**15), "integer": -(2**31), "bigint": -(2**63)}
_SPARK_SIMPLE = {
    "boolean": "BOOLEAN",
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "integer": "INT",
    "bigint": "BIGINT",
    "real": "FLOAT",
    "double": "DOUBLE",
    "varchar": "STRING",
    "char": "STRING",
    "varbinary": "BINARY",
    "date": "DATE",
    "interval day to second": "INTERVAL DAY TO SECOND",
    "interval year to month": "INTERVAL YEAR TO MONTH",
}
_MAX_PRECISION = 38


def _decimal(p: int, s: int) -> _T:
    return _T("decimal", min(p, _MAX_PRECISION), s)


def _timestamp(p: int, tz: bool = False) -> _T:
    return _T("timestamp with time zone" if tz else "timestamp", p)


def _as_decimal(t: _T) -> _T:
    """The decimal type an exact operand takes in mixed integer/decimal arithmetic (Trino's coercion)."""
    if t.decimal:
        return t
    return _decimal(_INT_DECIMAL_PRECISION[t.name], 0)


def _dt_params(dt: exp.DataType) -> list[int]:
    out = []
    for param in dt.expressions:
        if isinstance(param, exp.DataTypeParam):
            try:
                out.append(int(param.this.name))
            except (TypeError, ValueError) as e:
                raise _not_supported(f"type parameter {param.sql('trino')} is not supported") from e
    return out


def _from_datatype(dt: exp.DataType) -> _T:
    """Trino type of a sqlglot DataType parsed with the Trino dialect."""
    kind = dt.this
    if not isinstance(kind, exp.DType):  # INTERVAL DAY TO SECOND and friends
        text = dt.sql("trino").lower()
        if text.startswith("interval"):
            return INTERVAL_YM if ("year" in text or "month" in text) else INTERVAL_DS
        return _T(text)
    D = exp.DType
    params = _dt_params(dt)
    if kind == D.BOOLEAN:
        return BOOLEAN
    if kind == D.TINYINT:
        return TINYINT
    if kind == D.SMALLINT:
        return SMALLINT
    if kind == D.INT:
        return INTEGER
    if kind == D.BIGINT:
        return BIGINT
    if kind == D.FLOAT:
        return REAL
    if kind == D.DOUBLE:
        return DOUBLE
    if kind == D.DECIMAL:
        p = params[0] if params else 38
        s = params[1] if len(params) > 1 else 0
        return _T("decimal", p, s)
    if kind in (D.VARCHAR, D.TEXT, D.NVARCHAR):
        return _T("varchar", params[0] if params else None)
    if kind in (D.CHAR, D.NCHAR):
        return _T("char", params[0] if params else 1)
    if kind in (D.VARBINARY, D.BINARY):
        return VARBINARY
    if kind == D.DATE:
        return DATE
    if kind in (D.TIMESTAMP, D.DATETIME, D.TIMESTAMPNTZ):
        return _timestamp(params[0] if params else 3)
    if kind in (D.TIMESTAMPTZ, D.TIMESTAMPLTZ):
        return _timestamp(params[0] if params else 3, tz=True)
    if kind == D.ARRAY:
        return _T("array", args=tuple(_from_datatype(e) for e in dt.expressions if isinstance(e, exp.DataType)))
    if kind == D.MAP:
        return _T("map", args=tuple(_from_datatype(e) for e in dt.expressions if isinstance(e, exp.DataType)))
    if kind == D.STRUCT:
        names, types = [], []
        for i, e in enumerate(dt.expressions):
            if isinstance(e, exp.ColumnDef):
                names.append(e.name)
                types.append(_from_datatype(e.args["kind"]))
            elif isinstance(e, exp.DataType):
                names.append(f"_col{i}")
                types.append(_from_datatype(e))
        return _T("row", args=tuple(types), fields=tuple(names))
    if kind == D.UNKNOWN:
        return NOTYPE
    if kind == D.NULL:
        return UNKNOWN
    return _T(kind.value.lower())


def _parse_type(text: str) -> _T:
    try:
        dt = exp.DataType.build(text, dialect="trino")
    except (ParseError, ValueError) as e:
        raise _not_supported(f"unknown type {text!r}") from e
    return _from_datatype(dt)


def _spark_type(t: _T) -> str:
    if t.name in _SPARK_SIMPLE:
        return _SPARK_SIMPLE[t.name]
    if t.decimal:
        return f"DECIMAL({t.p},{t.s})"
    if t.name in ("timestamp", "timestamp with time zone"):
        if t.p is not None and t.p > 6:
            raise _not_supported(f"{t} is not supported: Spark timestamps have microsecond precision")
        return "TIMESTAMP" if t.name == "timestamp with time zone" else "TIMESTAMP_NTZ"
    if t.name == "array" and len(t.args) == 1:
        return f"ARRAY<{_spark_type(t.args[0])}>"
    if t.name == "map" and len(t.args) == 2:
        return f"MAP<{_spark_type(t.args[0])}, {_spark_type(t.args[1])}>"
    if t.name == "row":
        inner = ", ".join(f"`{n.replace('`', '``')}`: {_spark_type(a)}" for n, a in zip(t.fields, t.args, strict=False))
        return f"STRUCT<{inner}>"
    raise _not_supported(f"type {t} has no Spark equivalent")


def spark_type_sql(trino_type: str) -> str:
    """Spark SQL type for a Trino type text: 'varchar(16)' -> 'STRING', 'integer' -> 'INT',
    'timestamp' -> 'TIMESTAMP_NTZ', 'timestamp with time zone' -> 'TIMESTAMP', 'varbinary' -> 'BINARY', 'real' -> 'FLOAT', ...

    Spark has no bounded strings outside table DDL, so VARCHAR(n) and CHAR(n) both become STRING; TIME,
    JSON, UUID and timestamps finer than microseconds raise NOT_SUPPORTED.
    """
    return _spark_type(_parse_type(trino_type))


def _common_type(a: _T, b: _T) -> _T:
    """Trino's common super type of two types (for CASE, COALESCE, UNION, VALUES, ...)."""
    if a == b:
        return a
    if a == UNKNOWN:
        return b
    if b == UNKNOWN:
        return a
    if not a.known or not b.known:
        return NOTYPE
    if a.integral and b.integral:
        return a if _INT_RANK[a.name] >= _INT_RANK[b.name] else b
    if a.exact and b.exact:
        da, db = _as_decimal(a), _as_decimal(b)
        assert da.p is not None and da.s is not None and db.p is not None and db.s is not None
        s = max(da.s, db.s)
        return _decimal(max(da.p - da.s, db.p - db.s) + s, s)
    if a.numeric and b.numeric:
        return DOUBLE if DOUBLE in (a, b) else REAL
    if a.string and b.string:
        if a.p is None or b.p is None:
            return VARCHAR
        return _T("varchar", max(a.p, b.p))
    if a.name == b.name and a.name in ("timestamp", "timestamp with time zone"):
        return _T(a.name, max(a.p or 0, b.p or 0))
    temporal = {a.name, b.name}
    if temporal <= {"date", "timestamp"}:
        return _timestamp(max(a.p or 0, b.p or 0))
    if temporal <= {"date", "timestamp", "timestamp with time zone"}:
        return _timestamp(max(a.p or 0, b.p or 0), tz=True)
    return NOTYPE


def _common(types: Iterable[_T]) -> _T:
    result = UNKNOWN
    for t in types:
        result = _common_type(result, t)
    return result


def _arith_type(op: type[exp.Expr], a: _T, b: _T) -> _T:
    """Result type of ``a op b`` for + - * / % under Trino's rules."""
    if a == UNKNOWN and b == UNKNOWN:
        return UNKNOWN
    if a == UNKNOWN:
        a = b if b.numeric else a
    if b == UNKNOWN:
        b = a if a.numeric else b
    if a.integral and b.integral:
        return a if _INT_RANK[a.name] >= _INT_RANK[b.name] else b
    if a.exact and b.exact:
        da, db = _as_decimal(a), _as_decimal(b)
        p1, s1, p2, s2 = da.p, da.s, db.p, db.s
        assert p1 is not None and s1 is not None and p2 is not None and s2 is not None
        if op in (exp.Add, exp.Sub):
            return _decimal(1 + max(s1, s2) + max(p1 - s1, p2 - s2), max(s1, s2))
        if op is exp.Mul:
            if s1 + s2 > _MAX_PRECISION:
                raise _not_supported(f"decimal multiplication {da} * {db}: result scale exceeds 38")
            return _decimal(p1 + p2, s1 + s2)
        if op is exp.Div:
            return _decimal(p1 + s2 + max(s2 - s1, 0), max(s1, s2))
        if op is exp.Mod:
            return _decimal(min(p2 - s2, p1 - s1) + max(s1, s2), max(s1, s2))
    if a.numeric and b.numeric:
        return DOUBLE if DOUBLE in (a, b) else REAL
    if op in (exp.Add, exp.Sub):
        if a.temporal and b.name.startswith("interval"):
            return a
        if op is exp.Add and b.temporal and a.name.startswith("interval"):
            return b
        if a.name.startswith("interval") and a == b:
            return a
    return NOTYPE


def _literal_number_type(text: str) -> _T:
    """Trino's type of a numeric literal: INTEGER/BIGINT, DECIMAL(p,s) for '1.50', DOUBLE for '1e3'."""
    t = text.replace("_", "")
    if re.fullmatch(r"\d+", t):
        v = int(t)
        if v <= 2**31 - 1:
            return INTEGER
        if v <= 2**63 - 1:
            return BIGINT
        raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, f"Invalid numeric literal: {text}")
    m = re.fullmatch(r"(\d*)\.(\d*)", t)
    if m:
        return _decimal_literal_type(m.group(1), m.group(2))
    return DOUBLE


def _decimal_literal_type(int_digits: str, frac_digits: str) -> _T:
    s = len(frac_digits)
    p = max(len(int_digits.lstrip("0")) + s, s, 1)
    if p > _MAX_PRECISION:
        raise MergekitError(ErrorCode.NUMERIC_VALUE_OUT_OF_RANGE, "decimal literal exceeds 38 digits")
    return _T("decimal", p, s)


_DECIMAL_TEXT = re.compile(r"\s*[+-]?(\d*)(?:\.(\d*))?\s*")


def _typed_decimal_literal(node: exp.Expr) -> _T | None:
    """The type of ``DECIMAL '1.50'``, which sqlglot parses as ``CAST('1.50' AS DECIMAL)``.

    Trino types the literal by its digits (decimal(3,2)); a CAST to a bare DECIMAL would mean
    decimal(38,0). sqlglot leaves no trace of which one was written, so a string literal cast to an
    unparameterised DECIMAL is read as the (far more common) typed literal.
    """
    if (
        isinstance(node, exp.Cast)
        and not isinstance(node, exp.TryCast)
        and isinstance(node.this, exp.Literal)
        and node.this.is_string
        and node.to.is_type(exp.DType.DECIMAL)
        and not node.to.expressions
    ):
        m = _DECIMAL_TEXT.fullmatch(node.this.name)
        if m and (m.group(1) or m.group(2)):
            return _decimal_literal_type(m.group(1) or "", m.group(2) or "")
    return None


# --------------------------------------------------------------------------------------------------
# type inference


def _norm(name: str | None) -> str:
    return (name or "").lower()


_SETOPS = (exp.Union, exp.Intersect, exp.Except)
_Cols = list[tuple[str, _T]]


class _Typer:
    """Trino types of the expressions of one tree. Columns resolve through enclosing SELECT scopes
    (FROM/JOIN relations: schema tables, CTEs, subqueries, VALUES), then through ``schema`` directly
    (for lone expressions such as a MERGE condition)."""

    def __init__(self, schema: Mapping[str, Mapping[str, str]] | None) -> None:
        self.schema: dict[tuple[str, ...], _Cols] = {}
        for table, columns in (schema or {}).items():
            key = tuple(_norm(part.strip('`"')) for part in table.split("."))
            self.schema[key] = [(_norm(c), _parse_type(t)) for c, t in columns.items()]
        self._types: dict[int, tuple[exp.Expr, _T]] = {}
        self._relations: dict[int, tuple[exp.Expr, _Cols | None]] = {}
        self._busy: set[int] = set()

    # ---- public

    def type_of(self, node: exp.Expr) -> _T:
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
                        if alias == _norm(proj.table):
                            rel_cols = self.query_columns(rel)
                    if rel_cols is None:
                        return None
                    out.extend(rel_cols)
                else:
                    out.append((_norm(proj.alias_or_name), self.type_of(proj)))
            return out
        if isinstance(q, _SETOPS):
            left = self.query_columns(q.left)
            right = self.query_columns(q.right)
            if left is None:
                return None
            if right is None or len(right) != len(left):
                return [(n, NOTYPE) for n, _ in left]
            return [(n, _common_type(t, u)) for (n, t), (_, u) in zip(left, right, strict=False)]
        if isinstance(q, exp.Values):
            rows = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in q.expressions]
            width = len(rows[0]) if rows else 0
            types = [_common(self.type_of(r[i]) for r in rows if len(r) > i) for i in range(width)]
            cols = [(f"_col{i}", t) for i, t in enumerate(types)]
            return _rename(cols, q.args.get("alias"))
        if isinstance(q, exp.Table):
            return self._table_columns(q)
        if isinstance(q, exp.Unnest):
            elements: list[_T] = []
            for array in q.expressions:
                t = self.type_of(array)
                elements.extend(t.args if t.name in ("array", "map") else [NOTYPE])
            return _rename([(f"_col{i}", t) for i, t in enumerate(elements)], q.args.get("alias"))
        return None

    def _table_columns(self, table: exp.Table) -> _Cols | None:
        name = _norm(table.name)
        if not table.args.get("db"):
            cte = _find_cte(table, name)
            if cte is not None:
                return _rename(self.query_columns(cte.this), cte.args.get("alias"))
        parts = tuple(_norm(p.name) for p in table.parts)
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
                out.append((_norm(alias.name), rel))
            elif isinstance(rel, exp.Table):
                out.append((_norm(rel.name), rel))
            else:
                out.append(("", rel))
        return out

    # ---- columns

    def _column(self, col: exp.Column) -> _T:
        name, qual = _norm(col.name), _norm(col.table)
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

    def _in_select(self, select: exp.Select, child: exp.Expr, name: str, qual: str) -> tuple[bool, _T]:
        if not qual and child is select.args.get("order"):
            for proj in select.expressions:  # ORDER BY sees output names first
                if isinstance(proj, exp.Alias) and _norm(proj.alias) == name:
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

    def _schema_column(self, name: str, qual: str) -> _T:
        if qual:
            cols = self._schema_lookup(tuple(qual.split(".")))
            return next((t for n, t in cols or [] if n == name), NOTYPE)
        found = {t for cols in self.schema.values() for n, t in cols if n == name}
        return found.pop() if len(found) == 1 else NOTYPE

    # ---- expressions

    def _infer(self, node: exp.Expr) -> _T:
        handler = _TYPE_RULES.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, (exp.Predicate, exp.Connector, exp.Not)):
            return BOOLEAN
        return NOTYPE

    def arg(self, node: exp.Expr, key: str = "this") -> _T:
        value = node.args.get(key)
        return self.type_of(value) if isinstance(value, exp.Expr) else NOTYPE


def _rename(cols: _Cols | None, alias: exp.Expr | None) -> _Cols | None:
    if cols is None or alias is None:
        return cols
    names = [_norm(c.name) for c in alias.args.get("columns") or []]
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
                if isinstance(cte, exp.CTE) and _norm(cte.alias) == name and not _is_within(node, cte):
                    return cte
        parent = parent.parent
    return None


def _is_within(node: exp.Expr, ancestor: exp.Expr) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent  # type: ignore[assignment]
    return False


def _literal_type(_: _Typer, node: exp.Literal) -> _T:
    if node.is_string:
        return _T("varchar", len(node.this))
    if isinstance(node.parent, exp.Neg) and node.this == str(2**63):
        return BIGINT  # -9223372036854775808
    return _literal_number_type(node.this)


def _cast_type(_: _Typer, node: exp.Cast) -> _T:
    return _typed_decimal_literal(node) or _from_datatype(node.to)


def _sum_type(ty: _Typer, node: exp.Expr) -> _T:
    t = ty.arg(node)
    if t.integral:
        return BIGINT
    if t.decimal:
        return _decimal(38, t.s or 0)
    return t if t.floating else NOTYPE


def _avg_type(ty: _Typer, node: exp.Expr) -> _T:
    t = ty.arg(node)
    if t.integral:
        return DOUBLE
    return t if (t.decimal or t.floating) else NOTYPE


def _round_type(ty: _Typer, node: exp.Expr) -> _T:
    t = ty.arg(node)
    if t.decimal:
        assert t.p is not None and t.s is not None
        if node.args.get("decimals") is None:
            return _decimal(t.p - t.s + min(1, t.s), 0)
        return _decimal(t.p + 1, t.s)
    return t


def _floor_type(ty: _Typer, node: exp.Expr) -> _T:
    t = ty.arg(node)
    if t.decimal:
        assert t.p is not None and t.s is not None
        return _decimal(t.p - t.s + min(t.s, 1), 0)
    return t


def _sign_type(ty: _Typer, node: exp.Expr) -> _T:
    t = ty.arg(node)
    return _decimal(1, 0) if t.decimal else t


def _case_type(ty: _Typer, node: exp.Case) -> _T:
    branches = [ty.arg(i, "true") for i in node.args.get("ifs") or []]
    if node.args.get("default") is not None:
        branches.append(ty.arg(node, "default"))
    return _common(branches)


def _if_type(ty: _Typer, node: exp.If) -> _T:
    return _common([ty.arg(node, "true"), ty.arg(node, "false") if node.args.get("false") else UNKNOWN])


def _all_args_common(ty: _Typer, node: exp.Expr) -> _T:
    items = [node.this] + list(node.expressions)
    return _common(ty.type_of(e) for e in items if isinstance(e, exp.Expr))


def _interval_type(_: _Typer, node: exp.Interval) -> _T:
    unit = node.args.get("unit")
    text = unit.sql("trino").upper() if unit is not None else ""
    return INTERVAL_YM if ("YEAR" in text or "MONTH" in text) else INTERVAL_DS


def _subquery_type(ty: _Typer, node: exp.Subquery) -> _T:
    cols = ty.query_columns(node.this)
    return cols[0][1] if cols and len(cols) == 1 else NOTYPE


def _sequence_type(ty: _Typer, node: exp.GenerateSeries) -> _T:
    start = ty.arg(node, "start")
    return _T("array", args=(BIGINT if start.integral else start,))


def _anonymous_type(ty: _Typer, node: exp.Anonymous) -> _T:
    name = _norm(node.name)
    if name in ("nan", "infinity", "e"):
        return DOUBLE
    if name in ("every", "is_finite", "is_infinite"):
        return BOOLEAN
    return NOTYPE


def _const(t: _T) -> Callable[[_Typer, Any], _T]:
    return lambda _ty, _node: t


def _same(key: str = "this") -> Callable[[_Typer, Any], _T]:
    return lambda ty, node: ty.arg(node, key)


def _arith(ty: _Typer, node: exp.Binary) -> _T:
    return _arith_type(type(node), ty.arg(node, "this"), ty.arg(node, "expression"))


_TYPE_RULES: dict[type, Callable[[_Typer, Any], _T]] = {
    exp.Literal: _literal_type,
    exp.HexString: _const(VARBINARY),
    exp.Null: _const(UNKNOWN),
    exp.Boolean: _const(BOOLEAN),
    exp.Column: lambda ty, node: ty._column(node),
    exp.Alias: _same(),
    exp.Paren: _same(),
    exp.Cast: _cast_type,
    exp.TryCast: _cast_type,
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
    exp.Rand: _const(DOUBLE),
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
    exp.CurrentTimestamp: _const(_timestamp(3, tz=True)),
    exp.Localtimestamp: _const(_timestamp(3)),
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
    exp.Array: lambda ty, node: _T("array", args=(_common(ty.type_of(e) for e in node.expressions),)),
    exp.GenerateSeries: _sequence_type,
    exp.Encode: _const(VARBINARY),
    exp.Grouping: _const(BIGINT),
}


# --------------------------------------------------------------------------------------------------
# expression builders


def _lit(value: float | str) -> exp.Expr:
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, int) and value < 0:
        return exp.Paren(this=exp.Literal.number(value))
    return exp.Literal.number(value)


_DT_CACHE: dict[str, exp.DataType] = {}


def _spark_dt(spark_type: str) -> exp.DataType:
    dt = _DT_CACHE.get(spark_type)
    if dt is None:
        dt = _DT_CACHE[spark_type] = exp.DataType.build(spark_type, dialect="spark")
    return dt.copy()


def _cast(e: exp.Expr, spark_type: str, safe: bool = False) -> exp.Expr:
    if safe:
        return exp.TryCast(this=e, to=_spark_dt(spark_type), safe=True)
    return exp.Cast(this=e, to=_spark_dt(spark_type))


def _fn(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _atom(e: exp.Expr) -> exp.Expr:
    """``e`` wrapped in parentheses unless it is self-delimiting, so it can be nested anywhere."""
    if isinstance(e, (exp.Binary, exp.Unary, exp.Predicate)) and not isinstance(e, exp.Paren) and not _is_function(e):
        return exp.Paren(this=e)
    if isinstance(e, exp.Literal) and e.is_number and e.this.startswith("-"):
        return exp.Paren(this=e)
    return e


def _dup(e: exp.Expr) -> exp.Expr:
    return _atom(e.copy())


def _is_null(e: exp.Expr) -> exp.Expr:
    return exp.Is(this=_dup(e), expression=exp.Null())


def _not_null(e: exp.Expr) -> exp.Expr:
    return exp.not_(exp.Is(this=_dup(e), expression=exp.Null()), copy=False)


def _both(cond: exp.Expr, fail: exp.Expr | None) -> exp.Expr | None:
    """``cond AND fail`` where a missing ``fail`` means "cannot fail" (so the result cannot either)."""
    return None if fail is None else exp.and_(cond, fail, copy=False)


def _or(*conds: exp.Expr | None) -> exp.Expr | None:
    parts = [c for c in conds if c is not None]
    if not parts:
        return None
    return exp.Paren(this=exp.or_(*parts, copy=False)) if len(parts) > 1 else parts[0]


def _case(whens: list[tuple[exp.Expr, exp.Expr]], default: exp.Expr | None) -> exp.Expr:
    return exp.Case(ifs=[exp.If(this=c, true=v) for c, v in whens], default=default)


def _failed(result: exp.Expr, *inputs: exp.Expr) -> exp.Expr:
    """True when a ``try_*`` form returned NULL although none of its inputs was NULL."""
    return exp.and_(*[_not_null(i) for i in inputs], _is_null(result), copy=False)


_DOUBLE_INF = exp.Cast(this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE"))
_DOUBLE_NAN = exp.Cast(this=exp.Literal.string("NaN"), to=exp.DataType.build("DOUBLE"))
_TWO_POW_52 = 4503599627370496


# --------------------------------------------------------------------------------------------------
# the rewrite


@dataclass
class _R:
    """Result of rewriting a node. Inside TRY, ``fail`` is a never-NULL boolean Spark expression that is
    TRUE when Trino would have raised while evaluating the node, and ``absorbed`` says whether such a
    failure may have been hidden (e.g. by COALESCE) instead of turning the value into NULL."""

    v: exp.Expr
    fail: exp.Expr | None = None
    absorbed: bool = False


# Constructs whose Spark function has Trino's semantics once types are dealt with (done in _translate).
_PASS_FUNCS: frozenset[type] = frozenset(
    {
        exp.Count, exp.CountIf, exp.ApproxDistinct, exp.Min, exp.Max, exp.AnyValue, exp.ArgMax, exp.ArgMin,
        exp.LogicalAnd, exp.LogicalOr, exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance,
        exp.VariancePop, exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile, exp.PercentRank, exp.CumeDist,
        exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue, exp.Coalesce, exp.Nullif, exp.Case,
        exp.Lower, exp.Upper, exp.Length, exp.Concat, exp.ConcatWs, exp.Reverse, exp.Pad, exp.StartsWith,
        exp.RegexpLike, exp.Pow, exp.Sqrt, exp.Exp, exp.Rand, exp.IsNan, exp.CurrentDate,
        exp.CurrentTimestamp, exp.Encode, exp.Replace, exp.Array, exp.Pi, exp.Cbrt, exp.Sin, exp.Cos, exp.Tan,
        exp.Asin, exp.Acos, exp.Atan, exp.Atan2, exp.Sinh, exp.Cosh, exp.Tanh, exp.Degrees, exp.Radians,
        exp.LastDay, exp.Levenshtein, exp.Translate, exp.RegexpReplace,
    }
)  # fmt: skip
# Functions that never raise on well-typed input (so they need no special handling inside TRY).
_TRY_SAFE_FUNCS: frozenset[type] = _PASS_FUNCS | frozenset(
    {
        exp.If, exp.Substring, exp.Trim, exp.StrPosition, exp.Greatest, exp.Least, exp.Sign, exp.Round,
        exp.Floor, exp.Ceil, exp.Ln, exp.Log, exp.DateAdd, exp.DateDiff, exp.TimestampTrunc, exp.DateTrunc,
        exp.Year, exp.Quarter, exp.Month, exp.Day, exp.DayOfMonth, exp.DayOfWeekIso, exp.DayOfYear,
        exp.WeekOfYear, exp.Hour, exp.Minute, exp.Second, exp.Extract, exp.Localtimestamp, exp.Grouping,
    }
)  # fmt: skip
# Nodes that map NULL input to NULL output: a failure below them surfaces as NULL without help.
_STRICT: tuple[type, ...] = (
    exp.Binary, exp.Neg, exp.Not, exp.Paren, exp.Alias, exp.Cast, exp.Lower, exp.Upper, exp.Length,
    exp.Substring, exp.Trim, exp.Replace, exp.Reverse, exp.Pad, exp.StrPosition, exp.StartsWith, exp.Concat,
    exp.Abs, exp.Sign, exp.Round, exp.Floor, exp.Ceil, exp.Pow, exp.Sqrt, exp.Ln, exp.Log, exp.Exp,
    exp.DateAdd, exp.DateDiff, exp.TimestampTrunc, exp.DateTrunc, exp.Year, exp.Quarter, exp.Month,
    exp.Day, exp.DayOfMonth, exp.DayOfWeekIso, exp.DayOfYear, exp.WeekOfYear, exp.Hour, exp.Minute,
    exp.Second, exp.Extract, exp.Greatest, exp.Least, exp.IsNan, exp.RegexpLike,
)  # fmt: skip
_NOT_STRICT_BINARY: tuple[type, ...] = (exp.Connector, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Is)
# Nodes whose sub-expressions are translated on their own (a TRY does not reach into them).
_TRY_LEAVES: tuple[type, ...] = (
    exp.AggFunc, exp.Window, exp.Subquery, exp.Query, exp.Exists, exp.Column, exp.Literal, exp.Null,
    exp.Boolean, exp.Star, exp.Interval,
)  # fmt: skip
# Functions sqlglot does not model: name -> (number of arguments, Spark equivalent).
_ANONYMOUS: dict[str, tuple[int, Callable[[list[exp.Expr]], exp.Expr]]] = {
    "every": (1, lambda a: _fn("BOOL_AND", *a)),
    "e": (0, lambda a: _fn("E")),
    "nan": (0, lambda a: _DOUBLE_NAN.copy()),
    "infinity": (0, lambda a: _DOUBLE_INF.copy()),
    "is_infinite": (1, lambda a: exp.EQ(this=_fn("ABS", a[0]), expression=_DOUBLE_INF.copy())),
    "is_finite": (
        1,
        lambda a: exp.not_(
            exp.or_(_fn("ISNAN", _dup(a[0])), exp.EQ(this=_fn("ABS", a[0]), expression=_DOUBLE_INF.copy()), copy=False),
            copy=False,
        ),
    ),
}
_DATE_UNITS = {"DAY", "WEEK", "MONTH", "QUARTER", "YEAR"}
_TIME_UNITS = {"MILLISECOND", "SECOND", "MINUTE", "HOUR"} | _DATE_UNITS
_STATEMENTS: tuple[type, ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Command,
    exp.TruncateTable, exp.Describe,
)  # fmt: skip


class _Rewriter:
    def __init__(self, typer: _Typer) -> None:
        self.ty = typer

    # ---- traversal

    def walk(self, node: exp.Expr, safe: bool = False) -> _R:
        if isinstance(node, exp.Try):
            inner = self.walk(node.this, safe=True)
            if inner.fail is None or not inner.absorbed:
                return _R(_atom(inner.v))
            return _R(_case([(inner.fail, exp.Null())], inner.v))
        if safe and isinstance(node, _TRY_LEAVES):
            return _R(self.walk(node, safe=False).v)
        if safe and isinstance(node, exp.Case):
            return self._try_case(node)
        types = {k: self._types_of(v) for k, v in node.args.items()}
        children: dict[str, Any] = {}
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expr):
                r = self.walk(value, safe)
                children[key] = r
                if r.v is not value:
                    node.set(key, r.v)
            elif isinstance(value, list) and any(isinstance(v, exp.Expr) for v in value):
                rs = [self.walk(v, safe) if isinstance(v, exp.Expr) else _R(v) for v in value]
                children[key] = rs
                if any(r.v is not v for r, v in zip(rs, value, strict=False)):
                    node.set(key, [r.v for r in rs])
        new, self_fail = self._translate(node, types, safe)
        if new is not node:
            new = _atom(new)
        if not safe:
            return _R(new)
        return self._compose(node, new, children, self_fail)

    def _types_of(self, value: Any) -> Any:
        if isinstance(value, exp.Expr):
            return self.ty.type_of(value)
        if isinstance(value, list):
            return [self.ty.type_of(v) if isinstance(v, exp.Expr) else NOTYPE for v in value]
        return None

    # ---- TRY bookkeeping

    def _compose(self, node: exp.Expr, new: exp.Expr, children: dict[str, Any], self_fail: exp.Expr | None) -> _R:
        flat: list[_R] = []
        for r in children.values():
            flat.extend(r if isinstance(r, list) else [r])
        fails = [r.fail for r in flat if r.fail is not None]
        absorbed = any(r.absorbed for r in flat)
        lazy = _lazy_fail(node, children)
        fail = _or(lazy if lazy is not None else _or(*fails), self_fail)
        strict = isinstance(node, _STRICT) and not isinstance(node, _NOT_STRICT_BINARY)
        if fails and not strict:
            absorbed = True
        return _R(new, fail, absorbed)

    def _try_case(self, node: exp.Case) -> _R:
        """CASE inside TRY: only the branch Trino evaluates can fail."""
        operand = node.args.get("this")
        r_op = self.walk(operand, True) if operand is not None else None
        if r_op is not None:
            node.set("this", r_op.v)
        conds, thens = [], []
        for if_node in node.args.get("ifs") or []:
            rc = self.walk(if_node.this, True)
            rt = self.walk(if_node.args["true"], True)
            if_node.set("this", rc.v)
            if_node.set("true", rt.v)
            conds.append(rc)
            thens.append(rt)
        r_default = None
        if node.args.get("default") is not None:
            r_default = self.walk(node.args["default"], True)
            node.set("default", r_default.v)
        rest = r_default.fail if r_default is not None else None
        for rc, rt in reversed(list(zip(conds, thens, strict=False))):
            test = rc.v if r_op is None else exp.EQ(this=_dup(r_op.v), expression=_dup(rc.v))
            match = exp.Coalesce(this=_dup(test) if r_op is None else test, expressions=[exp.false()])
            rest = _or(rc.fail, _both(match, rt.fail), _both(exp.not_(match.copy(), copy=False), rest))
        fail = _or(r_op.fail if r_op is not None else None, rest)
        return _R(node, fail, fail is not None)

    # ---- per-node translation

    def _translate(self, node: exp.Expr, types: dict[str, Any], safe: bool) -> tuple[exp.Expr, exp.Expr | None]:
        t = self.ty.type_of(node)
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node, types, t, safe)
        if isinstance(node, _STATEMENTS):
            raise _not_supported(f"{node.key.upper()} statements are translated by the planner, not as Spark SQL")
        if isinstance(node, exp.Anonymous):
            arity, build = _ANONYMOUS.get(_norm(node.name), (-1, None))
            if build is None or len(node.expressions) != arity:
                raise _not_supported(f"function {node.name}() is not supported on Spark")
            return build(list(node.expressions)), None
        if not _is_function(node):
            return node, None
        if type(node) not in _PASS_FUNCS and type(node) not in _HANDLED_FUNCS:
            raise _not_supported(f"function {_func_name(node)}() is not supported on Spark")
        if safe and type(node) not in _TRY_SAFE_FUNCS:
            raise _not_supported(f"function {_func_name(node)}() is not supported inside TRY")
        return node, None


def _func_name(node: exp.Expr) -> str:
    return node.sql_name() if isinstance(node, exp.Func) else node.key.upper()


def _is_function(node: exp.Expr) -> bool:
    """sqlglot models AND/OR and EXISTS as functions too; those are operators here."""
    return isinstance(node, exp.Func) and not isinstance(node, (exp.Connector, exp.Exists))


def _lazy_fail(node: exp.Expr, children: dict[str, Any]) -> exp.Expr | None:
    """Failure condition of the short-circuiting operators (Trino skips operands it does not need)."""
    if isinstance(node, (exp.And, exp.Or)):
        a, b = children.get("this"), children.get("expression")
        if a is None or b is None or b.fail is None:
            return None
        needed = (
            exp.Coalesce(this=_dup(a.v), expressions=[exp.true()])
            if isinstance(node, exp.And)
            else exp.not_(exp.Coalesce(this=_dup(a.v), expressions=[exp.false()]), copy=False)
        )
        return _or(a.fail, _both(needed, b.fail))
    if isinstance(node, exp.Coalesce):
        items = [children["this"]] + list(children.get("expressions") or [])
        rest = None
        for r in reversed(items):
            rest = _or(r.fail, _both(_is_null(r.v), rest))
        return rest
    if isinstance(node, exp.If):
        c, a, b = children["this"], children.get("true"), children.get("false")
        match = exp.Coalesce(this=_dup(c.v), expressions=[exp.false()])
        return _or(
            c.fail,
            _both(match, a.fail if a is not None else None),
            _both(exp.not_(match.copy(), copy=False), b.fail if b is not None else None),
        )
    return None


# ---- handlers: (rewriter, node with rewritten children, original child types, original type, safe)

_Out = tuple[exp.Expr, exp.Expr | None]
_Handler = Callable[[_Rewriter, Any, dict[str, Any], _T, bool], _Out]
_HANDLERS: dict[type, _Handler] = {}


def _handles(*kinds: type) -> Callable[[_Handler], _Handler]:
    def register(fn: _Handler) -> _Handler:
        for kind in kinds:
            _HANDLERS[kind] = fn
        return fn

    return register


def _need(t: _T, what: str) -> _T:
    if not t.known:
        raise _not_supported(f"cannot infer the operand types of {what}; pass the tables' column types in `schema`")
    return t


@_handles(exp.Div)
def _div(rw: _Rewriter, node: exp.Div, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    a, b = node.this, node.expression
    ta, tb = types["this"], types["expression"]
    if ta == UNKNOWN or tb == UNKNOWN:
        return _typed_null(t), None
    _need(t, f"the division {node.sql('trino')}")
    if t.integral:
        return _int_div(a, b, t, safe)
    if t.decimal:
        return _decimal_div(a, b, _as_decimal(ta), _as_decimal(tb), t, safe)
    if t.floating:
        # IEEE division (x/0 is ±Infinity or NaN on Trino; Spark's ANSI mode raises instead). The sign of
        # a zero divisor counts (1/-0.0 is -Infinity); Spark prints -0.0 with its sign.
        inf = _DOUBLE_INF.copy() if t == DOUBLE else _cast(_lit("Infinity"), "FLOAT")
        negative_zero = _fn("STARTSWITH", _cast(_dup(b), "STRING"), _lit("-"))
        signed_inf = _fn("IF", negative_zero, exp.Neg(this=inf.copy()), inf)
        by_zero = exp.Mul(this=_dup(a), expression=signed_inf)
        div = exp.Div(this=_atom(a), expression=_atom(b), typed=False, safe=False)
        return _case([(exp.EQ(this=_dup(b), expression=_lit(0)), by_zero)], div), None
    raise _not_supported(f"division of {ta} by {tb}")


def _typed_null(t: _T) -> exp.Expr:
    """NULL with Trino's result type (``NULL / 2`` is an INTEGER NULL)."""
    return _cast(exp.Null(), _spark_type(t)) if t.known and t != UNKNOWN else exp.Null()


def _int_div(a: exp.Expr, b: exp.Expr, t: _T, safe: bool) -> _Out:
    idiv = exp.IntDiv(this=_atom(a), expression=_atom(b))
    spark = _spark_type(t)
    if not safe:
        return (idiv if t == BIGINT else _cast(exp.Paren(this=idiv), spark)), None
    guard: exp.Expr = exp.EQ(this=_dup(b), expression=_lit(0))
    if t == BIGINT:  # Long.MIN_VALUE / -1 overflows inside DIV itself
        overflow = exp.and_(
            exp.EQ(this=_dup(a), expression=_lit(_INT_MIN["bigint"])),
            exp.EQ(this=_dup(b), expression=_lit(-1)),
            copy=False,
        )
        guard = exp.or_(guard, overflow, copy=False)
    value = _case([(guard, exp.Null())], _cast(exp.Paren(this=idiv), spark, safe=True))
    return value, _failed(value, a, b)


def _spark_decimal_div_scale(p1: int, s1: int, p2: int, s2: int) -> int:
    """Scale of Spark's decimal division result (spark.sql.decimalOperations.allowPrecisionLoss=true)."""
    scale = max(6, s1 + p2 + 1)
    precision = p1 - s1 + s2 + scale
    if precision <= _MAX_PRECISION:
        return scale
    int_digits = precision - scale
    return max(_MAX_PRECISION - int_digits, min(scale, 6))


def _decimal_div(a: exp.Expr, b: exp.Expr, da: _T, db: _T, t: _T, safe: bool) -> _Out:
    """Trino's decimal division: scale max(s1, s2), HALF_UP. Spark divides with a wider scale; widening
    the dividend first makes that scale at least ``s + p2`` so that rounding it again to ``s`` is exact."""
    assert da.p is not None and da.s is not None and db.p is not None and db.s is not None
    assert t.p is not None and t.s is not None
    extra = max(0, db.s - 1 - da.s)
    if extra and da.p + extra <= _MAX_PRECISION:
        a = _cast(a, f"DECIMAL({da.p + extra},{da.s + extra})")
        da = _decimal(da.p + extra, da.s + extra)
    assert da.p is not None and da.s is not None
    if _spark_decimal_div_scale(da.p, da.s, db.p, db.s) < t.s:
        raise _not_supported(
            f"decimal division {da} / {db}: Spark cannot compute the {t.s} fractional digits Trino returns"
        )
    spark = _spark_type(t)
    if not safe:
        return _cast(exp.Div(this=_atom(a), expression=_atom(b), typed=False, safe=False), spark), None
    value = _cast(_fn("TRY_DIVIDE", a, b), spark, safe=True)
    return value, _failed(value, a, b)


@_handles(exp.Mod)
def _mod(rw: _Rewriter, node: exp.Mod, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    a, b = node.this, node.expression
    if types["this"] == UNKNOWN or types["expression"] == UNKNOWN:
        return _typed_null(t), None
    _need(t, f"the modulus {node.sql('trino')}")
    if t.floating:
        nan = _DOUBLE_NAN.copy() if t == DOUBLE else _cast(_lit("NaN"), "FLOAT")
        mod = exp.Mod(this=_atom(a), expression=_atom(b))
        return _case([(exp.EQ(this=_dup(b), expression=_lit(0)), exp.Mul(this=_dup(a), expression=nan))], mod), None
    if not t.exact:
        raise _not_supported(f"modulus of {types['this']} by {types['expression']}")
    if not safe:
        return node, None  # Java remainder semantics on both engines; ANSI raises on zero
    value = _fn("TRY_MOD", a, b)
    return value, _failed(value, a, b)


@_handles(exp.Add, exp.Sub, exp.Mul)
def _add_sub_mul(rw: _Rewriter, node: exp.Binary, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    a, b = node.this, node.expression
    if t.decimal:
        a, b = _fit_decimal_operands(type(node), a, b, types["this"], types["expression"], safe)
        node.set("this", a)
        node.set("expression", b)
    if not safe or not t.exact:
        return node, None  # ANSI mode raises on integer/decimal overflow, as Trino does
    name = {exp.Add: "TRY_ADD", exp.Sub: "TRY_SUBTRACT", exp.Mul: "TRY_MULTIPLY"}[type(node)]
    value = _fn(name, a, b)
    return value, _failed(value, a, b)


def _fit_decimal_operands(
    op: type[exp.Expr], a: exp.Expr, b: exp.Expr, ta: _T, tb: _T, safe: bool
) -> tuple[exp.Expr, exp.Expr]:
    """Keep Spark from trading fractional digits for integer digits.

    Beyond 38 digits of precision Spark (``allowPrecisionLoss``) shrinks a result scale above 6, silently
    rounding e.g. decimal(38,10) + decimal(38,10) to 9 digits, while Trino keeps the scale and caps the
    precision at 38. Narrowing the operands' integer digits first gives Spark exactly Trino's result type;
    a value too large for a narrowed operand raises an overflow error instead of losing digits."""
    if not (ta.exact and tb.exact):
        return a, b
    sa, sb = _spark_decimal(ta), _spark_decimal(tb)
    int_a, int_b, s1, s2 = sa[0] - sa[1], sb[0] - sb[1], sa[1], sb[1]
    if op is exp.Mul:
        scale, raw = s1 + s2, int_a + int_b + s1 + s2 + 1
    else:
        scale, raw = max(s1, s2), max(int_a, int_b) + max(s1, s2) + 1
    if raw <= _MAX_PRECISION or max(_MAX_PRECISION - (raw - scale), min(scale, 6)) >= scale:
        return a, b  # Spark keeps the full scale
    budget = _MAX_PRECISION - 1 - scale  # integer digits Spark can keep without touching the scale
    if budget < 0:
        raise _not_supported(f"decimal arithmetic on {ta} and {tb}: scale {scale} is too large for Spark")
    if op is exp.Mul:
        if int_a + int_b > budget:
            half = budget // 2
            if int_a <= half:
                int_b = budget - int_a
            elif int_b <= budget - half:
                int_a = budget - int_b
            else:
                int_a, int_b = half, budget - half
    else:
        int_a, int_b = min(int_a, budget), min(int_b, budget)
    if ta.integral or int_a + s1 < sa[0]:
        a = _cast(a, f"DECIMAL({max(int_a + s1, 1)},{s1})", safe)
    if tb.integral or int_b + s2 < sb[0]:
        b = _cast(b, f"DECIMAL({max(int_b + s2, 1)},{s2})", safe)
    return a, b


def _spark_decimal(t: _T) -> tuple[int, int]:
    """(precision, scale) Spark gives an exact operand in decimal arithmetic (a BIGINT takes 20 digits)."""
    if t.integral:
        return {"tinyint": 3, "smallint": 5, "integer": 10, "bigint": 20}[t.name], 0
    assert t.p is not None and t.s is not None
    return t.p, t.s


@_handles(exp.Neg)
def _neg(rw: _Rewriter, node: exp.Neg, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if not safe or not t.integral:
        return node, None
    value = _fn("TRY_SUBTRACT", _cast(_lit(0), _spark_type(t)), node.this)
    return value, _failed(value, node.this)


@_handles(exp.Abs)
def _abs(rw: _Rewriter, node: exp.Abs, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if not safe or not t.integral:
        return node, None
    overflow = exp.EQ(this=_dup(node.this), expression=_cast(_lit(_INT_MIN[t.name]), _spark_type(t)))
    return _case([(overflow, exp.Null())], node), exp.Coalesce(this=overflow.copy(), expressions=[exp.false()])


# ---- casts


@_handles(exp.Cast, exp.TryCast)
def _cast_node(rw: _Rewriter, node: exp.Cast, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    src = types["this"]
    try_cast = isinstance(node, exp.TryCast)
    x = node.this
    literal = _typed_decimal_literal(node)
    if literal is None and isinstance(x, exp.Literal) and x.is_string and t.name.startswith("timestamp"):
        fraction = _FRACTION.search(x.this)
        if (len(fraction.group(1)) if fraction else 0) <= (t.p or 0):
            literal = t  # a TIMESTAMP '...' literal: exact as written, no rounding
    if literal is not None:
        value = _cast(x, _spark_type(literal), safe or try_cast)
        return value, (_failed(value, x) if safe else None)
    value, fail = _convert(x, src, t, safe or try_cast)
    if try_cast and not safe:
        return value, None
    return value, fail


def _convert(x: exp.Expr, src: _T, dst: _T, safe: bool) -> tuple[exp.Expr, exp.Expr | None]:
    """Spark expression computing Trino's ``CAST(x AS dst)`` for ``x`` of type ``src``."""
    if src == UNKNOWN:
        return _cast(x, _spark_type(dst)), None
    if dst.name in ("varchar", "char"):
        return _to_varchar(x, src, dst, safe)
    spark = _spark_type(dst)
    if dst.integral and not src.known:
        _need(src, f"CAST(... AS {dst})")  # a DOUBLE/DECIMAL operand must be rounded first
    if dst.integral and (src.floating or src.decimal):
        # Trino rounds half away from zero; Spark's CAST truncates.
        value = _cast(_fn("ROUND", x), spark, safe)
    elif dst.name.startswith("timestamp") and dst.p is not None and dst.p < 6 and _may_be_finer(src, dst.p):
        value = _round_timestamp(_cast(x, spark, safe), dst.p, tz=dst.name != "timestamp")
    elif dst.name in ("array", "map", "row", "interval day to second", "interval year to month") and src != dst:
        raise _not_supported(f"CAST from {src} to {dst} is not supported")
    else:
        value = _cast(x, spark, safe)
    return value, (_failed(value, x) if safe else None)


_FRACTION = re.compile(r":\d\d\.(\d+)")


def _round_timestamp(ts: exp.Expr, p: int, tz: bool) -> exp.Expr:
    """Round a Spark timestamp to ``p`` fractional digits the way Trino does (half up, toward +inf)."""
    factor = 10 ** (6 - p)
    ltz = ts if tz else _cast(ts, "TIMESTAMP")
    shifted = exp.Add(this=_fn("UNIX_MICROS", ltz), expression=_lit(factor // 2))
    floored = exp.Sub(
        this=exp.Paren(this=shifted), expression=_fn("PMOD", exp.Paren(this=shifted.copy()), _lit(factor))
    )
    out = _fn("TIMESTAMP_MICROS", exp.Paren(this=floored))
    return out if tz else _cast(out, "TIMESTAMP_NTZ")


def _may_be_finer(src: _T, p: int) -> bool:
    """Whether values of ``src`` may carry more fractional seconds than ``p`` (so a CAST must round)."""
    if src.name.startswith("timestamp"):
        return src.p is None or src.p > p
    return src.name != "date"


def _to_varchar(x: exp.Expr, src: _T, dst: _T, safe: bool) -> tuple[exp.Expr, exp.Expr | None]:
    n = dst.p
    if src.string:
        value: exp.Expr = x if n is None else exp.Substring(this=x, start=_lit(1), length=_lit(n))
        if dst.name == "char":
            value = exp.Pad(this=value, expression=_lit(n or 1), fill_pattern=_lit(" "), is_left=False)
        return value, None
    _need(src, f"CAST(... AS {dst})")
    if src.floating:
        text = _float_to_varchar(x, src)
    elif src.name == "timestamp":
        text = _fn("DATE_FORMAT", x, _lit(_ts_pattern(src.p)))
    elif src.name == "timestamp with time zone":
        text = exp.DPipe(this=_fn("DATE_FORMAT", x, _lit(_ts_pattern(src.p))), expression=_lit(" UTC"), safe=False)
    elif src.exact or src.name in ("boolean", "date", "varbinary"):
        text = _cast(x, "STRING")
    else:
        raise _not_supported(f"CAST from {src} to {dst} is not supported")
    if n is None:
        return text, None
    # Trino refuses (rather than truncates) a non-string value that does not fit varchar(n).
    too_long = exp.GT(this=exp.Length(this=_dup(text)), expression=_lit(n))
    if safe:
        value = _case([(too_long, exp.Null())], text)
        return value, exp.Coalesce(this=too_long.copy(), expressions=[exp.false()])
    message = f"[INVALID_CAST_ARGUMENT] Value cannot be represented as {dst}"
    value = _case([(too_long, _fn("RAISE_ERROR", _lit(message)))], text)
    if dst.name == "char":
        value = exp.Pad(this=value, expression=_lit(n), fill_pattern=_lit(" "), is_left=False)
    return value, None


def _ts_pattern(p: int | None) -> str:
    p = 3 if p is None else min(p, 6)
    return "yyyy-MM-dd HH:mm:ss" + ("." + "S" * p if p else "")


def _float_to_varchar(x: exp.Expr, src: _T) -> exp.Expr:
    """Trino formats REAL/DOUBLE as ``DecimalFormat("0.0###...E0")``: 1.5E0, 1.0E2, -1.25E-3, 0E0.

    Spark's CAST prints Java's shortest round-trip digits, plainly for 1e-3 <= |x| < 1e7 and as
    ``d.dddE±n`` otherwise; the plain form is re-normalised to a mantissa and exponent here."""
    s = _cast(x, "STRING")
    absval = exp.Paren(this=_fn("REGEXP_REPLACE", s.copy(), _lit("^-"), _lit("")))
    sign = _fn("IF", _fn("STARTSWITH", s.copy(), _lit("-")), _lit("-"), _lit(""))
    int_part = _fn("SUBSTRING_INDEX", absval.copy(), _lit("."), _lit(1))
    frac_part = _fn("SUBSTRING_INDEX", absval.copy(), _lit("."), _lit(-1))
    digits = exp.DPipe(this=int_part.copy(), expression=frac_part.copy(), safe=False)
    significant = _fn("REGEXP_REPLACE", _fn("REGEXP_REPLACE", digits, _lit("^0+"), _lit("")), _lit("0+$"), _lit(""))
    exponent = _fn(
        "IF",
        exp.NEQ(this=int_part.copy(), expression=_lit("0")),
        exp.Sub(this=exp.Length(this=int_part.copy()), expression=_lit(1)),
        exp.Neg(
            this=exp.Paren(
                this=exp.Add(
                    this=exp.Sub(
                        this=exp.Length(this=frac_part.copy()),
                        expression=exp.Length(this=_fn("REGEXP_REPLACE", frac_part.copy(), _lit("^0+"), _lit(""))),
                    ),
                    expression=_lit(1),
                )
            )
        ),
    )
    mantissa = exp.DPipe(
        this=exp.DPipe(this=_fn("LEFT", significant, _lit(1)), expression=_lit("."), safe=False),
        expression=_fn(
            "IF",
            exp.GT(this=exp.Length(this=significant.copy()), expression=_lit(1)),
            exp.Substring(this=significant.copy(), start=_lit(2)),
            _lit("0"),
        ),
        safe=False,
    )
    plain = exp.DPipe(
        this=exp.DPipe(this=exp.DPipe(this=sign, expression=mantissa, safe=False), expression=_lit("E"), safe=False),
        expression=_cast(exponent, "STRING"),
        safe=False,
    )
    return _case(
        [
            (_fn("ISNAN", x.copy()), _lit("NaN")),
            (
                exp.EQ(this=x.copy(), expression=_lit(0)),
                _fn("IF", _fn("STARTSWITH", s.copy(), _lit("-")), _lit("-0E0"), _lit("0E0")),
            ),
            (
                exp.Or(
                    this=_fn("CONTAINS", s.copy(), _lit("E")), expression=_fn("CONTAINS", s.copy(), _lit("Infinity"))
                ),
                s.copy(),
            ),
        ],
        plain,
    )


# ---- strings


@_handles(exp.Like)
def _like(rw: _Rewriter, node: exp.Like, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino's LIKE has no escape character unless ESCAPE is given; Spark's default is backslash."""
    if isinstance(node.parent, exp.Escape):
        return node, None
    pattern = node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        node.set("expression", exp.Literal.string(pattern.this.replace("\\", "\\\\")))
    else:
        node.set("expression", exp.Replace(this=pattern, expression=_lit("\\"), replacement=_lit("\\\\")))
    return node, None


@_handles(exp.Substring)
def _substring(rw: _Rewriter, node: exp.Substring, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino returns '' for start 0 or a negative start before the beginning; Spark clamps both."""
    start = node.args.get("start")
    if start is None or (start.is_int and int(start.name) > 0):
        return node, None
    length = node.args.get("length")
    s = node.this
    empty = exp.Substring(
        this=_dup(s),
        start=_lit(1),
        length=exp.Mul(this=_dup(length), expression=_lit(0)) if length is not None else _lit(0),
    )
    before_start = exp.or_(
        exp.EQ(this=_dup(start), expression=_lit(0)),
        exp.LT(this=_dup(start), expression=exp.Neg(this=exp.Length(this=_dup(s)))),
        copy=False,
    )
    return _case([(before_start, empty)], node), None


_WS = r"\p{javaWhitespace}"


@_handles(exp.Trim)
def _trim(rw: _Rewriter, node: exp.Trim, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino's one-argument trim removes all whitespace (Character.isWhitespace); Spark's only spaces."""
    if node.args.get("expression") is not None:
        return node, None
    position = (node.args.get("position") or "BOTH").upper()
    pattern = {"LEADING": f"^{_WS}+", "TRAILING": f"{_WS}+$"}.get(position, f"^{_WS}+|{_WS}+$")
    return _fn("REGEXP_REPLACE", node.this, _lit(pattern), _lit("")), None


@_handles(exp.StrPosition)
def _strpos(rw: _Rewriter, node: exp.StrPosition, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.args.get("occurrence") is not None or node.args.get("position") is not None:
        raise _not_supported("strpos with an instance argument is not supported")
    return node, None


@_handles(exp.Greatest, exp.Least)
def _greatest(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino's greatest/least return NULL when any argument is NULL; Spark's skip NULLs."""
    args = [node.this] + list(node.expressions)
    any_null = exp.or_(*[_is_null(a) for a in args], copy=False)
    return _case([(any_null, exp.Null())], node), None


@_handles(exp.If)
def _if(rw: _Rewriter, node: exp.If, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if not isinstance(node.parent, exp.Case) and node.args.get("false") is None:
        node.set("false", exp.Null())
    return node, None


# ---- numbers


@_handles(exp.Round)
def _round(rw: _Rewriter, node: exp.Round, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    x, d = node.this, node.args.get("decimals")
    src = _need(types["this"], f"{node.sql('trino')}")
    if src.integral:
        return (x if d is None else node), None
    if src.decimal:
        if d is not None and not (d.is_int or (isinstance(d, exp.Neg) and d.this.is_int)):
            raise _not_supported("round(decimal, n) needs a constant n on Spark")
        return _cast(node, _spark_type(t)), None
    if src.floating:
        return _round_float(x, d, src), None
    raise _not_supported(f"round({src})")


def _round_float(x: exp.Expr, d: exp.Expr | None, src: _T) -> exp.Expr:
    """Trino's round(double, d): ``Math.round(|x| * 10^d) / 10^d`` with x's sign (half away from zero,
    computed in binary floating point, so round(2.675, 2) = 2.67). Spark rounds the decimal text."""
    v = _cast(x, "DOUBLE") if src == REAL else _atom(x)
    factor = _fn("POWER", _lit(10), d) if d is not None else None

    def scaled(e: exp.Expr) -> exp.Expr:
        return exp.Mul(this=_atom(e), expression=factor.copy()) if factor is not None else e

    def unscaled(e: exp.Expr) -> exp.Expr:
        return (
            exp.Div(this=_atom(e), expression=factor.copy(), typed=False, safe=False)
            if factor is not None
            else _cast(e, "DOUBLE")
        )

    def half_up(e: exp.Expr) -> exp.Expr:
        return _fn("FLOOR", exp.Add(this=_atom(e), expression=_lit(0.5)))

    neg = exp.Neg(this=exp.Paren(this=unscaled(half_up(scaled(exp.Neg(this=v.copy()))))))
    pos = unscaled(half_up(scaled(v.copy())))
    big = exp.GTE(this=_fn("ABS", scaled(v.copy())), expression=_lit(_TWO_POW_52))
    value = _case(
        [
            (exp.or_(_fn("ISNAN", v.copy()), big, copy=False), v.copy()),
            (exp.LT(this=v.copy(), expression=_lit(0)), neg),
        ],
        pos,
    )
    return _cast(value, "FLOAT") if src == REAL else value


@_handles(exp.Floor, exp.Ceil)
def _floor(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    src = _need(types["this"], f"{node.sql('trino')}")
    if node.args.get("decimals") is not None:
        raise _not_supported(f"{_func_name(node)} with a scale is not supported")
    if src.integral:
        return node.this, None
    if src.floating:
        # Spark's FLOOR/CEIL of a DOUBLE is a BIGINT (and overflows); Trino keeps the floating type.
        x = node.this
        whole = exp.or_(
            _fn("ISNAN", x.copy()), exp.GTE(this=_fn("ABS", x.copy()), expression=_lit(_TWO_POW_52)), copy=False
        )
        return _case([(whole, x.copy())], _cast(node, _spark_type(src))), None
    return node, None


@_handles(exp.Sign)
def _sign(rw: _Rewriter, node: exp.Sign, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    src = _need(types["this"], f"{node.sql('trino')}")
    if src == DOUBLE:
        return node, None
    return _cast(node, _spark_type(t)), None


@_handles(exp.Ln, exp.Log)
def _ln(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino: ln(0) = -Infinity, ln(-1) = NaN (Java Math.log); Spark returns NULL for both."""
    if isinstance(node, exp.Log):
        base = node.this
        if node.expression is None or not (base.is_int and base.name in ("2", "10")):
            raise _not_supported("log(b, x) is not supported; use ln, log2 or log10")
        x = node.expression
        fn = "LOG2" if base.name == "2" else "LOG10"
    else:
        x, fn = node.this, "LN"
    neg_inf = exp.Neg(this=_DOUBLE_INF.copy())
    return (
        _case(
            [
                (exp.EQ(this=_dup(x), expression=_lit(0)), neg_inf),
                (exp.LT(this=_dup(x), expression=_lit(0)), _DOUBLE_NAN.copy()),
            ],
            _fn(fn, x),
        ),
        None,
    )


# ---- aggregates


@_handles(exp.Sum)
def _sum(rw: _Rewriter, node: exp.Sum, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if t.decimal and not isinstance(node.this, exp.Distinct):
        node.set("this", _cast(node.this, _spark_type(t)))  # Trino sums decimals as decimal(38, s)
    return node, None


@_handles(exp.Avg)
def _avg(rw: _Rewriter, node: exp.Avg, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if t.decimal:
        return _cast(node, _spark_type(t)), None  # Spark widens the scale by 4
    return node, None


@_handles(exp.Window, exp.Filter)
def _window(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """An aggregate whose result was wrapped (``CAST(avg(x) AS ...)``) must keep OVER/FILTER next to it:
    the wrapper moves outside, ``CAST(avg(x) OVER (...) AS ...)``."""
    inner = node.this
    if isinstance(inner, exp.Cast) and isinstance(inner.this, (exp.AggFunc, exp.Filter)):
        node.set("this", inner.this)
        inner.set("this", node)
        return inner, None
    return node, None


@_handles(exp.Grouping)
def _grouping(rw: _Rewriter, node: exp.Grouping, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if len(node.expressions) > 1:
        return _fn("GROUPING_ID", *node.expressions), None
    return node, None


# ---- date and time


def _unit(node: exp.Expr) -> str:
    unit = node.args.get("unit")
    name = (unit.name if unit is not None else "DAY").upper()
    return {"MILLISECONDS": "MILLISECOND"}.get(name, name)


@_handles(exp.DateAdd)
def _date_add(rw: _Rewriter, node: exp.DateAdd, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    unit, x, n = _unit(node), node.this, node.expression
    src = _need(types["this"], f"{node.sql('trino')}")
    if src == DATE:
        if unit not in _DATE_UNITS:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"'{unit.lower()}' is not a valid DATE field")
        count = _cast(n, "INT")
        if unit == "DAY":
            return _fn("DATE_ADD", x, count), None
        if unit == "WEEK":
            return _fn("DATE_ADD", x, exp.Mul(this=count, expression=_lit(7))), None
        months = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit]
        return _fn("ADD_MONTHS", x, count if months == 1 else exp.Mul(this=count, expression=_lit(months))), None
    if src.name.startswith("timestamp"):
        if unit not in _TIME_UNITS:
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"'{unit.lower()}' is not a valid TIMESTAMP field")
        return _fn("TIMESTAMPADD", exp.var(unit), n, x), None
    raise _not_supported(f"date_add on {src}")


@_handles(exp.DateDiff)
def _date_diff(rw: _Rewriter, node: exp.DateDiff, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    unit = _unit(node)
    src = _common_type(_need(types["this"], node.sql("trino")), _need(types["expression"], node.sql("trino")))
    allowed = _DATE_UNITS if src == DATE else _TIME_UNITS
    if unit not in allowed:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"'{unit.lower()}' is not a valid {src} field")
    return _fn("TIMESTAMPDIFF", exp.var(unit), node.expression, node.this), None


@_handles(exp.TimestampTrunc, exp.DateTrunc)
def _date_trunc(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    unit = _unit(node)
    src = _need(types["this"], f"{node.sql('trino')}")
    allowed = _DATE_UNITS if src == DATE else _TIME_UNITS
    if unit not in allowed:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"'{unit.lower()}' is not a valid {src} field")
    truncated = _fn("DATE_TRUNC", _lit(unit), node.this)
    if src == DATE:
        return _cast(truncated, "DATE"), None
    if src.name == "timestamp":
        return _cast(truncated, "TIMESTAMP_NTZ"), None
    return truncated, None


_EXTRACT: dict[str, Callable[[exp.Expr], exp.Expr]] = {
    "YEAR": lambda x: _fn("YEAR", x),
    "QUARTER": lambda x: _fn("QUARTER", x),
    "MONTH": lambda x: _fn("MONTH", x),
    "WEEK": lambda x: _fn("WEEKOFYEAR", x),
    "DAY": lambda x: _fn("DAY", x),
    "DAY_OF_MONTH": lambda x: _fn("DAY", x),
    "DAY_OF_WEEK": lambda x: exp.Add(this=_fn("WEEKDAY", x), expression=_lit(1)),
    "DOW": lambda x: exp.Add(this=_fn("WEEKDAY", x), expression=_lit(1)),
    "DAY_OF_YEAR": lambda x: _fn("DAYOFYEAR", x),
    "DOY": lambda x: _fn("DAYOFYEAR", x),
    "YEAR_OF_WEEK": lambda x: exp.Extract(this=exp.var("YEAROFWEEK"), expression=x),
    "YOW": lambda x: exp.Extract(this=exp.var("YEAROFWEEK"), expression=x),
    "HOUR": lambda x: _fn("HOUR", x),
    "MINUTE": lambda x: _fn("MINUTE", x),
    "SECOND": lambda x: _fn("SECOND", x),
}
_EXTRACT_NODES: dict[type[exp.Expr], str] = {
    exp.Year: "YEAR", exp.Quarter: "QUARTER", exp.Month: "MONTH", exp.Day: "DAY", exp.DayOfMonth: "DAY",
    exp.DayOfWeekIso: "DAY_OF_WEEK", exp.DayOfYear: "DAY_OF_YEAR", exp.WeekOfYear: "WEEK", exp.Hour: "HOUR",
    exp.Minute: "MINUTE", exp.Second: "SECOND",
}  # fmt: skip


def _extract_field(field_name: str, x: exp.Expr, src: _T) -> exp.Expr:
    build = _EXTRACT.get(field_name)
    if build is None:
        raise _not_supported(f"extract({field_name.lower()} ...) is not supported")
    if src == DATE and field_name in ("HOUR", "MINUTE", "SECOND"):
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"cannot extract {field_name.lower()} from a date")
    return _cast(build(x), "BIGINT")


@_handles(*_EXTRACT_NODES)
def _date_part(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _extract_field(_EXTRACT_NODES[type(node)], node.this, types["this"]), None


@_handles(exp.Extract)
def _extract(rw: _Rewriter, node: exp.Extract, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _extract_field(node.this.name.upper(), node.expression, types["expression"]), None


@_handles(exp.Localtimestamp)
def _localtimestamp(rw: _Rewriter, node: exp.Expr, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    return _fn("LOCALTIMESTAMP"), None


# ---- predicates and query structure


@_handles(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
def _compare(rw: _Rewriter, node: exp.Binary, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    right = node.expression
    if isinstance(right, (exp.Any, exp.All)):
        query = right.this
        subquery = query if isinstance(query, exp.Subquery) else exp.Subquery(this=query)
        if isinstance(right, exp.Any) and isinstance(node, exp.EQ):
            return exp.In(this=node.this, query=subquery), None
        if isinstance(right, exp.All) and isinstance(node, exp.NEQ):
            return exp.not_(exp.In(this=node.this, query=subquery), copy=False), None
        raise _not_supported(f"quantified comparison {node.key.upper()} {right.key.upper()} (subquery)")
    return node, None


@_handles(exp.Fetch)
def _fetch(rw: _Rewriter, node: exp.Fetch, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    options = node.args.get("limit_options")
    if options is not None and (options.args.get("with_ties") or options.args.get("percent")):
        raise _not_supported("FETCH ... WITH TIES / PERCENT is not supported on Spark")
    return exp.Limit(expression=node.args.get("count") or _lit(1)), None


@_handles(exp.Table)
def _table(rw: _Rewriter, node: exp.Table, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.args.get("version") is not None:
        raise _not_supported("time travel (FOR VERSION/TIMESTAMP AS OF) must be resolved before translation")
    if node.args.get("sample") is not None:
        raise _not_supported("TABLESAMPLE is not supported")
    return node, None


@_handles(exp.WindowSpec)
def _window_spec(rw: _Rewriter, node: exp.WindowSpec, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if _norm(node.args.get("kind")) == "groups":
        raise _not_supported("GROUPS window frames are not supported on Spark")
    return node, None


@_handles(exp.With)
def _with(rw: _Rewriter, node: exp.With, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if node.args.get("recursive"):
        raise _not_supported("WITH RECURSIVE is not supported")
    return node, None


@_handles(exp.Rand)
def _rand(rw: _Rewriter, node: exp.Rand, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if any(isinstance(v, exp.Expr) for v in node.args.values()):
        raise _not_supported("random(n) is not supported (Spark's rand(n) takes a seed)")
    return node, None


@_handles(exp.RegexpReplace)
def _regexp_replace(rw: _Rewriter, node: exp.RegexpReplace, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    if any(node.args.get(k) is not None for k in ("position", "occurrence", "modifiers")):
        raise _not_supported("regexp_replace with extra arguments is not supported")
    return node, None


@_handles(exp.Unnest)
def _unnest(rw: _Rewriter, node: exp.Unnest, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """UNNEST becomes EXPLODE (or INLINE(ARRAYS_ZIP(...)), NULL-padded like Trino) / LATERAL VIEW."""
    if node.args.get("offset"):
        raise _not_supported("UNNEST ... WITH ORDINALITY is not supported")
    join = node.parent
    if isinstance(join, exp.Join) and _norm(join.args.get("side")) in ("left", "right", "full"):
        raise _not_supported("an outer join with UNNEST is not supported")
    return node, None


@_handles(exp.GenerateSeries)
def _sequence(rw: _Rewriter, node: exp.GenerateSeries, types: dict[str, Any], t: _T, safe: bool) -> _Out:
    """Trino's sequence() of integers is array(bigint); Spark's keeps the argument type."""
    for key in ("start", "end", "step"):
        value = node.args.get(key)
        if value is not None and types.get(key, NOTYPE).integral:
            node.set(key, _cast(value, "BIGINT"))
    return node, None


def _refuse(what: str) -> _Handler:
    def handler(rw: _Rewriter, node: Any, types: dict[str, Any], t: _T, safe: bool) -> _Out:
        raise _not_supported(f"{what} is not supported")

    return handler


for _kind, _what in {
    exp.Lateral: "LATERAL",
    exp.Pivot: "PIVOT",
    exp.Bracket: "subscripts",
    exp.MatchRecognize: "MATCH_RECOGNIZE",
    exp.ArrayAgg: "array_agg",
    exp.GroupConcat: "listagg/string_agg",
    exp.AtTimeZone: "AT TIME ZONE",
}.items():
    _HANDLERS[_kind] = _refuse(_what)

_HANDLED_FUNCS: frozenset[type] = frozenset(k for k in _HANDLERS if issubclass(k, exp.Func))


# --------------------------------------------------------------------------------------------------
# pre-passes


def _name_projections(root: exp.Expr) -> None:
    """Give unnamed select items Trino's output names (``_col0``, ``_col1``, ...), and point ORDER BY
    items that repeat such an item at its name (Spark cannot resolve ``ORDER BY a + 1`` against
    ``SELECT DISTINCT a + 1 AS _col0``)."""
    for select in list(root.find_all(exp.Select)):
        renamed: list[tuple[exp.Expr, str]] = []
        for i, proj in enumerate(list(select.expressions)):
            inner = proj
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(proj, (exp.Alias, exp.Star)) or isinstance(inner, exp.Column):
                continue
            name = f"_col{i}"
            proj.replace(exp.Alias(this=proj.copy(), alias=exp.to_identifier(name)))
            renamed.append((proj, name))
        order = select.args.get("order")
        if order is not None and renamed:
            for ordered in order.expressions:
                for original, name in renamed:
                    if ordered.this == original:
                        ordered.set("this", exp.column(name))
                        break


def _wrap_top_values(root: exp.Expr) -> exp.Expr:
    """A top-level ``VALUES`` gets Trino's column names (``_col0``, ...) instead of Spark's ``col1``."""
    if isinstance(root, exp.Values) and root.args.get("alias") is None and root.expressions:
        first = root.expressions[0]
        width = len(first.expressions) if isinstance(first, exp.Tuple) else 1
        root.set(
            "alias",
            exp.TableAlias(
                this=exp.to_identifier("_values"),
                columns=[exp.to_identifier(f"_col{i}") for i in range(width)],
            ),
        )
        return exp.select("*").from_(root, copy=False)
    return root


# --------------------------------------------------------------------------------------------------
# generation


class _Generator(SparkGenerator):
    """Spark generator that always spells out the NULL ordering (Trino sorts NULLs last both ways)."""

    def ordered_sql(self, expression: exp.Ordered) -> str:
        this = self.sql(expression, "this")
        desc = bool(expression.args.get("desc"))
        nulls_first = bool(expression.args.get("nulls_first"))
        return f"{this} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if nulls_first else 'LAST'}"


_SPARK = Spark()


def _generate(tree: exp.Expr) -> str:
    generator = _Generator(dialect=_SPARK, identify=True, unsupported_level=ErrorLevel.RAISE)
    try:
        return generator.generate(tree)
    except UnsupportedError as e:
        raise _not_supported(f"cannot render for Spark: {e}") from e


def to_spark_sql(node: exp.Expression, *, schema: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """Render a Trino-dialect sqlglot tree (a whole query, or a lone expression) as Spark SQL.
    `schema` maps a table (view) name, as it appears in the tree, to {column name: Trino SQL type text
    such as 'integer', 'varchar', 'decimal(10,2)', 'timestamp(3) with time zone'}; it is used to infer
    expression types (Trino's typing rules, see ``_Typer``) where semantics depend on them: a division
    whose operand types cannot be inferred raises NOT_SUPPORTED rather than guess.
    Must not mutate `node` (copy it)."""
    if isinstance(node, _STATEMENTS):
        raise _not_supported(f"{node.key.upper()} statements are translated by the planner, not as Spark SQL")
    # Trino folds every identifier to lower case (quoted ones too): output column names follow.
    tree: exp.Expr = normalize_identifiers(node.copy(), dialect="trino")
    _name_projections(tree)
    tree = _wrap_top_values(tree)
    typer = _Typer(schema)
    for sub in list(tree.walk()):
        typer.type_of(sub)
    result = _Rewriter(typer).walk(tree)
    return _generate(result.v)
