"""Syntax errors speak SQL: a position where one is known, no parser internals (class names, token reprs)."""

from __future__ import annotations

import pytest

from mergekit.errors import MergekitError
from mergekit.sql import parse_statement

GARBAGE = [
    "SELEC 1",
    "MERGE INTO",
    "MERGE INTO t USING s ON",
    "MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN",
    "MERGE INTO t USING s ON t.a = s.a WHEN NOT MATCHED THEN INSERT",
    "UPDATE t SET",
    "UPDATE SET a = 1",
    "DELETE FROM",
    "INSERT INTO t VALUES (1",
    "INSERT INTO t SELECT",
    "CREATE TABLE t (a)",
    "SELECT * FROM t WHERE",
    "SELECT 'abc",
    "((((",
    "VALUES",
    "DELETE l_us",
    "UPDATE t SET a = 1 WHERE",
    "INSERT INTO t (a, b VALUES (1)",
    "GRANT SELECT ON t TO u",
]


@pytest.mark.parametrize("text", GARBAGE)
def test_syntax_error_is_coded_and_plain(text: str) -> None:
    with pytest.raises(MergekitError) as err:
        parse_statement(text)
    message = str(err.value)
    assert message.startswith("[SYNTAX_ERROR] "), message
    for internal in ("sqlglot", "<class", "Token", "SENTINEL", "Traceback", "expressions."):
        assert internal not in message, message


def test_position_is_reported() -> None:
    with pytest.raises(MergekitError) as err:
        parse_statement("SELECT * FROM t WHERE")
    assert str(err.value).startswith("[SYNTAX_ERROR] line 1:21: ")
    assert err.value.details["line"] == 1 and err.value.details["column"] == 21


# Issue 26: the mistakes of a first day, named in the user's words with the line and column of their text
NAMED = [
    ("SELEC * FROM t", "line 1:1: mismatched input 'SELEC'. Expected a statement (did you mean SELECT?)"),
    ("Insrt INTO t VALUES (1)", "line 1:1: mismatched input 'Insrt'. Expected a statement (did you mean INSERT?)"),
    ("FROBNICATE t", "line 1:1: mismatched input 'FROBNICATE'. Expected a statement"),
    ("UPDATE t qty = 5", "line 1:10: SET is missing before 'qty': UPDATE table SET column = value [, ...] [WHERE condition]"),
    ("UPDATE lake.default.t AS x\n  qty = 5", "line 2:3: SET is missing before 'qty': UPDATE table SET column = value [, ...] [WHERE condition]"),
    ("SELECT a,\n  `b` FROM t", "line 2:3: backquoted identifiers are not supported; use double quotes to quote identifiers"),
    ("SELECT '`' FROM t WHERE a == 1", "line 1:27: mismatched input '=='. Expecting: '=' (SQL compares with a single =)"),
    ("select * form t", "line 1:15: mismatched input 't'"),
    ("INSERT INTO t (a, b VALUES (1)", "line 1:21: mismatched input 'VALUES'. Expecting: ')'"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), NAMED, ids=[n[0] for n in NAMED])
def test_common_mistakes_are_named(text: str, message: str) -> None:
    with pytest.raises(MergekitError) as err:
        parse_statement(text)
    assert str(err.value) == f"[SYNTAX_ERROR] {message}"
    line, column = (int(n) for n in message[len("line ") :].split(":")[:2])
    assert (err.value.details["line"], err.value.details["column"]) == (line, column)


def test_double_equals_in_a_builder_condition() -> None:
    from mergekit.sql import parse_expression

    with pytest.raises(MergekitError) as err:
        parse_expression("t.id == s.id")
    assert (
        str(err.value)
        == "[SYNTAX_ERROR] line 1:6: mismatched input '=='. Expecting: '=' (SQL compares with a single =)"
    )
