"""Fixtures for the partitioned connector: an Engine whose default catalog is ``partitioned`` over the
journal connector, in a fresh warehouse per test, on the shared Spark session."""

from __future__ import annotations

import pytest

from mergekit import Engine


@pytest.fixture
def engine(spark, tmp_path) -> Engine:
    e = Engine(spark=spark, catalogs={"lake": {"connector": "partitioned", "warehouse": str(tmp_path / "wh")}})
    yield e
    e.close()
