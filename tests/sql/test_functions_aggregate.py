"""Trino's aggregate and window functions through the Engine on Spark: values over a few rows with a NULL, over
only NULLs and over no rows (see functions_kit for the conventions)."""

from __future__ import annotations

import math
from typing import Any

from .functions_kit import same

# (x, y): the NULL first, so that a function keeping the first value it sees would return it
DATA = "(VALUES (CAST(NULL AS integer), 'd'), (1, 'a'), (3, 'b'), (2, 'c')) AS v(x, y)"

AGGREGATES = [
    ("count(*)", 4, 0),
    ("count(x)", 3, 0),
    ("count_if(x > 1)", 2, 0),
    ("sum(x)", 6, None),
    ("avg(x)", 2.0, None),
    ("min(x)", 1, None),
    ("max(x)", 3, None),
    ("min_by(y, x)", "a", None),
    ("max_by(y, x)", "b", None),
    ("any_value(x) IS NOT NULL", True, False),
    ("arbitrary(x) IS NOT NULL", True, False),
    ("approx_distinct(x)", 3, 0),
    ("bool_and(x > 0)", True, None),
    ("bool_or(x > 2)", True, None),
    ("every(x > 1)", False, None),
    ("stddev(x)", 1.0, None),
    ("stddev_samp(x)", 1.0, None),
    ("stddev_pop(x)", math.sqrt(2 / 3), None),
    ("variance(x)", 1.0, None),
    ("var_samp(x)", 1.0, None),
    ("var_pop(x)", 2 / 3, None),
]


def _one_row(engine: Any, sql: str) -> tuple[Any, ...]:
    (row,) = engine.execute(sql).rows()
    return row


def _check(expressions: list[str], row: tuple[Any, ...], expected: list[Any]) -> None:
    wrong = [(e, got, want) for e, got, want in zip(expressions, row, expected, strict=True) if not same(got, want)]
    assert wrong == []


def test_aggregates(fn_engine) -> None:
    expressions = [a for a, _, _ in AGGREGATES]
    row = _one_row(fn_engine, f"SELECT {', '.join(expressions)} FROM {DATA}")
    _check(expressions, row, [v for _, v, _ in AGGREGATES])


def test_aggregates_of_no_rows_and_of_nulls_only(fn_engine) -> None:
    """Over no rows counts are 0 and the rest NULL; over a NULL argument only, the same but count(*) (any_value
    finds no value, min_by/max_by skip rows whose key is NULL)."""
    expressions = [a for a, _, _ in AGGREGATES]
    empty = _one_row(fn_engine, f"SELECT {', '.join(expressions)} FROM {DATA} WHERE y = 'none'")
    _check(expressions, empty, [0] + [v for _, _, v in AGGREGATES[1:]])
    nulls = _one_row(fn_engine, f"SELECT {', '.join(expressions)} FROM {DATA} WHERE x IS NULL")
    _check(expressions, nulls, [1] + [v for _, _, v in AGGREGATES[1:]])


def test_aggregates_of_a_null_column(fn_engine) -> None:
    expressions = ["count(n)", "sum(n)", "avg(d)", "min(s)", "max(s)", "min_by(s, n)", "max_by(n, s)", "any_value(s)",
                   "approx_distinct(s)", "bool_and(n > 0)", "bool_or(n > 0)", "every(n > 0)", "count_if(n > 0)",
                   "stddev(d)", "stddev_samp(d)", "stddev_pop(d)", "variance(d)", "var_samp(d)", "var_pop(d)"]  # fmt: skip
    row = _one_row(fn_engine, f"SELECT {', '.join(expressions)} FROM fn_t WHERE k = 2")
    expected = [0, None, None, None, None, None, None, None, 0, None, None, None, 0] + [None] * 6
    _check(expressions, row, expected)


def test_single_value_statistics(fn_engine) -> None:
    """A sample statistic of one value is NULL; a population one is 0."""
    row = _one_row(fn_engine, "SELECT stddev(x), var_samp(x), stddev_pop(x), var_pop(x) FROM (VALUES 5) AS v(x)")
    _check(["stddev", "var_samp", "stddev_pop", "var_pop"], row, [None, None, 0.0, 0.0])


def test_grouping(fn_engine) -> None:
    rows = fn_engine.execute(
        f"SELECT x, grouping(x) FROM {DATA} WHERE x IS NOT NULL GROUP BY ROLLUP (x) ORDER BY grouping(x), x"
    ).rows()
    assert rows == [(1, 0), (2, 0), (3, 0), (None, 1)]


WINDOWS = [
    ("row_number() OVER (ORDER BY x)", [1, 2, 3, 4]),
    ("rank() OVER (ORDER BY x)", [1, 2, 2, 4]),
    ("dense_rank() OVER (ORDER BY x)", [1, 2, 2, 3]),
    ("ntile(2) OVER (ORDER BY x)", [1, 1, 2, 2]),
    ("percent_rank() OVER (ORDER BY x)", [0.0, 1 / 3, 1 / 3, 1.0]),
    ("cume_dist() OVER (ORDER BY x)", [0.25, 0.75, 0.75, 1.0]),
    ("first_value(x) OVER (ORDER BY x)", [1, 1, 1, 1]),
    ("last_value(x) OVER (ORDER BY x)", [1, 2, 2, None]),
    ("nth_value(x, 2) OVER (ORDER BY x)", [None, 2, 2, 2]),
    ("lag(x) OVER (ORDER BY x)", [None, 1, 2, 2]),
    ("lead(x) OVER (ORDER BY x)", [2, 2, None, None]),
    ("lag(x, 1, 0) OVER (ORDER BY x)", [0, 1, 2, 2]),
    ("lead(x, 2, -1) OVER (ORDER BY x)", [2, None, -1, -1]),
]


def test_window_functions(fn_engine) -> None:
    """Over 1, 2, 2, NULL in Trino's order (NULLs last), with the default frame (RANGE, up to the current row's
    last peer)."""
    expressions = [w for w, _ in WINDOWS]
    rows = fn_engine.execute(
        f"SELECT {', '.join(expressions)} FROM (VALUES 1, 2, 2, CAST(NULL AS integer)) AS v(x) ORDER BY x NULLS LAST, 1"
    ).rows()
    for i, (expression, expected) in enumerate(WINDOWS):
        column = [row[i] for row in rows]
        assert all(same(got, want) for got, want in zip(column, expected, strict=True)), (expression, column)
