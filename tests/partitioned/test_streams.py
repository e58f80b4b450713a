"""Streams in a partitioned catalog (SPI level, no Spark): a stream is a plain table of the base journal, so
its creation, writes, commits and splits are the base's; a stream is neither a merge table nor a child of one."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from mergekit_partitioned import PartitionedConnectorFactory

from mergekit import plugins
from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import (
    ColumnMetadata,
    ConnectorTableMetadata,
    MonotonicColumn,
    SchemaTableName,
    StreamDefinition,
)
from tests.journal.journal_harness import JournalHarness

COLS = [("rowtime", pa.timestamp("us", tz="UTC")), ("product", pa.int64())]
ROWTIME = StreamDefinition(monotonic=[MonotonicColumn(name="rowtime")], slack=dt.timedelta(minutes=1))


def at(minute: int) -> dt.datetime:
    return dt.datetime(2015, 2, 15, 10, minute, tzinfo=dt.UTC)


@pytest.fixture
def lake(tmp_path):
    warehouse = str(tmp_path / "wh")
    connector = PartitionedConnectorFactory().create(
        catalog_name="lake", config={"warehouse": warehouse}, context=plugins.connector_context()
    )
    yield JournalHarness.over(connector, warehouse)
    connector.shutdown()


def test_a_stream_is_delegated_to_the_base_journal(lake):
    lake.create_stream("orders", COLS, ROWTIME)
    meta = lake.metadata.get_table_metadata(session=lake.session(), table_handle=lake.handle("orders"))
    assert meta.stream == ROWTIME
    lake.insert("orders", {"rowtime": at(5), "product": 1}, {"rowtime": at(2), "product": 2})
    lake.insert("orders", {"rowtime": at(4), "product": 3})  # within the slack of 10:05
    with pytest.raises(MergekitError, match="Column 'ROWTIME' of stream 'ORDERS' is monotonic") as err:
        lake.insert("orders", {"rowtime": at(3), "product": 4})
    assert err.value.code == ErrorCode.CONSTRAINT_VIOLATION
    commits = lake.stream_commits("orders")
    assert [(c.version, c.row_count, c.low["rowtime"], c.high["rowtime"]) for c in commits] == [
        (1, 2, at(2), at(5)),
        (2, 1, at(4), at(4)),
    ]
    assert [r["product"] for r in lake.stream_rows("orders", None, 2)] == [2, 1, 3]
    assert [r["product"] for r in lake.stream_rows("orders", 1, 2)] == [3]
    lake.metadata.drop_table(session=lake.session(), table_handle=lake.handle("orders"))
    assert (
        lake.metadata.get_table_handle(session=lake.session(), table=SchemaTableName(schema="default", table="orders"))
        is None
    )


def test_a_stream_is_neither_a_merge_table_nor_a_child_of_one(lake):
    columns = [ColumnMetadata(name=n, type=t) for n, t in COLS]
    with pytest.raises(MergekitError, match="cannot be a stream") as err:
        lake.metadata.create_merge_table(
            session=lake.session(),
            table_metadata=ConnectorTableMetadata(
                table=SchemaTableName(schema="default", table="m"), columns=columns, stream=ROWTIME
            ),
            scheme=None,
            ignore_existing=False,
        )
    assert err.value.code == ErrorCode.NOT_SUPPORTED
    lake.metadata.create_merge_table(
        session=lake.session(),
        table_metadata=ConnectorTableMetadata(table=SchemaTableName(schema="default", table="m"), columns=columns),
        scheme=None,
        ignore_existing=False,
    )
    lake.create_stream("orders", COLS, ROWTIME)
    with pytest.raises(MergekitError, match="stream 'default.orders' cannot be part of MERGE TABLE") as err:
        lake.metadata.set_table_partition(
            session=lake.session(),
            merge_table=SchemaTableName(schema="default", table="m"),
            child=SchemaTableName(schema="default", table="orders"),
            bounds=None,
            bound_values=None,
            replace=False,
            check_rows=lambda child, levels: [0 for _ in levels],
        )
    assert err.value.code == ErrorCode.NOT_SUPPORTED
    with pytest.raises(MergekitError, match="'M' is not a stream") as err:
        lake.stream_commits("m")
    assert err.value.code == ErrorCode.STREAM_NOT_ALLOWED
