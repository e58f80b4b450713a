"""The commands of ``mergekit``: ``run``, ``sql``, ``shell``, ``demo``, ``connectors`` and ``rewrite``.

:func:`register` adds them to the click group (:mod:`mergekit.cli` does, on :func:`mergekit.cli.group.main`). The
group's options (``--warehouse``, ``--catalog-config``, ``--debug``) land in a
:class:`~mergekit.cli.runner.CliState` on ``ctx.obj``; ``run``, ``sql`` and ``shell`` accept ``--warehouse`` and
``--catalog-config`` after the command name too.

Heavy imports (pyspark, connectors) happen inside the commands that need them: Spark starts only when a statement
is about to run, so ``connectors``, ``rewrite`` and a script with a syntax error never start it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import click

from mergekit.cli.runner import CliState, Runner
from mergekit.cli.terminal import DEFAULT_MAX_ROWS, Output
from mergekit.errors import ErrorCode, MergekitError

__all__ = ["register"]


def _fail(message: str) -> MergekitError:
    return MergekitError(ErrorCode.INVALID_ARGUMENTS, message)


# ---- options shared by run, sql and shell --------------------------------------------------------------


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


@click.command("run")
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


@click.command("sql")
@click.argument("statements")
@click.option("--echo", "-e", is_flag=True, help="Print each statement before its result.")
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Run a SELECT STREAM continuously: print rows as they are emitted until Ctrl-C.",
)
@_engine_options
@click.pass_context
def sql_command(
    ctx: click.Context,
    statements: str,
    echo: bool,
    follow: bool,
    warehouse: str | None,
    catalog_config: str | None,
    max_rows: int,
) -> int:
    """Run STATEMENTS (one, or several separated by ';'), or one of the shell's backslash commands.

    \b
    mergekit sql "SELECT * FROM accounts ORDER BY customer"
    mergekit sql --follow "SELECT STREAM rowtime, units FROM orders"
    mergekit sql '\\d'
    """
    runner = Runner(_state(ctx, warehouse, catalog_config, max_rows))
    try:
        if statements.lstrip().startswith("\\") and not follow:  # as psql -c '\d'
            from mergekit.cli.shell import run_backslash_command

            return run_backslash_command(runner, statements)
        if follow:
            return runner.follow(statements)
        return runner.run_script(statements, echo=echo)
    finally:
        runner.close()


@click.command("shell")
@_engine_options
@click.pass_context
def shell_command(ctx: click.Context, warehouse: str | None, catalog_config: str | None, max_rows: int) -> int:
    """An interactive SQL shell: statements end with ';', \\d lists tables, \\q quits.

    Reads standard input when it is not a terminal (then exits 1 if a statement failed)."""
    from mergekit.cli.shell import Shell

    runner = Runner(_state(ctx, warehouse, catalog_config, max_rows))
    try:
        return Shell(runner).run()
    finally:
        runner.close()


@click.command("demo")
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
    type=click.Choice(["accounts", "journal", "conflict", "partitions", "streams"]),
    help="Run only these parts (repeatable; default: all).",
)
@click.pass_context
def demo_command(ctx: click.Context, warehouse: str | None, sections: Sequence[str]) -> int:
    """The seeds' examples end to end in a fresh local warehouse (what `make demo` runs)."""
    from mergekit.cli.demo import run_demo

    state = ctx.find_object(CliState) or CliState()
    return run_demo(warehouse=warehouse, sections=tuple(sections), debug=state.debug)


@click.command("connectors")
@click.option(
    "--probe/--no-probe",
    default=True,
    show_default=True,
    help="Create each connector in a temporary directory to report its behaviours.",
)
def connectors_command(probe: bool) -> None:
    """Installed connectors (entry-point group mergekit.connectors) and what they support."""
    from mergekit.cli.connectors import describe_connectors

    rows = describe_connectors(probe=probe)
    output = Output()

    def described(text: str) -> str:
        # on a terminal a long description is shortened so that the table keeps to its width; piped, it is whole
        return text if not output.out.is_terminal or len(text) <= 90 else text[:87] + "..."

    output.table(
        ["Connector", "Distribution", "Version", "Paradigm", "Supports", "Procedures", "Description"],
        [
            (
                r.name,
                r.distribution,
                r.version,
                r.paradigm,
                ", ".join(r.features),
                ", ".join(r.procedures),
                described(r.description),
            )
            for r in rows
        ],
    )


# ---- mergekit rewrite ----------------------------------------------------------------------------------


def _assignments(values: Sequence[str], option: str) -> dict[str, tuple[str, ...]]:
    """``("t=a,b", "u=c")`` -> ``{"t": ("a", "b"), "u": ("c",)}`` (names lower-cased)."""
    out: dict[str, tuple[str, ...]] = {}
    for value in values:
        table, sep, cols = value.partition("=")
        names = tuple(c.strip().lower() for c in cols.split(",") if c.strip())
        if not sep or not table.strip() or not names:
            raise _fail(f"{option} expects TABLE=COL1,COL2,...: got {value!r}")
        out[table.strip().lower()] = names
    return out


@click.command("rewrite")
@click.option(
    "--dialect",
    "-d",
    required=True,
    type=click.Choice(["postgres", "hive", "spark", "trino"]),
    help="SQL dialect of the backend database.",
)
@click.option(
    "--key", "keys", multiple=True, metavar="T=K1,K2", help="Journalled table T and its key columns (repeatable)."
)
@click.option(
    "--schema",
    "schemas",
    multiple=True,
    metavar="T=C1,C2,...",
    help="Business columns of table T in order (repeatable); UPDATE and MERGE need them.",
)
@click.option("--default-key", metavar="K1,K2", help="Key of journalled tables without --key.")
@click.option(
    "--version-type",
    type=click.Choice(["bigint", "timestamp"], case_sensitive=False),
    help="How versions are numbered (default: timestamp, as in the seed).",
)
@click.option("--journal-suffix", help="Suffix of journal tables (default _journal).")
@click.option("--version-field", help="Version column (default version_number).")
@click.option("--subsequent-version-field", help="Tombstone column (default subsequent_version_number).")
@click.option(
    "--catalog",
    "catalog_file",
    type=click.Path(exists=True, dir_okay=False),
    help="JSON file with a catalog configuration; table columns, keys and options are read from it.",
)
@click.option(
    "--warehouse",
    type=click.Path(exists=True, file_okay=False),
    help="Shorthand for a journal catalog in this warehouse directory.",
)
@click.option("--pretty/--no-pretty", default=True, show_default=True, help="Indent the output.")
@click.argument("statement")
def rewrite_command(
    dialect: str,
    keys: Sequence[str],
    schemas: Sequence[str],
    default_key: str | None,
    version_type: str | None,
    journal_suffix: str | None,
    version_field: str | None,
    subsequent_version_field: str | None,
    catalog_file: str | None,
    warehouse: str | None,
    pretty: bool,
    statement: str,
) -> None:
    """Print the append-only SQL (calcite-sql-rewriter style) for STATEMENT on <t>_journal tables.

    \b
    mergekit rewrite --dialect postgres --key depts=deptno --schema depts=deptno,department_name \\
        "UPDATE depts SET department_name = 'x' WHERE deptno = 3"
    """
    do_rewrite = _rewriter("journal")

    options: dict[str, Any] = {}
    columns: dict[str, tuple[str, ...]] = {}
    journal_tables: dict[str, tuple[str, ...] | None] = {}
    config: dict[str, Any] | None = None
    if catalog_file:
        try:
            with open(catalog_file) as f:
                config = json.load(f)
        except (OSError, ValueError) as exc:
            raise _fail(f"Cannot read the catalog configuration {catalog_file}: {exc}") from None
        if not isinstance(config, dict):
            raise _fail(f"The catalog configuration {catalog_file} must be a JSON object")
    elif warehouse:
        config = {"connector": "journal", "warehouse": warehouse}
    if config is not None:
        options.update(
            {
                k: v
                for k, v in config.items()
                if k
                in (
                    "journal_suffix",
                    "version_field",
                    "subsequent_version_field",
                    "version_type",
                    "default_key",
                    "journal_tables",
                )
            }
        )
        from mergekit.cli.catalogs import catalog_tables

        found = catalog_tables(config)
        types = {str(t["version_type"]).lower() for t in found.values() if t.get("version_type")}
        if len(types) == 1 and version_type is None:
            options["version_type"] = types.pop()
        for name, info in found.items():
            columns[name] = info["columns"]
            journal_tables[name] = info["key"]
    columns.update(_assignments(schemas, "--schema"))
    journal_tables.update(_assignments(keys, "--key"))
    if journal_tables:
        listed = dict(options.get("journal_tables") or {})
        listed.update(journal_tables)
        options["journal_tables"] = listed
    for name, value in (
        ("default_key", default_key.split(",") if default_key else None),
        ("version_type", version_type),
        ("journal_suffix", journal_suffix),
        ("version_field", version_field),
        ("subsequent_version_field", subsequent_version_field),
    ):
        if value is not None:
            options[name] = value
    click.echo(do_rewrite(statement, dialect=dialect, options=options, schemas=columns, pretty=pretty))


def _rewriter(name: str) -> Any:
    """The ``rewrite`` function a connector offers (entry-point group ``mergekit.rewriters``)."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="mergekit.rewriters") if ep.name == name]
    if not found:
        raise _fail(f"mergekit rewrite needs the {name} connector (pip install mergekit-{name})")
    return found[0].load()


def register(group: click.Group) -> None:
    """Add the commands to ``group``."""
    for command in (run_command, sql_command, shell_command, demo_command, connectors_command, rewrite_command):
        group.add_command(command)
