"""Table properties of ``CREATE TABLE [AS] ... WITH (...)`` checked against what the connector declares.

The one place the engine validates table properties (Trino's ``TablePropertyManager``), so no connector can
forget to: ``Engine`` calls :func:`validate_table_properties` before it creates anything, and hands the result
to ``ConnectorMetadata.create_table`` as ``ConnectorTableMetadata.properties``. Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mergekit.errors import ErrorCode, MergekitError
from mergekit.spi import PropertyMetadata

__all__ = ["validate_table_properties"]


def validate_table_properties(
    catalog: str, declared: Sequence[PropertyMetadata], given: Mapping[str, Any]
) -> dict[str, Any]:
    """The properties ``create_table`` receives: ``given`` (name -> value as parsed) decoded by the declared
    property of that name, plus the non-None default of every declared property ``given`` does not set.

    Raises ``INVALID_TABLE_PROPERTY`` for the first property (in statement order) that is not declared
    (listing the declared names), is NULL, or whose value does not convert to the declared type.
    """
    by_name = {p.name: p for p in declared}
    out: dict[str, Any] = {}
    for name, value in given.items():
        prop = by_name.get(name)
        if prop is None:
            valid = sorted(by_name)
            listing = (
                f"Valid properties: {', '.join(valid)}" if valid else f"Catalog '{catalog}' has no table properties"
            )
            raise MergekitError(
                ErrorCode.INVALID_TABLE_PROPERTY,
                f"Catalog '{catalog}' table property '{name}' does not exist. {listing}",
                property=name,
            )
        if value is None:
            raise MergekitError(
                ErrorCode.INVALID_TABLE_PROPERTY,
                f"Invalid null value for catalog '{catalog}' table property '{name}'",
                property=name,
            )
        try:
            out[name] = prop.decode(value)
        except ValueError as exc:
            raise MergekitError(
                ErrorCode.INVALID_TABLE_PROPERTY,
                f"Invalid value for catalog '{catalog}' table property '{name}': {exc}",
                property=name,
            ) from None
    for prop in declared:
        if prop.name not in out and prop.default is not None:
            out[prop.name] = prop.decode(prop.default)
    return out
