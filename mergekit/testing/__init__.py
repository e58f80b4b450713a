"""The connector conformance kit: one test suite every connector runs (Trino's ``BaseConnectorTest``).

A connector author subclasses :class:`BaseConnectorTest` in their own test suite and says how to build a
catalog of their connector::

    from mergekit.testing import BaseConnectorTest, Behavior

    class TestMyConnector(BaseConnectorTest):
        def catalog(self, tmp_path):
            return {"connector": "my-connector", "root": str(tmp_path)}

        # opt out of what the connector does not do; those scenarios must then fail with NOT_SUPPORTED
        unsupported = {Behavior.NOT_MATCHED_BY_SOURCE}

Every scenario (``mergekit/testing/scenarios/*.json``: the Trino-derived MERGE, UPDATE, DELETE cases and
mergekit's own) runs against the catalog, and so do the kit's own tests: table properties (an undeclared
one, NULL, or a wrong value is refused with ``INVALID_TABLE_PROPERTY`` and no table is created), column types
(DECIMAL, DATE, TIMESTAMP, VARBINARY next to INTEGER, BIGINT, VARCHAR, BOOLEAN: insert, read back, update,
merge), predicates on every type, DDL (create, drop, add column), CHECK constraints and column defaults (stored
by the connector, enforced and evaluated by the engine; ``_constraints.py``) and abort cleanup (a statement failing in the
writer task or in ``finish_merge`` leaves no row changed and no staged file behind); see ``_data.py``. Behaviours default to supported, so a new scenario runs against
every connector until the connector opts out. An opted-out behaviour is tested to fail with the exact
``NOT_SUPPORTED`` message the connector declares in :attr:`BaseConnectorTest.not_supported_message`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mergekit.spi import (
    INSERT_NEEDS_MERGE_SINK,
    MERGE_NEEDS_MERGE_SPI,
    UPDATE_NEEDS_ROW_LEVEL_UPDATE,
)

from ._behavior import DEFAULT_MESSAGES, TYPE_BEHAVIORS, Behavior
from ._constraints import ConstraintBehaviorTests
from ._data import KIT_COLUMNS, DataBehaviorTests, KitColumn
from ._report import REFUSED, record
from ._rowlevel import RowLevelBehaviorTests

__all__ = [
    "BaseConnectorTest",
    "Behavior",
    "DEFAULT_MESSAGES",
    "INSERT_NEEDS_MERGE_SINK",
    "KIT_COLUMNS",
    "KitColumn",
    "MERGE_NEEDS_MERGE_SPI",
    "TYPE_BEHAVIORS",
    "UPDATE_NEEDS_ROW_LEVEL_UPDATE",
    "assert_same_rows",
    "load_scenarios",
    "local_session",
    "normalize",
]


def local_session() -> Any:
    """The Spark session the kit's tests run on: the active one, or a new local one set up for mergekit's tasks
    (``mergekit.execution.session.local_session``). For an author's own tests beside the kit."""
    from mergekit.execution.session import local_session as session

    return session()


def load_scenarios() -> list[dict[str, Any]]:
    """Every scenario shipped with mergekit, in file order."""
    out: list[dict[str, Any]] = []
    folder = resources.files("mergekit.testing") / "scenarios"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            out.extend(json.loads(entry.read_text()))
    return out


def normalize(value: Any) -> Any:
    """A result value as the scenario files write it: dates and timestamps as strings, decimals as numbers."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def assert_same_rows(actual: list[Any], expected: list[Any], *, ordered: bool = False) -> None:
    a = [tuple(normalize(v) for v in row) for row in actual]
    e = [tuple(normalize(v) for v in row) for row in expected]
    if ordered:
        assert a == e, f"rows differ:\n actual   {a}\n expected {e}"
    else:
        assert Counter(a) == Counter(e), (
            f"rows differ:\n actual   {sorted(map(repr, a))}\n expected {sorted(map(repr, e))}"
        )


SCENARIOS = load_scenarios()


class BaseConnectorTest(DataBehaviorTests, ConstraintBehaviorTests, RowLevelBehaviorTests):
    """Subclass and implement :meth:`catalog`. Uses a Spark session: the active one, or a new local one."""

    #: behaviours the connector does not support; their scenarios must fail with ``not_supported_message``
    unsupported: ClassVar[set[Behavior]] = set()
    #: the exact message (after ``[NOT_SUPPORTED] ``) an unsupported behaviour fails with
    not_supported_message: ClassVar[str] = "This connector does not support modifying table rows"
    #: run only the scenarios that need one of these behaviours (None: every scenario). For a second
    #: configuration of a connector that another test class already runs the whole kit on, when only these
    #: behaviours reach what the configuration changes (e.g. the rows a merge sink receives)
    scenario_behaviors: ClassVar[frozenset[Behavior] | None] = None
    #: run only these of the kit's own tests besides the scenarios (None: all of them), for the same reason
    kit_tests: ClassVar[frozenset[str] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kept = cls.__dict__.get("kit_tests")
        if kept is None:
            return
        own = {name for name in dir(BaseConnectorTest) if name.startswith("test_") and name != "test_scenario"}
        unknown = set(kept) - own
        if unknown:
            raise TypeError(f"{cls.__name__}.kit_tests names no kit test: {', '.join(sorted(unknown))}")
        for name in own - set(kept):
            setattr(cls, name, None)  # not collected: pytest collects only functions

    def catalog(self, tmp_path: Path) -> Any:
        """A catalog spec for ``Engine(catalogs={"lake": <this>})``: a config dict or a Connector."""
        raise NotImplementedError("subclasses of BaseConnectorTest must implement catalog(tmp_path)")

    @pytest.fixture
    def engine(self, tmp_path: Path) -> Iterator[Any]:
        from mergekit.engine import Engine

        spark = local_session()
        engine = Engine(spark=spark, catalogs={"lake": self.catalog(tmp_path)})
        yield engine
        engine.close()

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """``test_scenario`` once per scenario this class runs (:attr:`scenario_behaviors`)."""
        if metafunc.function.__name__ != "test_scenario":
            return
        wanted = self.scenario_behaviors
        chosen = [s for s in SCENARIOS if wanted is None or any(Behavior(b) in wanted for b in s.get("requires", []))]
        metafunc.parametrize("scenario", chosen, ids=[s["id"] for s in chosen])

    def test_scenario(self, engine: Any, scenario: dict[str, Any]) -> None:
        from mergekit.errors import ErrorCode, MergekitError

        missing = [b for b in scenario.get("requires", []) if Behavior(b) in self.unsupported]
        setup = scenario["setup"]
        if missing:
            # The setup may itself need the behaviour (an UPDATE in the setup of a DELETE case): run what works.
            for statement in setup:
                try:
                    engine.execute(statement)
                except MergekitError as exc:
                    if exc.code is not ErrorCode.NOT_SUPPORTED:
                        raise
            with pytest.raises(MergekitError) as info:
                engine.execute(scenario["statement"])
            assert info.value.code is ErrorCode.NOT_SUPPORTED, str(info.value)
            # one message per behaviour (not_supported_messages; row changes: not_supported_message)
            allowed = sorted({f"[NOT_SUPPORTED] {self._message(Behavior(b))}" for b in missing})
            assert str(info.value) in allowed, f"{info.value}\n is none of the opted-out behaviours' {allowed}"
            return record(REFUSED, ", ".join(missing))
        for statement in setup:
            engine.execute(statement)
        expected_error = scenario.get("expected_error")
        rows = None
        if expected_error is not None:
            with pytest.raises(MergekitError) as info:
                engine.execute(scenario["statement"])
            assert expected_error in str(info.value)
            assert re.match(r"^\[[A-Z_]+\] ", str(info.value))
        else:
            result = engine.execute(scenario["statement"])
            if scenario.get("expected_count") is not None:
                assert result.row_count == scenario["expected_count"]
            rows = result.rows()
        check = scenario.get("check_query")
        if check is not None:
            rows = engine.execute(check).rows()
        ordered = bool(check and re.search(r"(?i)\border\s+by\b", check))
        assert_same_rows(rows or [], scenario["expected_rows"], ordered=ordered)

    # ---- table properties: every WITH (...) property is declared by the connector or refused ----------------

    def _declared_properties(self, engine: Any) -> list[Any]:
        return list(engine.catalog("lake").get_table_properties())

    def _unknown_property_message(self, engine: Any, name: str) -> str:
        names = sorted(p.name for p in self._declared_properties(engine))
        listing = f"Valid properties: {', '.join(names)}" if names else "Catalog 'lake' has no table properties"
        return f"[INVALID_TABLE_PROPERTY] Catalog 'lake' table property '{name}' does not exist. {listing}"

    def _assert_no_table(self, engine: Any, table: str) -> None:
        from mergekit.spi import ConnectorSession, SchemaTableName

        listed = [row[0] for row in engine.execute("SHOW TABLES").rows()]
        assert table not in listed, f"a refused CREATE TABLE left table {table!r} behind: {listed}"
        meta = engine.catalog("lake").get_metadata()
        name = SchemaTableName(schema="default", table=table)
        assert meta.get_table_handle(session=ConnectorSession(catalog="lake"), table=name) is None

    def _refused(self, engine: Any, statement: str) -> str:
        from mergekit.errors import ErrorCode, MergekitError

        with pytest.raises(MergekitError) as info:
            engine.execute(statement)
        assert info.value.code is ErrorCode.INVALID_TABLE_PROPERTY, str(info.value)
        return str(info.value)

    def test_unknown_table_property_is_refused(self, engine: Any) -> None:
        """``CREATE TABLE ... WITH (bogus_prop = 42)`` names the property and the valid ones; nothing is created."""
        message = self._refused(engine, "CREATE TABLE bogus_props (id INTEGER, v VARCHAR) WITH (bogus_prop = 42)")
        assert message == self._unknown_property_message(engine, "bogus_prop")
        self._assert_no_table(engine, "bogus_props")
        # also when the table exists and IF NOT EXISTS would skip the statement: the property is still refused
        engine.execute("CREATE TABLE existing (id INTEGER)")
        message = self._refused(engine, "CREATE TABLE IF NOT EXISTS existing (id INTEGER) WITH (bogus_prop = 'x')")
        assert message == self._unknown_property_message(engine, "bogus_prop")

    def test_unknown_table_property_is_refused_by_create_table_as(self, engine: Any) -> None:
        message = self._refused(engine, "CREATE TABLE bogus_ctas WITH (bogus_prop = 42) AS SELECT 1 AS id, 'a' AS v")
        assert message == self._unknown_property_message(engine, "bogus_prop")
        self._assert_no_table(engine, "bogus_ctas")

    def test_wrong_table_property_values_are_refused(self, engine: Any) -> None:
        """A NULL or a value of the wrong type, for every property the connector declares; an undeclared property
        is refused even when its value is NULL."""
        declared = self._declared_properties(engine)
        assert len({p.name for p in declared}) == len(declared), "a table property is declared twice"
        assert all(p.description.strip() for p in declared), "every table property needs a description"
        message = self._refused(engine, "CREATE TABLE wrong_value (id INTEGER) WITH (bogus_prop = NULL)")
        assert message == self._unknown_property_message(engine, "bogus_prop")
        wrong = {"varchar": "42", "boolean": "'yes'", "integer": "'x'", "bigint": "'x'", "double": "'x'"}
        for prop in declared:
            literal = wrong.get(prop.type, "42")
            message = self._refused(engine, f"CREATE TABLE wrong_value (id INTEGER) WITH ({prop.name} = {literal})")
            assert message == (
                f"[INVALID_TABLE_PROPERTY] Invalid value for catalog 'lake' table property '{prop.name}': "
                f"Cannot convert [{literal}] to {prop.type}"
            )
            message = self._refused(engine, f"CREATE TABLE wrong_value (id INTEGER) WITH ({prop.name} = NULL)")
            assert message == (
                f"[INVALID_TABLE_PROPERTY] Invalid null value for catalog 'lake' table property '{prop.name}'"
            )
        self._assert_no_table(engine, "wrong_value")
