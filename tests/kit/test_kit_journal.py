"""The conformance kit against the journal connector (every table journalled, bigint and timestamp versions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mergekit.testing import BaseConnectorTest


class TestJournalKit(BaseConnectorTest):
    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "journal", "warehouse": str(tmp_path / "wh"), "version_type": "bigint"}
