"""Continuous runs (issue 17, item 3): ``Engine.stream`` over the journal catalog, micro-batch by micro-batch.

Spark Structured Streaming drives the batches (the commits source); each batch is evaluated over a slice of the
stream's log. A window is emitted once, only when a later row shows it can get no more rows; a stateless query
emits each row in the batch that brought it."""

from __future__ import annotations

import datetime
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from mergekit_memory import MemoryConnector

from mergekit import Engine
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import RowChangeParadigm

from .seed_orders import ORDERS as SEED_ORDERS
from .seed_orders import ts

pytestmark = pytest.mark.spark


@pytest.fixture()
def lake(spark, tmp_path: Path) -> Engine:
    engine = Engine(
        spark=spark,
        catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "w")}},
        streams_dir=str(tmp_path / "streams"),
    )
    engine.execute("CREATE STREAM Orders (rowtime TIMESTAMP, productId INTEGER, orderId INTEGER, units INTEGER)")
    yield engine
    engine.close()


def _rows(handle) -> list[tuple]:
    table = handle.rows()
    return [] if table is None else [tuple(r.values()) for r in table.to_pylist()]


def test_a_window_is_emitted_only_once_a_later_row_arrives(lake: Engine) -> None:
    handle = lake.stream(
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS h, COUNT(*) AS c, SUM(units) AS u FROM Orders "
        "GROUP BY FLOOR(rowtime TO HOUR)",
        trigger="0.2 seconds",
    )
    try:
        lake.execute("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:17:00', 30, 5, 4)")
        handle.process_all_available()
        assert _rows(handle) == []  # the 10:00 window is open
        lake.execute("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:45:00', 10, 6, 2)")
        handle.process_all_available()
        assert _rows(handle) == []  # still open: a row at 10:59 could come
        lake.execute("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 11:05:00', 20, 7, 1)")
        handle.process_all_available()
        assert _rows(handle) == [(ts("10:00:00"), 2, 6)]  # 11:05 closed it; 11:00 stays open
        assert [p["rows"] for p in handle.progress] == [0, 0, 1]
        assert handle.exception is None
    finally:
        handle.stop()
    assert not handle.is_active


def test_stateless_rows_arrive_in_the_batch_that_brought_them_and_tables_join_fresh(lake: Engine) -> None:
    lake.execute("CREATE TABLE Products (productId INTEGER, name VARCHAR)")
    lake.execute("INSERT INTO Products VALUES (10, 'paint'), (30, 'brush')")
    lake.execute("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:17:00', 30, 5, 4)")
    batches: list[list[tuple]] = []
    handle = lake.stream(
        "SELECT STREAM o.orderId, p.name, o.units * 2 AS u2 FROM Orders AS o JOIN Products AS p "
        "ON o.productId = p.productId WHERE o.units > 1",
        on_batch=lambda t: batches.append([tuple(r.values()) for r in t.to_pylist()]),
        trigger="0.2 seconds",
    )
    try:
        handle.process_all_available()
        lake.execute("INSERT INTO Products VALUES (20, 'paper')")  # the table is read afresh by each batch
        lake.execute(
            "INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:18:00', 20, 6, 3), "
            "(TIMESTAMP '2015-02-15 10:19:00', 10, 7, 1)"
        )
        handle.process_all_available()
    finally:
        handle.stop()
    assert batches == [[(5, "brush", 8)], [(6, "paper", 6)]]
    assert handle.rows() is None  # on_batch took them


def test_what_a_continuous_run_does_not_evaluate_is_refused_by_name(lake: Engine) -> None:
    with pytest.raises(MergekitError) as caught:
        lake.stream("SELECT STREAM rowtime, SUM(units) OVER (ORDER BY rowtime) AS s FROM Orders")
    assert caught.value.code is ErrorCode.NOT_SUPPORTED
    assert "OVER window in a continuous run" in caught.value.message
    with pytest.raises(MergekitError) as caught:
        lake.stream("SELECT rowtime FROM Orders")  # not SELECT STREAM: a relation of a stream without history
    assert caught.value.code is ErrorCode.STREAM_NOT_ALLOWED


def test_cli_follow_prints_rows_as_they_come_and_stops_on_ctrl_c(spark, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    warehouse = tmp_path / "w"
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(warehouse)}})
    engine.execute("CREATE STREAM Orders (rowtime TIMESTAMP, productId INTEGER, orderId INTEGER, units INTEGER)")
    engine.execute("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:17:00', 30, 5, 4)")
    config = tmp_path / "catalogs.toml"
    config.write_text(f'[catalogs.lake]\nconnector = "journal"\nwarehouse = "{warehouse}"\n')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mergekit.cli",
            "sql",
            "--catalog-config",
            str(config),
            "--follow",
            "SELECT STREAM orderId, units FROM Orders",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            seen.append(line)
            if "| 5 " in line.replace("|  ", "| "):  # the row committed before it started
                break
        # a row committed while it follows is printed as it arrives
        engine.execute("INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:18:00', 20, 77, 9)")
        while time.monotonic() < deadline:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            seen.append(line)
            if "77" in line:
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        engine.close()
    text = "".join(seen) + rest
    assert proc.returncode == 0, text[-3000:]
    assert "5" in text and "77" in text
    assert "2 rows, 2 batches" in text
    assert "Traceback" not in text


ORDERS = [*SEED_ORDERS, ("11:41:00", 20, 13, 3), ("12:05:00", 30, 14, 7)]  # the seed's, and two later

HALF_HOUR = datetime.timedelta(minutes=30)


def _floor(t: datetime.datetime, minutes: int) -> datetime.datetime:
    return t.replace(minute=t.minute - t.minute % minutes, second=0, microsecond=0)


# (query, whether a row of its bounded run is still open for a continuous run at watermark w: a bounded run closes
# every window at end of input, a continuous run only those before the watermark's window)
SHAPES = [
    (
        "SELECT STREAM FLOOR(rowtime TO HOUR) AS rowtime, productId, COUNT(*) AS c, SUM(units) AS units "
        "FROM Orders GROUP BY FLOOR(rowtime TO HOUR), productId",
        lambda row, w: row[0] >= _floor(w, 60),
    ),
    (
        "SELECT STREAM TUMBLE_END(rowtime, INTERVAL '30' MINUTE) AS t, COUNT(*) AS c FROM Orders "
        "GROUP BY TUMBLE(rowtime, INTERVAL '30' MINUTE) HAVING SUM(units) > 2",
        lambda row, w: row[0] - HALF_HOUR >= _floor(w, 30),
    ),
    ("SELECT STREAM rowtime, orderId FROM Orders ORDER BY rowtime, orderId", lambda row, w: row[0] >= w),
    ("SELECT STREAM orderId, units * 10 AS u FROM Orders WHERE units > 2", lambda row, w: False),
]


@pytest.mark.parametrize("slack", ["INTERVAL '10' MINUTE"])  # (without a slack: the first test of this file)
def test_a_continuous_run_emits_what_a_bounded_run_does_once_windows_close(spark, tmp_path: Path, slack) -> None:
    """Each shape a continuous run evaluates, commits arriving while it runs (one, two, three rows a commit; with
    a slack, a row older than the newest, within the slack): the concatenated micro-batches are the bounded
    run's rows, less the windows still open (a bounded run closes them at end of input)."""
    engine = Engine(spark=spark, catalogs={"lake": {"connector": "journal", "warehouse": str(tmp_path / "w")}})
    options = f" WITH (slack = {slack})" if slack else ""
    orders = list(ORDERS)
    if slack:  # 11:20 arrives after 11:24:11: late, but within the slack
        orders.insert(8, ("11:20:00", 40, 15, 5))
    chunks = [orders[:1], orders[1:3], orders[3:6], orders[6:9], orders[9:]]
    try:
        for i, (sql, still_open) in enumerate(SHAPES):  # one at a time: each query's source is a Python worker
            stream = f"orders{i}"
            engine.execute(
                f"CREATE STREAM {stream} (rowtime TIMESTAMP, productId INTEGER, orderId INTEGER, units INTEGER)"
                + options
            )
            handle = engine.stream(sql.replace("FROM Orders", f"FROM {stream}"), trigger="0.2 seconds")
            try:
                for chunk in chunks:
                    values = ", ".join(f"(TIMESTAMP '2015-02-15 {t}', {p}, {o}, {u})" for t, p, o, u in chunk)
                    engine.execute(f"INSERT INTO {stream} VALUES {values}")
                    handle.process_all_available()
            finally:
                handle.stop()
            bounded = engine.execute(sql.replace("FROM Orders", f"FROM {stream}")).rows()
            watermark = ts("12:05:00") - (datetime.timedelta(minutes=10) if slack else datetime.timedelta(0))
            assert _rows(handle) == [r for r in bounded if not still_open(r, watermark)], sql
            assert len(handle.progress) == len(chunks) and handle.exception is None
    finally:
        engine.close()


def test_a_backlog_is_worked_off_in_batches_of_at_most_max_commits(lake: Engine) -> None:
    for i in range(3):
        lake.execute(f"INSERT INTO Orders VALUES (TIMESTAMP '2015-02-15 10:0{i}:00', 10, {i}, {i})")
    handle = lake.stream("SELECT STREAM orderId FROM Orders", trigger="0.2 seconds", max_commits_per_batch=2)
    try:
        handle.process_all_available()
    finally:
        handle.stop()
    assert [p["commits"] for p in handle.progress] == [{0: (-1, 2)}, {0: (2, 3)}]
    assert _rows(handle) == [(0,), (1,), (2,)]


class _Gate:
    """Where a micro-batch waits: ``armed``, a catalog lookup of the gated catalog signals ``entered`` and waits
    until ``opened`` (or two minutes, so that a regression fails rather than hangs), then signals ``left``."""

    def __init__(self) -> None:
        self.armed, self.entered, self.opened, self.left = (threading.Event() for _ in range(4))
        self.time_zone_inside: str | None = None

    def pass_through(self, spark) -> None:
        if self.armed.is_set():
            self.time_zone_inside = spark.conf.get("spark.sql.session.timeZone")
            self.entered.set()
            self.opened.wait(120)
            self.left.set()


class _GatedConnector(MemoryConnector):
    """The memory connector, its table lookups passing through a :class:`_Gate` (on the driver, inside the
    statement that resolves the table: a micro-batch holds still there, holding whatever its statement holds)."""

    def __init__(self, gate: _Gate, spark) -> None:
        super().__init__(paradigm=RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW)

        class GatedMetadata(type(super().get_metadata())):  # type: ignore[misc]
            def get_table_handle(self, **kwargs):  # type: ignore[no-untyped-def]
                gate.pass_through(spark)
                return super().get_table_handle(**kwargs)

        self._gated = GatedMetadata(self)

    def get_metadata(self):  # type: ignore[no-untyped-def]
        return self._gated


def _orders(order_ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "rowtime": pa.array([datetime.datetime(2015, 2, 15, 10, i) for i in order_ids], pa.timestamp("us")),
            "productId": pa.array([10] * len(order_ids), pa.int32()),
            "orderId": pa.array(order_ids, pa.int32()),
            "units": pa.array([1] * len(order_ids), pa.int32()),
        }
    )


def test_insert_arrow_is_not_blocked_by_a_micro_batch_of_the_same_engine(lake: Engine) -> None:
    """Issue 26, row 14: a producer's driver append commits while a micro-batch of the same engine is in the
    middle of its statement (held at a catalog lookup), instead of waiting for the whole batch; the batch keeps
    mergekit's Spark settings meanwhile, and the rows arrive in a later batch."""
    spark = lake.spark
    gate = _Gate()
    lake.add_catalog("gate", _GatedConnector(gate, spark))
    lake.execute("CREATE TABLE gate.default.products (productId INTEGER, name VARCHAR)")
    lake.execute("INSERT INTO gate.default.products VALUES (10, 'paint')")
    batches: list[list[tuple]] = []
    handle = lake.stream(
        "SELECT STREAM o.orderId, p.name FROM Orders AS o JOIN gate.default.products AS p ON o.productId = p.productId",
        on_batch=lambda t: batches.append(sorted(tuple(r.values()) for r in t.to_pylist())),
        trigger="0.2 seconds",
    )
    users_zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")  # the user's own setting
    try:
        gate.armed.set()
        assert lake.insert_arrow("Orders", _orders([1])).metrics["strategy"] == "driver_append"
        assert gate.entered.wait(180), "no micro-batch reached the gate"
        # the batch is inside its statement now, with mergekit's settings applied
        inserted = lake.insert_arrow("Orders", _orders([2, 3]))
        assert not gate.left.is_set(), "insert_arrow waited for the micro-batch"
        assert inserted.row_count == 2 and inserted.metrics["strategy"] == "driver_append"
        assert gate.time_zone_inside == "UTC"
        assert spark.conf.get("spark.sql.session.timeZone") == "UTC"  # the append left the batch's settings alone
        gate.armed.clear()
        gate.opened.set()
        handle.process_all_available()
        assert spark.conf.get("spark.sql.session.timeZone") == "America/New_York"
    finally:
        gate.opened.set()
        handle.stop()
        spark.conf.set("spark.sql.session.timeZone", users_zone)
    assert batches == [[(1, "paint")], [(2, "paint"), (3, "paint")]]
    assert handle.exception is None
