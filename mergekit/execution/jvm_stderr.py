"""What the JVM of a session mergekit started prints on standard error, as a user should see it.

mergekit starts Spark's driver with its standard error read through a pipe (``session._start_jvm``); a thread
copies it line by line through :class:`StderrFilter`, which leaves out two kinds of noise and nothing else:

- :data:`JVM_START_WARNING`, printed whenever Spark's driver starts (Spark's launcher adds
  ``--add-modules=jdk.incubator.vector`` to every driver, and the JVM has no option to silence the warning);
- the traceback PySpark's worker daemon prints when the JVM side of a Python worker went away first: a task that
  stopped reading early (``LIMIT`` reached: the worker's last write finds a closed socket, ``BrokenPipeError``), or
  a worker the JVM connected to and dropped before the task began (``EOFError`` while reading its first message).
  Such a traceback has only frames of ``pyspark/daemon.py`` and ``pyspark/serializers.py`` (the worker's own code
  and a connector's are never among them) and ends in one of :data:`BENIGN_ERRORS`; the statement's result is not
  affected. A traceback with any other frame or error is shown whole, as are Spark's log lines.
"""

from __future__ import annotations

import os

__all__ = ["JVM_START_WARNING", "StderrFilter", "copy_jvm_stderr"]

JVM_START_WARNING = b"WARNING: Using incubator modules:"
#: The errors of a Python worker whose socket the JVM closed first.
BENIGN_ERRORS = (b"BrokenPipeError", b"ConnectionResetError", b"EOFError")
_TRACEBACK = b"Traceback (most recent call last):"
#: What PySpark's daemon prints before the traceback of a failed flush when it does not kill the worker.
_FLUSH_FAILURE = b"PySpark daemon failed to flush the output to the worker process:"
_DAEMON_FILES = (b"/pyspark/daemon.py", b"/pyspark/serializers.py")


class StderrFilter:
    """Lines in, the lines to show out. Tracebacks are held back until each has reached its last line (the
    exception), which tells what they are; :meth:`finish` gives back what is held when the stream ends.

    Workers that fail at once (a ``LIMIT`` stopping two tasks) print their tracebacks at once, and their lines
    interleave (each process writes whole lines). So what is held is a run of tracebacks, counted: every
    ``Traceback`` line opens one, every unindented line after it ends one, and when none is open the run is judged
    as a whole: left out if every frame is the daemon's and every exception one of :data:`BENIGN_ERRORS`, shown
    whole otherwise (a connector's traceback interleaved with the daemon's is shown with it)."""

    def __init__(self) -> None:
        self._held: list[bytes] = []
        self._open = 0

    def feed(self, line: bytes) -> list[bytes]:
        if line.startswith(_TRACEBACK):
            self._held.append(line)
            self._open += 1
            return []
        if line.startswith(_FLUSH_FAILURE):  # the daemon's words before a traceback of its own
            self._held.append(line)
            return []
        if not self._held:
            return [] if line.startswith(JVM_START_WARNING) else [line]
        if not self._open:  # the daemon's flush words, and no traceback after them
            held, self._held = [*self._held, line], []
            return held
        self._held.append(line)
        if line.startswith(b" "):
            return []
        self._open -= 1  # an exception's line: one traceback ended
        if self._open:
            return []
        held, self._held = self._held, []
        return [] if _benign(held) else held

    def finish(self) -> list[bytes]:
        held, self._held, self._open = self._held, [], 0
        return held


def _benign(lines: list[bytes]) -> bool:
    """Tracebacks of the worker daemon's own frames, each ending in an error of a closed socket."""
    stripped = [line.strip() for line in lines]
    files = [f for f in stripped if f.startswith(b'File "')]
    ends = [line for line in lines if not line.startswith((b" ", _TRACEBACK, _FLUSH_FAILURE))]
    if not files or not ends or not all(line.startswith(BENIGN_ERRORS) for line in ends):
        return False
    return all(any(name in f for name in _DAEMON_FILES) for f in files)


def copy_jvm_stderr(fd: int) -> None:
    """Copy the pipe ``fd`` to this process's standard error through a :class:`StderrFilter` until it closes."""
    shown = StderrFilter()
    with os.fdopen(fd, "rb") as stream:
        for line in iter(stream.readline, b""):
            _write(shown.feed(line))
    _write(shown.finish())


def _write(lines: list[bytes]) -> None:
    for line in lines:
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(2, view) :]
        except OSError:  # standard error closed: nowhere left to show it
            return
