"""Unit tests of ``mergekit_journal.rewrite``: the generated SQL, per dialect, parsed back with sqlglot."""

from __future__ import annotations

import pytest
import sqlglot
from mergekit_journal.rewrite import DIALECTS, JournalOptions, rewrite
from sqlglot import exp

from mergekit.errors import MergekitError

SEED = {"journal_tables": {"depts": ["deptno"], "emps": "empid", "items": ["region", "id"]}}
SCHEMAS = {
    "depts": ["deptno", "department_name"],
    "emps": ["empid", "deptno", "first_name", "last_name"],
    "items": ["region", "id", "name", "qty"],
}


def parse(sql: str, dialect: str) -> list[exp.Expression]:
    return [s for s in sqlglot.parse(sql, read=dialect) if s is not None]


def one(sql: str, dialect: str) -> exp.Expression:
    trees = parse(sql, dialect)
    assert len(trees) == 1, sql
    return trees[0]


def tables(tree: exp.Expression) -> set[str]:
    return {t.name for t in tree.find_all(exp.Table)}


def rw(sql: str, dialect: str = "postgres", **kw) -> str:
    kw.setdefault("options", SEED)
    kw.setdefault("schemas", SCHEMAS)
    return rewrite(sql, dialect=dialect, **kw)


def windows(tree: exp.Expression) -> list[tuple[str, list[str]]]:
    out = []
    for w in tree.find_all(exp.Window):
        assert isinstance(w.this, exp.Max)
        out.append((w.this.this.name, [p.name for p in w.args["partition_by"]]))
    return out


# ---- the seed's four examples (README of calcite-sql-rewriter) ------------------------------------------


def test_seed_insert():
    sql = rw("INSERT INTO hr.depts (deptno, department_name) VALUES (666, 'Pivotal')")
    tree = one(sql, "postgres")
    assert isinstance(tree, exp.Insert)
    target = tree.this
    assert target.this.name == "depts_journal" and target.this.db == "hr"
    assert [c.name for c in target.expressions] == ["deptno", "department_name", "version_number"]
    row = tree.expression.expressions[0]
    assert [type(v) for v in row.expressions] == [exp.Literal, exp.Literal, exp.CurrentTimestamp]
    assert sql.startswith('INSERT INTO "hr"."depts_journal" ("deptno", "department_name", "version_number")')


def test_seed_update():
    sql = rw("UPDATE hr.depts SET department_name='New Name' WHERE deptno = 666")
    tree = one(sql, "postgres")
    assert isinstance(tree, exp.Insert)
    assert [c.name for c in tree.this.expressions] == ["deptno", "department_name", "version_number"]
    select = tree.expression
    assert isinstance(select, exp.Select)
    assert [p.alias_or_name for p in select.expressions] == ["deptno", "department_name", "version_number"]
    assert select.expressions[1].this == exp.Literal.string("New Name")
    assert windows(select) == [("version_number", ["deptno"])]
    assert tables(select) == {"depts_journal"}
    where = select.args["where"].sql("postgres")
    assert '"depts"."subsequent_version_number" IS NULL' in where
    assert '"depts"."version_number" = "depts"."last_version_number"' in where
    assert '"deptno" = 666' in where


def test_seed_delete_is_a_tombstone():
    tree = one(rw("DELETE FROM hr.depts WHERE deptno=666"), "postgres")
    assert [c.name for c in tree.this.expressions] == [
        "deptno",
        "department_name",
        "version_number",
        "subsequent_version_number",
    ]
    projection = tree.expression.expressions
    assert isinstance(projection[2].this, exp.CurrentTimestamp) and projection[2].alias == "version_number"
    assert isinstance(projection[3].this, exp.CurrentTimestamp) and projection[3].alias == "subsequent_version_number"


def test_seed_select():
    tree = one(rw("SELECT * FROM hr.depts"), "postgres")
    derived = tree.args["from_"].this
    assert isinstance(derived, exp.Subquery) and derived.alias == "depts"
    inner = derived.this
    assert [p.name for p in inner.expressions] == ["deptno", "department_name"]  # metadata columns hidden
    assert windows(tree) == [("version_number", ["deptno"])]
    assert "IS NULL" in inner.args["where"].sql("postgres")


def test_bigint_versions_are_max_plus_one_of_the_journal():
    tree = one(rw("UPDATE depts SET department_name = 'x'", options={**SEED, "version_type": "BIGINT"}), "postgres")
    version = tree.expression.expressions[-1].this
    assert isinstance(version, exp.Subquery)
    assert version.this.sql("postgres") == 'SELECT COALESCE(MAX("version_number"), 0) + 1 FROM "depts_journal"'


# ---- every dialect --------------------------------------------------------------------------------------

STATEMENTS = {
    "select": "SELECT d.deptno, COUNT(*) FROM emps e JOIN depts d ON e.deptno = d.deptno GROUP BY d.deptno",
    "insert_values": "INSERT INTO depts VALUES (5, 'New')",
    "insert_select": "INSERT INTO emps (empid, last_name, deptno) SELECT deptno + 1000, 'added', deptno FROM depts",
    "update": "UPDATE emps SET last_name = 'x' WHERE deptno IN (SELECT deptno FROM depts WHERE deptno > 1)",
    "update_key": "UPDATE items SET id = id + 10 WHERE region = 'eu'",
    "delete": "DELETE FROM items WHERE qty = 0",
    "merge": "MERGE INTO items t USING (VALUES ('eu', 1, 5)) AS s(region, id, q) ON t.region = s.region AND "
    "t.id = s.id WHEN MATCHED AND s.q = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET qty = s.q "
    "WHEN NOT MATCHED THEN INSERT (region, id, qty) VALUES (s.region, s.id, s.q) "
    "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET qty = 0",
}


@pytest.mark.parametrize("version_type", ["timestamp", "bigint"])
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("kind", sorted(STATEMENTS))
def test_every_dialect_parses_back(kind, dialect, version_type):
    sql = rw(STATEMENTS[kind], dialect, options={**SEED, "version_type": version_type})
    tree = one(sql, dialect)
    quote = "`" if dialect in ("hive", "spark") else '"'
    if kind == "select":
        assert isinstance(tree, exp.Select)
        assert tables(tree) == {"emps_journal", "depts_journal"}
        assert f"{quote}emps_journal{quote}" in sql
    else:
        assert isinstance(tree, exp.Insert)
        target = tree.this.this.name
        assert target.endswith("_journal")
        assert f"INSERT INTO {quote}{target}{quote}" in sql
        # nothing but journals is read or written
        assert all(name.endswith("_journal") for name in tables(tree)), tables(tree)
    if kind not in ("insert_values",):
        assert windows(tree), "reads must pick the latest version per key"
    # the latest version per key is picked with the key as the window partition
    for field, partition in windows(tree):
        assert field == "version_number"
        assert partition in (["deptno"], ["empid"], ["region", "id"])
    if version_type == "bigint" and kind != "select":
        assert "COALESCE(MAX(" in sql
    # printed identically by sqlglot after a round trip through the dialect
    assert one(tree.sql(dialect), dialect) == tree


def test_composite_key_update_moves_rows_with_a_tombstone():
    tree = one(rw(STATEMENTS["update_key"]), "postgres")
    union = tree.expression
    assert isinstance(union, exp.Union) and not union.args.get("distinct")
    new_versions, tombstones = union.this, union.expression
    assert [p.alias_or_name for p in new_versions.expressions][-1] == "subsequent_version_number"
    assert isinstance(new_versions.expressions[-1].this, exp.Null)
    assert isinstance(tombstones.expressions[-1].this, exp.CurrentTimestamp)
    assert "IS NOT DISTINCT FROM" in tombstones.args["where"].sql("postgres")


@pytest.mark.parametrize(
    ("clauses", "side"),
    [
        ("WHEN MATCHED THEN UPDATE SET qty = s.q", None),
        ("WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (region, id) VALUES (s.region, s.id)", "RIGHT"),
        ("WHEN NOT MATCHED BY SOURCE THEN DELETE", "FULL"),
    ],
)
def test_merge_is_one_insert_over_one_join(clauses, side):
    sql = rw(
        f"MERGE INTO items t USING staging s ON t.region = s.region AND t.id = s.id {clauses}",
        options={"journal_tables": {**SEED["journal_tables"], "staging": ["region", "id"]}},
    )
    tree = one(sql, "postgres")
    assert isinstance(tree, exp.Insert)
    select = tree.expression
    joins = select.args["joins"]
    assert len(joins) == 1
    assert (joins[0].side or None) == side
    assert tables(tree) == {"items_journal", "staging_journal"}
    assert [c.name for c in tree.this.expressions][: len(SCHEMAS["items"])] == SCHEMAS["items"]


def test_time_travel_bounds_the_versions():
    sql = rw("SELECT * FROM depts FOR VERSION AS OF 3", options={**SEED, "version_type": "bigint"})
    assert '"version_number" <= 3' in sql
    sql = rw("SELECT * FROM depts FOR TIMESTAMP AS OF TIMESTAMP '2024-01-01 00:00:00'")
    assert '"version_number" <= CAST(' in sql


# ---- quoting --------------------------------------------------------------------------------------------

HOSTILE_LITERALS = ["O'Brien", "a\\b", "'); DROP TABLE depts_journal; --", 'say "hi"', "`tick`"]


def _escape(text: str) -> str:
    return text.replace("'", "''")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_hostile_identifiers_and_literals_stay_what_they_are(dialect):
    options = {"journal_tables": {'we"ird': ["it's"]}}
    schemas = {'we"ird': ["it's", 'a"b', "c`d"]}
    for literal in HOSTILE_LITERALS:
        for statement in (
            f"""INSERT INTO "we""ird" ("it's", "a""b") VALUES (1, '{_escape(literal)}')""",
            f"""UPDATE "we""ird" SET "a""b" = '{_escape(literal)}' WHERE "c`d" = '{_escape(literal)}'""",
            f"""DELETE FROM "we""ird" WHERE "a""b" = '{_escape(literal)}'""",
            f"""SELECT "a""b" FROM "we""ird" WHERE "c`d" <> '{_escape(literal)}'""",
        ):
            sql = rewrite(statement, dialect=dialect, options=options, schemas=schemas)
            tree = one(sql, dialect)
            strings = {lit.this for lit in tree.find_all(exp.Literal) if lit.is_string}
            assert literal in strings, (literal, sql)
            names = {i.this for i in tree.find_all(exp.Identifier)}
            assert {'we"ird_journal', "it's", 'a"b'} <= names, sql
            if "c`d" in statement:
                assert "c`d" in names
            assert all(i.quoted for i in tree.find_all(exp.Identifier))
            # the statement stays one statement: an injected "; DROP TABLE" is only ever a value
            assert not any(isinstance(t, exp.Drop) for t in parse(sql, dialect))


def test_identifiers_fold_to_lower_case_and_are_quoted():
    sql = rw("UPDATE DEPTS SET Department_Name = \"DeptNo\" || 'x' WHERE DeptNo = 1")
    assert '"department_name"' in sql and '"deptno"' in sql and "DEPTS" not in sql


# ---- tables that are not journalled ---------------------------------------------------------------------


def test_other_tables_and_journals_pass_through():
    tree = one(rw("INSERT INTO other (id) SELECT deptno FROM depts"), "postgres")
    assert tree.this.this.name == "other"
    assert tables(tree) == {"other", "depts_journal"}
    tree = one(rw("SELECT * FROM depts_journal"), "postgres")
    assert tables(tree) == {"depts_journal"} and not windows(tree)
    sql = rw("DELETE FROM other WHERE id = 1", "trino")
    assert sql == 'DELETE FROM "other" WHERE "id" = 1'


def test_without_journal_tables_every_table_is_journalled_with_the_default_key():
    sql = rewrite("DELETE FROM t WHERE a = 1", dialect="postgres", options={"default_key": "id"})
    tree = one(sql, "postgres")
    assert tree.this.this.name == "t_journal"
    assert [c.name for c in tree.this.expressions] == ["id", "version_number", "subsequent_version_number"]


def test_options_by_seed_names_and_custom_fields():
    options = JournalOptions.from_mapping(
        {
            "journalSuffix": "_log",
            "journalVersionField": "v",
            "journalSubsequentVersionField": "sv",
            "journalVersionType": "BIGINT",
            "journalTables": {"depts": "deptno"},
            "warehouse": "/ignored",
        }
    )
    assert options.version_type == "bigint"
    sql = rewrite("DELETE FROM depts WHERE deptno = 1", dialect="postgres", options=options, schemas=SCHEMAS)
    tree = one(sql, "postgres")
    assert tree.this.this.name == "depts_log"
    assert [c.name for c in tree.this.expressions][-2:] == ["v", "sv"]
    assert windows(tree) == [("v", ["deptno"])]


# ---- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "kw", "code", "text"),
    [
        ("UPDATE t SET a = 1", {"options": {}}, "INVALID_ARGUMENTS", "No primary key given for table: t"),
        ("UPDATE depts SET department_name = 'x'", {"schemas": {}}, "INVALID_ARGUMENTS", "--schema depts="),
        ("SELECT * FROM depts", {"schemas": {}}, "INVALID_ARGUMENTS", "needs its columns"),
        ("UPDATE depts SET version_number = 1", {}, "INVALID_ARGUMENTS", "written by the journal"),
        ("UPDATE depts SET nope = 1", {}, "COLUMN_NOT_FOUND", "nope"),
        ("CREATE TABLE x (a INT)", {}, "NOT_SUPPORTED", "DDL"),
        ("SELEC 1 FROM depts", {}, "SYNTAX_ERROR", ""),
        ("SELECT 1", {"options": {"version_type": "nope"}}, "INVALID_ARGUMENTS", "Unknown version type: nope"),
        ("SELECT 1", {"options": {"bogus": 1}}, "INVALID_ARGUMENTS", "Unknown journal option: bogus"),
    ],
)
def test_errors(sql, kw, code, text):
    with pytest.raises(MergekitError) as err:
        rw(sql, **kw)
    assert err.value.code.name == code
    assert text in str(err.value)
    assert str(err.value).startswith(f"[{code}]")


def test_unknown_dialect():
    with pytest.raises(MergekitError) as err:
        rewrite("SELECT 1", dialect="oracle", options=SEED)
    assert err.value.code.name == "INVALID_ARGUMENTS"
