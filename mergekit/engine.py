"""The embedder's facade (DESIGN.md §4): ``Engine.local()``, ``Engine(spark=..., catalogs=...)``, ``execute``."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute in _Misfits
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from mergekit import plugins
from mergekit import sql as msql
from mergekit.describe import history_table
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.dml import DmlStats, MergeQueryBuilder, check_types, q, run_merge_pipeline
from mergekit.execution.errors import translate_error
from mergekit.execution.lookup import KEY, arrow_join_type, binary_collation, compile_lookup, run_lookup_merge
from mergekit.execution.scan import scan_table
from mergekit.execution.session import applied_conf, local_session, python_for_workers
from mergekit.execution.stream import SparkArrowSource
from mergekit.execution.types import arrow_type, spark_sql_type, spark_type, trino_name
from mergekit.planner import JoinKind, MergePlan, TargetTable, plan_delete, plan_insert, plan_merge, plan_update
from mergekit.planner.properties import validate_table_properties
from mergekit.result import Result
from mergekit.spi import (
    ColumnHandle,
    ColumnMetadata,
    Connector,
    ConnectorMergeTableHandle,
    ConnectorSession,
    ConnectorTableHandle,
    ConnectorTableMetadata,
    Constraint,
    PartitionBounds,
    PartitionKind,
    PartitionMethod,
    PartitionScheme,
    RowChangeParadigm,
    SchemaTableName,
    TableVersion,
    parse_sql_type,
    sql_type_name,
)

__all__ = ["Engine", "MergeBuilder"]

_view_ids = itertools.count()


@attrs.frozen(kw_only=True)
class ResolvedTable:
    catalog: str
    name: SchemaTableName
    connector: Connector
    handle: ConnectorTableHandle
    metadata: ConnectorTableMetadata

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.name}"


class _Binding:
    """Spark views for the tables one statement reads; dropped when the statement ends."""

    def __init__(self, engine: Engine, session_by_catalog: dict[str, ConnectorSession]) -> None:
        self.engine = engine
        self.views: dict[msql.TableRef, str] = {}
        self.schema: dict[str, dict[str, str]] = {}
        self.sessions = session_by_catalog
        self.resolved: dict[msql.TableRef, ResolvedTable] = {}
        self.constraints: dict[msql.TableRef, Constraint] = {}  # partition pruning hints per table read
        self.scans: list[dict[str, Any]] = []  # what each connector scan read (splits), for Result.metrics
        self.stream = False  # a query's Result reads its rows lazily (Engine.execute(stream=True))

    def session(self, catalog: str) -> ConnectorSession:
        if catalog not in self.sessions:
            self.sessions[catalog] = ConnectorSession(catalog=catalog)
        return self.sessions[catalog]

    def new_view(self, df: DataFrame, label: str) -> str:
        name = f"mk_{label}_{next(_view_ids)}".replace(".", "_").replace("$", "_")
        df.createOrReplaceTempView(name)
        self.engine._live_views.add(name)
        self._created.append(name)
        return name

    _created: list[str]

    def bind(self, refs: Sequence[msql.TableRef]) -> None:
        for ref in refs:
            if ref in self.views:
                continue
            df_name = ".".join(ref.name.parts)
            if df_name in self.engine._dataframes and ref.version is None:
                df = self.engine._dataframes[df_name]
                self.views[ref] = self.new_view(df, "df")
                self.schema[self.views[ref]] = {f.name: trino_name(f.dataType) for f in df.schema.fields}
                continue
            changes = (ref.changes_from, ref.changes_to) if ref.changes_from is not None else None
            table = self.engine._resolve(ref.name, self, version=_version_of(ref), changes=changes)
            self.resolved[ref] = table
            visible = table.metadata.visible_columns
            handles = table.connector.get_metadata().get_column_handles(
                session=self.session(table.catalog), table_handle=table.handle
            )
            columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in visible]
            stats: dict[str, Any] = {"table": table.full_name}
            df = scan_table(
                self.engine.spark,
                table.connector,
                self.session(table.catalog),
                table.handle,
                columns,
                self.constraints.get(ref),
                stats=stats,
            )
            self.scans.append(stats)
            view = self.new_view(df, table.name.table)
            self.views[ref] = view
            self.schema[view] = {c.name: c.type_name or sql_type_name(c.type) for c in visible}

    def render(self, node: msql.Expression | msql.Query) -> str:
        self.bind(node.table_refs())
        return node.to_spark(tables=self.views, schema=self.schema)


def _version_of(ref: msql.TableRef) -> TableVersion | None:
    if ref.version is not None:
        return TableVersion(version=ref.version)
    if ref.timestamp is not None:
        import datetime as dt
        import re

        text = re.sub(r"^(?i:timestamp)\s*", "", ref.timestamp).strip().strip("'")
        text = re.sub(r"^CAST\('(.*)' AS .*\)$", r"\1", text)
        try:
            ts = dt.datetime.fromisoformat(text.replace(" UTC", "+00:00"))
        except ValueError as exc:
            raise MergekitError(
                ErrorCode.INVALID_ARGUMENTS, f"Invalid timestamp for time travel: {ref.timestamp}"
            ) from exc
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return TableVersion(timestamp=ts)
    return None


class Engine:
    """Runs mergekit SQL on a Spark session against connector catalogs.

    ``catalogs`` maps a catalog name to either a :class:`~mergekit.spi.Connector` or a config dict with a
    ``connector`` key naming an installed connector (entry-point group ``mergekit.connectors``); the other
    keys are that connector's options.
    """

    def __init__(
        self,
        *,
        spark: SparkSession | None = None,
        catalogs: Mapping[str, Connector | Mapping[str, Any]] | None = None,
        default_catalog: str = "lake",
        default_schema: str = "default",
    ) -> None:
        self.spark = spark if spark is not None else local_session()
        # the session's configuration stays the caller's: mergekit's settings apply per statement (applied_conf)
        self._python_exec = python_for_workers(self.spark)
        self.default_catalog = default_catalog
        self.default_schema = default_schema
        self._catalogs: dict[str, Connector] = {}
        self._dataframes: dict[str, DataFrame] = {}
        self._live_views: set[str] = set()
        self._lock = threading.RLock()
        for name, spec in (catalogs or {"lake": {"connector": "memory"}}).items():
            self.add_catalog(name, spec)

    @classmethod
    def local(
        cls,
        warehouse: str = "./warehouse",
        *,
        catalogs: Mapping[str, Connector | Mapping[str, Any]] | None = None,
        connector: str | None = None,
        **options: Any,
    ) -> Engine:
        """The embedded default: a local Spark session (the active one if any, with the workers running this
        interpreter), catalog ``lake`` over ``warehouse``, schema ``default``."""
        spark = local_session()
        if catalogs is None:
            name = connector or _default_connector()
            catalogs = {"lake": {"connector": name, "warehouse": str(warehouse), **options}}
        return cls(spark=spark, catalogs=catalogs)

    # ---- catalogs ----------------------------------------------------------------------------------

    def add_catalog(self, name: str, spec: Connector | Mapping[str, Any]) -> Connector:
        if isinstance(spec, Connector):
            connector = spec
        else:
            config = dict(spec)
            connector_name = config.pop("connector", None)
            if not connector_name:
                raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"Catalog '{name}' does not name a connector")
            connector = plugins.get_factory(str(connector_name)).create(catalog_name=name, config=config)
        self._catalogs[name.lower()] = connector
        return connector

    def catalog(self, name: str) -> Connector:
        try:
            return self._catalogs[name.lower()]
        except KeyError:
            raise MergekitError(ErrorCode.CATALOG_NOT_FOUND, f"Catalog '{name}' does not exist") from None

    @property
    def catalogs(self) -> Mapping[str, Connector]:
        return dict(self._catalogs)

    def close(self) -> None:
        for connector in self._catalogs.values():
            connector.shutdown()
        self._drop_views(list(self._live_views))

    # ---- names -------------------------------------------------------------------------------------

    def _split_name(self, name: msql.QualifiedName) -> tuple[str, SchemaTableName]:
        parts = name.parts
        if len(parts) == 1:
            return self.default_catalog, SchemaTableName(schema=self.default_schema, table=parts[0])
        if len(parts) == 2:
            return self.default_catalog, SchemaTableName(schema=parts[0], table=parts[1])
        if len(parts) == 3:
            return parts[0], SchemaTableName(schema=parts[1], table=parts[2])
        raise MergekitError(ErrorCode.SYNTAX_ERROR, f"Too many dots in table name: {name}")

    def _resolve(
        self,
        name: msql.QualifiedName,
        binding: _Binding | None = None,
        version: TableVersion | None = None,
        changes: tuple[int, int | None] | None = None,
    ) -> ResolvedTable:
        catalog, table = self._split_name(name)
        connector = self.catalog(catalog)
        session = binding.session(catalog) if binding else ConnectorSession(catalog=catalog)
        metadata = connector.get_metadata()
        if changes is not None:
            handle = metadata.get_changes_handle(
                session=session, table=table, from_version=changes[0], to_version=changes[1]
            )
        else:
            handle = metadata.get_table_handle(session=session, table=table, version=version)
        if handle is None:
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{catalog}.{table}' does not exist")
        meta = metadata.get_table_metadata(session=session, table_handle=handle)
        return ResolvedTable(catalog=catalog, name=table, connector=connector, handle=handle, metadata=meta)

    # ---- statements --------------------------------------------------------------------------------

    def execute(self, sql: str, *, stream: bool = False) -> Result:
        """Run one statement. Raises :class:`~mergekit.errors.MergekitError`; a failed statement changes nothing.

        ``stream=True``: a query's rows are not collected; the result reads them from Spark when they are
        iterated (``Result.batches()``, iteration), one partition at a time, so any size fits in memory."""
        statement = msql.parse_statement(sql)
        return self._run(statement, stream=stream)

    def execute_script(self, text: str) -> list[Result]:
        """Run statements separated by ';' in order; stops at the first failure (which raises)."""
        return [self.execute(piece) for piece in msql.split_statements(text)]

    def table(self, name: str, *, version: int | None = None) -> DataFrame:
        """The table's current state (or a version of it) as a Spark DataFrame.

        It is analysed with mergekit's settings (UTC, ANSI arithmetic) and keeps them when evaluated later; what the
        caller adds to it is analysed with the caller's session settings (docs/quickstart.md, "Embedding")."""
        qname = msql.QualifiedName(tuple(p.strip('"').lower() for p in name.split(".")))
        ref = msql.TableRef(name=qname, version=version)
        binding = self._binding()
        with self._lock, applied_conf(self.spark, self._python_exec):
            binding.bind([ref])
            return self.spark.table(binding.views[ref])

    def merge_into(
        self, target: str, *, source: DataFrame | str, on: str, source_alias: str = "s", target_alias: str | None = None
    ) -> MergeBuilder:
        """A fluent MERGE builder; ``execute()`` plans it exactly like the SQL statement."""
        return MergeBuilder(self, target, source, on, source_alias, target_alias)

    def register_dataframe(self, name: str, df: DataFrame) -> None:
        """Make a DataFrame readable by name in statements (for sources that are not catalog tables)."""
        self._dataframes[name.lower()] = df

    def unregister_dataframe(self, name: str) -> None:
        self._dataframes.pop(name.lower(), None)

    def _binding(self) -> _Binding:
        b = _Binding(self, {})
        b._created = []
        return b

    def _drop_views(self, names: Sequence[str]) -> None:
        for name in names:
            try:
                self.spark.catalog.dropTempView(name)
            except Exception:  # noqa: BLE001 - session may be stopping
                pass
            self._live_views.discard(name)

    @contextmanager
    def _statement(self) -> Iterator[_Binding]:
        binding = self._binding()
        try:
            yield binding
        finally:
            self._drop_views(binding._created)

    def _run(self, statement: msql.Statement, *, stream: bool = False) -> Result:
        with self._lock, applied_conf(self.spark, self._python_exec), self._statement() as binding:
            binding.stream = stream
            try:
                return self._dispatch(statement, binding)
            except MergekitError:
                raise
            except Exception as exc:  # Spark, py4j, worker failures
                raise translate_error(exc) from exc

    def _dispatch(self, st: msql.Statement, binding: _Binding) -> Result:
        if isinstance(st, msql.Query):
            return self._query(st, binding)
        if isinstance(st, msql.Merge | msql.Update | msql.Delete | msql.Insert):
            return self._dml(st, binding)
        if isinstance(st, msql.Explain):
            return self._explain(st, binding)
        if isinstance(st, msql.CreateTable):
            return self._create_table(st, binding)
        if isinstance(st, msql.DropTable):
            return self._drop_table(st, binding)
        if isinstance(st, msql.CreateSchema):
            catalog = st.name.parts[0] if len(st.name.parts) == 2 else self.default_catalog
            schema = st.name.parts[-1]
            meta = self.catalog(catalog).get_metadata()
            if st.if_not_exists and schema in meta.list_schemas(session=binding.session(catalog)):
                return Result(statement="CREATE SCHEMA")
            meta.create_schema(session=binding.session(catalog), schema=schema, properties={})
            return Result(statement="CREATE SCHEMA")
        if isinstance(st, msql.ShowTables):
            catalog = st.schema.parts[0] if st.schema and len(st.schema.parts) == 2 else self.default_catalog
            schema = st.schema.parts[-1] if st.schema else self.default_schema
            names = self.catalog(catalog).get_metadata().list_tables(session=binding.session(catalog), schema=schema)
            tables = [n.table for n in names if st.like is None or msql.like_matches(n.table, st.like, st.escape)]
            return Result(statement="SHOW TABLES", table=pa.table({"Table": pa.array(tables, pa.string())}))
        if isinstance(st, msql.DescribeHistory):
            table = self._resolve(st.name, binding)
            commits = table.connector.get_metadata().get_table_history(
                session=binding.session(table.catalog), table_handle=table.handle
            )
            return Result(statement="DESCRIBE HISTORY", table=history_table(commits))
        if isinstance(st, msql.ShowSchemas):
            catalog = st.catalog or self.default_catalog
            names = self.catalog(catalog).get_metadata().list_schemas(session=binding.session(catalog))
            return Result(statement="SHOW SCHEMAS", table=pa.table({"Schema": pa.array(list(names), pa.string())}))
        if isinstance(st, msql.Describe):
            table = self._resolve(st.name, binding)
            cols = table.metadata.visible_columns
            return Result(
                statement="DESCRIBE",
                table=pa.table(
                    {
                        "Column": [c.name for c in cols],
                        "Type": [c.type_name or sql_type_name(c.type) for c in cols],
                        "Extra": ["" if c.nullable else "not null" for c in cols],
                        "Comment": [c.comment or "" for c in cols],
                    }
                ),
            )
        if isinstance(st, msql.Truncate):
            table = self._resolve(st.name, binding)
            meta = table.connector.get_metadata()
            try:
                meta.truncate_table(session=binding.session(table.catalog), table_handle=table.handle)
            except MergekitError as exc:
                if exc.code is not ErrorCode.NOT_SUPPORTED:
                    raise
                return self._dml(msql.Delete(target=st.name, where=None), binding)
            return Result(statement="TRUNCATE")
        if isinstance(st, msql.AlterTableAddColumn):
            table = self._resolve(st.name, binding)
            if any(c.name == st.column.name for c in table.metadata.columns):
                if st.if_not_exists:
                    return Result(statement="ALTER TABLE")
                raise MergekitError(ErrorCode.DUPLICATE_COLUMN_NAME, f"Column '{st.column.name}' already exists")
            table.connector.get_metadata().add_column(
                session=binding.session(table.catalog), table_handle=table.handle, column=_column_metadata(st.column)
            )
            return Result(statement="ALTER TABLE")
        if isinstance(st, msql.Call):
            return self._call(st, binding)
        if isinstance(st, msql.CreateFunction):
            msql.register_function(st.function)
            return Result(statement="CREATE FUNCTION")
        if isinstance(st, msql.CreateMergeTable | msql.AlterTableSetPartition | msql.AlterTableDropPartition):
            return self._merge_table_ddl(st, binding)
        if isinstance(st, msql.AlterTableDropColumn):
            table = self._resolve(st.name, binding)
            if st.column not in {c.name for c in table.metadata.columns}:
                raise MergekitError(ErrorCode.COLUMN_NOT_FOUND, f"Column '{st.column}' does not exist")
            table.connector.get_metadata().drop_column(
                session=binding.session(table.catalog), table_handle=table.handle, column=st.column
            )
            return Result(statement="ALTER TABLE")
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Statement not supported: {type(st).__name__}")

    # ---- queries -----------------------------------------------------------------------------------

    def _query(self, st: msql.Query, binding: _Binding) -> Result:
        binding.constraints.update({ref: _spi_constraint(found) for ref, found in msql.scan_constraints(st).items()})
        text = binding.render(st)
        df = self.spark.sql(text)  # analysed now: it still reads the statement's views once they are dropped
        if binding.stream:
            return Result(statement="SELECT", source=SparkArrowSource(df), metrics={"scans": binding.scans})
        table = df.toArrow()
        return Result(statement="SELECT", table=_normalize_arrow(table), metrics={"scans": list(binding.scans)})

    def _explain(self, st: msql.Explain, binding: _Binding) -> Result:
        inner = st.statement
        if isinstance(inner, msql.Merge | msql.Update | msql.Delete | msql.Insert):
            plan, _ = self._plan(inner, binding)
            text = plan.explain()
        elif isinstance(inner, msql.Query):
            rendered = binding.render(inner)
            text = self.spark.sql(f"EXPLAIN {rendered}").collect()[0][0]
        else:
            text = repr(inner)
        return Result(statement="EXPLAIN", table=pa.table({"Query Plan": [text]}))

    # ---- DDL ---------------------------------------------------------------------------------------

    def _create_table(self, st: msql.CreateTable, binding: _Binding) -> Result:
        catalog, name = self._split_name(st.name)
        connector = self.catalog(catalog)
        session = binding.session(catalog)
        meta = connector.get_metadata()
        properties = validate_table_properties(catalog, connector.get_table_properties(), st.properties)
        exists = meta.get_table_handle(session=session, table=name) is not None
        if exists:
            if st.if_not_exists:
                return Result(statement="CREATE TABLE", row_count=0 if st.as_query else None)
            raise MergekitError(ErrorCode.TABLE_ALREADY_EXISTS, f"Table '{catalog}.{name}' already exists")
        if st.as_query is not None:
            df = self.spark.sql(binding.render(st.as_query))
            columns = tuple(
                ColumnMetadata(name=f.name.lower(), type=arrow_type(f.dataType), type_name=trino_name(f.dataType))
                for f in df.schema.fields
            )
            names = [c.name for c in columns]
            dupes = {n for n in names if names.count(n) > 1}
            if dupes:
                raise MergekitError(
                    ErrorCode.DUPLICATE_COLUMN_NAME, f"Column name '{sorted(dupes)[0]}' specified more than once"
                )
        else:
            columns = tuple(_column_metadata(c) for c in st.columns)
            names = [c.name for c in columns]
            dupes = {n for n in names if names.count(n) > 1}
            if dupes:
                raise MergekitError(
                    ErrorCode.DUPLICATE_COLUMN_NAME, f"Column name '{sorted(dupes)[0]}' specified more than once"
                )
        for key in st.primary_key:
            if key not in names:
                raise MergekitError(
                    ErrorCode.COLUMN_NOT_FOUND, f"Primary key column '{key}' is not a column of the table"
                )
        table_metadata = ConnectorTableMetadata(
            table=name, columns=columns, primary_key=st.primary_key, properties=properties
        )
        meta.create_table(session=session, table_metadata=table_metadata, ignore_existing=st.if_not_exists)
        if st.as_query is None:
            return Result(statement="CREATE TABLE")
        if not st.with_data:  # CREATE TABLE ... AS query WITH NO DATA: the query's columns, no rows
            return Result(statement="CREATE TABLE AS", row_count=0)
        try:
            result = self._dml(msql.Insert(target=st.name, columns=None, source=st.as_query), binding)
        except BaseException:
            handle = meta.get_table_handle(session=session, table=name)
            if handle is not None:
                meta.drop_table(session=session, table_handle=handle)
            raise
        return attrs.evolve(result, statement="CREATE TABLE AS")

    def _drop_table(self, st: msql.DropTable, binding: _Binding) -> Result:
        catalog, name = self._split_name(st.name)
        meta = self.catalog(catalog).get_metadata()
        session = binding.session(catalog)
        handle = meta.get_table_handle(session=session, table=name)
        if handle is None:
            if st.if_exists:
                return Result(statement="DROP TABLE")
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{catalog}.{name}' does not exist")
        meta.drop_table(session=session, table_handle=handle)
        return Result(statement="DROP TABLE")

    def _call(self, st: msql.Call, binding: _Binding) -> Result:
        parts = st.name.parts
        catalog = parts[0] if len(parts) == 3 else self.default_catalog
        procedure = parts[-1]
        connector = self.catalog(catalog)
        procedures = connector.get_procedures()
        if procedure not in procedures:
            raise MergekitError(
                ErrorCode.NOT_SUPPORTED, f"Procedure '{procedure}' does not exist in catalog '{catalog}'"
            )
        out = procedures[procedure](*st.arguments, session=binding.session(catalog), **dict(st.named_arguments))
        if isinstance(out, pa.Table):
            return Result(statement="CALL", table=out)
        if isinstance(out, Mapping):
            return Result(statement="CALL", metrics=dict(out))
        return Result(statement="CALL")

    # ---- merge tables (seed 004) -------------------------------------------------------------------

    def _merge_table_ddl(self, st: msql.Statement, binding: _Binding) -> Result:
        if isinstance(st, msql.CreateMergeTable):
            catalog, name = self._split_name(st.name)
            meta = self.catalog(catalog).get_metadata()
            session = binding.session(catalog)
            columns = tuple(_column_metadata(c) for c in st.columns)
            names = [c.name for c in columns]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise MergekitError(
                    ErrorCode.DUPLICATE_COLUMN_NAME, f"Column name '{dupes[0]}' specified more than once"
                )
            scheme = self._partition_scheme(st, columns) if st.partition_by is not None else None
            meta.create_merge_table(
                session=session,
                table_metadata=ConnectorTableMetadata(table=name, columns=columns, primary_key=st.primary_key),
                scheme=scheme,
                ignore_existing=st.if_not_exists,
            )
            return Result(statement="CREATE MERGE TABLE")
        assert isinstance(st, msql.AlterTableSetPartition | msql.AlterTableDropPartition)
        catalog, merge_name = self._split_name(st.name)
        child_catalog, child_name = self._split_name(st.child)
        if child_catalog != catalog:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, "ALTER TABLE: a child must be in the merge table's catalog")
        meta = self.catalog(catalog).get_metadata()
        session = binding.session(catalog)
        handle = meta.get_table_handle(session=session, table=merge_name)
        if handle is None:
            if st.if_exists:
                return Result(statement="ALTER TABLE")
            raise MergekitError(ErrorCode.TABLE_NOT_FOUND, f"Table '{catalog}.{merge_name}' does not exist")
        if isinstance(st, msql.AlterTableDropPartition):
            meta.drop_table_partition(session=session, merge_table=merge_name, child=child_name)
            return Result(statement="ALTER TABLE")
        scheme = meta.get_partition_scheme(session=session, table_handle=handle)
        bounds, values = None, None
        if st.partition is not None:
            bounds, values = self._partition_bounds(st.partition, scheme, binding)

        def check_rows(child: SchemaTableName, levels: Sequence[tuple[PartitionScheme, PartitionBounds]]) -> list[int]:
            return self._misfits(catalog, child, levels, binding)

        meta.set_table_partition(
            session=session,
            merge_table=merge_name,
            child=child_name,
            bounds=bounds,
            bound_values=values,
            replace=st.replace,
            check_rows=check_rows,
        )
        return Result(statement="ALTER TABLE")

    def _partition_scheme(self, st: msql.CreateMergeTable, columns: Sequence[ColumnMetadata]) -> PartitionScheme:
        by = st.partition_by
        assert by is not None
        method = PartitionMethod(by.method)
        if by.column is not None:
            col = next(c for c in columns if c.name == by.column)
            key_type, type_name = col.type, col.type_name or sql_type_name(col.type)
            what = "column"
        else:
            assert by.expression is not None
            schema = T.StructType([T.StructField(c.name, spark_type(c.type), True) for c in columns])
            view = f"mk_partition_probe_{next(_view_ids)}"
            self.spark.createDataFrame([], schema).createOrReplaceTempView(view)
            try:
                types = {c.name: c.type_name or sql_type_name(c.type) for c in columns}
                expr_sql = by.expression.to_spark(tables={}, schema={view: types})
                field = self.spark.sql(f"SELECT {expr_sql} AS k FROM {view}").schema.fields[0]
            finally:
                self.spark.catalog.dropTempView(view)
            key_type, type_name = arrow_type(field.dataType), trino_name(field.dataType)
            what = "expression"
        if pa.types.is_floating(key_type) or not (
            pa.types.is_integer(key_type)
            or pa.types.is_decimal(key_type)
            or pa.types.is_string(key_type)
            or pa.types.is_temporal(key_type)
            or pa.types.is_boolean(key_type)
        ):
            raise MergekitError(
                ErrorCode.INVALID_PARTITION,
                f"CREATE MERGE TABLE: column type {type_name} not yet supported for the partition {what}",
            )
        return PartitionScheme(
            method=method,
            column=by.column,
            expression=by.expression.sql if by.expression is not None else None,
            expression_columns=tuple(sorted(n for _, n in by.expression.column_refs()))
            if by.expression is not None
            else (),
            key_type=key_type,
            key_type_name=type_name,
        )

    def _partition_bounds(
        self, clause: msql.PartitionClause, scheme: PartitionScheme | None, binding: _Binding
    ) -> tuple[PartitionBounds, list[Any]]:
        """Evaluate the clause's constant expressions in Spark, cast to the partition key's type."""
        exprs: tuple[msql.Expression, ...]
        if clause.kind == "range":
            exprs = tuple(e for e in (clause.minimum, clause.maximum) if e is not None)
        else:
            exprs = clause.values
        values: list[Any] = []
        if exprs:
            query = (
                msql.cast_query(exprs, scheme.key_type_name)
                if scheme is not None
                else msql.Query(
                    node=msql.parse_statement("SELECT " + ", ".join(e.sql for e in exprs)).node  # type: ignore[attr-defined]
                )
            )
            values = list(self.spark.sql(binding.render(query)).collect()[0])
        if clause.kind == "range":
            it = iter(values)
            minimum = next(it) if clause.minimum is not None else None
            maximum = next(it) if clause.maximum is not None else None
            bounds = PartitionBounds(
                kind=PartitionKind.RANGE, minimum=minimum, maximum=maximum, with_nulls=clause.with_nulls
            )
        elif clause.kind == "values":
            distinct = [v for v in dict.fromkeys(values) if v is not None]
            bounds = PartitionBounds(kind=PartitionKind.VALUES, values=distinct, with_nulls=clause.with_nulls)
        else:
            bounds = PartitionBounds(kind=PartitionKind.NULL, with_nulls=True)
        return bounds, values

    def _misfits(
        self,
        catalog: str,
        child: SchemaTableName,
        levels: Sequence[tuple[PartitionScheme, PartitionBounds]],
        binding: _Binding,
    ) -> list[int]:
        """Per level, how many of the child's current rows its bounds do not hold (one Spark job)."""
        table = self._resolve(msql.QualifiedName((catalog, child.schema, child.table)), binding)
        visible = table.metadata.visible_columns
        handles = table.connector.get_metadata().get_column_handles(
            session=binding.session(catalog), table_handle=table.handle
        )
        columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in visible]
        df = scan_table(self.spark, table.connector, binding.session(catalog), table.handle, columns)
        types = {c.name: c.type_name or sql_type_name(c.type) for c in visible}
        keys = []
        for i, (scheme, _) in enumerate(levels):
            expr_sql = msql.parse_expression(scheme.key_expression).to_spark(tables={}, schema={"$rows": types})
            keys.append(f"CAST(({expr_sql}) AS {spark_sql_type(spark_type(scheme.key_type))}) AS `$k{i}`")
        counted = df.selectExpr(*keys).mapInArrow(_Misfits(tuple(b for _, b in levels)), "level int, n long")
        totals = {
            r["level"]: r["n"] for r in counted.groupBy("level").sum("n").withColumnRenamed("sum(n)", "n").collect()
        }
        return [int(totals.get(i, 0)) for i in range(len(levels))]

    # ---- DML ---------------------------------------------------------------------------------------

    def _target(
        self, name: msql.QualifiedName, binding: _Binding, *, insert_only: bool = False
    ) -> tuple[ResolvedTable, TargetTable]:
        table = self._resolve(name, binding)
        meta = table.connector.get_metadata()
        session = binding.session(table.catalog)
        try:
            row_id = meta.get_merge_row_id_column_handle(session=session, table_handle=table.handle)
            paradigm = meta.get_row_change_paradigm(session=session, table_handle=table.handle)
        except MergekitError as exc:
            # An INSERT changes no existing row: an append-only connector needs neither a row id nor a paradigm.
            if not insert_only or exc.code is not ErrorCode.NOT_SUPPORTED:
                raise
            row_id = ColumnHandle(name="$row_id", type=pa.int64())
            paradigm = RowChangeParadigm.DELETE_ROW_AND_INSERT_ROW
        target = TargetTable(
            name=table.full_name,
            columns=table.metadata.visible_columns,
            row_id=row_id,
            paradigm=paradigm,
            insert_layout=meta.get_insert_layout(session=session, table_handle=table.handle),
            update_layout=meta.get_update_layout(session=session, table_handle=table.handle),
        )
        return table, target

    def _plan(self, st: msql.Statement, binding: _Binding) -> tuple[MergePlan, ResolvedTable]:
        target_name = st.target  # type: ignore[attr-defined]
        table, target = self._target(target_name, binding, insert_only=isinstance(st, msql.Insert))
        if isinstance(st, msql.Merge):
            plan = plan_merge(st, target)
        elif isinstance(st, msql.Update):
            plan = plan_update(st, target)
        elif isinstance(st, msql.Delete):
            plan = plan_delete(st, target)
        else:
            assert isinstance(st, msql.Insert)
            plan = plan_insert(st, target)
        return plan, table

    def _builder(self, plan: MergePlan, table: ResolvedTable, binding: _Binding, target_view: str) -> MergeQueryBuilder:
        column_types = {c.name: spark_type(c.type) for c in plan.target.columns}
        row_id_type = spark_type(plan.target.row_id.type)
        schema = dict(binding.schema)
        schema[plan.target_alias] = {c.name: c.type_name or sql_type_name(c.type) for c in plan.target.columns}
        source_from = None
        source_columns: tuple[str, ...] = ()
        if plan.join is JoinKind.SOURCE:
            assert isinstance(plan.source, msql.Query)
            source_from = binding.render(plan.source)
            fields = self.spark.sql(source_from).schema.fields
            expected = len(plan.cases[0].set_columns)
            if len(fields) != expected:
                raise MergekitError(
                    ErrorCode.GENERIC_USER_ERROR,
                    f"Insert query has wrong number of columns: table has {expected}, query has {len(fields)}",
                )
            source_columns = tuple(f"c{i}" for i in range(len(fields)))
        elif plan.source is not None:
            relation = plan.source
            assert isinstance(relation, msql.Relation)
            binding.bind(relation.table_refs())
            source_from = relation.to_spark_from_item(tables=binding.views, schema=schema)
            probe = f"SELECT * FROM {source_from} AS `$probe`"
            if relation.column_aliases:
                probe += "(" + ", ".join(q(a) for a in relation.column_aliases) + ")"
            fields = self.spark.sql(probe).schema.fields
            schema[plan.source_alias or "$src"] = {f.name: trino_name(f.dataType) for f in fields}
        binding.schema.update(schema)

        def render(expr: msql.Expression) -> str:
            binding.bind(expr.table_refs())
            return expr.to_spark(tables=binding.views, schema=binding.schema)

        computed: list[tuple[str, str]] = []
        layout = plan.target.insert_layout
        for c in layout.computed_columns if layout is not None else ():
            # e.g. a USING partition expression: evaluated by Spark over each merge row's new values
            columns_schema = {col.name: col.type_name or sql_type_name(col.type) for col in plan.target.columns}
            expr_sql = msql.parse_expression(c.expression).to_spark(tables={}, schema={"$rows": columns_schema})
            computed.append((c.name, f"CAST(({expr_sql}) AS {spark_sql_type(spark_type(c.type))})"))
        join_keys: tuple[tuple[str, str], ...] = ()
        key_columns: tuple[str | None, ...] = ()
        if plan.join in (JoinKind.RIGHT, JoinKind.FULL) and plan.on is not None and plan.source_alias:
            pairs = msql.equi_join_keys(plan.on, plan.target_alias, plan.source_alias)
            join_keys = tuple((render(a), render(b)) for a, b in pairs)
            key_columns = tuple(_bare_column(a) for a, _ in pairs)
        builder = MergeQueryBuilder(
            computed=tuple(computed),
            plan=plan,
            render=render,
            column_types=column_types,
            row_id_type=row_id_type,
            target_view=target_view,
            source_from=source_from,
            source_columns=source_columns,
            join_keys=join_keys,
            key_columns=key_columns,
        )
        if join_keys and plan.join is JoinKind.RIGHT:
            # Only target rows whose keys occur in the source can match: filter the target by a broadcast of
            # the source's keys before the join when they are small enough to broadcast.
            # Both reductions evaluate the source's keys once more, before the join does: only when that
            # evaluation gives the same keys (no rand() in a key), else a target row filtered out by one
            # evaluation could be a match in the other and be taken for NOT MATCHED.
            keys = self.spark.sql(builder.join_keys_sql())
            estimate = _estimated_bytes(keys)
            reduce = estimate <= _REDUCE_TARGET_MAX_BYTES and _deterministic(keys)
            width = _row_width(keys) * _KEY_VALUES_SLACK
            collect = None
            usable: frozenset[str] = frozenset()
            if reduce and estimate <= _KEY_VALUES_MAX * width:
                collect = "distinct"
            elif reduce and estimate <= _KEY_ARRAY_MAX * width:
                usable = table.connector.get_metadata().get_value_set_columns(
                    session=binding.session(table.catalog), table_handle=table.handle
                )
                collect = "arrow" if usable.intersection(c for c in key_columns if c) else None
            # A single equality in ON: the target's rows may be looked up per share of the source's keys, if the
            # connector has an index and the cases evaluate in Arrow (``_lookup_merge``).
            lookup = (
                _LOOKUP_MIN_KEYS * width < estimate <= _KEY_ARRAY_MAX * width
                and len(join_keys) == 1
                and plan.on is not None
                and plan.on.conjunct_count == 1
                and key_columns[0] is not None
            )
            builder = attrs.evolve(
                builder, reduce_target=reduce, collect_key_values=collect, value_set_columns=usable, lookup=lookup
            )
        return builder

    def _source_key_values(self, builder: MergeQueryBuilder) -> dict[str, frozenset[Any] | pa.Array]:
        """Dynamic pruning: for a small source, the values its join keys take, per bare target key column.
        Every target row a RIGHT-join MERGE changes has one of them, so the connector may skip files (the
        journal: by key range) and Spark may skip row groups. Up to ``_KEY_VALUES_MAX`` distinct values come
        as a frozenset (``Constraint.equalities``); a larger source's (up to ``_KEY_ARRAY_MAX`` rows) as a
        sorted Arrow array (``Constraint.value_sets``), for keys whose values Arrow compares as Spark does."""
        if builder.collect_key_values is None or not any(builder.key_columns):
            return {}  # e.g. more keys than are worth collecting: the DISTINCT would run over the source in vain
        found: dict[str, frozenset[Any] | pa.Array] = {}
        for i, column in enumerate(builder.key_columns):
            if column is None:
                continue
            if builder.collect_key_values == "arrow":
                if column not in builder.value_set_columns:
                    continue
                array = self._source_key_array(builder, i, column)
                if array is not None and column not in found:  # a second key on the column: the first suffices
                    found[column] = array
                continue
            rows = _collect_column(self.spark.sql(builder.key_values_sql(i, _KEY_VALUES_MAX + 1)))
            if len(rows) <= _KEY_VALUES_MAX:
                values = frozenset(rows)
                previous = found.get(column)
                found[column] = previous & values if isinstance(previous, frozenset) else values
        return found

    def _source_key_array(self, builder: MergeQueryBuilder, index: int, column: str) -> pa.Array | None:
        """Every source row's value of join key ``index`` through Arrow (no DISTINCT: a MERGE source rarely
        repeats a key, and a shuffle costs more than deduplicating on the driver), sorted and distinct; None
        when its type does not compare in Arrow as in Spark or there are more than ``_KEY_ARRAY_MAX``."""
        df = self.spark.sql(builder.key_values_sql(index))
        target = builder.plan.target.column(column)
        if target is None or arrow_join_type(df.schema.fields[0].dataType, target.type) is None:
            return None
        try:
            values = df.toArrow().column(0)
        except Exception:  # noqa: BLE001 - e.g. beyond spark.driver.maxResultSize: no pruning; the MERGE reports
            return None  # the source's own errors when it runs
        if len(values) > _KEY_ARRAY_MAX:
            return None
        return _sorted_distinct(values)

    def _lookup_merge(
        self,
        plan: MergePlan,
        table: ResolvedTable,
        builder: MergeQueryBuilder,
        binding: _Binding,
        merge_handle: ConnectorMergeTableHandle,
        columns: list[ColumnHandle],
    ) -> tuple[list[Any], DmlStats] | None:
        """Run the MERGE by index lookups (:mod:`mergekit.execution.lookup`) when the connector has an index on
        the ON clause's target column, the key compares in Arrow as in Spark and every WHEN clause evaluates in
        Arrow; else None (nothing ran: the Spark plan runs)."""
        from pyspark.sql.pandas.types import to_arrow_type

        if plan.target.insert_layout is not None or plan.target.update_layout is not None:
            return None  # writers must receive rows routed by the layout: the Spark plan's redistribution
        key_name = builder.key_columns[0]
        key_handle = next((c for c in columns if c.name == key_name), None)
        if key_handle is None:
            return None
        source_sql = builder.source_sub()
        key_sql = builder.join_keys[0][1]
        probe = self.spark.sql(f"SELECT *, {key_sql} AS {q(KEY)} FROM {source_sql}")
        fields = [f for f in probe.schema.fields if f.name != "$spresent"]
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            return None
        source_types: dict[str, pa.DataType] = {}
        for f in fields[:-1]:
            if not binary_collation(f.dataType):
                continue  # compares by its collation in Spark: a case reading it runs the Spark plan
            try:
                source_types[f.name] = to_arrow_type(f.dataType)
            except Exception:  # noqa: BLE001 - a type Arrow lacks: such a column cannot be read by the cases
                continue
        join_type = arrow_join_type(fields[-1].dataType, key_handle.type)
        if join_type is None:
            return None
        type_names = {c.name: c.type_name or sql_type_name(c.type) for c in plan.target.columns}
        program = compile_lookup(plan, source_types, columns, type_names)
        if program is None:
            return None
        session = binding.session(table.catalog)
        resolved = table.connector.get_metadata().resolve_index(
            session=session, table_handle=merge_handle.table_handle, index_columns=[key_handle], output_columns=columns
        )
        if resolved is None:
            return None
        spark_join = {pa.int64(): T.LongType(), pa.string(): T.StringType(), pa.date32(): T.DateType()}[join_type]
        source = probe.select(*[F.col(q(c)) for c in program.source_columns], F.col(q(KEY)).cast(spark_join).alias(KEY))
        stats: dict[str, Any] = {"table": table.full_name, "target": True, "lookup": True}
        binding.scans.append(stats)
        return run_lookup_merge(
            self.spark,
            plan,
            program,
            source,
            join_type=join_type,
            index_provider=table.connector.get_index_provider(),
            index_handle=resolved.index_handle,
            partition_points=resolved.partition_points,
            key_range=resolved.key_range,
            key_column=key_handle,
            output_columns=columns,
            provider=table.connector.get_page_sink_provider(),
            session=session,
            merge_handle=merge_handle,
            stats=stats,
        )

    def _target_view(
        self,
        table: ResolvedTable,
        columns: list[ColumnHandle],
        binding: _Binding,
        handle: ConnectorTableHandle | None,
        constraint: Constraint | None = None,
        values: Mapping[str, frozenset[Any] | pa.Array] | None = None,
    ) -> str:
        """The target scan of ``columns`` (see :func:`_scan_columns`). With ``handle`` None, an empty stand-in
        with the right schema (enough for analysis, and nothing is read). ``values``: columns whose values
        are known to lie in a set (dynamic pruning), filtered right at the scan so Spark can push them down."""
        if handle is None:
            schema = T.StructType([T.StructField(c.name, spark_type(c.type), True) for c in columns])
            return binding.new_view(self.spark.createDataFrame([], schema), "target_probe")
        stats: dict[str, Any] = {"table": table.full_name, "target": True}
        df = scan_table(
            self.spark, table.connector, binding.session(table.catalog), handle, columns, constraint, stats=stats
        )
        binding.scans.append(stats)
        for column, vals in (values or {}).items():
            if isinstance(vals, frozenset) and len(vals) <= _KEY_VALUES_FILTER_MAX:
                # more: the semi join on the source's keys filters the rows
                df = df.where(F.col(q(column)).isin(sorted(vals, key=repr)))
        return binding.new_view(df, "target")

    def _dml(self, st: msql.Statement, binding: _Binding) -> Result:
        # Connectors may word errors by statement (MonetDB's "INSERT INTO: ..."): name it in the session.
        catalog, _ = self._split_name(st.target)  # type: ignore[attr-defined]
        current = binding.session(catalog)
        binding.sessions[catalog] = attrs.evolve(
            current, properties={**current.properties, "statement": _statement_kind(st)}
        )
        plan, table = self._plan(st, binding)
        session = binding.session(table.catalog)
        metadata = table.connector.get_metadata()
        # Analysis first, against an empty stand-in for the target: nothing begins for a bad statement.
        columns_by_name = metadata.get_column_handles(session=session, table_handle=table.handle)
        scan_columns = _scan_columns(plan.target, columns_by_name)
        probe_view = self._target_view(table, scan_columns, binding, None) if plan.join is not JoinKind.SOURCE else None
        builder = self._builder(plan, table, binding, probe_view or "")
        probe_sql, keys = builder.probe_sql()
        value_types = check_types(plan, builder, self.spark.sql(probe_sql).schema, keys)
        update_case_columns = {
            n: [columns_by_name.get(c) or ColumnHandle(name=c, type=plan.target.column(c).type) for c in cols]  # type: ignore[union-attr]
            for n, cols in plan.update_case_columns.items()
        }
        merge_handle = metadata.begin_merge(
            session=session, table_handle=table.handle, update_case_columns=update_case_columns
        )
        try:
            looked_up = None
            if builder.lookup:
                looked_up = self._lookup_merge(plan, table, builder, binding, merge_handle, scan_columns)
            if looked_up is not None:
                fragments, stats = looked_up
            elif plan.join is not JoinKind.SOURCE:
                values = self._source_key_values(builder)
                target_view = self._target_view(
                    table,
                    scan_columns,
                    binding,
                    merge_handle.table_handle,
                    _with_values(_target_constraint(st, plan), values),
                    values,
                )
                # The connector read only rows with the source's key values: the semi join would keep them all.
                scan = binding.scans[-1]
                enforced = set(scan.get("enforced", ()))
                reduced = bool(builder.key_columns) and all(
                    c is not None and c in enforced for c in builder.key_columns
                )
                builder = attrs.evolve(
                    builder, target_view=target_view, reduce_target=builder.reduce_target and not reduced
                )
                scan["semi_join"] = builder.reduce_target
            if looked_up is None:
                rows = self.spark.sql(builder.merge_rows_sql(value_types))
                fragments, stats = run_merge_pipeline(
                    self.spark,
                    plan,
                    rows,
                    provider=table.connector.get_page_sink_provider(),
                    session=session,
                    merge_handle=merge_handle,
                    colocated=builder.colocated,
                )
            metadata.finish_merge(session=session, merge_handle=merge_handle, fragments=fragments)
        except BaseException as exc:
            try:
                metadata.abort_merge(session=session, merge_handle=merge_handle)
            except Exception:  # noqa: BLE001 - report the original failure
                pass
            if isinstance(exc, MergekitError):
                raise
            if isinstance(exc, Exception):
                raise translate_error(exc) from exc
            raise
        metrics = stats.metrics()
        metrics["writer_pids"] = list(stats.writer_pids)
        metrics["scans"] = list(binding.scans)
        return Result(statement=plan.statement, row_count=stats.row_count, metrics=metrics)


# Dynamic pruning (``_source_key_values``): sources with at most this many distinct values per key hand those
# values to the connector (a ``Constraint``). Up to ``_KEY_VALUES_FILTER_MAX`` of them also become an IN filter on
# the target scan (Spark pushes it into Parquet row groups); more would only slow Spark's planner, and the semi
# join does that filtering.
_KEY_VALUES_MAX = 100_000
_KEY_VALUES_FILTER_MAX = 1000
# Collecting them is a DISTINCT over the source (0.7 s for a 1M-row source on 2 cores), wasted when it finds
# more: it only runs when Spark estimates the source's keys at most ``_KEY_VALUES_SLACK`` times the size of
# ``_KEY_VALUES_MAX`` keys (estimates of Parquet sources are compressed sizes: below the rows' real size).
_KEY_VALUES_SLACK = 1.25
# Larger sources (up to this many rows) hand their keys over as an Arrow array (``Constraint.value_sets``), read
# without a DISTINCT: a connector that reads just those keys' rows (the journal: pyarrow page sources) and says
# so (``NativeScanUnion.enforced``) spares the MERGE its broadcast semi join. 10M/1M: the 1M keys take 0.2 s.
_KEY_ARRAY_MAX = 4_000_000
# Sources of more keys than this (up to ``_KEY_ARRAY_MAX``: a task holds its share of the source in memory)
# MERGE by index lookups when they can (``_lookup_merge``): no scan of the target, no shuffle of its rows, no join
# in Spark. Faster at every size measured (10M-row target: 1 source row 0.4 s against 0.6 s, 10k 0.9 s against
# 1.1 s, 1M 2.4 s against 3.6 s), so every size; tests raise it to pin the Spark plan.
_LOOKUP_MIN_KEYS = 0

# Source join keys up to this estimated size are broadcast to pre-filter a MERGE target (a 1M-row BIGINT key
# is about 8 MB; Spark's estimates of file sources are rough, so the bound is generous).
_REDUCE_TARGET_MAX_BYTES = 64 * 1024 * 1024


def _collect_column(df: DataFrame) -> list[Any]:
    """The first column's values, through Arrow (100k rows as Row objects would cost a second)."""
    if isinstance(df.schema.fields[0].dataType, T.TimestampType | T.TimestampNTZType):
        return [r[0] for r in df.collect()]  # Python datetimes as Spark hands them to the rest of the engine
    return df.toArrow().column(0).to_pylist()


def _estimated_bytes(df: DataFrame) -> int:
    """Spark's size estimate of a DataFrame's optimized plan (no job runs); unknown is huge."""
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # noqa: BLE001 - e.g. Spark Connect: no estimate, no reduction
        return 1 << 62


def _deterministic(df: DataFrame) -> bool:
    """Whether evaluating ``df`` twice gives the same rows (its optimized plan: pruned columns do not count)."""
    try:
        return bool(df._jdf.queryExecution().optimizedPlan().deterministic())
    except Exception:  # noqa: BLE001 - e.g. Spark Connect: assume not
        return False


def _row_width(df: DataFrame) -> int:
    """Spark's default size of one row of ``df`` (8 for a BIGINT, 20 for a string), the unit of its estimates."""
    try:
        return int(df._jdf.schema().defaultSize())
    except Exception:  # noqa: BLE001 - e.g. Spark Connect
        return 8


def _bare_column(expr: msql.Expression) -> str | None:
    """The column name when ``expr`` is a plain column reference."""
    refs = expr.column_refs()
    if len(refs) == 1 and expr.is_column:
        ((_, name),) = refs
        return name
    return None


def _with_values(constraint: Constraint | None, values: Mapping[str, frozenset[Any] | pa.Array]) -> Constraint | None:
    if not values:
        return constraint
    base = constraint or Constraint()
    equalities = dict(base.equalities)
    value_sets = dict(base.value_sets)
    for column, vals in values.items():
        if not isinstance(vals, frozenset):
            value_sets[column] = vals
        else:
            equalities[column] = frozenset(equalities[column]) & vals if column in equalities else vals
    return Constraint(equalities=equalities, ranges=base.ranges, value_sets=value_sets)


def _sorted_distinct(values: pa.ChunkedArray) -> pa.Array:
    """``values`` (no nulls) sorted and without repeats. Integers and dates through NumPy: a sort and a
    comparison of neighbours take 0.06 s for a million keys, Arrow's hash ``unique`` and sort three times that."""
    if values.null_count == 0 and (pa.types.is_integer(values.type) or pa.types.is_date(values.type)):
        ordered = np.sort(values.to_numpy())
        if len(ordered) > 1:
            ordered = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
        return pa.array(ordered, type=values.type)
    return pa.compute.unique(values).sort()


def _scan_columns(target: TargetTable, handles: Mapping[str, ColumnHandle]) -> list[ColumnHandle]:
    """What a DML target scan reads: the visible columns (the connector's handles) and the row id column."""
    columns = [handles.get(c.name) or ColumnHandle(name=c.name, type=c.type) for c in target.columns]
    if target.row_id.name not in {c.name for c in columns}:
        columns.append(target.row_id)
    return columns


def _default_connector() -> str:
    available = plugins.available()
    if "partitioned" in available:
        return "partitioned"  # plain tables through its base (the journal) plus merge tables (seed 004)
    return "journal" if "journal" in available else "memory"


def _statement_kind(st: msql.Statement) -> str:
    return {msql.Insert: "INSERT", msql.Update: "UPDATE", msql.Delete: "DELETE", msql.Merge: "MERGE"}.get(type(st), "")


def _spi_constraint(found: Mapping[str, tuple[Any, ...]]) -> Constraint:
    """The SQL layer's simple predicates as the SPI's pruning constraint (IS NULL is not expressible)."""
    equalities = {c: v[1] for c, v in found.items() if v[0] == "values"}
    ranges = {c: (v[1], v[2]) for c, v in found.items() if v[0] == "range"}
    return Constraint(equalities=equalities, ranges=ranges)


def _target_constraint(st: msql.Statement, plan: MergePlan) -> Constraint | None:
    """Predicates every changed target row satisfies: UPDATE/DELETE WHERE, or MERGE ON conjuncts on the
    target (not with WHEN NOT MATCHED BY SOURCE, which changes target rows the ON does not match)."""
    if isinstance(st, msql.Update | msql.Delete) and st.where is not None:
        return _spi_constraint(msql.predicate_constraints(st.where, {None, plan.target_alias}))
    if isinstance(st, msql.Merge) and not any(c.kind is msql.MergeCaseKind.NOT_MATCHED_BY_SOURCE for c in st.cases):
        return _spi_constraint(msql.predicate_constraints(st.on, {plan.target_alias}))
    return None


def _column_metadata(c: msql.ColumnDefinition) -> ColumnMetadata:
    try:
        arrow = parse_sql_type(c.type_text)
    except ValueError as exc:
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Unknown type '{c.type_text}' for column '{c.name}'") from exc
    return ColumnMetadata(name=c.name, type=arrow, nullable=c.nullable, comment=c.comment, type_name=c.type_text)


def _normalize_arrow(table: pa.Table) -> pa.Table:
    return table


@attrs.frozen
class _Misfits:
    """On executors: per level, the number of rows whose key (column ``$k<level>``) the bounds do not hold."""

    bounds: tuple[PartitionBounds, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        counts = [0] * len(self.bounds)
        for batch in batches:
            for i, b in enumerate(self.bounds):
                fits = b.matches(batch.column(i))
                counts[i] += len(fits) - int(pa.compute.sum(fits.cast(pa.int64())).as_py() or 0)
        yield pa.record_batch({"level": pa.array(range(len(counts)), pa.int32()), "n": pa.array(counts, pa.int64())})


class MergeBuilder:
    """``engine.merge_into("t", source=df, on="t.id = s.id").when_matched_update({...}).execute()``.

    Values and conditions are SQL expression strings over the target alias (default: the table name) and
    ``source_alias``; the statement is planned exactly as the equivalent MERGE text.
    """

    def __init__(
        self, engine: Engine, target: str, source: DataFrame | str, on: str, source_alias: str, target_alias: str | None
    ) -> None:
        self._engine = engine
        self._target = target
        self._source = source
        self._on = on
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._clauses: list[str] = []

    def _when(self, head: str, condition: str | None, action: str) -> MergeBuilder:
        self._clauses.append(f"{head}{f' AND ({condition})' if condition else ''} THEN {action}")
        return self

    def when_matched_update(self, set: Mapping[str, str], *, condition: str | None = None) -> MergeBuilder:  # noqa: A002
        return self._when("WHEN MATCHED", condition, "UPDATE SET " + ", ".join(f"{k} = {v}" for k, v in set.items()))

    def when_matched_delete(self, *, condition: str | None = None) -> MergeBuilder:
        return self._when("WHEN MATCHED", condition, "DELETE")

    def when_not_matched_insert(self, values: Mapping[str, str], *, condition: str | None = None) -> MergeBuilder:
        cols = ", ".join(values)
        vals = ", ".join(values.values())
        return self._when("WHEN NOT MATCHED", condition, f"INSERT ({cols}) VALUES ({vals})")

    def when_not_matched_by_source_update(
        self, set: Mapping[str, str], *, condition: str | None = None
    ) -> MergeBuilder:  # noqa: A002
        return self._when(
            "WHEN NOT MATCHED BY SOURCE", condition, "UPDATE SET " + ", ".join(f"{k} = {v}" for k, v in set.items())
        )

    def when_not_matched_by_source_delete(self, *, condition: str | None = None) -> MergeBuilder:
        return self._when("WHEN NOT MATCHED BY SOURCE", condition, "DELETE")

    def sql(self, source_name: str) -> str:
        alias = f" AS {self._target_alias}" if self._target_alias else ""
        return (
            f"MERGE INTO {self._target}{alias} USING {source_name} AS {self._source_alias} ON {self._on} "
            + " ".join(self._clauses)
        )

    def execute(self) -> Result:
        if not self._clauses:
            raise MergekitError(ErrorCode.SYNTAX_ERROR, "MERGE needs at least one WHEN clause")
        if isinstance(self._source, str):
            return self._engine.execute(self.sql(self._source))
        name = f"mk_source_{next(_view_ids)}"
        self._engine.register_dataframe(name, self._source)
        try:
            return self._engine.execute(self.sql(name))
        finally:
            self._engine.unregister_dataframe(name)
