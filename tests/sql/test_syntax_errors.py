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


def _refused_where_it_says(text: str, message: str) -> None:
    """``text`` fails to parse with SYNTAX_ERROR ``message``, whose ``line L:C:`` is the line and column the error
    carries."""
    with pytest.raises(MergekitError) as err:
        parse_statement(text)
    assert str(err.value) == f"[SYNTAX_ERROR] {message}"
    line, column = (int(n) for n in message[len("line ") :].split(":")[:2])
    assert (err.value.details["line"], err.value.details["column"]) == (line, column)


@pytest.mark.parametrize(("text", "message"), NAMED, ids=[n[0] for n in NAMED])
def test_common_mistakes_are_named(text: str, message: str) -> None:
    _refused_where_it_says(text, message)


def test_double_equals_in_a_builder_condition() -> None:
    from mergekit.sql import parse_expression

    with pytest.raises(MergekitError) as err:
        parse_expression("t.id == s.id")
    assert (
        str(err.value)
        == "[SYNTAX_ERROR] line 1:6: mismatched input '=='. Expecting: '=' (SQL compares with a single =)"
    )


# Issue 26, a new user's trial: each mistake named in words, with the line and column of the user's own text
TRIAL = [
    # an expression that ends after its operator (the parser's "incomplete ADD", "incomplete DPIPE")
    ("SELECT 1 +", "line 1:10: the expression ends after '+'; expected an operand"),
    ("SELECT name ||\nFROM t", "line 2:1: mismatched input 'FROM'. Expecting: an operand after '||'"),
    ("SELECT * FROM t WHERE a = 1 AND", "line 1:29: the expression ends after 'AND'; expected an operand"),
    ("SELECT 1 + (2 *)", "line 1:16: mismatched input ')'. Expecting: an operand after '*'"),
    # UPDATE's assignment list is empty, or SET is missing altogether
    ("UPDATE t SET WHERE id = 1", "line 1:10: SET needs at least one assignment: column = value"),
    ("UPDATE t\nSET", "line 2:1: SET needs at least one assignment: column = value"),
    ("UPDATE t", "line 1:8: SET is missing: UPDATE table SET column = value [, ...] [WHERE condition]"),
    # a string literal, quoted identifier or comment that never ends: where it starts, and all it swallowed
    ("SELECT 'unterminated FROM t", "line 1:8: unterminated string literal: 'unterminated FROM t"),
    ("SELECT 'a''b', 1,\n  'c FROM t\n WHERE x = 1", "line 2:3: unterminated string literal: 'c FROM t\n WHERE x = 1"),
    ('SELECT "abc FROM t', 'line 1:8: unterminated quoted identifier: "abc FROM t'),
    ("SELECT 1 /* note FROM t", "line 1:10: unterminated comment: /* note FROM t"),
    # MERGE without INTO (Trino's grammar requires it)
    ("MERGE t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "line 1:7: MERGE needs INTO: MERGE INTO target USING source ON condition WHEN ..."),
    ("MERGE WITH SCHEMA EVOLUTION t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "line 1:29: MERGE needs INTO: MERGE INTO target USING source ON condition WHEN ..."),
    # a row count is an integer literal (Trino's grammar): LIMIT, OFFSET, FETCH FIRST
    ("SELECT * FROM t LIMIT -1", "line 1:23: mismatched input '-'. Expecting: 'ALL', <integer>"),
    ("SELECT * FROM t OFFSET -1", "line 1:24: mismatched input '-'. Expecting: <integer>"),
    ("SELECT * FROM t FETCH FIRST -1 ROWS ONLY", "line 1:29: mismatched input '-'. Expecting: 'ROW', 'ROWS', <integer>"),
    ("SELECT * FROM t LIMIT 1.5", "line 1:23: mismatched input '1.5'. Expecting: 'ALL', <integer>"),
    ("SELECT * FROM (SELECT * FROM t LIMIT (2)) x", "line 1:38: mismatched input '('. Expecting: 'ALL', <integer>"),
    ("DELETE FROM t WHERE id IN (SELECT id FROM t LIMIT 1 + 1)", "line 1:53: mismatched input '+'"),
    # positions count what came before the statement: blank lines, comments, EXPLAIN
    ("\n-- the first mistake\n  SELEC 1", "line 3:3: mismatched input 'SELEC'. Expected a statement (did you mean SELECT?)"),
    ("EXPLAIN\n  SELECT 1 +", "line 2:12: the expression ends after '+'; expected an operand"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), TRIAL, ids=[t[0] for t in TRIAL])
def test_first_trial_mistakes_are_named(text: str, message: str) -> None:
    _refused_where_it_says(text, message)


def test_row_counts_trino_takes_and_columns_named_limit() -> None:
    for text in (
        "SELECT * FROM t LIMIT ALL",
        "SELECT * FROM t LIMIT 0",
        "SELECT * FROM t OFFSET 2 ROWS FETCH NEXT 3 ROWS ONLY",
        "SELECT * FROM t FETCH FIRST ROW ONLY",
        'SELECT "limit", "offset" FROM t WHERE "limit" > 3 LIMIT 5',
        "MERGE WITH SCHEMA EVOLUTION INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
    ):
        parse_statement(text)


def test_a_lone_expression_reports_positions_in_itself() -> None:
    from mergekit.sql import parse_expression

    cases = [
        ("s.v ||", "line 1:5: the expression ends after '||'; expected an operand"),
        ("s.v = 'x", "line 1:7: unterminated string literal: 'x"),
        ("a b", "line 1:3: mismatched input 'b'. Expecting: the end of the expression"),
        ("", "expected an expression, got nothing"),
    ]
    for text, message in cases:
        with pytest.raises(MergekitError) as err:
            parse_expression(text)
        assert str(err.value) == f"[SYNTAX_ERROR] {message}", text
