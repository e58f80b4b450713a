"""Driver side of the journal connector: ``JournalMetadata`` (the ``ConnectorMetadata``) and its split manager.

``JournalMetadata`` is composed of eight parts, one module each, all built on the catalog connection and the
table handles of ``SnapshotMetadata``:

- ``_snapshots``: names, table handles, versions, time travel, the change feed's handle, history, columns, and
  the snapshot's file rows (``FileRow``, ``files_at``);
- ``_ddl``: schemas, ``CREATE``/``DROP TABLE``, ``ADD COLUMN``, ``TRUNCATE``;
- ``_constraints`` (on ``_ddl``): ``ADD``/``DROP CONSTRAINT`` (CHECK) and ``SET``/``DROP DEFAULT``;
- ``_scan_planning``: splits, Spark's native scans, pruning by key, value sets and the key index;
- ``_commit``: ``begin_merge``/``finish_merge(s)``/``abort_merge``, the primary key and conflict checks and the
  optimistic commit protocol (described there);
- ``_streams.tables``: ``get_stream_commits``/``get_stream_splits`` of streams (and of the change feed of a table with
  ``change_feed_stream``), and the monotonicity check ``_commit`` runs inside a stream's commit;
- ``_views``: ``create_view``/``get_view``/``drop_view``/``list_views`` (``mk_views``).

The parts share no method names, so the order of the bases only fixes the MRO. ``FileRow``, ``keyed_splits``,
``logical_splits`` and ``_now_us`` are re-exported here for the modules that import them from this one
(``_index``, ``_procedures``).
"""

from __future__ import annotations

from collections.abc import Sequence

from mergekit.spi import (
    ColumnHandle,
    ConnectorSession,
    ConnectorSplit,
    ConnectorSplitManager,
    ConnectorTableHandle,
    Constraint,
)

from ._catalog import Catalog
from ._commit import CommitMetadata
from ._compaction import Compactions
from ._config import JournalConfig
from ._constraints import ConstraintMetadata
from ._ddl import DdlMetadata
from ._scan_planning import ScanPlanningMetadata
from ._scan_planning import keyed_splits as keyed_splits
from ._scan_planning import logical_splits as logical_splits
from ._snapshots import FileRow
from ._snapshots import _now_us as _now_us
from ._streams.jobs import JobCommitMetadata
from ._streams.tables import StreamReadMetadata
from ._views import ViewStoreMetadata

__all__ = ["JournalMetadata", "JournalSplitManager", "FileRow"]


class JournalMetadata(
    ConstraintMetadata,
    DdlMetadata,
    ScanPlanningMetadata,
    CommitMetadata,
    StreamReadMetadata,
    JobCommitMetadata,
    ViewStoreMetadata,
):
    """One catalog's metadata. ``catalog`` is the SQLite or PostgreSQL catalog; ``config`` the options.

    Constructed once per connector, on the driver: ``JournalMetadata(catalog_name=..., config=..., catalog=...)``.
    ``compactions`` runs the automatic compactions its commits make due (``_compaction``).
    """

    def __init__(self, *, catalog_name: str, config: JournalConfig, catalog: Catalog) -> None:
        super().__init__(catalog_name=catalog_name, config=config, catalog=catalog)
        self.compactions = Compactions(self)


class JournalSplitManager(ConnectorSplitManager):
    """Plans splits on the driver from the catalog (see ``_scan_planning._split_files`` for the plain/resolve
    choice)."""

    def __init__(self, metadata: JournalMetadata) -> None:
        self._metadata = metadata

    def get_splits(
        self,
        *,
        session: ConnectorSession,
        table_handle: ConnectorTableHandle,
        columns: Sequence[ColumnHandle],
        constraint: Constraint,
    ) -> Sequence[ConnectorSplit]:
        return self._metadata.get_splits(session=session, table_handle=table_handle, constraint=constraint)
