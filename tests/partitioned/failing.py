"""A journal connector whose merge sinks fail on a marker value: how tests make one child sink fail
mid-statement. Shipped to executors by value (see ``register``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mergekit.spi import Connector, ConnectorMergeSink, ConnectorPageSinkProvider, ConnectorSession


def register() -> None:
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


class FailingSink(ConnectorMergeSink):
    def __init__(self, inner: ConnectorMergeSink, marker: str) -> None:
        self.inner = inner
        self.marker = marker

    def store_merged_rows(self, page: pa.RecordBatch) -> None:
        self.inner.store_merged_rows(page)  # the rows are staged first: the failure comes mid-statement
        for column in page.columns:
            if pa.types.is_string(column.type) and pc.any(pc.equal(column, self.marker)).as_py():
                raise RuntimeError(f"child sink asked to fail on {self.marker!r}")

    def finish(self) -> Sequence[Any]:
        return self.inner.finish()

    def abort(self) -> None:
        self.inner.abort()


class FailingSinkProvider(ConnectorPageSinkProvider):
    def __init__(self, inner: ConnectorPageSinkProvider, marker: str) -> None:
        self.inner = inner
        self.marker = marker

    def create_merge_sink(self, *, session: ConnectorSession, merge_handle: Any, sink_id: int) -> ConnectorMergeSink:
        return FailingSink(
            self.inner.create_merge_sink(session=session, merge_handle=merge_handle, sink_id=sink_id), self.marker
        )


class FailingJournal(Connector):
    """Everything from a real journal connector, except sinks that fail on ``marker``."""

    def __init__(self, journal: Connector, marker: str) -> None:
        self.journal = journal
        self.marker = marker

    def get_metadata(self):  # type: ignore[no-untyped-def]
        return self.journal.get_metadata()

    def get_split_manager(self):  # type: ignore[no-untyped-def]
        return self.journal.get_split_manager()

    def get_page_source_provider(self):  # type: ignore[no-untyped-def]
        return self.journal.get_page_source_provider()

    def get_page_sink_provider(self) -> ConnectorPageSinkProvider:
        return FailingSinkProvider(self.journal.get_page_sink_provider(), self.marker)

    def get_procedures(self) -> Mapping[str, Any]:
        return {}

    def shutdown(self) -> None:
        self.journal.shutdown()
