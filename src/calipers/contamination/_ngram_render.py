"""The n-gram overlap report in the terminal: counts with intervals, the split of the score,
and what the check can and cannot prove."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from calipers.contamination._ngram import NgramReport
from calipers.contamination._ngram_score import ScoreSplit
from calipers.types import Estimate

__all__ = ["render_ngram_report"]


def _est(e: Estimate | None, scale: float = 100.0) -> str:
    if e is None or e.is_empty:
        return "n/a (n=0)"
    return f"{e.value * scale:.1f} [{e.low * scale:.1f}, {e.high * scale:.1f}]  n={e.n}"


def _summary(r: NgramReport) -> Table:
    t = Table(
        title=f"n-gram overlap ({r.n}-grams) with the training corpus",
        title_justify="left",
        header_style="bold",
        show_header=False,
    )
    t.add_column("what")
    t.add_column("value", justify="right")
    idx = r.index or {}
    t.add_row(
        "corpus",
        f"{idx.get('files', 0)} file(s), "
        f"{idx.get('text_bytes', 0) / 2**20:,.1f} MiB, "
        f"{idx.get('ngrams_inserted', 0):,} n-grams",
    )
    t.add_row(
        "items checked",
        f"{r.n_checked:,} of {r.n_items:,}"
        + (f" ({r.n_too_short} too short)" if r.n_too_short else ""),
    )
    share = _est(r.overlap_share)
    t.add_row("overlapping items, % [95%]", f"[bold]{share}[/]" if r.n_overlapping else share)
    t.add_row("rule", escape(r.rule))
    if r.ignore_shared:
        t.add_row("n-grams several items share (set aside)", f"{r.n_shared_ngrams:,}")
    hist = r.ratio_histogram or {}
    t.add_row("overlap ratio histogram", "  ".join(f"{k}: {v}" for k, v in hist.items()))
    t.add_row(
        "false-positive rate / n-gram",
        f"{r.fp_rate:.2g} (≈{r.expected_false_flags:.2g} items by chance)",
    )
    return t


def _score(s: ScoreSplit) -> Table:
    d = s.difference
    scale = 100.0 if d.low >= -1 and d.high <= 1 else 1.0
    t = Table(
        title=f"{escape(s.model)} ({s.run_id}) on {s.task}, {s.metric}",
        title_justify="left",
        header_style="bold",
    )
    for col in ("clean items", "overlapping items", "overlapping − clean [95%]", "method"):
        t.add_column(col, justify="right" if col != "method" else "left")
    t.add_row(
        _est(s.clean, scale),
        _est(s.overlapping, scale),
        _est(s.difference, scale),
        s.difference.method,
    )
    return t


def render_ngram_report(report: NgramReport, *, max_items: int = 10) -> RenderableType:
    """Tables and notes for the terminal; the ``max_items`` overlapping items with the
    highest ratio are listed by id."""
    if report.status == "skipped":
        return Text(f"n-gram overlap: skipped — {report.reason}.", style="yellow")
    parts: list[RenderableType] = [_summary(report)]
    top = sorted(
        (i for i in report.items if i.status == "overlapping"), key=lambda i: -(i.ratio or 0.0)
    )[:max_items]
    if top:
        parts.append(
            Text("Most overlapping: " + ", ".join(f"{i.id} ({i.hits}/{i.ngrams})" for i in top))
        )
    if report.score is not None:
        parts.append(_score(report.score))
        parts.append(Text(report.score.reading))
    parts.extend(Text(f"• {n}", style="dim") for n in report.notes)
    return Group(*parts)
