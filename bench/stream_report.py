"""The streaming bench's report (``bench.streaming``): per-run summaries, the printed lines and table, the reading,
and docs/performance.md's generated Streaming section."""

from __future__ import annotations

import math
import statistics
from typing import Any

from bench.doc_section import replace_section
from bench.workload import label, shape

TITLES = {
    "mergekit": "mergekit streaming job (MERGE per micro-batch, journal table)",
    "pyspark": "hand-written PySpark foreachBatch (anti-join rewrite)",
}
RELTOL = 1e-9  # sum(amount) agreement, as bench/harness.py's check
WARMUP_COMMITS = 3
DOC_BEGIN = "<!-- bench:streaming:begin -->"
DOC_END = "<!-- bench:streaming:end -->"


def _nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _batches(res: dict[str, Any]) -> tuple[dict[Any, float], dict[Any, int], list[dict[str, Any]]]:
    """Visible time per batch, commits per batch (of the batches that took a commit), those batches in order."""
    visible = {b["batch"]: b["visible"] for b in res["batches"] if b.get("visible") is not None}
    per_batch: dict[Any, int] = {}
    for c in res["commits"]:
        if c.get("batch") is not None:
            per_batch[c["batch"]] = per_batch.get(c["batch"], 0) + 1
    taken = [b for b in res["batches"] if b.get("visible") is not None and b["batch"] in per_batch]
    return visible, per_batch, taken


def summarize(res: dict[str, Any], n_rows: int, mode: str = "live") -> dict[str, Any]:
    """One system's figures of one run: live (rows/s from the first commit, commit-to-visible latencies) or drain
    (rows/s from the job's start); both: the shape of the batches, the feeding and the compactions."""
    commits = res["commits"]
    visible, per_batch, taken = _batches(res)
    seen = [c for c in commits if c.get("batch") in visible]
    last_visible = max(visible[c["batch"]] for c in seen) if seen else None
    sizes = sorted(per_batch.values())
    spans = [b["visible"] - b["started"] for b in taken if b.get("started") is not None]
    out: dict[str, Any] = {
        "commits_seen": len(seen),
        "batches_with_commits": len(per_batch),
        "commits_per_batch": [sizes[0], statistics.median(sizes), sizes[-1]] if sizes else None,
        "feed_seconds": max(c["committed"] for c in commits) - min(c["committed"] for c in commits),
        "producer_seconds": max(c["returned"] for c in commits) - min(c["started"] for c in commits),
        "commit_call_median_seconds": statistics.median(c["returned"] - c["started"] for c in commits),
        "compactions": [b["batch"] for b in res["batches"] if b.get("compacted")],
    }
    if spans:
        out["batch_seconds"] = {"median": statistics.median(spans), "min": min(spans), "max": max(spans)}
    if mode == "drain":
        start = res["job_start"]
        out["start_call_seconds"] = res["start_returned"] - start
        starts = [b["started"] for b in taken if b.get("started") is not None]
        if starts:
            out["first_batch_started_after_start"] = min(starts) - start
        if last_visible is not None and len(seen) == len(commits) and last_visible > start:
            out["drain_seconds"] = last_visible - start
            out["rows_per_s"] = n_rows / out["drain_seconds"]
        return out
    lat = [visible[c["batch"]] - c["committed"] for c in seen]
    first = min(c["committed"] for c in commits)
    out["first_commit_to_last_visible_seconds"] = (last_visible - first) if last_visible else None
    out["last_visible_after_last_commit"] = (
        (last_visible - max(c["committed"] for c in commits)) if last_visible else None
    )
    if lat and last_visible and last_visible > first:
        out["rows_per_s"] = n_rows / (last_visible - first)
        out["latency"] = {
            "median": statistics.median(lat),
            "p95": _nearest_rank(lat, 0.95),
            "max": max(lat),
            "min": min(lat),
        }
    return out


def _key(report: dict[str, Any]) -> str:
    s = report["settings"]
    return f"{label(s['target_rows'])}_{label(s['rows'])}_{s['commits']}"


def _summary(run: dict[str, Any], system: str) -> dict[str, Any]:
    return (run["systems"].get(system) or {}).get("summary") or {}


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The machine-readable last lines: ``rows_per_s``, ``seconds`` and ``ratio NAME VALUE``; the live feed's keep
    their names (``stream_<system>_...``), a drain's have ``stream_drain_cap<N>_``."""
    key, lines = _key(report), []
    for run in report["runs"].values():
        live = run["mode"] == "live"
        prefix = "stream" if live else f"stream_drain_cap{run['cap']}"
        for system in run["systems"]:
            m = _summary(run, system)
            if "rows_per_s" not in m:
                continue
            lines.append(f"rows_per_s {prefix}_{system}_{key} {m['rows_per_s']:.0f}")
            if live:
                for q in ("median", "p95", "max"):
                    lines.append(f"seconds {prefix}_{system}_latency_{q}_{key} {m['latency'][q]:.2f}")
            else:
                lines.append(f"seconds {prefix}_{system}_{key} {m['drain_seconds']:.2f}")
        a, b = _summary(run, "mergekit"), _summary(run, "pyspark")
        if "rows_per_s" in a and "rows_per_s" in b:
            lines.append(f"ratio {prefix}_rows_per_s_mergekit_vs_pyspark_{key} {a['rows_per_s'] / b['rows_per_s']:.2f}")
            if live:
                lines.append(
                    f"ratio {prefix}_latency_median_mergekit_vs_pyspark_{key} "
                    f"{a['latency']['median'] / b['latency']['median']:.2f}"
                )
    return lines


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else ("es" if word.endswith("ch") else "s"))


def _peaks(entry: dict[str, Any]) -> str:
    mem = entry["memory"]
    return " / ".join(f"{mem[k]:.0f}" for k in ("python_driver_mib", "jvm_mib", "python_workers_mib", "all_mib"))


def _cpb(m: dict[str, Any]) -> str:
    return f"{m['batches_with_commits']} ({' / '.join(f'{x:g}' for x in m['commits_per_batch'])})"


def _table(run: dict[str, Any]) -> list[str]:
    if run["mode"] == "live":
        lines = [
            "| system | rows/s | commit-to-visible s: median / p95 / max | batches (commits per batch: min / median "
            "/ max) | first to last commit s (one commit's call, median s) | first commit to last visible s | peak "
            "RSS MiB: Python driver / JVM / Python workers / all |",
            "|---|---|---|---|---|---|---|",
        ]
    else:
        lines = [
            "| system | rows/s | job start to last commit visible s | start to first batch s | batches (commits per "
            "batch: min / median / max) | one batch s: median / max | feeding before the start s (one commit's "
            "call, median s) | peak RSS MiB: Python driver / JVM / Python workers / all |",
            "|---|---|---|---|---|---|---|---|",
        ]
    for system, entry in run["systems"].items():
        m = entry.get("summary")
        if not m or "rows_per_s" not in m:
            lines.append(f"| {TITLES[system]} | failed |" + " - |" * (len(lines[1].split("|")) - 4))
            continue
        if run["mode"] == "live":
            lat = m["latency"]
            lines.append(
                f"| {TITLES[system]} | {m['rows_per_s']:.0f} | {lat['median']:.2f} / {lat['p95']:.2f} / "
                f"{lat['max']:.2f} | {_cpb(m)} | {m['feed_seconds']:.1f} ({m['commit_call_median_seconds']:.3f}) "
                f"| {m['first_commit_to_last_visible_seconds']:.1f} | {_peaks(entry)} |"
            )
        else:
            bs = m.get("batch_seconds") or {}
            lines.append(
                f"| {TITLES[system]} | {m['rows_per_s']:.0f} | {m['drain_seconds']:.1f} | "
                f"{m.get('first_batch_started_after_start', float('nan')):.1f} | {_cpb(m)} | "
                f"{bs.get('median', float('nan')):.1f} / {bs.get('max', float('nan')):.1f} | "
                f"{m['producer_seconds']:.1f} ({m['commit_call_median_seconds']:.3f}) | {_peaks(entry)} |"
            )
    return lines


def _run_title(report: dict[str, Any], run: dict[str, Any]) -> str:
    s = report["settings"]
    what = f"{label(s['rows'])} rows in {s['commits']} commits into a {label(s['target_rows'])}-row table"
    if run["mode"] == "live":
        pace = "as fast as each feeder goes" if not s["interval"] else f"one commit every {s['interval']:g} s"
        return f"Live feed: {what}, fed while the job runs ({pace}; batch size not capped)"
    cap = f"at most {run['cap']} commits" if run["cap"] else "no cap on the commits"
    return f"Backlog drain: {what}, all committed before the job starts ({cap} per batch)"


def _run_notes(report: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """The sentences under a run's table: each system's conditions, check, batch timeline and compactions."""
    exp = report["expected"]
    notes = []
    checks = []
    for system, entry in run["systems"].items():
        if entry.get("check"):
            ok = "matches" if entry.get("check_ok") else "DIFFERS"
            checks.append(f"{system} {entry['check'][0]} rows, {entry['check'][1]:.2f} ({ok})")
        if entry.get("statement_totals"):
            checks.append(f"the job's statements: {entry['statement_totals']}")
    notes.append(
        f"Expected result (one MERGE of all of S, pyarrow): {exp['rows']} rows, sum(amount) {exp['sum_amount']:.2f}; "
        + ("; ".join(checks) if checks else "nothing checked")
        + "."
    )
    for system, entry in run["systems"].items():
        res, m = entry.get("result"), entry.get("summary") or {}
        if not res or "rows_per_s" not in m:
            continue
        live = run["mode"] == "live"
        t0 = min(c["committed"] for c in res["commits"]) if live else res["job_start"]
        _, _, taken = _batches(res)
        times = ", ".join(f"{b['visible'] - t0:.1f}" for b in taken)
        rows = ", ".join(f"{b['rows'] // 1000}k" if b["rows"] >= 1000 else str(b["rows"]) for b in taken)
        since = "the first commit" if live else "the job's start"
        line = (
            f"{system} (load average {entry.get('loadavg_start')} to {entry.get('loadavg_end')}): batches visible "
            f"at {times} s after {since}, with {rows} rows"
        )
        line += f"; last visible {m['last_visible_after_last_commit']:.1f} s after the last commit." if live else "."
        if system == "mergekit":
            if m.get("compactions"):
                line += f" The job compacted its target after batch(es) {m['compactions']} (`compact_every` 50)."
            else:
                line += f" No compaction ran ({_n(len(res['batches']), 'batch')}; `compact_every` 50)."
        notes.append(line)
    return notes


def _conditions(report: dict[str, Any]) -> str:
    s = report["settings"]
    out = (
        f"Load average (1, 5, 15 min, /proc/loadavg) at start {report['loadavg_start']}, at end "
        f"{report['loadavg_end']}. Warm-up before each measured run (untimed, same worker, same mode and cap): "
        f"{s['warmup_rows']} rows, {WARMUP_COMMITS} commits."
    )
    if report.get("load"):
        ld = report["load"]
        how = f"cached, loaded {ld['loaded_at']}" if ld["cached"] else "loaded in this run"
        out += f" Journal table: {ld['rows']} rows ({how}, {ld['seconds']:.1f} s; not part of the figures)."
    return out


def _reading(report: dict[str, Any]) -> list[str]:
    """A plain reading of the figures: the 2x rows/s target per mode, and what bounds the live feed's rows/s."""
    n_rows = report["settings"]["rows"]
    runs = report["runs"]
    out = []

    def verdict(ratio: float) -> str:
        return "met" if ratio >= 2 else "not met"

    drains = [r for r in runs.values() if r["mode"] == "drain"]
    live = runs.get("live")
    if live:
        a, b = _summary(live, "mergekit"), _summary(live, "pyspark")
        if "rows_per_s" in a and "rows_per_s" in b:
            ratio = a["rows_per_s"] / b["rows_per_s"]
            out.append(
                f"**Live feed: the 2× rows/s target is {verdict(ratio)}** ({ratio:.2f}: mergekit {a['rows_per_s']:.0f} "
                f"against PySpark {b['rows_per_s']:.0f} rows/s). Commit-to-visible latency, median: mergekit "
                f"{a['latency']['median']:.2f} s against {b['latency']['median']:.2f} s "
                f"({a['latency']['median'] / b['latency']['median']:.2f}×)."
            )
        if "rows_per_s" in a:
            prod = n_rows / a["producer_seconds"]
            text = (
                f"**What bounds the live rows/s.** mergekit's producer commits with `Engine.insert_arrow` (an INSERT on the driver, no Spark job; one call: median "
                f"{a['commit_call_median_seconds']:.3f} s while the job runs), so the feeder took "
                f"{a['producer_seconds']:.1f} s for the {a['commits_seen']} commits ({prod:.0f} rows/s); the job's "
                f"last batch was visible {a['last_visible_after_last_commit']:.1f} s after the last commit, and its "
                f"rows/s ({a['rows_per_s']:.0f}) is {a['rows_per_s'] / prod:.0%} of the producer's."
            )
            rates = [(r["cap"], _summary(r, "mergekit").get("rows_per_s")) for r in drains]
            rates = [(c, x) for c, x in rates if x]
            if rates:
                shown = ", ".join(f"{x:.0f} rows/s " + (f"at cap {c}" if c else "with no cap") for c, x in rates)
                if max(x for _, x in rates) > prod:
                    text += (
                        f" Given the same commits as a backlog, the same job drains {shown}: faster than the "
                        "producer commits, so in the live feed the producer, not the job, sets mergekit's rows/s."
                    )
                else:
                    text += (
                        f" Given the same commits as a backlog, the same job drains {shown}: not faster than the "
                        "producer commits, so here the job, not the producer, is the bound."
                    )
            idle = [_summary(r, "mergekit") for r in drains if "producer_seconds" in _summary(r, "mergekit")]
            if idle:
                quiet = min(m["producer_seconds"] for m in idle)
                text += (
                    f" With no job running (the drains' feeding), the same commits took median "
                    f"{min(m['commit_call_median_seconds'] for m in idle):.3f} s each, {quiet:.1f} s for all "
                    f"({n_rows / quiet:.0f} rows/s)"
                )
                if "rows_per_s" in b:
                    twice = 2 * b["rows_per_s"]
                    text += (
                        f": {'below' if n_rows / quiet < twice else 'above'} 2× the PySpark job's live rows/s "
                        f"({twice:.0f}), {'so this producer cannot reach' if n_rows / quiet < twice else 'so it can reach'}"
                        " the live target whatever the job does."
                    )
                else:
                    text += "."
            if "rows_per_s" in b:
                text += (
                    f" The PySpark feeder only renames files ({b['producer_seconds']:.1f} s for all of them), so its "
                    f"rows/s is its job's own ({_n(b['batches_with_commits'], 'batch')})."
                )
            out.append(text)
    for run in drains:
        a, b = _summary(run, "mergekit"), _summary(run, "pyspark")
        if "rows_per_s" not in a or "rows_per_s" not in b:
            continue
        ratio = a["rows_per_s"] / b["rows_per_s"]
        cap = f"at most {run['cap']} commits per batch" if run["cap"] else "no cap on the commits per batch"
        bs_a, bs_b = (m.get("batch_seconds", {}).get("median", float("nan")) for m in (a, b))
        out.append(
            f"**Backlog drain, {cap}: the 2× rows/s target is {verdict(ratio)}** ({ratio:.2f}: mergekit "
            f"{a['rows_per_s']:.0f} rows/s, {_n(a['batches_with_commits'], 'batch')} of median {bs_a:.1f} s, "
            f"against PySpark {b['rows_per_s']:.0f} rows/s, {_n(b['batches_with_commits'], 'batch')} of median "
            f"{bs_b:.1f} s, "
            "each rewriting the whole table)."
        )
    return out


def print_report(report: dict[str, Any]) -> None:
    s = report["settings"]
    print()
    print(
        f"stream: {label(s['rows'])} rows in {s['commits']} commits into a {label(s['target_rows'])}-row table "
        f"(load average start {report['loadavg_start']}, end {report['loadavg_end']})"
    )
    for run in report["runs"].values():
        print()
        print(_run_title(report, run))
        for line in _table(run):
            print(line)
        print(" ".join(_run_notes(report, run)))
    print()
    print(_conditions(report))
    for line in _reading(report):
        print("- " + line)
    for problem in report["problems"]:
        print(f"PROBLEM {problem}")
    print(f"wall time {report['wall_seconds']:.0f}s")
    for line in summary_lines(report):
        print(line)


def _doc_section(report: dict[str, Any]) -> list[str]:
    m = report["machine"]
    s = report["settings"]
    out = [
        DOC_BEGIN,
        "<!-- Written by `python -m bench.streaming --write-doc`: edits between these markers are overwritten. -->",
        "",
        f"Command: `{report['command']}` ({report['started']} to {report['finished']}, "
        f"{report['wall_seconds'] / 60:.0f} min, warm-ups and the checks included).",
        "",
        f"Machine: {m.get('cpu', '?')}, {m.get('cores')} cores, {m.get('memory_gib', '?')} GiB; Python "
        f"{m.get('python')}, {m.get('java', 'java ?')}, PySpark {m.get('pyspark')}, pyarrow {m.get('pyarrow')}"
        + (f"; Spark settings {s['conf']}" if s["conf"] else "")
        + ". "
        + _conditions(report),
        "",
        *[f"- {line}" for line in _reading(report)],
    ]
    for run in report["runs"].values():
        out += ["", f"#### {_run_title(report, run)}", "", *_table(run), "", " ".join(_run_notes(report, run))]
    out += ["", "```", *summary_lines(report), "```"]
    if report["problems"]:
        out += ["", "Problems in this run:", ""] + [f"- {p}" for p in report["problems"]]
    out.append(DOC_END)
    return out


def write_doc(report: dict[str, Any], path: str) -> None:
    """Replace the text between ``DOC_BEGIN`` and ``DOC_END`` in the Markdown file at ``path``."""
    replace_section(path, DOC_BEGIN, DOC_END, "\n".join(_doc_section(report)))


def check_run(report: dict[str, Any], tag: str, system: str, entry: dict[str, Any], problems: list[str]) -> None:
    """The final table against the expected one; every commit seen by a batch; the job's statement counts."""
    exp, res, n_s = report["expected"], entry["result"], report["settings"]["rows"]
    cnt, total = res["check"]
    entry["check"] = res["check"]
    entry["check_ok"] = cnt == exp["rows"] and abs(total - exp["sum_amount"]) <= RELTOL * max(1.0, abs(total))
    if not entry["check_ok"]:
        problems.append(f"{tag}: {cnt} rows, sum(amount) {total!r}; expected {exp['rows']}, {exp['sum_amount']!r}")
    missing = [c["i"] for c in res["commits"] if c.get("batch") is None]
    if missing:
        problems.append(f"{tag}: commits {missing[:10]} not found in any batch")
    problems.extend(f"{tag}: {p}" for p in res.get("problems", []))
    if system == "mergekit":
        totals = {k: 0 for k in ("updated", "deleted", "inserted")}
        for b in res["batches"]:
            for k in totals:
                totals[k] += int((b.get("metrics") or {}).get(k) or 0)
        n_upd, n_del, n_ins = shape(n_s)
        entry["statement_totals"] = totals
        if totals != {"updated": n_upd, "deleted": n_del, "inserted": n_ins}:
            problems.append(f"{tag}: the job's statements changed {totals}, expected {(n_upd, n_del, n_ins)}")
        skipped = [b["batch"] for b in res["batches"] if b.get("skipped")]
        if skipped:
            problems.append(f"{tag}: batches {skipped} skipped (replayed)")


def upgrade(report: dict[str, Any]) -> dict[str, Any]:
    """A ``--json`` file of the version before the drain mode (one live run under ``systems``) in this layout."""
    if "runs" not in report:
        report["runs"] = {
            "live": {
                "name": "live",
                "mode": "live",
                "cap": None,
                "systems": report.pop("systems"),
                "loadavg_start": report["loadavg_start"],
                "loadavg_end": report["loadavg_end"],
            }
        }
    return report
