"""What runs one statement, shared by the :class:`~mergekit.Engine` and streaming (continuous runs, jobs).

A :class:`StatementRunner` holds what every statement of one engine needs: the Spark session and mergekit's
settings for it (applied for the statement's duration only: :func:`~.session.applied_conf`), the catalogs, the
DataFrames registered by name, the session properties (``SET SESSION``), and the lock that keeps the engine's
Spark statements one at a time (Spark settings are session-wide). :meth:`StatementRunner.in_statement` runs a
function as one statement (its :class:`~.context.StatementContext`, its views dropped at the end, any failure a
coded :class:`~mergekit.errors.MergekitError`); :meth:`StatementRunner.run` dispatches a parsed statement by its
kind to the handler table it was given. Nothing here knows the facade: the engine builds the runner and hands it
to streaming.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession

from mergekit import sql as msql
from mergekit.catalogs import Catalogs
from mergekit.errors import ErrorCode, MergekitError
from mergekit.result import Result

from .context import StatementContext
from .failures import translate_error
from .session import applied_conf, python_for_workers, session_time_zone
from .user_frames import UserFrame
from .views import expand_statement_views

__all__ = ["StatementRunner", "Handler"]

_T = TypeVar("_T")

#: How a kind of statement runs: ``handler(runner, statement, options)``, ``options`` those of :meth:`run`.
Handler = Callable[["StatementRunner", Any, Mapping[str, Any]], Result]


def in_context(handler: Callable[[StatementContext, Any], Result]) -> Handler:
    """A handler of one statement context (``run_query``, ``run_dml``, DDL): the statement's views expanded first."""

    def run(runner: StatementRunner, statement: Any, options: Mapping[str, Any]) -> Result:
        def body(ctx: StatementContext) -> Result:
            expanded = expand_statement_views(ctx, statement)  # views become their queries (execution.views)
            ctx.guard_scans = msql.predicates_may_fail(expanded)
            return handler(ctx, expanded)

        return runner.in_statement(body, **options)

    return run


class StatementRunner:
    """The lock, the per-statement Spark settings, the statement context and error translation of one engine."""

    def __init__(self, spark: SparkSession, catalogs: Catalogs, handlers: Mapping[type, Handler] | None = None) -> None:
        self.spark = spark
        self.catalogs = catalogs
        self.handlers: dict[type, Handler] = dict(handlers or {})
        # the session's configuration stays the caller's: mergekit's settings apply per statement (applied_conf)
        self.python_exec = python_for_workers(spark)
        self.dataframes: dict[str, UserFrame] = {}
        self.live_views: set[str] = set()  # views not yet dropped (close() drops what is left)
        self.session_properties: dict[str, str] = {}  # SET SESSION (mergekit.planner.session)
        self.lock = threading.RLock()
        self._spark_statements = 0  # Spark statements running (under the lock, with mergekit's settings)
        self._user_zone: str | None = None  # the caller's session zone when the last one began

    # ---- DataFrames the caller hands over ------------------------------------------------------------------

    def register(self, name: str, frame: UserFrame) -> None:
        self.dataframes[name.lower()] = frame

    def unregister(self, name: str) -> None:
        self.dataframes.pop(name.lower(), None)

    def register_dataframe(self, name: str, df: DataFrame) -> None:
        self.register(name, UserFrame(df))

    def unregister_dataframe(self, name: str) -> None:
        self.unregister(name)

    # ---- statements -----------------------------------------------------------------------------------------

    def run(
        self,
        statement: msql.Statement,
        *,
        stream: bool = False,
        overrides: Mapping[str, str] | None = None,
        connector_properties: Mapping[str, Any] | None = None,
    ) -> Result:
        """Run a parsed statement by its kind (the handler table); NOT_SUPPORTED for a kind without a handler."""
        handler = self.handlers.get(type(statement))
        if handler is None:
            raise MergekitError(ErrorCode.NOT_SUPPORTED, f"Statement not supported: {type(statement).__name__}")
        options: dict[str, Any] = {
            "stream": stream,
            "overrides": overrides,
            "connector_properties": connector_properties,
        }
        return handler(self, statement, options)

    def context(
        self,
        *,
        stream: bool = False,
        overrides: Mapping[str, str] | None = None,
        connector_properties: Mapping[str, Any] | None = None,
        user_zone: str | None = None,
    ) -> StatementContext:
        return StatementContext(
            self.spark,
            self.catalogs,
            dataframes=self.dataframes,
            live_views=self.live_views,
            stream=stream,
            session_properties=self.session_properties,
            overrides=overrides,
            connector_properties=connector_properties,
            user_zone=user_zone,
        )

    @contextmanager
    def statement(self, **options: Any) -> Iterator[StatementContext]:
        """A statement context whose views are dropped when the block ends."""
        ctx = self.context(**options)
        try:
            yield ctx
        finally:
            ctx.drop_views()

    def in_statement(
        self,
        fn: Callable[[StatementContext], _T],
        *,
        stream: bool = False,
        overrides: Mapping[str, str] | None = None,
        connector_properties: Mapping[str, Any] | None = None,
        spark: bool = True,
    ) -> _T:
        """``fn(ctx)`` as one statement: under the lock and mergekit's Spark settings, its views dropped at the end,
        any failure a :class:`MergekitError`. ``spark=False``: ``fn`` runs no Spark (it only talks to connectors on
        the driver), so it needs neither the settings nor the lock that keeps Spark statements one at a time; the
        connectors' metadata is thread-safe (``mergekit.spi``)."""
        options = {"stream": stream, "overrides": overrides, "connector_properties": connector_properties}
        if not spark:
            # the caller's zone: while a Spark statement runs, the session shows mergekit's (UTC), not the caller's
            user_zone = self._user_zone if self._spark_statements else session_time_zone(self.spark)
            with self.statement(**options, user_zone=user_zone) as ctx:
                return _translated(fn, ctx)
        with self.lock:
            if not self._spark_statements:  # (a nested statement: the session shows mergekit's settings already)
                self._user_zone = session_time_zone(self.spark)  # before mergekit's settings replace the caller's
            self._spark_statements += 1
            try:
                with (
                    applied_conf(self.spark, self.python_exec),
                    self.statement(**options, user_zone=self._user_zone) as ctx,
                ):
                    return _translated(fn, ctx)
            finally:
                self._spark_statements -= 1

    @contextmanager
    def settings(self) -> Iterator[None]:
        """The lock and mergekit's Spark settings, without a statement (``Engine.table``'s analysis)."""
        with self.lock, applied_conf(self.spark, self.python_exec):
            yield

    def close(self) -> None:
        """Drop the views statements left for DataFrames still in use (``Engine.close``)."""
        self.context().drop_views(list(self.live_views))


def _translated(fn: Callable[[StatementContext], _T], ctx: StatementContext) -> _T:
    try:
        return fn(ctx)
    except MergekitError:
        raise
    except Exception as exc:  # Spark, py4j, worker failures
        raise translate_error(exc) from exc
