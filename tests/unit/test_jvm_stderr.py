"""What a user sees of the JVM's standard error (mergekit/execution/jvm_stderr.py): PySpark's worker daemon prints
a traceback whenever a task stops reading early (a ``LIMIT`` on a connector table, read by Python workers) or drops
a worker before its task; those are left out, every other line and traceback is shown whole."""

from __future__ import annotations

from mergekit.execution.jvm_stderr import StderrFilter

ZIP = "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark"

#: as a CLI user saw it after `SELECT * FROM lite.main.big LIMIT 3` (the task stopped reading: broken pipe)
BROKEN_PIPE = f"""Traceback (most recent call last):
  File "{ZIP}/daemon.py", line 264, in manager
  File "{ZIP}/daemon.py", line 95, in worker
BrokenPipeError: [Errno 32] Broken pipe
"""
#: as `mergekit demo` printed it in CI (a worker the JVM connected to and dropped before its task)
EOF_AT_START = f"""Traceback (most recent call last):
  File "{ZIP}/daemon.py", line 264, in manager
  File "{ZIP}/daemon.py", line 65, in worker
  File "{ZIP}/serializers.py", line 565, in loads
    length = read_int(stream)
             ^^^^^^^^^^^^^^^^
  File "{ZIP}/serializers.py", line 604, in read_int
    raise EOFError
EOFError
"""
#: the daemon's wording when it does not kill a worker whose flush failed
FLUSH_FAILURE = f"""PySpark daemon failed to flush the output to the worker process:
Traceback (most recent call last):
  File "{ZIP}/daemon.py", line 91, in worker
    outfile.flush()
BrokenPipeError: [Errno 32] Broken pipe
"""
#: a connector's own code failing: shown whole (it is not the daemon's)
CONNECTOR_ERROR = f"""Traceback (most recent call last):
  File "{ZIP}/daemon.py", line 264, in manager
  File "/home/me/jsonl_connector/pages.py", line 12, in pages
    raise EOFError("truncated file")
EOFError: truncated file
"""
#: the daemon's frames, another error: shown
DAEMON_BUG = f"""Traceback (most recent call last):
  File "{ZIP}/daemon.py", line 264, in manager
ValueError: invalid literal for int()
"""


def shown(*chunks: str) -> str:
    f = StderrFilter()
    out: list[bytes] = []
    for line in "".join(chunks).encode().splitlines(keepends=True):
        out += f.feed(line)
    out += f.finish()
    return b"".join(out).decode()


def test_the_daemons_tracebacks_of_a_closed_socket_are_left_out_and_lines_around_them_kept():
    log = "26/11/28 10:00:01 WARN TaskSetManager: Lost task 0.0\n"
    assert shown(BROKEN_PIPE) == ""
    assert shown(EOF_AT_START) == ""
    assert shown(FLUSH_FAILURE) == ""
    assert shown(log, BROKEN_PIPE, BROKEN_PIPE, log, EOF_AT_START, log) == log * 3
    assert shown("WARNING: Using incubator modules: jdk.incubator.vector\n", log) == log


def test_every_other_traceback_is_shown_whole():
    assert shown(CONNECTOR_ERROR) == CONNECTOR_ERROR
    assert shown(DAEMON_BUG) == DAEMON_BUG
    assert shown(BROKEN_PIPE, CONNECTOR_ERROR, BROKEN_PIPE) == CONNECTOR_ERROR


def test_a_traceback_cut_short_is_shown_as_far_as_it_came():
    cut = BROKEN_PIPE.splitlines(keepends=True)[:2]
    assert shown(*cut) == "".join(cut)  # the stream ended inside it
    # another process's traceback began inside it and ended, this one never did: both are shown
    assert shown(*cut, BROKEN_PIPE) == "".join(cut) + BROKEN_PIPE
    assert shown(FLUSH_FAILURE.splitlines(keepends=True)[0], "a log line\n") == (
        FLUSH_FAILURE.splitlines(keepends=True)[0] + "a log line\n"
    )


def interleaved(*tracebacks: str) -> str:
    """The lines of tracebacks that processes printed at once, one line of each in turn."""
    lines = [t.splitlines(keepends=True) for t in tracebacks]
    return "".join(line for group in zip(*lines, strict=False) for line in group) + "".join(
        line for t in lines for line in t[min(map(len, lines)) :]
    )


def test_tracebacks_printed_at_once_by_two_workers_are_judged_together():
    # two tasks stopped by a LIMIT on two cores: the workers' broken pipes, line by line in turn (issue 28, row 14:
    # the first one's header and the second one's last line were shown)
    assert shown(interleaved(BROKEN_PIPE, BROKEN_PIPE)) == ""
    assert shown(interleaved(BROKEN_PIPE, EOF_AT_START)) == ""
    log = "26/11/28 10:00:01 WARN TaskSetManager: Lost task 0.0\n"
    assert shown(log, interleaved(EOF_AT_START, BROKEN_PIPE), log) == log * 2
    # a connector's traceback among them: everything held is shown, nothing of it lost
    mixed = interleaved(BROKEN_PIPE, CONNECTOR_ERROR)
    assert shown(mixed) == mixed
