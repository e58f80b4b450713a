"""Result tables of the statements that describe a table (``DESCRIBE HISTORY``, ``SHOW CREATE TABLE``). No Spark."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from mergekit.spi import ConnectorTableMetadata, TableCommit, sql_type_name

__all__ = ["history_table", "create_table_text"]


def history_table(commits: Sequence[TableCommit]) -> pa.Table:
    """``DESCRIBE HISTORY``: one row per commit, newest first, with Delta's leading columns."""
    ordered = sorted(commits, key=lambda c: c.version, reverse=True)
    return pa.table(
        {
            "version": pa.array([c.version for c in ordered], pa.int64()),
            "timestamp": pa.array([c.committed_at for c in ordered], pa.timestamp("us", tz="UTC")),
            "operation": pa.array([c.operation for c in ordered], pa.string()),
            "operation_metrics": pa.array([json.dumps(dict(c.metrics), sort_keys=True) for c in ordered], pa.string()),
        }
    )


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _property_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, list | tuple):
        return "ARRAY[" + ", ".join(_property_value(v) for v in value) + "]"
    return str(value)


def create_table_text(
    name: str,
    metadata: ConnectorTableMetadata,
    properties: Mapping[str, Any],
    *,
    merge_table: bool = False,
    partition_by: str | None = None,
) -> str:
    """``SHOW CREATE TABLE``: the statement that creates the table as it is (Trino's layout), with each visible
    column's type, NOT NULL, DEFAULT and COMMENT, the primary key, the CHECK constraints by name, and
    ``properties`` (the connector's declared table properties) in ``WITH``."""
    items = []
    for c in metadata.visible_columns:
        item = f"   {c.name} {c.type_name or sql_type_name(c.type)}"
        if not c.nullable:
            item += " NOT NULL"
        if c.default is not None:
            item += f" DEFAULT {c.default}"
        if c.comment:
            item += f" COMMENT {_quoted(c.comment)}"
        items.append(item)
    if metadata.primary_key:
        items.append(f"   PRIMARY KEY ({', '.join(metadata.primary_key)})")
    items += [f"   CONSTRAINT {c.name} CHECK ({c.expression})" for c in metadata.check_constraints]
    kind = "MERGE TABLE" if merge_table else "TABLE"
    text = f"CREATE {kind} {name} (\n" + ",\n".join(items) + "\n)"
    if partition_by:
        text += f"\n{partition_by}"
    if properties:
        body = ",\n".join(f"   {k} = {_property_value(v)}" for k, v in sorted(properties.items()))
        text += f"\nWITH (\n{body}\n)"
    return text
