"""Finalize: reduce stored sample records to Estimates, per task and per category.

Errored samples are excluded from every score and counted on their own; a NaN metric value
(unscorable) is excluded the same way. Samples a scorer flagged for tampering (code that
exits before its tests ran, ...) stay scored, as failures, and are counted apart as well.
Bootstrap randomness is seeded from the run's seed, the task and the metric, so a summary is
reproducible from the stored records alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from calipers._util.hashing import text_hash
from calipers.stats import bootstrap_mean, summarize
from calipers.store import SampleRecord
from calipers.tasks import Derived
from calipers.types import Estimate

__all__ = ["summarize_records", "summarize_task", "tampering_of"]


def _rng(seed: int, *parts: str) -> np.random.Generator:
    return np.random.default_rng([seed, int(text_hash("\x00".join(parts), length=8), 16)])


def _estimate(
    recs: Sequence[SampleRecord], metric: str, seed: int, confidence: float, *tag: str
) -> Estimate:
    scored = [r for r in recs if r.error is None and r.scores and metric in r.scores]
    values = np.array([r.scores[metric] for r in scored if r.scores], dtype=float)
    # several epochs of one item are not independent: the item is their cluster
    cl = [r.cluster if r.cluster is not None else f"__item:{r.sample_id}" for r in scored]
    has_clusters = any(r.cluster is not None for r in scored) or len(set(cl)) < len(cl)
    return summarize(
        values, clusters=cl if has_clusters else None,
        rng=_rng(seed, metric, *tag), confidence=confidence,
    )


def tampering_of(r: SampleRecord) -> list[str]:
    """What the record's scorers flagged as tampering (``score_details[scorer]["tampering"]``)."""
    found: list[str] = []
    for d in (r.score_details or {}).values():
        if isinstance(d, dict) and isinstance(d.get("tampering"), list):
            found += [str(t) for t in d["tampering"]]
    return found


def summarize_task(
    task: str, recs: Sequence[SampleRecord], metrics: Sequence[str], seed: int,
    confidence: float,
) -> dict[str, Any]:
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
            categories[cat] = {
                "n": len(crecs),
                "n_errors": sum(r.error is not None for r in crecs),
                "metrics": {
                    m: _estimate(crecs, m, seed, confidence, task, cat).to_dict()
                    for m in metrics
                },
            }
    lat = np.array([r.latency_s for r in scored if r.latency_s is not None], dtype=float)
    return {
        "primary": metrics[0] if metrics else None,
        "n_samples": len(recs),
        "n_scored": len(scored),
        "n_errors": len(errors),
        "n_cached": sum(bool(r.cached) for r in recs),
        "metrics": {m: _estimate(recs, m, seed, confidence, task).to_dict() for m in metrics},
        "categories": categories,
        "latency_s": bootstrap_mean(
            lat, _rng(seed, "latency", task), confidence=confidence
        ).to_dict(),
        "input_tokens": sum(r.input_tokens or 0 for r in recs),
        "output_tokens": sum(r.output_tokens or 0 for r in recs),
        "errors": sorted({(r.error or "").split(":")[0] for r in errors}),
        "n_tampering": sum(bool(tampering_of(r)) for r in recs),
        "tampering": sorted({t for r in recs for t in tampering_of(r)}),
    }


def summarize_records(
    records: Sequence[SampleRecord],
    metrics: dict[str, list[str]],
    *,
    seed: int,
    confidence: float,
    derived: Mapping[str, Derived] | None = None,
) -> dict[str, Any]:
    """``metrics`` maps each task (in run order) to its metric names, primary first;
    ``derived`` adds task-level metrics computed from the task's records (with intervals)."""
    by_task: dict[str, list[SampleRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    tasks = {}
    for t, ms in metrics.items():
        ts = summarize_task(t, by_task.get(t, []), ms, seed, confidence)
        if derived and t in derived:
            extra = derived[t](by_task.get(t, []))
            ts["metrics"].update({k: e.to_dict() for k, e in extra.items()})
        tasks[t] = ts
    return {"tasks": tasks}
