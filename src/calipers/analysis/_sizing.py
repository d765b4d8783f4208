"""``calipers plan``: how many items a comparison needs, and what running them costs.

Sample sizes follow Miller, "Adding Error Bars to Evals" (arXiv 2411.00640): a paired design
whose two models' per-item scores correlate with r needs var(diff) = v_a + v_b - 2 r sqrt(v_a
v_b) in place of v_a + v_b. A pilot run gives the baseline accuracy and the time and tokens
per item; two pilot runs on the same items also give r.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers.analysis._align import StoredRun, pair
from calipers.errors import ConfigError
from calipers.stats import sample_size_paired, unpaired_sample_size
from calipers.types import TaskSummary

__all__ = ["SizePlan", "plan_size"]


class SizePlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str | None
    delta: float
    alpha: float
    power: float
    baseline_acc: float
    baseline_source: str
    correlation: float
    correlation_source: str
    n_paired: int
    n_unpaired: int
    items_available: int | None
    seconds_per_item: float | None
    tokens_per_item: float | None
    est_seconds_per_model: float | None
    est_tokens_per_model: float | None
    notes: list[str]


def _primary(run: StoredRun, task: str) -> tuple[str, TaskSummary]:
    ts = run.record.task_summary(task)
    if not ts or not ts.primary:
        raise ConfigError(f"Pilot run {run.record.id} has no finished scores for {task!r}.")
    return ts.primary, ts


def _task_of(pilots: Sequence[StoredRun], task: str | None) -> str | None:
    if task or not pilots:
        return task
    if len(pilots[0].record.tasks) != 1:
        raise ConfigError("The pilot run has several tasks; choose one with --task.")
    return pilots[0].record.tasks[0]


def plan_size(
    *,
    delta: float,
    task: str | None = None,
    baseline_acc: float | None = None,
    correlation: float | None = None,
    pilots: Sequence[StoredRun] = (),
    items_available: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> SizePlan:
    if not 0 < delta < 1:
        raise ConfigError(
            f"--delta must be between 0 and 1 (a difference in accuracy), got {delta}."
        )
    task = _task_of(pilots, task)
    notes: list[str] = []
    base_src, corr_src = "given", "given"
    secs = toks = None
    if pilots and task:
        metric, ts = _primary(pilots[0], task)
        est = ts.metrics[metric]
        if baseline_acc is None:
            baseline_acc, base_src = est.value, f"pilot {pilots[0].record.id} ({metric})"
        lat = ts.latency_s
        secs = None if lat.is_empty else lat.value
        n = max(1, ts.n_samples)
        toks = (ts.input_tokens + ts.output_tokens) / n
        if correlation is None and len(pilots) >= 2:
            p = pair(pilots[0], pilots[1], task, metric)
            if p.a.size > 2 and p.a.std() > 0 and p.b.std() > 0:
                correlation = float(np.corrcoef(p.a, p.b)[0, 1])
                corr_src = f"pilots {pilots[0].record.id} and {pilots[1].record.id} (n={p.a.size})"
    if baseline_acc is None:
        baseline_acc, base_src = 0.5, "assumed (the most demanding value; give --baseline-acc)"
        notes.append("Baseline accuracy unknown: 0.5 assumed, which needs the most items.")
    if correlation is None:
        correlation, corr_src = 0.0, "assumed 0 (conservative)"
        notes.append(
            "Correlation between the two models' per-item scores unknown: 0 assumed. "
            "Give --correlation or two pilot runs on the same items; models usually "
            "correlate, and then fewer items suffice."
        )
    b = min(max(baseline_acc, 0.0), 1.0 - delta) if baseline_acc + delta > 1 else baseline_acc
    n_paired = sample_size_paired(
        delta, baseline_acc=b, correlation=correlation, alpha=alpha, power=power
    )
    n_unpaired = unpaired_sample_size(delta, baseline_acc=b, alpha=alpha, power=power)
    if items_available is not None and n_paired > items_available:
        notes.append(
            f"The task has only {items_available} items: a difference of "
            f"{delta:.1%} cannot be detected reliably on it."
        )
    return SizePlan(
        task=task,
        delta=delta,
        alpha=alpha,
        power=power,
        baseline_acc=b,
        baseline_source=base_src,
        correlation=correlation,
        correlation_source=corr_src,
        n_paired=n_paired,
        n_unpaired=n_unpaired,
        items_available=items_available,
        seconds_per_item=secs,
        tokens_per_item=toks,
        est_seconds_per_model=None if secs is None else math.ceil(secs * n_paired),
        est_tokens_per_model=None if toks is None else math.ceil(toks * n_paired),
        notes=notes,
    )
