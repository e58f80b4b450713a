"""The ``mergekit`` command line (DESIGN.md §4).

One click group, :func:`main`; each command is a small function registered on it. Commands raise
:class:`~mergekit.errors.MergekitError`; the group prints it as ``[CODE] message`` on stderr and exits 1.
Heavy imports (pyspark, connectors) happen inside the commands that need them, so ``mergekit rewrite``
starts fast and needs no Spark.

To add a command: define ``@main.command()`` below (or in another module that imports :data:`main`
and is imported at the bottom of this one).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click

from mergekit.errors import ErrorCode, MergekitError

__all__ = ["main"]


def _fail(message: str, code: ErrorCode = ErrorCode.INVALID_ARGUMENTS) -> MergekitError:
    return MergekitError(code, message)


def _print_error(err: MergekitError) -> None:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print(str(err), markup=False, style="bold red")


class _Group(click.Group):
    """Prints MergekitError and click's usage errors as ``[CODE] message`` on stderr and exits 1."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any) -> Any:
        extra["standalone_mode"] = False
        try:
            rv = super().main(args, prog_name or "mergekit", **extra)
        except MergekitError as err:
            _print_traceback_if_debug(err)
            _print_error(err)
            sys.exit(1)
        except KeyboardInterrupt:
            _print_cancelled()
            sys.exit(130)
        except click.UsageError as err:
            if err.ctx is not None:
                click.echo(err.ctx.get_usage(), err=True)
            _print_error(_fail(err.format_message()))
            sys.exit(1)
        except click.ClickException as err:
            _print_error(_fail(err.format_message()))
            sys.exit(1)
        except click.exceptions.Abort as abort:
            if isinstance(abort.__cause__, KeyboardInterrupt):  # click's wrapping of Ctrl-C
                _print_cancelled()
                sys.exit(130)
            _print_error(MergekitError(ErrorCode.GENERIC_USER_ERROR, "Aborted"))
            sys.exit(1)
        except click.exceptions.Exit as exit_:
            sys.exit(exit_.exit_code)
        except Exception as exc:  # noqa: BLE001 - Spark/py4j or a bug: [CODE] message, the stack only with --debug
            from mergekit.cli_commands import Cancelled
            from mergekit.terminal import as_mergekit_error

            if isinstance(exc, Cancelled):
                _print_cancelled(str(exc))
                sys.exit(130)

            _print_traceback_if_debug(exc)
            _print_error(as_mergekit_error(exc))
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def _print_cancelled(message: str = "Cancelled (Ctrl-C)") -> None:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print(message, markup=False, style="bold yellow")


_DEBUG = False


def _print_traceback_if_debug(exc: BaseException) -> None:
    if _DEBUG:
        import traceback

        sys.stderr.write("".join(traceback.format_exception(exc)))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mergekit", prog_name="mergekit")
@click.option(
    "--warehouse",
    "-w",
    envvar="MERGEKIT_WAREHOUSE",
    type=click.Path(file_okay=False),
    help="Warehouse directory of the default catalog 'lake' (default: ./warehouse).",
)
@click.option(
    "--catalog-config",
    "-c",
    "catalog_config",
    envvar="MERGEKIT_CATALOG_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="TOML file with the catalogs ([catalogs.<name>] connector = ... and its options); "
    "replaces the default catalog. See docs/cli.md.",
)
@click.option(
    "--debug",
    is_flag=True,
    envvar="MERGEKIT_DEBUG",
    help="Show Python and Java stack traces with errors, and Spark's own log.",
)
@click.pass_context
def main(ctx: click.Context, warehouse: str | None, catalog_config: str | None, debug: bool) -> None:
    """mergekit: SQL MERGE, UPDATE and DELETE for storage that cannot change rows in place.

    \b
    mergekit sql "SELECT * FROM accounts"      run statements
    mergekit run script.sql                    run a file
    mergekit shell                             interactive SQL
    mergekit demo                              the seeds' examples end to end
    """
    global _DEBUG
    from mergekit.cli_commands import CliState

    _DEBUG = debug
    ctx.obj = CliState(warehouse=warehouse, catalog_config=catalog_config, debug=debug)


# ---- option parsing shared by commands ------------------------------------------------------------------


def parse_assignments(values: Sequence[str], option: str) -> dict[str, tuple[str, ...]]:
    """``("t=a,b", "u=c")`` -> ``{"t": ("a", "b"), "u": ("c",)}`` (names lower-cased)."""
    out: dict[str, tuple[str, ...]] = {}
    for value in values:
        table, sep, cols = value.partition("=")
        names = tuple(c.strip().lower() for c in cols.split(",") if c.strip())
        if not sep or not table.strip() or not names:
            raise _fail(f"{option} expects TABLE=COL1,COL2,...: got {value!r}")
        out[table.strip().lower()] = names
    return out


def catalog_tables(config: Mapping[str, Any], *, schema: str | None = None) -> dict[str, dict[str, Any]]:
    """Columns, key and version type of every logical table of a catalog, read through its connector
    (``config`` as in ``Engine(catalogs={"lake": config})``). No Spark is started."""
    from mergekit import plugins
    from mergekit.spi import ConnectorSession

    if "connector" not in config:
        raise _fail("The catalog configuration needs a 'connector' entry")
    connector = plugins.get_factory(str(config["connector"])).create(
        catalog_name="catalog", config={k: v for k, v in config.items() if k != "connector"}
    )
    try:
        md = connector.get_metadata()
        session = ConnectorSession(catalog="catalog")
        tables: dict[str, dict[str, Any]] = {}
        for name in md.list_tables(session=session, schema=schema):
            handle = md.get_table_handle(session=session, table=name)
            if handle is None:
                continue
            meta = md.get_table_metadata(session=session, table_handle=handle)
            if not meta.primary_key:  # journals, change feeds and key-less tables are not rewritten
                continue
            info = {
                "columns": tuple(c.name for c in meta.visible_columns),
                "key": tuple(meta.primary_key),
                "version_type": meta.properties.get("version_type"),
            }
            tables[name.table] = info
            tables[f"{name.schema}.{name.table}"] = info
        return tables
    finally:
        connector.shutdown()


# ---- mergekit rewrite -----------------------------------------------------------------------------------


@main.command()
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
def rewrite(
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
    from mergekit.sql.rewrite import rewrite as do_rewrite

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
        found = catalog_tables(config)
        types = {str(t["version_type"]).lower() for t in found.values() if t.get("version_type")}
        if len(types) == 1 and version_type is None:
            options["version_type"] = types.pop()
        for name, info in found.items():
            columns[name] = info["columns"]
            journal_tables[name] = info["key"]
    columns.update(parse_assignments(schemas, "--schema"))
    journal_tables.update(parse_assignments(keys, "--key"))
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


from mergekit import cli_commands as _cli_commands  # noqa: E402 - run, sql, shell, demo, connectors

_cli_commands.register(main)

if __name__ == "__main__":
    main()
