"""The Spark-backed commands of ``mergekit`` (``run``, ``sql``, ``shell``, ``demo``) and ``connectors``.

:func:`register` adds them to the click group of :mod:`mergekit.cli`. The group's options
(``--warehouse``, ``--catalog-config``, ``--debug``) land in a :class:`CliState` on ``ctx.obj``; ``run``,
``sql`` and ``shell`` accept ``--warehouse`` and ``--catalog-config`` after the command name too.

Spark starts only when a statement is about to run: ``connectors`` and a script with a syntax error never
start it.
"""

from __future__ import annotations

import os
import time
import tomllib
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import click

from mergekit.errors import ErrorCode, MergekitError
from mergekit.terminal import Output, SparkProgress, quiet_spark_conf

__all__ = ["CliState", "Runner", "load_catalog_config", "register"]

DEFAULT_WAREHOUSE = "./warehouse"


@attrs.define
class CliState:
    """What the group's options say; commands may override ``warehouse`` and ``catalog_config``."""

    warehouse: str | None = None
    catalog_config: str | None = None
    debug: bool = False


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
        self.output = output or Output(debug=state.debug)
        self._engine: Any = None
        self._progress: SparkProgress | None = None
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
            spark = local_session(conf={} if self.state.debug else quiet_spark_conf())
            if self._catalogs is not None:
                catalogs, default_catalog, default_schema = self._catalogs
                engine = Engine(
                    spark=spark, catalogs=catalogs, default_catalog=default_catalog, default_schema=default_schema
                )
            else:
                engine = Engine.local(warehouse=self.state.warehouse or DEFAULT_WAREHOUSE)
        self._progress = SparkProgress(spark, self.output.err)
        return engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

    def execute(self, sql: str) -> Any:
        """One statement, with the progress bar on long ones; Ctrl-C cancels its Spark jobs (and is re-raised)."""
        engine = self.engine
        assert self._progress is not None
        try:
            with self._progress.track(_statement_label(sql)):
                return engine.execute(sql)
        except KeyboardInterrupt:
            try:
                engine.spark.sparkContext.cancelAllJobs()
            except Exception:  # noqa: BLE001 - best effort
                pass
            raise

    def run_and_show(self, sql: str, *, echo: bool = False) -> Any:
        if echo:
            self.output.statement(sql)
        started = time.perf_counter()
        result = self.execute(sql)
        self.output.result(result, elapsed=time.perf_counter() - started)
        return result

    def run_script(self, text: str, *, echo: bool = False) -> int:
        """Every statement of ``text`` in order; stops at the first error (0 on success, 1 on error).

        The whole script is parsed first, so a syntax error anywhere fails before anything runs."""
        from mergekit import sql as msql

        try:
            pieces = msql.split_statements(text)
            for piece in pieces:
                msql.parse_statement(piece)
        except MergekitError as exc:
            self.output.error(exc)
            return 1
        if not pieces:
            raise MergekitError(ErrorCode.SYNTAX_ERROR, "No statement to run")
        self.engine  # start Spark before the first statement's clock starts  # noqa: B018
        for piece in pieces:
            try:
                self.run_and_show(piece, echo=echo)
            except Exception as exc:  # noqa: BLE001 - shown as [CODE] message
                self.output.error(exc)
                return 1
        return 0


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


def _state(ctx: click.Context, warehouse: str | None = None, catalog_config: str | None = None) -> CliState:
    state = ctx.find_object(CliState) or CliState()
    return attrs.evolve(
        state, warehouse=warehouse or state.warehouse, catalog_config=catalog_config or state.catalog_config
    )


def register(main: click.Group) -> None:
    """Add ``run``, ``sql``, ``shell``, ``demo`` and ``connectors`` to ``main``."""

    @main.command("run")
    @click.argument("file", type=click.File("r", encoding="utf-8"))
    @click.option("--echo", "-e", is_flag=True, help="Print each statement before its result.")
    @_engine_options
    @click.pass_context
    def run_command(
        ctx: click.Context, file: Any, echo: bool, warehouse: str | None, catalog_config: str | None
    ) -> int:
        """Run the statements of FILE ('-' for standard input), separated by ';'.

        Stops at the first failing statement and exits with status 1."""
        runner = Runner(_state(ctx, warehouse, catalog_config))
        try:
            return runner.run_script(file.read(), echo=echo)
        finally:
            runner.close()

    @main.command("sql")
    @click.argument("statements")
    @click.option("--echo", "-e", is_flag=True, help="Print each statement before its result.")
    @_engine_options
    @click.pass_context
    def sql_command(
        ctx: click.Context, statements: str, echo: bool, warehouse: str | None, catalog_config: str | None
    ) -> int:
        """Run STATEMENTS (one, or several separated by ';').

        \b
        mergekit sql "SELECT * FROM accounts ORDER BY customer"
        """
        runner = Runner(_state(ctx, warehouse, catalog_config))
        try:
            return runner.run_script(statements, echo=echo)
        finally:
            runner.close()

    @main.command("shell")
    @_engine_options
    @click.pass_context
    def shell_command(ctx: click.Context, warehouse: str | None, catalog_config: str | None) -> int:
        """An interactive SQL shell: statements end with ';', \\d lists tables, \\q quits.

        Reads standard input when it is not a terminal (then exits 1 if a statement failed)."""
        from mergekit.shell import Shell

        runner = Runner(_state(ctx, warehouse, catalog_config))
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
