"""Pairing two runs item by item, and refusing to pair runs that measured different things."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.runner import Methodology, comparable_hash
from calipers.store import RunRecord, SampleRecord

__all__ = ["Paired", "StoredRun", "methodology_differences", "pair"]

# Fields of a task's methodology that may differ between two comparable runs (the data hash
# already says whether the items are the same).
_MAY_DIFFER = {"seed", "limit", "n_items", "chat_template_hash"}


@dataclass(frozen=True)
class StoredRun:
    record: RunRecord
    samples: tuple[SampleRecord, ...]

    @property
    def label(self) -> str:
        return f"{self.record.model_name} ({self.record.id})"

    @property
    def methodology(self) -> Methodology:
        return Methodology.model_validate(self.record.methodology)


@dataclass(frozen=True)
class Paired:
    """Per-item scores of two runs on the items both scored, in item order."""

    task: str
    metric: str
    ids: tuple[str, ...]
    a: npt.NDArray[np.float64]
    b: npt.NDArray[np.float64]
    clusters: tuple[str, ...] | None
    only_a: int  # items scored in A but not in B (missing or errored in B)
    only_b: int
    errors_a: int
    errors_b: int


def methodology_differences(a: StoredRun, b: StoredRun, task: str) -> list[str]:
    """What differs between two runs' methodology for ``task`` (empty: comparable)."""
    ma, mb = a.methodology.tasks.get(task), b.methodology.tasks.get(task)
    if ma is None or mb is None:
        return [f"task {task!r} is not in both runs"]
    if comparable_hash(a.methodology, task) == comparable_hash(b.methodology, task):
        return []
    da, db = ma.model_dump(mode="json"), mb.model_dump(mode="json")
    return [
        f"{task}: {k} is {da[k]!r} in {a.record.id} but {db.get(k)!r} in {b.record.id}"
        for k in da
        if da[k] != db.get(k) and k not in _MAY_DIFFER
    ]


def _scored(samples: Sequence[SampleRecord], task: str, metric: str) -> dict[str, SampleRecord]:
    """Each item's first scored record (see :func:`_item_means` for its value)."""
    out: dict[str, SampleRecord] = {}
    for s in samples:
        if (
            s.task == task
            and s.error is None
            and s.scores
            and metric in s.scores
            and not np.isnan(s.scores[metric])
        ):
            out.setdefault(s.sample_id, s)
    return out


def _item_means(samples: Sequence[SampleRecord], task: str, metric: str) -> dict[str, float]:
    """Each item's score: the mean over its scored epochs (one epoch: its score)."""
    sums: dict[str, list[float]] = {}
    for s in samples:
        if (
            s.task == task
            and s.error is None
            and s.scores
            and metric in s.scores
            and not np.isnan(s.scores[metric])
        ):
            sums.setdefault(s.sample_id, []).append(s.scores[metric])
    return {i: float(np.mean(v)) for i, v in sums.items()}


def _values(means: dict[str, float], ids: Sequence[str]) -> npt.NDArray[np.float64]:
    return np.array([means[i] for i in ids], dtype=np.float64)


def pair(a: StoredRun, b: StoredRun, task: str, metric: str) -> Paired:
    """Inner join on item id of the items both runs scored (errors and NaN excluded, and
    counted). With several epochs per item, an item's score is its mean over epochs."""
    sa, sb = _scored(a.samples, task, metric), _scored(b.samples, task, metric)
    ma, mb = _item_means(a.samples, task, metric), _item_means(b.samples, task, metric)
    order = {s.sample_id: (s.position, s.epoch) for s in a.samples if s.task == task}
    ids = sorted(set(sa) & set(sb), key=lambda i: order.get(i, (0, 0)))
    clusters = tuple(sa[i].cluster or f"__item:{i}" for i in ids)
    has_clusters = any(sa[i].cluster for i in ids)
    return Paired(
        task=task,
        metric=metric,
        ids=tuple(ids),
        a=_values(ma, ids),
        b=_values(mb, ids),
        clusters=clusters if has_clusters else None,
        only_a=len(set(sa) - set(sb)),
        only_b=len(set(sb) - set(sa)),
        errors_a=sum(s.error is not None for s in a.samples if s.task == task),
        errors_b=sum(s.error is not None for s in b.samples if s.task == task),
    )
