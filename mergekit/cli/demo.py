"""``mergekit demo`` (what ``make demo`` runs): the seeds' own examples, end to end, in a fresh local warehouse.

1. **accounts** (seed 002): Trino's "Supporting MERGE" example: a MERGE with a conditional DELETE, two
   UPDATE cases and an INSERT.
2. **journal** (seed 000): calcite-sql-rewriter's ``hr.depts``: the ``hr.depts_journal`` rows after each
   INSERT, UPDATE and DELETE, then what the seed lists as missing: time travel (``FOR VERSION AS OF``),
   the change feed (``table_changes``) and an enforced primary key.
3. **conflict** (seed 000's first limitation, "concurrent updates can lead to data loss"): two engines on
   the same warehouse update the same row; the one that commits second gets ``TRANSACTION_CONFLICT``
   and its retry succeeds, and the journal keeps both updates.
4. **partitions** (seed 004): MonetDB's ``splitted`` decades (range partitions) and ``scorers``
   (value partitions over an expression), with the seed's errors, and updates that move a row to
   another child table.
5. **streams** (seed 001, ``demo_streams``): Calcite's Orders stream, the seed's filter, tumbling window and
   stream-to-table join with the seed's results, a relational query of a stream refused, then a streaming job.

Every statement is printed with its result table or row count and metrics. Where the seed gives a result,
the demo checks it and exits 1 if it differs (or if an expected error does not happen).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

from rich.text import Text

from mergekit.cli.demo_streams import streams
from mergekit.cli.runner import start_local_spark
from mergekit.cli.terminal import Output, SparkProgress, format_value
from mergekit.errors import MergekitError

__all__ = ["SECTIONS", "run_demo"]

SECTIONS = ("accounts", "journal", "conflict", "partitions", "streams")

Rows = Sequence[Sequence[str]]

# Seed 002: the tables and the MERGE of Trino's "Supporting MERGE" page.
ACCOUNTS_SETUP = [
    "CREATE TABLE accounts (customer VARCHAR, purchases DECIMAL(10,2), address VARCHAR)",
    "INSERT INTO accounts (customer, purchases, address) VALUES "
    "('Aaron', 5.00, 'Antioch'), ('Bill', 7.00, 'Buena'), ('Carol', 3.00, 'Cambridge'), "
    "('Dave', 11.00, 'Devon'), ('Joe Shmoe', 20.00, 'Jacksonville')",
    "CREATE TABLE monthly_accounts_update (customer VARCHAR, purchases DECIMAL(10,2), address VARCHAR)",
    "INSERT INTO monthly_accounts_update (customer, purchases, address) VALUES "
    "('Aaron', 6.00, 'Arches'), ('Carol', 9.00, 'Berkeley'), ('Dave', 11.00, 'Darbyshire'), "
    "('Ed', 7.00, 'Etherville'), ('Joe Shmoe', 1.00, 'Jacksonville')",
]

ACCOUNTS_MERGE = """MERGE INTO accounts t USING monthly_accounts_update s
  ON (t.customer = s.customer)
  WHEN MATCHED AND s.address = 'Berkeley' THEN
    DELETE
  WHEN MATCHED AND s.customer = 'Joe Shmoe' THEN
    UPDATE SET purchases = t.purchases + 100.0
  WHEN MATCHED THEN
    UPDATE SET purchases = s.purchases + t.purchases, address = s.address
  WHEN NOT MATCHED THEN
    INSERT (customer, purchases, address)
    VALUES (s.customer, s.purchases, s.address)"""


class Demo:
    def __init__(self, engine: Any, output: Output, warehouse: str) -> None:
        self.engine = engine
        self.output = output
        self.warehouse = warehouse
        self.progress = SparkProgress(engine, output.err)
        self.mismatches: list[str] = []
        self.statements = 0

    # ---- one statement -----------------------------------------------------------------------------

    def step(
        self,
        sql: str,
        *,
        expect: Rows | None = None,
        seed: bool = True,
        columns: Sequence[int] | None = None,
        count: int | None = None,
        error: str | None = None,
        engine: Any = None,
        prompt: str = "mergekit> ",
    ) -> Any:
        """Run and print ``sql``; check its rows (``expect``, as printed, on ``columns`` when given), its
        row count, or that it fails with the error code ``error``. ``seed``: the expected rows are the seed's."""
        self.output.statement(sql, prompt)
        self.statements += 1
        started = time.perf_counter()
        try:
            with self.progress.track(sql.split()[0].upper()):
                result = (engine or self.engine).execute(sql)
        except MergekitError as exc:
            if error is None or exc.code.name != error:
                raise
            self._say(str(exc), "bold red")
            self._ok(f"fails with {error}, as expected")
            return exc
        self.output.result(result, elapsed=time.perf_counter() - started)
        if error is not None:
            self._mismatch(sql, f"expected [{error}], but the statement succeeded")
        if count is not None and result.row_count != count:
            self._mismatch(sql, f"expected {count} rows changed, got {result.row_count}")
        if expect is not None:
            got = [tuple(format_value(row[i]) for i in (columns or range(len(row)))) for row in result.rows()]
            want = [tuple(r) for r in expect]
            if got != want:
                self._mismatch(sql, f"expected rows {want}, got {got}")
            else:
                self._ok("as in the seed" if seed else "as expected")
        return result

    def _say(self, text: str, style: str) -> None:
        self.output.out.print(Text(text, style=style if self.output.out.is_terminal else ""), soft_wrap=True)

    def _ok(self, text: str) -> None:
        self._say(f"✓ {text}", "green")

    def _mismatch(self, sql: str, text: str) -> None:
        self.mismatches.append(f"{' '.join(sql.split())[:80]}: {text}")
        self._say(f"✗ {text}", "bold red")

    def note(self, text: str) -> None:
        self.output.out.print()
        self.output.note(text)

    # ---- the seeds ---------------------------------------------------------------------------------

    def accounts(self) -> None:
        self.output.heading("Seed 002: Trino's accounts MERGE (Supporting MERGE)")
        for sql in ACCOUNTS_SETUP:
            self.step(sql)
        self.step("SELECT * FROM accounts ORDER BY customer")
        self.step("EXPLAIN " + ACCOUNTS_MERGE)
        self.step(ACCOUNTS_MERGE, count=5)
        self.note("Carol is deleted (Berkeley), Joe Shmoe gets +100, Aaron and Dave are summed and move, Ed is new:")
        self.step(
            "SELECT * FROM accounts ORDER BY customer",
            expect=[
                ("Aaron", "11.00", "Arches"),
                ("Bill", "7.00", "Buena"),
                ("Dave", "22.00", "Darbyshire"),
                ("Ed", "7.00", "Etherville"),
                ("Joe Shmoe", "120.00", "Jacksonville"),
            ],
        )

    def journal(self) -> None:
        self.output.heading("Seed 000: the hr.depts journal (calcite-sql-rewriter)")
        self.note(
            "The seed's SERIAL and TEXT are written INTEGER and VARCHAR; mergekit creates hr.depts_journal "
            "(+ version_number, subsequent_version_number) with the table."
        )
        self.step("CREATE SCHEMA hr")
        self.step(
            "CREATE TABLE hr.depts (\n  deptno INTEGER NOT NULL,\n  department_name VARCHAR NOT NULL,\n"
            "  PRIMARY KEY (deptno)\n)"
        )
        self.step("DESCRIBE hr.depts_journal")
        journal = "SELECT * FROM hr.depts_journal ORDER BY version_number"
        self.step("INSERT INTO hr.depts (deptno, department_name) VALUES (666, 'Pivotal')", count=1)
        self.step(journal, expect=[("666", "Pivotal", "NULL")], columns=(0, 1, 3))
        self.step("UPDATE hr.depts SET department_name='New Name' WHERE deptno = 666", count=1)
        self.step(journal, expect=[("666", "Pivotal", "NULL"), ("666", "New Name", "NULL")], columns=(0, 1, 3))
        self.step("SELECT * FROM hr.depts", expect=[("666", "New Name")])
        self.step("DELETE FROM hr.depts WHERE deptno=666", count=1)
        self.note("The DELETE appends a tombstone: version_number = subsequent_version_number.")
        result = self.step(
            journal, expect=[("666", "Pivotal"), ("666", "New Name"), ("666", "New Name")], columns=(0, 1)
        )
        last = result.rows()[-1]
        if last[2] is None or last[2] != last[3]:
            self._mismatch(journal, f"the last row is not a tombstone: {last}")
        self.step("SELECT * FROM hr.depts", expect=[])
        self.note("Beyond the seed: time travel to each committed version, and the change feed.")
        self.step("SELECT * FROM hr.depts FOR VERSION AS OF 1", expect=[("666", "Pivotal")], seed=False)
        self.step("SELECT * FROM hr.depts FOR VERSION AS OF 2", expect=[("666", "New Name")], seed=False)
        self.step(
            "SELECT deptno, department_name, _change_type, _commit_version FROM table_changes('hr.depts', 1)"
            " ORDER BY _commit_version",
            expect=[
                ("666", "Pivotal", "insert", "1"),
                ("666", "New Name", "update", "2"),
                ("666", "New Name", "delete", "3"),
            ],
            seed=False,
        )
        self.note("The seed cannot enforce unique keys; mergekit does:")
        self.step("INSERT INTO hr.depts VALUES (10, 'Sales'), (20, 'Research')", count=2)
        self.step("INSERT INTO hr.depts VALUES (10, 'Marketing')", error="CONSTRAINT_VIOLATION")

    def conflict(self) -> None:
        from mergekit import Engine

        self.output.heading("Seed 000's limitation: concurrent updates of one row")
        if not self._has_rows("hr.depts"):
            self.step("CREATE SCHEMA IF NOT EXISTS hr")
            self.step(
                "CREATE TABLE hr.depts (deptno INTEGER NOT NULL, department_name VARCHAR NOT NULL, "
                "PRIMARY KEY (deptno))"
            )
            self.step("INSERT INTO hr.depts VALUES (10, 'Sales'), (20, 'Research')", count=2)
        self.note(
            'The seed: "If users A and B both send an update to the same record simultaneously, one of the '
            'users changes will be lost". Here engine B is a second engine on the same warehouse.'
        )
        spec = {"connector": _connector_name(), "warehouse": self.warehouse}
        engine_b = Engine(spark=self.engine.spark, catalogs={"lake": spec})
        metadata_a = self.engine.catalog("lake").get_metadata()
        commit_a = metadata_a.finish_merge
        update_a = "UPDATE hr.depts SET department_name = 'Sales & Marketing' WHERE deptno = 10"
        update_b = "UPDATE hr.depts SET department_name = 'Field Sales' WHERE deptno = 10"

        def b_commits_first(**kwargs: Any) -> None:
            # Engine A has read its snapshot and written its files; before it commits, B changes the same row.
            del metadata_a.finish_merge
            self.note(
                "Engine A has read hr.depts and written its new row version. Before A commits, "
                "engine B updates the same row and commits:"
            )
            self.step(update_b, engine=engine_b, prompt="engine B> ", count=1)
            self.note("Now engine A commits, on its older snapshot:")
            return commit_a(**kwargs)

        metadata_a.finish_merge = b_commits_first
        try:
            self.step(update_a, prompt="engine A> ", error="TRANSACTION_CONFLICT")
        finally:
            if "finish_merge" in vars(metadata_a):
                del metadata_a.finish_merge
            engine_b.close()
        self.note("Nothing was written for A. A retries, now on a snapshot that includes B's update:")
        self.step(update_a, prompt="engine A> ", count=1)
        self.step(
            "SELECT deptno, department_name, version_number FROM hr.depts_journal WHERE deptno = 10 "
            "ORDER BY version_number",
            expect=[("10", "Sales"), ("10", "Field Sales"), ("10", "Sales & Marketing")],
            columns=(0, 1),
            seed=False,
        )
        self.note("Both updates are in the journal, in commit order; no change was lost.")

    def partitions(self) -> None:
        self.output.heading("Seed 004: MonetDB's updatable merge tables, by range: splitted")
        self.step("CREATE MERGE TABLE splitted (stamp TIMESTAMP, val INT)\n    PARTITION BY RANGE ON (stamp)")
        for child in ("first_decade", "second_decade", "third_decade"):
            self.step(f"CREATE TABLE {child} (stamp TIMESTAMP, val INT)")
        self.step(
            "ALTER TABLE splitted ADD TABLE first_decade AS PARTITION\n"
            "    FROM TIMESTAMP '2000-01-01 00:00:00' TO TIMESTAMP '2010-01-01 00:00:00'"
        )
        self.step(
            "ALTER TABLE splitted ADD TABLE second_decade AS PARTITION\n"
            "    FROM TIMESTAMP '2010-01-01 00:00:00' TO TIMESTAMP '2020-01-01 00:00:00'"
        )
        self.note("-- The following query will trigger an error: this range is enclosed by first_decade table.")
        self.step(
            "ALTER TABLE splitted ADD TABLE third_decade AS PARTITION\n"
            "    FROM TIMESTAMP '2005-02-13 01:08:10' TO TIMESTAMP '2007-12-13 00:00:00'",
            error="PARTITION_OVERLAP",
        )
        self.step(
            "INSERT INTO splitted VALUES\n"
            "    (TIMESTAMP '2000-01-01 00:00:00', 1), (TIMESTAMP '2002-12-03 20:00:00', 2),\n"
            "    (TIMESTAMP '2012-05-12 21:01:00', 3), (TIMESTAMP '2019-12-12 23:59:59', 4)",
            count=4,
        )
        self.note("-- '1972-02-13 01:00:00' is prior to the partition's minimum value.")
        self.step(
            "INSERT INTO first_decade VALUES\n"
            "    (TIMESTAMP '1972-02-13 01:00:00', 1000),\n    (TIMESTAMP '2005-02-13 01:00:00', 2000)",
            error="PARTITION_NOT_FOUND",
        )
        self.note("-- both tuples have no partition to go into.")
        self.step(
            "INSERT INTO splitted VALUES (TIMESTAMP '2020-01-01 00:00:00', 5), (NULL, 6)", error="PARTITION_NOT_FOUND"
        )
        self.step(
            "ALTER TABLE splitted ADD TABLE third_decade AS PARTITION\n"
            "    FROM TIMESTAMP '2020-01-01 00:00:00' TO RANGE MAXVALUE WITH NULL VALUES"
        )
        self.step("INSERT INTO splitted VALUES (TIMESTAMP '2020-01-01 00:00:00', 5), (NULL, 6)", count=2)
        where = _children_query(("first_decade", "second_decade", "third_decade"), "stamp, val", "val")
        self.note("Which child table holds each row (the seed's three SELECTs in one):")
        self.step(
            where,
            expect=[
                ("first_decade", "2000-01-01 00:00:00", "1"),
                ("first_decade", "2002-12-03 20:00:00", "2"),
                ("second_decade", "2012-05-12 21:01:00", "3"),
                ("second_decade", "2019-12-12 23:59:59", "4"),
                ("third_decade", "2020-01-01 00:00:00", "5"),
                ("third_decade", "NULL", "6"),
            ],
        )
        self.step(
            "SELECT stamp, val FROM splitted ORDER BY val",
            expect=[
                ("2000-01-01 00:00:00", "1"),
                ("2002-12-03 20:00:00", "2"),
                ("2012-05-12 21:01:00", "3"),
                ("2019-12-12 23:59:59", "4"),
                ("2020-01-01 00:00:00", "5"),
                ("NULL", "6"),
            ],
        )
        self.step("SELECT * FROM range_partitions")
        self.note("Beyond MonetDB: updating the partition column moves the row to its new child, in one commit.")
        self.step("UPDATE splitted SET stamp = TIMESTAMP '2015-06-15 12:00:00' WHERE val = 2", count=1)
        self.step(
            where,
            expect=[
                ("first_decade", "2000-01-01 00:00:00", "1"),
                ("second_decade", "2015-06-15 12:00:00", "2"),
                ("second_decade", "2012-05-12 21:01:00", "3"),
                ("second_decade", "2019-12-12 23:59:59", "4"),
                ("third_decade", "2020-01-01 00:00:00", "5"),
                ("third_decade", "NULL", "6"),
            ],
            seed=False,
        )
        self.note("A move to where no partition exists fails, and nothing changes:")
        self.step(
            "UPDATE splitted SET stamp = TIMESTAMP '1999-12-31 23:59:59' WHERE val IN (1, 3)",
            error="PARTITION_NOT_FOUND",
        )
        self.step("DELETE FROM splitted", count=6)
        self.step(where, expect=[])

        self.output.heading("Seed 004: by value of an expression: scorers")
        self.step(
            "CREATE FUNCTION calculate_max(a INT, b INT) RETURNS INT BEGIN\n"
            "  IF a > b THEN RETURN a; ELSE RETURN b; END IF;\n"
            "END"
        )
        self.step(
            "CREATE MERGE TABLE scorers (name clob, first_score int, second_score int)\n"
            "    PARTITION BY VALUES USING (calculate_max(first_score, second_score) % 10)"
        )
        self.step("CREATE TABLE lower_scorers (name clob, first_score int, second_score int)")
        self.step("CREATE TABLE higher_scorers (name clob, first_score int, second_score int)")
        self.step("ALTER TABLE scorers ADD TABLE lower_scorers AS PARTITION IN (0, 1, 2, 3, 4)")
        self.step("ALTER TABLE scorers ADD TABLE higher_scorers AS PARTITION IN (5, 6, 7, 8, 9)")
        self.step(
            "INSERT INTO scorers VALUES\n    ('John', 1, 3), ('Ana', 5, 18), ('Peter', 19, 19), ('Jessica', 6, 4),\n"
            "    ('Olivia', 10, 10), ('Charles', 12, 16), ('Sam', 11, 10)",
            count=7,
        )
        where = _children_query(("lower_scorers", "higher_scorers"), "name, first_score, second_score", "name")
        self.step(
            where,
            expect=[
                ("higher_scorers", "Ana", "5", "18"),
                ("higher_scorers", "Charles", "12", "16"),
                ("higher_scorers", "Jessica", "6", "4"),
                ("higher_scorers", "Peter", "19", "19"),
                ("lower_scorers", "John", "1", "3"),
                ("lower_scorers", "Olivia", "10", "10"),
                ("lower_scorers", "Sam", "11", "10"),
            ],
        )
        self.note(
            "-- Updating a column used by the partitioning expression is not allowed (MonetDB).\n"
            "mergekit re-routes the row instead: calculate_max(10, 18) % 10 = 8, so Ana stays in higher_scorers."
        )
        self.step("UPDATE scorers SET first_score = 10 WHERE name = 'Ana'", count=1)
        self.note("-- With the following query, the scores of Ana and Olivia are swapped!")
        self.step(
            "UPDATE scorers SET name =\n    CASE name WHEN 'Ana' THEN 'Olivia' WHEN 'Olivia' THEN 'Ana' END\n"
            "    WHERE name IN ('Ana', 'Olivia')",
            count=2,
        )
        self.step(
            where,
            expect=[
                ("higher_scorers", "Charles", "12", "16"),
                ("higher_scorers", "Jessica", "6", "4"),
                ("higher_scorers", "Olivia", "10", "18"),
                ("higher_scorers", "Peter", "19", "19"),
                ("lower_scorers", "Ana", "10", "10"),
                ("lower_scorers", "John", "1", "3"),
                ("lower_scorers", "Sam", "11", "10"),
            ],
            seed=False,
        )
        self.note(
            "(The seed shows Olivia 5 18: MonetDB rejected the update of first_score above.)\n"
            "Now a row that moves: calculate_max(15, 3) % 10 = 5, so John moves from lower_scorers to higher_scorers."
        )
        self.step("UPDATE scorers SET first_score = 15 WHERE name = 'John'", count=1)
        self.step(
            where,
            expect=[
                ("higher_scorers", "Charles", "12", "16"),
                ("higher_scorers", "Jessica", "6", "4"),
                ("higher_scorers", "John", "15", "3"),
                ("higher_scorers", "Olivia", "10", "18"),
                ("higher_scorers", "Peter", "19", "19"),
                ("lower_scorers", "Ana", "10", "10"),
                ("lower_scorers", "Sam", "11", "10"),
            ],
            seed=False,
        )
        self.note("The system tables of the seed's final demo:")
        self.step("SELECT * FROM table_partitions")
        self.step("SELECT * FROM value_partitions")

    def _has_rows(self, table: str) -> bool:
        try:
            return bool(self.engine.execute(f"SELECT count(*) FROM {table}").rows()[0][0])
        except MergekitError:
            return False


def _children_query(children: Sequence[str], columns: str, order: str) -> str:
    parts = [f"SELECT '{c}' AS child, {columns} FROM {c}" for c in children]
    return "\nUNION ALL ".join(parts) + f"\nORDER BY child, {order}"


def _connector_name() -> str:
    from mergekit import plugins

    available = plugins.available()
    return "partitioned" if "partitioned" in available else "journal"


def run_demo(
    *, warehouse: str | None = None, sections: Sequence[str] = (), debug: bool = False, output: Output | None = None
) -> int:
    """Run the demo; 0 when every checked result is the seed's, 1 otherwise."""
    from mergekit import Engine, plugins

    output = output or Output(debug=debug)
    chosen = [s for s in SECTIONS if not sections or s in sections]
    if "partitions" in chosen and "partitioned" not in plugins.available():
        output.note("The partitioned connector (connectors/partitioned) is not installed: skipping seed 004.")
        chosen.remove("partitions")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mergekit-demo-") as tmp:
        if warehouse and os.path.isdir(warehouse) and os.listdir(warehouse):
            from mergekit.errors import ErrorCode

            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"The demo needs a new or empty warehouse directory; {warehouse} is not empty",
            )
        path = os.path.abspath(warehouse or tmp)
        output.out.print(f"mergekit demo: a fresh warehouse in {path}")
        with output.err.status("Starting Spark…", spinner="dots") if output.err.is_terminal else nullcontext():
            start_local_spark(debug=debug)
            engine = Engine.local(warehouse=path)
        demo = Demo(engine, output, path)
        try:
            steps: dict[str, Callable[[], None]] = {
                "accounts": demo.accounts,
                "journal": demo.journal,
                "conflict": demo.conflict,
                "partitions": demo.partitions,
                "streams": lambda: streams(demo),
            }
            for name in chosen:
                steps[name]()
        finally:
            engine.close()
    elapsed = time.perf_counter() - started
    output.out.print()
    if demo.mismatches:
        output.out.print(f"Demo finished in {elapsed:.1f} s: {len(demo.mismatches)} result(s) differ from the seeds:")
        for m in demo.mismatches:
            output.out.print(f"  ✗ {m}", markup=False)
        return 1
    output.out.print(
        f"Demo finished in {elapsed:.1f} s: {demo.statements} statements, every checked result as in the seeds."
    )
    return 0
