"""What ``mergekit connectors`` reports about each installed connector, found without Spark.

For each entry point of the ``mergekit.connectors`` group (and each connector registered in-process): the
distribution that provides it, its version, the first line of its docstring and, when ``probe`` is set, its
behaviours. Probing creates the connector in a temporary directory (``warehouse`` option) with a one-column
probe table and asks its metadata: the row change paradigm for that table, whether it has an insert layout
(partitioned writes), whether it offers merge tables, a change feed and time travel, and its procedures.
A connector that writes but has no row change paradigm (``get_row_change_paradigm`` raises NOT_SUPPORTED) is
append-only: its paradigm shows as ``INSERT only``; one without a page sink provider as ``-`` (read-only).
A connector that cannot be created that way is listed with ``?`` for what could not be found.
"""

from __future__ import annotations

import inspect
import sys
import tempfile
from importlib import metadata as importlib_metadata

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
        description = _first_line(inspect.getdoc(package) or inspect.getdoc(type(factory)) or "")
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
    line = text.strip().split("\n\n")[0].replace("\n", " ")
    return line if len(line) <= 90 else line[:87] + "..."


def _probe(info: ConnectorInfo, factory: object) -> ConnectorInfo:
    import pyarrow as pa

    from mergekit import plugins
    from mergekit.errors import ErrorCode, MergekitError
    from mergekit.spi import (
        ColumnMetadata,
        ConnectorFactory,
        ConnectorMetadata,
        ConnectorSession,
        ConnectorTableMetadata,
        SchemaTableName,
        TableVersion,
        create_connector,
    )

    assert isinstance(factory, ConnectorFactory)

    with tempfile.TemporaryDirectory(prefix="mergekit-probe-") as tmp:
        connector = None
        # The usual names of a storage location option, then none.
        for config in ({"warehouse": tmp}, {"root": tmp}, {"path": tmp}, {}):
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
            name = SchemaTableName(schema="default", table="mergekit_probe")
            try:
                if "default" not in md.list_schemas(session=session):
                    md.create_schema(session=session, schema="default", properties={})
                md.create_table(
                    session=session,
                    table_metadata=ConnectorTableMetadata(
                        table=name, columns=(ColumnMetadata(name="id", type=pa.int64(), nullable=True),)
                    ),
                    ignore_existing=True,
                )
                handle = md.get_table_handle(session=session, table=name)
                if handle is not None:
                    try:
                        connector.get_page_sink_provider()
                        writable = True
                    except Exception:  # read-only connector
                        writable = False
                    if not writable:
                        features.insert(0, "read-only")
                        paradigm = "-"
                    else:
                        try:
                            paradigm = md.get_row_change_paradigm(session=session, table_handle=handle).name
                            features.insert(0, "MERGE/UPDATE/DELETE")
                        except MergekitError as exc:  # append-only: INSERT works, row changes do not
                            if exc.code is not ErrorCode.NOT_SUPPORTED:
                                raise
                            paradigm = "INSERT only"
                            features.insert(0, "INSERT")
                    try:
                        if (
                            md.get_table_handle(session=session, table=name, version=TableVersion(version=0))
                            is not None
                        ):
                            features.append("time travel")
                    except Exception:  # NOT_SUPPORTED
                        pass
            except Exception:  # no CREATE TABLE: leave what could not be found as '?'
                pass
            return attrs.evolve(info, paradigm=paradigm, features=tuple(features), procedures=procedures)
        finally:
            try:
                connector.shutdown()
            except Exception:
                pass
