"""A class-data archive for the Spark driver JVMs mergekit starts: an opt-in cache that takes about 3 s off each
cold start (docs/performance.md, "The test suite, 2026-12-07").

``MERGEKIT_JVM_CLASS_CACHE=<directory>`` turns it on. The first JVM that mergekit starts under it finds no archive
and starts, in the background, ``python -m mergekit.execution.jvm_classes <archive>``. That process starts a Spark
driver that records the classes it loads (``-XX:ArchiveClassesAtExit``), runs a few statements, and waits for the
JVM to exit, which is when the JVM writes the archive. It then checks the archive in a second JVM started with
``-Xshare:on``, which fails rather than runs without it. Only then is the archive renamed to its final name. Later
JVMs map it (``-XX:SharedArchiveFile``): the classes Spark loads at start are read ready-made, not parsed and
verified again.

Only a complete, checked archive is ever used: on JDK 17 a truncated one crashes the JVM (SIGBUS) instead of being
ignored. An archive belongs to one Java and one pyspark install (its name holds a hash of both). A session whose
configuration adds jars or JVM class-sharing options of its own gets none. At most one background process runs at a
time (a lock file). The archive is about 180 MB; delete the directory to drop it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping

__all__ = ["CACHE_VARIABLE", "archive_options"]

CACHE_VARIABLE = "MERGEKIT_JVM_CLASS_CACHE"
_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
_OWN_CLASSPATH = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")
_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
_STALE_LOCK_S = 1800


def archive_options(settings: Mapping[str, str]) -> list[str]:
    """The JVM options that map the archive, or none: the cache is off, the session brings jars or class-sharing
    options of its own, or no archive is made yet (one is then started in the background)."""
    root = os.environ.get(CACHE_VARIABLE)
    if not root or any(settings.get(key) for key in _OWN_CLASSPATH):
        return []
    if any(flag in settings.get(_JAVA_OPTIONS_KEY, "") for flag in ("SharedArchiveFile", "Xshare", "ArchiveClasses")):
        return []
    path = archive_path(root)
    if path is None:
        return []
    if os.path.isfile(path):
        return [f"-XX:SharedArchiveFile={path}", *_QUIET]
    _start_making(path)
    return []


def archive_path(root: str) -> str | None:
    """Where the archive of this Java and this pyspark install lives; None without a Java to name."""
    java = _java()
    if java is None:
        return None
    import pyspark  # (its location only: the session about to start imports it anyway)

    jars = os.path.join(os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__), "jars")  # the launcher's
    names = sorted(os.listdir(jars)) if os.path.isdir(jars) else []
    stat = os.stat(java)
    identity = "\n".join([java, str(stat.st_size), str(stat.st_mtime_ns), jars, *names])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return os.path.join(root, f"spark-driver-{digest}.jsa")


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.isfile(found) else None


def maker_running(path: str) -> bool:
    """Whether a process is making the archive at ``path``: its lock file exists, is younger than
    ``_STALE_LOCK_S`` and does not name a maker that has died (a killed maker cannot remove its lock). A stale lock
    is removed."""
    lock = path + ".lock"
    try:
        with open(lock) as f:
            holder = f.read().strip()
        stale = time.time() - os.path.getmtime(lock) > _STALE_LOCK_S
    except OSError:
        return False
    if not stale and holder.isdigit():
        stale = not _alive(int(holder))
    if stale:
        try:
            os.unlink(lock)
        except OSError:
            pass
        return False
    return True


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed and not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, another user's
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc: it answered the signal


def _start_making(path: str) -> None:
    """Start the background process that makes the archive, unless one runs (:func:`maker_running`)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lock = path + ".lock"
    if maker_running(path):
        return
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except OSError:
        return  # another process is making it
    env = {k: v for k, v in os.environ.items() if k not in (CACHE_VARIABLE, "MERGEKIT_SPARK_CONF")}
    try:
        maker = subprocess.Popen(
            [sys.executable, "-m", __name__, path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not the caller's: a Ctrl-C at the prompt does not stop it
            env=env,
        )
    except OSError:
        os.close(fd)
        os.unlink(lock)
        return
    os.write(fd, str(maker.pid).encode())  # who holds the lock: a lock whose maker died is stale at once
    os.close(fd)


_WORKLOAD = [
    "CREATE TABLE t (id BIGINT, v VARCHAR, PRIMARY KEY (id))",
    "INSERT INTO t SELECT x, CAST(x AS VARCHAR) FROM UNNEST(sequence(1, 100)) AS u(x)",
    "MERGE INTO t USING (SELECT x AS id FROM UNNEST(sequence(90, 110)) AS u(x)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = 'm' WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'n')",
    "SELECT v, count(*) FROM t GROUP BY v ORDER BY v",
]


def _run_driver(java_options: str, warehouse: str) -> int:
    """A Spark driver with ``java_options`` running the workload in ``warehouse``, in a child process; its JVM's
    exit status (the child waits for the JVM, which writes an archive as it exits)."""
    code = (
        "import sys\n"
        "from mergekit import Engine\n"
        "from mergekit.execution import jvm_classes\n"
        "from mergekit.execution.session import local_session\n"
        "spark = local_session(conf={'spark.driver.extraJavaOptions': sys.argv[1]})\n"
        "engine = Engine(spark=spark, catalogs={'lake': {'connector': 'journal', 'warehouse': sys.argv[2]}})\n"
        "engine.execute(\"SET SESSION driver_tier = 'off'\")\n"
        "for statement in jvm_classes._WORKLOAD:\n"
        "    engine.execute(statement)\n"
        "engine.close()\n"
        "spark.stop()\n"
        "from pyspark import SparkContext\n"
        "jvm = SparkContext._gateway.proc\n"
        "jvm.stdin.close()\n"  # the JVM exits when its standard input ends
        "sys.exit(jvm.wait(timeout=600))\n"
    )
    return subprocess.run([sys.executable, "-c", code, java_options, warehouse], timeout=900).returncode


def make_archive(path: str) -> bool:
    """Record, check and install the archive at ``path``; whether it was installed."""
    partial = f"{path}.{os.getpid()}.partial"
    try:
        with tempfile.TemporaryDirectory(prefix="mergekit-jvm-classes-") as work:
            recorded = _run_driver(f"-XX:ArchiveClassesAtExit={partial} {' '.join(_QUIET)}", work + "/a")
            if recorded != 0 or not os.path.isfile(partial):
                return False
            # -Xshare:on: the JVM refuses to start without the archive, so a run that succeeds used it
            if _run_driver(f"-XX:SharedArchiveFile={partial} -Xshare:on {' '.join(_QUIET)}", work + "/b") != 0:
                return False
        os.replace(partial, path)
        return True
    finally:
        for leftover in (partial, path + ".lock"):
            try:
                os.unlink(leftover)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(0 if make_archive(sys.argv[1]) else 1)
