"""CREATE FUNCTION (MonetDB's form, seed 004): script splitting around BEGIN ... END and inlining as CASE."""

from __future__ import annotations

import pytest

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql import parse_statement, register_function, split_statements

SCRIPT = """CREATE FUNCTION unit_max(a INT, b INT) RETURNS INT BEGIN
  IF a > b THEN RETURN a; ELSE RETURN b; END IF;
END;
SELECT CASE WHEN 1 = 1 THEN 'x' END; SELECT unit_max(1, 2)"""


def test_script_splitting_keeps_a_function_body_whole() -> None:
    pieces = split_statements(SCRIPT)
    assert len(pieces) == 3
    assert pieces[0].endswith("END IF;\nEND")
    assert pieces[1] == "SELECT CASE WHEN 1 = 1 THEN 'x' END"


def test_functions_are_inlined_as_case_expressions() -> None:
    fn = parse_statement(split_statements(SCRIPT)[0]).function
    assert fn.name == "unit_max" and fn.parameters == ("a", "b") and fn.returns == "int"
    register_function(fn)
    spark_sql = parse_statement("SELECT unit_max(x, 3) % 10 FROM t").to_spark(tables={}, schema={"t": {"x": "integer"}})
    assert "CASE WHEN" in spark_sql and "unit_max" not in spark_sql
    with pytest.raises(MergekitError) as info:
        parse_statement("SELECT unit_max(1) FROM t").to_spark(tables={}, schema={"t": {"x": "integer"}})
    assert info.value.code is ErrorCode.INVALID_FUNCTION_ARGUMENT


def test_leading_comments_do_not_hide_the_statement() -> None:
    assert parse_statement("-- why\nDROP TABLE t").__class__.__name__ == "DropTable"
