"""A writer process that dies on purpose, for test_crash.py. Run as a script:

    python crash_worker.py MODE WAREHOUSE MARKER_DIR ROWS

It runs a large MERGE (ROWS source rows: updates of the table's existing ids and inserts of new ones) through an
Engine with its own local Spark session and the journal connector, except for the point where it dies:

* ``sink_exit``: the merge sink's Python worker process exits (``os._exit``) after writing a few pages; the driver
  survives, the statement fails, and the worker prints ``FAILED <error code>``;
* ``hang_mid_write``: the sink writes a few pages, announces its file in MARKER_DIR/writing.json and then writes
  slowly, so the test can SIGKILL the whole process group (driver, JVM, Python workers) mid-write;
* ``hang_before_commit``: every sink finishes; ``finish_merge`` announces the fragments in
  MARKER_DIR/finished.json and sleeps, so the test can SIGKILL the driver between the files and the commit.

The classes live in this script (``__main__``), so Spark's cloudpickle ships them to its Python workers by value.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from mergekit_journal import JournalConnector, JournalMetadata, parse_config
from mergekit_journal._catalog import open_catalog
from mergekit_journal._files.sink import JournalMergeSink, JournalPageSinkProvider

PAGES_BEFORE_CRASH = 3


def _announce(marker_dir: str, name: str, payload: Any) -> None:
    tmp = os.path.join(marker_dir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(payload, f)
    os.replace(tmp, os.path.join(marker_dir, name))


class CrashingSink(JournalMergeSink):
    def __init__(self, warehouse: str, handle: Any, sink_id: int, mode: str, marker_dir: str) -> None:
        super().__init__(warehouse, handle, sink_id)
        self._mode = mode
        self._marker_dir = marker_dir
        self._pages = 0

    def store_merged_rows(self, page: Any) -> None:
        super().store_merged_rows(page)
        self._flush()  # every page on disk at once (the sink buffers row groups): a crash leaves a partial file
        self._pages += 1
        if self._pages == PAGES_BEFORE_CRASH:
            path = os.path.join(self._warehouse, self._relpath)
            if self._mode == "sink_exit":
                _announce(self._marker_dir, "dying.json", {"path": path, "pid": os.getpid()})
                os._exit(17)  # the sink's process dies mid-write: no finish, no abort, no cleanup
            if self._mode == "hang_mid_write":
                _announce(self._marker_dir, "writing.json", {"path": path, "pid": os.getpid()})
        if self._mode == "hang_mid_write" and self._pages >= PAGES_BEFORE_CRASH:
            time.sleep(0.5)


class CrashingSinkProvider(JournalPageSinkProvider):
    def __init__(self, warehouse: str, mode: str, marker_dir: str) -> None:
        super().__init__(warehouse)
        self.mode = mode
        self.marker_dir = marker_dir

    def create_merge_sink(self, *, session: Any, merge_handle: Any, sink_id: int) -> Any:
        return CrashingSink(self.warehouse, merge_handle, sink_id, self.mode, self.marker_dir)


class HangingMetadata(JournalMetadata):
    marker_dir = ""

    def finish_merge(self, *, session: Any, merge_handle: Any, fragments: Any) -> None:
        paths = [os.path.join(self.config.warehouse, f.path) for f in fragments]
        _announce(self.marker_dir, "finished.json", {"paths": paths, "pid": os.getpid()})
        time.sleep(600)  # killed here, before anything is committed
        super().finish_merge(session=session, merge_handle=merge_handle, fragments=fragments)


class CrashConnector(JournalConnector):
    def __init__(self, *, catalog_name: str, config: Any, mode: str, marker_dir: str) -> None:
        super().__init__(catalog_name=catalog_name, config=config)
        self._provider = CrashingSinkProvider(config.warehouse, mode, marker_dir)
        self._hanging = None
        if mode == "hang_before_commit":
            self._hanging = HangingMetadata(
                catalog_name=catalog_name, config=config, catalog=open_catalog(config.catalog_uri)
            )
            self._hanging.marker_dir = marker_dir

    def get_metadata(self) -> JournalMetadata:
        return self._hanging if self._hanging is not None else super().get_metadata()

    def get_page_sink_provider(self) -> JournalPageSinkProvider:
        return self._provider


def main() -> None:
    mode, warehouse, marker_dir, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    from mergekit import Engine
    from mergekit.errors import MergekitError
    from mergekit.execution.session import local_session

    # pages of 10k rows, so the sink sees several pages (PAGES_BEFORE_CRASH) before it dies
    spark = local_session(
        master="local[1]", shuffle_partitions=1, conf={"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"}
    )
    config = parse_config({"warehouse": warehouse, "version_type": "bigint"})
    engine = Engine(
        spark=spark,
        catalogs={"lake": CrashConnector(catalog_name="lake", config=config, mode=mode, marker_dir=marker_dir)},
    )
    engine.register_dataframe(
        "big",
        spark.range(rows).selectExpr("id + 500 AS id", "CAST(id % 7 AS INT) AS grp", "concat('new-', id) AS name"),
    )
    try:
        engine.execute(
            "MERGE INTO t USING big s ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
            "WHEN NOT MATCHED THEN INSERT (id, grp, name) VALUES (s.id, s.grp, s.name)"
        )
        print("COMMITTED", flush=True)
    except MergekitError as exc:
        print(f"FAILED {exc.code.name}", flush=True)
    engine.close()
    spark.stop()


if __name__ == "__main__":
    main()
