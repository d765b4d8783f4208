"""A finished run's summary: the honesty contract as a type.

The runner builds a :class:`RunSummary` once, when it finalizes a run; the store writes it as
JSON and reads it back as the same type; reports, compare, gate and selection read its fields.
Every score is an :class:`Estimate`. ``model_dump(mode="json")`` is the shape stored in the
``runs.summary`` column and printed by ``calipers show --json`` (estimates as
``Estimate.to_dict()``, NaN as null).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from calipers.types._estimate import Estimate

__all__ = ["CallCounts", "CategorySummary", "RunSummary", "TaskSummary", "TopError"]


class _Summary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CallCounts(_Summary):
    """Retried model calls: how many retries, on how many samples, how many the server
    rate-limited (HTTP 429), and the seconds spent waiting between attempts."""

    retries: int
    samples_retried: int
    rate_limited: int
    wait_s: float


class TopError(_Summary):
    """The commonest error message (cut to 300 characters) and how many samples ended with it."""

    message: str
    count: int


class CategorySummary(_Summary):
    """One category of a task: its samples, its errored samples and its metrics."""

    n: int
    n_errors: int
    metrics: dict[str, Estimate]


class TaskSummary(_Summary):
    """One task of a run. ``primary`` is the metric reports lead with (None when the task has
    no metric); errored samples are counted in ``n_errors``, never scored. ``categories`` is
    empty when the task has one category. ``calls`` is None in runs stored before retries
    were counted; ``tampering`` names what scorers flagged on ``n_tampering`` samples."""

    primary: str | None
    n_samples: int
    n_scored: int
    n_errors: int
    n_cached: int
    metrics: dict[str, Estimate]
    categories: dict[str, CategorySummary]
    latency_s: Estimate
    input_tokens: int
    output_tokens: int
    errors: tuple[str, ...]
    top_error: TopError | None
    calls: CallCounts | None
    n_tampering: int
    tampering: tuple[str, ...]

    @property
    def primary_estimate(self) -> Estimate | None:
        """The primary metric's estimate; None when the task has no primary metric."""
        return self.metrics.get(self.primary) if self.primary is not None else None

    @property
    def all_failed(self) -> bool:
        """Every sample failed (a dead or wrong endpoint, not a bad model)."""
        return self.n_samples > 0 and self.n_errors == self.n_samples


class RunSummary(_Summary):
    """A finished run: its tasks in run order, the retried calls of the whole run and the
    wall-clock seconds it took. ``judge_calibration`` holds, per task, the judge-human
    agreement report that ``calipers judge-calibrate`` saved (a dict: its type is the
    analysis layer's). ``elapsed_s`` and ``judge_calibration`` are left out of the dumped
    dict when None, as they were absent before."""

    tasks: dict[str, TaskSummary]
    calls: CallCounts | None
    elapsed_s: float | None = None
    judge_calibration: dict[str, dict[str, Any]] | None = None

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        for key in ("elapsed_s", "judge_calibration"):
            if out.get(key) is None:
                out.pop(key, None)
        return out

    @property
    def failed_tasks(self) -> list[str]:
        """Tasks in which every sample failed: their scores are empty."""
        return [t for t, ts in self.tasks.items() if ts.all_failed]
