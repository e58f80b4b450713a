"""A writer process for test_concurrency.py: increments a counter row ``rounds`` times, retrying on conflict.

Usage: python concurrency_worker.py WAREHOUSE KEY ROUNDS START_FILE. Prints the number of conflicts seen.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))  # tests/journal, for the harness

from journal_harness import UPDATE, JournalHarness

from mergekit.errors import TransactionConflictError


def main() -> None:
    warehouse, key, rounds, start_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    lake = JournalHarness(warehouse, version_type="bigint")
    while not os.path.exists(start_file):
        time.sleep(0.001)
    conflicts = 0
    done = 0
    while done < rounds:
        handle = lake.handle("counters")
        rows, _ = lake.scan(handle, ["id", "n"])
        current = next(r["n"] for r in rows if r["id"] == key)
        mh = lake.begin("counters", handle, update_columns=["n"])
        fragments = lake.write(mh, [(UPDATE, {"id": key, "n": current + 1}, {"id": key})])
        try:
            lake.finish(mh, fragments)
            done += 1
        except TransactionConflictError:
            conflicts += 1
    print(conflicts)


if __name__ == "__main__":
    main()
