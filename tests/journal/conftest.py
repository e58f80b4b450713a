"""Fixtures for the journal connector tests (the harness lives in journal_harness.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.journal.journal_harness import JournalHarness


@pytest.fixture
def make_harness(tmp_path):
    made: list[JournalHarness] = []

    def make(**options: Any) -> JournalHarness:
        h = JournalHarness(str(tmp_path / "warehouse"), **options)
        made.append(h)
        return h

    yield make
    for h in made:
        h.connector.shutdown()


@pytest.fixture
def lake(make_harness) -> JournalHarness:
    return make_harness()
