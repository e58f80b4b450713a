"""Every code block marked ```python runnable in README.md and docs/ runs, in a fresh working directory."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python runnable\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for i, match in enumerate(BLOCK.finditer(page.read_text())):
            found.append((f"{page.relative_to(ROOT)}#{i}", match.group(1)))
    return found


BLOCKS = _blocks()


def test_there_are_runnable_blocks() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_block_runs(spark, tmp_path, where: str, code: str) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, where, "exec"), {"__name__": "__doc_block__"})  # our own docs
    finally:
        os.chdir(cwd)
