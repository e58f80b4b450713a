"""Catalog configurations read by the command line, without Spark: the TOML file of ``--catalog-config``
(docs/cli.md) and, for ``mergekit rewrite``, the tables a catalog's connector knows.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import Any

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["catalog_tables", "load_catalog_config"]


def load_catalog_config(path: str) -> tuple[dict[str, dict[str, Any]], str, str]:
    """``(catalogs, default_catalog, default_schema)`` from a TOML file (docs/cli.md).

    ``[catalogs.<name>]`` tables each name a ``connector`` and hold its options (a relative ``warehouse`` is
    relative to the file); optional top-level ``default_catalog`` ("lake" if defined, else the first catalog)
    and ``default_schema``.
    """
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS, f"Cannot read the catalog configuration {path}: {exc.strerror}"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS, f"Catalog configuration {path} is not valid TOML: {exc}"
        ) from None
    catalogs = data.get("catalogs")
    if not isinstance(catalogs, dict) or not catalogs:
        raise MergekitError(
            ErrorCode.INVALID_ARGUMENTS,
            f"Catalog configuration {path} defines no catalogs (expected [catalogs.<name>] tables)",
        )
    unknown = sorted(set(data) - {"catalogs", "default_catalog", "default_schema"})
    if unknown:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Catalog configuration {path}: unknown key '{unknown[0]}'")
    base = os.path.dirname(os.path.abspath(path))
    out: dict[str, dict[str, Any]] = {}
    for name, spec in catalogs.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("connector"), str):
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS,
                f"Catalog configuration {path}: catalog '{name}' needs connector = \"<name>\"",
            )
        spec = dict(spec)
        warehouse = spec.get("warehouse")
        if isinstance(warehouse, str) and "://" not in warehouse and not os.path.isabs(warehouse):
            spec["warehouse"] = os.path.normpath(os.path.join(base, warehouse))
        out[name.lower()] = spec
    default_catalog = str(data.get("default_catalog") or ("lake" if "lake" in out else next(iter(out)))).lower()
    if default_catalog not in out:
        raise MergekitError(
            ErrorCode.CATALOG_NOT_FOUND,
            f"Catalog configuration {path}: default_catalog '{default_catalog}' is not defined",
        )
    return out, default_catalog, str(data.get("default_schema") or "default")


def catalog_tables(config: Mapping[str, Any], *, schema: str | None = None) -> dict[str, dict[str, Any]]:
    """Columns, key and version type of every logical table of a catalog, read through its connector
    (``config`` as in ``Engine(catalogs={"lake": config})``). No Spark is started."""
    from mergekit import plugins
    from mergekit.spi import ConnectorSession

    if "connector" not in config:
        raise MergekitError(ErrorCode.INVALID_ARGUMENTS, "The catalog configuration needs a 'connector' entry")
    connector = plugins.create_connector(
        str(config["connector"]), catalog_name="catalog", config={k: v for k, v in config.items() if k != "connector"}
    )
    try:
        md = connector.get_metadata()
        session = ConnectorSession(catalog="catalog")
        tables: dict[str, dict[str, Any]] = {}
        for name in md.list_tables(session=session, schema=schema):
            handle = md.get_table_handle(session=session, table=name)
            if handle is None:
                continue
            meta = md.get_table_metadata(session=session, table_handle=handle)
            if not meta.primary_key:  # journals, change feeds and key-less tables are not rewritten
                continue
            info = {
                "columns": tuple(c.name for c in meta.visible_columns),
                "key": tuple(meta.primary_key),
                "version_type": meta.properties.get("version_type"),
            }
            tables[name.table] = info
            tables[f"{name.schema}.{name.table}"] = info
        return tables
    finally:
        connector.shutdown()
