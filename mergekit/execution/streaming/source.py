"""The Spark Structured Streaming source of continuous runs and streaming jobs: the streams' *commits*.

Spark's micro-batch engine decides when a batch runs, records each batch's offsets in its checkpoint before the
batch runs and its completion after, and replays an unfinished batch with the same id and offsets after a
restart. mergekit uses exactly that, and nothing more: the source (a Python ``DataSource`` named
``mergekit_commits``) reads no rows. Its offsets are the streams' commit versions (``{"versions": [v0, v1,
...]}``, one per stream of the query, -1 before the first commit), and each micro-batch is one row per stream
that has new commits: ``(stream, after, up_to)``. The batch itself (``foreachBatch``, on the driver) reads the
rows of those commits through the connector, as a batch query (``mergekit.execution.streaming.continuous``).

Spark runs the reader's offset methods in a Python worker it starts for the source, not in the driver's
process: the catalogs' configurations (from which the worker creates its own connectors), the sessions and the
table handles travel there pickled in the ``payload`` option, and each call asks the connector's catalog
(``get_stream_commits``) afresh. A catalog given to the engine as a connector object works only if that object
pickles; a connector whose state lives in the driver's memory refuses streams in the first place
(``mergekit.spi._streams``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

__all__ = ["SOURCE_NAME", "CommitsSource", "encode_streams"]

SOURCE_NAME = "mergekit_commits"

#: One stream of a query, as the source needs it: (catalog name, the catalog's configuration or its connector
#: when it is picklable, connector session, table handle).
StreamSpec = tuple[str, Any, Any, Any]


def encode_streams(streams: Sequence[StreamSpec]) -> str:
    """The ``payload`` option for :class:`CommitsSource`."""
    return base64.b64encode(cloudpickle.dumps(list(streams))).decode("ascii")


def _decode(payload: str) -> list[StreamSpec]:
    return list(cloudpickle.loads(base64.b64decode(payload)))


class CommitsSource(DataSource):
    """``spark.readStream.format("mergekit_commits").option("payload", encode_streams(...)).load()``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return "stream INT, after BIGINT, up_to BIGINT"

    def simpleStreamReader(self, schema: Any) -> SimpleDataSourceStreamReader:
        return _CommitsReader(_decode(self.options["payload"]), int(self.options.get("max_commits") or 0))


class _CommitsReader(SimpleDataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets ``{"versions": [...]}``; a batch is one row per stream with commits after the start offset."""

    def __init__(self, streams: list[StreamSpec], max_commits: int = 0) -> None:
        self.streams = streams
        self.max_commits = max_commits  # at most this many commits of each stream per batch (0: no limit)
        self.target: list[int] | None = None  # Trigger.AvailableNow: the latest versions when the query started
        self._connectors: dict[str, Any] = {}

    def _connector(self, catalog: str, spec: Any) -> Any:
        if catalog not in self._connectors:
            from mergekit.catalogs import connector_from_spec

            self._connectors[catalog] = connector_from_spec(catalog, spec)
        return self._connectors[catalog]

    def _latest(self, begin: list[int] | None = None) -> list[int]:
        """Each stream's latest version (after ``begin``, at most ``max_commits`` commits after it)."""
        out = []
        for i, (catalog, spec, session, handle) in enumerate(self.streams):
            connector = self._connector(catalog, spec)
            after = begin[i] if begin is not None and begin[i] >= 0 else None
            commits = connector.get_metadata().get_stream_commits(session=session, table_handle=handle, after=after)
            if begin is not None and self.max_commits > 0:
                commits = commits[: self.max_commits]
            out.append(commits[-1].version if commits else (begin[i] if begin is not None else -1))
        return out

    def initialOffset(self) -> dict:
        return {"versions": [-1] * len(self.streams)}

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._latest()

    def read(self, start: dict) -> tuple[Iterator[tuple], dict]:
        begin = list(start["versions"])
        latest = self._latest(begin)
        if self.target is not None:
            latest = [min(a, b) for a, b in zip(latest, self.target, strict=True)]
        end = [max(b, e) for b, e in zip(begin, latest, strict=True)]
        return iter(self._rows(begin, end)), {"versions": end}

    def readBetweenOffsets(self, start: dict, end: dict) -> Iterator[tuple]:
        return iter(self._rows(list(start["versions"]), list(end["versions"])))

    @staticmethod
    def _rows(begin: list[int], end: list[int]) -> list[tuple]:
        return [(i, b, e) for i, (b, e) in enumerate(zip(begin, end, strict=True)) if e > b]

    def commit(self, end: dict) -> None:
        pass  # the log is the connector's; nothing to release
