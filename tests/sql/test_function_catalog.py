"""The function catalogue (mergekit/sql/_function_catalog.py) is the allow-list: a function is supported if and
only if it is listed, every listed one is evaluated by the chapter tests (test_functions_*.py) with a NULL
argument among its cases, and docs/sql.md's table is the generated one. No Spark here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.parse.dialect import DIALECT
from mergekit.sql.spark.function_catalog import (
    FUNCTIONS,
    TRINO_NAMES,
    functions_markdown,
    listed_classes,
    rewrite_page,
    supported_names,
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
