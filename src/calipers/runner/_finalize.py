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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers._util.seeding import derived_rng
from calipers.stats import bootstrap_mean, summarize
from calipers.store import SampleColumns, SampleRecord, Store
from calipers.tasks import Derived
from calipers.types import (
    CallCounts,
    CategorySummary,
    Estimate,
    RunSummary,
    TaskSummary,
    TopError,
)

__all__ = [
    "summarize_columns",
    "summarize_records",
    "summarize_stored",
    "summarize_task",
    "tampering_of",
]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]


def _estimate(
    cols: SampleColumns,
    ok: BoolArray,
    rows: IntArray,
    metric: str,
    seed: int,
    confidence: float,
    *tag: str,
) -> Estimate:
    """``metric`` over the scored rows among ``rows`` (indexes, in record order)."""
    present = cols.has_score.get(metric)
    scored = rows[ok[rows] & present[rows]] if present is not None else rows[:0]
    values = cols.scores[metric][scored] if present is not None else np.array([], dtype=float)
    # several epochs of one item are not independent: the item is their cluster
    raw = cols.cluster[scored]
    ids = cols.sample_id[scored]
    cl = [c if c is not None else f"__item:{i}" for c, i in zip(raw, ids, strict=True)]
    has_clusters = any(c is not None for c in raw) or len(set(cl)) < len(cl)
    return summarize(
        values,
        clusters=cl if has_clusters else None,
        rng=derived_rng(seed, metric, *tag),
        confidence=confidence,
    )


TOP_ERROR_CHARS = 300


def _top_error(messages: Iterable[str]) -> TopError | None:
    counts = Counter(messages)
    if not counts:
        return None
    message, count = counts.most_common(1)[0]
    return TopError(message=message[:TOP_ERROR_CHARS], count=count)


def top_error(recs: Sequence[SampleRecord]) -> TopError | None:
    """The commonest error message among ``recs`` (ties: the first seen) and how many
    samples ended with it; None when no sample failed."""
    return _top_error(r.error for r in recs if r.error is not None)


def _count_calls(details: Iterable[dict[str, Any] | None]) -> CallCounts:
    calls = [c for d in details if (c := (d or {}).get("calls"))]
    return CallCounts(
        retries=sum(int(c.get("retries", 0)) for c in calls),
        samples_retried=sum(int(c.get("retries", 0)) > 0 for c in calls),
        rate_limited=sum(int(c.get("rate_limited", 0)) for c in calls),
        wait_s=round(sum(float(c.get("wait_s", 0.0)) for c in calls), 3),
    )


def call_counts(recs: Sequence[SampleRecord]) -> CallCounts:
    """Retries of the model calls of ``recs``: how many, on how many samples, how many the
    server rate-limited (HTTP 429), and the seconds spent waiting between attempts."""
    return _count_calls(r.score_details for r in recs)


def _tampering(details: dict[str, Any] | None) -> list[str]:
    found: list[str] = []
    for d in (details or {}).values():
        if isinstance(d, dict) and isinstance(d.get("tampering"), list):
            found += [str(t) for t in d["tampering"]]
    return found


def tampering_of(r: SampleRecord) -> list[str]:
    """What the record's scorers flagged as tampering (``score_details[scorer]["tampering"]``)."""
    return _tampering(r.score_details)


def summarize_columns(
    cols: SampleColumns,
    metrics: Sequence[str],
    seed: int,
    confidence: float,
    derived: Derived | None = None,
    records: Sequence[SampleRecord] | None = None,
) -> TaskSummary:
    """One task's summary from its columns; ``derived`` (which needs whole records) is
    computed from ``records``, the task's records, read only for a task that has one."""
    task = cols.task
    ok = cols.ok
    n = len(cols)
    everything = np.arange(n)
    if not metrics:  # a task whose scorers were not given: take metric names from records
        metrics = list(cols.first_metrics)
    labels = np.array([c or "(none)" for c in cols.category], dtype=object)
    names = sorted(set(labels.tolist()))
    categories = {}
    if len(names) > 1:
        for cat in names:
            rows = np.flatnonzero(labels == cat)
            categories[cat] = CategorySummary(
                n=int(rows.size),
                n_errors=int((~ok[rows]).sum()),
                metrics={
                    m: _estimate(cols, ok, rows, m, seed, confidence, task, cat) for m in metrics
                },
            )
    lat = cols.latency_s[ok & ~np.isnan(cols.latency_s)]
    estimates = {m: _estimate(cols, ok, everything, m, seed, confidence, task) for m in metrics}
    if derived is not None:
        estimates.update(derived(records or []))
    errors = [e for e in cols.error if e is not None]
    flagged = [_tampering(d) for d in cols.details.values()]
    return TaskSummary(
        primary=metrics[0] if metrics else None,
        n_samples=n,
        n_scored=int(ok.sum()),
        n_errors=len(errors),
        n_cached=int(cols.cached.sum()),
        metrics=estimates,
        categories=categories,
        latency_s=bootstrap_mean(lat, derived_rng(seed, "latency", task), confidence=confidence),
        input_tokens=int(cols.input_tokens.sum()),
        output_tokens=int(cols.output_tokens.sum()),
        errors=tuple(sorted({e.split(":")[0] for e in errors})),
        top_error=_top_error(errors),
        calls=_count_calls(cols.details.values()),
        n_tampering=sum(bool(f) for f in flagged),
        tampering=tuple(sorted({t for f in flagged for t in f})),
    )


def summarize_task(
    task: str,
    recs: Sequence[SampleRecord],
    metrics: Sequence[str],
    seed: int,
    confidence: float,
    derived: Derived | None = None,
) -> TaskSummary:
    """``derived`` adds task-level metrics computed from ``recs`` (with intervals)."""
    cols = SampleColumns.from_records(task, recs)
    return summarize_columns(cols, metrics, seed, confidence, derived, recs)


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


def summarize_stored(
    store: Store,
    run_id: str,
    metrics: dict[str, list[str]],
    *,
    seed: int,
    confidence: float,
    derived: Mapping[str, Derived] | None = None,
) -> RunSummary:
    """:func:`summarize_records` of the run's stored samples, read as columns one task at a
    time (:meth:`Store.sample_columns`): the same summary, in memory that does not hold the
    records. Only a task with ``derived`` metrics has its whole records read."""
    tasks: dict[str, TaskSummary] = {}
    details: dict[str, list[dict[str, Any]]] = {}
    for t, ms in metrics.items():
        cols = store.sample_columns(run_id, t)
        fn = (derived or {}).get(t)
        recs = store.get_samples(run_id, task=t) if fn is not None else None
        tasks[t] = summarize_columns(cols, ms, seed, confidence, fn, recs)
        details[t] = list(cols.details.values())
    # the run's retries in record order (task, then position): the same float sum
    ordered = [d for t in sorted(details) for d in details[t]]
    return RunSummary(tasks=tasks, calls=_count_calls(ordered))
