"""A stored run's score on clean items against its score on items that overlap the corpus."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers.errors import ConfigError
from calipers.stats import summarize, unpaired_difference
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.analysis import StoredRun

__all__ = ["ScoreSplit", "score_split"]


class _Item(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...


class ScoreSplit(BaseModel):
    """Mean score on clean and on overlapping items, and ``overlapping - clean``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    model: str
    task: str
    metric: str
    n_scored: int
    n_unscored: int
    clean: Estimate
    overlapping: Estimate
    difference: Estimate
    reading: str


def _task(run: StoredRun, task: str | None) -> str:
    if task is not None:
        if task not in run.record.tasks:
            raise ConfigError(
                f"Run {run.record.id} has no task {task!r}.",
                hint=f"Its tasks: {', '.join(run.record.tasks)}.",
            )
        return task
    if len(run.record.tasks) != 1:
        raise ConfigError(
            f"Run {run.record.id} has several tasks "
            f"({', '.join(run.record.tasks)}): say which the items belong to.",
            hint="Pass task=NAME.",
        )
    return run.record.tasks[0]


def _per_item(
    run: StoredRun, task: str, metric: str | None
) -> tuple[str, dict[str, float], dict[str, str]]:
    """The metric, each item's score (the mean over epochs of its scored samples) and the
    cluster of the items that have one."""
    samples = sorted(
        (s for s in run.samples if s.task == task), key=lambda s: (s.position, s.epoch)
    )
    scored = [s for s in samples if s.error is None and s.scores]
    if metric is None:
        if not scored:
            raise ConfigError(f"Run {run.record.id} has no scored sample of {task!r}.")
        metric = next(iter(scored[0].scores or {}))
    values: dict[str, list[float]] = defaultdict(list)
    clusters: dict[str, str] = {}
    for s in scored:
        v = (s.scores or {}).get(metric)
        if v is not None and not np.isnan(v):
            values[s.sample_id].append(float(v))
            if s.cluster:
                clusters[s.sample_id] = s.cluster
    if not values:
        raise ConfigError(
            f"Run {run.record.id} has no {metric!r} score for {task!r}.",
            hint="Pass metric=NAME with a metric the run recorded.",
        )
    return metric, {k: float(np.mean(v)) for k, v in values.items()}, clusters


def _reading(diff: Estimate, clean: Estimate, over: Estimate) -> str:
    if over.is_empty or clean.is_empty:
        return (
            "One of the groups is empty, so the scores cannot be compared; the score on "
            "clean items is the figure least affected by this corpus."
        )
    gap = f"{diff.value:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}]"
    if diff.low > 0:
        return (
            f"Overlapping items score higher than clean ones ({gap}): consistent with "
            "contamination inflating the score, though overlapping items may also be "
            "easier (famous or often-quoted questions). Prefer the clean-item score."
        )
    if diff.high < 0:
        return (
            f"Overlapping items score lower than clean ones ({gap}): no sign that the "
            "overlap inflates the score; the groups may differ in difficulty."
        )
    return (
        f"No difference detected between overlapping and clean items ({gap}). A wide "
        "interval is not evidence of no effect."
    )


def score_split(
    run: StoredRun,
    items: Sequence[_Item],
    *,
    task: str | None,
    metric: str | None,
    confidence: float,
    seed: int,
) -> ScoreSplit:
    """Score on clean against overlapping items (too-short items are in neither group)."""
    name = _task(run, task)
    metric, per_item, clusters = _per_item(run, name, metric)
    groups: dict[str, list[float]] = {"clean": [], "overlapping": []}
    labels: dict[str, list[str]] = {"clean": [], "overlapping": []}
    unscored = 0
    for it in items:
        if it.status not in groups:
            continue
        if it.id in per_item:
            groups[it.status].append(per_item[it.id])
            labels[it.status].append(clusters.get(it.id, f"__item:{it.id}"))
        else:
            unscored += 1
    rng = np.random.default_rng(seed)
    clean, over = (
        summarize(
            groups[g], clusters=labels[g] if clusters else None, rng=rng, confidence=confidence
        )
        for g in ("clean", "overlapping")
    )
    diff = unpaired_difference(
        groups["overlapping"], groups["clean"], rng=rng, confidence=confidence
    )
    reading = _reading(diff, clean, over)
    if clusters:
        reading += (
            " Items share clusters (several questions on one passage): the "
            "difference's interval treats them as independent and is too narrow."
        )
    return ScoreSplit(
        run_id=run.record.id,
        model=run.record.model_name,
        task=name,
        metric=metric,
        n_scored=len(groups["clean"]) + len(groups["overlapping"]),
        n_unscored=unscored,
        clean=clean,
        overlapping=over,
        difference=diff,
        reading=reading,
    )
