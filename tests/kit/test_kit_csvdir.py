"""The conformance kit run against the example third-party connector (examples/csvdir), installed the way a
user installs a plugin: ``pip install ./examples/csvdir`` (the Makefile's venv target), found only through
its ``mergekit.connectors`` entry point. Its own tests: ``pytest examples/csvdir/tests``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mergekit import plugins
from mergekit.testing import BaseConnectorTest, Behavior
from tests.structure.test_layers import ROOT, _violations


def test_csvdir_is_installed_through_its_entry_point() -> None:
    assert plugins.available()["csvdir"] == "mergekit-csvdir"


def test_csvdir_imports_only_the_spi_and_errors() -> None:
    allowed = ("pyarrow", "attrs", "mergekit.spi", "mergekit.errors")
    assert _violations(ROOT / "examples" / "csvdir" / "mergekit_csvdir", allowed) == []


class TestCsvDirKit(BaseConnectorTest):
    unsupported = {Behavior.TYPE_VARBINARY, Behavior.ADD_COLUMN, Behavior.CHECK_CONSTRAINT, Behavior.COLUMN_DEFAULT}
    not_supported_messages = {Behavior.TYPE_VARBINARY: "csvdir cannot store column 'v' of type varbinary"}

    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "csvdir", "root": str(tmp_path)}
