"""mergekit-csvdir: an example third-party mergekit connector.

Tables are folders of immutable CSV files plus a JSON manifest; MERGE, UPDATE and DELETE write new CSV
files and deletion files and swap the manifest atomically. Read it as a model for your own connector:
``_storage.py`` is the file format, ``_connector.py`` the SPI. Walkthrough: docs/develop/example-connector.md
in the mergekit repository.

Use it through its entry point::

    Engine(spark=spark, catalogs={"lake": {"connector": "csvdir", "root": "/data/lake"}})
"""

from __future__ import annotations

from ._connector import (
    ROW_ID,
    ROW_ID_TYPE,
    CsvDirectoryConnector,
    CsvDirectoryConnectorFactory,
    CsvFragment,
    CsvSplit,
    CsvTableHandle,
)

__all__ = [
    "ROW_ID",
    "ROW_ID_TYPE",
    "CsvDirectoryConnector",
    "CsvDirectoryConnectorFactory",
    "CsvFragment",
    "CsvSplit",
    "CsvTableHandle",
]
