"""``MERGEKIT_JVM_CLASS_CACHE`` (mergekit/execution/jvm_classes.py): a class-data archive for the driver JVMs
mergekit starts, made once in the background, checked before it is installed, and mapped by later JVMs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from mergekit.execution import jvm_classes

# a new process: a session mergekit starts under the cache; prints whether its JVM maps the archive, then a result
_NEW_PROCESS = """
import sys
from pyspark import SparkContext
from mergekit import Engine
from mergekit.execution.session import local_session
spark = local_session()
maps = open(f"/proc/{SparkContext._gateway.proc.pid}/maps").read()
print("mapped" if sys.argv[1] in maps else "not mapped")
engine = Engine(spark=spark, catalogs={"lake": {"connector": "memory"}})
print(engine.execute("SELECT upper('a') AS u").rows())
"""


def _new_process(env: dict, archive: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _NEW_PROCESS, archive], env=env, capture_output=True, text=True, timeout=300
    )


def test_the_archive_is_made_checked_and_then_mapped_by_new_jvms(tmp_path, monkeypatch) -> None:
    run_root = os.environ[jvm_classes.CACHE_VARIABLE]  # the test run's cache (tests/conftest.py)
    root = str(tmp_path / "classes")
    archive = jvm_classes.archive_path(root)
    assert archive is not None and archive.startswith(root)
    os.makedirs(root)
    monkeypatch.setenv(jvm_classes.CACHE_VARIABLE, root)
    # A maker holds the lock: nothing is mapped, and no second maker starts (no .partial file appears).
    open(archive + ".lock", "w").close()
    assert jvm_classes.archive_options({}) == []
    assert sorted(os.listdir(root)) == [os.path.basename(archive) + ".lock"]
    # a half-written archive is never mapped: only the installed name is
    with open(archive + ".123.partial", "wb") as partial:
        partial.write(b"\0" * 1024)
    assert jvm_classes.archive_options({}) == []
    os.unlink(archive + ".123.partial")
    # the lock names its maker: held while that process runs, stale (and removed) once it has died unseen
    with open(archive + ".lock", "w") as lock:
        lock.write(str(os.getpid()))
    assert jvm_classes.maker_running(archive)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with open(archive + ".lock", "w") as lock:
        lock.write(dead.stdout.strip())
    assert not jvm_classes.maker_running(archive)
    assert os.listdir(root) == []

    # The making is the background maker of the test run's own archive (tests/conftest.py turns the cache on for
    # the run; its first JVM started the maker): the path every user of the cache takes. Waited for here, or
    # started here when the run has none yet. Making a second archive in this test cost 40 s of the run.
    monkeypatch.setenv(jvm_classes.CACHE_VARIABLE, run_root)
    archive = jvm_classes.archive_path(run_root)
    deadline, started = time.monotonic() + 900, False
    while not os.path.isfile(archive):
        if not jvm_classes.maker_running(archive) and not os.path.isfile(archive):
            assert not started, "the background maker ended without installing an archive"
            assert jvm_classes.archive_options({}) == []  # no archive yet: starts the maker (takes the lock)
            started = True
        assert time.monotonic() < deadline, "the background maker made no archive in 15 minutes"
        time.sleep(1)
    assert os.path.getsize(archive) > 10_000_000  # the archive of a Spark driver's classes: about 180 MB
    left = [name for name in os.listdir(run_root) if name.startswith(os.path.basename(archive) + ".")]
    assert left == [], left  # installed: no lock, no partial file left
    assert jvm_classes.archive_options({})[0] == f"-XX:SharedArchiveFile={archive}"
    # a session that brings jars or class-sharing options of its own gets none
    assert jvm_classes.archive_options({"spark.jars": "/x.jar"}) == []
    assert jvm_classes.archive_options({"spark.driver.extraJavaOptions": "-Xshare:off"}) == []

    env = {k: v for k, v in os.environ.items() if k != jvm_classes.CACHE_VARIABLE}
    used = _new_process({**env, jvm_classes.CACHE_VARIABLE: run_root}, archive)
    assert used.returncode == 0, used.stderr
    assert used.stdout.splitlines() == ["mapped", "[('A',)]"]
    assert used.stderr == ""  # nothing of class sharing printed
    without = _new_process(env, archive)
    assert without.stdout.splitlines() == ["not mapped", "[('A',)]"], without.stderr
