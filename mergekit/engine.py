"""The embedder's facade (DESIGN.md §4): ``Engine.local()``, ``Engine(spark=..., catalogs=...)``, ``execute``.

Each statement is parsed (``mergekit.sql``), then dispatched by its kind (:data:`STATEMENTS`) to the execution
layer by the engine's :class:`~mergekit.execution.runner.StatementRunner` (the lock, mergekit's Spark settings for the
statement's duration only, the statement's context, coded errors): queries and EXPLAIN (``execution.query``), DML
(``execution.dml.run``: the MERGE plan, seed 002's steps), DDL (``execution.ddl``), and the streaming job statements
(``execution.streaming.service``, which also starts continuous runs). Catalogs and names live in
``mergekit.catalogs``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from mergekit import sql as msql
from mergekit.catalogs import Catalogs, connector_from_spec, default_connector
from mergekit.errors import ErrorCode, MergekitError
from mergekit.execution.context import StatementContext
from mergekit.execution.ddl.statements import DDL_STATEMENTS
from mergekit.execution.dml.append import (
    DriverAppend,
    arrow_zones,
    check_arrow,
    driver_append_plan,
    run_driver_append,
)
from mergekit.execution.dml.run import run_dml
from mergekit.execution.failures import translate_error
from mergekit.execution.query import explain, run_query
from mergekit.execution.runner import StatementRunner, in_context
from mergekit.execution.session import local_session, ship_by_value
from mergekit.execution.session_statements import SESSION_STATEMENTS
from mergekit.execution.streaming.continuous import StreamHandle
from mergekit.execution.streaming.service import StreamingService
from mergekit.execution.streaming.streams import create_stream
from mergekit.execution.types import spark_schema
from mergekit.execution.user_frames import UserFrame
from mergekit.planner import check_session_property
from mergekit.result import Result
from mergekit.spi import Connector

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Engine", "MergeBuilder"]

_source_ids = itertools.count()
_T = TypeVar("_T")

# Statement kind -> how it runs: handler(ctx, statement) -> Result
STATEMENTS: dict[type, Callable[[StatementContext, Any], Result]] = {
    msql.Query: run_query,
    msql.Explain: explain,
    msql.Merge: run_dml,
    msql.Update: run_dml,
    msql.Delete: run_dml,
    msql.Insert: run_dml,
    msql.CreateStream: create_stream,
    **DDL_STATEMENTS,
    **SESSION_STATEMENTS,
}


#: ``Engine(...)`` without ``catalogs``: where tables live is the embedder's choice, never an implicit one.
NO_CATALOGS_MESSAGE = (
    "Engine(...) needs catalogs=...: where its tables live, e.g. catalogs={'lake': {'connector': 'journal', "
    "'warehouse': '/data/lake'}} (tables kept in that folder) or {'lake': {'connector': 'memory'}} (tables gone "
    "when the process ends); Engine.local(warehouse='./warehouse') sets up a local session with catalog 'lake' "
    "kept in that folder"
)


class Engine:
    """Runs mergekit SQL on a Spark session against connector catalogs.

    ``catalogs`` (required) maps a catalog name to either a :class:`~mergekit.spi.Connector` or a config dict
    with a ``connector`` key naming an installed connector (entry-point group ``mergekit.connectors``); the other
    keys are that connector's options. Without it the engine is refused (``INVALID_ARGUMENTS``) rather than
    given tables that vanish with the process; ``Engine.local()`` is the embedded default.

    ``spark`` is the session statements run on, or a function that returns one, called when a statement first needs
    Spark (default: ``local_session``): statements the driver tier runs need none, so an engine that runs only those
    starts no JVM (docs/architecture.md, "The driver tier").
    """

    def __init__(
        self,
        *,
        spark: SparkSession | Callable[[], SparkSession] | None = None,
        catalogs: Mapping[str, Connector | Mapping[str, Any]] | None = None,
        default_catalog: str = "lake",
        default_schema: str = "default",
        streams_dir: str | None = None,
    ) -> None:
        if catalogs is None:  # before Spark starts: nothing to undo
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, NO_CATALOGS_MESSAGE)
        # streaming jobs' definitions and checkpoints, and named continuous queries' checkpoints
        self.streams_dir = streams_dir
        catalog_set = Catalogs(default_catalog=default_catalog, default_schema=default_schema)
        # what runs each statement (the lock, mergekit's settings per statement, errors), shared with streaming;
        # without a session given, it starts the local one when a statement first needs Spark
        handlers = {t: in_context(h) for t, h in STATEMENTS.items()}
        self._runner = StatementRunner(spark or local_session, catalog_set, handlers)
        self._streaming = StreamingService(self._runner, streams_dir)
        self._runner.handlers.update(self._streaming.handlers())
        for name, spec in catalogs.items():
            self.add_catalog(name, spec)

    @classmethod
    def local(
        cls,
        warehouse: str = "./warehouse",
        *,
        catalogs: Mapping[str, Connector | Mapping[str, Any]] | None = None,
        connector: str | None = None,
        spark: SparkSession | Callable[[], SparkSession] | None = None,
        **options: Any,
    ) -> Engine:
        """The embedded default: catalog ``lake`` over ``warehouse``, schema ``default``, and a local Spark session
        (the active one if any, with the workers running this interpreter) started when a statement first needs
        Spark: statements the driver tier runs start no JVM (docs/architecture.md, "The driver tier"). ``spark``: a
        session, or what starts one, instead."""
        # absolute: the Python worker of a streaming source (another process, another working directory) opens it
        warehouse = os.path.abspath(str(warehouse))
        streams_dir = os.path.join(warehouse, "_streams")
        if catalogs is not None:
            return cls(spark=spark, catalogs=catalogs, streams_dir=streams_dir)
        spec = {"connector": connector or default_connector(), **options}
        try:
            return cls(spark=spark, catalogs={"lake": {**spec, "warehouse": warehouse}}, streams_dir=streams_dir)
        except MergekitError as err:
            # a connector that keeps no files (memory, sqldb) refuses a warehouse by name: it holds only the streams
            if err.details.get("option") != "warehouse" or "warehouse" in options:
                raise
            return cls(spark=spark, catalogs={"lake": spec}, streams_dir=streams_dir)

    @property
    def spark(self) -> SparkSession:
        """The engine's Spark session (the local one is started now when no statement has needed it yet)."""
        return self._runner.spark

    @property
    def spark_started(self) -> bool:
        """Whether the engine has a Spark session yet (given one, or started for a statement that needed it)."""
        return self._runner.started

    @property
    def default_catalog(self) -> str:
        return self._runner.catalogs.default_catalog

    @property
    def default_schema(self) -> str:
        return self._runner.catalogs.default_schema

    # ---- catalogs ----------------------------------------------------------------------------------

    def add_catalog(self, name: str, spec: Connector | Mapping[str, Any]) -> Connector:
        """Serve catalog ``name`` by a connector, or by the installed connector its config names."""
        catalogs = self._runner.catalogs
        connector = connector_from_spec(name, spec)
        if self._runner.started:  # (else when Spark starts: StatementRunner ships every catalog's connector then)
            ship_by_value(type(connector).__module__)  # a connector from a script: its classes go to Spark's workers
        return catalogs.add(name, connector, None if isinstance(spec, Connector) else spec)

    def catalog(self, name: str) -> Connector:
        return self._runner.catalogs.get(name)

    @property
    def catalogs(self) -> Mapping[str, Connector]:
        return self._runner.catalogs.all()

    def close(self) -> None:
        self._streaming.close()
        self._runner.catalogs.close()
        self._runner.close()

    # ---- statements --------------------------------------------------------------------------------

    def execute(self, sql: str, *, stream: bool = False) -> Result:
        """Run one statement. Raises :class:`~mergekit.errors.MergekitError`; a failed statement changes nothing.

        ``stream=True``: a query's rows are not collected; the result reads them from Spark when they are
        iterated (``Result.batches()``, iteration), one partition at a time, so any size fits in memory (a query
        the driver tier runs holds its rows, at most ``cost.DRIVER_SCAN_MAX_ROWS``)."""
        statement = msql.parse_statement(sql)
        try:
            return self._runner.run(statement, stream=stream)
        except MergekitError as err:  # WHERE name = "a": say what double quotes mean
            msql.add_quoted_name_hint(err, sql)
            raise

    def running_job(self, name: str) -> StreamHandle | None:
        """The handle of streaming job ``name`` started by ``START STREAMING JOB`` on this engine (its ``progress``,
        ``exception``, ``process_all_available()``), or None when it is not running here."""
        return self._streaming.running_job(name)

    def stream(
        self,
        sql: str,
        *,
        on_batch: Callable[[pa.Table], None] | None = None,
        trigger: str = "1 second",
        name: str | None = None,
        max_commits_per_batch: int | None = None,
    ) -> StreamHandle:
        """Run ``SELECT STREAM ...`` continuously: a micro-batch every ``trigger`` (a processing-time interval)
        when commits arrived, each emitting the rows that became final (docs/streaming.md, "Continuous runs").

        ``on_batch`` receives each micro-batch's rows as an Arrow table (on a Spark thread of this process);
        without it the handle keeps them (``rows()``). ``name`` makes the run resumable: its checkpoint lives
        under ``streams_dir`` and a later ``stream(..., name=...)`` continues after the last processed commit;
        unnamed runs start from the stream's first retained commit and keep their checkpoint in a temporary
        folder. ``max_commits_per_batch`` caps the commits of each stream one micro-batch takes (a backlog is then
        worked off in several batches). Returns a :class:`StreamHandle` (``stop``, ``await_termination``, ``process_all_available``,
        ``progress``, ``rows``)."""
        statement = msql.parse_statement(sql)
        if not isinstance(statement, msql.Query):
            raise MergekitError(ErrorCode.NOT_SUPPORTED, "Engine.stream runs a SELECT STREAM query")
        return self._streaming.start(
            statement, on_batch=on_batch, trigger=trigger, name=name, max_commits=max_commits_per_batch
        )

    def execute_script(self, text: str) -> list[Result]:
        """Run statements separated by ';' in order; stops at the first failure (which raises)."""
        return [self.execute(piece) for piece in msql.split_statements(text)]

    def table(self, name: str, *, version: int | None = None) -> DataFrame:
        """The table's current state (or a version of it) as a Spark DataFrame.

        It is analysed with mergekit's settings (UTC, ANSI arithmetic) and keeps them when evaluated later; what the
        caller adds to it is analysed with the caller's session settings (docs/quickstart.md, "Embedding"). It
        leaves nothing in the session's catalog: the scan's temporary view is dropped once the DataFrame is
        analysed (its plan holds the scan itself, not the view's name)."""
        qname = msql.QualifiedName.parse(name)
        ref = msql.TableRef(name=qname, version=version)
        # the caller's filters are unknown: none may run on the row versions the scan drops
        with self._runner.settings(), self._runner.statement() as ctx:
            ctx.guard_scans = True
            ctx.bind([ref])
            return self.spark.table(ctx.views[ref])

    def insert_arrow(self, table: str, data: pa.Table | pa.RecordBatch) -> Result:
        """INSERT the rows of an Arrow table (or record batch) into ``table``, as ``INSERT INTO table (columns)
        VALUES ...`` would: ``data``'s columns are matched to the table's by name (ignoring case), omitted columns
        take their DEFAULT or NULL, every constraint is checked, one commit.

        When every value reaches the table unchanged (strings into a ``varchar(n)`` / ``char(n)`` column get the
        store assignment every writer applies), the rows are written on the driver through the connector's
        merge SPI, without a Spark job (``metrics["strategy"] == "driver_append"``): the fast way for a producer
        that commits many small batches into a stream. Otherwise (a CHECK constraint, a DEFAULT to evaluate, a
        type conversion other than an integer's, a float's widening or a timestamp's, a connector that routes
        inserted rows) it runs as an ordinary INSERT from a DataFrame of ``data``, and
        ``metrics["driver_append_declined"]`` says why. See docs/quickstart.md, "Inserting Arrow data".

        The driver append runs no Spark, so it neither waits for the engine's Spark statements (a micro-batch of
        ``stream()`` or of a streaming job running meanwhile) nor applies mergekit's Spark settings; the ordinary
        INSERT does both, like any statement."""
        arrow = check_arrow(data)
        qname = msql.QualifiedName.parse(table)

        def run(ctx: StatementContext) -> Result | str:
            plan = driver_append_plan(ctx, qname, arrow)
            return run_driver_append(ctx, plan, arrow) if isinstance(plan, DriverAppend) else plan

        done = self._runner.in_statement(run, spark=False)
        if isinstance(done, Result):
            return done
        view = f"mk_arrow_{next(_source_ids)}"
        columns = ", ".join('"' + c.replace('"', '""') + '"' for c in arrow.column_names)
        # an Arrow timestamp with a zone is that zone's wall clock; one without is the session's (arrow_zones)
        # timestamps without a zone stay wall clocks (TIMESTAMP_NTZ): Spark would read them in the session's zone
        try:
            frame = self.spark.createDataFrame(arrow, schema=spark_schema(arrow.schema))
        except Exception as exc:  # a value Spark cannot hold
            raise translate_error(exc) from exc
        self._runner.register(view, UserFrame(frame, arrow_zones(arrow.schema)))
        try:
            result = self.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {view}")
        finally:
            self.unregister_dataframe(view)
        result.metrics["driver_append_declined"] = done
        return result

    def merge_into(
        self, target: str, *, source: DataFrame | str, on: str, source_alias: str = "s", target_alias: str | None = None
    ) -> MergeBuilder:
        """A fluent MERGE builder; ``execute()`` plans it exactly like the SQL statement."""
        return MergeBuilder(self, target, source, on, source_alias, target_alias)

    def register_dataframe(self, name: str, df: DataFrame) -> None:
        """Make a DataFrame readable by name in statements (for sources that are not catalog tables). Its values
        mean what the Spark session shows for them: timestamps in the session's time zone (docs/quickstart.md,
        "Time zones")."""
        self._runner.register_dataframe(name, df)

    def unregister_dataframe(self, name: str) -> None:
        self._runner.unregister_dataframe(name)

    def register_arrow(self, name: str, data: pa.Table | pa.RecordBatch) -> None:
        """Make an Arrow table (or record batch) readable by name in statements, as ``register_dataframe`` does
        a DataFrame: the source of a CDC batch or an API write, ``MERGE INTO t USING name AS s ...``. A statement
        the driver tier runs reads it as it is, with no Spark job (docs/architecture.md, "The driver tier"); one on
        the Spark tier reads it as a DataFrame made of it once. A timestamp column with a zone is that zone's wall
        clock, one without is the caller's session's (as ``insert_arrow`` reads them). ``unregister_dataframe``
        drops it."""
        arrow = check_arrow(data, "register_arrow")
        self._runner.register(name, UserFrame(None, arrow_zones(arrow.schema), arrow=arrow))


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
        self._properties: dict[str, str] = {}
        self._evolve = False
        _fragment("the ON condition", on)

    def _when(self, head: str, condition: str | None, action: str) -> MergeBuilder:
        if condition:
            _fragment(f"the {head} condition", condition)
        self._clauses.append(f"{head}{f' AND ({condition})' if condition else ''} THEN {action}")
        return self

    def when_matched_update(self, set: Mapping[str, str], *, condition: str | None = None) -> MergeBuilder:
        return self._when("WHEN MATCHED", condition, "UPDATE SET " + _assignments(set))

    def when_matched_delete(self, *, condition: str | None = None) -> MergeBuilder:
        return self._when("WHEN MATCHED", condition, "DELETE")

    def when_not_matched_insert(self, values: Mapping[str, str], *, condition: str | None = None) -> MergeBuilder:
        _assignments(values)
        cols = ", ".join(values)
        vals = ", ".join(values.values())
        return self._when("WHEN NOT MATCHED", condition, f"INSERT ({cols}) VALUES ({vals})")

    def when_not_matched_by_source_update(
        self, set: Mapping[str, str], *, condition: str | None = None
    ) -> MergeBuilder:
        return self._when("WHEN NOT MATCHED BY SOURCE", condition, "UPDATE SET " + _assignments(set))

    def when_not_matched_by_source_delete(self, *, condition: str | None = None) -> MergeBuilder:
        return self._when("WHEN NOT MATCHED BY SOURCE", condition, "DELETE")

    def when_matched_update_all(self, *, condition: str | None = None) -> MergeBuilder:
        """``WHEN MATCHED THEN UPDATE SET *`` (Delta's ``whenMatchedUpdateAll``): every target column that the
        source has, by name, takes the source's value."""
        return self._when("WHEN MATCHED", condition, "UPDATE SET *")

    def when_not_matched_insert_all(self, *, condition: str | None = None) -> MergeBuilder:
        """``WHEN NOT MATCHED THEN INSERT *`` (Delta's ``whenNotMatchedInsertAll``): the source's columns by name."""
        return self._when("WHEN NOT MATCHED", condition, "INSERT *")

    def with_schema_evolution(self) -> MergeBuilder:
        """``MERGE WITH SCHEMA EVOLUTION``: source columns the target lacks that the clauses assign (``SET *``,
        ``INSERT *`` or by name) are added to the target in the statement's commit (docs/sql.md)."""
        self._evolve = True
        return self

    def deduplicate_source(self, *, order_by: str, keep: str = "first") -> MergeBuilder:
        """Of several source rows matching one target row, only the ``keep`` ("first" or "last") one by
        ``order_by`` (an ORDER BY list over the source alias, e.g. ``"s.updated_at"``) meets the WHEN clauses,
        instead of the statement failing with MERGE_TARGET_ROW_MULTIPLE_MATCHES: the session property
        ``merge_duplicate_source`` for this statement only (docs/sql.md)."""
        if keep not in ("first", "last"):
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, f"keep must be 'first' or 'last', got {keep!r}")
        value = f"{keep} by {order_by}"
        check_session_property("merge_duplicate_source", value)
        self._properties["merge_duplicate_source"] = value
        return self

    def sql(self, source_name: str) -> str:
        alias = f" AS {self._target_alias}" if self._target_alias else ""
        return (
            f"MERGE {'WITH SCHEMA EVOLUTION ' if self._evolve else ''}INTO {self._target}{alias} USING {source_name} AS {self._source_alias} ON {self._on} "
            + " ".join(self._clauses)
        )

    def execute(self) -> Result:
        if not self._clauses:
            raise MergekitError(ErrorCode.SYNTAX_ERROR, "MERGE needs at least one WHEN clause")
        if isinstance(self._source, str):
            return self._run(self.sql(self._source))
        name = f"mk_source_{next(_source_ids)}"
        self._engine.register_dataframe(name, self._source)
        try:
            return self._run(self.sql(name))
        finally:
            self._engine.unregister_dataframe(name)

    def _run(self, sql: str) -> Result:
        return self._engine._runner.run(msql.parse_statement(sql), overrides=self._properties)


def _fragment(what: str, text: str, parse: Callable[[str], object] = msql.parse_expression) -> None:
    """One expression the builder was given, parsed on its own: a syntax error names it, with the line and column
    in it (not in the MERGE text the builder writes)."""
    try:
        parse(text)
    except MergekitError as err:
        if err.code is not ErrorCode.SYNTAX_ERROR:
            raise
        raise MergekitError(
            ErrorCode.SYNTAX_ERROR, f"in {what} '{text}': {err.message}", **{**err.details, "fragment": text}
        ) from None


def _assignments(values: Mapping[str, str]) -> str:
    """``column = value, ...`` of a builder's mapping, each column name and value checked on its own."""
    for column, value in values.items():
        _fragment("the column name", column, msql.parse_column_name)
        _fragment(f"the value for column {column}", value)
    return ", ".join(f"{k} = {v}" for k, v in values.items())
