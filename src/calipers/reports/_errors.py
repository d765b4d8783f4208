"""The error types of a run's tasks, worst first, as the run report shows them (the
taxonomy itself is ``calipers.analysis.error_report``; ``calipers errors`` prints it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calipers.store import RunRecord, SampleRecord

if TYPE_CHECKING:
    from calipers.analysis import StoredRun

__all__ = ["ErrorTypeView", "error_views"]


@dataclass(frozen=True, slots=True)
class ErrorTypeView:
    type: str
    count: int
    share: str  # "42.9% [15.8, 75.0]" of the failures
    rate: str  # of the scored samples
    example: str  # the first example's evidence


def error_views(
    run: RunRecord, samples: Sequence[SampleRecord] | StoredRun
) -> dict[str, tuple[ErrorTypeView, ...]]:
    """Per task with an error rule and failing samples, its error types worst first. Only
    a task whose scorers have an error rule is read (its failing responses are classified)."""
    from calipers.analysis import StoredRun, error_report
    from calipers.scorers import error_rule

    src = samples if isinstance(samples, StoredRun) else StoredRun(run, tuple(samples))
    cards = (run.methodology or {}).get("tasks") or {}

    def has_rule(task: str) -> bool:
        scorers = (cards.get(task) or {}).get("scorers") or []
        return error_rule([str(s.get("name")) for s in scorers if isinstance(s, dict)]) is not None

    tasks = [t for t in run.tasks if has_rule(t)]
    reports = [error_report(src, task=t, examples=1) for t in tasks]
    return {
        t.task: tuple(
            ErrorTypeView(
                r.type,
                r.count,
                r.share.format(percent=True),
                r.rate.format(percent=True),
                r.examples[0].detail if r.examples else "",
            )
            for r in t.types
        )
        for report in reports
        for t in report.tasks
        if t.rule is not None and t.types
    }
