"""Acceptance: ``mergekit rewrite --dialect postgres`` output, executed on a real PostgreSQL 15 server on
seed-convention journal tables, gives the same logical tables as mergekit's own journal connector on Spark.

The same statements run in the same order on both sides. After every statement the logical table of every
journalled table is read on PostgreSQL with the rewritten ``SELECT *`` (latest live version per key) and on
mergekit through the Engine, and the two must be equal; queries must return the same rows, DML the same
row counts (except where a key move appends extra tombstones on the PostgreSQL side).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import pytest
from mergekit_journal.rewrite import rewrite

from tests.helpers import normalize
from tests.pg_server import fresh_database

pytestmark = pytest.mark.spark


@attrs.frozen
class Table:
    key: tuple[str, ...]
    columns: tuple[tuple[str, str, str], ...]  # (name, mergekit type, PostgreSQL type)


TABLES: dict[str, Table] = {
    "depts": Table(key=("deptno",), columns=(("deptno", "INTEGER", "INTEGER"), ("department_name", "VARCHAR", "TEXT"))),
    "emps": Table(
        key=("empid",),
        columns=(
            ("empid", "INTEGER", "INTEGER"),
            ("deptno", "INTEGER", "INTEGER"),
            ("first_name", "VARCHAR", "TEXT"),
            ("last_name", "VARCHAR", "TEXT"),
            ("salary", "INTEGER", "INTEGER"),
        ),
    ),
    # composite keys
    "items": Table(
        key=("region", "id"),
        columns=(
            ("region", "VARCHAR", "TEXT"),
            ("id", "INTEGER", "INTEGER"),
            ("name", "VARCHAR", "TEXT"),
            ("qty", "INTEGER", "INTEGER"),
            ("price", "DECIMAL(10,2)", "NUMERIC(10,2)"),
        ),
    ),
    "staging": Table(
        key=("region", "id"),
        columns=(
            ("region", "VARCHAR", "TEXT"),
            ("id", "INTEGER", "INTEGER"),
            ("qty", "INTEGER", "INTEGER"),
            ("price", "DECIMAL(10,2)", "NUMERIC(10,2)"),
        ),
    ),
}
SCHEMAS = {name: [c[0] for c in t.columns] for name, t in TABLES.items()}


@attrs.frozen
class Step:
    sql: str
    moves_keys: bool = False  # PostgreSQL appends tombstones for moved keys: journal row count differs
    error: str | None = None  # mergekit error code; PostgreSQL must fail too (journal primary key)


STEPS: list[Step] = [
    # INSERT
    Step("INSERT INTO depts VALUES (1, 'Sales'), (2, 'R&D'), (3, 'Ops'), (4, 'HR')"),
    Step(
        "INSERT INTO emps (empid, deptno, first_name, last_name, salary) VALUES (1, 1, 'Peter', 'Pan', 100), "
        "(2, 1, 'Ian', 'O''Brien', 200), (3, 2, 'Victor', 'S', 300), (4, 2, 'Stan', 'Ban', 150), "
        "(5, 2, 'Dimitar', 'G', 120), (6, 4, 'Ivan', 'B', 90)"
    ),
    Step(
        "INSERT INTO items VALUES ('eu', 1, 'bolt', 10, 1.50), ('eu', 2, 'nut', 20, 0.25), "
        "('us', 1, 'bolt', 5, 1.60), ('us', 2, 'screw', 0, NULL), ('apac', 1, 'gear', 3, 12.00)"
    ),
    Step(
        "INSERT INTO staging (region, id, qty, price) VALUES ('eu', 1, 15, 1.55), ('eu', 3, 7, 2.00), "
        "('us', 2, 9, 0.99), ('apac', 9, 1, 5.00)"
    ),
    # UPDATE, DELETE
    Step("UPDATE emps SET salary = salary + 10 WHERE deptno = 2"),
    Step("UPDATE emps SET deptno = 2 WHERE empid = 1"),
    Step("SELECT empid FROM emps WHERE deptno = 1"),  # emp 1 moved out of dept 1: its old version must not show
    Step("UPDATE items SET qty = qty * 2 WHERE region = 'eu' AND id = 2"),
    Step("DELETE FROM emps WHERE empid = 5"),
    Step("DELETE FROM items WHERE region = 'us' AND qty = 0"),
    Step("INSERT INTO emps (empid, deptno, first_name, last_name, salary) VALUES (5, 3, 'Dimitar', 'Again', 130)"),
    # subqueries
    Step("UPDATE emps SET salary = (SELECT MAX(salary) FROM emps) WHERE empid = 6"),
    Step(
        "UPDATE emps SET last_name = last_name || '-x' WHERE deptno IN "
        "(SELECT deptno FROM depts WHERE department_name = 'R&D')"
    ),
    Step("DELETE FROM depts WHERE deptno NOT IN (SELECT deptno FROM emps)"),
    Step(
        "SELECT d.deptno, COUNT(*) FROM emps AS e JOIN depts AS d ON e.deptno = d.deptno GROUP BY d.deptno "
        "HAVING COUNT(*) > 1"
    ),
    # MERGE
    Step(
        "MERGE INTO items t USING staging s ON t.region = s.region AND t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET qty = s.qty, price = s.price "
        "WHEN NOT MATCHED THEN INSERT (region, id, name, qty, price) VALUES (s.region, s.id, 'new', s.qty, s.price)"
    ),
    Step(
        "MERGE INTO emps e USING (VALUES (1, 500), (2, 0), (7, 50)) AS s(id, sal) ON e.empid = s.id "
        "WHEN MATCHED AND s.sal = 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET salary = s.sal "
        "WHEN NOT MATCHED THEN INSERT (empid, deptno, first_name, last_name, salary) VALUES (s.id, 4, 'New', 'Hire', s.sal)"
    ),
    Step(
        "MERGE INTO items t USING (SELECT region, id FROM staging WHERE qty > 5) AS s "
        "ON t.region = s.region AND t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE AND t.region = 'apac' THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET qty = 0"
    ),
    Step("UPDATE items SET id = id + 100 WHERE region = 'eu'", moves_keys=True),  # composite key move
    Step("SELECT region, COUNT(*), SUM(qty) FROM items GROUP BY region"),
    Step(
        "INSERT INTO depts (deptno, department_name) SELECT deptno + 10, department_name || ' II' FROM depts "
        "WHERE deptno < 3"
    ),
    Step("UPDATE depts SET department_name = 'It''s ' || department_name WHERE deptno > 10"),
    Step("DELETE FROM depts WHERE department_name LIKE 'It%' AND deptno = 11"),
    Step(
        "MERGE INTO depts d USING (SELECT deptno, COUNT(*) AS n FROM emps GROUP BY deptno) AS s "
        "ON d.deptno = s.deptno "
        "WHEN MATCHED AND s.n >= 3 THEN UPDATE SET department_name = d.department_name || ' (big)' "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.deptno, 'auto')"
    ),
    Step("UPDATE emps SET salary = NULL WHERE first_name = 'New'"),
    Step("UPDATE emps SET salary = COALESCE(salary, 0) + 1 WHERE salary IS NULL OR salary < 100"),
    Step("DELETE FROM items WHERE price IS NULL"),
    Step("MERGE INTO staging s USING items i ON s.region = i.region AND s.id = i.id WHEN MATCHED THEN DELETE"),
    Step("INSERT INTO staging SELECT region, id + 50, qty, price FROM items WHERE region = 'eu'"),
    Step("UPDATE emps SET empid = empid + 1000, last_name = 'moved' WHERE empid IN (3, 4)", moves_keys=True),
    Step(
        "WITH x AS (SELECT deptno FROM depts WHERE deptno < 3) SELECT e.empid, e.last_name FROM emps e "
        "JOIN x ON e.deptno = x.deptno"
    ),
    Step("DELETE FROM emps WHERE salary > (SELECT AVG(salary) FROM emps)"),
    Step(
        "MERGE INTO emps e USING depts d ON e.deptno = d.deptno "
        "WHEN MATCHED AND d.department_name LIKE '%(big)' THEN UPDATE SET salary = salary * 2"
    ),
    Step(
        "MERGE INTO items t USING (VALUES ('eu', 101, 1), ('eu', 101, 2)) AS s(region, id, q) "
        "ON t.region = s.region AND t.id = s.id WHEN MATCHED THEN UPDATE SET qty = s.q",
        error="MERGE_TARGET_ROW_MULTIPLE_MATCHES",
    ),
    Step("UPDATE items SET name = 'renamed'"),
    Step(
        "DELETE FROM items WHERE EXISTS (SELECT 1 FROM staging s WHERE s.region = items.region "
        "AND s.id + 50 = items.id)"
    ),
    Step("DELETE FROM staging"),
    Step("INSERT INTO staging VALUES ('eu', 1, 1, 1.00)"),
    Step("SELECT * FROM emps WHERE empid NOT IN (SELECT empid FROM emps WHERE deptno = 2)"),
    Step(
        "MERGE INTO staging t USING (VALUES ('us', 77)) AS s(region, id) ON t.region = s.region AND t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (region, id) VALUES (s.region, s.id)"
    ),
    Step(
        "MERGE INTO staging t USING (SELECT region, id, qty FROM items) AS s ON t.region = s.region AND t.id = s.id "
        "WHEN NOT MATCHED AND s.qty > 0 THEN INSERT (region, id, qty) VALUES (s.region, s.id, s.qty) "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET id = t.id + 7",
        moves_keys=True,
    ),
]


def _rows(rows: Any) -> Counter:
    return Counter(tuple(normalize(v) for v in row) for row in rows)


def _pg_logical(pg: Any, table: str, options: dict) -> Counter:
    return _rows(
        pg.execute(rewrite(f"SELECT * FROM {table}", dialect="postgres", options=options, schemas=SCHEMAS)).fetchall()
    )


def _mk_logical(engine: Any, table: str) -> Counter:
    return _rows(engine.execute(f"SELECT * FROM {table}").rows())


def _written_table(sql: str) -> list[str]:
    words = sql.replace("(", " ").split()
    verb = words[0].upper()
    if verb in ("INSERT", "MERGE", "DELETE"):
        return [words[2]]
    if verb == "UPDATE":
        return [words[1]]
    return []


def _pg_ddl(name: str, t: Table, version_type: str) -> str:
    vtype = "BIGINT" if version_type == "bigint" else "TIMESTAMP WITH TIME ZONE"
    cols = [f"{n} {pg} {'NOT NULL' if n in t.key else 'NULL'}" for n, _, pg in t.columns]
    # the seed's convention: metadata columns anywhere (here after the key), key + version as primary key
    meta = [f"version_number {vtype} NOT NULL", f"subsequent_version_number {vtype} NULL DEFAULT NULL"]
    body = cols[: len(t.key)] + meta + cols[len(t.key) :]
    return f"CREATE TABLE {name}_journal ({', '.join(body)}, PRIMARY KEY ({', '.join(t.key)}, version_number))"


@pytest.mark.parametrize("version_type", ["bigint", "timestamp"])
def test_rewrite_on_postgres_equals_mergekit(spark, tmp_path, pg_server, version_type):
    import psycopg

    from mergekit import Engine
    from mergekit.errors import MergekitError

    assert len(STEPS) >= 30
    options = {"version_type": version_type, "journal_tables": {n: list(t.key) for n, t in TABLES.items()}}
    engine = Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh"), "version_type": version_type}},
        default_catalog="lake",
    )
    uri = fresh_database(pg_server)
    with psycopg.connect(uri, autocommit=True) as pg:
        assert pg.execute("SHOW server_version_num").fetchone()[0].startswith("15")
        for name, t in TABLES.items():
            cols = ", ".join(f"{n} {mk}" for n, mk, _ in t.columns)
            engine.execute(f"CREATE TABLE {name} ({cols}, PRIMARY KEY ({', '.join(t.key)}))")
            pg.execute(_pg_ddl(name, t, version_type))
        executed = 0
        changed = 0  # DML steps that changed rows: the sequence must really exercise the rewrite
        for i, step in enumerate(STEPS):
            where = f"step {i}: {step.sql}"
            sql = rewrite(step.sql, dialect="postgres", options=options, schemas=SCHEMAS)
            if step.error is not None:
                with pytest.raises(MergekitError) as mk_err:
                    engine.execute(step.sql)
                assert mk_err.value.code.name == step.error, where
                with pytest.raises(psycopg.errors.UniqueViolation):
                    pg.execute(sql)
            else:
                result = engine.execute(step.sql)
                cur = pg.execute(sql)
                if result.row_count is None:
                    assert _rows(cur.fetchall()) == _rows(result.rows()), where
                else:
                    changed += result.row_count > 0
                    if not step.moves_keys:
                        assert cur.rowcount == result.row_count, where
            # the logical table the statement wrote (all of them at the end)
            for table in TABLES if i == len(STEPS) - 1 else _written_table(step.sql):
                assert _pg_logical(pg, table, options) == _mk_logical(engine, table), f"{where}: table {table}"
            executed += 1
        assert executed == len(STEPS)
        assert changed >= 30, changed
        # the journals really are append-only histories: every DML appended versions, tombstones included
        tombstones = pg.execute(
            "SELECT COUNT(*) FROM emps_journal WHERE subsequent_version_number = version_number"
        ).fetchone()[0]
        assert tombstones >= 3


def test_hostile_names_and_literals_on_postgres(pg_server):
    """Identifiers with quotes and literals with quotes, backslashes and injected SQL stay data on PostgreSQL."""
    import psycopg

    options = {"journal_tables": {'we"ird': ["it's"]}, "version_type": "bigint"}
    schemas = {'we"ird': ["it's", 'a"b']}
    values = ["O'Brien", "a\\b", '\'); DROP TABLE "we""ird_journal"; --', 'say "hi"']

    def run(pg, sql: str) -> Any:
        return pg.execute(rewrite(sql, dialect="postgres", options=options, schemas=schemas))

    def lit(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    with psycopg.connect(fresh_database(pg_server), autocommit=True) as pg:
        pg.execute(
            'CREATE TABLE "we""ird_journal" ("it\'s" INTEGER NOT NULL, "a""b" TEXT, '
            "version_number BIGINT NOT NULL, subsequent_version_number BIGINT, "
            'PRIMARY KEY ("it\'s", version_number))'
        )
        for i, v in enumerate(values):
            run(pg, f'INSERT INTO "we""ird" ("it\'s", "a""b") VALUES ({i}, {lit(v)})')
        rows = run(pg, 'SELECT "it\'s", "a""b" FROM "we""ird"').fetchall()
        assert sorted(rows) == list(enumerate(values))
        run(pg, f'UPDATE "we""ird" SET "a""b" = "a""b" || {lit(values[0])} WHERE "a""b" = {lit(values[2])}')
        run(pg, f'DELETE FROM "we""ird" WHERE "a""b" = {lit(values[1])}')
        rows = dict(run(pg, 'SELECT * FROM "we""ird"').fetchall())
        assert rows == {0: values[0], 2: values[2] + values[0], 3: values[3]}
        journal = pg.execute('SELECT COUNT(*), COUNT(subsequent_version_number) FROM "we""ird_journal"').fetchone()
        assert journal == (6, 1)  # 4 inserts, 1 new version, 1 tombstone
