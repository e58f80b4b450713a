"""The function catalogue (mergekit/sql/_function_catalog.py) is the allow-list: a function is supported if and
only if it is listed, every listed one is evaluated by the chapter tests (test_functions_*.py) with a NULL
argument among its cases, and docs/sql.md's table is the generated one. No Spark here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.parse.dialect import ARGUMENT_COUNT_WRONG, DIALECT
from mergekit.sql.spark.function_catalog import (
    FUNCTIONS,
    TRINO_NAMES,
    argument_counts,
    functions_markdown,
    listed_classes,
    rewrite_page,
    supported_names,
    written_count,
)
from mergekit.sql.spark.rewrite import ANONYMOUS, PASS_FUNCS
from mergekit.sql.spark.translate import HANDLERS, to_spark_sql

from . import (
    test_functions_aggregate,
    test_functions_binary,
    test_functions_datetime,
    test_functions_math,
    test_functions_misc,
    test_functions_strings,
)

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_TESTS = [
    test_functions_strings,
    test_functions_binary,
    test_functions_math,
    test_functions_datetime,
    test_functions_misc,
]


def _called(name: str, expressions: list[str]) -> bool:
    pattern = re.compile(rf"(?i)\b{re.escape(name)}\b\s*(\(|$|\s|,)")
    return any(pattern.search(e) for e in expressions)


def _evaluated() -> list[str]:
    out = [e for module in CHAPTER_TESTS for e, _ in module.VALUES]
    out += [a for a, _, _ in test_functions_aggregate.AGGREGATES] + [w for w, _ in test_functions_aggregate.WINDOWS]
    return out + ["grouping(x)"]  # test_functions_aggregate.test_grouping


def _with_nulls() -> list[str]:
    out = [e for module in CHAPTER_TESTS for e in module.NULLS]
    # every aggregate is also evaluated over no rows and over NULLs only, every window function over a NULL
    return (
        out + [a for a, _, _ in test_functions_aggregate.AGGREGATES] + [w for w, _ in test_functions_aggregate.WINDOWS]
    )


def test_at_least_150_functions_are_supported() -> None:
    assert len(FUNCTIONS) >= 150
    assert len(supported_names()) == len(FUNCTIONS), "a function is listed twice"


def test_every_listed_function_is_evaluated() -> None:
    evaluated = _evaluated()
    assert [f.name for f in FUNCTIONS if not _called(f.name, evaluated)] == []


def test_every_listed_function_with_arguments_is_evaluated_with_a_null_one() -> None:
    nulls = _with_nulls()
    calls = {f.name: f.signature.split("->")[0] for f in FUNCTIONS}
    without_arguments = {name for name, call in calls.items() if "()" in call or "(" not in call}
    # typeof(NULL) is 'unknown' (test_functions_misc.VALUES); grouping() of a NULL key is 0 or 1, not NULL
    never_null = {"typeof", "grouping"}
    missing = [name for name in calls if name not in without_arguments | never_null and not _called(name, nulls)]
    assert missing == []


def test_docs_table_is_generated_from_the_catalogue() -> None:
    page = ROOT / "docs" / "sql.md"
    text = page.read_text()
    assert functions_markdown() in text
    assert rewrite_page(text) == text, "regenerate with: python -m mergekit.sql.spark.function_catalog docs/sql.md"
    for f in FUNCTIONS:
        assert f"| `{f.name}` |" in text


def test_listed_functions_are_trino_functions() -> None:
    assert sorted(supported_names() - TRINO_NAMES) == []


def test_what_the_translation_passes_or_handles_is_listed() -> None:
    """Nothing is translated without being in the catalogue: the pass-through classes and the anonymous
    builders and handlers are all listed functions (the rewrite also checks every call against the catalogue
    before it looks for a handler)."""
    syntax = {"Case", "Array"}
    assert sorted(c.__name__ for c in PASS_FUNCS if c not in listed_classes() and c.__name__ not in syntax) == []
    assert sorted(set(ANONYMOUS) - supported_names()) == []
    assert sorted(k for k in HANDLERS if isinstance(k, str) and k not in supported_names()) == []


def _translate(sql: str) -> str:
    return to_spark_sql(sqlglot.parse_one(sql, read=DIALECT), schema={"t": {"s": "varchar", "n": "bigint"}})


@pytest.mark.parametrize("name", sorted(TRINO_NAMES - supported_names() - {"cast", "try_cast", "extract"})[:400])
def test_unlisted_trino_functions_are_refused_by_name(name: str) -> None:
    sql = f"SELECT {name}(s) FROM t"
    try:
        parsed = sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return  # not a call in this form (special syntax): the parser refuses it
    with pytest.raises(MergekitError) as raised:
        to_spark_sql(parsed, schema={"t": {"s": "varchar", "n": "bigint"}})
    assert raised.value.code in (ErrorCode.NOT_SUPPORTED, ErrorCode.TYPE_MISMATCH), str(raised.value)


@pytest.mark.parametrize("sql", ["SELECT char_length(s) FROM t", "SELECT isodow(n) FROM t", "SELECT nope(s) FROM t"])
def test_names_trino_does_not_have_are_not_found(sql: str) -> None:
    with pytest.raises(MergekitError) as raised:
        _translate(sql)
    assert raised.value.code is ErrorCode.FUNCTION_NOT_FOUND


def _call(name: str, count: int) -> sqlglot.exp.Expression:
    arguments = ", ".join(["'day'"] + [f"x{i}" for i in range(1, count)]) if count else ""
    return sqlglot.parse_one(f"SELECT {name}({arguments})", read=DIALECT).expressions[0]


def test_argument_counts_come_from_the_signatures() -> None:
    """Issue 26: a call with too few or too many arguments is refused before Spark sees it. The counts are read from
    each signature (and checked against its example); every count in range is a call the check lets through, one
    fewer or one more is refused (by the parse's mark or by its count)."""
    counts = argument_counts()
    assert counts["substr"] == (2, 3) and counts["lag"] == (1, 3) and counts["e"] == (0, 0)
    assert len(counts) >= 140
    for name, (low, high) in counts.items():
        for count in range(max(low - 1, 0), high + 2):
            try:
                node = _call(name, count)
            except sqlglot.errors.ParseError:  # chr(): its own parse refuses it (SYNTAX_ERROR "incomplete CHR")
                assert not low <= count <= high, (name, count)
                continue
            refused = bool(node.meta.get(ARGUMENT_COUNT_WRONG)) or not low <= written_count(node) <= high
            assert refused == (not low <= count <= high), (name, count)


WRONG_COUNTS = [
    ("SELECT substr(s) FROM t", "Unexpected parameters (varchar) for function substr. Expected: substr(string, start[, length])"),
    ("SELECT substring(s, 1, 2, 3) FROM t", "Unexpected parameters (varchar, integer, integer, integer) for function substring. Expected: substring(string, start[, length])"),
    ("SELECT substr() FROM t", "Unexpected parameters () for function substr. Expected: substr(string, start[, length])"),
    ("SELECT mod(n, 1, 2) FROM t", "Unexpected parameters (bigint, integer, integer) for function mod. Expected: mod(n, m)"),
    ("SELECT date_trunc('day') FROM t", "Unexpected parameters (varchar(3)) for function date_trunc. Expected: date_trunc(unit, x)"),
    ("SELECT lag(n, 1, 2, 3) OVER (ORDER BY n) FROM t", "Unexpected parameters (bigint, integer, integer, integer) for function lag. Expected: lag(x[, offset[, default]])"),
    ("SELECT e(1) FROM t", "Unexpected parameters (integer) for function e. Expected: e()"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "message"), WRONG_COUNTS, ids=[w[0] for w in WRONG_COUNTS])
def test_wrong_argument_counts_are_refused_in_trinos_words(sql: str, message: str) -> None:
    with pytest.raises(MergekitError) as raised:
        _translate(sql)
    assert str(raised.value) == f"[FUNCTION_NOT_FOUND] {message}"


def test_other_forms_trino_has_stay_refused_by_name() -> None:
    """strpos's instance, min's n: Trino takes them, mergekit refuses them by name (not as unknown parameters)."""
    for sql in ("SELECT strpos(s, 'a', 2) FROM t", "SELECT min(n, 2) FROM t"):
        with pytest.raises(MergekitError) as raised:
            _translate(sql)
        assert raised.value.code is ErrorCode.NOT_SUPPORTED, sql
