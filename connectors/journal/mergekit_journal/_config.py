"""Catalog options of the journal connector, parsed once on the driver.

The names mirror the seed's model operands (calcite-sql-rewriter ``JournalledJdbcSchema``) in snake_case:
``journal_suffix``, ``version_field``, ``subsequent_version_field``, ``version_type``, ``default_key`` and
``journal_tables``. Errors reuse the seed's messages so that users of the seed recognise them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["JournalConfig", "parse_config", "normalize_version_type", "BIGINT", "TIMESTAMP"]

BIGINT = "bigint"
TIMESTAMP = "timestamp with time zone"

_VERSION_TYPES = {
    "bigint": BIGINT,
    "long": BIGINT,
    "int64": BIGINT,
    "timestamp": TIMESTAMP,
    "timestamp with time zone": TIMESTAMP,
    "timestamptz": TIMESTAMP,
    "timestamp(6) with time zone": TIMESTAMP,
    "timestamp(3) with time zone": TIMESTAMP,
    # A journal declared with a zone-less TIMESTAMP column (the seed's TIMESTAMP fixtures) is still a
    # timestamp journal: versions are instants, shown in UTC.
    "timestamp(6)": TIMESTAMP,
    "timestamp(3)": TIMESTAMP,
}


def normalize_version_type(text: str) -> str:
    """``'TIMESTAMP'`` -> ``'timestamp with time zone'``; raises INVALID_ARGUMENTS for an unknown type."""
    key = " ".join(str(text).strip().lower().split())
    try:
        return _VERSION_TYPES[key]
    except KeyError:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Unknown version type: {text}") from None


def _key_list(value: Any, option: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value.lower(),)
    if isinstance(value, Sequence):
        keys = tuple(str(v).lower() for v in value)
        return keys or None
    raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"{option} entry is invalid: {value!r}")


@attrs.frozen(kw_only=True)
class JournalConfig:
    """Parsed options. ``journal_tables`` maps a logical table name to its key (None: use ``default_key``)."""

    warehouse: str
    catalog_uri: str
    journal_suffix: str = "_journal"
    version_field: str = "version_number"
    subsequent_version_field: str = "subsequent_version_number"
    version_type: str = TIMESTAMP
    default_key: tuple[str, ...] | None = None
    journal_tables: Mapping[str, tuple[str, ...] | None] = attrs.field(factory=dict)
    retention: int | None = None
    rows_per_file: int = 1_000_000

    def declared_key(self, table: str) -> tuple[bool, tuple[str, ...] | None]:
        """(listed, key) for a logical table name from ``journal_tables`` / ``default_key``."""
        if table in self.journal_tables:
            return True, self.journal_tables[table] or self.default_key
        return False, self.default_key


def _warehouse_uri(value: Any) -> str:
    text = str(value)
    if "://" in text:
        return text.rstrip("/")
    # pyarrow's from_uri wants absolute local paths; a relative warehouse is relative to the driver's cwd.
    return os.path.abspath(text)


def parse_config(config: Mapping[str, Any]) -> JournalConfig:
    """Validate ``config`` (the catalog options) and fill in defaults."""
    known = {
        "connector",
        "warehouse",
        "catalog_uri",
        "journal_suffix",
        "version_field",
        "subsequent_version_field",
        "version_type",
        "default_key",
        "journal_tables",
        "retention",
        "rows_per_file",
    }
    unknown = sorted(set(config) - known)
    if unknown:
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS, f"Unknown journal catalog option: {unknown[0]}", option=unknown[0]
        )
    if not config.get("warehouse"):
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, "The journal connector needs the 'warehouse' option")
    warehouse = _warehouse_uri(config["warehouse"])
    catalog_uri = config.get("catalog_uri")
    if not catalog_uri:
        if "://" in warehouse and not warehouse.startswith("file://"):
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                "catalog_uri is required when the warehouse is not a local directory "
                "(a SQLite catalog needs a local file)",
            )
        base = warehouse[len("file://") :] if warehouse.startswith("file://") else warehouse
        catalog_uri = os.path.join(base, "_catalog.sqlite")
    tables_option = config.get("journal_tables", {})
    journal_tables: dict[str, tuple[str, ...] | None] = {}
    if isinstance(tables_option, Mapping):
        for name, key in tables_option.items():
            journal_tables[str(name).lower()] = _key_list(key, "journal_tables")
    elif isinstance(tables_option, Sequence) and not isinstance(tables_option, str):
        for name in tables_option:
            journal_tables[str(name).lower()] = None
    else:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, "journalTables entry is invalid or missing")
    retention = config.get("retention")
    if retention is not None and (not isinstance(retention, int) or retention < 0):
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"retention must be a non-negative integer: {retention!r}")
    return JournalConfig(
        warehouse=warehouse,
        catalog_uri=str(catalog_uri),
        journal_suffix=str(config.get("journal_suffix", "_journal")).lower(),
        version_field=str(config.get("version_field", "version_number")).lower(),
        subsequent_version_field=str(config.get("subsequent_version_field", "subsequent_version_number")).lower(),
        version_type=normalize_version_type(config.get("version_type", TIMESTAMP)),
        default_key=_key_list(config.get("default_key"), "default_key"),
        journal_tables=journal_tables,
        retention=retention,
        rows_per_file=int(config.get("rows_per_file", 1_000_000)),
    )
