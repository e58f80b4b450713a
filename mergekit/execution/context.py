"""What one statement binds while it runs: its connector sessions, the tables it read and the Spark views
standing for them (dropped when the statement ends), and the scans' statistics for ``Result.metrics``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mergekit import sql as msql
from mergekit.catalogs import Catalogs, ResolvedTable, version_of
from mergekit.execution.dml.lengths import without_char_columns
from mergekit.spi import ColumnHandle, ConnectorSession, Constraint, TableVersion, sql_type_name

from .scan import scan_table
from .user_frames import UserFrame, frame_schema, in_callers_zone

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["StatementContext", "view_name"]

_view_ids = itertools.count()


def view_name(label: str) -> str:
    """A fresh Spark temporary view name."""
    return f"mk_{label}_{next(_view_ids)}".replace(".", "_").replace("$", "_")


class StatementContext:
    """Spark views for the tables one statement reads; ``drop_views`` when the statement ends.

    ``dataframes`` are the engine's registered DataFrames (readable by name); ``live_views`` the engine's set of
    views not yet dropped (shared by every statement, so ``Engine.close`` can drop what is left)."""

    def __init__(
        self,
        spark: SparkSession | None,
        catalogs: Catalogs,
        *,
        open_spark: Callable[[], SparkSession] | None = None,
        dataframes: Mapping[str, UserFrame] | None = None,
        live_views: set[str] | None = None,
        stream: bool = False,
        session_properties: dict[str, str] | None = None,
        overrides: Mapping[str, str] | None = None,
        connector_properties: Mapping[str, Any] | None = None,
        user_zone: str | None | Callable[[], str | None] = None,
    ) -> None:
        # the session, or what gives it when the statement first uses it (:attr:`spark`)
        self._spark = spark
        self._open_spark = open_spark
        # the zone of the caller's Spark session (None: UTC), or what reads it: what its DataFrames' timestamps
        # are shown in (:attr:`user_zone`)
        self._user_zone = user_zone
        # put in every ConnectorSession of the statement (a streaming job's JobBatch, mergekit.spi._jobs)
        self.connector_properties = dict(connector_properties or {})
        # SET SESSION values: the engine's (SET/RESET SESSION change them), and this statement's in effect
        self.session_properties = session_properties if session_properties is not None else {}
        self.properties: dict[str, str] = {**self.session_properties, **(overrides or {})}
        self.catalogs = catalogs
        self.dataframes = dataframes or {}
        self.live_views = live_views if live_views is not None else set()
        self.stream = stream  # a query's Result reads its rows lazily (Engine.execute(stream=True))
        self.views: dict[msql.TableRef, str] = {}
        self.schema: dict[str, dict[str, str]] = {}
        self.sessions: dict[str, ConnectorSession] = {}
        self.resolved: dict[msql.TableRef, ResolvedTable] = {}
        self.constraints: dict[msql.TableRef, Constraint] = {}  # partition pruning hints per table read
        self.scans: list[dict[str, Any]] = []  # what each connector scan read (splits), for Result.metrics
        self.created: list[str] = []
        # the statement has a predicate that may fail on a row: scans keep their row filtering below it (a bool,
        # or what computes it when a Spark scan first asks: the driver tier never does)
        self._guard_scans: bool | Callable[[], bool] = False

    @property
    def spark(self) -> SparkSession:
        """The Spark session, with mergekit's settings from the statement's first use of it until it ends (a
        statement on the driver tier never asks: no JVM starts for it, no setting is applied)."""
        if self._spark is None:
            assert self._open_spark is not None, "a statement context without a Spark session"
            self._spark = self._open_spark()
        return self._spark

    @property
    def guard_scans(self) -> bool:
        """Whether a predicate of the statement may fail on a row (``mergekit.sql.predicates_may_fail``): Spark
        scans then keep their row-version filtering below it. Set as a bool or as what computes it, asked once."""
        if callable(self._guard_scans):
            self._guard_scans = bool(self._guard_scans())
        return self._guard_scans

    @guard_scans.setter
    def guard_scans(self, value: bool | Callable[[], bool]) -> None:
        self._guard_scans = value

    @property
    def user_zone(self) -> str | None:
        """The zone the caller's session shows timestamps in (None: UTC), read when first asked."""
        if callable(self._user_zone):
            self._user_zone = self._user_zone()
        return self._user_zone

    def session(self, catalog: str) -> ConnectorSession:
        if catalog not in self.sessions:
            self.sessions[catalog] = ConnectorSession(catalog=catalog, properties=self.connector_properties)
        return self.sessions[catalog]

    def resolve(
        self,
        name: msql.QualifiedName,
        *,
        version: TableVersion | None = None,
        changes: tuple[int, int | None] | None = None,
    ) -> ResolvedTable:
        return self.catalogs.resolve(name, self.session, version=version, changes=changes)

    def new_view(self, df: DataFrame, label: str) -> str:
        name = view_name(label)
        df.createOrReplaceTempView(name)
        self.live_views.add(name)
        self.created.append(name)
        return name

    def drop_views(self, names: Sequence[str] | None = None) -> None:
        for name in list(self.created if names is None else names):
            try:
                self.spark.catalog.dropTempView(name)
            except Exception:  # session may be stopping
                pass
            self.live_views.discard(name)

    def bind(self, refs: Sequence[msql.TableRef]) -> None:
        """A view for each table reference not yet bound: a registered DataFrame, or the connector's scan."""
        for ref in refs:
            if ref in self.views:
                continue
            df_name = ".".join(ref.name.parts)
            if df_name in self.dataframes and ref.version is None:
                frame = self.dataframes[df_name]  # the caller's: read as the caller's session shows it (user_frames)
                self.views[ref] = self.new_view(
                    in_callers_zone(self.spark, frame.dataframe(self.spark), self.user_zone), "df"
                )
                self.schema[self.views[ref]] = frame_schema(frame, self.user_zone)
                continue
            changes = (ref.changes_from, ref.changes_to) if ref.changes_from is not None else None
            table = self.resolved.get(ref) or self.resolve(ref.name, version=version_of(ref), changes=changes)
            self.resolved[ref] = table  # (the modality check of a query may have resolved it already)
            visible = table.metadata.visible_columns
            handles = table.connector.get_metadata().get_column_handles(
                session=self.session(table.catalog), table_handle=table.handle
            )
            columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in visible]
            stats: dict[str, Any] = {"table": table.full_name}
            df = scan_table(
                self.spark,
                table.connector,
                self.session(table.catalog),
                table.handle,
                columns,
                without_char_columns(self.constraints.get(ref), table.metadata.columns),
                stats=stats,
                guard=self.guard_scans,
            )
            self.scans.append(stats)
            view = self.new_view(df, table.name.table)
            self.views[ref] = view
            self.schema[view] = {c.name: c.type_name or sql_type_name(c.type) for c in visible}

    def render(self, node: msql.Expression | msql.Query) -> str:
        """Spark SQL of an expression or query over the views of the tables it reads (bound now)."""
        self.bind(node.table_refs())
        return node.to_spark(tables=self.views, schema=self.schema)
