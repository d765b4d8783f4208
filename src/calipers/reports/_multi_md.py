"""The multi-run report as Markdown: the HTML's facts as tables (plots become their numbers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from calipers.reports._html import confidence_label, when
from calipers.reports._markdown import cell, code, render_markdown, table
from calipers.reports._multi_view import MAX_FAILED, AllFail, card_rows
from calipers.reports._panels import (
    DiffPanel,
    TaskPanel,
    diff_panels,
    diff_text,
    dist_text,
    num,
    score_text,
    task_panels,
)
from calipers.reports._view import TaskView

if TYPE_CHECKING:
    from calipers.analysis import ComparisonSet, StoredRun
    from calipers.store import RunRecord

__all__ = ["render_multi_markdown", "single_markdown"]


def _name(r: StoredRun) -> str:
    return f"{r.record.model_name} ({r.record.id})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _dist_lines(p: TaskPanel, runs: Sequence[StoredRun]) -> list[str]:
    out = [f"### Per-item scores ({p.metric})", ""]
    if not p.dists:
        return [*out, "No scores.", ""]
    if p.dists[0].binary:
        rows = [
            [_name(r), d.n, d.right, d.wrong, d.errors, d.unscored]
            for r, d in zip(runs, p.dists, strict=True)
        ]
        return out + table(
            ["run", "samples", "right", "wrong", "errors", "unscorable"], rows, "lrrrrr"
        )
    bins = p.dists[0].bins
    head = ["run", "samples", *(f"{b.lo:.3g}–{b.hi:.3g}" for b in bins), "errors"]
    rows = [
        [_name(r), d.n, *(b.count for b in d.bins), d.errors]
        for r, d in zip(runs, p.dists, strict=True)
    ]
    return (
        out
        + table(head, rows, "l" + "r" * (len(head) - 1))
        + ["Errored items are counted on their own, not in the lowest bin.", ""]
    )


def single_markdown(run: StoredRun, title: str | None, saved: Sequence[RunRecord] = ()) -> str:
    """The run report's Markdown with each task's per-item score distribution added
    (``saved``: runs whose stored judge calibrations count)."""
    panels = {p.name: p for p in task_panels([run])}

    def extra(t: TaskView) -> list[str]:
        p = panels.get(t.name)
        if p is None or not p.dists:
            return []
        return [*_dist_lines(p, [run])[:-1], f"{dist_text(p.dists[0])}.", ""]

    return render_markdown(run.record, run, extra=extra, title=title, saved=saved)


def _all_fail_lines(a: AllFail | None, runs: Sequence[StoredRun]) -> list[str]:
    out = ["### Items every run fails", ""]
    if a is None:
        return [*out, "No scores.", ""]
    out += [
        f"{a.n_failing} of {a.n_common} items scored by every run fail in every run "
        f"({code(a.rule)}); an error is not a failure.",
        "",
    ]
    if a.n_errored_elsewhere:
        out += [
            f"Not counted: {a.n_errored_elsewhere} more items fail wherever scored but "
            "errored in at least one run.",
            "",
        ]
    if a.items:
        shown = a.items[:MAX_FAILED]
        if a.n_failing > len(shown):
            out += [f"The first {len(shown)} in position order are shown.", ""]
        head = ["item", "category", "target", *(f"answer: {_name(r)}" for r in runs)]
        rows = [
            [
                f"#{i.position} {i.sample_id}",
                i.category or "—",
                i.target or "(none)",
                *(x if x is not None else "(none)" for x in i.answers),
            ]
            for i in shown
        ]
        out += table(head, rows, "l" * len(head))
    return out


def _task(p: TaskPanel, runs: Sequence[StoredRun]) -> list[str]:
    mine = [r for r in runs if p.name in r.record.tasks]
    out = [f"## {cell(p.name)} v{cell(p.version)}", ""]
    if p.metric is None:
        return [*out, "No scores: no run has a summary for this task.", ""]
    out += [f"### Scores ({p.metric}; plot axis: {p.axis.note})", ""]
    rows = [
        [
            _name(e.run),
            score_text(e.estimate, p.percent),
            e.estimate.n,
            e.estimate.method,
            e.n_errors,
        ]
        for e in p.entries
    ]
    out += table(["run", "score [interval]", "n", "method", "errors"], rows, "llrlr")
    if p.categories:
        out += [f"### By category (worst first, by the mean over runs; {p.metric})", ""]
        crow = [[c.name, *(m.text if m else "—" for m in c.cells)] for c in p.categories]
        out += table(["category", *(_name(r) for r in mine)], crow, "l" * (len(mine) + 1))
    return out + _dist_lines(p, mine) + _all_fail_lines(p.all_fail, mine)


def _diff_lines(cs: ComparisonSet, panels: Sequence[DiffPanel]) -> list[str]:
    out = ["## Comparison", ""]
    if cs.forced:
        out += [
            "> **FORCED:** these runs differ in methodology; treat the numbers with suspicion:",
            *(f"> - {cell(m)}" for m in cs.mismatches),
            "",
        ]
    out += [
        f"Each run against the baseline {code(cs.baseline)}, paired item by item; "
        f"p-values {cs.correction}-corrected over {_plural(len(cs.rows), 'comparison')}, "
        f"alpha {cs.alpha:g}; intervals {cs.confidence:.0%}.",
        "",
    ]
    for p in panels:
        k = 100.0 if p.points else 1.0
        rows = [
            [
                r.task,
                r.metric,
                r.model_a,
                r.model_b,
                r.n,
                diff_text(r.diff, p.points),
                r.test,
                num(r.p_value),
                num(r.p_adjusted),
                "n/a" if r.effect_size is None else f"{r.effect_size:.2f} {r.effect_size_name}",
                num(r.mde, ".1f" if p.points else ".3g", k),
                sum(r.excluded.values()),
            ]
            for r in p.rows
        ]
        head = [
            "task",
            "metric",
            "A",
            "B",
            "n",
            "B − A [interval]",
            "test",
            "p",
            "p adjusted",
            "effect size",
            "MDE" + (" (points)" if p.points else ""),
            "excluded",
        ]
        out += table(head, rows, "llllrllrrlrr")
    out += ["Verdicts:", ""]
    out += [
        f"- {'**significant**' if r.significant else 'not significant'} · "
        f"{cell(r.task)}/{cell(r.metric)}: {cell(r.verdict)}"
        for r in cs.rows
    ]
    return [*out, ""]


def render_multi_markdown(
    runs: Sequence[StoredRun], *, comparison: ComparisonSet | None, title: str
) -> str:
    conf = confidence_label(runs[0].record.methodology)
    out = [
        f"# {cell(title)}",
        "",
        f"{len(runs)} runs. Every score is value [{conf} interval] with n scored; errored "
        "samples are excluded from scores and counted separately, never as wrong.",
        "",
    ]
    out += ["## Runs", ""]
    out += table(
        ["model", "run", "status", "started", "tasks"],
        [
            [
                r.record.model_name,
                r.record.id,
                r.record.status,
                when(r.record.created_at),
                ", ".join(r.record.tasks),
            ]
            for r in runs
        ],
        "lllll",
    )
    if comparison is not None:
        out += _diff_lines(comparison, diff_panels(comparison))
    for p in task_panels(runs):
        out += _task(p, runs)
    out += [
        "## Methodology",
        "",
        "Fields that differ between runs are marked **differs**; "
        "runs whose methodology differs are not comparable.",
        "",
    ]
    rows = [[c.label, *c.values, "**differs**" if c.differs else ""] for c in card_rows(runs)]
    out += table(["field", *(_name(r) for r in runs), ""], rows, "l" * (len(runs) + 2))
    out += [f"<sub>calipers {cell(runs[0].record.calipers_version)}</sub>", ""]
    return "\n".join(out)
