"""Issue 14: generated bad statements on the journal, partitioned and memory catalogs.

Every case of tests/badsql/generator.py is a user mistake or an unsupported statement. Each must raise a
``MergekitError`` whose ``str()`` begins with ``[CODE]``, whose code is a user code (never one of type
INTERNAL_ERROR) acceptable for the case's category, within ``CASE_TIMEOUT`` seconds, and leave every table as it
was. After each case a cheap fingerprint of the catalog is compared (the journal's and the partition registry's
SQLite catalogs, committed versions and files included, so an empty commit shows too; the memory connector's
tables and versions; the table list); every ``CHECK_EVERY`` cases and at the end, the rows of every table as
well. A catalog that changed is rebuilt from scratch, so one bad case does not make the next ones fail.

``make test`` runs ``MERGEKIT_BADSQL_N`` (default 70) cases per catalog. The issue's 1,000-statement run:

    MERGEKIT_BADSQL_N=334 .venv/bin/python -m pytest -q -p no:cacheprovider -s tests/badsql

Other knobs: ``MERGEKIT_BADSQL_SEED`` (default 14), ``MERGEKIT_BADSQL_HUGE_BYTES`` (size of the huge statements,
default 5000000; a comma-separated list to choose from, e.g. 5000000,900000 for statements just under the
engine's text limit too), ``MERGEKIT_BADSQL_REPORT`` (a path: every case's outcome as JSON lines).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import resource
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from mergekit import Engine
from mergekit import sql as msql
from mergekit.errors import ErrorCode, ErrorType, MergekitError
from tests.badsql.generator import (
    ALLOWED,
    KINDS,
    Case,
    Generator,
    setup_statements,
    tables,
    tokens,
    valid_statements,
)

N = int(os.environ.get("MERGEKIT_BADSQL_N", "70"))
SEED = int(os.environ.get("MERGEKIT_BADSQL_SEED", "14"))
HUGE_BYTES = tuple(int(b) for b in os.environ.get("MERGEKIT_BADSQL_HUGE_BYTES", "5000000").split(","))
REPORT = os.environ.get("MERGEKIT_BADSQL_REPORT")
CASE_TIMEOUT = float(os.environ.get("MERGEKIT_BADSQL_CASE_TIMEOUT", "120"))
CHECK_EVERY = 100

INTERNAL = {c.name for c in ErrorCode if c.type is ErrorType.INTERNAL_ERROR}


# ---- catalogs ----------------------------------------------------------------------------------------------------


class Catalog:
    """One catalog of one kind with the generator's schema and rows, rebuildable in a fresh warehouse."""

    def __init__(self, spark: Any, kind: str, root: Path) -> None:
        self.spark, self.kind, self.root = spark, kind, root
        self.builds = 0
        self.engine: Engine | None = None
        self.build()

    def build(self) -> None:
        if self.engine is not None:
            self.engine.close()
        self.builds += 1
        self.warehouse = self.root / f"wh{self.builds}"
        spec: dict[str, Any] = {"connector": self.kind}
        if self.kind != "memory":
            spec["warehouse"] = str(self.warehouse)
        self.engine = Engine(spark=self.spark, catalogs={"lake": spec})
        for statement in setup_statements(self.kind):
            self.engine.execute(statement)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()

    # -- the cheap fingerprint: no Spark job --

    def fingerprint(self) -> str:
        assert self.engine is not None
        parts: list[Any] = [sorted(r[0] for r in self.engine.execute("SHOW TABLES").rows())]
        parts.append(sorted(r[0] for r in self.engine.execute("SHOW SCHEMAS").rows()))
        if self.kind == "memory":
            connector = self.engine.catalog("lake")
            if not isinstance(getattr(connector, "tables", None), dict):  # internals changed: fall back to rows
                return hashlib.sha256(repr((parts, self.checksum())).encode()).hexdigest()
            for name, table in sorted(connector.tables.items(), key=lambda kv: str(kv[0])):
                data = getattr(table, "data", None)
                digest = hashlib.sha256(repr(data.to_pydict()).encode()).hexdigest() if data is not None else None
                parts.append((str(name), getattr(table, "version", None), digest))
        else:
            for file in sorted(self.warehouse.glob("*.sqlite")):
                parts.append((file.name, _sqlite_dump(file)))
            if self.kind == "journal":
                parts.append([self._history(t) for t in tables(self.kind)])
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def _history(self, table: str) -> Any:
        """The table's commits as DESCRIBE HISTORY lists them (None where the statement does not exist)."""
        assert self.engine is not None
        try:
            return self.engine.execute(f"DESCRIBE HISTORY {table}").rows()
        except MergekitError:
            return None

    # -- the full checksum: the rows of every table (Spark jobs) --

    def checksum(self) -> dict[str, str]:
        assert self.engine is not None
        names = list(tables(self.kind))
        if self.kind != "memory":
            names += ["emp_journal", "dept_journal"]
        if self.kind == "partitioned":
            names += ["table_partitions", "range_partitions", "value_partitions"]
        out = {}
        for name in names:
            rows = self.engine.execute(f"SELECT * FROM {name}").rows()
            out[name] = hashlib.sha256(repr(sorted(rows, key=repr)).encode()).hexdigest()
        return out


def _sqlite_dump(path: Path) -> list[Any]:
    """Every row of every table of a SQLite catalog, read-only (WAL: committed state only). The journal's
    ``next_statement`` counter is left out: it numbers statements, including failed ones, and is no table state."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        out = []
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for name in names:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")') if r[1] != "next_statement"]
            if not cols:
                continue
            select = ", ".join(f'"{c}"' for c in cols)
            rows = conn.execute(f'SELECT {select} FROM "{name}"').fetchall()
            out.append((name, sorted(rows, key=repr)))
        return out
    finally:
        conn.close()


# ---- running cases -----------------------------------------------------------------------------------------------


def _statement_thread() -> concurrent.futures.ThreadPoolExecutor:
    """One thread that runs the statements (so a hang is noticed), with the main thread's C stack size: a deep
    statement must fail here as it would in a script."""
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    size = soft if 0 < soft < 1024**3 else 64 * 1024 * 1024
    old = threading.stack_size(size)
    try:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="badsql")
        pool.submit(lambda: None).result()  # starts the thread now, with that stack size
    finally:
        threading.stack_size(old)
    return pool


def _judge(case: Case, outcome: BaseException | None) -> str | None:
    """None when the case failed as it must, else what was wrong (a failure group and the detail)."""
    if outcome is None:
        return "no error: the statement succeeded"
    if not isinstance(outcome, MergekitError):
        return f"non-Mergekit exception: {type(outcome).__name__}: {str(outcome)[:300]}"
    text = str(outcome)
    code = outcome.code.name
    if not text.startswith(f"[{code}]"):
        return f"text does not begin with [CODE]: {text[:300]}"
    if code in INTERNAL:
        return f"internal code: {text[:300]}"
    if code not in case.codes:
        return f"wrong code (want {'/'.join(sorted(case.codes))}): {text[:300]}"
    return None


def _group(problem: str) -> str:
    return problem.split(":")[0].split(" (")[0]


def run_cases(catalog: Catalog, cases: list[Case]) -> dict[str, Any]:
    failures: list[dict[str, Any]] = []
    outcomes: Counter[str] = Counter()
    timings: list[tuple[float, Case]] = []
    report = open(REPORT, "a") if REPORT else None  # closed below
    pool = _statement_thread()
    fingerprint = catalog.fingerprint()
    checksum = catalog.checksum()
    window_start = 0
    started = time.perf_counter()
    stopped_at: int | None = None

    def fail(case: Case, problem: str, elapsed: float) -> None:
        failures.append(
            {
                "kind": catalog.kind,
                "index": case.index,
                "category": case.category,
                "label": case.label,
                "group": _group(problem),
                "problem": problem,
                "sql": case.short(),
                "seconds": round(elapsed, 2),
            }
        )

    for n, case in enumerate(cases):
        assert catalog.engine is not None
        t0 = time.perf_counter()
        future = pool.submit(catalog.engine.execute, case.sql)
        outcome: BaseException | None
        try:
            future.result(timeout=CASE_TIMEOUT)
            outcome = None
        except concurrent.futures.TimeoutError:
            catalog.spark.sparkContext.cancelAllJobs()
            try:
                future.result(timeout=60)
            except BaseException:  # only whether it stopped matters now
                pass
            elapsed = time.perf_counter() - t0
            fail(case, f"hang: no answer after {CASE_TIMEOUT:.0f} s", elapsed)
            if not future.done():
                stopped_at = n  # the engine is still busy: the rest of the run cannot go on
                break
            catalog.build()
            fingerprint, checksum, window_start = catalog.fingerprint(), catalog.checksum(), n + 1
            continue
        except BaseException as exc:  # every exception is judged
            outcome = exc
        elapsed = time.perf_counter() - t0
        timings.append((elapsed, case))
        problem = _judge(case, outcome)
        outcomes["ok" if problem is None else _group(problem)] += 1
        if problem is not None:
            fail(case, problem, elapsed)
        if report is not None:
            report.write(
                json.dumps(
                    {
                        "kind": catalog.kind,
                        "index": case.index,
                        "category": case.category,
                        "label": case.label,
                        "outcome": "success" if outcome is None else f"{type(outcome).__name__}: {str(outcome)[:300]}",
                        "problem": problem,
                        "seconds": round(elapsed, 3),
                        "sql": case.short(),
                    }
                )
                + "\n"
            )
        changed = catalog.fingerprint() != fingerprint
        full_check = (n + 1) % CHECK_EVERY == 0 or n == len(cases) - 1
        if not changed and full_check:
            now = catalog.checksum()
            if now != checksum:
                diff = sorted(k for k in now if now[k] != checksum.get(k))
                fail(
                    case,
                    f"table changed: rows of {diff} differ, found after case {case.index} "
                    f"(some case of {cases[window_start].index}..{case.index})",
                    elapsed,
                )
                changed = True
        elif changed:
            fail(case, "table changed: catalog fingerprint (tables, commits, files, registry) differs", elapsed)
        if changed:
            catalog.build()
            fingerprint, checksum = catalog.fingerprint(), catalog.checksum()
        if changed or full_check:
            window_start = n + 1
    total = time.perf_counter() - started
    pool.shutdown(wait=False)
    if report is not None:
        report.close()
    ran = len(timings)
    return {
        "kind": catalog.kind,
        "ran": ran,
        "stopped_at": stopped_at,
        "seconds": total,
        "rate": ran / total if total else 0.0,
        "outcomes": outcomes,
        "failures": failures,
        "slowest": sorted(timings, key=lambda t: -t[0])[:5],
        "timings": timings,
        "per_category": _per_category(timings),
        "rebuilds": catalog.builds - 1,
    }


def _per_category(timings: list[tuple[float, Case]]) -> dict[str, tuple[int, float]]:
    acc: dict[str, list[float]] = defaultdict(list)
    for elapsed, case in timings:
        acc[case.category].append(elapsed)
    return {k: (len(v), sum(v) / len(v)) for k, v in sorted(acc.items())}


def _rate(seconds: list[float]) -> str:
    total = sum(seconds)
    return f"{len(seconds)} at {len(seconds) / total:.0f} statements/s" if total else f"{len(seconds)}"


def _summary(result: dict[str, Any]) -> str:
    lines = [
        f"{result['kind']}: {result['ran']} statements in {result['seconds']:.1f} s "
        f"({result['rate']:.1f} statements/s), {len(result['failures'])} failures, "
        f"{result['rebuilds']} catalog rebuilds; outcomes {dict(result['outcomes'])}",
        "  mean seconds per category: "
        + ", ".join(f"{k} {n}x{mean:.3f}" for k, (n, mean) in result["per_category"].items()),
        "  statements without a Spark job (under 0.1 s): " + _rate([e for e, _ in result["timings"] if e < 0.1]),
        "  slowest: " + "; ".join(f"{e:.1f}s #{c.index} {c.category}/{c.label}" for e, c in result["slowest"]),
    ]
    if result["stopped_at"] is not None:
        lines.append(f"  STOPPED after case {result['stopped_at']}: a statement never returned")
    return "\n".join(lines)


def _failure_text(failures: list[dict[str, Any]]) -> str:
    lines = []
    for f in failures:
        lines.append(f"- [{f['kind']} #{f['index']} {f['category']}/{f['label']}] {f['problem']}\n    SQL: {f['sql']}")
    return "\n".join(lines)


# ---- tests -------------------------------------------------------------------------------------------------------


def test_generator_is_deterministic_and_within_the_allow_map() -> None:
    for kind in KINDS:
        a = list(Generator(SEED, kind, huge_bytes=1000).cases(300))
        b = list(Generator(SEED, kind, huge_bytes=1000).cases(300))
        assert a == b
        for case in a:
            assert case.codes and case.codes <= ALLOWED[case.category], case
            assert not case.codes & INTERNAL, case
        # the material of mutations parses as it is (so a mutation, not the original, is what fails)
        valid = {" ".join(tokens(v)).upper() for v in valid_statements(kind)}
        for v in valid_statements(kind):
            msql.parse_statement(v)
        for case in a:
            if case.category in ("mutation", "truncated", "unbalanced"):
                assert " ".join(tokens(case.sql)).upper() not in valid, case


@pytest.mark.timeout(600 + 10 * N)  # a hang is caught per case (CASE_TIMEOUT); this only bounds the whole run
@pytest.mark.parametrize("kind", KINDS)
def test_bad_statements(spark, tmp_path, kind: str) -> None:
    catalog = Catalog(spark, kind, tmp_path)
    try:
        generator = Generator(SEED, kind, huge_bytes=HUGE_BYTES)
        cases = list(generator.cases(N))
        result = run_cases(catalog, cases)
    finally:
        catalog.close()
    summary = _summary(result)
    print("\n" + summary)
    by_group = Counter(f["group"] for f in result["failures"])
    assert not result["failures"] and result["stopped_at"] is None, (
        f"{summary}\nfailures by group: {dict(by_group)}\n{_failure_text(result['failures'])}"
    )
