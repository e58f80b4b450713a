"""The PySpark daemon of the sessions mergekit starts (``spark.python.daemon.module``, :func:`local_session`).

PySpark starts one daemon per executor and interpreter, and the daemon forks a Python worker for each task that
finds no idle one (a worker is not reused after a task that raised, and idle workers are stopped after a minute).
Every forked worker then imports what the task's functions need: pyarrow, pandas and mergekit's execution modules,
about 0.5-0.9 s of CPU each. This daemon imports them once, before it forks, so each worker starts with them
loaded; it is PySpark's own daemon otherwise.

PySpark's daemon imports its worker module only after the fork because pandas and pyarrow may start threads on
import, and a fork copies only the thread that calls it. The two they start (OpenBLAS's, jemalloc's background
thread) are stopped and restarted around a fork by those libraries' own handlers; the daemon itself never uses them.
An import that fails here is left to the worker, which reports it as usual.

A reused worker runs a full garbage collection after every task (``gc.collect()`` in PySpark's daemon). With these
modules loaded that collection walked every object they hold, about 50 ms of CPU per task, most of a worker's CPU
on small statements. The daemon freezes what it has loaded (``gc.freeze()``, Python's own answer for servers that
fork): the collections of its workers skip those objects, which live as long as the process anyway.
"""

from __future__ import annotations

import gc


def _preload() -> None:
    try:
        import pyspark.worker  # noqa: F401  (pyspark.sql's Arrow serializers, pandas, pyarrow)

        import mergekit.engine  # noqa: F401  (every module mergekit's tasks unpickle functions from)
    except Exception:  # the worker imports them itself, and reports what fails
        pass
    gc.collect()  # what the imports left unreachable is freed, not frozen
    gc.freeze()


if __name__ == "__main__":
    _preload()
    from pyspark.daemon import manager

    manager()
