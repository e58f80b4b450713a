"""A writer process for test_engine_processes.py: one Engine with its own local Spark session, driven over a pipe.

The process is started once (``multiprocessing`` 'spawn') and serves rounds: for each round it waits on the shared
start barrier, runs its SQL statement and answers with what happened. With ``pin`` set, the statement's commit
(``finish_merge``) first waits on the shared commit barrier, so both processes' statements have taken their
snapshot before either commits: their overlap in time is certain, not left to scheduling. A statement that fails
with TRANSACTION_CONFLICT is retried (without the pin), as an application would.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from mergekit_journal import JournalConnector, JournalMetadata, parse_config
from mergekit_journal._catalog import open_catalog


class PinnedMetadata(JournalMetadata):
    """The journal's own metadata; ``pin`` (a barrier) holds the next commit until the other writer reaches its own."""

    pin: Any = None

    def finish_merge(self, **kwargs: Any) -> None:
        pin, self.pin = self.pin, None
        if pin is not None:
            pin.wait(timeout=60)
        super().finish_merge(**kwargs)


class PinnedConnector(JournalConnector):
    def __init__(self, *, catalog_name: str, config: Any) -> None:
        super().__init__(catalog_name=catalog_name, config=config)
        self.pinned = PinnedMetadata(catalog_name=catalog_name, config=config, catalog=open_catalog(config.catalog_uri))

    def get_metadata(self) -> PinnedMetadata:
        return self.pinned

    def shutdown(self) -> None:
        self.pinned.catalog.close()
        super().shutdown()


def serve(conn: Any, warehouse: str, start: Any, commit: Any) -> None:
    from mergekit import Engine
    from mergekit.errors import TransactionConflictError
    from mergekit.execution.session import local_session

    try:
        spark = local_session(master="local[1]", shuffle_partitions=1)
        connector = PinnedConnector(
            catalog_name="lake", config=parse_config({"warehouse": warehouse, "version_type": "bigint"})
        )
        engine = Engine(spark=spark, catalogs={"lake": connector})
        engine.execute("SELECT count(*) FROM t").rows()  # warm up the Python workers before the first round
        conn.send(("ready", None))
        while True:
            message = conn.recv()
            if message[0] == "stop":
                break
            _, sql, pin = message
            outcomes: list[str] = []
            start.wait(timeout=60)
            t0 = time.perf_counter()
            connector.pinned.pin = commit if pin else None
            while True:
                try:
                    engine.execute(sql)
                    outcomes.append("commit")
                    break
                except TransactionConflictError:
                    outcomes.append("conflict")
                    if len(outcomes) > 10:
                        break
            conn.send(("done", {"outcomes": outcomes, "seconds": time.perf_counter() - t0}))
        engine.close()
        spark.stop()
    except BaseException:  # the test reports it
        conn.send(("error", traceback.format_exc()))
