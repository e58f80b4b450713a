"""The streaming job statements and the continuous-run shapes of ``mergekit.sql`` (no Spark)."""

from __future__ import annotations

import pytest

from mergekit import sql as msql
from mergekit.errors import ErrorCode, MergekitError

MERGE = (
    "MERGE INTO t USING (SELECT STREAM rowtime, k, v FROM s WHERE (v) > 1) AS src ON t.k = src.k AND t.r = 1 "
    "WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT VALUES (src.k, src.v)"
)


def test_create_streaming_job_splits_source_and_body() -> None:
    job = msql.parse_statement(f"CREATE STREAMING JOB IF NOT EXISTS J1 WITH (duplicates = 'last') AS {MERGE}")
    assert isinstance(job, msql.CreateStreamingJob)
    assert (job.name, job.if_not_exists, job.duplicates, job.kind) == ("j1", True, "last", "MERGE")
    assert job.compact_every == 50  # the default
    assert msql.parse_statement(f"CREATE STREAMING JOB j WITH (compact_every = 0) AS {MERGE}").compact_every == 0
    assert job.source.stream_selects == (True,)
    assert isinstance(job.body, msql.Merge)
    assert job.body.source.table is not None and job.body.source.table.name.parts == (msql.JOB_SOURCE,)
    assert msql.merge_source_keys(job.body.on, "src") == ("k",)
    insert = msql.parse_statement("CREATE STREAMING JOB j2 AS INSERT INTO t (a, b) SELECT STREAM a, b FROM s")
    assert isinstance(insert, msql.CreateStreamingJob) and isinstance(insert.body, msql.Insert)
    assert insert.body.columns == ("a", "b")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CREATE STREAMING JOB j AS DELETE FROM t", "runs MERGE or INSERT"),
        ("CREATE STREAMING JOB j AS MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE", "USING (SELECT"),
        ("CREATE STREAMING JOB j AS INSERT INTO t SELECT a FROM s", "must be a SELECT STREAM"),
        (f"CREATE STREAMING JOB j WITH (duplicates = 'first') AS {MERGE}", "'error' or 'last'"),
        (f"CREATE STREAMING JOB j WITH (parallelism = '2') AS {MERGE}", "Unknown streaming job option"),
        ("RUN STREAMING JOB IF EXISTS j", "only allowed with DROP"),
    ],
)
def test_bad_job_statements_are_syntax_errors(text: str, message: str) -> None:
    with pytest.raises(MergekitError) as caught:
        msql.parse_statement(text)
    assert caught.value.code is ErrorCode.SYNTAX_ERROR
    assert message in caught.value.message


def test_job_actions() -> None:
    assert msql.parse_statement("start streaming job j") == msql.JobAction(action="start", name="j")
    assert msql.parse_statement("DROP STREAMING JOB IF EXISTS j") == msql.JobAction(
        action="drop", name="j", if_exists=True
    )
    assert isinstance(msql.parse_statement("SHOW STREAMING JOBS"), msql.ShowStreamingJobs)


def _kind(ref: msql.TableRef) -> msql.ObjectInfo:
    if ref.name.parts[-1] in ("orders", "shipments"):
        return msql.ObjectInfo(msql.ObjectKind.STREAM, (("rowtime", False),))
    return msql.ObjectInfo(msql.ObjectKind.TABLE)


def _shape(text: str) -> msql.ContinuousShape:
    query = msql.parse_statement(text)
    assert isinstance(query, msql.Query)
    return msql.continuous_shape(query, _kind)


def test_stateless_and_keyed_shapes() -> None:
    assert not _shape("SELECT STREAM * FROM orders WHERE units > 2").keyed
    assert not _shape("SELECT STREAM o.units, p.name FROM orders o JOIN products p ON o.pid = p.pid").keyed
    assert not _shape("SELECT STREAM units FROM orders UNION ALL SELECT STREAM 1 FROM shipments").keyed
    keyed = _shape(
        "SELECT STREAM FLOOR(o.rowtime TO HOUR) AS h, COUNT(*) FROM orders o GROUP BY FLOOR(o.rowtime TO HOUR)"
    )
    assert keyed.keyed and keyed.column == "rowtime" and keyed.key_group == keyed.key_value
    assert "o." not in (keyed.key_group or "")
    tumble = _shape(
        "SELECT STREAM TUMBLE_END(rowtime, INTERVAL '1' HOUR), COUNT(*) FROM orders GROUP BY TUMBLE(rowtime, INTERVAL '1' HOUR)"
    )
    assert (tumble.key_value or "").upper().startswith("TUMBLE_START(")
    ordered = _shape("SELECT STREAM rowtime AS t, units FROM orders ORDER BY t, units")
    assert ordered.keyed and ordered.key_group == "rowtime"


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("SELECT STREAM rowtime, SUM(units) OVER (ORDER BY rowtime) FROM orders", "OVER window"),
        ("SELECT STREAM * FROM orders o JOIN shipments s ON o.id = s.id", "join of two streams"),
        ("SELECT STREAM * FROM orders LIMIT 5", "LIMIT"),
        ("SELECT STREAM x, COUNT(*) FROM (SELECT FLOOR(rowtime TO HOUR) AS x FROM orders) GROUP BY x", "sub-query"),
        ("SELECT STREAM units, COUNT(*) FROM orders GROUP BY units, FLOOR(rowtime TO HOUR) HAVING COUNT(*) > 1", None),
    ],
)
def test_shapes_a_continuous_run_refuses(text: str, what: str | None) -> None:
    if what is None:  # a keyed aggregation with another key and HAVING: evaluated
        assert _shape(text).keyed
        return
    with pytest.raises(MergekitError) as caught:
        _shape(text)
    assert caught.value.code is ErrorCode.NOT_SUPPORTED
    assert what in caught.value.message and "continuous run" in caught.value.message
