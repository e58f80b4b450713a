"""mergekit's SQL dialect: Trino SQL, the base for MonetDB merge-table DDL and Calcite's SELECT STREAM."""

from __future__ import annotations

from typing import Any

from sqlglot.dialects.trino import Trino


class Mergekit(Trino):
    """Trino SQL as mergekit reads it. Extensions (merge-table DDL, STREAM) are added here."""

    class Parser(Trino.Parser):
        def _parse_wrapped_properties(self) -> Any:
            # Marks the properties written as ``WITH (name = value, ...)``: the same typed nodes also come from
            # Hive's clauses (``LOCATION '...'``, ``PARTITIONED BY (...)``), which mergekit refuses by name.
            properties = super()._parse_wrapped_properties()
            for prop in properties:
                for p in prop if isinstance(prop, list) else [prop]:
                    p.meta["with_clause"] = True
            return properties


DIALECT = Mergekit
