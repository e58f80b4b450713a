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


PAGES = sorted({where.split("#")[0] for where, _ in BLOCKS if not where.endswith("#0")})


@pytest.mark.parametrize("page", PAGES)
def test_a_pages_blocks_run_one_after_another(spark, tmp_path, page: str) -> None:
    """A user pastes a page's blocks into one Python session in one folder (issue 26: quickstart.md's first two
    blocks both created ``inventory`` in ./warehouse, so the second failed with TABLE_ALREADY_EXISTS)."""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    session = {"__name__": "__doc_block__"}
    try:
        for where, code in BLOCKS:
            if where.startswith(page + "#"):
                exec(compile(code, where, "exec"), session)  # our own docs
    finally:
        os.chdir(cwd)
