"""mergekit's SQL dialect: Trino SQL, the base for MonetDB merge-table DDL and Calcite's SELECT STREAM."""

from __future__ import annotations

from sqlglot.dialects.trino import Trino


class Mergekit(Trino):
    """Trino SQL as mergekit reads it. Extensions (merge-table DDL, STREAM) are added here."""


DIALECT = Mergekit
