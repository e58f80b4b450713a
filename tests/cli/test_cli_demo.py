"""``mergekit demo`` (what ``make demo`` runs): every seed's example end to end, through the real entry point."""

from __future__ import annotations

import re

import pytest

from .clirun import mergekit, no_traceback, table_rows

pytestmark = pytest.mark.spark


def test_demo_runs_the_seeds_examples(tmp_path):
    proc = mergekit("demo", "--warehouse", str(tmp_path / "demo-wh"), timeout=420)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr
    no_traceback(proc)
    rows = table_rows(out)
    # Seed 002: Trino's accounts MERGE.
    assert "MERGE 5 " in out
    assert (
        "inserted 1, updated 3, deleted 1 · per WHEN clause: #1 deleted 1; #2 updated 1; #3 updated 2; #4 inserted 1"
        in out
    )
    assert ["Joe Shmoe", "120.00", "Jacksonville"] in rows and ["Dave", "22.00", "Darbyshire"] in rows
    # Seed 000: the journal after INSERT, UPDATE and DELETE, time travel, the change feed.
    assert "mergekit> SELECT * FROM hr.depts_journal ORDER BY version_number" in out
    # the DELETE's tombstone: version_number = subsequent_version_number (timestamps, as in the seed)
    tombstones = {tuple(r) for r in rows if len(r) == 4 and r[:2] == ["666", "New Name"] and r[2] == r[3]}
    assert len(tombstones) == 1 and next(iter(tombstones))[2].endswith(" UTC")
    assert ["666", "Pivotal", "insert", "1"] in rows and ["666", "New Name", "delete", "3"] in rows
    assert "[CONSTRAINT_VIOLATION] Duplicate key (deptno)=(10)" in out
    # The conflict: B commits first, A fails with TRANSACTION_CONFLICT, A's retry succeeds, nothing lost.
    conflict = out.index("engine B> UPDATE hr.depts SET department_name = 'Field Sales'")
    assert re.search(
        r"\[TRANSACTION_CONFLICT\] Key \(deptno\)=\(10\) of table hr.depts was changed by a concurrent "
        r"commit",
        out[conflict:],
    )
    assert [r[:2] for r in rows if r[0] == "10" and r[2].endswith(" UTC")] == [
        ["10", "Sales"],
        ["10", "Field Sales"],
        ["10", "Sales & Marketing"],
    ]
    # Seed 004: the decades by range and the scorers by value, with the seed's errors and moved rows.
    assert "[PARTITION_OVERLAP] ALTER TABLE: conflicting partitions" in out
    assert "[PARTITION_NOT_FOUND] INSERT: the insert violates the partition range (NB higher limit exclusive)" in out
    assert ["third_decade", "NULL", "6"] in rows
    assert ["second_decade", "2015-06-15 12:00:00", "2"] in rows  # moved out of first_decade
    assert ["lower_scorers", "John", "1", "3"] in rows and ["higher_scorers", "John", "15", "3"] in rows
    assert ["higher_scorers", "Olivia", "10", "18"] in rows
    assert "DELETE 6 " in out
    # Seed 001: the Orders stream, the seed's tumbling window, a relational query refused, a streaming job.
    assert "[STREAM_NOT_ALLOWED] Cannot convert stream 'ORDERS' to relation" in out
    assert ["2015-02-15 11:00:00", "10", "3", "11"] in rows
    assert ["40", "12", "2015-02-15 11:09:30"] in rows  # merged by the job once the 11:00 window closed
    assert "✗" not in out
    assert re.search(r"Demo finished in [\d.]+ s: \d+ statements, every checked result as in the seeds\.", out)
