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
