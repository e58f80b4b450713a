"""The benchmark's report: the tables and summary lines printed at the end, the plot and the docs section.

``_print_report`` prints per size a table of cold and warm medians and peak memory, the history table, the
``--profile`` phases and stages, the problems and the machine-readable ``ratio NAME VALUE`` / ``seconds NAME
VALUE`` lines (``_summary_lines``). ``_plot`` draws warm medians per size and the history series (matplotlib),
``_write_doc`` replaces the figures section of a Markdown file (between ``DOC_BEGIN`` and ``DOC_END``). They
read only the report (a dict, also what ``--json`` writes), so ``--from-json`` redraws a saved run.
"""

from __future__ import annotations

import os
import statistics
from typing import Any

from bench.doc_section import replace_section
from bench.systems import COMPACT_SQL, READ_SQL, SPARK_SYSTEMS, SYSTEMS, TITLES
from bench.workload import label


def _pair_key(n_t: int, n_s: int) -> str:
    """The key of a size in the summary lines: ``10M_10k``."""
    return f"{label(n_t)}_{label(n_s)}"


def _issue_key(n_t: int, n_s: int) -> str:
    """The key of a size in issue 29's ratio names: ``1M_100k``, ``10M_1M``; a 1-row source ``1row`` (into 10M
    rows, the bench's 1-row size) or ``200k_1row``."""
    if n_s == 1:
        return "1row" if n_t == 10_000_000 else f"{label(n_t)}_1row"
    return _pair_key(n_t, n_s)


def _fmt(st: dict[str, float] | None) -> str:
    """``median (min–max)`` seconds, or the one value."""
    if not st:
        return "-"
    if st["n"] == 1:
        return f"{st['median']:.2f}"
    return f"{st['median']:.2f} ({st['min']:.2f}–{st['max']:.2f})"


def _mem(s: dict[str, Any], system: str) -> str:
    """Peak RSS in MiB: Python driver / JVM / Python workers / all (JVM and workers: Spark systems only)."""

    def peak(key: str) -> float:
        return max((m.get(key, 0) for m in s["memory"]), default=0)

    if system in SPARK_SYSTEMS:
        return " / ".join(f"{peak(k):.0f}" for k in ("python_driver_mib", "jvm_mib", "python_workers_mib", "all_mib"))
    return f"{peak('python_driver_mib'):.0f} / - / - / {peak('all_mib'):.0f}"


def _size_table(entry: dict[str, Any]) -> list[str]:
    """The Markdown table of one size: cold and warm seconds and peak memory per system."""
    lines = [
        "| system | cold median (min–max) s | warm median (min–max) s | runs cold / warm "
        "| peak RSS MiB: Python driver / JVM / Python workers / all |",
        "|---|---|---|---|---|",
    ]
    for system, s in entry["systems"].items():
        if not s["runs"]:
            lines.append(f"| {TITLES[system]} | failed | failed | 0 / 0 | - |")
            continue
        lines.append(
            f"| {TITLES[system]} | {_fmt(s['cold_stats'])} | {_fmt(s['warm_stats'])} "
            f"| {len(s['cold'])} / {len(s['warm'])} | {_mem(s, system)} |"
        )
    return lines


def _history_marks(h: dict[str, Any]) -> list[tuple[str, float | None, list[float] | None]]:
    """The points of the history table: before the first commit, at each mark and after compaction."""
    rows = [("before commit 1 (T as loaded)", None, h["reads"].get("0"))]
    for k in h["marks"]:
        rows.append((f"commit {k}", h["merge_seconds"][k - 1], h["reads"].get(str(k))))
    rows.append(
        (
            f"after `compact` ({h['compact_seconds']:.2f} s); MERGE = commit {h['commits'] + 1}",
            h["merge_after_compaction_seconds"],
            h["reads"].get("compacted"),
        )
    )
    return rows


def _history_table(h: dict[str, Any]) -> list[str]:
    """The Markdown table of the history scenario: MERGE and full read seconds at each point."""
    lines = ["| point | MERGE s | full read s (1st, 2nd) |", "|---|---|---|"]
    for name, merge, reads in _history_marks(h):
        m = f"{merge:.2f}" if merge is not None else "-"
        r = ", ".join(f"{x:.2f}" for x in reads) if reads else "-"
        lines.append(f"| {name} | {m} | {r} |")
    return lines


def _summary_lines(report: dict[str, Any]) -> list[str]:
    """The machine-readable last lines: ``ratio NAME VALUE`` and ``seconds NAME VALUE``."""
    lines = []
    for entry in report["sizes"].values():
        key = _pair_key(entry["n_target"], entry["n_source"])
        systems = entry["systems"]
        base = systems.get("journal", {}).get("warm_stats")
        for system, s in systems.items():
            if system == "journal" or not base or not s.get("warm_stats"):
                continue
            lines.append(f"ratio journal_vs_{system}_{key} {base['median'] / s['warm_stats']['median']:.2f}")
        # issue 29's names (its targets: docs/performance.md): mergekit's warm median over the other's
        key29 = _issue_key(entry["n_target"], entry["n_source"])
        for first, other in (("journal", "duckdb"), ("partitioned", "journal")):
            a, b = (systems.get(x, {}).get("warm_stats") for x in (first, other))
            if a and b:
                lines.append(f"ratio {key29}_{first}_vs_{other} {a['median'] / b['median']:.2f}")
        if entry["n_source"] == 1:
            for system, s in systems.items():
                for kind in ("cold", "warm"):
                    st = s.get(f"{kind}_stats")
                    if st:
                        lines.append(f"seconds {system}_1row_{label(entry['n_target'])}_{kind} {st['median']:.2f}")
    h = report.get("history")
    if h:
        c = h["commits"]
        m = h["merge_seconds"]
        mid = max(1, c // 2)
        for k in sorted({1, mid, c}):
            lines.append(f"seconds history_merge_{k} {m[k - 1]:.2f}")
            lines.append(f"seconds history_read_{k} {min(h['reads'][str(k)]):.2f}")
        lines.append(f"seconds history_compact {h['compact_seconds']:.2f}")
        lines.append(f"seconds history_read_compacted {min(h['reads']['compacted']):.2f}")
        lines.append(f"seconds history_merge_after_compaction {h['merge_after_compaction_seconds']:.2f}")
        read_c, read_0 = min(h["reads"][str(c)]), min(h["reads"]["compacted"])
        lines.append(f"ratio history_read_{c}_vs_compacted {read_c / read_0:.2f}")
        lines.append(f"ratio history_merge_{c}_vs_1 {m[c - 1] / m[0]:.2f}")
        n = max(1, min(5, c // 4))
        if c >= 8:
            first, last = statistics.median(m[:n]), statistics.median(m[-n:])
            lines.append(f"ratio history_merge_last{n}_vs_first{n} {last / first:.2f}")
    return lines


def _print_report(report: dict[str, Any]) -> None:
    """Print the report: the tables, the profiles, the problems, the wall time and the summary lines."""
    print()
    for name, entry in report["sizes"].items():
        print(f"{name} (load average start {entry['loadavg_start']}, end {entry['loadavg_end']})")
        for line in _size_table(entry):
            print(line)
        loads = ", ".join(
            f"{k} {v['seconds']:.1f}s{' (cached)' if v['cached'] else ''}" for k, v in entry["loads"].items()
        )
        if loads:
            print(f"loading T: {loads}")
        print()
    h = report.get("history")
    if h:
        print(f"history: {h['n_target']} rows, {h['commits']} MERGEs of {h['n_source']} rows (journal table)")
        for line in _history_table(h):
            print(line)
        print()
    for name, entry in report["sizes"].items():
        for system in ("journal", "partitioned"):
            s = entry["systems"].get(system)
            if not s or not ("stages" in s or any("phases" in r for r in s["runs"])):
                continue
            print(f"profile {name} {system} (first worker):")
            for r in s["runs"]:
                if "phases" in r:
                    phases = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(r["phases"].items(), key=lambda kv: -kv[1]))
                    print(f"  {r['kind']} {r['seconds']:.2f}s: {phases}")
            for st in s.get("stages") or []:
                print(
                    f"  {st.get('run', '')[:12]:12s} stage {st['stage']:3d} tasks {st['tasks']:3d} "
                    f"wall {st['wall_s']:7.2f}s task-run {st['task_run_s']:7.2f}s  {st['name'][:80]}"
                )
            print()
    for problem in report["problems"]:
        print(f"PROBLEM {problem}")
    print(f"wall time {report['wall_seconds']:.0f}s")
    for line in _summary_lines(report):
        print(line)


def _plot(report: dict[str, Any], path: str) -> None:
    """Draw the warm MERGE times per size and system and the history series into a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    h = report.get("history")
    sizes = [(k, e) for k, e in report["sizes"].items() if e["systems"]]
    panels = int(bool(sizes)) + int(bool(h))
    if not panels:
        return
    fig, axes = plt.subplots(1, panels, figsize=(7 * panels, 5.6), squeeze=False)
    ax_list = list(axes[0])
    if sizes:
        ax = ax_list.pop(0)
        systems = [s for s in SYSTEMS if any(s in e["systems"] for _, e in sizes)]
        width = 0.8 / max(1, len(systems))
        for i, system in enumerate(systems):
            xs, ys, lo, hi = [], [], [], []
            for j, (_, e) in enumerate(sizes):
                st = (e["systems"].get(system) or {}).get("warm_stats")
                if st:
                    xs.append(j + (i - (len(systems) - 1) / 2) * width)
                    ys.append(st["median"])
                    lo.append(st["median"] - st["min"])
                    hi.append(st["max"] - st["median"])
            ax.bar(xs, ys, width, yerr=[lo, hi], label=TITLES[system], capsize=2)
        ax.set_xticks(range(len(sizes)), [k for k, _ in sizes])
        ax.set_yscale("log")
        ax.set_xlabel("target / source rows")
        ax.set_ylabel("warm MERGE seconds (median, min–max; log scale)")
        ax.set_title("MERGE, warm runs")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
        ax.grid(axis="y", alpha=0.3, which="both")
    if h:
        ax = ax_list.pop(0)
        m = h["merge_seconds"]
        ax.plot(range(1, len(m) + 1), m, ".-", label="MERGE of 10k rows" if h["n_source"] == 10_000 else "MERGE")
        ax.plot([len(m) + 1], [h["merge_after_compaction_seconds"]], "o", label="MERGE after compact")
        read_x = [int(k) for k in h["marks"]]
        ax.plot(read_x, [min(h["reads"][str(k)]) for k in read_x], "s", label="full read (best of 2)")
        ax.plot([len(m) + 0.5], [min(h["reads"]["compacted"])], "D", label="full read after compact")
        ax.axvline(len(m) + 0.5, color="grey", ls=":", lw=1)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("commit")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
        ax.set_title(f"history: {label(h['n_target'])}-row journal table, {h['commits']} MERGEs")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


DOC_BEGIN = "<!-- bench:figures:begin -->"
DOC_END = "<!-- bench:figures:end -->"


def _doc_section(report: dict[str, Any], plot: str | None, doc_path: str) -> list[str]:
    """The figures section of the docs page, between ``DOC_BEGIN`` and ``DOC_END``; ``plot`` is linked relative to
    ``doc_path``."""
    m = report["machine"]
    out = [
        DOC_BEGIN,
        "<!-- Written by `python -m bench.run --write-doc`: edits between these markers are overwritten. -->",
        "",
        f"Command: `{report['command']}` ({report['started']} to {report['finished']}, "
        f"{report['wall_seconds'] / 60:.0f} min).",
        "",
        f"Machine: {m.get('cpu', '?')}, {m.get('cores')} cores, {m.get('memory_gib', '?')} GiB, {m.get('platform')}; "
        f"Python {m.get('python')}, {m.get('java', 'java ?')}, PySpark {m.get('pyspark')}, pyarrow "
        f"{m.get('pyarrow')}, DuckDB {m.get('duckdb')}, deltalake {m.get('deltalake')}. Worker processes per system "
        f"and size: {report['settings']['reps']} (one cold run each); warm runs per worker: "
        f"{report['settings']['warm']}"
        + (f", Spark settings {report['settings']['conf']}" if report["settings"]["conf"] else "")
        + ".",
        "",
    ]
    for entry in report["sizes"].values():
        n_t, n_s = entry["n_target"], entry["n_source"]
        title = f"{label(n_t)} target / {label(n_s)} source" + (" (one update of an existing id)" if n_s == 1 else "")
        out += [f"### {title}", ""]
        out += _size_table(entry)
        out.append("")
        notes = [f"Load average (1, 5, 15 min) at start {entry['loadavg_start']}, at end {entry['loadavg_end']}."]
        if entry.get("check"):
            c = entry["check"]
            notes.append(
                f"Result checked: {c['rows']} rows, sum(amount) {c['sum_amount']} in {', '.join(c['systems'])}."
            )
        if entry["loads"]:
            loads = ", ".join(
                f"{k} {v['seconds']:.1f} s" + (f" (cached, loaded {v['loaded_at']})" if v["cached"] else "")
                for k, v in entry["loads"].items()
            )
            notes.append(f"Loading T into each system's table (once per target size, not part of the MERGE): {loads}.")
        out += [" ".join(notes), ""]
    h = report.get("history")
    if h:
        out += [
            f"### History: {h['commits']} successive MERGEs of {label(h['n_source'])} rows into a "
            f"{label(h['n_target'])}-row journal table",
            "",
        ]
        out += _history_table(h)
        out += [
            "",
            f"Full read: `{READ_SQL}` through `engine.execute`, twice in a row at each point. Compaction: "
            f"`{COMPACT_SQL}` ({h['compact_seconds']:.2f} s). Load average at start {h['loadavg_start']}, at end "
            f"{h['loadavg_end']}.",
            "",
        ]
    if plot:
        rel = os.path.relpath(os.path.abspath(plot), os.path.dirname(os.path.abspath(doc_path)))
        out += [f"![warm MERGE times per system and size; history scenario]({rel})", ""]
    out += ["The last lines of the run's output (mergekit journal warm median / other warm median):", "", "```"]
    out += _summary_lines(report)
    out += ["```"]
    if report["problems"]:
        out += ["", "Problems in this run:", ""] + [f"- {p}" for p in report["problems"]]
    out.append(DOC_END)
    return out


def _write_doc(report: dict[str, Any], path: str, plot: str | None) -> None:
    """Replace the figures section of the Markdown file at ``path``."""
    replace_section(path, DOC_BEGIN, DOC_END, "\n".join(_doc_section(report, plot, path)))
