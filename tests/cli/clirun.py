"""Running the ``mergekit`` command line as a user does: a subprocess of the real entry point."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

#: the console script ``pip install -e .`` puts next to the interpreter
SCRIPT = Path(sys.executable).parent / "mergekit"


def mergekit(
    *args: str,
    script: bool = False,
    stdin: str | None = None,
    cwd: Path | None = None,
    timeout: float = 240,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """``python -m mergekit.cli ARGS`` (or the installed ``mergekit`` script), output captured as text."""
    cmd = [str(SCRIPT)] if script else [sys.executable, "-m", "mergekit.cli"]
    return subprocess.run(
        [*cmd, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def table_rows(text: str) -> list[list[str]]:
    """The cells of every row of every table in ``text`` (rich's ASCII or rounded boxes), headers included."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if len(line) > 1 and line[0] in "|│" and line[-1] in "|│" and not set(line) <= set("|│-+─┼ "):
            rows.append([cell.strip() for cell in re.split(r"[|│]", line[1:-1])])
    return rows


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    for stream in (proc.stdout, proc.stderr):
        assert "Traceback" not in stream, stream
        assert "py4j" not in stream.lower(), stream
        assert "at org.apache" not in stream, stream
