"""The error types of a run's tasks, worst first, as the run report shows them (the
taxonomy itself is ``calipers.analysis.error_report``; ``calipers errors`` prints it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from calipers.store import RunRecord, SampleRecord

__all__ = ["ErrorTypeView", "error_views"]


@dataclass(frozen=True, slots=True)
class ErrorTypeView:
    type: str
    count: int
    share: str  # "42.9% [15.8, 75.0]" of the failures
    rate: str  # of the scored samples
    example: str  # the first example's evidence


def error_views(
    run: RunRecord, samples: Sequence[SampleRecord]
) -> dict[str, tuple[ErrorTypeView, ...]]:
    """Per task with an error rule and failing samples, its error types worst first."""
    from calipers.analysis import StoredRun, error_report

    report = error_report(StoredRun(run, tuple(samples)), examples=1)
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
        for t in report.tasks
        if t.rule is not None and t.types
    }
