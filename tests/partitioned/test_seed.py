"""Both demonstrations of seed 004 (MonetDB's updatable merge tables), statement by statement.

Deliberate differences, as the issue asks: the seed's UPDATE of a column the partition expression uses is
rejected by MonetDB and here it succeeds (the row is re-routed, in this case to the same child). Two
transcription slips of the seed are fixed: a missing '(' in the first INSERT and typographic quotes around
'Ana'. The seed's ``CREATE FUNCTION calculate_max`` runs as written (SQL functions are inlined).
"""

from __future__ import annotations

import datetime as dt

import pytest

from mergekit import MergekitError
from tests.helpers import assert_rows


def ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def test_splitted_decades_by_range(engine) -> None:
    run = engine.execute
    run("CREATE MERGE TABLE splitted (stamp TIMESTAMP, val INT) PARTITION BY RANGE ON (stamp)")
    for t in ("first_decade", "second_decade", "third_decade"):
        run(f"CREATE TABLE {t} (stamp TIMESTAMP, val INT)")
    run(
        "ALTER TABLE splitted ADD TABLE first_decade AS PARTITION "
        "FROM TIMESTAMP '2000-01-01 00:00:00' TO TIMESTAMP '2010-01-01 00:00:00'"
    )
    run(
        "ALTER TABLE splitted ADD TABLE second_decade AS PARTITION "
        "FROM TIMESTAMP '2010-01-01 00:00:00' TO TIMESTAMP '2020-01-01 00:00:00'"
    )
    # this range is enclosed by first_decade
    with pytest.raises(MergekitError) as info:
        run(
            "ALTER TABLE splitted ADD TABLE third_decade AS PARTITION "
            "FROM TIMESTAMP '2005-02-13 01:08:10' TO TIMESTAMP '2007-12-13 00:00:00'"
        )
    assert info.value.code.name == "PARTITION_OVERLAP"
    assert (
        "conflicting partitions: 2005-02-13 01:08:10.000000 to 2007-12-13 00:00:00.000000 and "
        "2000-01-01 00:00:00.000000 to 2010-01-01 00:00:00.000000 from table default.first_decade" in str(info.value)
    )
    assert (
        run(
            "INSERT INTO splitted VALUES (TIMESTAMP '2000-01-01 00:00:00', 1), (TIMESTAMP '2002-12-03 20:00:00', 2), "
            "(TIMESTAMP '2012-05-12 21:01:00', 3), (TIMESTAMP '2019-12-12 23:59:59', 4)"
        ).row_count
        == 4
    )
    # '1972-02-13 01:00:00' is prior to the partition's minimum value
    with pytest.raises(MergekitError) as info:
        run(
            "INSERT INTO first_decade VALUES (TIMESTAMP '1972-02-13 01:00:00', 1000), (TIMESTAMP '2005-02-13 01:00:00', 2000)"
        )
    assert (
        "table default.first_decade is part of merge table default.splitted and the insert violates the partition range"
        in str(info.value)
    )
    # both tuples have no partition to go into
    with pytest.raises(MergekitError) as info:
        run("INSERT INTO splitted VALUES (TIMESTAMP '2020-01-01 00:00:00', 5), (NULL, 6)")
    assert (
        str(info.value)
        == "[PARTITION_NOT_FOUND] INSERT: the insert violates the partition range (NB higher limit exclusive) of values"
    )
    run(
        "ALTER TABLE splitted ADD TABLE third_decade AS PARTITION "
        "FROM TIMESTAMP '2020-01-01 00:00:00' TO RANGE MAXVALUE WITH NULL VALUES"
    )
    assert run("INSERT INTO splitted VALUES (TIMESTAMP '2020-01-01 00:00:00', 5), (NULL, 6)").row_count == 2
    first = [(ts("2000-01-01 00:00:00"), 1), (ts("2002-12-03 20:00:00"), 2)]
    second = [(ts("2012-05-12 21:01:00"), 3), (ts("2019-12-12 23:59:59"), 4)]
    third = [(ts("2020-01-01 00:00:00"), 5), (None, 6)]
    assert_rows(run("SELECT stamp, val FROM first_decade").rows(), first)
    assert_rows(run("SELECT stamp, val FROM second_decade").rows(), second)
    assert_rows(run("SELECT stamp, val FROM third_decade").rows(), third)
    assert_rows(run("SELECT stamp, val FROM splitted").rows(), first + second + third)
    # the system tables
    assert_rows(
        run("SELECT minimum, maximum, with_nulls FROM range_partitions").rows(),
        [
            ("2000-01-01 00:00:00.000000", "2010-01-01 00:00:00.000000", False),
            ("2010-01-01 00:00:00.000000", "2020-01-01 00:00:00.000000", False),
            ("2020-01-01 00:00:00.000000", None, True),
        ],
    )
    (tp,) = run("SELECT id, table_id, column_id, expression, type FROM sys.table_partitions").rows()
    assert tp[3] is None and tp[4] == 5 and tp[2] is not None
    assert {r[0] for r in run("SELECT partition_id FROM range_partitions").rows()} == {tp[0]}
    assert run("DELETE FROM splitted").row_count == 6
    for t in ("splitted", "first_decade", "second_decade", "third_decade"):
        assert run(f"SELECT stamp, val FROM {t}").rows() == []


SCORERS_SEED = """
CREATE FUNCTION calculate_max(a INT, b INT) RETURNS INT BEGIN
  IF a > b THEN RETURN a; ELSE RETURN b; END IF;
END;

-- Note the modulo in the partitioning expression
CREATE MERGE TABLE scorers (name clob, first_score int, second_score int)
    PARTITION BY VALUES USING (calculate_max(first_score, second_score) % 10);
"""


def test_scorers_by_value_expression(engine) -> None:
    run = engine.execute
    # the seed's own text, function and all, as one script
    assert [r.statement for r in engine.execute_script(SCORERS_SEED)] == ["CREATE FUNCTION", "CREATE MERGE TABLE"]
    run("CREATE TABLE lower_scorers (name clob, first_score int, second_score int)")
    run("CREATE TABLE higher_scorers (name clob, first_score int, second_score int)")
    run("ALTER TABLE scorers ADD TABLE lower_scorers AS PARTITION IN (0, 1, 2, 3, 4)")
    run("ALTER TABLE scorers ADD TABLE higher_scorers AS PARTITION IN (5, 6, 7, 8, 9)")
    assert (
        run(
            "INSERT INTO scorers VALUES ('John', 1, 3), ('Ana', 5, 18), ('Peter', 19, 19), ('Jessica', 6, 4), "
            "('Olivia', 10, 10), ('Charles', 12, 16), ('Sam', 11, 10)"
        ).row_count
        == 7
    )
    lower = [("John", 1, 3), ("Olivia", 10, 10), ("Sam", 11, 10)]
    higher = [("Ana", 5, 18), ("Peter", 19, 19), ("Jessica", 6, 4), ("Charles", 12, 16)]
    assert_rows(run("SELECT * FROM lower_scorers").rows(), lower)
    assert_rows(run("SELECT * FROM higher_scorers").rows(), higher)
    assert_rows(run("SELECT * FROM scorers").rows(), lower + higher)
    # MonetDB rejects this; mergekit re-routes the row (max(10, 18) % 10 = 8: it stays in higher_scorers)
    assert run("UPDATE scorers SET first_score = 10 WHERE name = 'Ana'").row_count == 1
    assert (
        run(
            "UPDATE scorers SET name = CASE name WHEN 'Ana' THEN 'Olivia' WHEN 'Olivia' THEN 'Ana' END "
            "WHERE name IN ('Ana', 'Olivia')"
        ).row_count
        == 2
    )
    lower = [("John", 1, 3), ("Ana", 10, 10), ("Sam", 11, 10)]
    higher = [("Olivia", 10, 18), ("Peter", 19, 19), ("Jessica", 6, 4), ("Charles", 12, 16)]
    assert_rows(run("SELECT * FROM lower_scorers").rows(), lower)
    assert_rows(run("SELECT * FROM higher_scorers").rows(), higher)
    assert_rows(run("SELECT * FROM scorers").rows(), lower + higher)
    (tp,) = run("SELECT column_id, expression, type FROM table_partitions").rows()
    assert tp[0] is None and tp[2] == 10 and "calculate_max(first_score, second_score) % 10" in tp[1].lower()
    assert sorted(int(r[0]) for r in run("SELECT value FROM value_partitions").rows()) == list(range(10))


def test_update_of_the_expression_columns_moves_the_row(engine) -> None:
    run = engine.execute
    run(
        "CREATE MERGE TABLE scorers (name varchar, first_score int, second_score int) "
        "PARTITION BY VALUES USING (GREATEST(first_score, second_score) % 10)"
    )
    run("CREATE TABLE lower_scorers (name varchar, first_score int, second_score int)")
    run("CREATE TABLE higher_scorers (name varchar, first_score int, second_score int)")
    run("ALTER TABLE scorers ADD TABLE lower_scorers AS PARTITION IN (0, 1, 2, 3, 4)")
    run("ALTER TABLE scorers ADD TABLE higher_scorers AS PARTITION IN (5, 6, 7, 8, 9)")
    run("INSERT INTO scorers VALUES ('John', 1, 3), ('Ana', 5, 18)")
    assert run("UPDATE scorers SET second_score = 2 WHERE name = 'Ana'").row_count == 1  # max 5 -> higher stays
    assert run("UPDATE scorers SET first_score = 4 WHERE name = 'Ana'").row_count == 1  # max 4 -> lower
    assert_rows(run("SELECT * FROM lower_scorers").rows(), [("John", 1, 3), ("Ana", 4, 2)])
    assert run("SELECT * FROM higher_scorers").rows() == []
