"""A driver that dies mid-MERGE, for test_staging_cleanup.py. Run as a script:

    python crash_worker.py CATALOG_URI MARKER

It runs a MERGE into the table ``customers`` (updates of its ids 1-500 and inserts of 500 new ones) through an
Engine with its own local Spark session and a sqldb catalog. Every task stages its rows; then, on the driver,
``finish_merge`` announces the staging table in MARKER (JSON: its name and this process's pid) and sleeps instead
of applying it, so the test can SIGKILL the whole process group (driver, JVM, Spark's Python workers) between the
staging and the commit.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import mergekit_sqldb._metadata as sqldb_metadata

from mergekit import Engine
from mergekit.execution.session import local_session


def _hang(catalog: Any, staging: Any, fragments: Any) -> int:
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"stage": staging.stage, "pid": os.getpid(), "fragments": len(fragments)}, f)
    os.replace(tmp, sys.argv[2])
    while True:  # until killed
        time.sleep(1)


def main(uri: str) -> None:
    sqldb_metadata.apply_staged = _hang  # the driver's commit step (finish_merge) never applies
    spark = local_session(master="local[2]", shuffle_partitions=2)
    engine = Engine(spark=spark, catalogs={"db": {"connector": "sqldb", "uri": uri}}, default_catalog="db")
    source = spark.range(1, 1001).selectExpr("id * 2 - 1 AS id", "concat('new', id) AS name")
    (
        engine.merge_into("customers", source=source, on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({"name": "s.name"})
        .when_not_matched_insert({"id": "s.id", "name": "s.name"})
        .execute()
    )
    print("NOT KILLED")


if __name__ == "__main__":
    main(sys.argv[1])
