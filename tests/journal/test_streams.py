"""Streams (seed 001) in the journal connector, through the stream SPI alone: the definition, the commit-time
monotonicity check, ``get_stream_commits`` and ``get_stream_splits``; and the memory connector's refusal."""

from __future__ import annotations

import datetime as dt
import os
import threading

import attrs
import pyarrow as pa
import pytest
from mergekit_memory import MemoryConnectorFactory

from mergekit import plugins
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    STREAMS_MESSAGE,
    ColumnMetadata,
    ConnectorSession,
    ConnectorTableMetadata,
    MonotonicColumn,
    SchemaTableName,
    StreamDefinition,
    monotonic_violation,
)
from tests.journal.journal_harness import DELETE, INSERT, UPDATE, JournalHarness

TS = pa.timestamp("us", tz="UTC")
COLS = [("rowtime", TS), ("product", pa.int64()), ("units", pa.int32())]
ROWTIME = StreamDefinition(monotonic=[MonotonicColumn(name="rowtime")])


def at(hh: int, mm: int = 0, ss: int = 0) -> dt.datetime:
    return dt.datetime(2015, 2, 15, hh, mm, ss, tzinfo=dt.UTC)


def order(t: dt.datetime, product: int, units: int = 1) -> dict:
    return {"rowtime": t, "product": product, "units": units}


@pytest.fixture
def orders(lake: JournalHarness) -> JournalHarness:
    lake.create_stream("orders", COLS, ROWTIME)
    lake.insert("orders", order(at(10), 30), order(at(10, 2), 10))
    lake.insert("orders", order(at(10, 15), 20), order(at(10, 10), 30), order(at(10, 20), 40))
    lake.insert("orders", order(at(11), 50))
    return lake


def _data_files(lake: JournalHarness, table: str) -> set[str]:
    root = os.path.join(lake.warehouse, lake.handle(table).location)
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


# ---- the definition ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "definition",
    [
        StreamDefinition(monotonic=[MonotonicColumn(name="rowtime")], slack=dt.timedelta(minutes=5)),
        StreamDefinition(monotonic=[MonotonicColumn(name="product"), MonotonicColumn(name="rowtime")], slack=3),
        StreamDefinition(monotonic=[MonotonicColumn(name="units", descending=True)], history=True),
        StreamDefinition(),
    ],
)
def test_definition_round_trips_also_in_a_new_connector(make_harness, definition):
    lake = make_harness()
    lake.create_stream("orders", COLS, definition)
    meta = lake.metadata.get_table_metadata(session=lake.session(), table_handle=lake.handle("orders"))
    assert meta.stream == definition
    assert meta.primary_key == ()
    assert [c.name for c in meta.visible_columns] == ["rowtime", "product", "units"]
    again = make_harness()  # a new connector instance on the same warehouse
    assert again.metadata.get_table_metadata(session=again.session(), table_handle=again.handle("orders")).stream == (
        definition
    )


def test_a_stream_has_no_journal_twin_and_tables_are_not_streams(lake):
    lake.create_stream("orders", COLS, ROWTIME)
    lake.create("items", [("id", pa.int64())], key=["id"])
    names = {t.table for t in lake.metadata.list_tables(session=lake.session(), schema="default")}
    assert names == {"orders", "items", "items_journal"}
    assert (
        lake.metadata.get_table_handle(
            session=lake.session(), table=SchemaTableName(schema="default", table="orders_journal")
        )
        is None
    )
    items = lake.metadata.get_table_metadata(session=lake.session(), table_handle=lake.handle("items"))
    assert items.stream is None
    with pytest.raises(MergekitError, match="'ITEMS' is not a stream") as err:
        lake.stream_commits("items")
    assert err.value.code == ErrorCode.STREAM_NOT_ALLOWED
    with pytest.raises(MergekitError) as err:
        lake.stream_rows("items", None, 1)
    assert err.value.code == ErrorCode.STREAM_NOT_ALLOWED


def test_a_primary_key_and_a_bad_definition_are_refused(lake):
    with pytest.raises(MergekitError, match="A stream cannot have a primary key") as err:
        lake.create_stream("orders", COLS, ROWTIME, key=["product"])
    assert err.value.code == ErrorCode.INVALID_ARGUMENTS
    with pytest.raises(MergekitError) as err:
        lake.create_stream("orders", COLS, StreamDefinition(monotonic=[MonotonicColumn(name="nope")]))
    assert err.value.code == ErrorCode.COLUMN_NOT_FOUND
    with pytest.raises(MergekitError, match="Slack") as err:  # an int slack on a timestamp column
        lake.create_stream("orders", COLS, StreamDefinition(monotonic=[MonotonicColumn(name="rowtime")], slack=5))
    assert err.value.code == ErrorCode.INVALID_ARGUMENTS
    assert (
        lake.metadata.get_table_handle(session=lake.session(), table=SchemaTableName(schema="default", table="orders"))
        is None
    )


# ---- commits and splits ------------------------------------------------------------------------------------


def test_commits_list_versions_counts_and_low_high(orders):
    commits = orders.stream_commits("orders")
    assert [c.version for c in commits] == [1, 2, 3]
    assert [c.row_count for c in commits] == [2, 3, 1]
    assert [c.low["rowtime"] for c in commits] == [at(10), at(10, 10), at(11)]
    assert [c.high["rowtime"] for c in commits] == [at(10, 2), at(10, 20), at(11)]
    stamps = [c.committed_at for c in commits]
    assert stamps == sorted(stamps) and all(s.tzinfo is not None for s in stamps)
    assert [c.version for c in orders.stream_commits("orders", after=1)] == [2, 3]
    assert [c.version for c in orders.stream_commits("orders", after=1, up_to=2)] == [2]
    assert orders.stream_commits("orders", after=3) == []


def test_splits_read_exactly_the_commits_of_a_range_in_order(orders):
    everything = orders.stream_rows("orders", None, 3)
    assert [(r["rowtime"], r["product"]) for r in everything] == [
        (at(10), 30),
        (at(10, 2), 10),
        (at(10, 10), 30),  # sorted within its commit: it was written after 10:15
        (at(10, 15), 20),
        (at(10, 20), 40),
        (at(11), 50),
    ]
    assert [r["product"] for r in orders.stream_rows("orders", 1, 2)] == [30, 20, 40]
    assert [r["product"] for r in orders.stream_rows("orders", 2, 3, columns=["product"])] == [50]
    assert orders.stream_rows("orders", 3, 3) == []
    assert orders.stream_rows("orders", 1, 1) == []
    # the stream reads as a table too
    assert len(orders.read("orders")) == 6


def test_rows_within_a_commit_come_back_sorted_stably_across_sinks(lake):
    lake.create_stream("orders", COLS, ROWTIME)
    lake.merge(
        "orders",
        [
            (INSERT, order(at(10, 30), 1), None),
            (INSERT, order(at(10, 5), 2), None),
            (INSERT, order(at(10, 30), 3), None),
        ],
        [
            (INSERT, order(at(10, 1), 4), None),
            (INSERT, order(at(10, 30), 5), None),
            (INSERT, order(at(10, 5), 6), None),
        ],
    )
    rows = lake.stream_rows("orders", None, 1)
    assert [r["product"] for r in rows] == [4, 2, 6, 1, 3, 5]  # ties keep the order they were written in
    assert lake.stream_commits("orders")[0].row_count == 6


def test_descending_column_is_read_in_descending_order_and_checked_the_other_way(lake):
    lake.create_stream("countdown", COLS, StreamDefinition(monotonic=[MonotonicColumn(name="units", descending=True)]))
    lake.insert("countdown", order(at(1), 1, 50), order(at(2), 2, 90), order(at(3), 3, 70))
    assert [r["units"] for r in lake.stream_rows("countdown", None, 1)] == [90, 70, 50]
    lake.insert("countdown", order(at(4), 4, 50))  # equal to the low-water mark: not going back
    with pytest.raises(MergekitError, match=r"Column 'UNITS' of stream 'COUNTDOWN' is monotonic: 51 is older than 50"):
        lake.insert("countdown", order(at(5), 5, 10), order(at(5), 6, 51))
    commits = lake.stream_commits("countdown")
    assert [(c.low["units"], c.high["units"]) for c in commits] == [(50, 90), (50, 50)]


# ---- the monotonicity check --------------------------------------------------------------------------------


def test_out_of_order_insert_is_refused_and_commits_nothing(orders):
    commits, rows = orders.stream_commits("orders"), orders.stream_rows("orders", None, 3)
    files = _data_files(orders, "orders")
    with pytest.raises(MergekitError) as err:
        orders.insert("orders", order(at(11, 5), 1), order(at(10, 59), 2))
    assert err.value.code == ErrorCode.CONSTRAINT_VIOLATION
    assert str(err.value.message) == monotonic_violation("orders", "rowtime", at(10, 59), at(11))
    assert "Column 'ROWTIME' of stream 'ORDERS' is monotonic" in str(err.value)
    assert orders.stream_commits("orders") == commits
    assert orders.stream_rows("orders", None, 3) == rows
    assert orders.handle("orders").snapshot_seq == 3
    assert _data_files(orders, "orders") == files  # the refused statement's files are gone
    orders.insert("orders", order(at(11), 60))  # equal to the high-water mark is fine
    assert [c.version for c in orders.stream_commits("orders")] == [1, 2, 3, 4]


def test_slack_lets_slightly_older_rows_in(lake):
    lake.create_stream("orders", COLS, attrs.evolve(ROWTIME, slack=dt.timedelta(minutes=5)))
    lake.insert("orders", order(at(10), 1))
    lake.insert("orders", order(at(9, 56), 2))  # 4 minutes older than 10:00: within the slack
    with pytest.raises(MergekitError, match=r"2015-02-15 09:54:00\+00:00 is older than 2015-02-15 10:00:00") as err:
        lake.insert("orders", order(at(9, 54), 3))  # 6 minutes older: refused
    assert err.value.code == ErrorCode.CONSTRAINT_VIOLATION
    lake.insert("orders", order(at(10, 30), 4))
    with pytest.raises(MergekitError):  # the high-water mark moved to 10:30
        lake.insert("orders", order(at(10, 24), 5))
    lake.insert("orders", order(at(10, 26), 6))
    assert [r["product"] for r in lake.stream_rows("orders", None, 10)] == [1, 2, 4, 6]
    assert [c.low["rowtime"] for c in lake.stream_commits("orders")] == [at(10), at(9, 56), at(10, 30), at(10, 26)]


def test_only_the_first_monotonic_column_has_slack(lake):
    definition = StreamDefinition(
        monotonic=[MonotonicColumn(name="rowtime"), MonotonicColumn(name="product")], slack=dt.timedelta(hours=1)
    )
    lake.create_stream("orders", COLS, definition)
    lake.insert("orders", order(at(10), 100))
    lake.insert("orders", order(at(9, 30), 100))
    with pytest.raises(MergekitError, match="Column 'PRODUCT' of stream 'ORDERS' is monotonic: 99 is older than 100"):
        lake.insert("orders", order(at(10, 30), 99))
    assert lake.stream_commits("orders")[-1].high == {"rowtime": at(9, 30), "product": 100}


def test_int_slack_on_an_integer_column(lake):
    lake.create_stream("ticks", COLS, StreamDefinition(monotonic=[MonotonicColumn(name="product")], slack=3))
    lake.insert("ticks", order(at(1), 10))
    lake.insert("ticks", order(at(1), 7))
    with pytest.raises(MergekitError, match="6 is older than 10"):
        lake.insert("ticks", order(at(1), 6))


def test_null_in_a_monotonic_column_is_refused(orders):
    with pytest.raises(
        MergekitError, match="Column 'ROWTIME' of stream 'ORDERS' is monotonic: NULL is not allowed"
    ) as err:
        orders.insert("orders", order(at(12), 1), {"rowtime": None, "product": 2, "units": 1})
    assert err.value.code == ErrorCode.CONSTRAINT_VIOLATION
    assert [c.version for c in orders.stream_commits("orders")] == [1, 2, 3]


def test_commit_is_checked_against_commits_made_after_its_statement_began(make_harness):
    first, second = make_harness(), make_harness()  # two connector instances on one warehouse
    first.create_stream("orders", COLS, ROWTIME)
    older = second.begin("orders")
    newer = first.begin("orders")
    older_frags = second.write(older, [(INSERT, order(at(10), 1), None)])
    first.finish(newer, first.write(newer, [(INSERT, order(at(11), 2), None)]))
    with pytest.raises(MergekitError, match="10:00:00\\+00:00 is older than 2015-02-15 11:00:00"):
        second.finish(older, older_frags)
    assert [(c.version, c.low["rowtime"]) for c in second.stream_commits("orders")] == [(1, at(11))]


def test_concurrent_inserters_never_commit_out_of_order(make_harness):
    lake = make_harness()
    lake.create_stream("orders", COLS, ROWTIME)
    clock = [0]
    lock = threading.Lock()
    refused: list[int] = []
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def inserter(harness: JournalHarness, product: int) -> None:
        try:
            start.wait()
            for _ in range(8):
                with lock:  # values taken in the order the statements begin: commits may come in another order
                    clock[0] += 1
                    minute = clock[0]
                mh = harness.begin("orders")
                frags = harness.write(mh, [(INSERT, order(at(10, minute), product), None)])
                try:
                    harness.finish(mh, frags)
                except MergekitError as exc:
                    assert exc.code == ErrorCode.CONSTRAINT_VIOLATION, exc
                    refused.append(minute)
                    harness.metadata.abort_merge(session=harness.session(), merge_handle=mh)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=inserter, args=(make_harness(), p)) for p in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures, failures
    commits = lake.stream_commits("orders")
    rows = lake.stream_rows("orders", None, commits[-1].version)
    minutes = [r["rowtime"].minute for r in rows]
    assert minutes == sorted(minutes)  # in version order, never going back
    assert sorted(minutes + refused) == list(range(1, 17))  # every statement committed or was refused
    assert [c.version for c in commits] == list(range(1, len(commits) + 1))
    assert sum(c.row_count for c in commits) == len(rows) == 16 - len(refused)


# ---- append only -------------------------------------------------------------------------------------------


def test_update_and_delete_rows_are_refused(orders):
    with pytest.raises(MergekitError, match="Stream 'ORDERS' is append-only") as err:
        orders.begin("orders", update_columns=["units"])
    assert err.value.code == ErrorCode.STREAM_NOT_ALLOWED
    row_id = {"_row_id": "1-0-0"}
    for op in (DELETE, UPDATE):
        with pytest.raises(MergekitError, match="Stream 'ORDERS' is append-only") as err:
            orders.merge("orders", [(op, order(at(12), 1), row_id)])
        assert err.value.code == ErrorCode.STREAM_NOT_ALLOWED
    # defence at commit: fragments that claim changed rows
    mh = orders.begin("orders")
    frags = [attrs.evolve(f, deletes=1) for f in orders.write(mh, [(INSERT, order(at(12), 1), None)])]
    with pytest.raises(MergekitError, match="append-only") as err:
        orders.finish(mh, frags)
    assert err.value.code == ErrorCode.STREAM_NOT_ALLOWED
    with pytest.raises(MergekitError, match="append-only"):
        orders.metadata.truncate_table(session=orders.session(), table_handle=orders.handle("orders"))
    assert [c.version for c in orders.stream_commits("orders")] == [1, 2, 3]


def test_columns_of_a_stream_change_around_its_monotonic_columns(orders):
    md, s = orders.metadata, orders.session()
    md.add_column(session=s, table_handle=orders.handle("orders"), column=ColumnMetadata(name="note", type=pa.string()))
    md.rename_column(session=s, table_handle=orders.handle("orders"), source="rowtime", target="ts")
    meta = md.get_table_metadata(session=s, table_handle=orders.handle("orders"))
    assert meta.stream == StreamDefinition(monotonic=[MonotonicColumn(name="ts")])
    with pytest.raises(MergekitError) as err:
        md.drop_column(session=s, table_handle=orders.handle("orders"), column="ts")
    assert err.value.code == ErrorCode.NOT_SUPPORTED
    with pytest.raises(MergekitError, match="Column 'TS' of stream 'ORDERS' is monotonic"):
        orders.insert("orders", {"ts": at(10, 30), "product": 1})
    orders.insert("orders", {"ts": at(12), "product": 1, "note": "late"})
    commits = orders.stream_commits("orders")
    assert commits[0].low == {"ts": at(10)} and commits[-1].low == {"ts": at(12)}
    assert [r["product"] for r in orders.stream_rows("orders", 3, commits[-1].version)] == [1]
    with pytest.raises(MergekitError) as err:
        orders.call("compact", table="orders")
    assert err.value.code == ErrorCode.NOT_SUPPORTED


def test_dropping_a_stream_removes_its_commits(orders):
    orders.metadata.drop_table(session=orders.session(), table_handle=orders.handle("orders"))
    orders.create_stream("orders", COLS, ROWTIME)
    assert orders.stream_commits("orders") == []
    orders.insert("orders", order(at(1), 1))  # the old high-water mark (11:00) is gone with the stream
    assert [c.version for c in orders.stream_commits("orders")] == [1]


# ---- the memory connector ----------------------------------------------------------------------------------


def test_memory_connector_refuses_streams():
    connector = MemoryConnectorFactory().create(catalog_name="mem", config={}, context=plugins.connector_context())
    meta = ConnectorTableMetadata(
        table=SchemaTableName(schema="default", table="orders"),
        columns=[ColumnMetadata(name="rowtime", type=TS)],
        stream=ROWTIME,
    )
    with pytest.raises(MergekitError, match=STREAMS_MESSAGE) as err:
        connector.get_metadata().create_table(
            session=ConnectorSession(catalog="mem"), table_metadata=meta, ignore_existing=False
        )
    assert err.value.code == ErrorCode.NOT_SUPPORTED
