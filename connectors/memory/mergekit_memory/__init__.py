"""mergekit's in-memory test connector.

Tables live in the driver's memory as Arrow tables with a hidden ``$row_id`` column. Splits carry the data
itself to the executors, and sink fragments carry the written rows back to the driver, so the connector
exercises the whole SPI (splits, page sources, merge sinks on executors, fragments, commit) without storage.

Catalog options:
  ``paradigm``: ``DELETE_ROW_AND_INSERT_ROW`` (default) or ``CHANGE_ONLY_UPDATED_COLUMNS``.
  ``fail_sink_on``: a string; a sink raises when a page contains it in any text column (failure tests).
Table properties (``WITH (...)``): ``partitioned_by = ARRAY['col', ...]`` gives the table an insert layout.
"""

from __future__ import annotations

from ._connector import MemoryConnector, MemoryConnectorFactory, MemoryFragment

__all__ = ["MemoryConnector", "MemoryConnectorFactory", "MemoryFragment"]
