"""Streaming jobs (issue 17, item 4): one MERGE per micro-batch through the merge pipeline and SPI, exactly once.

The kill test runs the job in a second process whose driver exits right after the target committed batch 0 and
before Spark recorded the batch as done (``MERGEKIT_FAULT_EXIT_AFTER_JOB_COMMIT``); this process then runs the job
again: Spark replays batch 0, the target already holds its id, so it is skipped, and the target ends equal to the
same MERGEs run by hand once each."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.streaming.jobs import FAULT_AFTER_COMMIT

pytestmark = pytest.mark.spark

MERGE_JOB = (
    "CREATE STREAMING JOB {name}{options} AS MERGE INTO {target} AS t USING (SELECT STREAM rowtime, k, v FROM "
    "events WHERE v >= 0) AS s ON t.k = s.k WHEN MATCHED AND s.v = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = "
    "t.v + s.v, seen = s.rowtime WHEN NOT MATCHED THEN INSERT (k, v, seen) VALUES (s.k, s.v, s.rowtime)"
)
BY_HAND = (
    "MERGE INTO {target} AS t USING ({source}) AS s ON t.k = s.k WHEN MATCHED AND s.v = 0 THEN DELETE "
    "WHEN MATCHED THEN UPDATE SET v = t.v + s.v, seen = s.rowtime WHEN NOT MATCHED THEN INSERT (k, v, seen) "
    "VALUES (s.k, s.v, s.rowtime)"
)
BATCHES = [
    [("10:00:00", 1, 5), ("10:01:00", 2, 7), ("10:02:00", 3, -1)],
    [("10:03:00", 1, 2), ("10:04:00", 4, 1)],
    [("10:05:00", 2, 0), ("10:06:00", 5, 9)],
]


def _values(rows: list[tuple[str, int, int]]) -> str:
    return ", ".join(f"(TIMESTAMP '2024-01-01 {t}', {k}, {v})" for t, k, v in rows)


def _engine(spark, tmp_path: Path) -> Engine:
    return Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "w")}},
        streams_dir=str(tmp_path / "streams"),
    )


def _setup(engine: Engine) -> None:
    engine.execute("CREATE STREAM events (rowtime TIMESTAMP, k INTEGER, v INTEGER)")
    for name in ("target", "by_hand"):
        engine.execute(f"CREATE TABLE {name} (k INTEGER, v INTEGER, seen TIMESTAMP)")
        engine.execute(f"INSERT INTO {name} VALUES (2, 100, NULL), (9, 900, NULL)")


def _apply_by_hand(engine: Engine, batch: list[tuple[str, int, int]]) -> None:
    source = f"SELECT * FROM (VALUES {_values(batch)}) AS x(rowtime, k, v) WHERE v >= 0"
    engine.execute(BY_HAND.format(target="by_hand", source=source))


def _rows(engine: Engine, table: str) -> list[tuple]:
    return [tuple(r.values()) for r in engine.execute(f"SELECT k, v, seen FROM {table} ORDER BY k").table.to_pylist()]


def test_a_job_killed_between_its_commit_and_the_checkpoint_applies_each_batch_once(spark, tmp_path: Path) -> None:
    engine = _engine(spark, tmp_path)
    try:
        _setup(engine)
        engine.execute(MERGE_JOB.format(name="j", options="", target="target"))
        engine.execute(f"INSERT INTO events VALUES {_values(BATCHES[0])}")
        script = textwrap.dedent(
            f"""
            from mergekit import Engine
            from mergekit.execution.session import local_session
            engine = Engine(spark=local_session(master="local[1]", shuffle_partitions=2),
                            catalogs={{"lake": {{"connector": "journal", "warehouse": {str(tmp_path / "w")!r}}}}},
                            streams_dir={str(tmp_path / "streams")!r})
            engine.execute("RUN STREAMING JOB j")
            raise SystemExit("the fault hook did not fire")
            """
        )
        env = {**os.environ, FAULT_AFTER_COMMIT: "0"}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 17, done.stderr[-3000:]
        _apply_by_hand(engine, BATCHES[0])
        assert _rows(engine, "target") == _rows(engine, "by_hand")  # batch 0 is committed
        assert not any((tmp_path / "streams" / "j" / "checkpoint" / "commits").glob("0"))  # Spark never finished it

        for batch in BATCHES[1:]:
            engine.execute(f"INSERT INTO events VALUES {_values(batch)}")
            _apply_by_hand(engine, batch)
        result = engine.execute("RUN STREAMING JOB j")
        progress = result.metrics["progress"]
        assert progress[0]["batch"] == 0 and "committed already" in progress[0]["skipped"]  # the replay: skipped
        assert result.rows()[0] == (0, None, 0, 1)  # batch, source_rows (not read), count, skipped
        assert [p["batch"] for p in progress[1:]] == [1]  # the two later commits: one batch
        assert _rows(engine, "target") == _rows(engine, "by_hand")
        assert engine.execute("RUN STREAMING JOB j").metrics["batches"] == 0  # nothing new: nothing runs
        assert _rows(engine, "target") == _rows(engine, "by_hand")
    finally:
        engine.close()


@pytest.mark.parametrize("policy", ["error", "last"])
def test_duplicate_keys_within_a_batch_follow_the_job_policy(spark, tmp_path: Path, policy: str) -> None:
    engine = _engine(spark, tmp_path)
    try:
        _setup(engine)
        engine.execute(MERGE_JOB.format(name="d", options=f" WITH (duplicates = '{policy}')", target="target"))
        # key 1 twice in one commit (one batch), the later row by rowtime written first
        engine.execute(
            f"INSERT INTO events VALUES {_values([('10:02:00', 1, 30), ('10:01:00', 1, 10), ('10:03:00', 6, 1)])}"
        )
        before = _rows(engine, "target")
        if policy == "error":
            with pytest.raises(MergekitError) as caught:
                engine.execute("RUN STREAMING JOB d")
            assert caught.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
            assert "batch 0" in caught.value.message and "k=1" in caught.value.message
            assert _rows(engine, "target") == before  # nothing of the batch committed
        else:
            engine.execute("RUN STREAMING JOB d")
            _apply_by_hand(engine, [("10:02:00", 1, 30), ("10:03:00", 6, 1)])  # the last row of key 1 by rowtime
            assert _rows(engine, "target") == _rows(engine, "by_hand")
    finally:
        engine.close()


@pytest.mark.parametrize("where", ["driver", "spark"])
def test_the_error_policy_finds_a_duplicate_key_on_the_driver_and_in_spark_alike(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Small batches check their keys on the driver (Arrow), large ones by a Spark GROUP BY: same answer."""
    from mergekit.execution.streaming import jobs as streaming_jobs

    if where == "spark":
        monkeypatch.setattr(streaming_jobs, "DRIVER_KEY_CHECK_MAX", 0)
    engine = _engine(spark, tmp_path)
    try:
        _setup(engine)
        engine.execute(MERGE_JOB.format(name="e", options="", target="target"))
        engine.execute(f"INSERT INTO events VALUES {_values(BATCHES[0])}")  # unique keys: applied
        engine.execute("RUN STREAMING JOB e")
        _apply_by_hand(engine, BATCHES[0])
        assert _rows(engine, "target") == _rows(engine, "by_hand")
        # key 4 twice, in two commits of one batch
        engine.execute(f"INSERT INTO events VALUES {_values([('10:04:00', 4, 1)])}")
        engine.execute(f"INSERT INTO events VALUES {_values([('10:05:00', 7, 1), ('10:06:00', 4, 2)])}")
        with pytest.raises(MergekitError) as caught:
            engine.execute("RUN STREAMING JOB e")
        assert caught.value.code is ErrorCode.MERGE_TARGET_ROW_MULTIPLE_MATCHES
        assert "k=4" in caught.value.message and "2 source rows" in caught.value.message
        assert _rows(engine, "target") == _rows(engine, "by_hand")  # nothing of the failed batch
    finally:
        engine.close()


def test_job_statements_and_refusals(spark, tmp_path: Path) -> None:
    engine = _engine(spark, tmp_path)
    engine.add_catalog("mem", {"connector": "memory"})
    try:
        _setup(engine)
        engine.execute("CREATE TABLE mem.default.t (k INTEGER, v INTEGER, seen TIMESTAMP)")
        with pytest.raises(MergekitError) as caught:  # the memory connector cannot commit a batch id
            engine.execute(MERGE_JOB.format(name="m", options="", target="mem.default.t"))
        assert caught.value.code is ErrorCode.NOT_SUPPORTED and "cannot be the target" in caught.value.message
        with pytest.raises(MergekitError) as caught:  # a source that is not streaming
            engine.execute("CREATE STREAMING JOB x AS INSERT INTO target SELECT k, v, NULL FROM by_hand")
        assert caught.value.code is ErrorCode.SYNTAX_ERROR
        engine.execute(
            "CREATE STREAMING JOB ins WITH (compact_every = 1) AS INSERT INTO target SELECT STREAM k, v, rowtime "
            "FROM events WHERE k > 100"
        )
        with pytest.raises(MergekitError) as caught:
            engine.execute("CREATE STREAMING JOB ins AS INSERT INTO target SELECT STREAM k, v, rowtime FROM events")
        assert caught.value.code is ErrorCode.STREAMING_JOB_ALREADY_EXISTS
        engine.execute("INSERT INTO events VALUES (TIMESTAMP '2024-01-01 10:00:00', 101, 1)")
        ran = engine.execute("RUN STREAMING JOB ins")
        assert ran.row_count == 1
        assert ran.metrics["progress"][0]["compacted"] == "compacted"  # compact_every = 1: after every batch
        history = engine.execute("DESCRIBE HISTORY target").table.to_pylist()
        assert "compact" in [h.get("operation") for h in history]
        assert engine.execute("SHOW STREAMING JOBS").table.to_pylist() == [
            {"Job": "ins", "State": "stopped", "Error": None}
        ]
        engine.execute("DROP STREAMING JOB ins")
        engine.execute("DROP STREAMING JOB IF EXISTS ins")
        # created again under the same name: a new job, whose batch 0 is not the old job's batch 0
        engine.execute(
            "CREATE STREAMING JOB ins AS INSERT INTO target SELECT STREAM k, v, rowtime FROM events WHERE k > 100"
        )
        assert engine.execute("RUN STREAMING JOB ins").row_count == 1
        engine.execute("DROP STREAMING JOB ins")
        with pytest.raises(MergekitError) as caught:
            engine.execute("RUN STREAMING JOB ins")
        assert caught.value.code is ErrorCode.STREAMING_JOB_NOT_FOUND
        assert (101, 1) in [(k, v) for k, v, _ in _rows(engine, "target")]
    finally:
        engine.close()


def test_a_job_that_died_shows_failed_with_its_error_and_can_be_stopped_rerun_and_dropped(
    spark, tmp_path: Path
) -> None:
    """Issue 26, row 3: a started job whose batch fails (two source rows for one key, policy 'error') is ``failed``
    in SHOW STREAMING JOBS, with the error's ``[CODE] message``, here and for another engine on the same state
    folder (a later ``mergekit`` command); STOP, RUN, DROP and START then do what they say."""
    engine = _engine(spark, tmp_path)
    try:
        _setup(engine)
        engine.execute(MERGE_JOB.format(name="d", options="", target="target"))
        engine.execute(f"INSERT INTO events VALUES {_values([('10:02:00', 1, 30), ('10:01:00', 1, 10)])}")
        before = _rows(engine, "target")
        engine.execute("START STREAMING JOB d")
        handle = engine.running_job("d")
        assert handle is not None
        with pytest.raises(MergekitError) as died:
            handle.await_termination()
        error = str(died.value)
        assert error.startswith("[MERGE_TARGET_ROW_MULTIPLE_MATCHES] Streaming job 'd', batch 0: 2 source rows have")
        failed = [{"Job": "d", "State": "failed", "Error": error}]
        assert engine.execute("SHOW STREAMING JOBS").table.to_pylist() == failed
        other = _engine(spark, tmp_path)  # another engine on the same folders (say, the next CLI command)
        assert other.execute("SHOW STREAMING JOBS").table.to_pylist() == failed
        other.close()
        assert _rows(engine, "target") == before  # nothing of the batch

        with pytest.raises(MergekitError) as again:  # RUN retries the failed batch: the same error, still failed
            engine.execute("RUN STREAMING JOB d")
        assert str(again.value) == error
        assert engine.execute("SHOW STREAMING JOBS").table.to_pylist() == failed
        engine.execute("STOP STREAMING JOB d")
        assert engine.execute("SHOW STREAMING JOBS").rows() == [("d", "stopped", None)]

        # the fix for that batch: the job again, keeping the last row of a key
        engine.execute("DROP STREAMING JOB d")
        assert engine.execute("SHOW STREAMING JOBS").rows() == []
        engine.execute(MERGE_JOB.format(name="d", options=" WITH (duplicates = 'last')", target="target"))
        ran = engine.execute("RUN STREAMING JOB d")
        assert ran.columns == ["batch", "source_rows", "count", "skipped"]
        assert ran.rows() == [(0, 1, 1, 0)]  # one row of key 1 left, inserted; nothing skipped
        engine.execute("START STREAMING JOB d")
        engine.execute(f"INSERT INTO events VALUES {_values([('10:05:00', 1, 2)])}")
        engine.running_job("d").process_all_available()
        assert engine.execute("SHOW STREAMING JOBS").rows() == [("d", "running", None)]
        engine.execute("STOP STREAMING JOB d")
        assert engine.execute("SHOW STREAMING JOBS").rows() == [("d", "stopped", None)]
        assert (1, 32) in [(k, v) for k, v, _ in _rows(engine, "target")]
    finally:
        engine.close()
