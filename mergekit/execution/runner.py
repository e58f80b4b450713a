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
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from mergekit import sql as msql
from mergekit.catalogs import Catalogs
from mergekit.errors import ErrorCode, MergekitError
from mergekit.result import Result

from .context import StatementContext
from .failures import translate_error
from .session import applied_conf, python_for_workers, session_time_zone, ship_by_value
from .user_frames import UserFrame
from .views import expand_statement_views

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["StatementRunner", "Handler"]

_T = TypeVar("_T")

#: How a kind of statement runs: ``handler(runner, statement, options)``, ``options`` those of :meth:`run`.
Handler = Callable[["StatementRunner", Any, Mapping[str, Any]], Result]


def in_context(handler: Callable[[StatementContext, Any], Result]) -> Handler:
    """A handler of one statement context (``run_query``, ``run_dml``, DDL): the statement's views expanded first."""

    def run(runner: StatementRunner, statement: Any, options: Mapping[str, Any]) -> Result:
        def body(ctx: StatementContext) -> Result:
            expanded = expand_statement_views(ctx, statement)  # views become their queries (execution.views)
            ctx.guard_scans = lambda: msql.predicates_may_fail(expanded)  # computed if a Spark scan asks
            return handler(ctx, expanded)

        return runner.in_statement(body, **options)

    return run


class StatementRunner:
    """The lock, the per-statement Spark settings, the statement context and error translation of one engine.

    ``spark`` is the session, or what starts one (``local_session``) when a statement first needs Spark: a
    statement that runs on the driver tier touches no Spark, so an engine that only runs those never starts a JVM.
    Likewise mergekit's settings are applied to the session when a statement first uses it, not when it begins."""

    def __init__(
        self,
        spark: SparkSession | Callable[[], SparkSession],
        catalogs: Catalogs,
        handlers: Mapping[type, Handler] | None = None,
    ) -> None:
        self._session: SparkSession | None = None
        self._start: Callable[[], SparkSession] | None = None
        self._start_lock = threading.Lock()
        self.python_exec: str | None = None
        self.catalogs = catalogs
        if callable(spark):  # what starts the local session (a SparkSession is not callable)
            self._start = spark
        else:
            self._adopt(spark)  # a caller's session: checked now (python_for_workers fails at once when wrong)
        self.handlers: dict[type, Handler] = dict(handlers or {})
        self.dataframes: dict[str, UserFrame] = {}
        self.live_views: set[str] = set()  # views not yet dropped (close() drops what is left)
        self.session_properties: dict[str, str] = {}  # SET SESSION (mergekit.planner.session)
        self.lock = threading.RLock()
        self._with_settings = 0  # statements running with mergekit's settings applied (they used the session)
        self._user_zone: str | None = None  # the caller's session zone when the first of those applied them

    def _adopt(self, session: SparkSession) -> None:
        # the session's configuration stays the caller's: mergekit's settings apply per statement (applied_conf)
        self.python_exec = python_for_workers(session)
        self._session = session
        for connector in self.catalogs.all().values():  # a connector from a script: its classes go by value
            ship_by_value(type(connector).__module__)

    @property
    def started(self) -> bool:
        """Whether the engine has its Spark session (given one, or started it for a statement)."""
        return self._session is not None

    @property
    def spark(self) -> SparkSession:
        """The Spark session; started now if the engine was given none and no statement needed one yet."""
        if self._session is None:
            with self._start_lock:
                if self._session is None:
                    assert self._start is not None
                    self._adopt(self._start())
        assert self._session is not None
        return self._session

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
        user_zone: str | None | Callable[[], str | None] = None,
        open_spark: Callable[[], SparkSession] | None = None,
    ) -> StatementContext:
        return StatementContext(
            None,
            self.catalogs,
            open_spark=open_spark or (lambda: self.spark),
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
        """``fn(ctx)`` as one statement: under the lock, with mergekit's Spark settings from its first use of the
        session (``ctx.spark``) to its end, its views dropped at the end, any failure a :class:`MergekitError`.
        ``spark=False``: ``fn`` runs no Spark (it only talks to connectors on the driver), so it needs neither the
        settings nor the lock that keeps Spark statements one at a time; the connectors' metadata is thread-safe
        (``mergekit.spi``)."""
        options = {"stream": stream, "overrides": overrides, "connector_properties": connector_properties}
        if not spark:
            with self.statement(**options, user_zone=self._caller_zone) as ctx:
                return _translated(fn, ctx)
        with self.lock, ExitStack() as settings:

            def open_spark() -> SparkSession:
                """The session with mergekit's settings until the statement ends (its first use applies them)."""
                session = self.spark
                if not self._with_settings:  # (nested: the session shows mergekit's settings already)
                    self._user_zone = session_time_zone(session)  # before mergekit's settings replace the caller's
                settings.enter_context(applied_conf(session, self.python_exec))
                self._with_settings += 1
                settings.callback(self._settings_released)
                return session

            with self.statement(**options, user_zone=self._caller_zone, open_spark=open_spark) as ctx:
                return _translated(fn, ctx)

    def _settings_released(self) -> None:
        self._with_settings -= 1

    def _caller_zone(self) -> str | None:
        """The zone of the caller's session: while a statement runs with mergekit's settings the session shows
        mergekit's (UTC), so the one read before they were applied."""
        return self._user_zone if self._with_settings else session_time_zone(self.spark)

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
