"""A MERGE whose first sink attempt dies, in a Spark session that retries failed tasks. Run as a script:

    python retry_worker.py DATABASE_URI MARKER

``local[2,2]``: two cores, a task may fail once. The catalog's fault injection makes the first sink that reaches
its first page create MARKER and kill its Python worker (``os._exit``): that attempt's COPY is never committed;
Spark retries the task, whose sink finds MARKER and stages normally. Prints the result as JSON.
"""

from __future__ import annotations

import json
import sys

from mergekit import Engine
from mergekit.execution.session import local_session


def main(uri: str, marker: str) -> None:
    spark = local_session(master="local[2,2]", shuffle_partitions=2)
    catalog = {"connector": "sqldb", "uri": uri, "fault_injection": f"sink_exit:1:{marker}", "batch_rows": 5000}
    engine = Engine(spark=spark, catalogs={"pg": catalog})
    source = spark.range(1, 50_001).selectExpr("id", "concat('n', id) AS name", "CAST(1 AS DECIMAL(12,2)) AS b")
    result = (
        engine.merge_into("pg.public.customers", source=source, on="t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({"balance": "t.balance + s.b"})
        .when_not_matched_insert({"id": "s.id", "name": "s.name", "balance": "s.b"})
        .execute()
    )
    engine.close()
    print(json.dumps({"row_count": result.row_count}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
