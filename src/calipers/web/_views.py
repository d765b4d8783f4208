"""What the dashboard's pages show, computed from stored runs (no HTTP, no markup but charts).

Each page's data is built here once and used twice: rendered by a template and served as JSON
by the matching ``/api/...`` endpoint, so the two cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from markupsafe import Markup

from calipers.reports import TaskView, failing_items, unit_scale
from calipers.store import RunRecord, SampleRecord
from calipers.types import Estimate
from calipers.web._charts import forest_svg, plot_row

__all__ = [
    "PER_PAGE",
    "SHOWS",
    "RunRow",
    "SamplePage",
    "Show",
    "category_chart",
    "primaries_chart",
    "run_json",
    "run_row",
    "run_row_json",
    "sample_json",
    "sample_page",
]

PER_PAGE = 20
Show = Literal["all", "failures", "errors"]
SHOWS: tuple[Show, ...] = ("all", "failures", "errors")


@dataclass(frozen=True, slots=True)
class Score:
    task: str
    metric: str
    estimate: Estimate
    text: str


@dataclass(frozen=True, slots=True)
class RunRow:
    """One line of the runs list: primary scores per task, errors summed over tasks (None
    while the run has no summary)."""

    record: RunRecord
    scores: tuple[Score, ...]
    n_errors: int | None
    n_samples: int | None


def _percent(est: Estimate) -> bool:
    return unit_scale([est])


def run_row(run: RunRecord) -> RunRow:
    tasks = run.summary.tasks if run.summary is not None else {}
    scores = []
    for task, ts in tasks.items():
        if ts.primary and (est := ts.primary_estimate) is not None:
            scores.append(Score(task, ts.primary, est, est.format(percent=_percent(est))))
    summarized = run.summary is not None
    return RunRow(
        run,
        tuple(scores),
        sum(ts.n_errors for ts in tasks.values()) if summarized else None,
        sum(ts.n_samples for ts in tasks.values()) if summarized else None,
    )


def run_row_json(run: RunRecord) -> dict[str, Any]:
    """The same fields as ``calipers runs --json``."""
    return {
        "id": run.id,
        "created_at": run.created_at,
        "status": run.status,
        "model": run.model,
        "model_name": run.model_name,
        "tasks": run.tasks,
        "summary": run.summary.model_dump(mode="json") if run.summary else None,
    }


def run_json(run: RunRecord, saved: Sequence[RunRecord] = ()) -> dict[str, Any]:
    """The same fields as ``calipers show RUN --json`` (judge calibrations found in ``run``
    or the ``saved`` runs)."""
    from calipers.analysis import judge_calibrations

    return {
        "id": run.id,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "status": run.status,
        "model": run.model,
        "model_name": run.model_name,
        "tasks": run.tasks,
        "methodology": run.methodology,
        "config": run.config,
        "summary": run.summary.model_dump(mode="json") if run.summary else None,
        "calipers_version": run.calipers_version,
        "error": run.error,
        "judge_calibration": judge_calibrations(run, saved),
    }


def primaries_chart(run: RunRecord, tasks: Sequence[TaskView]) -> Markup | None:
    """Each task's primary score with its interval; None when no task has one."""
    rows = [plot_row(t.name, t.primary.name, t.primary.estimate) for t in tasks if t.primary]
    if not rows:
        return None
    return forest_svg(rows, title=f"{run.model_name}: each task's primary score")


def category_chart(task: TaskView) -> Markup | None:
    """A task's categories, worst first, on its primary metric."""
    if not task.categories or task.primary is None:
        return None
    rows = [plot_row(c.name, f"{c.metric.name}", c.metric.estimate) for c in task.categories]
    return forest_svg(rows, title=f"{task.name}: {task.primary.name} by category, worst first")


@dataclass(frozen=True, slots=True)
class SamplePage:
    task: str
    show: Show
    page: int
    pages: int
    total: int
    primary: str | None
    items: tuple[SampleRecord, ...]


def _primary(run: RunRecord, task: str) -> str | None:
    ts = run.task_summary(task)
    return (ts.primary or None) if ts is not None else None


def sample_page(
    run: RunRecord,
    samples: Sequence[SampleRecord],
    task: str,
    show: Show,
    page: int,
    per_page: int = PER_PAGE,
) -> SamplePage:
    """Samples of ``task`` in position order: all of them, the failing ones (as in ``calipers
    show``: below full credit on the 0–1 scale) or the errored ones; page ``page`` (from 1)."""
    primary = _primary(run, task)
    mine = [s for s in samples if s.task == task]
    if show == "failures":
        picked = failing_items(mine, task, primary, k=len(mine)) if primary else []
    elif show == "errors":
        picked = [s for s in mine if s.error is not None]
    else:
        picked = mine
    pages = max(1, math.ceil(len(picked) / per_page))
    page = min(max(page, 1), pages)
    items = tuple(picked[(page - 1) * per_page : page * per_page])
    return SamplePage(task, show, page, pages, len(picked), primary, items)


def sample_json(s: SampleRecord) -> dict[str, Any]:
    return s.model_dump(mode="python", exclude={"run_id"})
