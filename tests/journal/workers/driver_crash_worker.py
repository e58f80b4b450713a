"""A driver-tier writer killed on purpose, for test_crash_driver.py. Run as a script:

    python driver_crash_worker.py MODE WAREHOUSE MARKER_DIR

It runs one small statement through ``Engine.local`` on the driver tier (no JVM: the test starts it with Java
pointed at nothing) and stops where the test kills it (SIGKILL):

* ``hang_before_commit``: a 1-row MERGE of VALUES; ``finish_merge`` announces the files the statement wrote in
  MARKER_DIR/finished.json and sleeps, before anything is committed;
* ``hang_in_compaction``: an INSERT whose commit makes an automatic compaction due; the compaction writes its file,
  announces it in MARKER_DIR/compacting.json and sleeps before its catalog transaction (the INSERT is committed).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from mergekit_journal import _commit, _compaction


def _announce(marker_dir: str, name: str, payload: Any) -> None:
    tmp = os.path.join(marker_dir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(payload, f)
    os.replace(tmp, os.path.join(marker_dir, name))


def main() -> None:
    mode, warehouse, marker_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    from mergekit import Engine

    if mode == "hang_before_commit":
        finish = _commit.CommitMetadata.finish_merge

        def hanging_finish(self: Any, *, session: Any, merge_handle: Any, fragments: Any) -> None:
            paths = [os.path.join(warehouse, f.path) for f in fragments]
            _announce(marker_dir, "finished.json", {"paths": paths, "pid": os.getpid()})
            time.sleep(600)  # killed here, before anything is committed
            finish(self, session=session, merge_handle=merge_handle, fragments=fragments)

        _commit.CommitMetadata.finish_merge = hanging_finish  # type: ignore[method-assign]
        sql = (
            "MERGE INTO t USING (VALUES (1, 'merged')) AS s(id, name) ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)"
        )
    else:
        commit = _compaction._commit

        def hanging_commit(metadata: Any, h: Any, files: Any, written: Any, *args: Any) -> int:
            paths = [os.path.join(warehouse, w["path"]) for w in written]
            _announce(marker_dir, "compacting.json", {"paths": paths, "pid": os.getpid()})
            time.sleep(600)  # killed here: the compacted file is written, not committed
            return commit(metadata, h, files, written, *args)

        _compaction._commit = hanging_commit
        sql = "INSERT INTO t VALUES (100, 'last')"
    engine = Engine.local(warehouse)
    engine.execute(sql)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
