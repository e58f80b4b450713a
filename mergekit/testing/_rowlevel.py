"""The kit's abort tests of the row-level DELETE/UPDATE SPI (mixed into ``BaseConnectorTest``).

A connector whose DELETE or UPDATE runs through the row-level SPI (seed 003: no merge row id or paradigm) stages
what its ``UpdatablePageSource`` instances receive and applies it in ``finish_delete`` / ``finish_update``. On a
failure the engine calls the instance's ``abort()`` (in the task) and ``abort_delete`` / ``abort_update`` (on the
driver): they must discard what was staged. The kit makes each fail on purpose, after the connector staged:

- ``finish_delete`` / ``finish_update`` raise (the kit patches the metadata's method): every task's fragments
  were staged; ``abort_*`` must remove them;
- a task fails after its page source's ``finish()`` returned (the kit wraps the page source provider): the
  instance's ``abort()`` and the driver's ``abort_*`` must remove what it staged.

After each, no row changed and the files under the catalog's directory (``staged_files``) are exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import UpdatablePageSource

from ._behavior import Behavior
from ._report import NOT_APPLICABLE, record

__all__ = ["FailAfterFinishProvider", "RowLevelBehaviorTests"]

KIT_FAILURE = "kit: fails on purpose after the connector staged"


class FailAfterFinishProvider:
    """A page source provider around the connector's: its updatable page sources fail the task right after the
    connector's ``finish()`` returned (what it staged is then the task's to abort). Picklable as the connector's
    provider is; imported by Spark's workers from ``mergekit.testing``."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def create_page_source(self, **kwargs: Any) -> Any:
        source = self.provider.create_page_source(**kwargs)
        if not isinstance(source, UpdatablePageSource):
            return source
        return _FailAfterFinish(source)


class _FailAfterFinish(UpdatablePageSource):
    def __init__(self, source: UpdatablePageSource) -> None:
        self.source = source

    def get_next_page(self) -> pa.RecordBatch | None:
        return self.source.get_next_page()

    def delete_rows(self, row_ids: pa.Array) -> None:
        self.source.delete_rows(row_ids)

    def update_rows(self, page: pa.RecordBatch, column_value_and_row_id_channels: Sequence[int]) -> None:
        self.source.update_rows(page, column_value_and_row_id_channels)

    def finish(self) -> Sequence[Any]:
        self.source.finish()
        raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, KIT_FAILURE)

    def abort(self) -> None:
        self.source.abort()

    def close(self) -> None:
        self.source.close()


class RowLevelBehaviorTests:
    """Abort cleanup of the row-level SPI. Needs ``supports`` and ``staged_files`` (``DataBehaviorTests``)."""

    def supports(self, behavior: Behavior) -> bool:  # pragma: no cover - provided by DataBehaviorTests
        raise NotImplementedError

    def staged_files(self, tmp_path: Path) -> set[str]:  # pragma: no cover - provided by DataBehaviorTests
        raise NotImplementedError

    def _row_level_kinds(self, engine: Any) -> list[str]:
        """DELETE / UPDATE where the connector runs them through the row-level SPI on ``kit_abort_rl``."""
        from mergekit.execution.dml.contract import merge_spi_supported, row_level_supported
        from mergekit.spi import ConnectorSession, SchemaTableName

        meta = engine.catalog("lake").get_metadata()
        session = ConnectorSession(catalog="lake")
        handle = meta.get_table_handle(session=session, table=SchemaTableName(schema="default", table="kit_abort_rl"))
        if merge_spi_supported(meta, session, handle):
            return []  # the merge SPI runs them: test_failed_statements_leave_nothing_behind
        return [
            kind
            for kind in ("DELETE", "UPDATE")
            if self.supports(Behavior(kind.lower())) and row_level_supported(meta, session, handle, kind)
        ]

    def test_failed_row_level_statements_leave_nothing_behind(
        self, engine: Any, tmp_path: Path, monkeypatch: Any
    ) -> None:
        """A row-level DELETE / UPDATE failing in ``finish_*`` or in a task after the connector staged changes no
        row and leaves no staged file behind: ``abort()`` and ``abort_delete`` / ``abort_update`` discard it."""
        if not self.supports(Behavior.CREATE_TABLE) or not self.supports(Behavior.INSERT):
            return record(NOT_APPLICABLE)
        engine.execute("CREATE TABLE kit_abort_rl (id INTEGER, v VARCHAR)")
        engine.execute("INSERT INTO kit_abort_rl VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        kinds = self._row_level_kinds(engine)
        if not kinds:
            return record(NOT_APPLICABLE)
        rows = sorted(engine.execute("SELECT id, v FROM kit_abort_rl").rows())
        files = self.staged_files(tmp_path)
        connector = engine.catalog("lake")
        metadata = connector.get_metadata()
        # (id + 0: a WHERE no connector is offered as a delete pushdown, so the row-level path runs)
        statements = {
            "DELETE": "DELETE FROM kit_abort_rl WHERE id + 0 > 1",
            "UPDATE": "UPDATE kit_abort_rl SET v = 'x'",
        }
        for kind in kinds:
            verb = kind.lower()

            def failing_finish(**kwargs: Any) -> None:
                raise MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, KIT_FAILURE)

            monkeypatch.setattr(metadata, f"finish_{verb}", failing_finish)
            with pytest.raises(MergekitError, match=KIT_FAILURE):
                engine.execute(statements[kind])
            monkeypatch.undo()
            left = self.staged_files(tmp_path) - files
            assert not left, f"a {kind} whose finish_{verb} failed left files behind (abort_{verb}): {sorted(left)}"
            assert sorted(engine.execute("SELECT id, v FROM kit_abort_rl").rows()) == rows

            provider = FailAfterFinishProvider(connector.get_page_source_provider())
            monkeypatch.setattr(connector, "get_page_source_provider", lambda provider=provider: provider)
            with pytest.raises(MergekitError, match=KIT_FAILURE):
                engine.execute(statements[kind])
            monkeypatch.undo()
            left = self.staged_files(tmp_path) - files
            assert not left, (
                f"a {kind} whose task failed after the page source's finish() left files behind "
                f"(UpdatablePageSource.abort, abort_{verb}): {sorted(left)}"
            )
            assert sorted(engine.execute("SELECT id, v FROM kit_abort_rl").rows()) == rows
        assert self.staged_files(tmp_path) == files
