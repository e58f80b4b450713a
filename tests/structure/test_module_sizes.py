"""No module outside tests/ is longer than MAX_LINES: a longer one is split along its seams."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 800
FOLDERS = ("mergekit", "connectors", "examples", "bench")

ALLOWED: frozenset[str] = frozenset()


def _sources() -> list[Path]:
    return sorted(
        path
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if not {"tests", "build", ".venv"} & set(path.relative_to(ROOT).parts)
    )


def test_no_module_is_too_long() -> None:
    too_long = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES and rel not in ALLOWED:
            too_long[rel] = lines
    assert too_long == {}


def test_the_sources_are_found() -> None:
    found = {path.relative_to(ROOT).as_posix() for path in _sources()}
    assert {"mergekit/sql/model.py", "connectors/journal/mergekit_journal/_files/storage.py", "bench/run.py"} <= found


MAX_MODULES = (
    20  # a package folder (tests/ too) holds one kind of thing: past this many, it has subpackages waiting to be named
)


def test_no_package_folder_holds_too_many_modules() -> None:
    crowded = {}
    tests = {path.parent for path in (ROOT / "tests").rglob("*.py") if "__pycache__" not in path.parts}
    for folder in sorted({path.parent for path in _sources()} | tests):
        modules = [p for p in folder.glob("*.py")]
        if len(modules) > MAX_MODULES:
            crowded[folder.relative_to(ROOT).as_posix()] = len(modules)
    assert crowded == {}
