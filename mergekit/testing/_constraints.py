"""The kit's tests of CHECK constraints and column defaults (mixed into ``BaseConnectorTest``).

The engine enforces CHECK constraints and evaluates defaults; a connector stores them: what ``create_table``
receives (``ConnectorTableMetadata.check_constraints``, ``ColumnMetadata.default``) must come back from
``get_table_metadata``, and the ``ALTER TABLE`` forms need ``add_check_constraint``, ``drop_check_constraint`` and
``set_column_default``. A connector that opts out (``Behavior.CHECK_CONSTRAINT``, ``Behavior.COLUMN_DEFAULT``) must
refuse with the SPI's message and create nothing: the engine refuses for it when it created the table without them.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._behavior import Behavior
from ._report import NOT_APPLICABLE, record

__all__ = ["ConstraintBehaviorTests"]


class ConstraintBehaviorTests:
    """CHECK and DEFAULT: stored, enforced on writes, changed by ALTER TABLE. Needs ``supports`` and
    ``assert_not_supported`` (``DataBehaviorTests``)."""

    def supports(self, behavior: Behavior) -> bool:  # pragma: no cover - provided by DataBehaviorTests
        raise NotImplementedError

    def assert_not_supported(self, engine: Any, statement: str, behavior: Behavior) -> None:  # pragma: no cover
        raise NotImplementedError

    def _no_table(self, engine: Any, table: str) -> None:
        assert table not in [row[0] for row in engine.execute("SHOW TABLES").rows()]

    def test_check_constraint(self, engine: Any) -> None:
        """CREATE TABLE with CHECK: a failing row fails the statement (CONSTRAINT_VIOLATION) and changes nothing;
        NULL passes; ALTER TABLE ADD / DROP CONSTRAINT; the constraints come back from the connector."""
        from mergekit.errors import ErrorCode, MergekitError

        create = "CREATE TABLE kit_check (id INTEGER, qty INTEGER CHECK (qty >= 0))"
        if not self.supports(Behavior.CREATE_TABLE):
            return record(NOT_APPLICABLE)
        if not self.supports(Behavior.CHECK_CONSTRAINT):
            self.assert_not_supported(engine, create, Behavior.CHECK_CONSTRAINT)
            self._no_table(engine, "kit_check")
            return
        engine.execute(create)
        assert (
            "CONSTRAINT kit_check_qty_check CHECK (qty >= 0)"
            in engine.execute("SHOW CREATE TABLE kit_check").rows()[0][0]
        )
        if self.supports(Behavior.INSERT):
            engine.execute("INSERT INTO kit_check VALUES (1, 5), (2, NULL)")
            with pytest.raises(MergekitError) as info:
                engine.execute("INSERT INTO kit_check VALUES (3, 1), (4, -1)")
            assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
            assert "Check constraint violation: (qty >= 0) (constraint kit_check_qty_check)" in str(info.value)
            assert sorted(engine.execute("SELECT id, qty FROM kit_check").rows(), key=repr) == [(1, 5), (2, None)]
            with pytest.raises(MergekitError) as info:
                engine.execute("ALTER TABLE kit_check ADD CONSTRAINT kit_small CHECK (qty < 5)")
            assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION
        engine.execute("ALTER TABLE kit_check ADD CONSTRAINT kit_small CHECK (qty < 10)")
        engine.execute("ALTER TABLE kit_check DROP CONSTRAINT kit_check_qty_check")
        text = engine.execute("SHOW CREATE TABLE kit_check").rows()[0][0]
        assert "kit_small CHECK (qty < 10)" in text and "kit_check_qty_check" not in text
        if self.supports(Behavior.INSERT):
            engine.execute("INSERT INTO kit_check VALUES (5, -1)")  # the dropped constraint no longer applies
            with pytest.raises(MergekitError) as info:
                engine.execute("INSERT INTO kit_check VALUES (6, 10)")
            assert info.value.code is ErrorCode.CONSTRAINT_VIOLATION

    def test_column_default(self, engine: Any) -> None:
        """CREATE TABLE with DEFAULT: omitted INSERT columns and DEFAULT VALUES take it; ALTER COLUMN SET / DROP
        DEFAULT; DESCRIBE shows it."""
        create = "CREATE TABLE kit_default (id INTEGER, v VARCHAR DEFAULT 'dflt', n BIGINT DEFAULT 7)"
        if not self.supports(Behavior.CREATE_TABLE):
            return record(NOT_APPLICABLE)
        if not self.supports(Behavior.COLUMN_DEFAULT):
            self.assert_not_supported(engine, create, Behavior.COLUMN_DEFAULT)
            self._no_table(engine, "kit_default")
            return
        engine.execute(create)
        extra = {row[0]: row[2] for row in engine.execute("DESCRIBE kit_default").rows()}
        assert extra == {"id": "", "v": "default 'dflt'", "n": "default 7"}
        engine.execute("ALTER TABLE kit_default ALTER COLUMN n SET DEFAULT 8")
        engine.execute("ALTER TABLE kit_default ALTER COLUMN v DROP DEFAULT")
        extra = {row[0]: row[2] for row in engine.execute("DESCRIBE kit_default").rows()}
        assert extra == {"id": "", "v": "", "n": "default 8"}
        if self.supports(Behavior.INSERT):
            engine.execute("INSERT INTO kit_default (id) VALUES (1)")
            engine.execute("INSERT INTO kit_default DEFAULT VALUES")
            rows = sorted(engine.execute("SELECT id, v, n FROM kit_default").rows(), key=repr)
            assert rows == [(1, None, 8), (None, None, 8)]
