"""Shared fixtures: one real local Spark session for the whole test run."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from mergekit.execution.session import local_session

    session = local_session(master="local[2]", shuffle_partitions=2)
    yield session
    session.stop()
