"""Pairing two runs item by item, and refusing to pair runs that measured different things."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.runner import Methodology, comparable_hash
from calipers.store import RunRecord, SampleColumns, SampleRecord, Store

__all__ = ["Paired", "StoredRun", "methodology_differences", "pair"]

# Fields of a task's methodology that may differ between two comparable runs (the data hash
# already says whether the items are the same).
_MAY_DIFFER = {"seed", "limit", "n_items", "chat_template_hash"}


@dataclass(frozen=True)
class StoredRun:
    """A stored run and its samples. Given a ``store`` instead of the records, the samples
    are read only when something asks for whole records (:attr:`samples`); scores and
    pairings read only the columns they need (:meth:`columns`), so a run of a million
    samples is compared without loading them."""

    record: RunRecord
    given: tuple[SampleRecord, ...] | None = None
    store: Store | None = field(default=None, compare=False, repr=False)

    @functools.cached_property
    def samples(self) -> tuple[SampleRecord, ...]:
        if self.given is not None:
            return self.given
        assert self.store is not None, "a StoredRun needs its samples or its store"
        return tuple(self.store.get_samples(self.record.id))

    def records_at(self, task: str, keys: Sequence[tuple[str, int]]) -> list[SampleRecord]:
        """The records of ``task`` at ``(sample_id, epoch)`` keys, in the order of ``keys``:
        read from the store (only those), or picked from the records."""
        if self.given is None and self.store is not None and "samples" not in self.__dict__:
            return self.store.get_samples_at(self.record.id, task, keys)
        mine = {(s.sample_id, s.epoch): s for s in self.samples if s.task == task}
        return [mine[k] for k in keys if k in mine]

    def columns(self, task: str) -> SampleColumns:
        """The samples of ``task`` as columns: from the store when there is one (the records
        are not read), else from the records."""
        cache: dict[str, SampleColumns] = self.__dict__.setdefault("_columns", {})
        if task not in cache:
            if self.given is None and self.store is not None:
                cache[task] = self.store.sample_columns(self.record.id, task)
            else:
                cache[task] = SampleColumns.from_records(task, self.samples)
        return cache[task]

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


@dataclass(frozen=True)
class _Items:
    """One run's scored items of a task: sorted ids, each item's cluster (from its first
    scored row) and score (the mean over its scored epochs)."""

    ids: npt.NDArray[np.str_]
    clusters: npt.NDArray[np.object_]
    means: npt.NDArray[np.float64]


def _item_scores(cols: SampleColumns, metric: str) -> _Items:
    """Errors and NaN are not scored. An item of one epoch scores its value; of several,
    their mean (``np.mean``, as it always was computed, so the figures are the same)."""
    values = cols.scores.get(metric)
    if values is None:
        return _Items(np.array([], dtype=str), np.array([], dtype=object), np.array([]))
    rows = np.flatnonzero(cols.ok & cols.has_score[metric] & ~np.isnan(values))
    v = values[rows]
    ids, first, inv = np.unique(
        cols.sample_id[rows].astype(str), return_index=True, return_inverse=True
    )
    counts = np.bincount(inv, minlength=ids.size)
    # one epoch: the value; two: (a + b) / 2, bit for bit np.mean's; more: np.mean per item
    means = np.where(counts == 1, v[first], np.bincount(inv, weights=v) / np.maximum(counts, 1))
    many = np.flatnonzero(counts > 2)
    if many.size:
        grouped = np.argsort(inv, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        for j in many:
            means[j] = float(np.mean(v[grouped[starts[j] : starts[j] + counts[j]]]))
    return _Items(ids, cols.cluster[rows[first]], means)


def pair(a: StoredRun, b: StoredRun, task: str, metric: str) -> Paired:
    """Inner join on item id of the items both runs scored (errors and NaN excluded, and
    counted). With several epochs per item, an item's score is its mean over epochs. Items
    are in run A's order (the position and epoch of each item's last row in A)."""
    ca, cb = a.columns(task), b.columns(task)
    ia, ib = _item_scores(ca, metric), _item_scores(cb, metric)
    common, xa, xb = np.intersect1d(ia.ids, ib.ids, assume_unique=True, return_indices=True)
    every = ca.sample_id.astype(str)
    uniq, last_rev = np.unique(every[::-1], return_index=True)
    last = (every.size - 1 - last_rev)[np.searchsorted(uniq, common)]
    order = np.lexsort((ca.epoch[last], ca.position[last]))
    ids = [str(i) for i in common[order]]
    raw = ia.clusters[xa][order]
    clusters = tuple(c or f"__item:{i}" for c, i in zip(raw, ids, strict=True))
    has_clusters = any(bool(c) for c in raw)
    return Paired(
        task=task,
        metric=metric,
        ids=tuple(ids),
        a=ia.means[xa][order].astype(np.float64),
        b=ib.means[xb][order].astype(np.float64),
        clusters=clusters if has_clusters else None,
        only_a=int(ia.ids.size - common.size),
        only_b=int(ib.ids.size - common.size),
        errors_a=int((~ca.ok).sum()),
        errors_b=int((~cb.ok).sum()),
    )


def last_rows(ids: npt.NDArray[np.object_], keep: npt.NDArray[np.bool_]) -> tuple[Any, Any]:
    """The distinct ids among the ``keep`` rows, sorted (a numpy string array), and for each
    the index of its last kept row (a later epoch replaces an earlier one, as in a dict
    filled in row order)."""
    rows = np.flatnonzero(keep)[::-1]
    uniq, first = np.unique(ids[rows].astype(str), return_index=True)
    return uniq, rows[first]


def common_ids(per_run: Sequence[tuple[Any, Any]]) -> Any:
    """The ids every run has (sorted), given each run's :func:`last_rows`."""
    common = per_run[0][0]
    for uniq, _rows in per_run[1:]:
        common = np.intersect1d(common, uniq, assume_unique=True)
    return common


def rows_of(common: Any, uniq: Any, rows: Any) -> npt.NDArray[np.intp]:
    """The row index of each id of ``common`` in a run whose :func:`last_rows` are
    ``(uniq, rows)`` (every id of ``common`` is among ``uniq``)."""
    return np.asarray(rows[np.searchsorted(uniq, common)], dtype=np.intp)
