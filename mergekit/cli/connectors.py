"""What ``mergekit connectors`` reports about each installed connector, found without Spark.

For each entry point of the ``mergekit.connectors`` group (and each connector registered in-process): the
distribution that provides it, its version, the first line of its docstring and, when ``probe`` is set, its
behaviours. Probing creates the connector in a temporary directory (a ``warehouse``, ``root`` or ``path`` option,
else a SQLite file as ``uri``, else no option) with two one-column probe tables, one of them with a primary key
(a connector may answer per table), and asks its metadata: the row change paradigm of each table, whether it
offers the row-level DELETE/UPDATE SPI, merge tables, a change feed and time travel, and its procedures. A
connector that writes but has neither a row change paradigm (``get_row_change_paradigm`` raises NOT_SUPPORTED)
nor the row-level SPI is append-only: its paradigm shows as ``INSERT only``; one without a page sink provider as
``-`` (read-only). A connector that cannot be created that way is listed with ``?`` for what could not be found.
"""

from __future__ import annotations

import inspect
import sys
import tempfile
from importlib import metadata as importlib_metadata
from typing import Any

import attrs

__all__ = ["ConnectorInfo", "describe_connectors"]


@attrs.frozen
class ConnectorInfo:
    name: str
    distribution: str
    version: str
    description: str
    paradigm: str = "?"
    features: tuple[str, ...] = ()
    procedures: tuple[str, ...] = ()
    error: str | None = None


def describe_connectors(*, probe: bool = True) -> list[ConnectorInfo]:
    from mergekit import plugins

    out = []
    for name, dist in plugins.available().items():
        version = _version(dist)
        try:
            factory = plugins.get_factory(name)
        except Exception as exc:  # listed, with the reason
            out.append(
                ConnectorInfo(
                    name=name, distribution=dist, version=version, description=f"cannot load: {exc}", error=str(exc)
                )
            )
            continue
        package = sys.modules.get(type(factory).__module__.split(".")[0])
        own = type(factory).__dict__.get("__doc__")  # not ConnectorFactory's, which a factory without one inherits
        description = _first_line(inspect.getdoc(package) or inspect.cleandoc(own or ""))
        info = ConnectorInfo(name=name, distribution=dist, version=version, description=description)
        if probe:
            info = _probe(info, factory)
        out.append(info)
    return out


def _version(dist: str) -> str:
    try:
        return importlib_metadata.version(dist)
    except Exception:  # 'registered' or a missing distribution
        return ""


def _first_line(text: str) -> str:
    """The docstring's first paragraph, as one line (whole: the command line shortens it on a terminal)."""
    return " ".join(text.strip().split("\n\n")[0].split())


def _probe(info: ConnectorInfo, factory: object) -> ConnectorInfo:
    from mergekit import plugins
    from mergekit.spi import ConnectorFactory, ConnectorMetadata, ConnectorSession, create_connector

    assert isinstance(factory, ConnectorFactory)

    with tempfile.TemporaryDirectory(prefix="mergekit-probe-") as tmp:
        connector = None
        # The usual names of a storage location option (a folder, or a database in a SQLite file), then none.
        configs = ({"warehouse": tmp}, {"root": tmp}, {"path": tmp}, {"uri": f"sqlite:///{tmp}/probe.db"}, {})
        for config in configs:
            try:
                connector = create_connector(
                    factory, catalog_name="probe", config=config, context=plugins.connector_context()
                )
                break
            except Exception:  # try without options
                continue
        if connector is None:
            return attrs.evolve(info, error="cannot be created without options")
        features: list[str] = []
        paradigm = "?"
        try:
            md = connector.get_metadata()
            session = ConnectorSession(catalog="probe")
            kind = type(md)
            if kind.create_merge_table is not ConnectorMetadata.create_merge_table:
                features.append("merge tables")
            if kind.get_changes_handle is not ConnectorMetadata.get_changes_handle:
                features.append("change feed")
            try:
                procedures = tuple(sorted(connector.get_procedures()))
            except Exception:
                procedures = ()
            try:
                paradigm, leading = _table_behaviours(connector, md, session)
                features[:0] = leading
            except Exception:  # no CREATE TABLE: leave what could not be found as '?'
                pass
            return attrs.evolve(info, paradigm=paradigm, features=tuple(features), procedures=procedures)
        finally:
            try:
                connector.shutdown()
            except Exception:
                pass


def _table_behaviours(connector: Any, md: Any, session: Any) -> tuple[str, list[str]]:
    """The paradigm column and the first features, from two probe tables: one without a key and one with a
    primary key (a connector may answer per table: sqldb changes rows by their primary key only)."""
    import pyarrow as pa

    from mergekit.execution.dml.contract import overrides
    from mergekit.spi import ColumnMetadata, ConnectorTableMetadata, SchemaTableName, TableVersion

    if "default" not in md.list_schemas(session=session):
        md.create_schema(session=session, schema="default", properties={})
    handles = {}
    for key in ((), ("id",)):
        name = SchemaTableName(schema="default", table="mergekit_probe_keyed" if key else "mergekit_probe")
        column = ColumnMetadata(name="id", type=pa.int64(), nullable=not key)
        try:
            md.create_table(
                session=session,
                table_metadata=ConnectorTableMetadata(table=name, columns=(column,), primary_key=key),
                ignore_existing=True,
            )
        except Exception:  # (a connector without primary keys: the table without one tells all)
            if key:
                continue
            raise
        handle = md.get_table_handle(session=session, table=name)
        if handle is not None:
            handles[key] = (name, handle)
    if not handles:
        return "?", []
    try:
        connector.get_page_sink_provider()
    except Exception:  # read-only connector
        return "-", ["read-only"]
    answers = {key: _paradigm(md, session, handle) for key, (_, handle) in handles.items()}
    plain, keyed = answers.get((), answers.get(("id",))), answers.get(("id",), answers.get(()))
    assert plain is not None and keyed is not None
    paradigm = plain if plain == keyed else f"{keyed} (with a primary key; without: {plain})"
    features = []
    merge_spi = [a for a in answers.values() if a != "INSERT only" and not a.startswith("row-level")]
    if merge_spi:
        features.append("MERGE/UPDATE/DELETE")
    elif overrides(md, "begin_merge"):
        features.append("INSERT")
    row_level = {kind for _, handle in handles.values() for kind in _row_level_kinds(md, session, handle)}
    if row_level:
        features.append(f"row-level {'/'.join(k for k in ('DELETE', 'UPDATE') if k in row_level)}")
    if not merge_spi and (overrides(md, "truncate_table") or "DELETE" in row_level):
        features.append("TRUNCATE")  # (with the merge SPI, MERGE/UPDATE/DELETE says it)
    name, handle = next(iter(handles.values()))
    try:
        if md.get_table_handle(session=session, table=name, version=TableVersion(version=0)) is not None:
            features.append("time travel")
    except Exception:  # NOT_SUPPORTED
        pass
    return paradigm, features


def _paradigm(md: Any, session: Any, handle: Any) -> str:
    """A table's row change paradigm; ``row-level DELETE/UPDATE`` (or the one of them it has) when it has none but
    the row-level SPI, and ``INSERT only`` when it has neither (append-only)."""
    from mergekit.errors import ErrorCode, MergekitError

    try:
        return str(md.get_row_change_paradigm(session=session, table_handle=handle).name)
    except MergekitError as exc:
        if exc.code is not ErrorCode.NOT_SUPPORTED:
            raise
    kinds = _row_level_kinds(md, session, handle)
    return f"row-level {'/'.join(kinds)}" if kinds else "INSERT only"


def _row_level_kinds(md: Any, session: Any, handle: Any) -> list[str]:
    """Which of DELETE and UPDATE the table takes through the row-level SPI (seed 003), as the engine decides."""
    from mergekit.execution.dml.contract import row_level_supported

    return [kind for kind in ("DELETE", "UPDATE") if row_level_supported(md, session, handle, kind)]
