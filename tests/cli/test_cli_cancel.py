"""Ctrl-C on a running statement, as a user presses it: the command line runs on a pseudo-terminal that is its
controlling terminal, and the test types ``^C`` (the terminal sends SIGINT to the foreground process group)
once the statement's Spark stage shows in the progress bar. The table is set up and checked in this process,
on the same warehouse, so each test starts one command-line Spark."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import subprocess
import termios
import time

import pyarrow as pa
import pytest

from mergekit import Engine
from mergekit.catalogs import default_connector
from mergekit.plugins import create_connector
from mergekit.spi import ColumnMetadata, ConnectorSession, ConnectorTableMetadata, SchemaTableName

from .clirun import SCRIPT

pytestmark = pytest.mark.spark

#: 25M generated source rows: a MERGE that runs for minutes on two cores, cancelled seconds into its first stage
LONG_SOURCE = (
    "SELECT x * 100000 + y AS id, y AS v FROM UNNEST(sequence(1, 5000)) a(x) CROSS JOIN UNNEST(sequence(1, 5000)) b(y)"
)
LONG_MERGE = (
    f"MERGE INTO t USING ({LONG_SOURCE}) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]")


@pytest.fixture
def warehouse(spark, tmp_path):
    """A warehouse with table ``t`` (1000 rows), and what a checksum of it reads."""
    path = tmp_path / "wh"
    engine = Engine.local(warehouse=str(path))
    engine.execute("CREATE TABLE t (id BIGINT, v BIGINT)")
    engine.execute("INSERT INTO t SELECT x, x * 3 FROM UNNEST(sequence(1, 1000)) u(x)")
    engine.close()
    return path


def _checksum(path) -> list[tuple]:
    engine = Engine.local(warehouse=str(path))
    try:
        return engine.execute("SELECT count(*), sum(id), sum(v), max(v) FROM t").rows()
    finally:
        engine.close()


def _on_terminal(args: list[str], cwd) -> tuple[subprocess.Popen, int]:
    """``mergekit ARGS`` with a new pseudo-terminal as its controlling terminal (stdin, stdout, stderr)."""
    master, slave = pty.openpty()

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {**os.environ, "MERGEKIT_PROGRESS_DELAY": "0", "COLUMNS": "160", "LINES": "50", "TERM": "xterm"}
    env["MERGEKIT_HISTORY"] = str(cwd / "history")
    proc = subprocess.Popen(
        [str(SCRIPT), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        close_fds=True,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    return proc, master


class _Screen:
    """What the program wrote on the terminal so far, without colours and cursor movements."""

    def __init__(self, master: int, proc: subprocess.Popen) -> None:
        self.master, self.proc, self.raw = master, proc, b""

    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", "replace")).replace("\r", "\n")

    def _read(self) -> bool:
        """Read what is there (waiting up to 0.2 s); False once the program has exited and all is read."""
        ready, _, _ = select.select([self.master], [], [], 0.2)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the program closed the terminal
                data = b""
            self.raw += data
            return bool(data) or self.proc.poll() is None
        return self.proc.poll() is None

    def wait_for(self, pattern: str, timeout: float = 240, *, since: int = 0) -> re.Match:
        """Read until ``pattern`` shows (in the text after position ``since``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text()[since:])
            if found:
                return found
            if not self._read():
                break
        raise AssertionError(f"{pattern!r} not shown; the terminal shows:\n{self.text()}")

    def finish(self, timeout: float = 240) -> int:
        """Read until the program exits; its exit status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read():
            pass
        try:
            return self.proc.wait(timeout=10)
        finally:
            os.close(self.master)
            if self.proc.poll() is None:
                self.proc.kill()


def _printed_lines(text: str) -> list[str]:
    """The lines the program printed, without the (erased) frames of the progress bar and of "Starting Spark"
    (they begin with a spinner)."""
    return [line.strip() for line in text.split("\n") if line.strip() and not ("\u2800" <= line.strip()[0] <= "\u28ff")]


def test_ctrl_c_cancels_a_running_merge_and_exits_130_with_one_line(warehouse, tmp_path):
    before = _checksum(warehouse)
    assert before == [(1000, 500500, 1501500, 3000)]
    proc, master = _on_terminal(["--warehouse", str(warehouse), "sql", LONG_MERGE], tmp_path)
    screen = _Screen(master, proc)
    try:
        screen.wait_for(r"MERGE: stage \d+")  # the MERGE's Spark jobs are running
        time.sleep(1)
        os.write(master, b"\x03")  # Ctrl-C
        status = screen.finish()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = screen.text()
    assert status == 130, text
    assert "Traceback" not in text and "py4j" not in text.lower() and "at org.apache" not in text, text
    assert "MERGE 0" not in text and "inserted" not in text, "the MERGE must not complete"
    # after the progress bar (erased), exactly one line: the cancellation
    assert _printed_lines(text) == ["Cancelled (Ctrl-C); the running statement changed nothing"], text
    assert _checksum(warehouse) == before, "a cancelled MERGE commits nothing"


def test_ctrl_c_in_the_shell_cancels_the_statement_and_returns_to_the_prompt(warehouse, tmp_path):
    before = _checksum(warehouse)
    proc, master = _on_terminal(["--warehouse", str(warehouse), "shell"], tmp_path)
    screen = _Screen(master, proc)
    try:
        screen.wait_for(r"mergekit> ")
        os.write(master, f"{LONG_MERGE};\n".encode())
        screen.wait_for(r"MERGE: stage \d+")
        time.sleep(1)
        mark = len(screen.text())
        os.write(master, b"\x03")
        screen.wait_for(r"Cancelled \(Ctrl-C\); the running statement changed nothing\n(.|\n)*mergekit> ", since=mark)
        # back at the prompt, in the same session: the table as it was, then Ctrl-C at the empty prompt, then quit
        os.write(master, b"SELECT count(*) AS n, sum(v) AS total FROM t;\n")
        screen.wait_for(r"1000 .*1501500(.|\n)*\(1 row, [^)]*\)\n+mergekit> ")
        # typed as soon as the prompt shows (a ^C in the instant between a result and the line editor was once lost)
        mark = len(screen.text())
        os.write(master, b"\x03")
        screen.wait_for(r"\^C\n+mergekit> ", since=mark)
        os.write(master, b"\\q\n")
        status = screen.finish()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = screen.text()
    assert status == 0, text
    assert "Traceback" not in text and "py4j" not in text.lower(), text
    assert "MERGE 0" not in text and "inserted" not in text
    assert text.count("Cancelled (Ctrl-C)") == 1, text
    assert _checksum(warehouse) == before


def test_ctrl_c_between_a_result_and_the_prompt_gives_a_fresh_prompt(tmp_path):
    """Issue 26, row 20: Ctrl-C while the shell is neither running a statement nor at its prompt (here while it
    writes the table of ``\\d``, held up because the terminal is not read) gives a fresh prompt, as psql does; it
    used to leave the shell (exit 130). The terminal discards the output it still held (a ^C flushes it), so the
    listing is cut short. ``\\d`` lists each table once, its journal beside it."""
    warehouse = tmp_path / "wh"
    # 1500 tables, made through the connector the shell's catalog uses (no Spark): a listing far longer than what
    # the terminal holds, so the shell is still writing it when the ^C comes
    connector = create_connector(default_connector(), catalog_name="lake", config={"warehouse": str(warehouse)})
    md, session = connector.get_metadata(), ConnectorSession(catalog="lake")
    for i in range(1500):
        name = SchemaTableName(schema="default", table=f"listed_{i:04d}")
        metadata = ConnectorTableMetadata(table=name, columns=(ColumnMetadata(name="id", type=pa.int64()),))
        md.create_table(session=session, table_metadata=metadata, ignore_existing=False)
    connector.shutdown()
    proc, master = _on_terminal(["--warehouse", str(warehouse), "shell"], tmp_path)
    screen = _Screen(master, proc)
    try:
        screen.wait_for(r"mergekit> ")
        os.write(master, b"\\d\n")
        first = screen.wait_for(r"\n. lake +. default +. listed_0000 +. listed_0000_journal +.\n")
        mark = len(screen.text())
        os.write(master, b"\x03")  # the terminal sends SIGINT to the shell
        screen.wait_for(r"mergekit> ", since=mark)
        os.write(master, b"SELECT 'still here' AS x;\n")
        screen.wait_for(r"still here(.|\n)*\(1 row, [^)]*\)\n+mergekit> ", since=mark)
        os.write(master, b"\\q\n")
        status = screen.finish()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = screen.text()
    assert status == 0, text
    assert "Cancelled" not in text and "Traceback" not in text, text
    assert "listed_1499" not in text  # the ^C came while the listing was being written
    assert first.group(0).count("listed_0000") == 2  # one row per table, its journal beside it
    assert not re.search(r"^. lake +. default +. listed_\d+_journal", text, re.M), text
