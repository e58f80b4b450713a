"""``MERGEKIT_JVM_CLASS_CACHE`` (mergekit/execution/jvm_classes.py): a class-data archive for the driver JVMs
mergekit starts, made once in the background, checked before it is installed, and mapped by later JVMs."""

from __future__ import annotations

import os
import subprocess
import sys

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
    os.unlink(archive + ".lock")

    env = {k: v for k, v in os.environ.items() if k != jvm_classes.CACHE_VARIABLE}
    made = subprocess.run(
        [sys.executable, "-m", "mergekit.execution.jvm_classes", archive],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert os.listdir(root) == [os.path.basename(archive)]  # installed; no lock, no partial file left
    assert jvm_classes.archive_options({})[0] == f"-XX:SharedArchiveFile={archive}"
    # a session that brings jars or class-sharing options of its own gets none
    assert jvm_classes.archive_options({"spark.jars": "/x.jar"}) == []
    assert jvm_classes.archive_options({"spark.driver.extraJavaOptions": "-Xshare:off"}) == []

    used = _new_process({**env, jvm_classes.CACHE_VARIABLE: root}, archive)
    assert used.returncode == 0, used.stderr
    assert used.stdout.splitlines() == ["mapped", "[('A',)]"]
    assert used.stderr == ""  # nothing of class sharing printed
    without = _new_process(env, archive)
    assert without.stdout.splitlines() == ["not mapped", "[('A',)]"], without.stderr
