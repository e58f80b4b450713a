"""A seeded generator of bad SQL statements (issue 14): every case is a user mistake or an unsupported statement
whose correct outcome is a coded ``MergekitError`` and no change to any table.

The statements run against a small fixed schema (:func:`setup_statements`), the same in every catalog kind:

* ``emp (id INTEGER NOT NULL, name VARCHAR NOT NULL, dept TINYINT, salary DECIMAL(10,2), big BIGINT, hired DATE)``
  with ``PRIMARY KEY (id)`` where the connector stores one (journal, partitioned over journal); rows 1..4, one of
  them with ``big`` near the BIGINT maximum and one with ``dept = 100`` (TINYINT overflow is one addition away);
* ``dept (id TINYINT, title VARCHAR)``;
* partitioned catalog only: range merge table ``m (a INTEGER, b VARCHAR)`` over ``c0 [0, 10)`` and ``c1 [10, 20)``,
  value merge table ``mv (k VARCHAR, n INTEGER)`` over ``v0 IN ('x', 'y')`` and ``v1 IN ('z')``, and two detached
  tables ``spare`` (one row, a = 5) and ``vspare`` to attach (overlapping) partitions with.

``Generator(seed, kind).cases(n)`` yields ``n`` :class:`Case` s; case ``i`` depends only on ``(seed, kind, i)``, so a
failing case is reproduced by its index. Each case names its category and the error codes acceptable for it (a
subset of the category's entry in :data:`ALLOWED`). Codes whose type is INTERNAL_ERROR are never acceptable.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass

KINDS = ("journal", "partitioned", "memory")

# Codes a statement that is too deep or too large for the engine may legitimately fail with, besides the error its
# content is built to raise (Trino: QUERY_TEXT_TOO_LARGE; STATEMENT_TOO_DEEP is mergekit's).
LIMIT_CODES = frozenset(
    {"SYNTAX_ERROR", "NOT_SUPPORTED", "GENERIC_USER_ERROR", "QUERY_TEXT_TOO_LARGE", "STATEMENT_TOO_DEEP"}
)

# The allow-map: for each category, every code any of its cases may accept.
ALLOWED: dict[str, frozenset[str]] = {
    "syntax_garbage": frozenset({"SYNTAX_ERROR"}),
    "truncated": frozenset({"SYNTAX_ERROR"}),
    "unbalanced": frozenset({"SYNTAX_ERROR"}),
    "mutation": frozenset({"SYNTAX_ERROR", "NOT_SUPPORTED"}),
    "unknown_name": frozenset(
        {
            "TABLE_NOT_FOUND",
            "COLUMN_NOT_FOUND",
            "SCHEMA_NOT_FOUND",
            "CATALOG_NOT_FOUND",
            "FUNCTION_NOT_FOUND",
            "INVALID_TABLE_PROPERTY",
        }
    ),
    "type_error": frozenset(
        {
            "TYPE_MISMATCH",
            "INVALID_CAST_ARGUMENT",
            "FUNCTION_NOT_FOUND",
            "INVALID_FUNCTION_ARGUMENT",
            "NOT_SUPPORTED",
            "SYNTAX_ERROR",
        }
    ),
    "not_null": frozenset({"CONSTRAINT_VIOLATION"}),
    "primary_key": frozenset({"CONSTRAINT_VIOLATION"}),
    # SYNTAX_ERROR only for integer literals beyond BIGINT (Trino: "Invalid numeric literal")
    "overflow": frozenset({"NUMERIC_VALUE_OUT_OF_RANGE", "INVALID_CAST_ARGUMENT", "SYNTAX_ERROR"}),
    "division_by_zero": frozenset({"DIVISION_BY_ZERO"}),
    "duplicate_match": frozenset({"MERGE_TARGET_ROW_MULTIPLE_MATCHES"}),
    "unroutable": frozenset({"PARTITION_NOT_FOUND"}),
    "overlapping_partition": frozenset({"PARTITION_OVERLAP"}),
    "injection": frozenset(
        {
            "TABLE_NOT_FOUND",
            "COLUMN_NOT_FOUND",
            "SCHEMA_NOT_FOUND",
            "CATALOG_NOT_FOUND",
            "FUNCTION_NOT_FOUND",
            "SYNTAX_ERROR",
            "INVALID_ARGUMENTS",
        }
    ),
    "deep_nesting": LIMIT_CODES
    | frozenset({"COLUMN_NOT_FOUND", "DIVISION_BY_ZERO", "TYPE_MISMATCH", "INVALID_CAST_ARGUMENT"}),
    "huge": LIMIT_CODES | frozenset({"COLUMN_NOT_FOUND", "CONSTRAINT_VIOLATION", "MERGE_TARGET_ROW_MULTIPLE_MATCHES"}),
    "unsupported": frozenset(
        {"NOT_SUPPORTED", "SYNTAX_ERROR", "INVALID_TABLE_PROPERTY", "TABLE_NOT_FOUND", "INVALID_PARTITION"}
    ),
}

# Category weights (cases per 100, roughly). ``huge`` costs seconds per case: the generator also caps it (see
# ``Generator.huge_every``). Partition categories exist only in the partitioned catalog, primary keys only where
# the connector stores them.
WEIGHTS: dict[str, int] = {
    "syntax_garbage": 8,
    "truncated": 6,
    "unbalanced": 6,
    "mutation": 10,
    "unknown_name": 10,
    "type_error": 9,
    "not_null": 6,
    "primary_key": 3,
    "overflow": 7,
    "division_by_zero": 7,
    "duplicate_match": 6,
    "unroutable": 7,
    "overlapping_partition": 4,
    "injection": 8,
    "deep_nesting": 4,
    "unsupported": 9,
}


@dataclass(frozen=True)
class Case:
    index: int
    category: str
    label: str  # the variant within the category
    sql: str
    codes: frozenset[str]

    def short(self, limit: int = 200) -> str:
        text = self.sql if len(self.sql) <= limit else f"{self.sql[:limit]}... ({len(self.sql):,} chars)"
        return text.replace("\n", "\\n")


# ---- the schema --------------------------------------------------------------------------------------------------

EMP_ROWS = [
    (1, "ann", 10, "1000.50", 100, "2020-01-01"),
    (2, "bob", 20, "2000.00", 9000000000000000000, "2021-06-15"),
    (3, "cid", 100, "300.25", -5, "2019-12-31"),
    (4, "dee", None, None, None, None),
]
EMP_IDS = [r[0] for r in EMP_ROWS]
EMP_COLUMNS = ("id", "name", "dept", "salary", "big", "hired")


def has_primary_key(kind: str) -> bool:
    return kind in ("journal", "partitioned")


def setup_statements(kind: str) -> list[str]:
    """The schema and its rows, for one catalog kind."""
    pk = ", PRIMARY KEY (id)" if has_primary_key(kind) else ""

    def lit(v: object, typ: str = "") -> str:
        if v is None:
            return "NULL"
        if typ == "date":
            return f"DATE '{v}'"
        if typ == "dec":
            return f"DECIMAL '{v}'"
        return f"'{v}'" if isinstance(v, str) else str(v)

    emp_values = ", ".join(
        f"({r[0]}, {lit(r[1])}, {lit(r[2])}, {lit(r[3], 'dec')}, {lit(r[4])}, {lit(r[5], 'date')})" for r in EMP_ROWS
    )
    out = [
        "CREATE TABLE emp (id INTEGER NOT NULL, name VARCHAR NOT NULL, dept TINYINT, salary DECIMAL(10,2), "
        f"big BIGINT, hired DATE{pk})",
        f"INSERT INTO emp VALUES {emp_values}",
        "CREATE TABLE dept (id TINYINT, title VARCHAR)",
        "INSERT INTO dept VALUES (10, 'eng'), (20, 'ops'), (100, 'hr')",
    ]
    if kind == "partitioned":
        out += [
            "CREATE MERGE TABLE m (a INTEGER, b VARCHAR) PARTITION BY RANGE ON (a)",
            "CREATE TABLE c0 (a INTEGER, b VARCHAR)",
            "ALTER TABLE m ADD TABLE c0 AS PARTITION FROM 0 TO 10",
            "CREATE TABLE c1 (a INTEGER, b VARCHAR)",
            "ALTER TABLE m ADD TABLE c1 AS PARTITION FROM 10 TO 20",
            "INSERT INTO m VALUES (1, 'x'), (2, 'y'), (11, 'p'), (12, 'q')",
            "CREATE MERGE TABLE mv (k VARCHAR, n INTEGER) PARTITION BY VALUES ON (k)",
            "CREATE TABLE v0 (k VARCHAR, n INTEGER)",
            "ALTER TABLE mv ADD TABLE v0 AS PARTITION IN ('x', 'y')",
            "CREATE TABLE v1 (k VARCHAR, n INTEGER)",
            "ALTER TABLE mv ADD TABLE v1 AS PARTITION IN ('z')",
            "INSERT INTO mv VALUES ('x', 1), ('y', 2), ('z', 3)",
            "CREATE TABLE spare (a INTEGER, b VARCHAR)",
            "INSERT INTO spare VALUES (5, 's')",
            "CREATE TABLE vspare (k VARCHAR, n INTEGER)",
        ]
    return out


def tables(kind: str) -> list[str]:
    """Every table the schema creates (whose contents must never change)."""
    out = ["emp", "dept"]
    if kind == "partitioned":
        out += ["m", "c0", "c1", "mv", "v0", "v1", "spare", "vspare"]
    return out


def valid_statements(kind: str) -> list[str]:
    """Valid DML on the schema: the material of the mutation, truncation and unbalancing categories (each of these
    would succeed as written; tests/badsql checks that they parse)."""
    out = [
        "UPDATE emp SET name = 'zed' WHERE id = 1",
        "UPDATE emp SET dept = dept + 1, salary = salary * 2 WHERE id IN (1, 2)",
        "UPDATE dept SET title = upper(title) WHERE id = 10",
        "DELETE FROM emp WHERE id = 2",
        "DELETE FROM emp WHERE hired < DATE '2020-06-01' AND dept IS NOT NULL",
        "INSERT INTO emp (id, name, dept) VALUES (50, 'new', 5)",
        "INSERT INTO emp VALUES (51, 'eve', 7, 10.5, 1, DATE '2022-02-02')",
        "INSERT INTO dept SELECT id + 1, name FROM emp WHERE id < 3",
        "MERGE INTO emp t USING (VALUES (1, 'ann2'), (60, 'neo')) AS s(id, name) ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
        "MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED AND s.title = 'hr' THEN DELETE",
    ]
    if kind == "partitioned":
        out += [
            "UPDATE m SET b = 'w' WHERE a = 11",
            "DELETE FROM m WHERE a < 5",
            "INSERT INTO m VALUES (3, 'c'), (13, 'd')",
            "MERGE INTO m t USING (VALUES (1, 'u'), (7, 'v')) AS s(a, b) ON t.a = s.a "
            "WHEN MATCHED THEN UPDATE SET b = s.b WHEN NOT MATCHED THEN INSERT VALUES (s.a, s.b)",
            "UPDATE mv SET n = n + 1 WHERE k = 'z'",
        ]
    return out


# ---- tokens ------------------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\w+(?:\.\w+)*|<=|>=|<>|!=|\S")

# keywords whose removal from a valid statement of valid_statements() always breaks it (INTO and FROM are not in the
# list: some dialects read `INSERT t` and `DELETE t` as the statements with them)
_DROPPABLE = {"UPDATE", "SET", "MERGE", "USING", "ON", "WHEN", "MATCHED", "THEN", "VALUES", "WHERE", "SELECT"}
_DUPLICABLE = {
    "UPDATE",
    "SET",
    "DELETE",
    "FROM",
    "MERGE",
    "INTO",
    "USING",
    "ON",
    "WHEN",
    "MATCHED",
    "THEN",
    "VALUES",
    "WHERE",
    "AND",
    "INSERT",
    "SELECT",
    ",",
}
# a statement cut right after one of these is incomplete
_DANGLING = {
    "UPDATE",
    "SET",
    "DELETE",
    "FROM",
    "MERGE",
    "INTO",
    "USING",
    "ON",
    "WHEN",
    "MATCHED",
    "THEN",
    "VALUES",
    "WHERE",
    "AND",
    "INSERT",
    "SELECT",
    "IN",
    "IS",
    "NOT",
    "AS",
    "=",
    "<",
    "+",
    "*",
    "(",
    ",",
}


def tokens(sql: str) -> list[str]:
    return _TOKEN.findall(sql)


def _join(toks: list[str]) -> str:
    return " ".join(toks)


# ---- the generator -----------------------------------------------------------------------------------------------


class Generator:
    """Bad statements for one catalog kind. ``depth`` is the nesting depth of deep cases, ``huge_bytes`` the size (or
    the sizes to choose from) of huge ones, ``huge_every`` how many cases pass between two huge ones (0: none)."""

    def __init__(
        self,
        seed: int,
        kind: str,
        *,
        depth: int = 1000,
        huge_bytes: int | tuple[int, ...] = 5_000_000,
        huge_every: int = 100,
    ) -> None:
        assert kind in KINDS, kind
        self.seed = seed
        self.kind = kind
        self.depth = depth
        self.huge_bytes = huge_bytes
        self.huge_every = huge_every
        self.valid = valid_statements(kind)
        self.categories = [c for c in WEIGHTS if self._applies(c)]
        self.weights = [WEIGHTS[c] for c in self.categories]

    def _applies(self, category: str) -> bool:
        if category in ("unroutable", "overlapping_partition"):
            return self.kind == "partitioned"
        if category == "primary_key":
            return has_primary_key(self.kind)
        return True

    def cases(self, n: int, start: int = 0) -> Iterator[Case]:
        for i in range(start, start + n):
            yield self.case(i)

    def case(self, i: int) -> Case:
        rng = random.Random(f"{self.seed}:{self.kind}:{i}")
        if self.huge_every and i % self.huge_every == self.huge_every // 2:
            category = "huge"
        else:
            category = rng.choices(self.categories, self.weights)[0]
        make: Callable[[random.Random], tuple[str, str, frozenset[str] | set[str] | None]] = getattr(self, category)
        label, sql, codes = make(rng)
        allowed = ALLOWED[category]
        codes = frozenset(codes) if codes else allowed
        assert codes <= allowed, (category, label, codes - allowed)
        return Case(index=i, category=category, label=label, sql=sql, codes=codes)

    # -- helpers --

    @staticmethod
    def _word(rng: random.Random, prefix: str = "nosuch_") -> str:
        return prefix + "".join(rng.choices(string.ascii_lowercase, k=6))

    def _fresh_table(self, rng: random.Random) -> str:
        return self._word(rng, "bad_")

    @staticmethod
    def _fresh_id(rng: random.Random) -> int:
        return rng.randint(1000, 99999)

    def _existing_id(self, rng: random.Random) -> int:
        return rng.choice(EMP_IDS)

    # -- categories: each returns (label, sql, acceptable codes or None for the category's) --

    def syntax_garbage(self, rng: random.Random) -> tuple[str, str, None]:
        # a first token no statement starts with, then anything
        starters = [")", ",", "WHERE", "THEN", "=", "FROM", "ON", "AND", "*", "WHEN", "END", "BY", "INTO", "+", ";;"]
        vocab = [
            "SELECT",
            "UPDATE",
            "DELETE",
            "MERGE",
            "INSERT",
            "INTO",
            "FROM",
            "WHERE",
            "SET",
            "VALUES",
            "USING",
            "ON",
            "WHEN",
            "MATCHED",
            "THEN",
            "AND",
            "OR",
            "NOT",
            "NULL",
            "emp",
            "dept",
            "id",
            "name",
            "(",
            ")",
            ",",
            "=",
            "<",
            "*",
            "+",
            "-",
            "1",
            "'a'",
            "42",
            "CASE",
            "END",
            "AS",
            "t.id",
            ".",
            "::",
            "[",
            "]",
            "{",
            "}",
            "@",
            "#",
            "$",
            "?",
        ]
        toks = [rng.choice(starters)] + rng.choices(vocab, k=rng.randint(0, 20))
        return "random_tokens", _join(toks), None

    def truncated(self, rng: random.Random) -> tuple[str, str, None]:
        for _ in range(100):
            toks = tokens(rng.choice(self.valid))
            cuts = [k for k in range(1, len(toks)) if toks[k - 1].upper() in _DANGLING]
            if cuts:
                k = rng.choice(cuts)
                return "cut_after_" + toks[k - 1].lower(), _join(toks[:k]), None
        raise AssertionError("no cut point")

    def unbalanced(self, rng: random.Random) -> tuple[str, str, None]:
        toks = tokens(rng.choice(self.valid))
        how = rng.choice(["open_paren", "close_paren", "drop_close", "quote", "double_quote", "open_string"])
        pos = rng.randint(1, len(toks))
        if how == "open_paren":
            toks.insert(pos, "(")
        elif how == "close_paren":
            toks.insert(pos, ")")
        elif how == "drop_close" and ")" in toks:
            toks.pop(rng.choice([k for k, t in enumerate(toks) if t == ")"]))
        elif how == "quote":
            toks.insert(pos, "'")
        elif how == "double_quote":
            toks.insert(pos, '"')
        else:
            how = "open_string"
            strings = [k for k, t in enumerate(toks) if t.startswith("'")]
            if strings:
                k = rng.choice(strings)
                toks[k] = toks[k][:-1]  # drop the closing quote
            else:
                toks.insert(pos, "'abc")
        return how, _join(toks), None

    def mutation(self, rng: random.Random) -> tuple[str, str, None]:
        for _ in range(200):
            sql = rng.choice(self.valid)
            toks = tokens(sql)
            upper = [t.upper() for t in toks]
            how = rng.choice(["drop", "duplicate", "swap", "swap_clauses"])
            if how == "drop":
                cand = [k for k, t in enumerate(upper) if t in _DROPPABLE]
                if not cand:
                    continue
                k = rng.choice(cand)
                label = "drop_" + upper[k].lower()
                toks = toks[:k] + toks[k + 1 :]
            elif how == "duplicate":
                cand = [k for k, t in enumerate(upper) if t in _DUPLICABLE]
                if not cand:
                    continue
                k = rng.choice(cand)
                label = "duplicate_" + upper[k].lower()
                toks = toks[: k + 1] + toks[k:]
            elif how == "swap":
                # swap a keyword with its right or left neighbour (never two identical tokens)
                cand = [k for k, t in enumerate(upper) if t in _DROPPABLE | _DUPLICABLE and k + 1 < len(toks)]
                if not cand:
                    continue
                k = rng.choice(cand)
                j = k + 1 if rng.random() < 0.5 or k == 0 else k - 1
                if upper[j] == upper[k] or toks[j] in "()":
                    continue  # (a parenthesis moved across VALUES makes a subquery: a type error, not a syntax one)
                label = f"swap_{upper[min(j, k)].lower()}_{upper[max(j, k)].lower()}"
                toks[j], toks[k] = toks[k], toks[j]
            else:
                text = " ".join(toks)
                swapped = _swap_clauses(text, rng)
                if swapped is None:
                    continue
                label, mutated = swapped
                return label, mutated, None
            mutated = _join(toks)
            if mutated.upper() != _join(tokens(sql)).upper():
                return label, mutated, None
        raise AssertionError("no mutation")

    def unknown_name(self, rng: random.Random) -> tuple[str, str, set[str]]:
        t, c, f = self._word(rng), self._word(rng), self._word(rng, "nosuch_fn_")
        i = self._existing_id(rng)
        choices: list[tuple[str, str, set[str]]] = [
            ("table_update", f"UPDATE {t} SET a = 1", {"TABLE_NOT_FOUND"}),
            ("table_delete", f"DELETE FROM {t} WHERE a = 1", {"TABLE_NOT_FOUND"}),
            ("table_insert", f"INSERT INTO {t} VALUES (1, 'a')", {"TABLE_NOT_FOUND"}),
            ("table_insert_select", f"INSERT INTO dept SELECT * FROM {t}", {"TABLE_NOT_FOUND"}),
            (
                "table_merge_target",
                f"MERGE INTO {t} t USING emp s ON t.id = s.id WHEN MATCHED THEN DELETE",
                {"TABLE_NOT_FOUND"},
            ),
            (
                "table_merge_source",
                f"MERGE INTO emp t USING {t} s ON t.id = s.id WHEN MATCHED THEN DELETE",
                {"TABLE_NOT_FOUND"},
            ),
            ("table_subquery", f"DELETE FROM emp WHERE id IN (SELECT id FROM {t})", {"TABLE_NOT_FOUND"}),
            ("table_select", f"SELECT * FROM {t}", {"TABLE_NOT_FOUND"}),
            ("table_truncate", f"TRUNCATE TABLE {t}", {"TABLE_NOT_FOUND"}),
            ("table_drop", f"DROP TABLE {t}", {"TABLE_NOT_FOUND"}),
            ("table_describe", f"DESCRIBE {t}", {"TABLE_NOT_FOUND"}),
            ("table_alter", f"ALTER TABLE {t} ADD COLUMN x INTEGER", {"TABLE_NOT_FOUND"}),
            ("schema", f"DELETE FROM {t}.emp WHERE id = {i}", {"SCHEMA_NOT_FOUND", "TABLE_NOT_FOUND"}),
            ("schema_update", f"UPDATE {t}.emp SET name = 'x'", {"SCHEMA_NOT_FOUND", "TABLE_NOT_FOUND"}),
            ("catalog", f"DELETE FROM {t}.default.emp WHERE id = {i}", {"CATALOG_NOT_FOUND"}),
            (
                "catalog_merge",
                f"MERGE INTO {t}.default.emp t USING dept s ON t.dept = s.id WHEN MATCHED THEN DELETE",
                {"CATALOG_NOT_FOUND"},
            ),
            ("column_set_target", f"UPDATE emp SET {c} = 1", {"COLUMN_NOT_FOUND"}),
            ("column_set_value", f"UPDATE emp SET name = {c}", {"COLUMN_NOT_FOUND"}),
            ("column_where", f"DELETE FROM emp WHERE {c} = 1", {"COLUMN_NOT_FOUND"}),
            ("column_update_where", f"UPDATE emp SET name = 'x' WHERE {c} > 0", {"COLUMN_NOT_FOUND"}),
            ("column_insert_list", f"INSERT INTO emp (id, name, {c}) VALUES (77, 'x', 1)", {"COLUMN_NOT_FOUND"}),
            ("column_insert_select", f"INSERT INTO dept SELECT {c}, name FROM emp", {"COLUMN_NOT_FOUND"}),
            (
                "column_merge_on",
                f"MERGE INTO emp t USING dept s ON t.{c} = s.id WHEN MATCHED THEN DELETE",
                {"COLUMN_NOT_FOUND"},
            ),
            (
                "column_merge_set",
                f"MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED THEN UPDATE SET {c} = s.title",
                {"COLUMN_NOT_FOUND"},
            ),
            (
                "column_merge_source",
                f"MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED THEN UPDATE SET name = s.{c}",
                {"COLUMN_NOT_FOUND"},
            ),
            (
                "column_merge_insert",
                f"MERGE INTO emp t USING (VALUES (88, 'z')) s(id, name) ON t.id = s.id "
                f"WHEN NOT MATCHED THEN INSERT (id, name, {c}) VALUES (s.id, s.name, 1)",
                {"COLUMN_NOT_FOUND"},
            ),
            ("column_qualifier", f"UPDATE emp SET name = {t}.name", {"COLUMN_NOT_FOUND"}),
            ("column_drop", f"ALTER TABLE emp DROP COLUMN {c}", {"COLUMN_NOT_FOUND"}),
            ("function_set", f"UPDATE emp SET name = {f}(name)", {"FUNCTION_NOT_FOUND"}),
            ("function_where", f"DELETE FROM emp WHERE {f}(id) = 1", {"FUNCTION_NOT_FOUND"}),
            (
                "function_merge",
                f"MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED THEN UPDATE SET name = {f}(s.title)",
                {"FUNCTION_NOT_FOUND"},
            ),
            ("function_insert", f"INSERT INTO dept VALUES (1, {f}('a'))", {"FUNCTION_NOT_FOUND"}),
            (
                "table_property",
                f"CREATE TABLE {self._fresh_table(rng)} (a INTEGER) WITH ({c} = 1)",
                {"INVALID_TABLE_PROPERTY"},
            ),
        ]
        if self.kind == "partitioned":
            choices += [
                ("column_merge_table", f"UPDATE m SET {c} = 1 WHERE a = 1", {"COLUMN_NOT_FOUND"}),
                ("column_merge_table_where", f"DELETE FROM mv WHERE {c} = 'x'", {"COLUMN_NOT_FOUND"}),
                ("partition_child", f"ALTER TABLE m ADD TABLE {t} AS PARTITION FROM 40 TO 50", {"TABLE_NOT_FOUND"}),
                (
                    "partition_parent",
                    f"ALTER TABLE {t} ADD TABLE spare AS PARTITION FROM 40 TO 50",
                    {"TABLE_NOT_FOUND"},
                ),
                ("partition_drop", f"ALTER TABLE m DROP TABLE {t}", {"TABLE_NOT_FOUND"}),
            ]
        return rng.choice(choices)

    def type_error(self, rng: random.Random) -> tuple[str, str, set[str]]:
        n = self._fresh_id(rng)
        i = self._existing_id(rng)
        word = rng.choice(["abc", "x", "1e", "NaN?", "12abc"])
        number_text = str(rng.randint(1, 99))
        tm = {"TYPE_MISMATCH"}
        choices: list[tuple[str, str, set[str]]] = [
            ("varchar_into_int", f"INSERT INTO emp (id, name) VALUES ('{word}', 'x')", tm),
            # Trino's insert coercion: text is never coerced to a number, even when it reads as one (docs/sql.md)
            ("numeric_text_into_int", f"INSERT INTO emp (id, name) VALUES ('{number_text}{n}', 'x')", tm),
            ("int_into_varchar", f"INSERT INTO emp (id, name) VALUES ({n}, {n})", tm),
            ("int_into_date", f"INSERT INTO emp (id, name, hired) VALUES ({n}, 'x', {n})", tm),
            ("text_into_date", f"INSERT INTO emp (id, name, hired) VALUES ({n}, 'x', '2020-01-01')", tm),
            ("bool_into_tinyint", "INSERT INTO dept VALUES (true, 'x')", tm),
            ("date_into_decimal", f"INSERT INTO emp (id, name, salary) VALUES ({n}, 'x', DATE '2020-01-01')", tm),
            ("set_int_to_text", f"UPDATE emp SET id = '{word}' WHERE id = {i}", tm),
            ("set_date_to_int", f"UPDATE emp SET hired = {rng.randint(1, 9999)}", tm),
            ("set_tinyint_to_bool", "UPDATE emp SET dept = true", tm),
            ("set_varchar_to_date", "UPDATE emp SET name = DATE '2020-01-01'", tm),
            ("set_decimal_to_date", "UPDATE emp SET salary = hired", tm),
            ("where_date_eq_bool", "DELETE FROM emp WHERE hired = true", tm),
            ("where_varchar_gt_int", f"DELETE FROM emp WHERE name > {rng.randint(0, 9)}", tm),
            ("where_int_eq_date", "DELETE FROM emp WHERE id = DATE '2020-01-01'", tm),
            ("where_not_boolean", "DELETE FROM emp WHERE id", tm),
            ("where_not_boolean_update", "UPDATE emp SET name = 'x' WHERE name", tm),
            ("decimal_plus_date", "UPDATE emp SET salary = salary + hired", tm),
            ("varchar_plus_int", "UPDATE emp SET name = name + 1", tm),
            ("date_plus_date", "DELETE FROM emp WHERE hired + hired > hired", tm),  # date + integer is an extension
            (
                "merge_on_varchar_eq_tinyint",
                "MERGE INTO emp t USING dept s ON t.name = s.id WHEN MATCHED THEN DELETE",
                tm,
            ),
            ("merge_on_not_boolean", "MERGE INTO emp t USING dept s ON t.id WHEN MATCHED THEN DELETE", tm),
            (
                "merge_set_int_to_varchar",
                "MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED THEN UPDATE SET dept = s.title",
                tm,
            ),
            (
                "merge_insert_varchar_into_date",
                f"MERGE INTO emp t USING (VALUES ({n}, 'x', 'soon')) s(id, name, h) ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT (id, name, hired) VALUES (s.id, s.name, s.h)",
                tm,
            ),
            (
                "function_argument",
                "UPDATE emp SET dept = upper(dept)",
                {"TYPE_MISMATCH", "FUNCTION_NOT_FOUND", "INVALID_FUNCTION_ARGUMENT"},
            ),
            (
                "function_argument_where",
                "DELETE FROM emp WHERE length(hired) > 1",
                {"TYPE_MISMATCH", "FUNCTION_NOT_FOUND", "INVALID_FUNCTION_ARGUMENT"},
            ),
            ("cast_text_to_tinyint", f"UPDATE emp SET dept = CAST('{word}' AS TINYINT)", {"INVALID_CAST_ARGUMENT"}),
            (
                "cast_text_to_date",
                f"DELETE FROM emp WHERE hired = CAST('{word}' AS DATE)",
                {"INVALID_CAST_ARGUMENT"},
            ),
            ("cast_column_to_int", "UPDATE emp SET id = CAST(name AS INTEGER) WHERE id = 1", {"INVALID_CAST_ARGUMENT"}),
            ("values_rows_incompatible", f"INSERT INTO dept VALUES (1, 'a'), ('{word}', 2)", tm),
            ("values_rows_incompatible_source", f"INSERT INTO dept SELECT * FROM (VALUES (1, 'a'), ('{word}', 2))", tm),
            ("insert_too_few_values", f"INSERT INTO emp VALUES ({n}, 'x')", tm),
            ("insert_too_many_values", f"INSERT INTO dept VALUES (1, 'x', {n})", tm),
            (
                "unknown_type",
                f"CREATE TABLE {self._fresh_table(rng)} (a {rng.choice(['NOSUCHTYPE', 'INTEGR', 'VARCHAR2X'])})",
                {"TYPE_MISMATCH", "NOT_SUPPORTED", "SYNTAX_ERROR"},
            ),
        ]
        if self.kind == "partitioned":
            choices += [
                ("merge_table_varchar_into_int", f"INSERT INTO m VALUES ('{word}', 'b')", tm),
                ("merge_table_set_int_to_date", "UPDATE m SET a = DATE '2020-01-01'", tm),
                ("value_table_int_into_varchar", "INSERT INTO mv VALUES (1, 1)", tm),
            ]
        return rng.choice(choices)

    def not_null(self, rng: random.Random) -> tuple[str, str, None]:
        n, n2 = self._fresh_id(rng), self._fresh_id(rng) + 100000
        i = self._existing_id(rng)
        choices = [
            ("insert_omitted", f"INSERT INTO emp (id, dept) VALUES ({n}, 1)"),
            ("insert_null", f"INSERT INTO emp VALUES ({n}, NULL, 1, 1, 1, NULL)"),
            ("insert_null_id", "INSERT INTO emp (id, name) VALUES (NULL, 'x')"),
            ("insert_omitted_id", "INSERT INTO emp (name) VALUES ('x')"),
            ("insert_second_row", f"INSERT INTO emp (id, name) VALUES ({n}, 'ok'), ({n2}, NULL)"),
            ("insert_select", "INSERT INTO emp (id, name) SELECT id + 1000, CAST(NULL AS VARCHAR) FROM emp"),
            ("update_null", f"UPDATE emp SET name = NULL WHERE id = {i}"),
            ("update_all_null", "UPDATE emp SET name = NULL"),
            ("update_case_null", f"UPDATE emp SET name = CASE WHEN id = {i} THEN NULL ELSE name END"),
            ("update_null_id", f"UPDATE emp SET id = NULL WHERE id = {i}"),
            (
                "merge_insert",
                f"MERGE INTO emp t USING (VALUES ({n}, CAST(NULL AS VARCHAR))) s(id, name) ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
            ),
            (
                "merge_insert_omitted",
                f"MERGE INTO emp t USING (VALUES ({n}, 'x')) s(id, name) ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
            ),
            (
                "merge_update",
                f"MERGE INTO emp t USING (VALUES ({i})) s(id) ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = NULL",
            ),
            (
                "merge_mixed",
                f"MERGE INTO emp t USING (VALUES ({i}, 'ok'), ({n}, NULL)) s(id, name) ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
            ),
        ]
        label, sql = rng.choice(choices)
        return label, sql, None

    def primary_key(self, rng: random.Random) -> tuple[str, str, None]:
        n = self._fresh_id(rng)
        i = self._existing_id(rng)
        j = rng.choice([k for k in EMP_IDS if k != i])
        choices = [
            ("insert_live_key", f"INSERT INTO emp (id, name) VALUES ({i}, 'dup')"),
            ("insert_twice", f"INSERT INTO emp (id, name) VALUES ({n}, 'a'), ({n}, 'b')"),
            ("insert_select", "INSERT INTO emp (id, name) SELECT id, name FROM emp WHERE id < 3"),
            ("update_onto_live_key", f"UPDATE emp SET id = {i} WHERE id = {j}"),
            ("update_all_to_one_key", f"UPDATE emp SET id = {n}"),
            (
                "merge_insert_live_key",
                f"MERGE INTO emp t USING (VALUES ({i}, 'x')) s(id, name) ON t.id = s.id + 1000000 "
                "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
            ),
        ]
        label, sql = rng.choice(choices)
        return label, sql, None

    def overflow(self, rng: random.Random) -> tuple[str, str, set[str] | None]:
        big = rng.choice(["2147483648", "3000000000", "99999999999"])
        choices = [
            ("tinyint_add", f"UPDATE emp SET dept = dept + {rng.randint(28, 1000)}"),
            ("tinyint_sub", f"UPDATE emp SET dept = dept - {rng.randint(140, 1000)}"),
            ("tinyint_mul", "UPDATE emp SET dept = dept * dept"),
            ("tinyint_cast", f"UPDATE emp SET dept = CAST({rng.choice([128, 300, -129, 70000])} AS TINYINT)"),
            ("tinyint_insert", f"INSERT INTO dept VALUES ({rng.choice([128, 255, -129, 1000])}, 'x')"),
            ("tinyint_insert_select", "INSERT INTO dept SELECT id * 100, name FROM emp"),
            ("integer_mul", "UPDATE emp SET id = id * 2147483647"),
            ("integer_add", f"UPDATE emp SET id = id + {2147483647 - rng.randint(0, 2)}"),
            ("integer_insert", f"INSERT INTO emp (id, name) VALUES ({big}, 'x')"),
            ("integer_cast", f"DELETE FROM emp WHERE id = CAST({big} AS INTEGER)"),
            ("bigint_mul", f"UPDATE emp SET big = big * {rng.randint(2, 100)}"),
            ("bigint_add", "UPDATE emp SET big = big + 9223372036854775807"),
            ("bigint_sub", "UPDATE emp SET big = -big - 9223372036854775807"),
            ("bigint_where", "DELETE FROM emp WHERE big * 10 > 0"),
            ("bigint_literal_cast", "UPDATE emp SET big = CAST(9223372036854775808 AS BIGINT)"),
            ("bigint_literal_insert", "INSERT INTO emp (id, name, big) VALUES (424242, 'x', 9223372036854775808)"),
            ("decimal_mul", f"UPDATE emp SET salary = salary * {rng.choice([100000000, 1000000000])}"),
            ("decimal_insert", "INSERT INTO emp (id, name, salary) VALUES (434343, 'x', 123456789.5)"),
            ("decimal_cast", "UPDATE emp SET salary = CAST(12345678901 AS DECIMAL(10,2))"),
            (
                "merge_set",
                "MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED THEN UPDATE SET dept = s.id + 100",
            ),
        ]
        label, sql = rng.choice(choices)
        if "9223372036854775808" in sql:
            return label, sql, None
        return label, sql, {"NUMERIC_VALUE_OUT_OF_RANGE", "INVALID_CAST_ARGUMENT"}

    def division_by_zero(self, rng: random.Random) -> tuple[str, str, None]:
        i = self._existing_id(rng)
        zero = rng.choice(["0", "(id - id)", "(1 - 1)"])
        choices = [
            ("tinyint_div", f"UPDATE emp SET dept = dept / {zero}"),
            ("tinyint_mod", f"UPDATE emp SET dept = dept % {zero}"),
            ("mod_function", f"UPDATE emp SET dept = mod(dept, {zero})"),
            ("integer_div_where", f"DELETE FROM emp WHERE id / {zero} = 1"),
            ("integer_mod_where", f"DELETE FROM emp WHERE id % {zero} = 0"),
            ("bigint_div", f"UPDATE emp SET big = big / {zero}"),
            ("decimal_div", "UPDATE emp SET salary = salary / 0"),
            ("decimal_mod", "UPDATE emp SET salary = salary % 0"),
            ("decimal_literal_div", "UPDATE emp SET salary = DECIMAL '1.50' / 0"),
            ("set_one_row", f"UPDATE emp SET id = 1 / 0 WHERE id = {i}"),
            ("insert_values", "INSERT INTO dept VALUES (1 / 0, 'x')"),
            ("insert_select", f"INSERT INTO dept SELECT id / {zero}, name FROM emp"),
            (
                "merge_update",
                f"MERGE INTO emp t USING (VALUES ({i}, 0)) s(id, z) ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET big = t.id / s.z",
            ),
            (
                "merge_condition",
                "MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED AND s.id % 0 = 1 THEN DELETE",
            ),
            ("merge_on", "MERGE INTO emp t USING dept s ON t.id / 0 = s.id WHEN MATCHED THEN DELETE"),
        ]
        if self.kind == "partitioned":
            choices += [
                ("merge_table_update", f"UPDATE m SET a = a / {zero.replace('id', 'a')}"),
                ("merge_table_delete", "DELETE FROM m WHERE a % 0 = 1"),
                ("value_table_update", "UPDATE mv SET n = n / 0 WHERE k = 'z'"),
            ]
        label, sql = rng.choice(choices)
        return label, sql, None

    def duplicate_match(self, rng: random.Random) -> tuple[str, str, None]:
        i = self._existing_id(rng)
        n = self._fresh_id(rng)
        copies = rng.randint(2, 5)
        src = ", ".join(f"({i}, 'v{k}')" for k in range(copies))
        choices = [
            (
                "update",
                f"MERGE INTO emp t USING (VALUES {src}) s(id, name) ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name",
            ),
            ("delete", f"MERGE INTO emp t USING (VALUES {src}) s(id, name) ON t.id = s.id WHEN MATCHED THEN DELETE"),
            (
                "with_insert",
                f"MERGE INTO emp t USING (VALUES {src}, ({n}, 'new')) s(id, name) ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
            ),
            (
                "two_clauses",
                f"MERGE INTO emp t USING (VALUES ({i}, 'v0'), ({i}, 'v1')) s(id, name) ON t.id = s.id "
                "WHEN MATCHED AND s.name = 'v0' THEN UPDATE SET name = s.name WHEN MATCHED THEN DELETE",
            ),
            ("cross_match", "MERGE INTO emp t USING dept s ON t.id > 0 WHEN MATCHED THEN DELETE"),
            ("table_source", "MERGE INTO dept t USING emp s ON t.id = 10 WHEN MATCHED THEN UPDATE SET title = s.name"),
            (
                "subquery_source",
                f"MERGE INTO emp t USING (SELECT id FROM emp UNION ALL SELECT {i}) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET dept = 1",
            ),
        ]
        if self.kind == "partitioned":
            choices += [
                (
                    "merge_table",
                    "MERGE INTO m t USING (VALUES (1, 'a'), (1, 'b')) s(a, b) ON t.a = s.a "
                    "WHEN MATCHED THEN UPDATE SET b = s.b",
                ),
                (
                    "merge_table_move",
                    "MERGE INTO m t USING (VALUES (11, 'a'), (11, 'b')) s(a, b) ON t.a = s.a "
                    "WHEN MATCHED THEN UPDATE SET a = 3",
                ),
                (
                    "value_table",
                    "MERGE INTO mv t USING (VALUES ('x'), ('x')) s(k) ON t.k = s.k WHEN MATCHED THEN DELETE",
                ),
            ]
        label, sql = rng.choice(choices)
        return label, sql, None

    def unroutable(self, rng: random.Random) -> tuple[str, str, None]:
        out = rng.choice([rng.randint(-1000, -1), rng.randint(20, 1000), 2147483647, -2147483648])
        inside = rng.choice([1, 2, 11, 12])
        word = rng.choice(["w", "q", "X", "x ", ""])
        choices = [
            ("insert", f"INSERT INTO m VALUES ({out}, 'o')"),
            ("insert_mixed", f"INSERT INTO m VALUES (3, 'ok'), ({out}, 'o'), (13, 'ok')"),
            ("insert_null_key", "INSERT INTO m VALUES (NULL, 'n')"),
            ("insert_select", f"INSERT INTO m SELECT id + {rng.randint(20, 500)}, name FROM emp"),
            ("update_move", f"UPDATE m SET a = {out} WHERE a = {inside}"),
            ("update_shift", f"UPDATE m SET a = a + {rng.randint(20, 100)}"),
            ("update_null_key", f"UPDATE m SET a = NULL WHERE a = {inside}"),
            (
                "merge_insert",
                f"MERGE INTO m t USING (VALUES ({out}, 'o')) s(a, b) ON t.a = s.a "
                "WHEN NOT MATCHED THEN INSERT VALUES (s.a, s.b)",
            ),
            (
                "merge_update",
                f"MERGE INTO m t USING (VALUES ({inside}, 'o')) s(a, b) ON t.a = s.a "
                f"WHEN MATCHED THEN UPDATE SET a = {out}",
            ),
            ("child_insert", f"INSERT INTO c0 VALUES ({rng.choice([10, 15, -1, 19, out])}, 'c')"),
            ("child_insert_c1", f"INSERT INTO c1 VALUES ({rng.choice([9, 20, 0, out])}, 'c')"),
            ("child_update", f"UPDATE c0 SET a = a + 10 WHERE a = {rng.choice([1, 2])}"),
            ("value_insert", f"INSERT INTO mv VALUES ('{word}', 9)"),
            ("value_insert_null", "INSERT INTO mv VALUES (NULL, 9)"),
            ("value_update", f"UPDATE mv SET k = '{word}' WHERE k = 'x'"),
            ("value_child_insert", "INSERT INTO v1 VALUES ('x', 9)"),
            (
                "value_merge_insert",
                f"MERGE INTO mv t USING (VALUES ('{word}', 1)) s(k, n) ON t.k = s.k "
                "WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.n)",
            ),
        ]
        label, sql = rng.choice(choices)
        return label, sql, None

    def overlapping_partition(self, rng: random.Random) -> tuple[str, str, None]:
        # spare holds a = 5, so every range below contains 5 and overlaps c0 = [0, 10)
        lo = rng.randint(-10, 5)
        hi = rng.randint(6, 40)
        choices = [
            ("range", f"ALTER TABLE m ADD TABLE spare AS PARTITION FROM {lo} TO {hi}"),
            ("range_minvalue", f"ALTER TABLE m ADD TABLE spare AS PARTITION FROM RANGE MINVALUE TO {hi}"),
            ("range_maxvalue", f"ALTER TABLE m ADD TABLE spare AS PARTITION FROM {lo} TO RANGE MAXVALUE"),
            (
                "range_everything",
                "ALTER TABLE m ADD TABLE spare AS PARTITION FROM RANGE MINVALUE TO RANGE MAXVALUE",
            ),
            ("range_with_nulls", f"ALTER TABLE m ADD TABLE spare AS PARTITION FROM {lo} TO {hi} WITH NULL VALUES"),
            ("set_widen_c0", f"ALTER TABLE m SET TABLE c0 AS PARTITION FROM 0 TO {rng.randint(11, 40)}"),
            ("set_widen_c1", f"ALTER TABLE m SET TABLE c1 AS PARTITION FROM {rng.randint(-5, 9)} TO 20"),
            ("values", f"ALTER TABLE mv ADD TABLE vspare AS PARTITION IN ('{rng.choice('xyz')}')"),
            ("values_some", f"ALTER TABLE mv ADD TABLE vspare AS PARTITION IN ('q{rng.randint(0, 9)}', 'z')"),
            ("values_set", "ALTER TABLE mv SET TABLE v1 AS PARTITION IN ('z', 'x')"),
        ]
        label, sql = rng.choice(choices)
        return label, sql, None

    def injection(self, rng: random.Random) -> tuple[str, str, set[str]]:
        names = [
            "emp; DROP TABLE emp; --",
            "emp'; DELETE FROM emp; --",
            'x"" OR ""1""=""1',
            "Robert'); DROP TABLE dept;--",
            "emp\u200b",
            "\uff45\uff4d\uff50",  # fullwidth 'emp'
            "\u00e9mp",
            "emp\u0000",
            "emp\n",
            "../../etc/passwd",
            "emp/*",
            "%s%s%n",
            "{0}",
            "${jndi:ldap://x/y}",
            "\\",
            "emp.dept",
            " emp",
            "emp ",
            "\U0001f4a5",
        ]
        raw = rng.choice(names)
        q = '"' + raw.replace('"', '""') + '"' if not raw.startswith('x"') else f'"{raw}"'
        i = self._existing_id(rng)
        choices: list[tuple[str, str, set[str]]] = [
            ("table_select", f"SELECT * FROM {q}", {"TABLE_NOT_FOUND"}),
            ("table_delete", f"DELETE FROM {q}", {"TABLE_NOT_FOUND"}),
            ("table_update", f"UPDATE {q} SET name = 'x'", {"TABLE_NOT_FOUND"}),
            ("table_insert", f"INSERT INTO {q} VALUES (1, 'a')", {"TABLE_NOT_FOUND"}),
            ("table_drop", f"DROP TABLE {q}", {"TABLE_NOT_FOUND"}),
            ("table_truncate", f"TRUNCATE TABLE {q}", {"TABLE_NOT_FOUND"}),
            (
                "table_merge",
                f"MERGE INTO {q} t USING dept s ON t.id = s.id WHEN MATCHED THEN DELETE",
                {"TABLE_NOT_FOUND"},
            ),
            ("schema", f"DELETE FROM {q}.emp", {"SCHEMA_NOT_FOUND", "TABLE_NOT_FOUND"}),
            ("catalog", f"DELETE FROM {q}.default.emp", {"CATALOG_NOT_FOUND"}),
            ("column_set", f"UPDATE emp SET {q} = 'x'", {"COLUMN_NOT_FOUND"}),
            ("column_where", f"DELETE FROM emp WHERE {q} = {i}", {"COLUMN_NOT_FOUND"}),
            ("column_insert", f"INSERT INTO emp (id, {q}) VALUES (1, 'x')", {"COLUMN_NOT_FOUND"}),
            ("function", f"UPDATE emp SET name = {q}(name)", {"FUNCTION_NOT_FOUND", "SYNTAX_ERROR"}),
            (
                "backticks_table",
                f"DELETE FROM `{raw.replace('`', '')}` WHERE id = {i}",
                {"SYNTAX_ERROR", "TABLE_NOT_FOUND"},
            ),
            ("backticks_column", f"UPDATE emp SET `{raw.replace('`', '')}` = 1", {"SYNTAX_ERROR", "COLUMN_NOT_FOUND"}),
            (
                "two_statements",
                f"DELETE FROM emp WHERE id = {i}; DROP TABLE dept; --",
                {"SYNTAX_ERROR", "INVALID_ARGUMENTS"},
            ),
            (
                "two_statements_update",
                f"UPDATE emp SET name = 'x' WHERE id = {i}; DELETE FROM dept",
                {"SYNTAX_ERROR", "INVALID_ARGUMENTS"},
            ),
            (
                "unterminated_after_injection",
                f"DELETE FROM emp WHERE name = '{raw.replace(chr(39), '')}'; DROP TABLE emp; --'",
                {"SYNTAX_ERROR", "INVALID_ARGUMENTS"},
            ),
        ]
        return rng.choice(choices)

    def deep_nesting(self, rng: random.Random) -> tuple[str, str, set[str]]:
        d = self.depth + rng.randint(-100, 100)
        c = self._word(rng)
        lim = set(LIMIT_CODES)
        choices: list[tuple[str, str, set[str]]] = [
            ("parens_unknown_column", f"UPDATE emp SET dept = {'(' * d}{c}{')' * d}", lim | {"COLUMN_NOT_FOUND"}),
            ("parens_division", f"DELETE FROM emp WHERE {'(' * d}id / 0 = 1{')' * d}", lim | {"DIVISION_BY_ZERO"}),
            ("parens_unbalanced", f"UPDATE emp SET dept = {'(' * d}1{')' * (d - 1)}", lim),
            (
                "sum_chain_unknown_column",
                "UPDATE emp SET big = " + " + ".join(["big"] * d) + f" + {c}",
                lim | {"COLUMN_NOT_FOUND"},
            ),
            (
                "nested_sums_unknown_column",
                "UPDATE emp SET big = " + "(big + " * d + c + ")" * d,
                lim | {"COLUMN_NOT_FOUND"},
            ),
            (
                "and_chain_type_error",
                "DELETE FROM emp WHERE " + " AND ".join(f"id <> {k}" for k in range(d)) + " AND hired = true",
                lim | {"TYPE_MISMATCH"},
            ),
            ("not_chain_type_error", "DELETE FROM emp WHERE " + "NOT " * d + "(hired = true)", lim | {"TYPE_MISMATCH"}),
            (
                "case_unknown_column",
                "UPDATE emp SET dept = " + "CASE WHEN id = 0 THEN 0 ELSE " * (d // 4) + c + " END" * (d // 4),
                lim | {"COLUMN_NOT_FOUND"},
            ),
            (
                "subqueries_unknown_column",
                "DELETE FROM emp WHERE id IN (SELECT id FROM "
                + "(SELECT id FROM " * (d // 5)
                + f"(SELECT {c} AS id FROM emp) AS q0"
                + "".join(f") AS q{k + 1}" for k in range(d // 5))
                + ")",
                lim | {"COLUMN_NOT_FOUND"},
            ),
            (
                "function_calls_division",
                "UPDATE emp SET big = " + "abs(" * d + "big / 0" + ")" * d,
                lim | {"DIVISION_BY_ZERO"},
            ),
        ]
        return rng.choice(choices)

    def huge(self, rng: random.Random) -> tuple[str, str, set[str]]:
        size = rng.choice(self.huge_bytes) if isinstance(self.huge_bytes, tuple) else self.huge_bytes
        c = self._word(rng)
        lim = set(LIMIT_CODES)

        def in_list(first: int) -> str:
            # about ``size`` bytes of 8-digit numbers no row has
            count = max(1, size // 10)
            return ", ".join(str(first + k) for k in range(count))

        def values_rows(first: int) -> str:
            count = max(1, size // 20)
            return ", ".join(f"({first + k}, 'n{k}')" for k in range(count))

        choices: list[tuple[str, str, set[str]]] = [
            (
                "in_list_unknown_column",
                f"DELETE FROM emp WHERE id IN ({in_list(10_000_000)}, {c})",
                lim | {"COLUMN_NOT_FOUND"},
            ),
            ("in_list_trailing_comma", f"DELETE FROM emp WHERE id IN ({in_list(10_000_000)},)", lim),
            (
                "values_not_null",
                f"INSERT INTO emp (id, name) VALUES {values_rows(10_000_000)}, (9999999, NULL)",
                lim | {"CONSTRAINT_VIOLATION"},
            ),
            (
                "values_duplicate_match",
                f"MERGE INTO emp t USING (VALUES (1, 'a'), {values_rows(10_000_000)}, (1, 'b')) s(id, name) "
                "ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
                "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
                lim | {"MERGE_TARGET_ROW_MULTIPLE_MATCHES"},
            ),
            ("unterminated_string", "UPDATE emp SET name = '" + "a" * size, lim),
        ]
        return rng.choice(choices)

    def unsupported(self, rng: random.Random) -> tuple[str, str, set[str]]:
        i = self._existing_id(rng)
        new = self._fresh_table(rng)
        k = rng.randint(1, 3)
        ns = {"NOT_SUPPORTED", "SYNTAX_ERROR"}
        choices: list[tuple[str, str, set[str]]] = [
            ("delete_limit", f"DELETE FROM emp WHERE id >= {i} LIMIT {k}", ns),
            ("delete_limit_all", f"DELETE FROM emp LIMIT {k}", ns),
            ("delete_order_limit", f"DELETE FROM emp ORDER BY id LIMIT {k}", ns),
            ("update_limit", f"UPDATE emp SET name = 'lim' LIMIT {k}", ns),
            ("update_order_limit", f"UPDATE emp SET name = 'lim' ORDER BY id LIMIT {k}", ns),
            ("update_order", f"UPDATE emp SET name = 'ord' WHERE id = {i} ORDER BY id", ns),
            ("delete_returning", f"DELETE FROM emp WHERE id = {i} RETURNING *", ns),
            ("update_returning", f"UPDATE emp SET name = 'ret' WHERE id = {i} RETURNING id", ns),
            ("insert_returning", "INSERT INTO dept VALUES (1, 'ret') RETURNING id", ns),
            ("on_duplicate_key", "INSERT INTO dept VALUES (1, 'd') ON DUPLICATE KEY UPDATE title = 'd2'", ns),
            ("replace_into", "REPLACE INTO dept VALUES (1, 'r')", ns),
            ("insert_ignore", "INSERT IGNORE INTO dept VALUES (1, 'i')", ns),
            ("update_qualified_set", f"UPDATE emp SET emp.name = 'q' WHERE id = {i}", ns),
            ("delete_top", "DELETE TOP (1) FROM emp", ns),
            (
                "merge_oracle_delete_where",
                "MERGE INTO emp t USING dept s ON (t.dept = s.id) WHEN MATCHED THEN UPDATE SET name = s.title "
                "DELETE WHERE t.id = 1",
                ns,
            ),
            ("drop_cascade", "DROP TABLE dept CASCADE", ns),
            ("create_or_replace", "CREATE OR REPLACE TABLE dept (a INTEGER)", ns),
            ("explain_analyze", f"EXPLAIN ANALYZE DELETE FROM emp WHERE id = {i}", ns),
            ("describe_extended", "DESCRIBE EXTENDED emp", ns),
            (
                "merge_do_nothing",
                "MERGE INTO emp t USING dept s ON t.dept = s.id WHEN MATCHED THEN DO NOTHING "
                "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id + 500, s.title)",
                ns,
            ),
            (
                "merge_update_star",
                "MERGE INTO dept t USING (SELECT id, 'star' AS title FROM dept) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET *",
                ns,
            ),
            ("create_location", f"CREATE TABLE {new} (a INTEGER) LOCATION '/tmp/{new}'", ns),
            ("create_using", f"CREATE TABLE {new} (a INTEGER) USING parquet", ns),
            ("create_partitioned_by", f"CREATE TABLE {new} (a INTEGER, b INTEGER) PARTITIONED BY (b)", ns),
            ("create_unique", f"CREATE TABLE {new} (a INTEGER UNIQUE)", ns),
            ("create_table_unique", f"CREATE TABLE {new} (a INTEGER, UNIQUE (a))", ns),
            ("create_references", f"CREATE TABLE {new} (a INTEGER REFERENCES emp (id))", ns),
            ("create_foreign_key", f"CREATE TABLE {new} (a INTEGER, FOREIGN KEY (a) REFERENCES emp (id))", ns),
            ("create_identity", f"CREATE TABLE {new} (a INTEGER GENERATED ALWAYS AS IDENTITY)", ns),
            ("create_generated", f"CREATE TABLE {new} (a INTEGER, b INTEGER GENERATED ALWAYS AS (a + 1))", ns),
            ("create_auto_increment", f"CREATE TABLE {new} (a INTEGER AUTO_INCREMENT)", ns),
            ("create_collate", f'CREATE TABLE {new} (a VARCHAR COLLATE "C")', ns),
            ("create_temporary", f"CREATE TEMPORARY TABLE {new} (a INTEGER)", ns),
            ("ctas_check", f"CREATE TABLE {new} (a INTEGER CHECK (a > 0)) AS SELECT 1", ns),
            (
                "create_unknown_property",
                f"CREATE TABLE {new} (a INTEGER) WITH (format = 'ORC', nosuch = 1)",
                ns | {"INVALID_TABLE_PROPERTY"},
            ),
        ]
        if self.kind != "partitioned":
            choices += [
                ("create_merge_table", f"CREATE MERGE TABLE {new} (a INTEGER) PARTITION BY RANGE ON (a)", ns),
                (
                    "alter_add_partition",
                    "ALTER TABLE emp ADD TABLE dept AS PARTITION FROM 0 TO 10",
                    ns | {"TABLE_NOT_FOUND", "INVALID_PARTITION"},
                ),
            ]
        return rng.choice(choices)


def _swap_clauses(text: str, rng: random.Random) -> tuple[str, str] | None:
    """Move a clause where no dialect accepts it."""
    options = []
    m = re.match(r"(?i)^(UPDATE \w+) (SET .*?) (WHERE .*)$", text)
    if m:
        options.append(("where_before_set", f"{m.group(1)} {m.group(3)} {m.group(2)}"))
    m = re.match(r"(?i)^(DELETE) (FROM \w+) (WHERE .*)$", text)
    if m:
        options.append(("where_before_from", f"{m.group(1)} {m.group(3)} {m.group(2)}"))
    m = re.match(r"(?i)^(MERGE INTO \w+ \w+) (USING .*?) (ON .*?) (WHEN .*)$", text)
    if m:
        options.append(("on_before_using", f"{m.group(1)} {m.group(3)} {m.group(2)} {m.group(4)}"))
        options.append(("when_before_on", f"{m.group(1)} {m.group(2)} {m.group(4)} {m.group(3)}"))
    m = re.match(r"(?i)^(INSERT INTO \w+(?: \( .*? \))?) (VALUES .*)$", text)
    if m and "SELECT" not in text.upper():
        options.append(("values_before_into", f"{m.group(2)} {m.group(1)}"))
    m = re.match(r"(?i)^(.*) (WHEN MATCHED .*?) (THEN \w+)(.*)$", text)
    if m:
        options.append(("then_before_when", f"{m.group(1)} {m.group(3)} {m.group(2)}{m.group(4)}"))
    return rng.choice(options) if options else None
