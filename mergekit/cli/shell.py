"""``mergekit shell``: statements end with ``;`` and may span lines; backslash commands on a line of their own.

On a terminal it prompts, keeps a readline history in ``~/.mergekit_history`` (``MERGEKIT_HISTORY``
overrides the path) and Ctrl-C clears the statement being typed (or cancels the running one). Reading a
pipe it prompts nothing and exits 1 if any statement failed, so ``mergekit shell < script.sql`` is scriptable.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from mergekit.cli.runner import EXIT_CANCELLED, Cancelled, Runner
from mergekit.errors import ErrorCode, MergekitError

__all__ = ["Shell", "run_backslash_command", "statement_complete"]

PROMPT = "mergekit> "
CONTINUATION = "      -> "

HELP = """\
Statements end with ';' and may span several lines.
  \\d            list your tables in every catalog and schema (each once, its companions beside it)
  \\dS           the same with the system tables (such as sys.table_partitions)
  \\d NAME       describe a table (columns, types)
  \\dn           list schemas
  \\timing       toggle the elapsed time shown with results
  \\set max_rows N   show at most N rows of a query (0: all)
  \\e            print the statement typed so far;  \\r clears it
  \\? or help    this help
  \\q, quit, exit or Ctrl-D   leave the shell"""


def statement_complete(text: str) -> bool:
    """True when ``text`` ends with a ``;`` outside string literals, quoted names and comments."""
    state = None  # None, "'", '"', "--", "/*"
    last_code = ""
    i = 0
    while i < len(text):
        ch = text[i]
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if state is None:
            if ch in "'\"":
                state = ch
            elif ch == "-" and nxt == "-":
                state = "--"
                i += 1
            elif ch == "/" and nxt == "*":
                state = "/*"
                i += 1
            elif not ch.isspace():
                last_code = ch
                i += 1
                continue
        elif state in ("'", '"'):
            if ch == state:
                if nxt == state:  # doubled quote
                    i += 1
                else:
                    state = None
                    last_code = ch
        elif state == "--":
            if ch == "\n":
                state = None
        elif state == "/*" and ch == "*" and nxt == "/":
            state = None
            i += 1
        i += 1
    return state in (None, "--") and last_code == ";"


class Shell:
    def __init__(self, runner: Runner, *, stdin: Any = None) -> None:
        self.runner = runner
        self.output = runner.output
        self.stdin = stdin or sys.stdin
        self.interactive = _isatty(self.stdin) and _isatty(sys.stdout)
        self.timing = True
        self.failures = 0
        self.cancelled = False  # Ctrl-C stopped a piped shell
        if self.interactive:
            self.output.limit_hint = "\\set max_rows N changes the limit (0: no limit)"

    # ---- input -------------------------------------------------------------------------------------

    def _lines(self) -> Iterator[tuple[str, bool]]:
        """``(line, buffer_was_empty)``; on a terminal through ``input()`` (readline), else from the pipe."""
        if not self.interactive:
            for line in self.stdin:
                yield line.rstrip("\n"), True
            return
        history = _setup_readline()
        # Ctrl-C at the prompt clears the input (KeyboardInterrupt out of input()); while a statement runs, the
        # runner's handler cancels it; anywhere else (a result just shown, \d drawing its table, Spark's job group
        # being cleared) it only asks for a fresh prompt, as psql gives: never a KeyboardInterrupt out of the loop.
        interrupted = False
        at_prompt = False

        def on_sigint(signum: int, frame: Any) -> None:
            nonlocal interrupted
            if at_prompt:
                raise KeyboardInterrupt
            interrupted = True

        previous = signal.signal(signal.SIGINT, on_sigint) if _main_thread() else None
        try:
            while True:
                if interrupted:
                    interrupted = False
                    self._buffer = []
                    self.output.out.print()  # after the terminal's echoed ^C
                try:
                    at_prompt = True
                    line = input(CONTINUATION if self._buffer else PROMPT)
                except EOFError:
                    self.output.out.print()
                    return
                except KeyboardInterrupt:
                    self.output.out.print("^C")
                    self._buffer = []
                    continue
                finally:
                    at_prompt = False
                yield line, True
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            _save_history(history)

    # ---- the loop ----------------------------------------------------------------------------------

    _buffer: list[str]

    def run(self) -> int:
        self._buffer = []
        if self.interactive:
            from mergekit import __version__

            self.output.out.print(
                f"mergekit {__version__} shell. Statements end with ';'. \\d lists tables, \\? help, \\q quits."
            )
            self.runner.engine  # start Spark now, not on the first statement  # noqa: B018
        for line, _ in self._lines():
            stripped = line.strip()
            if not self._buffer:
                if not stripped:
                    continue
                if stripped.startswith("\\") or stripped.lower().rstrip(";") in ("quit", "exit", "help"):
                    if self._command(stripped) is False:
                        break
                    continue
            elif stripped in ("\\r", "\\e", "\\q"):
                if stripped == "\\q":
                    break
                if stripped == "\\e":
                    self.output.out.print("\n".join(self._buffer))
                else:
                    self._buffer = []
                continue
            self._buffer.append(line)
            text = "\n".join(self._buffer)
            if statement_complete(text):
                self._buffer = []
                self._execute(text)
                if self.cancelled:
                    break
        if self._buffer and "\n".join(self._buffer).strip() and not self.cancelled:
            # A last statement without ';' at end of input runs too (as psql -f would not; friendlier for pipes).
            self._execute("\n".join(self._buffer))
        if self.cancelled:
            return EXIT_CANCELLED
        if self.interactive:
            return 0
        return 1 if self.failures else 0

    def _execute(self, text: str) -> None:
        from mergekit import sql as msql

        try:
            pieces = msql.split_statements(text)
            for piece in pieces:
                msql.parse_statement(piece)
        except Exception as exc:  # syntax errors, shown before anything runs
            self.failures += 1
            self.output.error(exc)
            return
        for piece in pieces:
            try:
                self._show(piece)
            except Cancelled as exc:
                # Ctrl-C: the statement's Spark jobs were cancelled; back to the prompt (a pipe stops here)
                self.failures += 1
                self.output.cancelled(str(exc))
                if not self.interactive:
                    self.cancelled = True
                return
            except Exception as exc:  # [CODE] message, then the next statement
                self.failures += 1
                self.output.error(exc)
                return

    def _show(self, sql: str) -> None:
        self.runner.run_and_show(sql, timing=self.timing)

    # ---- backslash commands ------------------------------------------------------------------------

    def _command(self, text: str) -> bool | None:
        word, _, arg = text.rstrip(";").strip().partition(" ")
        arg = arg.strip().rstrip(";").strip()
        word = word.lower()
        try:
            if word in ("\\q", "quit", "exit"):
                return False
            if word in ("\\?", "\\h", "help"):
                self.output.out.print(HELP, markup=False, highlight=False)
            elif word in ("\\d", "\\ds") and not arg:
                self.output.table(["Catalog", "Schema", "Table", "Companion tables"], self.tables(system=word != "\\d"))
            elif word in ("\\d", "\\ds"):
                self._show(f"DESCRIBE {arg}")
            elif word == "\\dn":
                self.output.table(["Catalog", "Schema"], self.schemas())
            elif word == "\\set":
                self._set(arg)
            elif word == "\\timing":
                self.timing = not self.timing
                self.output.out.print(f"Timing is {'on' if self.timing else 'off'}.")
            elif word in ("\\e", "\\r"):
                pass  # nothing typed yet
            else:
                raise MergekitError(ErrorCode.SYNTAX_ERROR, f"Unknown command {word}; \\? lists the commands")
        except Cancelled as exc:
            self.failures += 1
            self.output.cancelled(str(exc))
        except Exception as exc:
            self.failures += 1
            self.output.error(exc)
        return None

    def _set(self, arg: str) -> None:
        name, _, value = arg.partition(" ")
        if name.lower() != "max_rows" or not value.strip().isdigit():
            raise MergekitError(ErrorCode.INVALID_ARGUMENTS, "\\set takes max_rows N (N >= 0; 0 shows all rows)")
        self.output.max_rows = int(value.strip())
        shown = f"at most {self.output.max_rows} rows" if self.output.max_rows else "all rows"
        self.output.out.print(f"Queries show {shown}.")

    def schemas(self) -> list[tuple[str, str]]:
        from mergekit.spi import ConnectorSession

        out = []
        for catalog, connector in sorted(self.runner.engine.catalogs.items()):
            md = connector.get_metadata()
            for schema in sorted(md.list_schemas(session=ConnectorSession(catalog=catalog))):
                out.append((catalog, schema))
        return out

    def tables(self, *, system: bool = False) -> list[tuple[str, str, str, str]]:
        """Every table of every catalog once, as its user created it, with the tables the connector created
        along with it (``list_companion_tables``: a journal's ``<t>_journal``), and without the connector's system
        tables (``list_system_tables``: the partitioned connector's ``sys.*``) unless ``system``; through the
        connectors' metadata (no Spark job).

        Each catalog is asked once for all its tables (``list_tables(schema=None)``), not schema by schema: a
        schema that only stands for another (the sqldb connector's ``default``, which is ``public``) would list
        its tables a second time."""
        from mergekit.spi import ConnectorSession

        out = []
        for catalog, connector in sorted(self.runner.engine.catalogs.items()):
            md = connector.get_metadata()
            session = ConnectorSession(catalog=catalog)
            companions = md.list_companion_tables(session=session, schema=None)
            hidden = set() if system else set(md.list_system_tables(session=session, schema=None))
            beside: dict[Any, list[str]] = {}
            for companion, table in companions.items():
                beside.setdefault(table, []).append(companion.table)
            names = sorted(set(md.list_tables(session=session, schema=None)), key=lambda n: (n.schema, n.table))
            for name in names:
                if name not in companions and name not in hidden:
                    out.append((catalog, name.schema, name.table, ", ".join(sorted(beside.get(name, [])))))
        return out


def run_backslash_command(runner: Runner, text: str) -> int:
    """``mergekit sql '\\d'``: one backslash command of the shell, as ``psql -c`` runs one; 1 if it failed."""
    shell = Shell(runner, stdin=io.StringIO())
    if "\n" in text.strip():
        shell.failures += 1
        shell.output.error(
            MergekitError(
                ErrorCode.SYNTAX_ERROR,
                "mergekit sql runs one backslash command on its own, as psql -c does: give statements in another call",
            )
        )
    else:
        shell._command(text.strip())
    return 1 if shell.failures else 0


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _setup_readline() -> str | None:
    try:
        import readline
    except ImportError:  # Windows without pyreadline: no history
        return None
    path = os.environ.get("MERGEKIT_HISTORY") or os.path.join(os.path.expanduser("~"), ".mergekit_history")
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(1000)
    return path


def _save_history(path: str | None) -> None:
    if path is None:
        return
    try:
        import readline

        readline.write_history_file(path)
    except OSError:
        pass
