"""CHAR(n) as Trino has it (issue 26): a value is padded with spaces to n characters where it reaches a table (and by
CAST), so it is read with n characters and ``length`` is n; comparisons pad the shorter side, so trailing spaces
never count (``x = 'ab'`` holds for a CHAR(5) 'ab'). Keys of CHAR type match that way in joins, MERGE and
lookups by key value."""

from __future__ import annotations

from typing import Any

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode

pytestmark = pytest.mark.spark


@pytest.fixture
def lake(spark: Any, tmp_path: Any) -> Engine:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh")}})
    yield engine
    engine.close()


def test_values_are_padded_and_compare_without_trailing_spaces(lake: Engine) -> None:
    lake.execute("CREATE TABLE c (id INTEGER, x CHAR(5), v VARCHAR)")
    lake.execute("INSERT INTO c VALUES (1, 'ab', 'ab'), (2, 'ab  ', 'ab '), (3, NULL, NULL), (4, 'abcde', 'b')")
    assert lake.execute("SELECT x, length(x), x = 'ab' FROM c WHERE id = 1").rows() == [("ab   ", 5, True)]
    checks = (
        "x = 'ab   ', x = 'ab ', x <> 'ab', x = v, x > 'ab', x >= 'ab', x < 'ab!', x IN ('zz', 'ab'), "
        "x BETWEEN 'a' AND 'ab', x IS DISTINCT FROM 'ab  ', x LIKE 'ab%', x LIKE 'ab', x || '|', rtrim(x), "
        "CAST(x AS VARCHAR), CAST('ab' AS CHAR(3)) = x, CASE x WHEN 'ab' THEN 'y' ELSE 'n' END"
    )
    expected = (
        True,
        True,
        False,
        True,
        False,
        True,
        True,
        True,
        True,
        False,
        True,
        False,
        "ab   |",
        "ab",
        "ab   ",
        True,
        "y",
    )
    assert lake.execute(f"SELECT {checks} FROM c WHERE id IN (1, 2)").rows() == [expected, expected]
    assert lake.execute(f"SELECT {checks} FROM c WHERE id = 3").rows() == [(None,) * 9 + (True,) + (None,) * 6 + ("n",)]
    assert lake.execute("SELECT count(DISTINCT x), count(*) FROM c WHERE x = 'ab'").rows() == [(1, 2)]
    assert lake.execute("SELECT id FROM c WHERE x > 'ab' ORDER BY id").rows() == [(4,)]
    lake.execute("UPDATE c SET x = 'q' WHERE id = 4")
    assert lake.execute("SELECT x FROM c WHERE id = 4").rows() == [("q    ",)]


def test_char_keys_match_in_lookups_joins_and_merge(lake: Engine) -> None:
    lake.execute("CREATE TABLE k (code CHAR(4), n INTEGER, PRIMARY KEY (code))")
    lake.execute("INSERT INTO k VALUES ('a', 1), ('bb  ', 2)")
    with pytest.raises(MergekitError) as info:
        lake.execute("INSERT INTO k VALUES ('a ', 3)")  # the same key padded
    assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
    # a key value as written finds the stored (padded) key
    assert lake.execute("SELECT n FROM k WHERE code = 'a'").rows() == [(1,)]
    assert lake.execute("SELECT n FROM k WHERE code IN ('bb', 'zz')").rows() == [(2,)]
    merge = (
        "MERGE INTO k USING (VALUES ('a', 10), ('bb ', 20), ('c', 30)) AS s(code, n) ON k.code = s.code "
        "WHEN MATCHED THEN UPDATE SET n = s.n WHEN NOT MATCHED THEN INSERT VALUES (s.code, s.n)"
    )
    assert lake.execute(merge).row_count == 3
    assert lake.execute("SELECT * FROM k ORDER BY code").rows() == [("a   ", 10), ("bb  ", 20), ("c   ", 30)]
    assert lake.execute(merge).row_count == 3  # the same source again: three updates, no duplicate key
    assert lake.execute("SELECT count(*) FROM k").rows() == [(3,)]
    joined = lake.execute(
        "SELECT k.n, s.w FROM k JOIN (VALUES ('c', 'x'), ('a  ', 'y')) AS s(code, w) ON k.code = s.code ORDER BY 1"
    )
    assert joined.rows() == [(10, "y"), (30, "x")]
    assert lake.execute("DELETE FROM k WHERE code = 'bb'").row_count == 1
    assert lake.execute("SELECT code FROM k ORDER BY code").rows() == [("a   ",), ("c   ",)]


def test_what_cannot_compare_as_trino_does_is_refused(lake: Engine) -> None:
    lake.execute("CREATE TABLE c (x CHAR(3), v VARCHAR)")
    with pytest.raises(MergekitError) as info:
        lake.execute("SELECT x IN (SELECT v FROM c) FROM c")
    assert (
        str(info.value) == "[NOT_SUPPORTED] IN (subquery) of a CHAR(n) value is not supported (Trino pads CHAR values)"
    )
