"""What the command line shows: result tables, DML metrics, errors and a Spark progress bar (rich).

Shared by ``mergekit run | sql | shell | demo``. Nothing here starts Spark; :class:`SparkProgress` draws what
:class:`mergekit.execution.spark_jobs.JobProgress` reads of a session that is already running.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich import box
from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from mergekit.errors import ErrorCode, MergekitError
from mergekit.result import value_text

__all__ = [
    "Output",
    "SparkProgress",
    "as_mergekit_error",
    "format_value",
]

#: Seconds a statement runs before the progress bar appears (``MERGEKIT_PROGRESS_DELAY`` overrides it).
PROGRESS_DELAY = 1.0

#: Rows a query shows unless ``--max-rows`` says otherwise (0: all of them).
DEFAULT_MAX_ROWS = 1000

#: Rows drawn per table block: a long result is printed block by block as its batches arrive, never held whole.
CHUNK_ROWS = 1000


def format_value(value: Any) -> str:
    """One cell as text: ``NULL`` for None, ISO timestamps with a space, decimals as written."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.isoformat(sep=" ")
        local = value.replace(tzinfo=None).isoformat(sep=" ")
        zone = getattr(value.tzinfo, "key", None)  # a region (zoneinfo), printed by name as Trino prints it
        if zone is not None:
            return f"{local} {'UTC' if zone in ('UTC', 'Etc/UTC') else zone}"
        offset = value.isoformat()[-6:]
        return f"{local} {'UTC' if offset == '+00:00' else offset}"
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes | bytearray | memoryview):
        return "X'" + bytes(value).hex() + "'"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _display_values(column: Any) -> list[Any]:
    """A column's values to format; one Python cannot hold (a DATE or TIMESTAMP beyond years 1 to 9999, which
    ``Result.rows()`` refuses) as Arrow's text of it: the command line shows what the query returned."""
    try:
        return list(column.to_pylist())
    except (OverflowError, ValueError):
        out: list[Any] = []
        for i in range(len(column)):
            try:
                out.append(column[i].as_py())
            except (OverflowError, ValueError):
                text = value_text(column, i).replace(".000000", "")
                out.append(text[:-1] + " UTC" if text.endswith("Z") else text)
        return out


def as_mergekit_error(exc: BaseException) -> MergekitError:
    """``exc`` as a coded error: ours as is, Spark/py4j failures translated, anything else internal."""
    if isinstance(exc, MergekitError):
        return exc
    try:
        from mergekit.execution.failures import translate_error  # imports pyspark: only once Spark runs

        return translate_error(exc)
    except ImportError:
        pass
    return MergekitError(ErrorCode.GENERIC_INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")


class Output:
    """Prints results on stdout and errors on stderr; tables either way, styled only on a terminal."""

    def __init__(
        self,
        *,
        debug: bool = False,
        stdout: Console | None = None,
        stderr: Console | None = None,
        max_rows: int | None = None,
        limit_hint: str = "--max-rows N changes the limit (0: no limit)",
    ) -> None:
        self.debug = debug
        self.out = stdout or _console(stderr=False)
        self.err = stderr or _console(stderr=True)
        #: at most this many rows of a query are shown (None or 0: all); ``limit_hint`` says how to change it
        self.max_rows = max_rows
        self.limit_hint = limit_hint

    # ---- results ---------------------------------------------------------------------------------------

    def result(
        self,
        result: Any,
        *,
        elapsed: float | None = None,
        title: str | None = None,
        batches: Iterable[Any] | None = None,
        started: float | None = None,
        check: Callable[[], None] | None = None,
    ) -> None:
        """A query's rows as a table; a DML statement's row count and metrics; a command tag for DDL.

        A query's rows come from ``batches`` (Arrow record batches, at most ``max_rows + 1`` rows) when given,
        else from ``result.batches()``; they are drawn block by block as they arrive. With ``started`` (a
        ``time.perf_counter()`` value) the elapsed time is taken when the last row is drawn; ``check`` is
        called between batches (it raises to stop)."""
        columns = list(result.columns)
        if columns == ["Query Plan"]:
            for (text,) in result.rows():
                self.out.print(Text(str(text)))
            return
        if result.is_query:
            limit = self.max_rows or None
            if batches is None:
                batches = result.batches(None if limit is None else limit + 1)
            shown, more = self.stream_table(columns, batches, max_rows=limit, title=title, check=check)
            if started is not None:
                elapsed = time.perf_counter() - started
            self.out.print(Text(_rows_line(shown, elapsed, limited=more), style="dim"))
            if more:
                self.err.print(
                    Text(f"Output limited to the first {shown} rows; {self.limit_hint}.", style="yellow"),
                    soft_wrap=True,
                    highlight=False,
                )
            return
        if started is not None:
            elapsed = time.perf_counter() - started
        if result.row_count is not None:
            self.out.print(
                Text(f"{result.statement} {result.row_count}", style="bold green"), Text(_timing(elapsed), style="dim")
            )
            line = metrics_line(result.metrics)
            if line:
                self.out.print(Text(line, style="dim"))
            return
        self.out.print(
            Text(result.message or result.statement, style="bold green"), Text(_timing(elapsed), style="dim")
        )

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None) -> None:
        """Rows as one table: rich's on a terminal (cells wrapped to its width), else ASCII with every cell whole."""
        cells = [[(v, format_value(v)) for v in row] for row in rows]
        if self.out.is_terminal:
            self.out.print(self._table(columns, cells, title=title))
            return
        widths = [max([_width(str(c)), *(_width(row[i][1]) for row in cells)]) for i, c in enumerate(columns)]
        if title is not None:
            self.out.file.write(title + "\n")
        self.out.file.write(_ascii_block(columns, cells, widths, first=True, last=True))
        self.out.file.flush()

    def _table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        title: str | None = None,
        header: bool = True,
        widths: Sequence[int] | None = None,
    ) -> Table:
        styled = self.out.is_terminal
        table = Table(
            title=title,
            box=box.ROUNDED if styled else box.ASCII,
            header_style="bold cyan" if styled else "",
            show_header=header,
            show_lines=False,
            highlight=False,
            title_justify="left",
        )
        for i, c in enumerate(columns):
            table.add_column(Text(str(c)), min_width=widths[i] if widths else None)
        for row in rows:
            table.add_row(*(Text(text, style="dim italic" if v is None and styled else "") for v, text in row))
        return table

    def stream_table(
        self,
        columns: Sequence[str],
        batches: Iterable[Any],
        *,
        max_rows: int | None = None,
        title: str | None = None,
        check: Callable[[], None] | None = None,
    ) -> tuple[int, bool]:
        """Rows of Arrow ``batches`` as one table, drawn in blocks of :data:`CHUNK_ROWS` rows as they arrive
        (a block's columns are at least as wide as the widest cell so far, so blocks line up), at most
        ``max_rows`` of them. Returns ``(rows shown, whether more rows followed)``; memory holds one batch
        and one block, whatever the number of rows."""
        widths = [len(str(c)) for c in columns]
        block: list[list[tuple[Any, str]]] = []
        shown = 0
        more = False
        blocks = 0

        plain = not self.out.is_terminal

        def draw(last: bool) -> None:
            nonlocal blocks
            for row in block:
                for i, (_, text) in enumerate(row):
                    widths[i] = max(widths[i], _width(text))
            if plain:  # a pipe or a file: the ASCII table rich would draw, written directly (rich: 1000 rows/s)
                if title is not None and not blocks:
                    self.out.file.write(title + "\n")
                self.out.file.write(_ascii_block(columns, block, widths, first=not blocks, last=last))
                self.out.file.flush()
                block.clear()
                blocks += 1
                return
            table = self._table(columns, block, title=title if not blocks else None, header=not blocks, widths=widths)
            lines = self.out.render_lines(table, self.out.options, pad=False)
            # one table: a continued block has no top border, a block that continues no bottom border
            if blocks and lines:
                lines = lines[1:]
            if not last and lines:
                lines = lines[:-1]
            segments: list[Segment] = []
            for line in lines:
                segments.extend(line)
                segments.append(Segment.line())
            self.out.print(Segments(segments), end="")
            block.clear()
            blocks += 1

        iterator = iter(batches)
        try:
            for batch in iterator:
                if check is not None:
                    check()
                if not batch.num_columns:
                    continue
                values = [_display_values(c) for c in batch.columns]
                for row in zip(*values, strict=True):
                    if max_rows is not None and shown >= max_rows:
                        more = True
                        break
                    if len(block) >= CHUNK_ROWS:
                        draw(last=False)
                    block.append([(v, format_value(v)) for v in row])
                    shown += 1
                if more:
                    break
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()  # a streamed result: tell Spark to stop
        draw(last=True)
        return shown, more

    def heading(self, text: str) -> None:
        self.out.print()
        if self.out.is_terminal:
            self.out.rule(Text(text, style="bold magenta"), align="left", style="magenta")
        else:
            self.out.print(Text(f"== {text} =="))

    def statement(self, sql: str, prompt: str = "mergekit> ") -> None:
        lines = sql.strip().splitlines() or [""]
        text = Text()
        for i, line in enumerate(lines):
            text.append(prompt if i == 0 else " " * (len(prompt) - 3) + "-> ", style="bold blue")
            text.append(line + ("\n" if i < len(lines) - 1 else ""), style="bold")
        self.out.print()
        self.out.print(text, soft_wrap=True)

    def note(self, text: str) -> None:
        self.out.print(Text(text, style="italic yellow"), soft_wrap=True)

    # ---- errors ----------------------------------------------------------------------------------------

    def error(self, exc: BaseException, *, prefix: str = "", shown: MergekitError | None = None) -> MergekitError:
        """``[CODE] message`` on stderr (after ``prefix``, such as ``FILE:LINE (statement N): ``); with ``--debug``
        the Python traceback (and Spark's Java stack) first. ``shown`` replaces the error ``exc`` becomes."""
        err = shown or as_mergekit_error(exc)
        if self.debug:
            self.err.print(Text("".join(traceback.format_exception(exc)), style="dim"), soft_wrap=True)
        self.err.print(Text(prefix + str(err), style="bold red"), soft_wrap=True, highlight=False)
        return err

    def cancelled(self, message: str) -> None:
        """The one line a statement stopped by Ctrl-C prints (on stderr)."""
        self.err.print(Text(message, style="bold yellow"), soft_wrap=True, highlight=False)


def _width(text: str) -> int:
    if text.isascii() and "\n" not in text:
        return len(text)
    from rich.cells import cell_len

    return max(cell_len(line) for line in text.split("\n"))


def _ascii_block(
    columns: Sequence[str], rows: Sequence[Sequence[tuple[Any, str]]], widths: Sequence[int], *, first: bool, last: bool
) -> str:
    """Rows as rich's ``box.ASCII`` table draws them (``| a | b |``); the header and top border only for the
    ``first`` block, the bottom border only for the ``last``."""
    border = "+" + "-" * (sum(w + 2 for w in widths) + len(widths) - 1) + "+\n"

    def line(cells: Sequence[str]) -> str:
        split = [c.split("\n") for c in cells]
        height = max((len(parts) for parts in split), default=1)
        out = []
        for k in range(height):
            texts = [parts[k] if k < len(parts) else "" for parts in split]
            out.append(
                "|" + "|".join(f" {t}{' ' * (w - _width(t))} " for t, w in zip(texts, widths, strict=True)) + "|\n"
            )
        return "".join(out)

    parts = []
    if first:
        parts.append(border)
        parts.append(line([str(c) for c in columns]))
        parts.append("|" + "+".join("-" * (w + 2) for w in widths) + "|\n")
    parts.extend(line([text for _, text in row]) for row in rows)
    if last:
        parts.append(border)
    return "".join(parts)


def metrics_line(metrics: Mapping[str, Any]) -> str:
    """``inserted 1, updated 3, deleted 1 · per WHEN clause: #1 deleted 1, #2 updated 1, ...``."""
    if not metrics:
        return ""
    parts = [f"{k} {metrics[k]}" for k in ("inserted", "updated", "deleted") if k in metrics]
    text = ", ".join(parts)
    per_case = metrics.get("per_case") or {}
    if len(per_case) > 1:
        cases = []
        for case, counts in sorted(per_case.items(), key=lambda kv: int(kv[0])):
            done = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
            cases.append(f"#{int(case) + 1} {done or 'none'}")
        text += " · per WHEN clause: " + "; ".join(cases)
    extra = []
    if metrics.get("sinks"):
        extra.append(f"{metrics['sinks']} sink{'s' if metrics['sinks'] != 1 else ''}")
    scans = metrics.get("scans") or []
    splits = sum(int(s.get("splits", 0) or 0) for s in scans)
    if splits:
        extra.append(f"{splits} split{'s' if splits != 1 else ''} scanned")
    if extra:
        text += " · " + ", ".join(extra)
    return text


def _rows_line(n: int, elapsed: float | None, *, limited: bool = False) -> str:
    first = "first " if limited else ""
    return f"({first}{n} row{'s' if n != 1 else ''}{_timing(elapsed, inner=True)})"


def _timing(elapsed: float | None, *, inner: bool = False) -> str:
    if elapsed is None:
        return ""
    return f", {elapsed:.2f} s" if inner else f"({elapsed:.2f} s)"


def _console(*, stderr: bool) -> Console:
    # Not a terminal: no colours, and no line is wrapped or cut at the console's width (rich's default is 80
    # columns when it cannot ask a terminal): tables are written as ASCII with every cell whole (Output.table,
    # stream_table), and text is printed as one line however long (soft_wrap).
    probe = Console(stderr=stderr)
    if probe.is_terminal:
        return Console(stderr=stderr, highlight=False)
    return Console(stderr=stderr, highlight=False, no_color=True, width=max(probe.width, 200), soft_wrap=True)


class SparkProgress:
    """A progress bar fed by a polling thread from Spark's status tracker (:class:`~mergekit.execution.spark_jobs.JobProgress`).

    It appears only on a terminal and only once the statement has run for ``delay`` seconds, and it is
    erased when the statement ends, so short statements and piped output never show it.
    """

    def __init__(self, engine: Any, console: Console, *, delay: float | None = None, interval: float = 0.15) -> None:
        self.engine = engine  # its Spark session's jobs, once a statement started it (``Engine.spark_started``)
        self.console = console
        env = os.environ.get("MERGEKIT_PROGRESS_DELAY")
        self.delay = delay if delay is not None else (float(env) if env else PROGRESS_DELAY)
        self.interval = interval
        self.enabled = console.is_terminal

    #: one bar on the terminal at a time (a statement may run another one inside it, as the demo's conflict does)
    _showing = threading.Lock()

    @contextmanager
    def track(self, label: str = "running") -> Iterator[None]:
        if not self.enabled or self.engine is None:
            yield
            return
        stop = threading.Event()
        thread = threading.Thread(target=self._poll, args=(label, stop), name="mergekit-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=2)

    def _poll(self, label: str, stop: threading.Event) -> None:
        if stop.wait(self.delay) or not SparkProgress._showing.acquire(blocking=False):
            return
        try:
            self._show(label, stop)
        except Exception:  # Spark is stopping or the terminal went away: no progress to show
            pass
        finally:
            SparkProgress._showing.release()

    def _show(self, label: str, stop: threading.Event) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        from mergekit.execution.spark_jobs import JobProgress

        jobs: JobProgress | None = None
        progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold blue]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[tasks]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        with progress:
            task = progress.add_task(label, total=None, tasks="")
            while not stop.is_set():
                if jobs is None and self.engine.spark_started:
                    jobs = JobProgress(self.engine.spark)
                if jobs is None:  # the statement is starting Spark (or runs on the driver tier)
                    progress.update(task, description=f"{label}: starting Spark", total=None, completed=0, tasks="")
                    stop.wait(self.interval)
                    continue
                now = jobs.active()
                if now.stages:
                    # The active stages of the statement's Spark jobs and their tasks.
                    progress.update(
                        task,
                        description=f"{label}: stage {', '.join(map(str, now.stages))}",
                        total=max(now.total, 1),
                        completed=now.completed,
                        tasks=f"{now.completed}/{now.total} tasks",
                    )
                else:
                    # Between jobs (planning, commit on the driver): an indeterminate bar.
                    progress.update(task, description=label, total=None, completed=0, tasks="")
                stop.wait(self.interval)
