"""What a report over several runs shows, computed from the stored runs (pure: no markup).

Per task: each run's primary score (for the forest plot), the categories across runs worst
first, each run's per-item score distribution, and the items every run got wrong. Then the
methodology cards side by side with the fields that differ marked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calipers.reports._svg import Bin
from calipers.reports._view import (
    MetricView,
    failing_items,
    failing_rule,
    methodology_rows,
    metric_view,
    worst_categories,
)
from calipers.store import SampleRecord
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
        mine = [x for x in r.samples if x.task == task]
        if s is None:  # not summarized: counts from the stored samples
            est, n, n_err = Estimate.empty(), len(mine), sum(x.error is not None for x in mine)
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
    mine = [[s for s in r.samples if s.task == task] for r in runs]
    values = [[v for s in ss if (v := _value(s, metric)) is not None] for ss in mine]
    every = [v for vs in values for v in vs]
    binary = all(v in (0.0, 1.0) for v in every)
    edges = _edges(every) if every else [0.0, 1.0]
    out = []
    for ss, vs in zip(mine, values, strict=True):
        errors = sum(s.error is not None for s in ss)
        out.append(
            Distribution(
                n=len(ss),
                errors=errors,
                unscored=len(ss) - errors - len(vs),
                binary=binary,
                right=sum(v == 1.0 for v in vs),
                wrong=sum(v == 0.0 for v in vs),
                bins=() if binary else _histogram(vs, edges),
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
    items: tuple[FailedItem, ...]  # in the first run's position order
    n_common: int  # items scored in every run
    n_errored_elsewhere: int  # wrong wherever scored, but errored in some run: not counted
    rule: str


def _key(s: SampleRecord) -> tuple[str, int]:
    return (s.sample_id, s.epoch)


def all_failing(runs: Sequence[StoredRun], task: str, metric: str) -> AllFail:
    """Items scored wrong (by the single-run report's rule) in every run. An item that
    errored in any run was not scored wrong there, so it is not one of them."""
    by_run = [{_key(s): s for s in r.samples if s.task == task} for r in runs]
    failing = [{_key(s) for s in failing_items(r.samples, task, metric, k=10**9)} for r in runs]
    scored = [{k for k, s in d.items() if _value(s, metric) is not None} for d in by_run]
    errored = [{k for k, s in d.items() if s.error is not None} for d in by_run]
    both = set.intersection(*failing)
    elsewhere = {
        k
        for k in set.union(*failing)
        if any(k in e for e in errored)
        and all(k in f for f, sc in zip(failing, scored, strict=True) if k in sc)
    }
    first = by_run[0]
    items = tuple(
        FailedItem(
            k[0],
            k[1],
            first[k].position,
            first[k].category,
            first[k].target,
            tuple(d[k].answer for d in by_run),
        )
        for k in sorted(both, key=lambda k: (first[k].position, k[1], k[0]))
    )
    rule = failing_rule(runs[0].samples, task, metric) if scored[0] else f"{metric} < 1"
    return AllFail(items, len(set.intersection(*scored)), len(elsewhere), rule)


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
