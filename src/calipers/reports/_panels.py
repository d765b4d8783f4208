"""The plots and facts of a multi-run report, one panel per task and per comparison scale.

Shared by the HTML (which draws the SVGs) and the Markdown (which writes the same facts as
tables), so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup

from calipers.reports._axis import Axis, diff_axis, score_axis, unit_scale
from calipers.reports._multi_view import (
    AllFail,
    CategoryRow,
    Distribution,
    ScoreEntry,
    all_failing,
    category_rows,
    distributions,
    primary_metric,
    score_entries,
    task_names,
)
from calipers.reports._svg import PlotRow, Segment, histogram_svg, interval_svg, stacked_svg
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.analysis import ComparisonRow, ComparisonSet, StoredRun

__all__ = [
    "DiffPanel",
    "TaskPanel",
    "diff_panels",
    "diff_text",
    "dist_svgs",
    "dist_text",
    "num",
    "score_text",
    "task_panels",
]


def score_text(e: Estimate, percent: bool) -> str:
    """``85.0% [78.2, 90.1] · n=120``, or ``n/a (n=0)``."""
    return e.format(percent=percent) if e.is_empty else f"{e.format(percent=percent)} · n={e.n}"


def num(x: float | None, fmt: str = ".3g", scale: float = 1.0) -> str:
    """An optional number: ``n/a`` for None."""
    return "n/a" if x is None else f"{x * scale:{fmt}}"


def diff_text(e: Estimate, points: bool) -> str:
    """A difference: ``+4.1 [1.2, 7.0] points`` (proportions) or ``+0.031 [0.004, 0.058]``."""
    if e.is_empty:
        return "n/a (n=0)"
    if points:
        return f"{100 * e.value:+.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}] points"
    return f"{e.value:+.3f} [{e.low:.3f}, {e.high:.3f}]"


def dist_text(d: Distribution) -> str:
    """A distribution's counts in words, errors always stated."""
    parts = (
        [f"{d.right} right", f"{d.wrong} wrong"]
        if d.binary
        else [f"{d.n - d.errors - d.unscored} scored"]
    )
    parts.append(
        f"{d.errors} error{'s' if d.errors != 1 else ''} (not counted as wrong)"
        if d.errors
        else "no errors"
    )
    if d.unscored:
        parts.append(f"{d.unscored} unscorable (NaN)")
    return f"{d.n} samples: " + ", ".join(parts)


@dataclass(frozen=True, slots=True)
class TaskPanel:
    name: str
    version: str
    metric: str | None
    entries: tuple[ScoreEntry, ...]
    axis: Axis
    percent: bool
    forest: Markup
    categories: tuple[CategoryRow, ...]
    dists: tuple[Distribution, ...]
    dist_plots: tuple[Markup, ...]  # one stacked plot (binary) or one histogram per run
    all_fail: AllFail | None


def _forest(name: str, entries: Sequence[ScoreEntry], axis: Axis, percent: bool) -> Markup:
    rows = [
        PlotRow(
            e.run.record.model_name, e.run.record.id, e.estimate, score_text(e.estimate, percent)
        )
        for e in entries
    ]
    return interval_svg(rows, axis, title=f"{name}: each run's score with its interval")


def dist_svgs(
    task: str, runs: Sequence[StoredRun], dists: Sequence[Distribution]
) -> tuple[Markup, ...]:
    """The per-item plots: one stacked right/wrong/error bar per run for binary scores, or
    one histogram per run (errors as their own bar)."""
    if dists and dists[0].binary:
        rows = [
            (
                r.record.model_name,
                r.record.id,
                [
                    Segment("right", d.right),
                    Segment("wrong", d.wrong),
                    Segment("error", d.errors),
                    Segment("unscored", d.unscored),
                ],
                f"n={d.n}" + (f", {d.errors} err." if d.errors else ""),
            )
            for r, d in zip(runs, dists, strict=True)
        ]
        return (stacked_svg(rows, title=f"{task}: right, wrong and errored items per run"),)
    return tuple(
        histogram_svg(d.bins, d.errors, title=f"{task}: per-item scores of {r.record.id}")
        for r, d in zip(runs, dists, strict=True)
    )


def _panel(runs: Sequence[StoredRun], task: str) -> TaskPanel:
    mine = [r for r in runs if task in r.record.tasks]
    card = (mine[0].record.methodology.get("tasks") or {}).get(task) or {}
    metric = primary_metric(mine, task)
    entries = score_entries(mine, task, metric) if metric else []
    ests = [e.estimate for e in entries]
    axis, percent = score_axis(ests), unit_scale(ests)
    dists = distributions(mine, task, metric) if metric else []
    return TaskPanel(
        name=task,
        version=str(card.get("version", "?")),
        metric=metric,
        entries=tuple(entries),
        axis=axis,
        percent=percent,
        forest=_forest(task, entries, axis, percent),
        categories=tuple(category_rows(mine, task, metric)) if metric else (),
        dists=tuple(dists),
        dist_plots=dist_svgs(task, mine, dists),
        all_fail=all_failing(mine, task, metric) if metric else None,
    )


def task_panels(runs: Sequence[StoredRun]) -> list[TaskPanel]:
    """One panel per task of any run, in the order first seen. Computed once per list of
    runs (the HTML and Markdown reports both ask), kept on the first run."""
    if not runs:
        return []
    cache: dict[tuple[str, ...], list[TaskPanel]] = runs[0].__dict__.setdefault("_panels", {})
    key = tuple(r.record.id for r in runs)
    if key not in cache:
        cache[key] = [_panel(runs, t) for t in task_names(runs)]
    return cache[key]


@dataclass(frozen=True, slots=True)
class DiffPanel:
    """Comparison rows that share a scale, and their paired-difference plot."""

    points: bool
    rows: tuple[ComparisonRow, ...]
    axis: Axis
    plot: Markup


def _points(row: ComparisonRow) -> bool:
    return unit_scale([row.score_a, row.score_b])


def diff_panels(cs: ComparisonSet) -> list[DiffPanel]:
    """The comparison's rows grouped by scale (proportions in points, others raw), each with
    a plot of B − A and its interval on an axis symmetric around a drawn zero line."""
    out = []
    for points in (True, False):
        rows = [r for r in cs.rows if _points(r) == points]
        if not rows:
            continue
        diffs = [r.diff for r in rows]
        axis = diff_axis(diffs, points=points)
        plot_rows = [
            PlotRow(
                f"{r.model_b} − {r.model_a}",
                f"{r.task} · {r.metric} · n={r.n}",
                d,
                diff_text(d, points),
                filled=r.significant,
            )
            for r, d in zip(rows, diffs, strict=True)
        ]
        title = "Paired differences, B − A, with intervals; 0 is no difference"
        out.append(
            DiffPanel(
                points, tuple(rows), axis, interval_svg(plot_rows, axis, title=title, zero=True)
            )
        )
    return out
