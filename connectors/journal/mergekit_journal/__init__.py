"""mergekit's journal connector: append-only versioned tables on immutable Parquet files.

Seed 000 (calcite-sql-rewriter) emulates INSERT, UPDATE and DELETE on storage that can only append: every
change is a new row version in ``<t>_journal`` with ``version_number`` and ``subsequent_version_number``, and
``<t>`` shows the latest live version per key. This package keeps that model and its options, and adds what
the seed lists as its limitations: enforced primary keys, key moves, conflict detection between concurrent
writers, time travel, a change feed, compaction and vacuum.

Only ``mergekit.spi``, ``mergekit.errors``, pyarrow, attrs and the standard library are imported (psycopg
lazily, for a PostgreSQL catalog).
"""

from __future__ import annotations

from ._config import JournalConfig, parse_config
from ._connector import JournalConnector, JournalConnectorFactory
from ._handles import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    HIDDEN_ROW_ID,
    ROW_KEY,
    JournalFragment,
    JournalMergeHandle,
    JournalSplit,
    JournalTableHandle,
    TableSpec,
)
from ._metadata import JournalMetadata

__all__ = [
    "CHANGE_TYPE",
    "COMMIT_TIMESTAMP",
    "COMMIT_VERSION",
    "HIDDEN_ROW_ID",
    "ROW_KEY",
    "JournalConfig",
    "JournalConnector",
    "JournalConnectorFactory",
    "JournalFragment",
    "JournalMergeHandle",
    "JournalMetadata",
    "JournalSplit",
    "JournalTableHandle",
    "TableSpec",
    "parse_config",
]
