"""The click group of the ``mergekit`` command line: its global options and how failures end a command.

Commands raise :class:`~mergekit.errors.MergekitError`; the group prints it as ``[CODE] message`` on stderr and
exits 1 (130 for Ctrl-C). The commands themselves are added from the outside (:mod:`mergekit.cli.commands`,
registered by :mod:`mergekit.cli`), so this module imports none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from mergekit.cli.runner import Cancelled, CliState
from mergekit.cli.terminal import as_mergekit_error
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
        except Exception as exc:  # Spark/py4j or a bug: [CODE] message, the stack only with --debug
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
    _DEBUG = debug
    ctx.obj = CliState(warehouse=warehouse, catalog_config=catalog_config, debug=debug)
