"""Runs generated scenarios on PostgreSQL 15 and on mergekit (journal catalog) and collects what differs.

Per statement: the outcome on both sides (tests/differential/compare.py judges it); a failed statement must leave
its side's table as it was (PostgreSQL: the rows before and after; mergekit: ``DESCRIBE HISTORY`` shows no new
commit). Per scenario: the target table's rows on both sides at the end (one Spark query instead of one per
statement). When the rows differ, the scenario is run again comparing the table after every statement, and the
first statement after which they differ is reported. A scenario ends at the first statement one side ran and the
other refused (the tables differ from then on); the mergekit table is then compared as it was before that
statement (``FOR VERSION AS OF``). The one difference that changes a table where the other side fails,
compare.DELIBERATE's ``null_left_operand``, is confirmed rather than assumed: PostgreSQL runs the statement once more
with Spark's evaluation of NULL operands written out, must then give mergekit's count and table, and keeps it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mergekit.errors import ErrorType, MergekitError
from tests.differential.compare import Outcome, judge, pg_error_key
from tests.differential.generator import Generator, Scenario, Statement
from tests.differential.timestamps import PG_ZONE

Rows = list[tuple[Any, ...]]


def _sorted(rows: Rows) -> Rows:
    return sorted((tuple(_instant(v) for v in r) for r in rows), key=repr)


def _instant(value: Any) -> Any:
    """A TIMESTAMP WITH TIME ZONE value as its instant in UTC (PostgreSQL's come in its session's zone)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC)
    return value


class Postgres:
    """One autocommit connection: each statement is its own transaction."""

    def __init__(self, uri: str) -> None:
        import psycopg

        self.psycopg = psycopg
        self.conn = psycopg.connect(uri, autocommit=True, prepare_threshold=None)  # tables change shape
        self.conn.execute("SET statement_timeout = '60s'")
        self.conn.execute(f"SET TIME ZONE '{PG_ZONE}'")  # not UTC: the generator writes what agrees (timestamps.py)

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def run(self, sql: str) -> Outcome:
        try:
            cur = self.conn.execute(sql)
        except self.psycopg.Error as exc:
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Outcome(error=pg_error_key(exc.sqlstate or "?????", message), message=message)
        return Outcome(count=cur.rowcount if cur.rowcount >= 0 else None)  # DDL: -1, as mergekit's None

    def rows(self, table: str) -> Rows:
        return _sorted(self.conn.execute(f"SELECT * FROM {table}").fetchall())

    def trial(self, sql: str, table: str) -> tuple[Outcome, Rows | None]:
        """Run a statement in a transaction that is rolled back: its outcome and the table it would leave."""
        outcome, rows = Outcome(), None
        try:
            with self.conn.transaction():
                outcome = self.run(sql)
                if outcome.ok:
                    rows = self.rows(table)
                raise self.psycopg.Rollback()
        except self.psycopg.Error as exc:  # the statement failed: the transaction is aborted
            outcome = Outcome(error=pg_error_key(exc.sqlstate or "?????", str(exc)), message=str(exc))
        return outcome, rows

    def close(self) -> None:
        self.conn.close()


class Mergekit:
    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def execute(self, sql: str) -> None:
        self.engine.execute(sql)

    def run(self, sql: str) -> Outcome:
        try:
            result = self.engine.execute(sql)
        except MergekitError as exc:
            internal = exc.code.type is not ErrorType.USER_ERROR
            return Outcome(error=exc.code.name, message=str(exc).splitlines()[0], internal=internal)
        except Exception as exc:
            return Outcome(error=type(exc).__name__, message=str(exc).splitlines()[0][:300], internal=True)
        return Outcome(count=result.row_count)

    def rows(self, table: str, version: int | None = None) -> Rows:
        at = f" FOR VERSION AS OF {version}" if version is not None else ""
        return _sorted(self.engine.execute(f"SELECT * FROM {table}{at}").rows())

    def version(self, table: str) -> int:
        """The table's newest committed version (DESCRIBE HISTORY lists newest first)."""
        return int(self.engine.execute(f"DESCRIBE HISTORY {table}").rows()[0][0])


@dataclass
class Finding:
    """A statement the two engines disagree on (or the generator got wrong)."""

    verdict: str  # disagree, generator
    why: str
    scenario: Scenario
    statement: int  # index into scenario.statements; -1: the scenario's setup
    pg: Outcome | None = None
    mk: Outcome | None = None
    pg_rows: Rows | None = None
    mk_rows: Rows | None = None

    def script(self, generator: Generator) -> list[str]:
        sc = self.scenario
        out = generator.sources_setup(sc.block, "mergekit") + sc.setup("mergekit")
        return out + [st.sql for st in sc.statements[: self.statement + 1]]

    def report(self, generator: Generator) -> str:
        sc = self.scenario
        features = ",".join(sorted(sc.features))
        lines = [
            f"[{self.verdict}] seed {sc.seed}, scenario {sc.index}, statement {self.statement}: {self.why}",
            f"  re-run: make fuzz SEED={sc.seed} ONLY={sc.index}" + (f" FEATURES={features}" if features else ""),
        ]
        if self.pg is not None and self.mk is not None:
            lines += [f"  PostgreSQL: {self.pg}", f"  mergekit:   {self.mk}"]
        if self.pg_rows is not None and self.mk_rows is not None:
            lines += [f"  PostgreSQL rows: {self.pg_rows}", f"  mergekit rows:   {self.mk_rows}"]
        lines.append("  SQL (mergekit; PostgreSQL's DDL adds DEFERRABLE INITIALLY IMMEDIATE to the key):")
        lines += [f"    {s};" for s in self.script(generator)]
        return "\n".join(lines)

    def as_json(self, generator: Generator) -> dict[str, Any]:
        sc = self.scenario
        return {
            "verdict": self.verdict,
            "why": self.why,
            "seed": sc.seed,
            "features": sorted(sc.features),
            "scenario": sc.index,
            "statement": self.statement,
            "postgres": str(self.pg) if self.pg else None,
            "mergekit": str(self.mk) if self.mk else None,
            "sql": self.script(generator),
        }


@dataclass
class Stats:
    statements: int = 0
    scenarios: int = 0
    skipped: int = 0  # statements after a diverging one
    verdicts: Counter[str] = field(default_factory=Counter)
    deliberate: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)  # agreed outcomes: ok / the PostgreSQL SQLSTATE
    kinds: Counter[str] = field(default_factory=Counter)
    tags: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.statements} statements in {self.scenarios} scenarios, {self.skipped} skipped after a diverging "
            f"statement, {self.seconds:.0f} s; verdicts {dict(self.verdicts)}; deliberate {dict(self.deliberate)}; "
            f"agreed outcomes {dict(sorted(self.outcomes.items()))}; kinds {dict(self.kinds)}; tags {dict(self.tags)}"
        )


class Runner:
    def __init__(
        self, generator: Generator, pg: Postgres, mk: Mergekit, on_finding: Callable[[Finding], None] | None = None
    ) -> None:
        self.generator, self.pg, self.mk = generator, pg, mk
        self.on_finding = on_finding
        self.block: int | None = None
        self.stats = Stats()
        self.findings: list[Finding] = []
        self.deliberate: list[str] = []  # each statement a deliberate difference explained, for review

    def run(self, scenarios: list[Scenario]) -> None:
        start = time.monotonic()
        for done, sc in enumerate(scenarios, 1):
            finding = self.scenario(sc, check_each=False)
            if finding is not None and finding.why.startswith("table differs"):
                # find the statement after which the tables first differ
                finding = self.scenario(sc, check_each=True, count=False) or Finding(
                    "disagree",
                    "table differed at the end, but not when compared statement by statement (flaky)",
                    sc,
                    len(sc.statements) - 1,
                )
            if finding is not None:
                self.findings.append(finding)
                if self.on_finding is not None:
                    self.on_finding(finding)
            self.stats.seconds = time.monotonic() - start
            if done % 25 == 0:
                print(f"[differential] {self.stats.summary()}", flush=True)

    def _setup(self, sc: Scenario) -> Finding | None:
        if self.block != sc.block:
            for a, b in zip(
                self.generator.sources_setup(sc.block, "postgres"),
                self.generator.sources_setup(sc.block, "mergekit"),
                strict=True,
            ):
                self.pg.execute(a)
                self.mk.execute(b)
            self.block = sc.block
        for a, b in zip(sc.setup("postgres"), sc.setup("mergekit"), strict=True):
            self.pg.execute(a)
            out = self.mk.run(b)
            if not out.ok:
                return Finding("disagree", f"setup failed on mergekit: {out}", sc, -1, mk=out)
        return None

    def scenario(self, sc: Scenario, *, check_each: bool, count: bool = True) -> Finding | None:
        failed = self._setup(sc)
        if failed is not None:
            return failed
        if count:
            self.stats.scenarios += 1
        for j, st in enumerate(sc.statements):
            pg_before = self.pg.rows("tgt")
            version = self.mk.version("tgt")
            pg = self.pg.run(st.sql)
            mk = self.mk.run(st.sql)
            if count:
                self._count(st, pg, mk)
            if not pg.ok and self.pg.rows("tgt") != pg_before:
                return Finding("disagree", "PostgreSQL changed the table in a failed statement", sc, j, pg, mk)
            if not mk.ok and self.mk.version("tgt") != version:
                return Finding("disagree", "a failed mergekit statement committed a new version", sc, j, pg, mk)
            verdict, why = judge(st, pg, mk)
            if count:
                self.stats.verdicts[verdict] += 1
                if verdict == "deliberate":
                    self.stats.deliberate[why] += 1
                    self.deliberate.append(
                        f"{why}: scenario {sc.index} statement {j}: PostgreSQL {pg}; mergekit {mk}\n    {st.sql}"
                    )
                elif verdict == "agree":
                    self.stats.outcomes["ok" if pg.ok else pg.error or "?"] += 1
            if verdict == "deliberate" and why == "null_left_operand":
                problem = self._confirm_spark_nulls(st, mk)
                if problem is not None:
                    return Finding("disagree", problem, sc, j, pg, mk)
                continue  # PostgreSQL ran the statement as Spark evaluates it: the tables are the same again
            if verdict in ("disagree", "generator"):
                mk_before = self.mk.rows("tgt", version)
                if mk_before != pg_before:  # an earlier statement left different tables: find it
                    why = f"table differs before the statement ({why})"
                    return Finding("disagree", why, sc, j, pg, mk, pg_before, mk_before)
                return Finding(verdict, why, sc, j, pg, mk)
            if pg.ok != mk.ok:  # a deliberate difference where one side changed its table: compare before it
                if count:
                    self.stats.skipped += len(sc.statements) - j - 1
                mk_rows = self.mk.rows("tgt", version)
                if mk_rows != pg_before:
                    return Finding("disagree", "table differs before the statement", sc, j, pg, mk, pg_before, mk_rows)
                return None
            if check_each and pg.ok:
                pg_rows, mk_rows = self.pg.rows("tgt"), self.mk.rows("tgt")
                if pg_rows != mk_rows:
                    return Finding("disagree", "table differs after the statement", sc, j, pg, mk, pg_rows, mk_rows)
        if check_each:
            return None
        pg_rows, mk_rows = self.pg.rows("tgt"), self.mk.rows("tgt")
        if pg_rows != mk_rows:
            return Finding(
                "disagree",
                "table differs at the end of the scenario",
                sc,
                len(sc.statements) - 1,
                pg_rows=pg_rows,
                mk_rows=mk_rows,
            )
        return None

    def _confirm_spark_nulls(self, st: Statement, mk: Outcome) -> str | None:
        """compare.DELIBERATE's null_left_operand holds only if PostgreSQL, running the statement with every
        operator written as Spark evaluates it, gives mergekit's count and table; then it runs it for real."""
        assert st.spark_nulls is not None
        outcome, rows = self.pg.trial(st.spark_nulls, "tgt")
        if not outcome.ok or outcome.count != mk.count:
            return f"null_left_operand does not explain it: with Spark's NULL evaluation PostgreSQL gives {outcome}"
        if rows != self.mk.rows("tgt"):
            return "null_left_operand does not explain it: with Spark's NULL evaluation the tables differ"
        self.pg.execute(st.spark_nulls)
        return None

    def _count(self, st: Statement, pg: Outcome, mk: Outcome) -> None:
        self.stats.statements += 1
        self.stats.kinds[st.kind] += 1
        for tag in st.tags:
            self.stats.tags[tag] += 1
