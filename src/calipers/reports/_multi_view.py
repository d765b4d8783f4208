"""What a report over several runs shows, computed from the stored runs (pure: no markup).

Per task: each run's primary score (for the forest plot), the categories across runs worst
first, each run's per-item score distribution, and the items every run got wrong. Then the
methodology cards side by side with the fields that differ marked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from calipers.reports._columns import failing_mask, failing_rule_of, scored_mask
from calipers.reports._svg import Bin
from calipers.reports._view import (
    MetricView,
    methodology_rows,
    metric_view,
    worst_categories,
)
from calipers.store import SampleColumns, SampleRecord
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.analysis import StoredRun

__all__ = [
    "MAX_FAILED",
    "AllFail",
    "CardRow",
    "CategoryRow",
    "Distribution",
    "FailedItem",
    "ScoreEntry",
    "all_failing",
    "card_rows",
    "category_rows",
    "distributions",
    "primary_metric",
    "score_entries",
    "task_names",
]

N_BINS = 10
MAX_FAILED = 50
"""Most items-every-run-fails listed per task; the count is always given in full."""


def task_names(runs: Sequence[StoredRun]) -> list[str]:
    """Every task of any run, in the order first seen."""
    return list(dict.fromkeys(t for r in runs for t in r.record.tasks))


def primary_metric(runs: Sequence[StoredRun], task: str) -> str | None:
    """The primary metric of the first run that has one for ``task``."""
    return next(
        (p for r in runs if (ts := r.record.task_summary(task)) and (p := ts.primary)), None
    )


@dataclass(frozen=True, slots=True)
class ScoreEntry:
    run: StoredRun
    estimate: Estimate
    n_samples: int
    n_errors: int


def score_entries(runs: Sequence[StoredRun], task: str, metric: str) -> list[ScoreEntry]:
    """Each run's estimate of ``metric`` on ``task`` (n/a when it has none)."""
    out = []
    for r in runs:
        s = r.record.task_summary(task)
        if s is None:  # not summarized: counts from the stored samples
            cols = r.columns(task)
            est, n, n_err = Estimate.empty(), len(cols), int((~cols.ok).sum())
        else:
            est, n, n_err = s.metrics.get(metric) or Estimate.empty(), s.n_samples, s.n_errors
        out.append(ScoreEntry(r, est, n, n_err))
    return out


# -- categories ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CategoryRow:
    """A category with each run's estimate (``None``: the run has no such category)."""

    name: str
    cells: tuple[MetricView | None, ...]
    n: tuple[int, ...]


def _category_key(row: CategoryRow) -> tuple[bool, float, str]:
    values = [c.estimate.value for c in row.cells if c is not None and not c.estimate.is_empty]
    return (not values, sum(values) / len(values) if values else 0.0, row.name)


def category_rows(runs: Sequence[StoredRun], task: str, metric: str) -> list[CategoryRow]:
    """Every category of ``task`` across runs, worst first by the mean of the runs' values
    (categories no run scored come last)."""
    per_run = []
    for r in runs:
        s = r.record.task_summary(task)
        per_run.append({c: (e, n) for c, e, n in worst_categories(s, k=10**9, metric=metric)})
    names = list(dict.fromkeys(c for d in per_run for c in d))
    rows = [
        CategoryRow(
            c,
            tuple(metric_view(metric, d[c][0]) if c in d else None for d in per_run),
            tuple(d[c][1] if c in d else 0 for d in per_run),
        )
        for c in names
    ]
    return sorted(rows, key=_category_key)


# -- per-item distribution ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Distribution:
    """How a run's items scored: for binary scores right and wrong counts, otherwise a
    histogram; errors and unscorable items (NaN) are counted apart in both cases."""

    n: int
    errors: int
    unscored: int
    binary: bool
    right: int
    wrong: int
    bins: tuple[Bin, ...]


def _value(s: SampleRecord, metric: str) -> float | None:
    v = (s.scores or {}).get(metric) if s.error is None else None
    return None if v is None or math.isnan(v) else float(v)


def _edges(values: Sequence[float]) -> list[float]:
    if all(0.0 <= v <= 1.0 for v in values):
        return [i / N_BINS for i in range(N_BINS + 1)]
    lo, hi = min(values), max(values)
    if lo == hi:
        return [lo, hi]
    return [lo + (hi - lo) * i / N_BINS for i in range(N_BINS + 1)]


def _histogram(values: Sequence[float], edges: Sequence[float]) -> tuple[Bin, ...]:
    counts = [0] * (len(edges) - 1)
    width = edges[-1] - edges[0]
    for v in values:
        i = int((v - edges[0]) / width * len(counts)) if width > 0 else 0
        counts[min(max(i, 0), len(counts) - 1)] += 1
    return tuple(Bin(edges[i], edges[i + 1], c) for i, c in enumerate(counts))


def distributions(runs: Sequence[StoredRun], task: str, metric: str) -> list[Distribution]:
    """One distribution per run; all runs of a task use the same kind and the same bins."""
    cols = [r.columns(task) for r in runs]  # the scores' columns, not the records
    values = [
        c.scores[metric][scored_mask(c, metric)] if metric in c.scores else np.array([])
        for c in cols
    ]
    every = np.concatenate(values) if values else np.array([])
    binary = bool(np.isin(every, (0.0, 1.0)).all())
    edges = _edges(every.tolist()) if every.size else [0.0, 1.0]
    out = []
    for c, vs in zip(cols, values, strict=True):
        errors = int((~c.ok).sum())
        out.append(
            Distribution(
                n=len(c),
                errors=errors,
                unscored=len(c) - errors - int(vs.size),
                binary=binary,
                right=int((vs == 1.0).sum()),
                wrong=int((vs == 0.0).sum()),
                bins=() if binary else _histogram(vs.tolist(), edges),
            )
        )
    return out


# -- items every run fails ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FailedItem:
    sample_id: str
    epoch: int
    position: int
    category: str | None
    target: str | None
    answers: tuple[str | None, ...]  # each run's parsed answer, in run order


@dataclass(frozen=True, slots=True)
class AllFail:
    items: tuple[FailedItem, ...]  # the first MAX_FAILED, in the first run's position order
    n_common: int  # items scored in every run
    n_errored_elsewhere: int  # wrong wherever scored, but errored in some run: not counted
    rule: str
    n_items: int = -1  # how many items fail in every run (-1: len(items))

    @property
    def n_failing(self) -> int:
        return len(self.items) if self.n_items < 0 else self.n_items


def _keys(cols: Sequence[SampleColumns]) -> list[npt.NDArray[np.int64]]:
    """Each row's item key (``sample_id`` and epoch) as one integer, the same integer for the
    same item in every run (for set operations on integers, not strings)."""
    codes: dict[str, int] = {}
    code = codes.setdefault
    ids = [np.array([code(s, len(codes)) for s in c.sample_id], dtype=np.int64) for c in cols]
    span = 1 + max((int(c.epoch.max()) for c in cols if len(c)), default=0)
    return [i * span + c.epoch for i, c in zip(ids, cols, strict=True)]


def all_failing(runs: Sequence[StoredRun], task: str, metric: str) -> AllFail:
    """Items scored wrong (by the single-run report's rule) in every run. An item that
    errored in any run was not scored wrong there, so it is not one of them. Computed on
    the runs' columns; only the first ``MAX_FAILED`` items' records are read."""
    cols = [r.columns(task) for r in runs]
    keys = _keys(cols)
    failing = [k[failing_mask(c, metric)] for k, c in zip(keys, cols, strict=True)]
    scored = [k[scored_mask(c, metric)] for k, c in zip(keys, cols, strict=True)]
    errored = [k[~c.ok] for k, c in zip(keys, cols, strict=True)]
    both = reduce(np.intersect1d, failing)
    union = reduce(np.union1d, failing)
    in_error = reduce(np.logical_or, [np.isin(union, e) for e in errored])
    failed_where_scored = reduce(
        np.logical_and,
        [~np.isin(union, sc) | np.isin(union, f) for f, sc in zip(failing, scored, strict=True)],
    )
    n_elsewhere = int((in_error & failed_where_scored).sum())
    c0 = cols[0]
    rows = np.flatnonzero(np.isin(keys[0], both))
    rows = rows[np.lexsort((c0.sample_id[rows].astype(str), c0.epoch[rows], c0.position[rows]))]
    shown = [(str(c0.sample_id[i]), int(c0.epoch[i])) for i in rows[:MAX_FAILED]]
    records = [{(s.sample_id, s.epoch): s for s in r.records_at(task, shown)} for r in runs]
    items = tuple(
        FailedItem(
            k[0],
            k[1],
            records[0][k].position,
            records[0][k].category,
            records[0][k].target,
            tuple(d[k].answer if k in d else None for d in records),
        )
        for k in shown
        if k in records[0]
    )
    rule = failing_rule_of(c0, metric) if scored[0].size else f"{metric} < 1"
    n_common = int(reduce(np.intersect1d, scored).size)
    return AllFail(items, n_common, n_elsewhere, rule, n_items=int(both.size))


# -- methodology cards --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CardRow:
    label: str
    values: tuple[str, ...]  # one per run; "—" where a run has no such field
    differs: bool


def card_rows(runs: Sequence[StoredRun]) -> list[CardRow]:
    """The runs' methodology cards as one table, a column per run."""
    cards = [dict(methodology_rows(r.record.methodology)) for r in runs]
    labels = list(dict.fromkeys(k for c in cards for k in c))
    rows = []
    for label in labels:
        values = tuple(c.get(label, "—") for c in cards)
        rows.append(CardRow(label, values, len(set(values)) > 1))
    return rows
