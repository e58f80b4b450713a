"""DESIGN.md §2: one-way dependencies between layers, checked on the import statements of every module."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names)


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _walk_running(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:`` (imports there never run)."""
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(child for child in ast.iter_child_nodes(node) if not _type_checking_only(child))
    return out


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in _walk_running(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "tests" not in p.parts)


def _violations(folder: Path, allowed: tuple[str, ...]) -> list[str]:
    bad = []
    for path in _modules(folder):
        for name in _imports(path):
            top = name.split(".")[0]
            if top in STDLIB or top == "__future__":
                continue
            if any(name == a or name.startswith(a + ".") for a in allowed):
                continue
            bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


LAYERS = {
    "mergekit/spi": ("pyarrow", "attrs", "mergekit.errors", "mergekit.spi"),
    "mergekit/sql": ("sqlglot", "attrs", "mergekit.errors", "mergekit.spi", "mergekit.sql"),
    "mergekit/planner": ("attrs", "pyarrow", "mergekit.errors", "mergekit.spi", "mergekit.sql", "mergekit.planner"),
}


@pytest.mark.parametrize("folder", sorted(LAYERS))
def test_layer_imports(folder: str) -> None:
    assert _violations(ROOT / folder, LAYERS[folder]) == []


def test_only_execution_imports_pyspark() -> None:
    offenders = []
    for path in _modules(ROOT / "mergekit"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("mergekit/execution/") or rel in {
            "mergekit/testing/__init__.py",  # the conformance kit starts a session for connector authors' tests
        }:
            continue
        if any(n.split(".")[0] == "pyspark" for n in _imports(path)):
            offenders.append(rel)
    assert offenders == []


def test_the_cli_reaches_spark_through_execution() -> None:
    """Not even through a session object: job groups, cancellation, progress and log settings are
    mergekit.execution's (jobs.py), the session its session.py."""
    offenders = []
    for path in _modules(ROOT / "mergekit" / "cli"):
        tree = ast.parse(path.read_text(), filename=str(path))
        rel = path.relative_to(ROOT).as_posix()
        offenders += [f"{rel} imports {n}" for n in _imports(path) if n.split(".")[0] in ("pyspark", "py4j")]
        offenders += [
            f"{rel}:{node.lineno} uses .{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in ("sparkContext", "_jsc", "_jvm", "statusTracker")
        ]
    assert offenders == []


def test_only_the_sql_layer_imports_sqlglot() -> None:
    offenders = [
        path.relative_to(ROOT).as_posix()
        for path in _modules(ROOT / "mergekit")
        if any(n.split(".")[0] == "sqlglot" for n in _imports(path)) and "mergekit/sql/" not in path.as_posix()
    ]
    assert offenders == []


# A connector's data path imports only the SPI; its commands for the command line may read statements with
# mergekit's parser (the journal's `mergekit rewrite`, found through the entry-point group mergekit.rewriters).
COMMANDS = {"connectors/journal/mergekit_journal/rewrite.py": ("sqlglot", "mergekit.sql")}


@pytest.mark.parametrize("connector", sorted(p.name for p in (ROOT / "connectors").iterdir() if p.is_dir()))
def test_connectors_import_only_the_spi_and_errors(connector: str) -> None:
    allowed = ("pyarrow", "attrs", "psycopg", "mergekit.spi", "mergekit.errors", f"mergekit_{connector}")
    bad = _violations(ROOT / "connectors" / connector, allowed)
    assert [b for b in bad if not any(b.startswith(f"{m} imports {n}") for m, ns in COMMANDS.items() for n in ns)] == []
    for module in COMMANDS:  # nothing of the data path imports the command module
        if module.startswith(f"connectors/{connector}/"):
            name = module.rsplit("/", 1)[1][:-3]
            users = [
                p
                for p in (ROOT / "connectors" / connector).rglob("*.py")
                if f".{name} import" in p.read_text() or f"import {name}" in p.read_text()
            ]
            assert users == [], users


# Inside the SQL layer: parsing makes the statement model and knows nothing of its translation to Spark SQL.
SQL_SUBPACKAGES = {"mergekit/sql/parse": ("mergekit.sql.spark",)}


@pytest.mark.parametrize("folder", sorted(SQL_SUBPACKAGES))
def test_sql_subpackage_rules(folder: str) -> None:
    bad = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(ROOT / folder)
        for name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in SQL_SUBPACKAGES[folder])
    ]
    assert bad == []


def test_execution_does_not_know_the_facade() -> None:
    """The engine builds the execution layer's objects (the StatementRunner, the streaming service) and hands them
    down: nothing in mergekit/execution imports mergekit.engine or names Engine in code."""
    offenders = []
    for path in _modules(ROOT / "mergekit" / "execution"):
        tree = ast.parse(path.read_text(), filename=str(path))
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(tree):  # TYPE_CHECKING imports count: they say who depends on whom
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mergekit.engine"):
                offenders.append(f"{rel}:{node.lineno} imports {node.module}")
            if isinstance(node, ast.Name) and node.id == "Engine":
                offenders.append(f"{rel}:{node.lineno} names Engine")
    assert offenders == []


def test_only_the_engine_reads_the_engines_private_state() -> None:
    """``engine._x`` (or ``self._engine._x``) outside mergekit/engine.py: a seam the layers cannot see."""
    offenders = []
    for path in _modules(ROOT / "mergekit"):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "mergekit/engine.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if name in ("engine", "_engine"):
                offenders.append(f"{rel}:{node.lineno} reads {name}.{node.attr}")
    assert offenders == []
