"""The two example connectors written from docs/develop/ alone (issue 28), tested in CI as their authors test them:
installed from their folders (the Makefile's venv target: ``pip install ./examples/jsonl_rowlevel
./examples/jsonl_merge``), found only through their ``mergekit.connectors`` entry points, and their own test files
(``examples/*/tests/test_conformance.py``: the conformance kit plus what each promises) collected here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mergekit import plugins
from tests.structure.test_layers import ROOT, _violations

EXAMPLES = {"jsonl_rowlevel": "jsonl-rowlevel", "jsonl_merge": "jsonl-merge"}


def _load(folder: str) -> dict[str, object]:
    path = Path(__file__).parents[2] / "examples" / folder / "tests" / "test_conformance.py"
    spec = importlib.util.spec_from_file_location(f"example_{folder}_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: value for name, value in vars(module).items() if not name.startswith("_")}


for _folder in EXAMPLES:  # their test classes, test functions and fixtures, under this module
    globals().update(
        {  # (their test functions start a session of their own: marked spark, so make test-fast leaves them out)
            k: pytest.mark.spark(v) if k.startswith("test_") else v
            for k, v in _load(_folder).items()
            if k.startswith(("Test", "test_"))
            or hasattr(v, "_pytestfixturefunction")
            or type(v).__name__ == "FixtureFunctionDefinition"
        }
    )


def test_the_examples_are_installed_through_their_entry_points() -> None:
    available = plugins.available()
    assert {name: available.get(name) for name in EXAMPLES.values()} == {
        "jsonl-rowlevel": "mergekit-jsonl-rowlevel",
        "jsonl-merge": "mergekit-jsonl-merge",
    }


def test_the_examples_import_only_the_spi_and_errors() -> None:
    allowed = ("pyarrow", "attrs", "mergekit.spi", "mergekit.errors")
    for folder in EXAMPLES:
        package = ROOT / "examples" / folder / f"mergekit_{folder}"
        assert _violations(package, allowed) == [], folder
