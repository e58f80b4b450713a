"""Fixtures of tests/sql: ``fn_engine``, the Engine the function tests (test_functions_*.py) share."""

from __future__ import annotations

import pytest

from mergekit import Engine

from .functions_kit import make_engine


@pytest.fixture(scope="session")
def fn_engine(spark) -> Engine:
    engine = make_engine(spark)
    yield engine
    engine.close()
