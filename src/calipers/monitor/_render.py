"""The monitoring report as rich tables for the terminal (``calipers monitor``)."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from calipers.monitor._export import ExportResult
from calipers.monitor._novelty import Novelty
from calipers.monitor._rag import RAG_METRICS
from calipers.monitor._report import MonitorReport
from calipers.monitor._simulate import MAGIC_PSI, SimulationResult
from calipers.types import Estimate

__all__ = ["render_export", "render_report", "render_simulation"]

_MAX_OUTLIERS = 10
_RAG_COLUMNS = {"rag_unsupported_rate": "RAG unsupported", "rag_abstention_rate": "RAG abstained"}


def _fmt(e: Estimate | None, *, percent: bool = False, digits: int = 0) -> str:
    if e is None:
        return ""
    if e.method.startswith("skipped"):
        return e.method
    if e.is_empty:
        return "n/a"
    if percent:
        return e.format(percent=True)
    lo = "-inf" if math.isinf(e.low) else f"{e.low:.{digits}f}"
    hi = "inf" if math.isinf(e.high) else f"{e.high:.{digits}f}"
    return f"{e.value:.{digits}f} [{lo}, {hi}]"


def _when(report: MonitorReport, t: object) -> str:
    from datetime import datetime

    assert isinstance(t, datetime)
    day = report.window.total_seconds() >= 86400
    return f"{t:%Y-%m-%d}" if day else f"{t:%m-%d %H:%M}"


def _metrics_table(report: MonitorReport) -> Table:
    names = sorted(
        {
            k
            for w in report.windows
            for m in w.arms.values()
            for k in m
            if k.startswith("score:") or k == "feedback"
        }
    )
    rag = [k for k in RAG_METRICS if any(k in m for w in report.windows for m in w.arms.values())]
    t = Table(title="Metrics per window (95% intervals)", title_justify="left", header_style="bold")
    for col in (
        "window",
        "arm",
        "n",
        "latency p50 ms",
        "latency p95 ms",
        "errors",
        "refusals",
        "cost/request $",
        *(_RAG_COLUMNS[k] for k in rag),
        *names,
    ):
        t.add_column(col, justify="left" if col in ("window", "arm") else "right")
    for w in report.windows:
        for i, (arm, m) in enumerate(w.arms.items()):
            t.add_row(
                _when(report, w.start) if i == 0 else "",
                arm,
                f"{m['volume'].n:,}",
                _fmt(m["latency_p50_ms"]),
                _fmt(m["latency_p95_ms"]),
                _fmt(m["error_rate"], percent=True),
                _fmt(m["refusal_rate"], percent=True),
                _fmt(m["cost_per_request_usd"], digits=5),
                *(_fmt(m.get(k), percent=True) for k in rag),
                *(_fmt(m.get(k), digits=3) for k in names),
            )
    return t


def _drift_table(report: MonitorReport) -> Table:
    t = Table(
        title=f"Drift alarms (alpha {report.alpha:g} per window, Holm within a window)",
        title_justify="left",
        header_style="bold",
    )
    for col in (
        "window",
        "feature",
        "test",
        "statistic",
        "threshold",
        "p",
        "p (Holm)",
        "what moved",
    ):
        t.add_column(
            col, justify="right" if col in ("statistic", "threshold", "p", "p (Holm)") else "left"
        )
    for w in report.drift:
        for r in w.alarms:
            x = r.test
            t.add_row(
                _when(report, w.start),
                r.feature,
                x.test,
                f"{x.statistic:.4g}",
                "" if math.isnan(x.threshold) else f"{x.threshold:.4g}",
                f"{x.p_value:.2g}",
                f"{x.p_adjusted:.2g}",
                escape(r.detail),
            )
    return t


def _novelty(console: Console, n: Novelty) -> None:
    console.print(
        f"\n[bold]Not covered[/] ({n.embeddings}): {n.n_recent:,} recent requests "
        f"against {n.n_reference:,} reference prompts and {n.n_suite_items:,} suite "
        f"items; outlier = similarity below {n.threshold:.3f} (conformal p <= "
        f"{n.quantile:g}): [bold]{len(n.outliers):,}[/] flagged, "
        f"{len(n.clusters)} new cluster(s)."
    )
    if n.n_suite_items:
        console.print(f"  recent traffic the suites miss: {_fmt(n.suite_uncovered, percent=True)}")
    for note in n.notes:
        console.print(f"  [dim]note:[/] {escape(note)}")
    if n.clusters:
        t = Table(title="New clusters", title_justify="left", header_style="bold")
        for col in ("cluster", "size", "terms", "example"):
            t.add_column(col)
        for c in n.clusters:
            t.add_row(str(c.id), str(c.size), escape(c.name), escape(c.examples[0][:80]))
        console.print(t)
    if n.outliers:
        t = Table(
            title=f"Outliers (first {_MAX_OUTLIERS})", title_justify="left", header_style="bold"
        )
        for col in ("request", "similarity", "p", "cluster", "prompt"):
            t.add_column(col)
        for it in n.outliers[:_MAX_OUTLIERS]:
            t.add_row(
                it.exchange.pair_id[:12],
                f"{it.similarity:.3f}",
                f"{it.p_value:.3f}",
                "" if it.cluster is None else str(it.cluster),
                escape(it.exchange.prompt[:80]),
            )
        console.print(t)


def render_report(report: MonitorReport, console: Console) -> None:
    a, b, n_ref = report.reference
    console.print(
        f"[bold]Traffic[/] {report.since:%Y-%m-%d %H:%M} .. "
        f"{report.until:%Y-%m-%d %H:%M} UTC in windows of {report.window}; "
        f"reference {a:%Y-%m-%d %H:%M} .. {b:%Y-%m-%d %H:%M} ({n_ref:,} requests)"
        if report.reference_problem is None
        else "no reference"
    )
    if report.reference_problem is not None:
        console.print(f"[bold yellow]{escape(report.reference_problem)}[/]")
    elif report.reference_why:
        console.print(f"  [dim]reference: {escape(report.reference_why)}[/]")
    s = report.settings
    console.print(
        f"  embeddings {s['embeddings']}, language {s['language_detector']}, "
        f"embedding test {s['embedding_test']}"
    )
    console.print(f"  [dim]{escape(s['multiplicity'])}[/]")
    for note in report.notes:
        console.print(f"  [dim]note:[/] {escape(note)}")
    console.print(_metrics_table(report))
    n_alarm = len(report.alarms)
    console.print(
        f"\n[bold]Drift[/]: {n_alarm} of {len(report.drift)} window(s) compared "
        "with the reference raised an alarm."
    )
    if n_alarm:
        console.print(_drift_table(report))
    _fingerprints(console, report)
    if report.novelty is not None:
        _novelty(console, report.novelty)
        if report.novelty.outliers:
            console.print(
                "\nNext: calipers monitor export --to-suite NAME  (or --to-review "
                "queue.jsonl), with the same options"
            )


def _fingerprints(console: Console, report: MonitorReport) -> None:
    """One line per fingerprint canary; a changed model is an alert line, as drift is."""
    for f in report.fingerprint:
        style = "bold red" if f.alarm else "bold"
        console.print(
            f"\n[{style}]Fingerprint canary {escape(f.canary)}[/]: {escape(f.headline())}"
        )
        v = f.verdict
        if v.looks:
            console.print(
                f"  looks: {_fmt(v.estimate, digits=3)}  reference: {_fmt(v.reference, digits=3)}"
                f"  [dim]({v.estimate.confidence:.1%} each; docs/fingerprint-canary.md)[/]"
            )
        if f.last_error:
            console.print(f"  [dim]last failed look: {escape(f.last_error)}[/]")


def render_export(result: ExportResult, console: Console) -> None:
    where = f"suite {result.target}" if result.kind == "suite" else result.target
    skipped = sum(result.skipped.values())
    console.print(
        f"{result.flagged:,} flagged: [bold]{result.exported:,}[/] exported to "
        f"{escape(where)}, {skipped:,} skipped"
    )
    for reason, k in sorted(result.skipped.items()):
        console.print(f"  skipped {k:,}: {escape(reason)}")
    for note in result.notes:
        console.print(f"  {escape(note)}")


def render_simulation(result: SimulationResult, console: Console, label: str) -> None:
    console.print(
        f"{result.reps} simulated windows of {result.n} requests against a "
        f"reference of {result.n} ({label}):"
    )
    console.print(
        f"  calibrated tests (alpha {result.alpha:g}, Holm): {result.alarms} "
        f"windows with an alarm = {_fmt(result.rate, percent=True)}"
    )
    console.print(
        f"  PSI > {MAGIC_PSI} on prompt length: {result.magic_alarms} = "
        f"{_fmt(result.magic_rate, percent=True)}"
    )
    for feature, k in sorted(result.by_feature.items(), key=lambda x: -x[1]):
        console.print(f"    {feature}: {k}")
