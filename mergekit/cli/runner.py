"""Running statements for ``mergekit run | sql | shell``: Spark starts on the first one, each shows its result
and a progress bar, and Ctrl-C cancels the running one.

Spark is reached through :mod:`mergekit.execution` only: the session (:func:`start_local_spark`), the statement's
job group and its cancellation (:mod:`mergekit.execution.spark_jobs`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import attrs

from mergekit.cli.catalogs import load_catalog_config
from mergekit.cli.terminal import DEFAULT_MAX_ROWS, Output, SparkProgress, as_mergekit_error
from mergekit.errors import ErrorCode, MergekitError

__all__ = ["EXIT_CANCELLED", "Cancelled", "CliState", "Runner", "start_local_spark"]

DEFAULT_WAREHOUSE = "./warehouse"


@attrs.define
class CliState:
    """What the group's options say; commands may override ``warehouse`` and ``catalog_config``."""

    warehouse: str | None = None
    catalog_config: str | None = None
    debug: bool = False
    max_rows: int = DEFAULT_MAX_ROWS


class Cancelled(Exception):
    """Ctrl-C stopped a statement (its Spark jobs were cancelled and it changed nothing), or a script after one."""

    def __init__(self, completed: bool = False) -> None:
        self.completed = completed
        super().__init__(
            "Cancelled (Ctrl-C) after the running statement completed"
            if completed
            else "Cancelled (Ctrl-C); the running statement changed nothing"
        )


#: exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it)
EXIT_CANCELLED = 130


class _Interrupts:
    """Ctrl-C while a statement runs (:meth:`statement`): the first one cancels the statement's Spark jobs, from
    another thread, so that the Spark call the statement waits in fails and the engine aborts the statement
    (``abort_merge``: nothing committed); a second one interrupts at once (KeyboardInterrupt). Outside
    statements Ctrl-C raises KeyboardInterrupt, as Python's own handler does (the shell's prompt clears the
    line)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine  # its Spark session, once a statement started it
        self.requested = threading.Event()
        self._jobs: ExitStack | None = None  # the running statement's job group, once Spark runs
        self._group: str | None = None
        self._on_sigint: Callable[[int, Any], None] | None = None  # the running statement's Ctrl-C handler
        if _main_thread():
            # PySpark's handler calls into the JVM from the signal handler, on the connection the interrupted
            # call is waiting on (py4j's pinned threads); that breaks the call and prints py4j's tracebacks.
            signal.signal(signal.SIGINT, signal.default_int_handler)

    @contextmanager
    def statement(self) -> Iterator[None]:
        from mergekit.execution.spark_jobs import cancel_statement_jobs

        with ExitStack() as jobs:
            self._jobs, self._group = jobs, None
            if self.engine.spark_started:
                self.spark_started(self.engine.spark)
            self.requested.clear()

            def on_sigint(signum: int, frame: Any) -> None:
                if self.requested.is_set():
                    raise KeyboardInterrupt
                self.requested.set()
                if self._group is not None:  # else no Spark job runs yet (the statement may be starting Spark)
                    threading.Thread(
                        target=cancel_statement_jobs,
                        args=(self.engine.spark, self._group),
                        name="mergekit-cancel",
                        daemon=True,
                    ).start()

            self._on_sigint = on_sigint
            previous = signal.signal(signal.SIGINT, on_sigint) if _main_thread() else None
            try:
                yield
            finally:
                if previous is not None:
                    signal.signal(signal.SIGINT, previous)
                self._jobs, self._on_sigint = None, None
        self._group = None

    def spark_started(self, spark: Any) -> None:
        """The running statement's Spark jobs (from now on: it may have started Spark itself) run in a job group of
        their own, which Ctrl-C cancels with its future jobs. Called in the statement's thread."""
        from mergekit.execution.spark_jobs import job_group

        if self._jobs is not None and self._group is None:
            self._group = self._jobs.enter_context(job_group(spark))
            if _main_thread() and self._on_sigint is not None:
                # PySpark's SparkContext just installed its own SIGINT handler (cancel all jobs, KeyboardInterrupt)
                signal.signal(signal.SIGINT, self._on_sigint)

    def check(self) -> None:
        """Raise :class:`Cancelled` if Ctrl-C was pressed (between the batches of a query's rows)."""
        if self.requested.is_set():
            raise Cancelled()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def start_local_spark(*, debug: bool = False) -> Any:
    """The local Spark session the commands run on (the active one if any); unless ``debug``, the JVM's log is
    kept off the terminal."""
    from mergekit.execution.session import local_session

    return local_session(log="spark" if debug else "off")


class Runner:
    """Runs statements for one command: starts Spark and the engine on first use, shows results and progress."""

    def __init__(self, state: CliState, output: Output | None = None) -> None:
        self.state = state
        self.output = output or Output(debug=state.debug, max_rows=state.max_rows)
        self._engine: Any = None
        self._progress: SparkProgress | None = None
        self._interrupts: _Interrupts | None = None
        self._catalogs: tuple[dict[str, dict[str, Any]], str, str] | None = None
        if state.catalog_config:
            # Read and check the file (and that its connectors are installed) before Spark starts.
            from mergekit import plugins

            self._catalogs = load_catalog_config(state.catalog_config)
            for spec in self._catalogs[0].values():
                plugins.get_factory(spec["connector"])

    @property
    def engine(self) -> Any:
        if self._engine is None:
            self._engine = self._start()
        return self._engine

    def _start(self) -> Any:
        """The engine; its Spark session starts when a statement first needs it (the driver tier's need none)."""
        from mergekit import Engine

        def spark() -> Any:
            session = start_local_spark(debug=self.state.debug)
            if self._interrupts is not None:
                self._interrupts.spark_started(session)  # the statement that started it: its jobs in a group
                if self._interrupts.requested.is_set():
                    # Ctrl-C while the statement started Spark: it has begun no Spark work, and stops here
                    raise KeyboardInterrupt
            return session

        if self._catalogs is not None:
            catalogs, default_catalog, default_schema = self._catalogs
            engine = Engine(
                spark=spark,
                catalogs=catalogs,
                default_catalog=default_catalog,
                default_schema=default_schema,
                streams_dir=os.path.join(self.state.warehouse or DEFAULT_WAREHOUSE, "_streams"),
            )
        else:
            warehouse = self.state.warehouse or DEFAULT_WAREHOUSE
            engine = Engine.local(warehouse=warehouse, spark=spark)
        self._progress = SparkProgress(engine, self.output.err)
        self._interrupts = _Interrupts(engine)
        return engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

    def run_and_show(self, sql: str, *, echo: bool = False, timing: bool = True) -> Any:
        """One statement and its result (a query's rows streamed from Spark as they are drawn, at most
        ``max_rows``). Ctrl-C cancels the statement's Spark jobs and raises :class:`Cancelled`."""
        if echo:
            self.output.statement(sql)
        started = time.perf_counter()
        shown = None

        def show(result: Any) -> None:
            nonlocal shown
            check = self._interrupts.check if self._interrupts else None
            self.output.result(result, started=started if timing else None, check=check)
            shown = result

        self._run(sql, show, prefetch=True)
        return shown

    def _run(self, sql: str, then: Callable[[Any], None], *, prefetch: bool = False) -> None:
        engine = self.engine
        assert self._progress is not None and self._interrupts is not None
        interrupts = self._interrupts
        try:
            with interrupts.statement():
                with self._progress.track(_statement_label(sql)):
                    result = engine.execute(sql, stream=True)
                    if prefetch and result.source is not None:
                        # the first rows' Spark job under the progress bar, the rest while the table is drawn
                        limit = self.output.max_rows or None
                        result = _Prefetched(result, result.batches(None if limit is None else limit + 1))
                interrupts.check()
                then(result)
        except Cancelled:
            raise
        except BaseException as exc:
            if interrupts.requested.is_set():  # the statement failed because its jobs were cancelled
                raise Cancelled() from exc
            raise
        if interrupts.requested.is_set():
            raise Cancelled(completed=True)

    def run_script(self, text: str, *, echo: bool = False, source: str | None = None) -> int:
        """Every statement of ``text`` in order; stops at the first error (0 on success, 1 on error, 130 when
        Ctrl-C cancelled a statement).

        The whole script is parsed first, so a syntax error anywhere fails before anything runs. With
        ``source`` (a file name) an error names where its statement is: ``FILE:LINE (statement N): [CODE] ...``.
        """
        from mergekit import sql as msql

        try:
            pieces = msql.split_statements(text)
        except MergekitError as exc:
            self.output.error(exc)
            return 1
        lines = _statement_lines(text, pieces)
        for number, piece in enumerate(pieces, 1):
            try:
                msql.parse_statement(piece)
            except MergekitError as exc:
                self._error(exc, source, lines[number - 1], number)
                return 1
        if not pieces:
            raise MergekitError(ErrorCode.SYNTAX_ERROR, "No statement to run")
        self.engine  # before the first statement's clock (Spark starts with the first that needs it)  # noqa: B018
        for number, piece in enumerate(pieces, 1):
            try:
                self.run_and_show(piece, echo=echo)
            except Cancelled as exc:
                self.output.cancelled(str(exc))
                return EXIT_CANCELLED
            except Exception as exc:  # shown as [CODE] message
                self._error(exc, source, lines[number - 1], number)
                return 1
        return 0

    def follow(self, sql: str) -> int:
        """``mergekit sql --follow``: run one ``SELECT STREAM`` continuously, print each micro-batch's rows as
        they are emitted, stop cleanly on Ctrl-C (0), or on the query's error (1)."""
        engine = self.engine
        counts = {"rows": 0, "batches": 0}

        def on_batch(table: Any) -> None:
            rows = [tuple(r.values()) for r in table.to_pylist()]
            counts["rows"] += len(rows)
            counts["batches"] += 1
            self.output.table(table.column_names, rows)

        try:
            handle = engine.stream(sql.strip().rstrip(";"), on_batch=on_batch)
        except MergekitError as exc:
            self.output.error(exc)
            return 1
        self.output.note("Following the stream; Ctrl-C stops.")
        status = 0
        stop = threading.Event()
        # Ctrl-C sets the event (raising KeyboardInterrupt inside a py4j call would break its connection)
        previous = signal.signal(signal.SIGINT, lambda signum, frame: stop.set()) if _main_thread() else None
        try:
            while not stop.wait(0.5) and handle.is_active:
                pass
            if handle.exception is not None:
                self.output.error(handle.exception)
                status = 1
        finally:
            handle.stop()
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        self.output.note(f"{counts['rows']} rows, {counts['batches']} batches")
        return status

    def _error(self, exc: Exception, source: str | None, lines: tuple[int, int], number: int) -> None:
        if source is None:
            self.output.error(exc)
            return
        err = as_mergekit_error(exc)
        first, code = lines
        where = f"{source}:{code}"
        error_line = err.details.get("line")
        if err.code in (ErrorCode.SYNTAX_ERROR, ErrorCode.INVALID_LITERAL) and error_line:
            # the parser counts lines from the statement's text (its leading comments included): count them in the
            # file, and drop its "line L:C: "
            where = f"{source}:{first + int(error_line) - 1}:{err.details.get('column') or 0}"
            message = err.message.split(": ", 1)[1] if err.message.startswith("line ") else err.message
            err = MergekitError(err.code, message, **err.details)
        self.output.error(exc, prefix=f"{where} (statement {number}): ", shown=err)


class _Prefetched:
    """A streamed query result whose first batch was already read (under the progress bar)."""

    def __init__(self, result: Any, batches: Iterator[Any]) -> None:
        self._result = result
        self._batches = batches
        self._first = next(batches, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._result, name)

    def batches(self, max_rows: int | None = None) -> Iterator[Any]:
        try:
            if self._first is not None:
                yield self._first
            yield from self._batches
        finally:
            close = getattr(self._batches, "close", None)
            if close is not None:
                close()  # stopped early: Spark stops serving the rows


def _statement_lines(text: str, pieces: Sequence[str]) -> list[tuple[int, int]]:
    """The lines of ``text`` where each statement's text starts and where its code starts (past its leading
    comments)."""
    out = []
    pos = 0
    for piece in pieces:
        start = text.find(piece, pos)
        if start < 0:  # not found verbatim: keep counting from the last statement
            start = pos
        pos = start + len(piece)
        first = text.count("\n", 0, start) + 1
        out.append((first, first + _leading_comment_lines(piece)))
    return out


def _leading_comment_lines(piece: str) -> int:
    """How many lines of ``piece`` come before its first line of code (comments, blank lines)."""
    i = 0
    while i < len(piece):
        if piece[i].isspace():
            i += 1
        elif piece.startswith("--", i):
            end = piece.find("\n", i)
            i = len(piece) if end < 0 else end + 1
        elif piece.startswith("/*", i):
            end = piece.find("*/", i + 2)
            i = len(piece) if end < 0 else end + 2
        else:
            break
    return piece.count("\n", 0, i)


def _statement_label(sql: str) -> str:
    """The statement's keyword (``MERGE``, ``SELECT``, ...), past leading comments."""
    for line in sql.splitlines():
        words = line.split("--")[0].split()
        if words:
            return words[0].upper()
    return "statement"
