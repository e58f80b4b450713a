"""Time zones at the boundary (issue 26, rows 1 and 2): a value crossing from the caller's Spark session means what
that session shows, whatever its zone; Trino's cast rules everywhere.

The caller's session is the shared one with ``spark.sql.session.timeZone`` set for the test (Spark's default is the
JVM's zone, so every caller outside UTC has such a session). Each source DataFrame is built the four ways a data
engineer builds one (CSV read with ``inferSchema``, ``TIMESTAMP`` literals, ``createDataFrame`` with datetimes,
``F.to_timestamp``), then written four ways (INSERT from a registered DataFrame, MERGE, the builder,
``insert_arrow``) into a table with a ``TIMESTAMP`` and a ``TIMESTAMP WITH TIME ZONE`` column. What the session
shows for the source is the expectation: the wall clock for ``TIMESTAMP``, the instant (shown back in the same
session) for ``TIMESTAMP WITH TIME ZONE``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError

ZONES = ["America/New_York", "Asia/Kolkata", "UTC"]
WAYS = ["csv", "literals", "create_dataframe", "to_timestamp"]
# wall clocks the sources hold: a summer and a winter time (New York's offset differs), a half hour past midnight
# (Kolkata's +05:30 moves the date), microseconds
WALL = ["2024-07-01 12:00:00", "2024-01-15 00:30:00", "2024-03-10 23:59:59.123456"]
SHOWN = "yyyy-MM-dd HH:mm:ss.SSSSSS"


@contextmanager
def session_zone(spark: SparkSession, zone: str) -> Iterator[None]:
    """The caller's session in ``zone`` for the block (restored after)."""
    key = "spark.sql.session.timeZone"
    before = spark.conf.get(key)
    spark.conf.set(key, zone)
    try:
        yield
    finally:
        spark.conf.set(key, before)


@pytest.fixture
def engine(spark: SparkSession, tmp_path: Path) -> Iterator[Engine]:
    e = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "wh")}})
    yield e
    e.close()


def source(spark: SparkSession, way: str, tmp_path: Path) -> DataFrame:
    """Rows (id, ts, tstz) of the three wall clocks, both columns Spark TIMESTAMPs, built ``way`` in the session."""
    if way == "csv":
        path = tmp_path / "src.csv"
        path.write_text("id,ts,tstz\n" + "".join(f"{i},{w},{w}\n" for i, w in enumerate(WALL)))
        return spark.read.option("header", True).option("inferSchema", True).csv(str(path))
    if way == "literals":
        rows = " UNION ALL ".join(
            f"SELECT {i} AS id, TIMESTAMP '{w}' AS ts, TIMESTAMP '{w}' AS tstz" for i, w in enumerate(WALL)
        )
        return spark.sql(rows)
    if way == "create_dataframe":
        values = [dt.datetime.fromisoformat(w) for w in WALL]
        return spark.createDataFrame([(i, v, v) for i, v in enumerate(values)], "id INT, ts TIMESTAMP, tstz TIMESTAMP")
    assert way == "to_timestamp"
    text = spark.createDataFrame([(i, w) for i, w in enumerate(WALL)], "id INT, s STRING")
    return text.select("id", F.to_timestamp("s").alias("ts"), F.to_timestamp("s").alias("tstz"))


def shown(df: DataFrame, *columns: str) -> dict[int, tuple[str, ...]]:
    """What the caller's session shows for the columns, by id."""
    rows = df.select("id", *[F.date_format(c, SHOWN).alias(c) for c in columns]).collect()
    return {r["id"] % 10: tuple(r[c] for c in columns) for r in rows}


def stored(engine: Engine, spark: SparkSession, base: int) -> dict[int, tuple[str, ...]]:
    """The rows ``base`` .. ``base + 9``: the TIMESTAMP column as mergekit SQL prints it, and the TIMESTAMP WITH
    TIME ZONE column as the caller's session shows the table (``Engine.table``)."""
    walls = {
        i % 10: w
        for i, w in engine.execute(
            f"SELECT id, CAST(ts AS VARCHAR) FROM tz WHERE id BETWEEN {base} AND {base + 9}"
        ).rows()
    }
    table = engine.table("tz").where(F.col("id").between(base, base + 9))
    instants = shown(table, "tstz")
    return {i: (walls[i], instants[i][0]) for i in walls}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("zone", ZONES)
def test_a_dataframe_means_what_the_callers_session_shows(
    spark: SparkSession, engine: Engine, tmp_path: Path, zone: str, way: str
) -> None:
    engine.execute(
        "CREATE TABLE tz (id INTEGER NOT NULL, ts TIMESTAMP(6), tstz TIMESTAMP(6) WITH TIME ZONE, PRIMARY KEY (id))"
    )
    with session_zone(spark, zone):
        df = source(spark, way, tmp_path)
        expected = shown(df, "ts", "tstz")
        assert sorted(v[0][:19] for v in expected.values()) != [] and len(expected) == len(WALL)

        # INSERT from a registered DataFrame
        engine.register_dataframe("src", df)
        engine.execute("INSERT INTO tz SELECT id, ts, tstz FROM src")
        # MERGE: inserts from the source (ids 10..), then updates them from it
        engine.execute(
            "MERGE INTO tz t USING (SELECT id + 10 AS id, ts, tstz FROM src) s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.ts, s.tstz)"
        )
        engine.execute(
            "MERGE INTO tz t USING (SELECT id + 10 AS id, ts, tstz FROM src) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET ts = s.ts, tstz = s.tstz"
        )
        # the builder (ids 20..), Delta's INSERT *
        plus20 = df.select((F.col("id") + 20).alias("id"), "ts", "tstz")
        engine.merge_into("tz", source=plus20, on="tz.id = s.id").when_not_matched_insert_all().execute()
        # insert_arrow of the rows as the session shows them (pandas: wall clocks without a zone; ids 30..)
        rows = df.select((F.col("id") + 30).alias("id"), "ts", "tstz").toPandas()
        engine.insert_arrow("tz", pa.Table.from_pandas(rows, preserve_index=False))
        engine.unregister_dataframe("src")

        for base in (0, 10, 20, 30):
            assert stored(engine, spark, base) == expected, f"rows {base}.. differ from what the session shows"


@pytest.mark.parametrize("zone", ZONES)
def test_a_wall_clock_from_the_callers_session_becomes_an_instant_in_its_zone(
    spark: SparkSession, engine: Engine, zone: str
) -> None:
    """A TIMESTAMP_NTZ (a wall clock) into a TIMESTAMP WITH TIME ZONE column: the instant the caller's session
    reads for it (Trino's rule, with the caller's session as the session)."""
    engine.execute("CREATE TABLE tz (id INTEGER, ts TIMESTAMP(6), tstz TIMESTAMP(6) WITH TIME ZONE)")
    with session_zone(spark, zone):
        df = spark.sql(f"SELECT 1 AS id, TIMESTAMP_NTZ '{WALL[0]}' AS ts, TIMESTAMP_NTZ '{WALL[0]}' AS tstz")
        engine.register_dataframe("src", df)
        engine.execute("INSERT INTO tz SELECT * FROM src")
        engine.merge_into(
            "tz", source=df.withColumn("id", F.lit(2)), on="tz.id = s.id"
        ).when_not_matched_insert_all().execute()
        engine.insert_arrow("tz", pa.Table.from_pandas(df.withColumn("id", F.lit(3)).toPandas(), preserve_index=False))
        seen = shown(engine.table("tz"), "ts", "tstz")
    assert seen == {i: (WALL[0] + ".000000", WALL[0] + ".000000") for i in (1, 2, 3)}


@pytest.mark.parametrize("zone", ZONES)
def test_the_callers_zone_does_not_change_mergekit_sql(spark: SparkSession, engine: Engine, zone: str) -> None:
    """mergekit's own SQL runs in UTC in every caller's zone: the same statement, the same answer (rule 2)."""
    with session_zone(spark, zone):
        rows = engine.execute(
            "SELECT CAST(TIMESTAMP '2024-05-05 12:00:00 +02:00' AS TIMESTAMP), "
            "CAST(CAST(TIMESTAMP '2024-05-05 12:00:00' AS TIMESTAMP WITH TIME ZONE) AS VARCHAR), "
            "hour(TIMESTAMP '2024-05-05 01:30:00 +05:30'), "
            "CAST(TIMESTAMP '2024-05-05 12:00:00' AT TIME ZONE 'Asia/Kolkata' AS VARCHAR)"
        ).rows()
        assert spark.conf.get("spark.sql.session.timeZone") == zone  # the caller's setting is left as it was
    assert rows == [(dt.datetime(2024, 5, 5, 12), "2024-05-05 12:00:00.000 UTC", 1, "2024-05-05 17:30:00 Asia/Kolkata")]


def test_a_zoned_literal_keeps_its_local_time_as_trino_does(engine: Engine) -> None:
    """``CAST(TIMESTAMP '... +02:00' AS TIMESTAMP)`` drops the zone and keeps the local date-time (Trino), through a
    SELECT, an INSERT's implicit cast and an UPDATE; the value's zone is printed with it."""
    engine.execute("CREATE TABLE t (id INTEGER, ts TIMESTAMP, d DATE, tstz TIMESTAMP WITH TIME ZONE)")
    literal = "TIMESTAMP '2024-05-05 23:30:00 -02:00'"
    assert engine.execute(
        f"SELECT CAST({literal} AS TIMESTAMP), CAST({literal} AS DATE), CAST({literal} AS VARCHAR)"
    ).rows() == [(dt.datetime(2024, 5, 5, 23, 30), dt.date(2024, 5, 5), "2024-05-05 23:30:00 -02:00")]
    engine.execute(f"INSERT INTO t VALUES (1, {literal}, {literal}, {literal})")
    engine.execute("INSERT INTO t VALUES (2, NULL, NULL, NULL)")
    engine.execute(f"UPDATE t SET ts = {literal}, d = {literal}, tstz = {literal} WHERE id = 2")
    utc = dt.datetime(2024, 5, 6, 1, 30, tzinfo=dt.UTC)
    rows = engine.execute("SELECT id, ts, d, tstz FROM t ORDER BY id").rows()
    assert [(i, ts, d, tstz.astimezone(dt.UTC)) for i, ts, d, tstz in rows] == [
        (1, dt.datetime(2024, 5, 5, 23, 30), dt.date(2024, 5, 5), utc),
        (2, dt.datetime(2024, 5, 5, 23, 30), dt.date(2024, 5, 5), utc),
    ]


def test_insert_arrow_reads_each_columns_zone(spark: SparkSession, engine: Engine) -> None:
    """Arrow timestamps with a zone are that zone's wall clock in a TIMESTAMP column, the instant in a TIMESTAMP
    WITH TIME ZONE column; without a zone, the caller's session zone's wall clock. The same on the driver and
    through Spark (a CHECK constraint sends the second table's INSERT to Spark)."""
    engine.execute("CREATE TABLE fast (id INTEGER, ts TIMESTAMP(6), tstz TIMESTAMP(6) WITH TIME ZONE)")
    engine.execute("CREATE TABLE slow (id INTEGER, ts TIMESTAMP(6), tstz TIMESTAMP(6) WITH TIME ZONE, CHECK (id > 0))")
    noon = dt.datetime(2024, 5, 5, 12)
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "ts": pa.array([noon, noon], pa.timestamp("us", tz="+02:00")),
            "tstz": pa.array([noon, noon], pa.timestamp("us")),
        }
    )
    with session_zone(spark, "America/New_York"):
        assert engine.insert_arrow("fast", data).metrics["strategy"] == "driver_append"
        assert "driver_append_declined" in engine.insert_arrow("slow", data).metrics
    # 12:00 UTC shown at +02:00 is 14:00; 12:00 in New York (EDT) is 16:00 UTC
    expected = [(i, dt.datetime(2024, 5, 5, 14), dt.datetime(2024, 5, 5, 16, tzinfo=dt.UTC)) for i in (1, 2)]
    for table in ("fast", "slow"):
        rows = engine.execute(f"SELECT id, ts, tstz FROM {table} ORDER BY id").rows()
        assert [(i, ts, tstz.astimezone(dt.UTC)) for i, ts, tstz in rows] == expected, table


def test_zone_dependent_operations_on_values_of_several_zones_are_refused(engine: Engine) -> None:
    """The zone is known per expression: a CASE over two zones cannot be cast to TIMESTAMP (Trino would use each
    value's zone), rather than computed in UTC."""
    with pytest.raises(MergekitError) as err:
        engine.execute(
            "SELECT CAST(CASE WHEN rand() < 2 THEN TIMESTAMP '2024-05-05 12:00:00 +02:00' "
            "ELSE TIMESTAMP '2024-05-05 12:00:00 +03:00' END AS TIMESTAMP)"
        )
    assert err.value.code is ErrorCode.NOT_SUPPORTED
    assert "different time zones" in str(err.value)
    with pytest.raises(MergekitError) as err:
        engine.execute("SELECT CAST(TIMESTAMP '2024-05-05 12:00:00' AT TIME ZONE 'Mars/Olympus' AS TIMESTAMP)")
    assert str(err.value) == "[INVALID_FUNCTION_ARGUMENT] Time zone not supported: Mars/Olympus"
    with pytest.raises(MergekitError) as err:
        engine.execute("SELECT CAST(TIMESTAMP '2024-05-05 12:00:00 Mars/Olympus' AS TIMESTAMP)")
    assert str(err.value) == "[INVALID_LITERAL] '2024-05-05 12:00:00 Mars/Olympus' is not a valid timestamp literal"


def test_a_callers_wall_clock_compared_with_an_instant_is_read_in_the_callers_zone(
    spark: SparkSession, engine: Engine
) -> None:
    """Trino compares a TIMESTAMP with a TIMESTAMP WITH TIME ZONE by reading the TIMESTAMP in the session zone: for a
    wall clock from the caller's DataFrame, the caller's zone (12:00 in New York is 16:00 UTC)."""
    with session_zone(spark, "America/New_York"):
        engine.register_dataframe("w", spark.sql("SELECT TIMESTAMP_NTZ '2024-07-01 12:00:00' AS at"))
        rows = engine.execute(
            "SELECT at = TIMESTAMP '2024-07-01 16:00:00 UTC', at < TIMESTAMP '2024-07-01 13:00:00 UTC', "
            "at BETWEEN TIMESTAMP '2024-07-01 15:00:00 +00:00' AND TIMESTAMP '2024-07-01 12:30:00 -04:00' FROM w"
        ).rows()
    assert rows == [(True, False, True)]


def test_wall_clocks_a_daylight_saving_change_skips_or_repeats(spark: SparkSession, engine: Engine) -> None:
    """02:30 on New York's spring-forward night does not exist, 01:30 on its fall-back night exists twice: read as
    Spark (java.time) reads them, with the offset in force before the change (02:30 EST = 07:30 UTC, 01:30 EDT =
    05:30 UTC), on the driver and through Spark alike, into TIMESTAMP and TIMESTAMP WITH TIME ZONE columns."""
    engine.execute("CREATE TABLE fast (id INTEGER, ts TIMESTAMP(6), tstz TIMESTAMP(6) WITH TIME ZONE)")
    engine.execute("CREATE TABLE slow (id INTEGER, ts TIMESTAMP(6), tstz TIMESTAMP(6) WITH TIME ZONE, CHECK (id > 0))")
    walls = [dt.datetime(2024, 3, 10, 2, 30), dt.datetime(2024, 11, 3, 1, 30), dt.datetime(2024, 3, 10, 3, 0)]
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int32()),
            "ts": pa.array(walls, pa.timestamp("us")),
            "tstz": pa.array(walls, pa.timestamp("us")),
        }
    )
    with session_zone(spark, "America/New_York"):
        assert engine.insert_arrow("fast", data).metrics["strategy"] == "driver_append"
        assert "driver_append_declined" in engine.insert_arrow("slow", data).metrics
        engine.register_dataframe("src", spark.createDataFrame(data, "id INT, ts TIMESTAMP_NTZ, tstz TIMESTAMP_NTZ"))
        engine.execute("INSERT INTO fast SELECT id + 10, ts, tstz FROM src")
    utc = [dt.datetime(2024, 3, 10, 7, 30), dt.datetime(2024, 11, 3, 5, 30), dt.datetime(2024, 3, 10, 7, 0)]
    expected = [(i, w, u.replace(tzinfo=dt.UTC)) for i, w, u in zip((1, 2, 3), walls, utc, strict=True)]
    for table, offset in (("fast", 0), ("slow", 0), ("fast", 10)):
        rows = engine.execute(
            f"SELECT id, ts, tstz FROM {table} WHERE id BETWEEN {offset} AND {offset + 9} ORDER BY id"
        ).rows()
        got = [(i - offset, ts, tstz.astimezone(dt.UTC)) for i, ts, tstz in rows]
        assert got == expected, (table, offset)


def test_a_query_returns_each_value_in_its_expressions_zone(engine: Engine) -> None:
    """Trino returns a value with its zone: the instant is the same, shown in the zone of the expression that
    computed it (a literal's, AT TIME ZONE's), UTC for a stored value; streamed results alike. Seconds of a literal
    may be left out, as in Trino."""
    engine.execute("CREATE TABLE z (at TIMESTAMP WITH TIME ZONE)")
    engine.execute("INSERT INTO z VALUES (TIMESTAMP '2024-05-05 12:00 +02:00')")
    sql = (
        "SELECT TIMESTAMP '2024-05-05 12:00:00 +02:00', at AT TIME ZONE 'Asia/Kolkata', at, "
        "with_timezone(TIMESTAMP '2024-05-05 12:00:00', 'America/New_York') FROM z"
    )
    for result in (engine.execute(sql), engine.execute(sql, stream=True)):
        a, b, c, d = result.rows()[0]
        assert (a.isoformat(), b.isoformat(), c.isoformat(), d.isoformat()) == (
            "2024-05-05T12:00:00+02:00",
            "2024-05-05T15:30:00+05:30",
            "2024-05-05T10:00:00+00:00",
            "2024-05-05T12:00:00-04:00",
        )
        assert getattr(b.tzinfo, "key", None) == "Asia/Kolkata"
