"""The terminal view of a RAG stress report: rates per arm, paired differences, fill curve."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from calipers.types import Estimate

__all__ = ["pct", "print_report", "pts"]

_NAMES = {
    "correct": "correct",
    "abstained": "abstained",
    "unsupported": "unsupported",
    "distractor_adopted": "distractor adopted",
    "counterfactual_followed": "counterfactual followed",
}


def pct(est: Estimate | None) -> str:
    """``42.0 [35.1, 49.2]`` (percent); ``n/a (n=0)`` for an estimate with no data."""
    if est is None:
        return "-"
    if est.is_empty:
        return "n/a (n=0)"
    return f"{100 * est.value:.1f} [{100 * est.low:.1f}, {100 * est.high:.1f}]"


def pts(est: Estimate | None) -> str:
    """A paired difference in points, signed."""
    if est is None:
        return "-"
    if est.is_empty:
        return "n/a (n=0)"
    return f"{100 * est.value:+.1f} [{100 * est.low:+.1f}, {100 * est.high:+.1f}]"


def _outcomes(report: Any) -> list[str]:
    seen = {m for r in [report.clean, *report.arms] for m in r.outcomes}
    return [m for m in _NAMES if m in seen]


def _rates(report: Any) -> Table:
    metrics = _outcomes(report)
    t = Table(
        header_style="bold",
        title_justify="left",
        title=f"{escape(report.model)} on {report.task}: each outcome per arm, % [95% CI]",
    )
    t.add_column("arm")
    t.add_column("n", justify="right")
    for m in metrics:
        t.add_column(_NAMES[m], justify="right")
    for r in [report.clean, *report.arms]:
        cells = [pct(r.outcomes[m].score) if m in r.outcomes else "-" for m in metrics]
        t.add_row(escape(r.label), str(r.n_items), *cells)
    return t


def _diffs(report: Any) -> Table:
    metrics = [m for m in _outcomes(report) if m in report.clean.outcomes]
    t = Table(
        header_style="bold",
        title_justify="left",
        title="Paired difference from the clean arm, points [95% CI]; bold: significant "
        f"after Holm across arms (alpha {report.alpha})",
    )
    t.add_column("arm")
    t.add_column("paired n", justify="right")
    for m in metrics:
        t.add_column("Δ " + _NAMES[m], justify="right")
    for r in report.arms:
        cells = []
        n = 0
        for m in metrics:
            c = r.outcomes.get(m)
            if c is None or c.diff is None:
                cells.append("-")
                continue
            n = max(n, c.n_paired)
            text = pts(c.diff)
            sig = c.p_adjusted is not None and c.p_adjusted < report.alpha
            cells.append(f"[bold]{text}[/]" if sig else text)
        t.add_row(escape(r.label), str(n), *cells)
    return t


def knee_line(curve: Any) -> str:
    k = curve.knee
    name = _NAMES.get(curve.outcome, curve.outcome)
    if k is None:
        return f"{name}: no knee fitted ({curve.note})."
    where = f"knee at {100 * k.knee.value:.0f}% [{100 * k.knee.low:.0f}%, {100 * k.knee.high:.0f}%]"
    return f"{name}: {k.verdict} ({where}; {k.test}, p={k.p_value:.3g}, {k.n_clusters} questions)."


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
            out.print(knee_line(c))
    for note in report.notes:
        out.print(f"[yellow]{escape(note)}[/]")
