from __future__ import annotations

import pytest

from mergekit import Engine


@pytest.fixture(params=["DELETE_ROW_AND_INSERT_ROW", "CHANGE_ONLY_UPDATED_COLUMNS"])
def paradigm(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def engine(spark, paradigm: str) -> Engine:
    """A fresh memory catalog per test, on the shared Spark session."""
    e = Engine(spark=spark, catalogs={"lake": {"connector": "memory", "paradigm": paradigm}})
    yield e
    e.close()
