"""The terminal view of a RAG stress report: rates per arm, paired differences, fill curve.
The cell texts are the report's own (:mod:`calipers.reports`), so terminal, HTML and Markdown
read the same."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from calipers.reports import knee_text, outcome_name, outcomes_shown, pct, pts

__all__ = ["print_report"]


def _rates(report: Any) -> Table:
    metrics = outcomes_shown(report)
    t = Table(
        header_style="bold",
        title_justify="left",
        title=f"{escape(report.model)} on {report.task}: each outcome per arm, % [95% CI]",
    )
    t.add_column("arm")
    t.add_column("n", justify="right")
    for m in metrics:
        t.add_column(outcome_name(report, m), justify="right")
    for r in [report.clean, *report.arms]:
        cells = [pct(r.outcomes[m].score) if m in r.outcomes else "-" for m in metrics]
        t.add_row(escape(r.label), str(r.n_items), *cells)
    return t


def _diffs(report: Any) -> Table:
    metrics = [m for m in outcomes_shown(report) if m in report.clean.outcomes]
    t = Table(
        header_style="bold",
        title_justify="left",
        title="Paired difference from the clean arm, points [95% CI]; bold: significant "
        f"after Holm across arms (alpha {report.alpha})",
    )
    t.add_column("arm")
    t.add_column("paired n", justify="right")
    for m in metrics:
        t.add_column("Δ " + outcome_name(report, m), justify="right")
    for r in report.arms:
        cells = []
        n = 0
        for m in metrics:
            c = r.outcomes.get(m)
            if c is None or c.diff is None:
                cells.append("-")
                continue
            n = max(n, c.n_paired)
            sig = c.p_adjusted is not None and c.p_adjusted < report.alpha
            cells.append(f"[bold]{pts(c.diff)}[/]" if sig else pts(c.diff))
        t.add_row(escape(r.label), str(n), *cells)
    return t


def print_report(out: Console, report: Any) -> None:
    if report.study:
        out.print(f"RAG stress test [bold]{report.study}[/]")
    out.print(_rates(report))
    if report.arms:
        out.print(_diffs(report))
    if report.fill:
        curve = report.fill[0]
        levels = ", ".join(
            f"{100 * lv:g}% (realised {100 * rl:.1f}%)"
            for lv, rl in zip(curve.levels, curve.realised, strict=True)
        )
        out.print(f"Context fill levels: {levels}.")
        for c in report.fill:
            out.print(escape(knee_text(c)))
    for note in report.notes:
        out.print(f"[yellow]{escape(note)}[/]")
