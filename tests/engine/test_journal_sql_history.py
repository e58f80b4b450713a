"""History through SQL on the journal connector: FOR VERSION/TIMESTAMP AS OF, table_changes, CALL compact."""

from __future__ import annotations

import time

import pytest

from mergekit import Engine, MergekitError
from mergekit.errors import ErrorCode
from tests.helpers import assert_rows, journal_engine


@pytest.fixture
def journal(spark, tmp_path) -> Engine:
    engine = journal_engine(spark, str(tmp_path), version_type="bigint")
    yield engine
    engine.close()


def test_time_travel_and_change_feed(journal: Engine) -> None:
    journal.execute("CREATE TABLE depts (deptno INTEGER, name VARCHAR, PRIMARY KEY (deptno))")
    journal.execute("INSERT INTO depts VALUES (10, 'Sales'), (20, 'Marketing')")  # version 1
    journal.execute("UPDATE depts SET name = 'Engineering' WHERE deptno = 20")  # version 2
    before_delete = time.time()
    time.sleep(0.05)
    journal.execute("DELETE FROM depts WHERE deptno = 10")  # version 3

    assert_rows(journal.execute("SELECT * FROM depts").rows(), [(20, "Engineering")])
    assert_rows(journal.execute("SELECT * FROM depts FOR VERSION AS OF 1").rows(), [(10, "Sales"), (20, "Marketing")])
    assert_rows(journal.execute("SELECT * FROM depts FOR VERSION AS OF 2").rows(), [(10, "Sales"), (20, "Engineering")])

    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(before_delete))
    fraction = f"{before_delete % 1:.6f}"[1:]
    rows = journal.execute(f"SELECT * FROM depts FOR TIMESTAMP AS OF TIMESTAMP '{stamp}{fraction} UTC'").rows()
    assert_rows(rows, [(10, "Sales"), (20, "Engineering")])

    changes = journal.execute(
        "SELECT deptno, name, _change_type, _commit_version FROM table_changes('depts', 1) ORDER BY _commit_version, deptno"
    ).rows()
    assert changes == [
        (10, "Sales", "insert", 1),
        (20, "Marketing", "insert", 1),
        (20, "Engineering", "update", 2),
        (10, "Sales", "delete", 3),
    ]
    only_two = journal.execute("SELECT count(*) FROM table_changes('depts', 2, 2)").rows()
    assert only_two == [(1,)]


def test_compact_keeps_reads_equal(journal: Engine) -> None:
    journal.execute("CREATE TABLE t (k BIGINT, v INTEGER, PRIMARY KEY (k))")
    journal.execute("INSERT INTO t SELECT x, 0 FROM UNNEST(sequence(1, 200)) AS u(x)")
    for i in range(3):
        journal.execute(f"UPDATE t SET v = v + 1 WHERE k % 3 = {i}")
    journal.execute("DELETE FROM t WHERE k > 190")
    before = journal.execute("SELECT k, v FROM t").rows()
    journal.execute("CALL lake.system.compact(table => 't')")
    assert_rows(journal.execute("SELECT k, v FROM t").rows(), before)
    journal.execute(
        "MERGE INTO t USING (VALUES (BIGINT '1', 100), (BIGINT '500', 5)) s(k, v) ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.v)"
    )
    assert journal.execute("SELECT v FROM t WHERE k IN (1, 500) ORDER BY k").rows() == [(100,), (5,)]


def test_change_feed_needs_a_connector_that_has_one(spark) -> None:
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
    engine.execute("CREATE TABLE t (a INTEGER)")
    with pytest.raises(MergekitError) as info:
        engine.execute("SELECT * FROM table_changes('t', 0)")
    assert info.value.code is ErrorCode.NOT_SUPPORTED
    assert str(info.value) == "[NOT_SUPPORTED] This connector does not support change feeds"
