"""shared/conformance/trino_examples.json on merge tables: every table of a case's setup becomes a merge
table partitioned by range on its first column, over two journal children, so rows spread over both."""

from __future__ import annotations

import re

import pytest

from tests.helpers import load_cases, run_case

CASES = load_cases("trino_examples.json")
_CREATE = re.compile(r"(?is)^CREATE TABLE (\w+) \((\w+) (\w+)(.*)\)$")


def as_merge_table(statement: str) -> list[str]:
    m = _CREATE.match(statement.strip())
    if not m:
        return [statement]
    name, first, first_type, rest = m.groups()
    body = f"({first} {first_type}{rest})"
    split = "'M'" if first_type.upper().startswith(("VARCHAR", "CHAR")) else "10"
    return [
        f"CREATE MERGE TABLE {name} {body} PARTITION BY RANGE ON ({first})",
        f"CREATE TABLE {name}_lo {body}",
        f"CREATE TABLE {name}_hi {body}",
        f"ALTER TABLE {name} ADD TABLE {name}_lo AS PARTITION FROM RANGE MINVALUE TO {split}",
        f"ALTER TABLE {name} ADD TABLE {name}_hi AS PARTITION FROM {split} TO RANGE MAXVALUE WITH NULL VALUES",
    ]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_trino_case_on_merge_tables(engine, case) -> None:
    # (every case of trino_examples.json lists its rows: they are always compared)
    run_case(engine, case, (piece for statement in case["setup"] for piece in as_merge_table(statement)))


def test_rows_spread_over_both_children(engine) -> None:
    for piece in as_merge_table("CREATE TABLE t (id INTEGER, v VARCHAR)"):
        engine.execute(piece)
    engine.execute("INSERT INTO t VALUES (1, 'a'), (20, 'b'), (NULL, 'c')")
    assert engine.execute("SELECT COUNT(*) FROM t_lo").rows() == [(1,)]
    assert engine.execute("SELECT COUNT(*) FROM t_hi").rows() == [(2,)]
