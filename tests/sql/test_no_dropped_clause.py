"""The rule of mergekit/sql/convert.py: no part of a statement is dropped unseen.

For every argument that sqlglot's node classes declare (``arg_types``) on every syntax node the converter reads
structurally (statements, WHEN clauses, table names, column definitions, constraints, properties), the walker
injects a value into a valid statement where that argument is absent and converts it. Each injection must either
be refused with a coded error, or change the statement model (the converter used it). A conversion that returns
the same model as without the injected part has dropped it: the test fails and names it.

Expressions and queries (WHERE conditions, SET values, a MERGE source) are not walked: they stay whole trees and
the renderer generates every argument of them.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import sqlglot
from sqlglot import exp

from mergekit.errors import MergekitError
from mergekit.sql.model import Tree
from mergekit.sql.parse import convert, parts
from mergekit.sql.parse.dialect import DIALECT

# Valid statements that reach every converter and every structural node kind.
BASES = [
    "MERGE INTO t AS x USING s ON x.a = s.a WHEN MATCHED AND s.b > 0 THEN UPDATE SET b = s.b "
    "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (a, b) VALUES (s.a, s.b) "
    "WHEN NOT MATCHED BY SOURCE THEN DELETE",
    "WITH w AS (SELECT 1 AS a) MERGE INTO t USING w ON t.a = w.a WHEN MATCHED THEN DELETE",
    "INSERT INTO t (a, b) SELECT a, b FROM s",
    "INSERT INTO c.d.t VALUES (1, 2)",
    "UPDATE t AS x SET b = 1 WHERE x.a = 2",
    "DELETE FROM t AS x WHERE x.a = 1",
    "CREATE TABLE c.s.t (a INT NOT NULL COMMENT 'k', b VARCHAR PRIMARY KEY, c INT NULL, PRIMARY KEY (a)) WITH (p = 1)",
    "CREATE TABLE IF NOT EXISTS t WITH (p = 1) AS SELECT 1 AS a WITH NO DATA",
    "CREATE SCHEMA IF NOT EXISTS c.s",
    "DROP TABLE IF EXISTS t",
    "TRUNCATE TABLE t",
    "DESCRIBE HISTORY t",
    "ALTER TABLE t ADD COLUMN IF NOT EXISTS c INT NOT NULL",
    "CREATE TABLE t (a INT DEFAULT 1 CHECK (a > 0), b INT CONSTRAINT n CHECK (b > 0), CONSTRAINT m CHECK (a < b), "
    "CHECK (b < 9))",
    "ALTER TABLE t ADD CONSTRAINT n CHECK (a > 0)",
    "ALTER TABLE t DROP CONSTRAINT IF EXISTS n",
    "ALTER TABLE t ALTER COLUMN a SET DEFAULT 2",
    "ALTER TABLE t ALTER COLUMN a DROP DEFAULT",
    "INSERT INTO t DEFAULT VALUES",
    "ALTER TABLE t RENAME COLUMN IF EXISTS a TO b",
    "ALTER TABLE t ALTER COLUMN a SET DATA TYPE bigint",
    "MERGE WITH SCHEMA EVOLUTION INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET * "
    "WHEN NOT MATCHED THEN INSERT *",
    "SET SESSION merge_duplicate_source = 'first by s.a'",
    "INSERT INTO t AS x (a, b) VALUES (1, 2) ON CONFLICT (a) DO UPDATE SET b = excluded.b WHERE x.b > 0",
    "INSERT OVERWRITE t SELECT a, b FROM s",
    "UPDATE t SET (a, b) = (s.a, 2) FROM s WHERE t.a = s.a",
    "DELETE FROM t USING s WHERE t.a = s.a",
    "MERGE INTO t USING s JOIN u ON s.a = u.a ON t.a = s.a WHEN MATCHED THEN DO NOTHING",
]

# Node kinds the converter reads argument by argument (the rest are kept whole as expressions or queries).
STRUCTURAL = (
    exp.Merge,
    exp.Whens,
    exp.When,
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Create,
    exp.Drop,
    exp.TruncateTable,
    exp.Describe,
    exp.Alter,
    exp.Schema,
    exp.ColumnDef,
    exp.ColumnConstraint,
    exp.NotNullColumnConstraint,
    exp.PrimaryKeyColumnConstraint,
    exp.CommentColumnConstraint,
    exp.PrimaryKey,
    exp.Properties,
    exp.WithDataProperty,
    exp.Where,
    exp.With,
    exp.TableAlias,
    exp.DefaultColumnConstraint,
    exp.Constraint,
    exp.AddConstraint,
    exp.AlterColumn,
    exp.RenameColumn,
    exp.Set,
    exp.SetItem,
    exp.OnConflict,
    exp.From,
)

CANDIDATES = (True, exp.var("injected_part"))


def _is_target_table(node: exp.Expression) -> bool:
    """Tables the statement writes or defines (read through Parts); source tables are rendered whole."""
    parent = node.parent
    if isinstance(parent, exp.Schema):
        parent = parent.parent
    return isinstance(node, exp.Table) and isinstance(parent, convert.CONVERTED_CLASSES) and node.arg_key == "this"


def fingerprint(value: Any) -> Any:
    """A comparable picture of a statement model: every attrs field, trees as their SQL text."""
    if isinstance(value, Tree):
        fields = {f.name: fingerprint(getattr(value, f.name)) for f in attrs.fields(type(value)) if f.name != "node"}
        return (type(value).__name__, value.node.sql(dialect="trino"), fields)
    if attrs.has(type(value)):
        return (type(value).__name__, {f.name: fingerprint(getattr(value, f.name)) for f in attrs.fields(type(value))})
    if isinstance(value, (tuple, list)):
        return tuple(fingerprint(v) for v in value)
    if isinstance(value, dict) or hasattr(value, "items"):
        return tuple(sorted((k, fingerprint(v)) for k, v in value.items()))
    return value


def dropped_parts(bases: list[str]) -> list[str]:
    """Every (statement, node, argument) whose injection was neither refused nor reflected in the model."""
    dropped: list[str] = []
    for text in bases:
        tree = sqlglot.parse_one(text, read=DIALECT)
        baseline = fingerprint(convert.convert(tree, text))
        for index, node in enumerate(tree.walk()):
            if not (isinstance(node, STRUCTURAL) or _is_target_table(node)):
                continue
            for arg in type(node).arg_types:
                if not parts.empty_clause(node.args.get(arg)):
                    continue  # present in the base statement: converted, its effect is the baseline
                for candidate in CANDIDATES:
                    copy = tree.copy()
                    target = list(copy.walk())[index]
                    target.args[arg] = candidate.copy() if isinstance(candidate, exp.Expression) else candidate
                    try:
                        converted = fingerprint(convert.convert(copy, text))
                    except MergekitError:
                        continue  # refused with a coded error
                    except Exception:  # the converter read the part (and could not use this value)
                        continue
                    if converted == baseline:
                        dropped.append(f"{type(node).__name__}.{arg}={candidate!r} in {text[:60]!r}")
    return dropped


def test_no_argument_of_a_converted_node_is_dropped() -> None:
    assert dropped_parts(BASES) == []


def test_the_walker_reaches_every_converter() -> None:
    reached = {type(sqlglot.parse_one(text, read=DIALECT)) for text in BASES}
    assert reached == set(convert.CONVERTED_CLASSES)


def test_the_walker_catches_a_converter_that_drops_a_clause(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test of the test: a DELETE converter that forgets LIMIT (as mergekit did before) is caught."""
    original = convert._CONVERTERS[exp.Delete]

    def forgets_limit(tree: exp.Delete) -> Any:
        tree = tree.copy()
        tree.set("limit", None)
        tree.set("order", None)
        return original(tree)

    monkeypatch.setitem(convert._CONVERTERS, exp.Delete, forgets_limit)
    found = dropped_parts(["DELETE FROM t AS x WHERE x.a = 1"])
    assert any(item.startswith("Delete.limit=") for item in found), found
    assert any(item.startswith("Delete.order=") for item in found), found


def test_the_walker_catches_a_new_sqlglot_argument_that_a_converter_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    """When sqlglot grows a new argument, Parts refuses it until a converter takes it; a converter that strips
    arguments it does not know (instead of leaving them to Parts) is caught."""
    monkeypatch.setattr(exp.Update, "arg_types", {**exp.Update.arg_types, "new_clause": False})
    assert dropped_parts(["UPDATE t SET b = 1"]) == []  # the real converter refuses it
    original = convert._CONVERTERS[exp.Update]

    def strips_unknown(tree: exp.Update) -> Any:
        tree = tree.copy()
        tree.args.pop("new_clause", None)
        return original(tree)

    monkeypatch.setitem(convert._CONVERTERS, exp.Update, strips_unknown)
    found = dropped_parts(["UPDATE t SET b = 1"])
    assert any(item.startswith("Update.new_clause=") for item in found), found


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("DELETE FROM t WHERE id > 0 LIMIT 1", "[NOT_SUPPORTED] LIMIT in DELETE is not supported"),
        ("UPDATE t SET v = 'z' WHERE id > 0 LIMIT 1", "[NOT_SUPPORTED] LIMIT in UPDATE is not supported"),
        ("DELETE FROM t ORDER BY id", "[NOT_SUPPORTED] ORDER BY in DELETE is not supported"),
        ("INSERT INTO t VALUES (1, 'a') ON CONFLICT ON CONSTRAINT pk DO NOTHING", "[NOT_SUPPORTED] ON CONSTRAINT"),
        ("INSERT INTO t AS x VALUES (1, 'a')", "[NOT_SUPPORTED] an alias on the INSERT target"),
        ("INSERT INTO t VALUES (1, 'a') RETURNING *", "[NOT_SUPPORTED] RETURNING in INSERT"),
        ("UPDATE t SET v = 'a' RETURNING v", "[NOT_SUPPORTED] RETURNING in UPDATE"),
        ("DELETE FROM t RETURNING *", "[NOT_SUPPORTED] RETURNING in DELETE"),
        ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING *", "RETURNING in MERGE"),
        ("CREATE TABLE d (id INT, v INT CONSTRAINT u UNIQUE)", "[NOT_SUPPORTED] a named column constraint"),
        ("CREATE TABLE d (id INT, CONSTRAINT u UNIQUE (id))", "[NOT_SUPPORTED] UNIQUE constraint in CREATE TABLE"),
        ("ALTER TABLE d ADD CONSTRAINT u UNIQUE (id)", "[NOT_SUPPORTED] UNIQUE constraint in ALTER TABLE"),
        ("ALTER TABLE d ADD CONSTRAINT c CHECK (id > 0) NOT VALID", "[NOT_SUPPORTED] NOT VALID in ALTER TABLE"),
        ("ALTER TABLE d ADD COLUMN v INT DEFAULT 1", "[NOT_SUPPORTED] DEFAULT in ALTER TABLE ... ADD COLUMN"),
        ("CREATE TABLE d (id INT DEFAULT (SELECT 1))", "[NOT_SUPPORTED] cannot use subquery in DEFAULT expression"),
        ("CREATE TABLE d (id INT DEFAULT v)", "[INVALID_ARGUMENTS] cannot use column reference in DEFAULT"),
        ("CREATE TABLE d (id INT CHECK (id IN (SELECT 1)))", "[NOT_SUPPORTED] cannot use subquery in check constraint"),
        ("CREATE TABLE d (id INT CHECK (sum(id) > 0))", "[NOT_SUPPORTED] aggregate functions are not allowed in check"),
        ("CREATE TABLE d (id INT UNIQUE)", "[NOT_SUPPORTED] UNIQUE constraint in CREATE TABLE"),
        ("CREATE TABLE d (id INT REFERENCES p (id))", "[NOT_SUPPORTED] REFERENCES in CREATE TABLE"),
        ("CREATE TABLE d (id INT, g INT GENERATED ALWAYS AS (id + 1))", "[NOT_SUPPORTED] GENERATED column"),
        ("CREATE TABLE d (id INT) USING parquet", "[NOT_SUPPORTED] USING (a file format) in CREATE TABLE"),
        ("CREATE TABLE d (id INT, v INT) PARTITIONED BY (v)", "[NOT_SUPPORTED] PARTITIONED BY in CREATE TABLE"),
        ("CREATE TABLE d (id INT) LOCATION 'file:///data/elsewhere'", "[NOT_SUPPORTED] LOCATION in CREATE TABLE"),
        ("CREATE TABLE d (id INT) COMMENT 'x'", "[NOT_SUPPORTED] COMMENT in CREATE TABLE"),
        ("CREATE OR REPLACE TABLE d (id INT)", "[NOT_SUPPORTED] OR REPLACE in CREATE TABLE"),
        ("CREATE TABLE d (id INT) AS SELECT 1 AS id", "[NOT_SUPPORTED] a column list together with AS query"),
        ("DROP TABLE d CASCADE", "[NOT_SUPPORTED] CASCADE in DROP TABLE"),
        ("DESCRIBE EXTENDED t", "[NOT_SUPPORTED] DESCRIBE EXTENDED is not supported"),
        ("EXPLAIN (TYPE DISTRIBUTED) SELECT 1", "[NOT_SUPPORTED] EXPLAIN (TYPE DISTRIBUTED)"),
        ("EXPLAIN ANALYZE SELECT 1", "[NOT_SUPPORTED] EXPLAIN ANALYZE"),
        ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *, v = 1", "cannot be combined"),
        ("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET *", "WHEN MATCHED only"),
        ("UPDATE t SET (a, b) = (SELECT 1, 2)", "[NOT_SUPPORTED] a subquery as the value of a multiple-column"),
        ("CREATE SCHEMA s WITH (location = 'x')", "[NOT_SUPPORTED] schema properties (location)"),
        ("DELETE l_us", "[SYNTAX_ERROR] line 1:8: mismatched input 'l_us'. Expecting: 'FROM'"),
        ("DELETE F", "[SYNTAX_ERROR] line 1:8: mismatched input 'F'. Expecting: 'FROM'"),
    ],
)
def test_refused_by_name(statement: str, message: str) -> None:
    from mergekit.sql import parse_statement

    with pytest.raises(MergekitError) as err:
        parse_statement(statement)
    assert str(err.value).startswith(message) or message in str(err.value), str(err.value)


def test_limits_are_coded_errors() -> None:
    from mergekit.sql import parse_statement
    from mergekit.sql.parse.parser import MAX_NESTING, MAX_STATEMENT_LENGTH

    deep = "DELETE FROM t WHERE a = " + "(" * 1000 + "1" + ")" * 1000
    with pytest.raises(MergekitError) as err:
        parse_statement(deep)
    assert err.value.code.name == "STATEMENT_TOO_DEEP"
    ok = "DELETE FROM t WHERE a = " + "(" * MAX_NESTING + "1" + ")" * MAX_NESTING
    assert parse_statement(ok) is not None
    with pytest.raises(MergekitError) as err:
        parse_statement("SELECT " + "NOT " * 5000 + "TRUE")
    assert err.value.code.name == "STATEMENT_TOO_DEEP"
    long_or = "DELETE FROM t WHERE " + " OR ".join(f"a = {i}" for i in range(3000))  # flat to Spark: it runs
    assert parse_statement(long_or) is not None
    with pytest.raises(MergekitError) as err:
        parse_statement("SELECT " + " + ".join(["a"] * 400) + " FROM t")  # Spark: "too complex to parse"
    assert err.value.code.name == "STATEMENT_TOO_DEEP"
    huge = "SELECT * FROM t WHERE a IN (" + ", ".join(["1"] * (MAX_STATEMENT_LENGTH // 3 + 1)) + ")"
    with pytest.raises(MergekitError) as err:
        parse_statement(huge)
    assert str(err.value).startswith("[QUERY_TEXT_TOO_LARGE] Query text length")
