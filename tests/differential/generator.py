"""A seeded generator of random tables and MERGE/UPDATE/DELETE/INSERT statements for the differential test against
PostgreSQL 15 (issue 16, item 8). Everything it writes is meant to be valid PostgreSQL 15 and valid mergekit SQL;
the two engines must agree on each statement's outcome and on the table afterwards (tests/differential/compare.py).

The unit is a :class:`Scenario`: a fresh target table ``tgt`` (a key column ``k``, one to four nullable or NOT NULL
``INTEGER``/``BIGINT``/``VARCHAR`` columns ``a``..``d``, a PRIMARY KEY most of the time, up to eight rows) and two to
six statements against it, run in order. Two read-only source tables ``src1`` (unique keys) and ``src2`` (repeated
and NULL keys), both ``(k INTEGER, x INTEGER, y BIGINT, w VARCHAR)``, are shared by :data:`BLOCK` consecutive
scenarios; a MERGE source is one of them, a query over them (filtered, computed, grouped, DISTINCT, a join of both,
a UNION ALL; now and then as a leading ``WITH``), or a ``VALUES`` list. Values include NULLs, empty strings and
numbers at the edge of INTEGER and BIGINT, so that conditions meet NULLs and arithmetic overflows.

``Generator(seed, features).scenario(i)`` depends only on ``(seed, features, i)``, so a disagreement is reproduced
by its seed and scenario index (``make fuzz SEED=s ONLY=i``).

Every statement carries ``hazards``: the error classes it was built to be able to raise (:data:`HAZARDS`), by a
planted mistake (a type error, an unreachable WHEN clause, a NOT MATCHED clause reading the target) or by its data
(NOT NULL, duplicate key, a target row matched twice, overflow, division by zero, a bad cast, a scalar subquery with
several rows, a CHECK). A PostgreSQL
error outside a statement's hazards is a generator bug. ``tags`` name the constructs that PostgreSQL and mergekit
treat differently on purpose (compare.DELIBERATE) and the optional features used.

Optional features (:data:`FEATURES`), off unless asked for: ``do_nothing`` (``WHEN ... THEN DO NOTHING``),
``defaults`` (column ``DEFAULT``s, omitted INSERT columns, ``DEFAULT VALUES``, ``DEFAULT`` in VALUES and SET),
``multi_set`` (``SET (a, b) = (x, y)`` in UPDATE and MERGE), ``check`` (CHECK constraints in CREATE TABLE and
``ALTER TABLE ... ADD CONSTRAINT``), ``dates`` (DATE target columns, date literals and date arithmetic: ``d + n``,
``n + d``, ``d - n``, ``d1 - d2`` and comparisons of the results; tests/differential/dates.py), ``zones``
(``TIMESTAMP`` and ``TIMESTAMP WITH TIME ZONE`` target columns, literals with time zones, hour and day arithmetic,
comparisons, Trino's cast to ``TIMESTAMP``; PostgreSQL's session in a zone other than UTC: tests/differential/
timestamps.py). With a feature off the generator writes none of it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tests.differential import dates, operands, timestamps

FEATURES = ("do_nothing", "defaults", "multi_set", "check", "dates", "zones")

# Error classes a statement may be built to raise (the values of compare.SQLSTATE_HAZARDS).
HAZARDS = (
    "type_error",  # a planted type mismatch (analysis time on both sides)
    "unreachable",  # a WHEN clause after an unconditional one of the same kind
    "not_null",
    "unique",  # the target's PRIMARY KEY
    "check",
    "dup_match",  # a target row changed by two source rows
    "subquery_rows",  # a scalar subquery returning more than one row
    "overflow",
    "div0",
    "cast",  # CAST of text to a number
    "target_ref",  # a NOT MATCHED clause referring to the target's columns
)

BLOCK = 10  # scenarios sharing one pair of source tables

INT_MAX = 2147483647
BIG_MAX = 9223372036854775807
INT_EDGES = (INT_MAX, -INT_MAX, INT_MAX - 1, 2147483000, 1000000000, -1000000000)
BIG_EDGES = (BIG_MAX, -BIG_MAX, 5000000000, -5000000000, 4611686018427387904)
STRINGS = ("a", "b", "ab", "B", "x", "", "7", "-3", "zz", "a b")
NUMERIC_STRINGS = ("7", "-3", "0", "12")

SOURCE_COLUMNS = (("k", "INTEGER"), ("x", "INTEGER"), ("y", "BIGINT"), ("w", "VARCHAR"))


def lit(value: object) -> str:
    """A value as an SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        return timestamps.literal(value)
    if isinstance(value, dt.date):
        return dates.date_literal(value)
    return str(value)


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # INTEGER, BIGINT, VARCHAR, DATE (feature ``dates``), timestamps.TS or TSTZ (feature ``zones``)
    not_null: bool = False
    default: str | None = None  # an SQL expression (feature ``defaults``)
    check: str | None = None  # a column CHECK condition (feature ``check``)

    def ddl(self) -> str:
        out = f"{self.name} {self.type}"
        if self.default is not None:
            out += f" DEFAULT {self.default}"
        if self.not_null:
            out += " NOT NULL"
        if self.check is not None:
            out += f" CHECK ({self.check})"
        return out


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: str | None  # the PRIMARY KEY column
    checks: tuple[tuple[str, str], ...] = ()  # named table CHECK constraints

    def create(self, dialect: str) -> str:
        parts = [c.ddl() for c in self.columns]
        parts += [f"CONSTRAINT {name} CHECK ({cond})" for name, cond in self.checks]
        if self.key is not None:
            # PostgreSQL checks a non-deferrable key row by row (UPDATE t SET k = k + 1 can fail on the way); a
            # DEFERRABLE INITIALLY IMMEDIATE one is checked at the end of the statement, as ISO SQL and mergekit do
            deferrable = " DEFERRABLE INITIALLY IMMEDIATE" if dialect == "postgres" else ""
            parts.append(f"PRIMARY KEY ({self.key}){deferrable}")
        return f"CREATE TABLE {self.name} ({', '.join(parts)})"

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Statement:
    sql: str
    kind: str  # merge, update, delete, insert, alter
    hazards: frozenset[str]
    tags: frozenset[str]
    # with tag null_left_operand: the statement with every operator written as Spark evaluates it (CASE WHEN a IS
    # NULL THEN NULL ELSE a + b END), which PostgreSQL runs to confirm that difference (runner.py)
    spark_nulls: str | None = None


@dataclass(frozen=True)
class Scenario:
    seed: int
    index: int
    features: frozenset[str]
    block: int  # which source tables (Generator.sources(block))
    target: Table
    rows: tuple[tuple[object, ...], ...]
    statements: tuple[Statement, ...]

    def setup(self, dialect: str) -> list[str]:
        out = [f"DROP TABLE IF EXISTS {self.target.name}", self.target.create(dialect)]
        if self.rows:
            out.append(f"INSERT INTO {self.target.name} VALUES {values_list(self.rows)}")
        return out


def values_list(rows: tuple[tuple[object, ...], ...] | list[tuple[object, ...]]) -> str:
    return ", ".join("(" + ", ".join(lit(v) for v in row) + ")" for row in rows)


@dataclass
class _Acc:
    """What one statement's generation has collected: hazards and tags."""

    hazards: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    # render operators as Spark evaluates them (a NULL left operand: NULL, the right one not evaluated), for the
    # PostgreSQL statement that checks compare.DELIBERATE's null_left_operand
    spark_nulls: bool = False


@dataclass(frozen=True)
class Ref:
    sql: str
    type: str


class Exprs:
    """Typed random expressions over ``refs`` (the columns in scope), with subqueries over the source tables when
    ``subqueries`` (correlated to an integer column in scope). Hazards and tags go to ``acc``."""

    def __init__(self, rng: random.Random, refs: list[Ref], acc: _Acc, *, subqueries: bool = False) -> None:
        self.rng, self.refs, self.acc, self.subqueries = rng, refs, acc, subqueries
        self.ints = [r for r in refs if r.type in ("INTEGER", "BIGINT")]
        self.raising = 0  # constructs generated so far that can raise an error (overflow, division, cast, subquery)
        self.strs = [r for r in refs if r.type == "VARCHAR"]
        self.dates = [r for r in refs if r.type == "DATE"]
        self.tss = [r for r in refs if r.type == timestamps.TS]
        self.tstzs = [r for r in refs if r.type == timestamps.TSTZ]

    # -- integers: (sql, type, constant) --

    def int_literal(self) -> tuple[str, str, bool]:
        r = self.rng.random()
        if r < 0.08:
            v = self.rng.choice(INT_EDGES)
            return str(v), "INTEGER", True
        if r < 0.11:
            return str(self.rng.choice(BIG_EDGES[2:4])), "BIGINT", True
        return str(self.rng.randint(-5, 20)), "INTEGER", True

    def raises(self, *hazards: str) -> None:
        self.acc.hazards.update(hazards)
        self.raising += 1

    def right_operand(self, before: int, left_constant: bool) -> None:
        """After generating an operator's right operand: when it can raise and the left one can be NULL, Spark (which
        skips the right operand of a NULL left one) and PostgreSQL (which evaluates both) may differ."""
        if self.raising > before and not left_constant:
            self.acc.tags.add("null_left_operand")

    def binary(self, a: str, op: str, b: str) -> str:
        if self.acc.spark_nulls:
            return f"CASE WHEN {a} IS NULL THEN NULL ELSE ({a} {op} {b}) END"
        return f"({a} {op} {b})"

    def int_(self, depth: int = 2) -> tuple[str, str, bool]:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.35:
            if self.ints and rng.random() < 0.7:
                ref = rng.choice(self.ints)
                return ref.sql, ref.type, False
            if rng.random() < 0.08:
                return "NULL", "INTEGER", True
            return self.int_literal()
        kind = rng.choices(
            ["arith", "div", "coalesce", "case", "abs", "cast_str", "cast_int", "nullif", "length", "subquery", "days"],
            [6, 2, 2, 2, 1, 0.5, 1, 1, 1, 2 if self.subqueries else 0, 1.5 if self.dates else 0],
        )[0]
        if kind == "arith":
            a, ta, ca = self.int_(depth - 1)
            before = self.raising
            b, tb, cb = self.int_(depth - 1)
            self.right_operand(before, ca)
            if ca and cb:  # PostgreSQL folds constants while planning: keep constant arithmetic harmless
                a, ta, ca = (self.rng.choice(self.ints).sql, "INTEGER", False) if self.ints else ("2", "INTEGER", True)
                b, tb = str(rng.randint(1, 9)), "INTEGER"
                ta = "BIGINT" if a in [r.sql for r in self.ints if r.type == "BIGINT"] else ta
            self.raises("overflow")
            op = rng.choice(["+", "-", "*", "+", "-"])
            return self.binary(a, op, b), _wider(ta, tb), ca and cb
        if kind == "div":
            a, ta, ca = self.int_(depth - 1)
            if rng.random() < 0.55 or ca:
                b, tb, cb = str(rng.choice([1, 2, 3, -2, 7])), "INTEGER", True
            elif self.ints and rng.random() < 0.25:  # zero wherever it is not NULL
                ref = rng.choice(self.ints)
                b, tb, cb = f"({ref.sql} - {ref.sql})", ref.type, False
                self.raises("div0")  # (NULL / 0 is NULL on both sides)
            else:
                before = self.raising
                b, tb, cb = self.int_(depth - 1)
                if cb:
                    b = str(rng.choice([1, 2, 3, -2, 7]))
                else:
                    self.right_operand(before, ca)
                    self.raises("div0")
            self.raises("overflow")  # INT_MIN / -1
            # constants divided by a constant are a constant: PostgreSQL computes it (and converts it to a column's
            # type) while planning, so a constant BIGINT must stay out of INTEGER columns (Exprs.value)
            return self.binary(a, rng.choice(["/", "%"]), b), _wider(ta, tb), ca and cb
        if kind == "coalesce":
            a, ta, ca = self.int_(depth - 1)
            b, tb, cb = self.int_(depth - 1)
            return f"COALESCE({_typed(a)}, {_typed(b)})", _wider(ta, tb), _coalesce_constant(a, ca, cb)
        if kind == "case":
            c = self.bool_(depth - 1)
            a, ta, ca = self.int_(depth - 1)
            b, tb, cb = self.int_(depth - 1)
            a, b = _typed(a), _typed(b)
            if rng.random() < 0.3:
                return f"CASE WHEN {c} THEN {a} END", ta, False
            return f"CASE WHEN {c} THEN {a} ELSE {b} END", _wider(ta, tb), False
        if kind == "abs":
            a, ta, ca = self.int_(depth - 1)
            self.raises("overflow")
            return f"ABS({a})", ta, ca
        if kind == "cast_str":
            s, cs = self.str_(depth - 1)
            target = rng.choice(["INTEGER", "BIGINT"])
            if cs:  # a constant would be cast while planning: only numeric text
                s = lit(rng.choice(NUMERIC_STRINGS))
            else:
                self.raises("cast", "overflow")
            return f"CAST({s} AS {target})", target, cs
        if kind == "cast_int":
            a, ta, ca = self.int_(depth - 1)
            if ca:
                return f"CAST({a} AS BIGINT)", "BIGINT", True
            target = rng.choice(["INTEGER", "BIGINT"])
            if ta == "BIGINT" and target == "INTEGER":
                self.raises("overflow")
            return f"CAST({a} AS {target})", target, False
        if kind == "nullif":
            a, ta, ca = self.int_(depth - 1)
            b, tb, cb = self.int_(depth - 1)
            return f"NULLIF({_typed(a)}, {b})", ta, ca and cb
        if kind == "length":
            # PostgreSQL's length() is INTEGER, Trino's BIGINT: the cast makes arithmetic on it the same
            s, cs = self.str_(depth - 1)
            return f"CAST(LENGTH({s}) AS INTEGER)", "INTEGER", cs
        if kind == "days":
            return dates.date_difference(self, depth)
        return self.scalar_subquery()

    def date_(self, depth: int = 2) -> tuple[str, bool]:
        return dates.date_(self, depth)

    def scalar_subquery(self) -> tuple[str, str, bool]:
        rng = self.rng
        outer = rng.choice(self.ints).sql if self.ints else "1"
        src = rng.choice(["src1", "src2"])
        r = rng.random()
        if r < 0.45:
            agg, col = rng.choice([("MAX", "x"), ("MIN", "x"), ("MAX", "y"), ("MIN", "k")])
            typ = "BIGINT" if col == "y" else "INTEGER"
            return f"(SELECT {agg}(q.{col}) FROM {src} AS q WHERE q.k = {outer})", typ, False
        if r < 0.65:
            return f"(SELECT COUNT(*) FROM {src} AS q WHERE q.k = {outer} OR q.x = {outer})", "BIGINT", False
        if r < 0.8:
            return f"(SELECT SUM(q.x) FROM {src} AS q WHERE q.k <= {outer})", "BIGINT", False
        # not aggregated: several rows where src2 repeats a key, or where more than one key is in range
        self.raises("subquery_rows")
        col = rng.choice(["x", "y"])
        cond = rng.choice([f"q.k = {outer}", f"q.k = {outer}", f"q.k BETWEEN {outer} AND {outer} + 1"])
        return f"(SELECT q.{col} FROM {src} AS q WHERE {cond})", "BIGINT" if col == "y" else "INTEGER", False

    # -- text: (sql, constant) --

    def str_(self, depth: int = 2) -> tuple[str, bool]:
        rng = self.rng
        if depth <= 0 or rng.random() < 0.4:
            return operands.leaf(self, self.strs, 0.7, 0.08, "CAST(NULL AS VARCHAR)", lambda: lit(rng.choice(STRINGS)))
        kind = rng.choices(
            ["concat", "case_fn", "substr", "coalesce", "case", "from_int", "replace"], [3, 2, 1, 2, 1, 2, 1]
        )[0]
        if kind == "concat":
            a, ca = self.str_(depth - 1)
            b, cb = self.str_(depth - 1)
            return f"({a} || {b})", ca and cb
        if kind == "case_fn":
            a, ca = self.str_(depth - 1)
            return f"{rng.choice(['UPPER', 'LOWER'])}({a})", ca
        if kind == "substr":
            a, ca = self.str_(depth - 1)
            return f"SUBSTR({a}, {rng.randint(1, 3)}, {rng.randint(0, 3)})", ca
        if kind == "coalesce":
            a, ca = self.str_(depth - 1)
            b, cb = self.str_(depth - 1)
            return f"COALESCE({a}, {b})", _coalesce_constant(a, ca, cb)
        if kind == "case":
            c = self.bool_(depth - 1)
            a, _ = self.str_(depth - 1)
            b, _ = self.str_(depth - 1)
            return f"CASE WHEN {c} THEN {a} ELSE {b} END", False
        if kind == "from_int":
            a, _, ca = self.int_(depth - 1)
            return f"CAST({a} AS VARCHAR)", ca
        a, ca = self.str_(depth - 1)
        return f"REPLACE({a}, {lit(rng.choice(['a', 'b', 'x']))}, {lit(rng.choice(['', 'q', 'ab']))})", ca

    # -- conditions --

    def bool_(self, depth: int = 2) -> str:
        rng = self.rng
        if depth <= 0:
            return self.comparison(0)
        kind = rng.choices(
            ["cmp", "and", "or", "not", "null", "in", "between", "like", "distinct", "subquery", "const"],
            [6, 2, 2, 1, 2, 1, 1, 1, 1, 2 if self.subqueries else 0, 0.3],
        )[0]
        if kind == "cmp":
            return self.comparison(depth - 1)
        if kind in ("and", "or"):
            return f"({self.bool_(depth - 1)} {kind.upper()} {self.bool_(depth - 1)})"
        if kind == "not":
            return f"NOT ({self.bool_(depth - 1)})"
        if kind == "null":
            e = self.int_(depth - 1)[0] if rng.random() < 0.6 else self.str_(depth - 1)[0]
            return f"{e} IS {rng.choice(['', 'NOT '])}NULL"
        if kind == "in":
            a, _, _ = self.int_(depth - 1)
            items = [str(rng.randint(-2, 12)) for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.2:
                items.append("NULL")
            return f"{a} {rng.choice(['', 'NOT '])}IN ({', '.join(items)})"
        if kind == "between":
            a, _, _ = self.int_(depth - 1)
            lo = rng.randint(-3, 8)
            return f"{a} BETWEEN {lo} AND {lo + rng.randint(0, 8)}"
        if kind == "like":
            s, _ = self.str_(depth - 1)
            return f"{s} {rng.choice(['', 'NOT '])}LIKE {lit(rng.choice(['a%', '%b', '_', '%', 'a_']))}"
        if kind == "distinct":
            if self.strs and rng.random() < 0.4:
                return f"{self.str_(depth - 1)[0]} IS {rng.choice(['', 'NOT '])}DISTINCT FROM {self.str_(depth - 1)[0]}"
            return f"{self.int_(depth - 1)[0]} IS {rng.choice(['', 'NOT '])}DISTINCT FROM {self.int_(depth - 1)[0]}"
        if kind == "subquery":
            return self.subquery_condition(depth - 1)
        return rng.choice(["TRUE", "FALSE"])

    def comparison(self, depth: int) -> str:
        op = self.rng.choice(["=", "<>", "<", "<=", ">", ">="])
        if self.dates and self.rng.random() < 0.35:
            return dates.date_comparison(self, depth, op)
        if (self.tss or self.tstzs) and self.rng.random() < 0.35:
            return timestamps.comparison(self, depth, op)
        if self.strs and self.rng.random() < 0.3:
            return f"{self.str_(depth)[0]} {op} {self.str_(depth)[0]}"

        def integer() -> tuple[str, bool]:
            sql, _, constant = self.int_(depth)
            return sql, constant

        return operands.compare(self, integer, self.ints, op)

    def subquery_condition(self, depth: int) -> str:
        rng = self.rng
        src = rng.choice(["src1", "src2"])
        inner = Exprs(rng, [Ref(f"q.{n}", t) for n, t in SOURCE_COLUMNS], self.acc)
        a, _, _ = self.int_(depth)
        r = rng.random()
        if r < 0.35:
            return f"{a} {rng.choice(['', 'NOT '])}IN (SELECT q.{rng.choice(['k', 'x'])} FROM {src} AS q WHERE {inner.bool_(1)})"
        if r < 0.7:
            outer = rng.choice(self.ints).sql if self.ints else "0"
            return (
                f"{rng.choice(['', 'NOT '])}EXISTS (SELECT 1 FROM {src} AS q WHERE q.k = {outer} AND {inner.bool_(1)})"
            )
        sub, _, _ = self.scalar_subquery()
        return f"{a} {rng.choice(['=', '<', '>='])} {sub}"

    # -- a value for a column --

    def value(self, typ: str, depth: int = 2) -> str:
        if typ == "VARCHAR":
            return self.str_(depth)[0]
        if typ == "DATE":
            return self.date_(depth)[0]
        if typ == timestamps.TSTZ:
            return timestamps.tstz_(self, depth)[0]
        if typ == timestamps.TS:
            return timestamps.ts_(self, depth)[0]
        sql, t, const = self.int_(depth)
        if typ == "INTEGER" and t == "BIGINT":
            if const:  # PostgreSQL would convert it while planning: a constant BIGINT stays out of INTEGER columns
                return str(self.rng.randint(-5, 20))
            self.acc.hazards.add("overflow")
        return sql


def _coalesce_constant(a: str, ca: bool, cb: bool) -> bool:
    """Whether PostgreSQL folds ``COALESCE(a, b)`` to a constant while planning: ``a`` a constant that is not NULL
    (the rest is dropped), or both constants."""
    return (ca and a not in ("NULL", "CAST(NULL AS VARCHAR)", "CAST(NULL AS INTEGER)")) or (ca and cb)


def _typed(sql: str) -> str:
    """A bare NULL typed INTEGER: PostgreSQL types CASE WHEN ... THEN NULL END, COALESCE(NULL, NULL) as text."""
    return "CAST(NULL AS INTEGER)" if sql == "NULL" else sql


def _is_int(typ: str) -> bool:
    return typ in ("INTEGER", "BIGINT")


def _wider(a: str, b: str) -> str:
    return "BIGINT" if "BIGINT" in (a, b) else "INTEGER"


class Generator:
    """Scenarios for one seed and set of optional features."""

    def __init__(self, seed: int, features: frozenset[str] | set[str] = frozenset()) -> None:
        unknown = set(features) - set(FEATURES)
        assert not unknown, f"unknown features: {sorted(unknown)}"
        self.seed = seed
        self.features = frozenset(features)

    # ---- source tables ----

    def sources(self, block: int) -> list[tuple[Table, list[tuple[object, ...]]]]:
        """The source tables of one block and their rows."""
        rng = random.Random(f"diff:{self.seed}:src:{block}")
        cols = tuple(Column(n, t) for n, t in SOURCE_COLUMNS)
        keys1 = rng.sample(range(0, 14), rng.randint(3, 8))
        src1 = [(k, *self._source_values(rng)) for k in keys1]
        keys2 = [None if rng.random() < 0.05 else rng.randint(0, 11) for _ in range(rng.randint(3, 9))]
        keys2 += [rng.choice(keys2)]  # at least one repeated key
        src2 = [(k, *self._source_values(rng)) for k in keys2]
        return [(Table("src1", cols, None), src1), (Table("src2", cols, None), src2)]

    def _source_values(self, rng: random.Random) -> tuple[object, ...]:
        return (self._int_value(rng, "INTEGER", 0.15), self._int_value(rng, "BIGINT", 0.15), self._str_value(rng, 0.15))

    def sources_setup(self, block: int, dialect: str) -> list[str]:
        out = []
        for table, rows in self.sources(block):
            out += [f"DROP TABLE IF EXISTS {table.name}", table.create(dialect)]
            if rows:
                out.append(f"INSERT INTO {table.name} VALUES {values_list(rows)}")
        return out

    @staticmethod
    def _int_value(rng: random.Random, typ: str, nulls: float) -> int | None:
        r = rng.random()
        if r < nulls:
            return None
        if r < nulls + 0.08:
            return rng.choice(INT_EDGES if typ == "INTEGER" else BIG_EDGES)
        return rng.randint(-5, 20)

    @staticmethod
    def _str_value(rng: random.Random, nulls: float) -> str | None:
        return None if rng.random() < nulls else rng.choice(STRINGS)

    # ---- scenarios ----

    def scenarios(self, n_statements: int, start: int = 0) -> Iterator[Scenario]:
        """Scenarios from index ``start`` on until they hold at least ``n_statements`` statements."""
        total, i = 0, start
        while total < n_statements:
            s = self.scenario(i)
            total += len(s.statements)
            i += 1
            yield s

    def scenario(self, index: int) -> Scenario:
        rng = random.Random(f"diff:{self.seed}:{sorted(self.features)}:{index}")
        target = self._target(rng)
        rows = self._rows(rng, target)
        ctx = _Context()
        statements = tuple(self._statement(rng, target, ctx) for _ in range(rng.randint(2, 6)))
        return Scenario(self.seed, index, self.features, index // BLOCK, target, rows, statements)

    def _target(self, rng: random.Random) -> Table:
        defaults = "defaults" in self.features
        checks = "check" in self.features
        key_type = "INTEGER" if rng.random() < 0.8 else "BIGINT"
        key_default = lit(rng.randint(0, 12)) if defaults and rng.random() < 0.15 else None
        cols = [Column("k", key_type, not_null=True, default=key_default)]
        types = ["INTEGER", "INTEGER", "BIGINT", "VARCHAR"] + (["DATE", "DATE"] if "dates" in self.features else [])
        types += [timestamps.TSTZ, timestamps.TS] if "zones" in self.features else []
        for name in ["a", "b", "c", "d"][: rng.randint(1, 4)]:
            typ = rng.choice(types)
            default = None
            if defaults and rng.random() < 0.4:
                default = self._default_expr(rng, typ)
            check = None
            if checks and _is_int(typ) and rng.random() < 0.25:
                check = f"{name} {rng.choice(['>=', '<>', '<'])} {rng.choice([-3, 0, 3, 10])}"
            cols.append(Column(name, typ, not_null=rng.random() < 0.15, default=default, check=check))
        table_checks: list[tuple[str, str]] = []
        if checks and rng.random() < 0.35:
            ints = [c.name for c in cols if _is_int(c.type)]
            strs = [c.name for c in cols if c.type == "VARCHAR"]
            if len(ints) >= 2 and rng.random() < 0.6:
                table_checks.append(("ck_pair", f"{ints[0]} <> {ints[1]} OR {ints[1]} IS NULL"))
            elif strs:
                table_checks.append(("ck_text", f"{strs[0]} <> 'zz'"))
            else:
                table_checks.append(("ck_key", "k < 40"))
        key = "k" if rng.random() < 0.85 else None
        return Table("tgt", tuple(cols), key, tuple(table_checks))

    def _default_expr(self, rng: random.Random, typ: str) -> str:
        if typ == "DATE":
            return dates.default_date(rng)
        if typ in (timestamps.TS, timestamps.TSTZ):
            return timestamps.default_value(rng, typ)
        if typ == "VARCHAR":
            return rng.choice(["'n/a'", "''", "'d' || 'x'"])
        return rng.choice(["-1", "0", "42", "(2 * 3)", "2147483647"])

    def _rows(self, rng: random.Random, target: Table) -> tuple[tuple[object, ...], ...]:
        keys = rng.sample(range(0, 12), rng.randint(0, 8))
        rows = []
        for k in keys:
            row: list[object] = [k]
            for col in target.columns[1:]:
                nulls = 0.0 if col.not_null else 0.25
                if col.type == "VARCHAR":
                    v: object = self._str_value(rng, nulls)
                elif col.type == "DATE":
                    v = None if rng.random() < nulls else dates.random_date(rng)
                elif col.type == timestamps.TS:
                    v = None if rng.random() < nulls else timestamps.random_wall(rng)
                elif col.type == timestamps.TSTZ:
                    v = None if rng.random() < nulls else timestamps.random_instant(rng)
                else:
                    v = self._int_value(rng, col.type, nulls)
                row.append(v)
            if not self._row_passes_checks(target, row):
                continue
            rows.append(tuple(row))
        return tuple(rows)

    @staticmethod
    def _row_passes_checks(target: Table, row: list[object]) -> bool:
        """The initial rows must satisfy the CHECK constraints (evaluated here for the few shapes _target writes)."""
        values = dict(zip(target.names, row, strict=True))
        for col in target.columns:
            if col.check is None or values[col.name] is None:
                continue
            _, op, bound = col.check.split(" ")
            v, b = values[col.name], int(bound)
            assert isinstance(v, int)
            if not {">=": v >= b, "<>": v != b, "<": v < b}[op]:
                return False
        for name, _ in target.checks:
            if name == "ck_pair":
                ints = [c.name for c in target.columns if _is_int(c.type)]
                if values[ints[1]] is not None and values[ints[0]] == values[ints[1]]:
                    return False
            if name == "ck_text":
                s = next(c.name for c in target.columns if c.type == "VARCHAR")
                if values[s] == "zz":
                    return False
        return True

    def _statement(self, rng: random.Random, target: Table, ctx: _Context) -> Statement:
        kinds = ["merge", "update", "delete", "insert"]
        weights = [45, 22, 12, 21]
        if "check" in self.features:
            kinds.append("alter")
            weights.append(4)
        kind = rng.choices(kinds, weights)[0]
        start, ctx_before = rng.getstate(), dataclasses.replace(ctx)
        writer = _Writer(rng, target, self.features, ctx)
        sql = getattr(writer, kind)()
        spark_nulls = None
        if "null_left_operand" in writer.acc.tags:  # the same statement again, with Spark's NULL evaluation
            end = rng.getstate()
            rng.setstate(start)
            again = _Writer(rng, target, self.features, ctx_before, spark_nulls=True)
            spark_nulls = getattr(again, kind)()
            assert rng.getstate() == end, "the two renderings drew different random numbers"
        return Statement(sql, kind, frozenset(writer.acc.hazards), frozenset(writer.acc.tags), spark_nulls)


# ---- statements --------------------------------------------------------------------------------------------------

# Planted type mistakes: (name, hazard or None, tag or None). PostgreSQL and mergekit both reject a text expression
# assigned to a number column and an operator between a number and text; PostgreSQL alone accepts a number assigned
# to a text column and a quoted literal assigned to a number column (compare.DELIBERATE).
PLANTS = (
    "set_text_to_number",
    "set_number_to_text",
    "set_literal_to_number",
    "compare_number_text",
    "add_text",
    "constant_error",  # an overflow or a division by zero of constants (compare.DELIBERATE: constant_folding)
)


@dataclass
class _Context:
    """What earlier statements of the scenario did that later ones must know."""

    constraints_added: int = 0


class _Writer:
    """Writes one statement against ``target``; hazards and tags are collected in ``acc``."""

    def __init__(
        self, rng: random.Random, target: Table, features: frozenset[str], ctx: _Context, *, spark_nulls: bool = False
    ) -> None:
        self.rng, self.target, self.features, self.ctx = rng, target, features, ctx
        self.acc = _Acc(spark_nulls=spark_nulls)
        self.plant = rng.choice(PLANTS) if rng.random() < 0.07 else None

    def has(self, feature: str) -> bool:
        return feature in self.features

    def use(self, feature: str) -> None:
        self.acc.tags.add(feature)

    # -- helpers --

    def writes(self, columns: list[Column]) -> None:
        """Hazards of writing these columns."""
        if any(c.not_null for c in columns):
            self.acc.hazards.add("not_null")
        if self.target.key is not None and any(c.name == self.target.key for c in columns):
            self.acc.hazards.add("unique")
        if self.target.checks or any(c.check for c in self.target.columns) or self.ctx.constraints_added:
            self.acc.hazards.add("check")
            self.use("check")

    def planted_value(self, col: Column, ex: Exprs, *, constant: bool) -> str | None:
        """The planted type mistake, if one is pending and fits ``col`` (``constant``: literals only)."""
        rng = self.rng
        number = _is_int(col.type)
        if self.plant == "set_text_to_number" and number:
            self.acc.hazards.add("type_error")
            value = "'ab' || ''"  # text, not an untyped literal: PostgreSQL rejects it too
            if not constant and ex.strs:
                value = rng.choice([ex.str_(1)[0], f"LOWER({rng.choice(ex.strs).sql})"])
                if not any(r.sql in value for r in ex.strs):
                    value = f"LOWER({rng.choice(ex.strs).sql})"
        elif self.plant == "set_number_to_text" and col.type == "VARCHAR":
            self.acc.tags.add("assign_number_to_text")
            value = str(rng.randint(-5, 20)) if constant else ex.int_(1)[0]
        elif self.plant == "constant_error" and number:
            self.acc.tags.add("constant_error")
            self.acc.hazards.update({"overflow", "div0"})
            value = rng.choice(["(2147483647 + 1)", "(1 / 0)", "(-2147483647 - 2)", "(7 % 0)"])
        elif self.plant == "set_literal_to_number" and number:
            self.acc.tags.add("assign_literal_to_number")
            text = rng.choice(["12", "-3", "ab", ""])
            if not text.lstrip("-").isdigit():
                self.acc.hazards.add("cast")
            value = lit(text)
        else:
            return None
        self.plant = None
        return value

    def default_value(self, col: Column) -> str:
        self.use("defaults")
        if col.default is None or col.not_null:
            self.writes([col])
        return "DEFAULT"

    def value(self, col: Column, ex: Exprs, *, allow_default: bool = True) -> str:
        """A value for ``col``: an expression of its type, a planted mistake, or DEFAULT."""
        planted = self.planted_value(col, ex, constant=False)
        if planted is not None:
            return planted
        if allow_default and self.has("defaults") and self.rng.random() < 0.1:
            return self.default_value(col)
        value = ex.value(col.type)
        if col.not_null and self.rng.random() < 0.7:  # most of the time, keep NOT NULL columns satisfied
            fallback = {
                "VARCHAR": lit(self.rng.choice(STRINGS)),
                "DATE": "DATE '2000-01-01'",
                timestamps.TS: timestamps.literal(dt.datetime(2000, 1, 1)),
                timestamps.TSTZ: timestamps.literal(dt.datetime(2000, 1, 1, tzinfo=dt.UTC)),
            }.get(col.type, "0")
            value = f"COALESCE({value}, {fallback})"
        return value

    def literal_value(self, col: Column) -> str:
        """A constant for a VALUES list (PostgreSQL folds constant expressions while planning: literals only)."""
        planted = self.planted_value(col, Exprs(self.rng, [], self.acc), constant=True)
        if planted is not None:
            return planted
        if self.has("defaults") and self.rng.random() < 0.1:
            return self.default_value(col)
        if self.rng.random() < 0.2:
            return "NULL"
        if col.type == "VARCHAR":
            return lit(self.rng.choice(STRINGS))
        if col.type == "DATE":
            self.acc.tags.add("dates")
            return lit(dates.random_date(self.rng))
        if col.type == timestamps.TS:
            self.acc.tags.add("zones")
            return lit(timestamps.random_wall(self.rng))
        if col.type == timestamps.TSTZ:
            self.acc.tags.add("zones")
            return timestamps.zoned_literal(self.rng)
        return str(Generator._int_value(self.rng, col.type, 0.0))

    def condition(self, ex: Exprs, depth: int = 2) -> str:
        cond = ex.bool_(depth)
        if self.plant == "compare_number_text" and ex.ints:
            self.plant = None
            self.acc.hazards.add("type_error")
            s = ex.strs[0].sql if ex.strs else "'1'"
            cond = f"({cond} OR {self.rng.choice(ex.ints).sql} = {s})" if ex.strs else cond
            if not ex.strs:
                self.acc.hazards.discard("type_error")
        elif self.plant == "add_text" and ex.ints and ex.strs:
            self.plant = None
            self.acc.hazards.add("type_error")
            cond = f"({cond} AND {self.rng.choice(ex.ints).sql} + {self.rng.choice(ex.strs).sql} > 0)"
        return cond

    def set_list(self, ex: Exprs, *, allow_key: bool, key_value: Callable[[Exprs], str] | None = None) -> str:
        rng = self.rng
        others = [c for c in self.target.columns if c.name != "k"]
        chosen = rng.sample(others, rng.randint(1, min(3, len(others))))
        items = [(c.name, self.value(c, ex)) for c in chosen]
        if allow_key and rng.random() < 0.12:
            key = self.target.column("k")
            chosen.append(key)
            items.append(("k", (key_value or self.key_move)(ex)))
        self.writes(chosen)
        if self.has("multi_set") and len(items) >= 2 and rng.random() < 0.5:
            self.use("multi_set")
            n = rng.randint(2, len(items))
            group, rest = items[:n], items[n:]
            head = f"({', '.join(c for c, _ in group)}) = ({', '.join(v for _, v in group)})"
            return ", ".join([head] + [f"{c} = {v}" for c, v in rest])
        return ", ".join(f"{c} = {v}" for c, v in items)

    def key_move(self, ex: Exprs) -> str:
        """A new key for a row: often another row's key, sometimes NULL."""
        self.acc.hazards.update({"unique", "not_null", "overflow"})
        keys = [r.sql for r in ex.ints if r.sql.endswith(".k")]
        base = self.rng.choice(keys) if keys else "0"
        return self.rng.choice([f"{base} + {self.rng.randint(1, 3)}", f"{base} + 20", f"{base} - 1", "NULL"])

    def target_refs(self, qualifier: str) -> list[Ref]:
        return [Ref(f"{qualifier}.{c.name}", c.type) for c in self.target.columns]

    # -- UPDATE, DELETE --

    def _aliased_target(self, subquery_chance: float) -> tuple[str, Exprs]:
        """UPDATE's and DELETE's target, ``tgt`` or ``tgt AS t``, and expressions over its columns."""
        alias = self.rng.choice([None, "t", "t"])
        ex = Exprs(self.rng, self.target_refs(alias or "tgt"), self.acc, subqueries=self.rng.random() < subquery_chance)
        return f"tgt{' AS ' + alias if alias else ''}", ex

    def _with_where(self, sql: str, ex: Exprs, chance: float) -> str:
        """``sql`` and, with ``chance``, a WHERE clause."""
        return f"{sql} WHERE {self.condition(ex)}" if self.rng.random() < chance else sql

    def update(self) -> str:
        target, ex = self._aliased_target(0.5)
        return self._with_where(f"UPDATE {target} SET {self.set_list(ex, allow_key=True)}", ex, 0.75)

    def delete(self) -> str:
        target, ex = self._aliased_target(0.6)
        return self._with_where(f"DELETE FROM {target}", ex, 0.85)

    # -- INSERT --

    def insert_columns(self) -> list[Column] | None:
        """The INSERT's columns: None for no column list (all, in table order)."""
        rng = self.rng
        cols = list(self.target.columns)
        r = rng.random()
        if r < 0.25:
            return None
        if r < 0.65:
            rng.shuffle(cols)
            return cols
        subset = [
            c for c in cols[1:] if rng.random() < 0.5 or (c.not_null and c.default is None and rng.random() < 0.9)
        ]
        omitted = [c for c in cols[1:] if c not in subset]
        self.omit(omitted)
        return [cols[0], *subset]

    def omit(self, omitted: list[Column]) -> None:
        """Omitted columns take their DEFAULT, or NULL."""
        if omitted:
            if any(c.default is not None for c in omitted):
                self.use("defaults")
            self.writes([c for c in omitted if c.default is None or c.not_null])

    def inserted_columns(self, default_values_chance: float) -> tuple[list[Column] | None, list[Column]] | None:
        """An INSERT's column list (None: no list) and the columns it writes, their hazards noted; None for
        ``DEFAULT VALUES`` (with ``default_values_chance`` where defaults are on): every column omitted."""
        if self.has("defaults") and self.rng.random() < default_values_chance:
            self.use("defaults")
            self.omit(list(self.target.columns))
            return None
        cols = self.insert_columns()
        written = cols if cols is not None else list(self.target.columns)
        self.writes(written)
        return cols, written

    def insert(self) -> str:
        rng = self.rng
        inserted = self.inserted_columns(0.06)
        if inserted is None:
            return "INSERT INTO tgt DEFAULT VALUES"
        cols, written = inserted
        head = "INSERT INTO tgt" + (f" ({', '.join(c.name for c in cols)})" if cols is not None else "")
        r = rng.random()
        if r < 0.55:
            rows = []
            for _ in range(rng.randint(1, 4)):
                row = []
                for c in written:
                    if c.name == "k" and rng.random() < 0.9:
                        row.append(lit(rng.choice([rng.randint(0, 11), rng.randint(8, 30), rng.randint(8, 30)])))
                    else:
                        row.append(self.literal_value(c))
                rows.append("(" + ", ".join(row) + ")")
            return f"{head} VALUES {', '.join(rows)}"
        if r < 0.88:
            src = rng.choice(["src1", "src2"])
            ex = Exprs(rng, [Ref(f"s.{n}", t) for n, t in SOURCE_COLUMNS], self.acc, subqueries=rng.random() < 0.2)
            key = rng.choice(["s.k", "s.k + 20", "COALESCE(s.k, 30) + 12", "s.x"])
            self.acc.hazards.add("overflow")
            values = [key if c.name == "k" else self.value(c, ex, allow_default=False) for c in written]
            sql = f"{head} SELECT {', '.join(values)} FROM {src} AS s"
        else:  # from the target itself
            ex = Exprs(rng, self.target_refs("t2"), self.acc, subqueries=rng.random() < 0.2)
            key = rng.choice(["t2.k + 20", "t2.k + 12", "t2.k * 3"])
            self.acc.hazards.add("overflow")
            values = [key if c.name == "k" else self.value(c, ex, allow_default=False) for c in written]
            sql = f"{head} SELECT {', '.join(values)} FROM tgt AS t2"
        if rng.random() < 0.5:
            sql += f" WHERE {self.condition(ex, 1)}"
        return sql

    # -- MERGE --

    def merge_source(self) -> tuple[str, str, bool]:
        """The USING source: ``("table", name, repeats)``, ``("query", text, repeats)`` or ``("values", text,
        repeats)`` (aliased ``s``, columns k, x, y, w); ``repeats``: it may hold a key more than once."""
        rng = self.rng
        r = rng.random()
        src = rng.choice(["src1", "src2"])
        if r < 0.3:
            return "table", src, src == "src2"
        if r < 0.6:
            return ("query", *self.source_query(src))
        rows = []
        for _ in range(rng.randint(1, 5)):
            k = None if rng.random() < 0.05 else rng.randint(0, 14)
            if rows and rng.random() < 0.2:
                k = rng.choice(rows)[0]
            rows.append(
                (
                    k,
                    Generator._int_value(rng, "INTEGER", 0.2),
                    Generator._int_value(rng, "BIGINT", 0.2),
                    Generator._str_value(rng, 0.2),
                )
            )
        keys = [row[0] for row in rows if row[0] is not None]
        rendered = []
        for i, row in enumerate(rows):
            cells = []
            for j, v in enumerate(row):
                if v is None and i == 0 and all(r[j] is None for r in rows):
                    cells.append(f"CAST(NULL AS {SOURCE_COLUMNS[j][1]})")  # PostgreSQL types an all-NULL column text
                else:
                    cells.append(lit(v))
            rendered.append("(" + ", ".join(cells) + ")")
        if len(rows) == 1:  # PostgreSQL pulls a one-row VALUES up into the statement as constants
            self.acc.tags.add("single_row_values")
        return "values", f"(VALUES {', '.join(rendered)})", len(set(keys)) < len(keys)

    def source_query(self, src: str) -> tuple[str, bool]:
        """A query over the source tables with the columns k, x, y, w, and whether it may repeat a key."""
        rng = self.rng
        ex = Exprs(rng, [Ref(f"q.{n}", t) for n, t in SOURCE_COLUMNS], self.acc)
        v = rng.random()
        if v < 0.3:
            return f"SELECT q.k, q.x, q.y, q.w FROM {src} AS q WHERE {ex.bool_(1)}", src == "src2"
        if v < 0.5:
            self.acc.hazards.add("overflow")
            self.acc.tags.add("computed_source")
            off = rng.randint(-2, 3)
            return f"SELECT q.k + {off} AS k, q.x * 2 AS x, q.y, UPPER(q.w) AS w FROM {src} AS q", src == "src2"
        if v < 0.65:
            return f"SELECT q.k, MAX(q.x) AS x, MIN(q.y) AS y, MAX(q.w) AS w FROM {src} AS q GROUP BY q.k", False
        if v < 0.75:
            return f"SELECT DISTINCT q.k, q.x, q.y, q.w FROM {src} AS q", src == "src2"
        if v < 0.88:
            join = rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
            return f"SELECT a.k, a.x, b.y, b.w FROM src1 AS a {join} src2 AS b ON a.k = b.k", True
        return (
            f"SELECT q.k, q.x, q.y, q.w FROM src1 AS q UNION ALL SELECT q.k, q.x, q.y, q.w FROM src2 AS q "
            f"WHERE {ex.bool_(1)}",
            True,
        )

    def merge(self) -> str:
        rng = self.rng
        alias = rng.choice(["t", "t", "t", None])
        tq = alias or "tgt"
        kind, text, _ = self.merge_source()
        with_ = ""
        if kind == "table":
            source = f"{text} AS s"
        elif kind == "values":
            source = f"{text} AS s(k, x, y, w)"
        elif rng.random() < 0.15:  # a leading WITH: the source is a CTE
            with_, source = f"WITH c AS ({text}) ", "c AS s"
        else:
            source = f"({text}) AS s"
        s_refs = [Ref(f"s.{n}", t) for n, t in SOURCE_COLUMNS]
        t_refs = self.target_refs(tq)
        ints = [c.name for c in self.target.columns if _is_int(c.type) and c.name != "k"]
        r = rng.random()
        if r < 0.65:
            on = f"{tq}.k = s.k"
        elif r < 0.7:  # no equality to join on
            on = f"({tq}.k = s.k OR {tq}.k = s.x)"
        elif r < 0.8:
            on = f"{tq}.k = s.k AND {Exprs(rng, s_refs + t_refs, self.acc).bool_(1)}"
        elif r < 0.9 or not ints:
            on = f"{tq}.k = s.x"
        else:
            on = f"{tq}.{rng.choice(ints)} = s.x"
        sub = rng.random() < 0.15
        both = Exprs(rng, t_refs + s_refs, self.acc, subqueries=sub)
        only_s = Exprs(rng, s_refs, self.acc, subqueries=sub)
        clauses: list[str] = []
        closed: set[str] = set()  # kinds with an unconditional clause already
        for _ in range(rng.randint(1, 4)):
            kind = "MATCHED" if rng.random() < 0.55 else "NOT MATCHED"
            if kind in closed:
                if rng.random() < 0.92:
                    kind = "NOT MATCHED" if kind == "MATCHED" else "MATCHED"
                    if kind in closed:
                        break
                else:
                    self.acc.hazards.add("unreachable")
            matched = kind == "MATCHED"
            ex = both if matched else only_s
            cond = ""
            if rng.random() < (0.5 if matched else 0.4):
                cond = f" AND {self.condition(ex)}"
            else:
                closed.add(kind)
            clauses.append(f"WHEN {kind}{cond} THEN {self.merge_action(matched, ex, tq)}")
        not_matched = [c for c in clauses if c.startswith("WHEN NOT MATCHED")]
        if not_matched and all(c.endswith("THEN DO NOTHING") for c in not_matched):
            # PostgreSQL then joins without the source rows no target row matches (compare.DELIBERATE)
            self.acc.tags.add("not_matched_only_do_nothing")
        if all(c.endswith("THEN DO NOTHING") or " AND FALSE THEN " in c for c in clauses):
            # nothing can change (a clause AND FALSE is never taken): mergekit computes neither the source nor the
            # join (compare.DELIBERATE)
            self.acc.tags.add("all_do_nothing")
        target = f"tgt{' AS ' + alias if alias else ''}"
        return f"{with_}MERGE INTO {target} USING {source} ON {on} {' '.join(clauses)}"

    def merge_action(self, matched: bool, ex: Exprs, tq: str) -> str:
        rng = self.rng
        if self.has("do_nothing") and rng.random() < 0.25:
            self.use("do_nothing")
            return "DO NOTHING"
        if matched:
            self.acc.hazards.add("dup_match")
            if rng.random() < 0.33:
                return "DELETE"
            return f"UPDATE SET {self.set_list(ex, allow_key=True, key_value=self.merge_key)}"
        inserted = self.inserted_columns(0.08)
        if inserted is None:
            return "INSERT DEFAULT VALUES"
        cols, written = inserted
        values = [self.merge_key(ex) if c.name == "k" else self.value(c, ex) for c in written]
        if rng.random() < 0.03:  # a NOT MATCHED clause has no target row to refer to
            self.acc.hazards.add("target_ref")
            i = rng.randrange(len(written))
            values[i] = f"{tq}.{written[i].name}"
        names = f" ({', '.join(c.name for c in cols)})" if cols is not None else ""
        return f"INSERT{names} VALUES ({', '.join(values)})"

    def merge_key(self, ex: Exprs) -> str:
        self.acc.hazards.update({"unique", "not_null"})
        r = self.rng.random()
        if r < 0.5:
            return "s.k"
        self.acc.hazards.add("overflow")
        return self.rng.choices(
            ["s.k + 20", "COALESCE(s.k, 40) + 1", "COALESCE(s.k, s.x, 41)", "s.x", "s.k + 1"], [3, 2, 2, 1, 1]
        )[0]

    # -- ALTER TABLE ... ADD CONSTRAINT (feature check) --

    def alter(self) -> str:
        rng = self.rng
        self.use("check")
        self.ctx.constraints_added += 1
        self.acc.hazards.add("check")
        name = f"ck_added{self.ctx.constraints_added}"
        cols = [c for c in self.target.columns if _is_int(c.type)]
        col = rng.choice(cols)
        cond = f"{col.name} {rng.choice(['>=', '<>', '<', '>'])} {rng.choice([-3, 0, 2, 9, 1000])}"
        if rng.random() < 0.3:
            cond += f" OR {col.name} IS NULL"
        return f"ALTER TABLE tgt ADD CONSTRAINT {name} CHECK ({cond})"
