"""No import cycles between modules: mergekit's own, and each connector package's.

The graph is built from the source with ``ast``, not by importing anything: every ``import`` and
``from ... import`` counts, at module level and inside functions alike (a function-level import that closes
a cycle is still a cycle: it only moves the failure from import time to the first call), relative imports
are resolved, and ``from pkg import name`` where ``name`` is a submodule counts as importing the submodule.
Imports under ``if TYPE_CHECKING:`` do not count: they never run. Importing ``a.b.c`` runs ``a`` and
``a.b`` first, but those implicit parent-package imports are not edges (a package ``__init__`` that
re-exports its submodules would otherwise form a cycle with each of them).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module_name(path: Path, source_root: Path) -> str:
    parts = list(path.relative_to(source_root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all of them, wherever they are, but ``if TYPE_CHECKING:`` bodies."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _import_nodes(child)
        return
    for child in ast.iter_child_nodes(node):
        yield from _import_nodes(child)


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The known modules an import statement in ``module`` loads (by name; parents left implicit)."""

    def deepest_known(name: str) -> str | None:
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            candidate = ".".join(parts[:n])
            if candidate in known:
                return candidate
        return None

    found: set[str | None] = set()
    if isinstance(node, ast.Import):
        found.update(deepest_known(alias.name) for alias in node.names)
    else:
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            found.add(sub if sub in known else deepest_known(base))
    return {m for m in found if m is not None and m != module}


def import_graph(source_root: Path, package: str) -> dict[str, set[str]]:
    """{module: modules of the same package tree it imports}, for the package ``source_root/package``."""
    files = {
        _module_name(p, source_root): p
        for p in sorted((source_root / package).rglob("*.py"))
        if "tests" not in p.relative_to(source_root).parts
    }
    known = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[module] = set()
        for node in _import_nodes(tree):
            graph[module] |= _imported(node, module, is_package, known)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _packages() -> list[tuple[Path, str]]:
    found = [(ROOT, "mergekit")]
    for folder in (ROOT / "connectors", ROOT / "examples"):
        for project in sorted(p for p in folder.iterdir() if p.is_dir()):
            found += [(project, p.name) for p in sorted(project.glob("mergekit_*")) if (p / "__init__.py").exists()]
    return found


@pytest.mark.parametrize(("source_root", "package"), _packages(), ids=[package for _, package in _packages()])
def test_no_import_cycles(source_root: Path, package: str) -> None:
    found = cycles(import_graph(source_root, package))
    assert found == []


# ---- the checker itself


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import f\n",
            "pkg/b.py": "def f():\n    from . import a\n",  # function level, relative, submodule by name
            "pkg/c.py": "import pkg.a\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.b"] == {"pkg.a"} and graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_longer_cycles_and_package_inits(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .sub import x\n",
            "pkg/sub/__init__.py": "from .m import x\n",
            "pkg/sub/m.py": "from ..n import y\nx = 1\n",
            "pkg/n.py": "def g():\n    from pkg import sub\n",
        },
    )
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.n", "pkg.sub", "pkg.sub.m"]]


def test_type_checking_imports_and_one_way_imports_are_not_cycles(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from typing import TYPE_CHECKING\nfrom pkg import b\nif TYPE_CHECKING:\n    from pkg import c\n",
            "pkg/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.a import A\nelse:\n    import pkg.c\n",
            "pkg/c.py": "import os\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}
    assert cycles(graph) == []
