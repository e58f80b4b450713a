"""mergekit-jsonl-rowlevel: an example connector of JSON-lines files with the row-level DELETE/UPDATE SPI.

Tables are folders of JSON-lines files under the catalog option ``root``; DELETE and UPDATE run through mergekit's
row-level SPI (seed 003), INSERT through ``begin_merge`` and a merge sink. See README.md.
"""

from ._connector import (
    CONNECTOR_NAME,
    ROW_ID,
    JsonlRowLevelConnector,
    JsonlRowLevelConnectorFactory,
    unsupported_type_message,
)

__all__ = [
    "CONNECTOR_NAME",
    "ROW_ID",
    "JsonlRowLevelConnector",
    "JsonlRowLevelConnectorFactory",
    "unsupported_type_message",
]
