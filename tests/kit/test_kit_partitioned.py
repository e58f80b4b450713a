"""The conformance kit against the partitioned connector (plain tables through it, over the journal base).
Merge tables with several children run the Trino cases in tests/partitioned/test_trino.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mergekit.testing import BaseConnectorTest


class TestPartitionedKit(BaseConnectorTest):
    def catalog(self, tmp_path: Path) -> Any:
        return {"connector": "partitioned", "warehouse": str(tmp_path / "wh")}
