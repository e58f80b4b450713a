"""mergekit-jsonl-merge: a mergekit connector over folders of immutable JSON-lines files plus a manifest.

Catalog: ``{"connector": "jsonl-merge", "root": "/data/lake"}``. MERGE, UPDATE, DELETE and INSERT work
through the merge SPI (paradigm ``DELETE_ROW_AND_INSERT_ROW``, row id ``$row_id`` = ``(file, pos)``).
"""

from ._connector import (
    CONNECTOR_NAME,
    JsonlFragment,
    JsonlMergeConnector,
    JsonlMergeConnectorFactory,
    JsonlMergeHandle,
    JsonlSplit,
    JsonlTableHandle,
    unsupported_type_message,
)

__all__ = [
    "CONNECTOR_NAME",
    "JsonlFragment",
    "JsonlMergeConnector",
    "JsonlMergeConnectorFactory",
    "JsonlMergeHandle",
    "JsonlSplit",
    "JsonlTableHandle",
    "unsupported_type_message",
]
