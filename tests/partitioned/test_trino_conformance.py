"""shared/conformance/trino_examples.json on merge tables: every table of a case's setup becomes a merge
table partitioned by range on its first column, over two journal children, so rows spread over both."""

from __future__ import annotations

import re

import pytest

from mergekit import MergekitError
from tests.helpers import assert_rows, load_cases

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
    for statement in case["setup"]:
        for piece in as_merge_table(statement):
            engine.execute(piece)
    expected_error = case["expected_error"]
    result_rows = None
    if expected_error is not None:
        with pytest.raises(MergekitError) as info:
            engine.execute(case["statement"])
        assert expected_error in str(info.value)
    else:
        result = engine.execute(case["statement"])
        if case["expected_count"] is not None:
            assert result.row_count == case["expected_count"]
        result_rows = result.rows()
    rows = engine.execute(case["check_query"]).rows() if case["check_query"] is not None else result_rows
    ordered = bool(case["check_query"] and re.search(r"(?i)\border\s+by\b", case["check_query"]))
    assert_rows(rows, case["expected_rows"], ordered=ordered)


def test_rows_spread_over_both_children(engine) -> None:
    for piece in as_merge_table("CREATE TABLE t (id INTEGER, v VARCHAR)"):
        engine.execute(piece)
    engine.execute("INSERT INTO t VALUES (1, 'a'), (20, 'b'), (NULL, 'c')")
    assert engine.execute("SELECT COUNT(*) FROM t_lo").rows() == [(1,)]
    assert engine.execute("SELECT COUNT(*) FROM t_hi").rows() == [(2,)]
