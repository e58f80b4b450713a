"""Issue 16, item 8: random tables and MERGE/UPDATE/DELETE/INSERT statements (tests/differential/generator.py) run on
a throwaway PostgreSQL 15 server and on mergekit's journal catalog; both must agree on every statement's outcome
(row count, or the class of the error) and on the table afterwards, except for the differences docs/sql.md lists
under "Differences from PostgreSQL" (compare.DELIBERATE). How the two are compared: tests/differential/runner.py.

``make test`` runs ``MERGEKIT_FUZZ_N`` statements (default 80, in about 20 scenarios: 2.5-3 minutes measured on the
two shared cores, 1.5-2.5 s per statement; PostgreSQL's side takes milliseconds).
Larger runs: ``make fuzz N=2000 [SEED=16] [FEATURES=do_nothing,multi_set] [ONLY=scenario index]``. Knobs:

- ``MERGEKIT_FUZZ_N``: statements to run (whole scenarios: a few more);
- ``MERGEKIT_FUZZ_SEED``: the seed (default 16);
- ``MERGEKIT_FUZZ_FEATURES``: optional generator features to turn on besides :data:`FEATURES_ON`, comma-separated
  (``all`` for every one of generator.FEATURES), ``-name`` turns one off;
- ``MERGEKIT_FUZZ_ONLY``: run only these scenario indexes (comma-separated), to re-run a reported disagreement;
- ``MERGEKIT_FUZZ_REPORT``: a path; every finding is written there as a JSON line;
- ``MERGEKIT_FUZZ_TIER``: the engine's ``driver_tier`` session property, ``auto`` (the default: statements the
  driver tier evaluates run there) or ``off`` (every statement on Spark): ``make fuzz TIER=off``.

The second test runs many more scenarios, with every optional feature on, on PostgreSQL alone: every statement the
generator writes must be valid PostgreSQL that fails, if at all, only for a reason it was built to be able to fail
for, and every hazard and feature must occur.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter

import pytest

from mergekit import Engine
from tests.differential.compare import DELIBERATE, SQLSTATE_HAZARDS, Outcome, explained_by_hazards, judge
from tests.differential.generator import FEATURES, HAZARDS, Generator, Scenario, Statement
from tests.differential.runner import Finding, Mergekit, Postgres, Runner

pytestmark = pytest.mark.spark

# Optional generator features the comparison runs with: each one is turned on here once mergekit implements it.
# All six are on: mergekit implements each of them.
FEATURES_ON: frozenset[str] = frozenset({"do_nothing", "multi_set", "check", "defaults", "dates", "zones"})
# The caller's Spark session runs in this zone during the comparison: mergekit's SQL must not depend on it.
SPARK_ZONE = "Asia/Kolkata"

N = int(os.environ.get("MERGEKIT_FUZZ_N") or "80")
SEED = int(os.environ.get("MERGEKIT_FUZZ_SEED") or "16")
ONLY = [int(i) for i in (os.environ.get("MERGEKIT_FUZZ_ONLY") or "").split(",") if i.strip()]
REPORT = os.environ.get("MERGEKIT_FUZZ_REPORT")
TIER = os.environ.get("MERGEKIT_FUZZ_TIER") or "auto"
PG_ONLY_SCENARIOS = int(os.environ.get("MERGEKIT_FUZZ_PG_SCENARIOS") or "400")


def _features() -> frozenset[str]:
    out = set(FEATURES_ON)
    for item in (os.environ.get("MERGEKIT_FUZZ_FEATURES") or "").split(","):
        item = item.strip()
        if item == "all":
            out |= set(FEATURES)
        elif item.startswith("-"):
            out.discard(item[1:])
        elif item:
            out.add(item)
    unknown = out - set(FEATURES)
    assert not unknown, f"unknown features {sorted(unknown)}; known: {FEATURES}"
    return frozenset(out)


def _database(server: str) -> str:
    """A new database with byte-order collation (mergekit compares strings as Spark does: by code point)."""
    import psycopg

    name = f"fuzz_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
    return f"{server}/{name}"


@pytest.mark.timeout(600 + 30 * N)  # the slowest statements measured took 5-10 s on a loaded machine
def test_mergekit_agrees_with_postgres(spark, tmp_path, pg_server):
    generator = Generator(SEED, _features())
    scenarios: list[Scenario] = [generator.scenario(i) for i in ONLY] if ONLY else list(generator.scenarios(N))
    pg = Postgres(_database(pg_server))
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh")}})
    engine.execute(f"SET SESSION driver_tier = '{TIER}'")

    def found(finding: Finding) -> None:  # as soon as found: a long run shows them while it goes on
        print(finding.report(generator), flush=True)
        if REPORT:
            with open(REPORT, "a") as out:
                out.write(json.dumps(finding.as_json(generator)) + "\n")

    runner = Runner(generator, pg, Mergekit(engine), on_finding=found)
    zone_before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", SPARK_ZONE)  # the caller's zone is not mergekit's SQL's
    try:
        runner.run(scenarios)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone_before)
        engine.close()
        pg.close()
    stats = runner.stats
    print(f"\ndifferential (seed {SEED}, features {sorted(generator.features)}): {stats.summary()}")
    print("deliberate differences:\n  " + "\n  ".join(runner.deliberate))
    reports = [f.report(generator) for f in runner.findings]
    assert not reports, f"{len(reports)} disagreement(s) with PostgreSQL:\n\n" + "\n\n".join(reports)
    if not ONLY:  # the run compared something: statements that succeeded and statements that failed alike
        assert stats.outcomes["ok"] > stats.statements // 4, stats.summary()
        assert sum(n for k, n in stats.outcomes.items() if k != "ok") > 0, stats.summary()


def test_generated_statements_are_valid_postgres(pg_server):
    """Every optional feature on, PostgreSQL alone: no statement fails for a reason it was not built to fail for
    (a generator bug), every hazard occurs as a PostgreSQL error, every feature and statement kind occurs."""
    generator = Generator(SEED, frozenset(FEATURES))
    pg = Postgres(_database(pg_server))
    errors: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    bad: list[str] = []
    block = None
    try:
        for i in range(PG_ONLY_SCENARIOS):
            sc = generator.scenario(i)
            if sc.block != block:
                for sql in generator.sources_setup(sc.block, "postgres"):
                    pg.execute(sql)
                block = sc.block
            for sql in sc.setup("postgres"):
                pg.execute(sql)
            for j, st in enumerate(sc.statements):
                out = pg.run(st.sql)
                kinds[st.kind] += 1
                tags.update(st.tags)
                if out.ok:
                    continue
                errors[out.error or "?"] += 1
                if not explained_by_hazards(st, out):
                    bad.append(f"scenario {i} statement {j}: {out} (hazards {sorted(st.hazards)})\n  {st.sql}")
    finally:
        pg.close()
    assert not bad, f"{len(bad)} generated statement(s) fail on PostgreSQL unexpectedly:\n" + "\n".join(bad[:20])
    seen_hazards = {h for key, n in errors.items() for h in SQLSTATE_HAZARDS.get(key, ())}
    assert seen_hazards == set(HAZARDS), f"hazards never raised: {set(HAZARDS) - seen_hazards}; errors {errors}"
    assert set(FEATURES) <= set(tags), f"features never generated: {set(FEATURES) - set(tags)}"
    assert {"assign_number_to_text", "assign_literal_to_number"} <= set(tags), tags
    assert set(kinds) == {"merge", "update", "delete", "insert", "alter"}, kinds


def test_deliberate_differences_are_documented():
    """docs/sql.md's "Differences from PostgreSQL" names exactly the entries of compare.DELIBERATE."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "sql.md").read_text()
    section = text.split("## Differences from PostgreSQL", 1)
    assert len(section) == 2, "docs/sql.md has no section 'Differences from PostgreSQL'"
    body = section[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", body, flags=re.M))
    assert documented == {d.name for d in DELIBERATE}


def test_judge_flags_what_differs():
    """The comparison itself: what agrees, what only a documented difference explains, and what is a finding."""

    def st(hazards: frozenset[str] = frozenset(), tags: frozenset[str] = frozenset()) -> Statement:
        return Statement("UPDATE tgt SET a = 1", "update", hazards, tags)

    ok = Outcome(count=2)
    assert judge(st(), ok, Outcome(count=2)) == ("agree", "")
    assert judge(st(), ok, Outcome(count=3))[0] == "disagree"
    assert judge(st(), ok, Outcome(error="NUMERIC_VALUE_OUT_OF_RANGE"))[0] == "disagree"
    overflow = Outcome(error="22003")
    assert judge(st(frozenset({"overflow"})), overflow, Outcome(error="NUMERIC_VALUE_OUT_OF_RANGE")) == ("agree", "")
    assert judge(st(frozenset({"overflow"})), overflow, Outcome(error="DIVISION_BY_ZERO"))[0] == "disagree"
    assert judge(st(frozenset({"overflow"})), overflow, ok)[0] == "disagree"
    assert judge(st(), overflow, Outcome(error="NUMERIC_VALUE_OUT_OF_RANGE"))[0] == "generator"
    internal = Outcome(error="EXECUTION_ERROR", internal=True)
    assert judge(st(frozenset({"overflow"})), overflow, internal)[0] == "disagree"
    # documented differences apply only where their construct is in the statement
    mismatch = Outcome(error="TYPE_MISMATCH")
    assert judge(st(tags=frozenset({"assign_number_to_text"})), ok, mismatch) == (
        "deliberate",
        "assignment_number_to_text",
    )
    assert judge(st(), ok, mismatch)[0] == "disagree"
    two = st(frozenset({"overflow", "not_null"}))
    assert judge(two, overflow, Outcome(error="CONSTRAINT_VIOLATION")) == ("deliberate", "error_precedence")
    assert judge(st(frozenset({"overflow"})), overflow, Outcome(error="CONSTRAINT_VIOLATION"))[0] == "disagree"
    merge_twice = Outcome(error="21000/merge")
    assert (
        judge(st(frozenset({"dup_match"})), merge_twice, Outcome(error="MERGE_TARGET_ROW_MULTIPLE_MATCHES"))[0]
        == "agree"
    )
    assert judge(st(frozenset({"dup_match"})), merge_twice, Outcome(error="SUBQUERY_MULTIPLE_ROWS"))[0] == "disagree"
    # a date past 9999 is PostgreSQL's only when its range holds it (and the statement has date arithmetic)
    dates = st(frozenset({"overflow"}), frozenset({"date_arith"}))
    past = Outcome(
        error="NUMERIC_VALUE_OUT_OF_RANGE",
        message="[NUMERIC_VALUE_OUT_OF_RANGE] Date out of range: 2020-01-31 + 1000000000",
    )
    assert judge(dates, ok, past) == ("deliberate", "date_range")
    assert judge(st(frozenset({"overflow"})), ok, past)[0] == "disagree"
    beyond = Outcome(error="NUMERIC_VALUE_OUT_OF_RANGE", message="Date out of range: 2020-01-31 + 2147483647")
    assert judge(dates, ok, beyond)[0] == "disagree"  # PostgreSQL fails there too
    assert judge(dates, Outcome(error="22008"), beyond) == ("agree", "")
