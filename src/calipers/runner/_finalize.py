"""Finalize: reduce stored sample records to Estimates, per task and per category.

Errored samples are excluded from every score and counted on their own, with the commonest
error message; a NaN metric value (unscorable) is excluded the same way. Samples a scorer
flagged for tampering (code that exits before its tests ran, ...) stay scored, as failures,
and are counted apart as well. Retried model calls are counted per task and run (``calls``):
retries change what latencies mean. Bootstrap randomness is seeded from the run's bootstrap
stream (``seed``: the card's ``seeds.bootstrap``), the task and the metric, so a summary is
reproducible from the stored records alone.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from calipers._util.seeding import derived_rng
from calipers.stats import bootstrap_mean, summarize
from calipers.store import SampleRecord
from calipers.tasks import Derived
from calipers.types import (
    CallCounts,
    CategorySummary,
    Estimate,
    RunSummary,
    TaskSummary,
    TopError,
)

__all__ = ["summarize_records", "summarize_task", "tampering_of"]


def _estimate(
    recs: Sequence[SampleRecord], metric: str, seed: int, confidence: float, *tag: str
) -> Estimate:
    scored = [r for r in recs if r.error is None and r.scores and metric in r.scores]
    values = np.array([r.scores[metric] for r in scored if r.scores], dtype=float)
    # several epochs of one item are not independent: the item is their cluster
    cl = [r.cluster if r.cluster is not None else f"__item:{r.sample_id}" for r in scored]
    has_clusters = any(r.cluster is not None for r in scored) or len(set(cl)) < len(cl)
    return summarize(
        values,
        clusters=cl if has_clusters else None,
        rng=derived_rng(seed, metric, *tag),
        confidence=confidence,
    )


TOP_ERROR_CHARS = 300


def top_error(recs: Sequence[SampleRecord]) -> TopError | None:
    """The commonest error message among ``recs`` (ties: the first seen) and how many
    samples ended with it; None when no sample failed."""
    counts = Counter(r.error for r in recs if r.error is not None)
    if not counts:
        return None
    message, count = counts.most_common(1)[0]
    return TopError(message=message[:TOP_ERROR_CHARS], count=count)


def call_counts(recs: Sequence[SampleRecord]) -> CallCounts:
    """Retries of the model calls of ``recs``: how many, on how many samples, how many the
    server rate-limited (HTTP 429), and the seconds spent waiting between attempts."""
    calls = [c for r in recs if (c := (r.score_details or {}).get("calls"))]
    return CallCounts(
        retries=sum(int(c.get("retries", 0)) for c in calls),
        samples_retried=sum(int(c.get("retries", 0)) > 0 for c in calls),
        rate_limited=sum(int(c.get("rate_limited", 0)) for c in calls),
        wait_s=round(sum(float(c.get("wait_s", 0.0)) for c in calls), 3),
    )


def tampering_of(r: SampleRecord) -> list[str]:
    """What the record's scorers flagged as tampering (``score_details[scorer]["tampering"]``)."""
    found: list[str] = []
    for d in (r.score_details or {}).values():
        if isinstance(d, dict) and isinstance(d.get("tampering"), list):
            found += [str(t) for t in d["tampering"]]
    return found


def summarize_task(
    task: str,
    recs: Sequence[SampleRecord],
    metrics: Sequence[str],
    seed: int,
    confidence: float,
    derived: Derived | None = None,
) -> TaskSummary:
    """``derived`` adds task-level metrics computed from ``recs`` (with intervals)."""
    scored = [r for r in recs if r.error is None]
    errors = [r for r in recs if r.error is not None]
    if not metrics:  # a task whose scorers were not given: take metric names from records
        metrics = list(next((r.scores for r in scored if r.scores), {}) or {})
    by_cat: dict[str, list[SampleRecord]] = defaultdict(list)
    for r in recs:
        by_cat[r.category or "(none)"].append(r)
    categories = {}
    if len(by_cat) > 1:
        for cat, crecs in sorted(by_cat.items()):
            categories[cat] = CategorySummary(
                n=len(crecs),
                n_errors=sum(r.error is not None for r in crecs),
                metrics={m: _estimate(crecs, m, seed, confidence, task, cat) for m in metrics},
            )
    lat = np.array([r.latency_s for r in scored if r.latency_s is not None], dtype=float)
    estimates = {m: _estimate(recs, m, seed, confidence, task) for m in metrics}
    if derived is not None:
        estimates.update(derived(recs))
    return TaskSummary(
        primary=metrics[0] if metrics else None,
        n_samples=len(recs),
        n_scored=len(scored),
        n_errors=len(errors),
        n_cached=sum(bool(r.cached) for r in recs),
        metrics=estimates,
        categories=categories,
        latency_s=bootstrap_mean(lat, derived_rng(seed, "latency", task), confidence=confidence),
        input_tokens=sum(r.input_tokens or 0 for r in recs),
        output_tokens=sum(r.output_tokens or 0 for r in recs),
        errors=tuple(sorted({(r.error or "").split(":")[0] for r in errors})),
        top_error=top_error(errors),
        calls=call_counts(recs),
        n_tampering=sum(bool(tampering_of(r)) for r in recs),
        tampering=tuple(sorted({t for r in recs for t in tampering_of(r)})),
    )


def summarize_records(
    records: Sequence[SampleRecord],
    metrics: dict[str, list[str]],
    *,
    seed: int,
    confidence: float,
    derived: Mapping[str, Derived] | None = None,
) -> RunSummary:
    """``metrics`` maps each task (in run order) to its metric names, primary first;
    ``derived`` adds task-level metrics computed from the task's records (with intervals)."""
    by_task: dict[str, list[SampleRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    tasks = {
        t: summarize_task(t, by_task.get(t, []), ms, seed, confidence, (derived or {}).get(t))
        for t, ms in metrics.items()
    }
    return RunSummary(tasks=tasks, calls=call_counts(records))
