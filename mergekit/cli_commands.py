"""The Spark-backed commands of ``mergekit`` (``run``, ``sql``, ``shell``, ``demo``) and ``connectors``.

:func:`register` adds them to the click group of :mod:`mergekit.cli`. The group's options
(``--warehouse``, ``--catalog-config``, ``--debug``) land in a :class:`CliState` on ``ctx.obj``; ``run``,
``sql`` and ``shell`` accept ``--warehouse`` and ``--catalog-config`` after the command name too.

Spark starts only when a statement is about to run: ``connectors`` and a script with a syntax error never
start it.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs
import click

from mergekit.errors import ErrorCode, MergekitError
from mergekit.terminal import DEFAULT_MAX_ROWS, Output, SparkProgress, cli_spark_conf

__all__ = ["CliState", "Cancelled", "Runner", "load_catalog_config", "register"]

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

    _ids = itertools.count(1)

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.requested = threading.Event()
        if _main_thread():
            # PySpark's handler calls into the JVM from the signal handler, on the connection the interrupted
            # call is waiting on (py4j's pinned threads); that breaks the call and prints py4j's tracebacks.
            signal.signal(signal.SIGINT, signal.default_int_handler)

    @contextmanager
    def statement(self) -> Iterator[None]:
        group = f"mergekit-{os.getpid()}-{next(self._ids)}"
        sc = self.spark.sparkContext
        sc.setJobGroup(group, "mergekit statement", interruptOnCancel=True)
        self.requested.clear()

        def on_sigint(signum: int, frame: Any) -> None:
            if self.requested.is_set():
                raise KeyboardInterrupt
            self.requested.set()
            threading.Thread(target=self._cancel, args=(group,), name="mergekit-cancel", daemon=True).start()

        previous = signal.signal(signal.SIGINT, on_sigint) if _main_thread() else None
        try:
            yield
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            try:
                sc._jsc.sc().clearJobGroup()
            except Exception:  # noqa: BLE001 - Spark is stopping
                pass

    def _cancel(self, group: str) -> None:
        sc = self.spark.sparkContext
        try:
            # this statement's jobs, and any it would still start
            sc._jsc.sc().cancelJobGroupAndFutureJobs(group, "cancelled by the user (Ctrl-C)")
            sc.cancelAllJobs()  # jobs started from other threads
        except Exception:  # noqa: BLE001 - Spark is stopping: nothing left to cancel
            pass

    def check(self) -> None:
        """Raise :class:`Cancelled` if Ctrl-C was pressed (between the batches of a query's rows)."""
        if self.requested.is_set():
            raise Cancelled()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


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
        from mergekit import Engine
        from mergekit.execution.session import local_session

        with self.output.err.status("Starting Spark…", spinner="dots") if self.output.err.is_terminal else _null():
            spark = local_session(conf=cli_spark_conf(debug=self.state.debug))
            if self._catalogs is not None:
                catalogs, default_catalog, default_schema = self._catalogs
                engine = Engine(
                    spark=spark, catalogs=catalogs, default_catalog=default_catalog, default_schema=default_schema
                )
            else:
                engine = Engine.local(warehouse=self.state.warehouse or DEFAULT_WAREHOUSE)
        self._progress = SparkProgress(spark, self.output.err)
        self._interrupts = _Interrupts(spark)
        return engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

    def execute(self, sql: str) -> Any:
        """One statement, with the progress bar on long ones, and its result all read (tests, the demo).

        Ctrl-C cancels the statement's Spark jobs and raises :class:`Cancelled`."""
        result = None

        def keep(r: Any) -> None:
            nonlocal result
            r.to_arrow()  # a streamed query's rows are read while the statement is cancellable
            result = r

        self._run(sql, keep)
        return result

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
        self.engine  # start Spark before the first statement's clock starts  # noqa: B018
        for number, piece in enumerate(pieces, 1):
            try:
                self.run_and_show(piece, echo=echo)
            except Cancelled as exc:
                self.output.cancelled(str(exc))
                return EXIT_CANCELLED
            except Exception as exc:  # noqa: BLE001 - shown as [CODE] message
                self._error(exc, source, lines[number - 1], number)
                return 1
        return 0

    def _error(self, exc: Exception, source: str | None, line: int, number: int) -> None:
        if source is None:
            self.output.error(exc)
            return
        from mergekit.terminal import as_mergekit_error

        err = as_mergekit_error(exc)
        where = f"{source}:{line}"
        error_line = err.details.get("line")
        if err.code is ErrorCode.SYNTAX_ERROR and error_line:
            # the parser counts lines from the statement's first code line: count them in the file, and drop its
            # "line L:C: "
            where = f"{source}:{line + int(error_line) - 1}:{err.details.get('column') or 0}"
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


def _statement_lines(text: str, pieces: Sequence[str]) -> list[int]:
    """The line of ``text`` where each statement's code starts (past its leading comments)."""
    out = []
    pos = 0
    for piece in pieces:
        start = text.find(piece, pos)
        if start < 0:  # not found verbatim: keep counting from the last statement
            start = pos
        pos = start + len(piece)
        out.append(text.count("\n", 0, start) + 1 + _leading_comment_lines(piece))
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


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _statement_label(sql: str) -> str:
    """The statement's keyword (``MERGE``, ``SELECT``, ...), past leading comments."""
    for line in sql.splitlines():
        words = line.split("--")[0].split()
        if words:
            return words[0].upper()
    return "statement"


# ---- registration on the click group -------------------------------------------------------------------


def _engine_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--max-rows",
        "max_rows",
        type=click.IntRange(min=0),
        envvar="MERGEKIT_MAX_ROWS",
        default=DEFAULT_MAX_ROWS,
        show_default=True,
        help="Show at most this many rows of a query (0: all; rows are streamed, never held in memory).",
    )(fn)
    fn = click.option(
        "--catalog-config",
        "-c",
        "catalog_config",
        type=click.Path(exists=True, dir_okay=False),
        help="TOML file with [catalogs.<name>] tables (overrides the global option).",
    )(fn)
    fn = click.option(
        "--warehouse",
        "-w",
        type=click.Path(file_okay=False),
        help="Warehouse directory of the default catalog (overrides the global option).",
    )(fn)
    return fn


def _state(
    ctx: click.Context,
    warehouse: str | None = None,
    catalog_config: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> CliState:
    state = ctx.find_object(CliState) or CliState()
    return attrs.evolve(
        state,
        warehouse=warehouse or state.warehouse,
        catalog_config=catalog_config or state.catalog_config,
        max_rows=max_rows,
    )


def register(main: click.Group) -> None:
    """Add ``run``, ``sql``, ``shell``, ``demo`` and ``connectors`` to ``main``."""

    @main.command("run")
    @click.argument("file", type=click.File("r", encoding="utf-8"))
    @click.option("--echo", "-e", is_flag=True, help="Print each statement before its result.")
    @_engine_options
    @click.pass_context
    def run_command(
        ctx: click.Context,
        file: Any,
        echo: bool,
        warehouse: str | None,
        catalog_config: str | None,
        max_rows: int,
    ) -> int:
        """Run the statements of FILE ('-' for standard input), separated by ';'.

        Stops at the first failing statement and exits with status 1 (its error names FILE:LINE and the
        statement's number); Ctrl-C cancels the running statement and exits with status 130."""
        runner = Runner(_state(ctx, warehouse, catalog_config, max_rows))
        try:
            return runner.run_script(file.read(), echo=echo, source=file.name)
        finally:
            runner.close()

    @main.command("sql")
    @click.argument("statements")
    @click.option("--echo", "-e", is_flag=True, help="Print each statement before its result.")
    @_engine_options
    @click.pass_context
    def sql_command(
        ctx: click.Context,
        statements: str,
        echo: bool,
        warehouse: str | None,
        catalog_config: str | None,
        max_rows: int,
    ) -> int:
        """Run STATEMENTS (one, or several separated by ';').

        \b
        mergekit sql "SELECT * FROM accounts ORDER BY customer"
        """
        runner = Runner(_state(ctx, warehouse, catalog_config, max_rows))
        try:
            return runner.run_script(statements, echo=echo)
        finally:
            runner.close()

    @main.command("shell")
    @_engine_options
    @click.pass_context
    def shell_command(ctx: click.Context, warehouse: str | None, catalog_config: str | None, max_rows: int) -> int:
        """An interactive SQL shell: statements end with ';', \\d lists tables, \\q quits.

        Reads standard input when it is not a terminal (then exits 1 if a statement failed)."""
        from mergekit.shell import Shell

        runner = Runner(_state(ctx, warehouse, catalog_config, max_rows))
        try:
            return Shell(runner).run()
        finally:
            runner.close()

    @main.command("demo")
    @click.option(
        "--warehouse",
        "-w",
        type=click.Path(file_okay=False),
        help="An empty or new directory for the demo's warehouse (default: a fresh temporary one).",
    )
    @click.option(
        "--section",
        "sections",
        multiple=True,
        type=click.Choice(["accounts", "journal", "conflict", "partitions"]),
        help="Run only these parts (repeatable; default: all).",
    )
    @click.pass_context
    def demo_command(ctx: click.Context, warehouse: str | None, sections: Sequence[str]) -> int:
        """The seeds' examples end to end in a fresh local warehouse (what `make demo` runs)."""
        from mergekit.seeds_demo import run_demo

        state = ctx.find_object(CliState) or CliState()
        return run_demo(warehouse=warehouse, sections=tuple(sections), debug=state.debug)

    @main.command("connectors")
    @click.option(
        "--probe/--no-probe",
        default=True,
        show_default=True,
        help="Create each connector in a temporary directory to report its behaviours.",
    )
    def connectors_command(probe: bool) -> None:
        """Installed connectors (entry-point group mergekit.connectors) and what they support."""
        from mergekit.connector_info import describe_connectors

        rows = describe_connectors(probe=probe)
        Output().table(
            ["Connector", "Distribution", "Version", "Paradigm", "Supports", "Procedures", "Description"],
            [
                (
                    r.name,
                    r.distribution,
                    r.version,
                    r.paradigm,
                    ", ".join(r.features),
                    ", ".join(r.procedures),
                    r.description,
                )
                for r in rows
            ],
        )
