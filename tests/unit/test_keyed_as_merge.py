"""``keyed_as_merge``: an UPDATE or DELETE whose WHERE names key values, as the MERGE the driver tier runs."""

from __future__ import annotations

from mergekit.sql import MergeAction, keyed_as_merge, parse_statement


def _merges(sql: str) -> list[tuple[str, str, list[str], str, MergeAction]]:
    """(key column, ON clause, key values, WHEN condition, action) of each MERGE ``sql`` means."""
    out = []
    for column, merge in keyed_as_merge(parse_statement(sql)):
        rows = merge.source.values_rows()
        assert rows is not None and merge.source.column_aliases == ("$key",)
        (case,) = merge.cases
        assert case.condition is not None
        out.append((column, merge.on.sql, [r[0].sql for r in rows], case.condition.sql, case.action))
    return out


def test_each_conjunct_naming_literal_values_of_a_column_gives_a_merge() -> None:
    assert _merges("UPDATE t SET v = 1 WHERE id IN (1, 2, 1) AND 'x' = t.code AND n > 0") == [
        (
            "id",
            '"t"."id" = "$keys"."$key"',
            ["1", "2"],
            "id IN (1, 2, 1) AND 'x' = t.code AND n > 0",
            MergeAction.UPDATE,
        ),
        (
            "code",
            '"t"."code" = "$keys"."$key"',
            ["'x'"],
            "id IN (1, 2, 1) AND 'x' = t.code AND n > 0",
            MergeAction.UPDATE,
        ),
    ]
    assert _merges("DELETE FROM t AS d WHERE d.k = DATE '2020-01-01'") == [
        (
            "k",
            '"d"."k" = "$keys"."$key"',
            ["CAST('2020-01-01' AS DATE)"],
            "d.k = CAST('2020-01-01' AS DATE)",
            MergeAction.DELETE,
        )
    ]
    (merge,) = [m for _, m in keyed_as_merge(parse_statement("UPDATE t SET v = 2, n = n + 1 WHERE k = -5"))]
    assert [(c, e.sql) for c, e in merge.cases[0].assignments] == [("v", "2"), ("n", "n + 1")]


def test_no_merge_without_literal_key_values() -> None:
    for sql in (
        "UPDATE t SET v = 1",
        "UPDATE t SET v = 1 WHERE id = 1 OR id = 2",  # a disjunction names no key
        "UPDATE t SET v = 1 WHERE id = n",
        "UPDATE t SET v = 1 WHERE id = NULL",
        "UPDATE t SET v = 1 WHERE id IN (1, NULL)",
        "UPDATE t SET v = 1 WHERE id NOT IN (1, 2)",
        "UPDATE t SET v = 1 WHERE id IN (SELECT k FROM u)",
        "UPDATE t SET v = 1 WHERE u.id = 1",  # another relation's column
        "DELETE FROM t USING u WHERE t.id = 1",
    ):
        assert keyed_as_merge(parse_statement(sql)) == [], sql
