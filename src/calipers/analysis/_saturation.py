"""Item statistics and saturation: does a task still separate the models compared?

Over stored runs of one task (each run a "taker"), on the items every run scored:

- per item, *difficulty* (share of runs right) and *discrimination* (corrected item-rest
  correlation: the item's score against each run's total on the other items; NaN when
  undefined, e.g. every run right);
- the share of items every run gets right, wrong, or scores the same, with Wilson intervals;
- a verdict (:func:`saturation`) from the rank intervals of :func:`calipers.stats.rank_models`,
  the share of items answered the same by every model, and the headroom left above the best
  score's interval. Its ``flags`` are short strings for a leaderboard entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_rng
from calipers.analysis._align import (
    StoredRun,
    common_ids,
    last_rows,
    methodology_differences,
    rows_of,
)
from calipers.errors import ConfigError, DataError
from calipers.runner import comparable_hash
from calipers.stats import (
    Leaderboard,
    is_binary,
    item_difficulty,
    item_rest_correlations,
    rank_models,
    uniform_items,
    wilson,
)
from calipers.types import Estimate

__all__ = [
    "ItemRow",
    "ItemStats",
    "SaturationReport",
    "item_statistics",
    "saturation",
    "task_metric",
]


class ItemRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    category: str | None
    difficulty: float  # mean score over the runs (share right for 0/1 scores)
    discrimination: float | None  # corrected item-rest correlation; None when undefined
    n_right: int | None  # runs scoring 1 (0/1 scores only)


class ItemStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    metric: str
    runs: list[str]
    n_runs: int
    n_items: int
    binary: bool
    items: list[ItemRow]
    all_right: Estimate
    all_wrong: Estimate
    same: Estimate
    n_discrimination_defined: int
    n_negative_discrimination: int
    median_discrimination: float | None
    notes: list[str]

    def least_discriminating(self, k: int = 10) -> list[ItemRow]:
        """The ``k`` items with the lowest defined discrimination (negative first)."""
        defined = [r for r in self.items if r.discrimination is not None]
        return sorted(defined, key=lambda r: (r.discrimination, r.id))[:k]


class SaturationReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    metric: str
    n_items: int
    n_models: int
    best_model: str
    best: Estimate
    headroom: float | None  # 1 - upper end of the best score's interval ([0, 1] metrics)
    top_tied: list[str]
    n_tie_groups: int
    separates: bool
    saturated: bool
    flags: list[str]
    items: ItemStats


def task_metric(runs: Sequence[StoredRun], task: str, metric: str | None) -> str:
    """``metric``, or the primary metric the first run recorded for ``task``; checked to be
    scored in every run."""
    if not runs:
        raise ConfigError("No runs given.", hint="Pass the ids of stored runs (calipers runs).")
    for r in runs:
        if task not in r.record.tasks:
            raise ConfigError(
                f"Run {r.record.id} did not evaluate task {task!r}.",
                hint=f"Its tasks: {', '.join(r.record.tasks)}.",
            )
    if metric is None:
        ts = runs[0].record.task_summary(task)
        metric = ts.primary if ts else None
        if not metric:
            raise ConfigError(
                f"Run {runs[0].record.id} has no summary for task {task!r}.",
                hint="Finish or resume the run first (calipers resume).",
            )
    for r in runs:
        present = r.columns(task).has_score.get(metric)
        if present is None or not present.any():
            raise ConfigError(f"Run {r.record.id} has no {metric!r} score on task {task!r}.")
    return str(metric)


def common_matrix(
    runs: Sequence[StoredRun], task: str, metric: str
) -> tuple[list[str], list[str | None], npt.NDArray[np.float64]]:
    """Item ids, categories and the (runs x items) score matrix on the items every run scored
    (errors and NaN excluded), in the first run's item order."""
    cols = [r.columns(task) for r in runs]
    per_run = []
    for c in cols:
        v = c.scores.get(metric)
        keep = np.zeros(len(c), dtype=bool) if v is None else c.ok & c.has_score[metric]
        if v is not None:
            keep &= ~np.isnan(v)
        per_run.append(last_rows(c.sample_id, keep))
    common = common_ids(per_run)
    if not common.size:
        return [], [], np.empty((len(runs), 0), dtype=np.float64)
    c0, first = cols[0], rows_of(common, *per_run[0])
    order = np.lexsort((common, c0.epoch[first], c0.position[first]))
    common, first = common[order], first[order]
    x = np.vstack(
        [c.scores[metric][rows_of(common, *lr)] for c, lr in zip(cols, per_run, strict=True)]
    ).astype(np.float64)
    return common.tolist(), c0.category[first].tolist(), x


def _estimates(x: npt.NDArray[np.float64], c: float) -> dict[str, Estimate]:
    right, wrong, same = uniform_items(x)
    n = x.shape[1]
    return {
        k: wilson(int(m.sum()), n, c)
        for k, m in (("all_right", right), ("all_wrong", wrong), ("same", same))
    }


def item_statistics(
    runs: Sequence[StoredRun],
    task: str,
    metric: str | None = None,
    *,
    confidence: float = 0.95,
) -> ItemStats:
    """Difficulty and discrimination of every item scored by all ``runs``, and the shares of
    items every run gets right, wrong, or scores the same."""
    metric = task_metric(runs, task, metric)
    return _item_stats(runs, task, metric, common_matrix(runs, task, metric), confidence)


def _item_stats(
    runs: Sequence[StoredRun],
    task: str,
    metric: str,
    matrix: tuple[list[str], list[str | None], npt.NDArray[np.float64]],
    confidence: float,
) -> ItemStats:
    ids, cats, x = matrix
    if not ids:
        raise DataError(
            f"No item of task {task!r} was scored ({metric}) by every run.",
            hint="Choose runs over the same items (same data and --limit).",
        )
    binary = is_binary(x)
    diff, disc = item_difficulty(x), item_rest_correlations(x)
    rows = [
        ItemRow(
            id=i,
            category=cat,
            difficulty=float(diff[j]),
            discrimination=None if np.isnan(disc[j]) else float(disc[j]),
            n_right=int(x[:, j].sum()) if binary else None,
        )
        for j, (i, cat) in enumerate(zip(ids, cats, strict=True))
    ]
    defined = disc[~np.isnan(disc)]
    notes = []
    if len(runs) < 5:
        notes.append(
            f"Discrimination is a correlation over only {len(runs)} runs: read it as "
            "a rough sign, not a measurement."
        )
    keys = [r.methodology.model.key() for r in runs]
    if len(set(keys)) < len(keys):
        notes.append("Some model has several runs here; each run counts as a separate taker.")
    return ItemStats(
        task=task,
        metric=metric,
        runs=[r.label for r in runs],
        n_runs=len(runs),
        n_items=len(ids),
        binary=binary,
        items=rows,
        **_estimates(x, confidence),
        n_discrimination_defined=int(defined.size),
        n_negative_discrimination=int((defined < 0).sum()),
        median_discrimination=float(np.median(defined)) if defined.size else None,
        notes=notes,
    )


def _check_comparable(runs: Sequence[StoredRun], task: str) -> None:
    base = comparable_hash(runs[0].methodology, task)
    for r in runs[1:]:
        if comparable_hash(r.methodology, task) != base:
            first = (methodology_differences(runs[0], r, task) or ["methodology"])[0]
            first = first if len(first) <= 120 else first[:119] + "…"
            raise ConfigError(
                f"Runs {runs[0].record.id} and {r.record.id} measured {task!r} differently "
                f"({first}); their scores cannot be ranked together.",
                hint="Pick runs with the same methodology (calipers leaderboard groups them).",
            )


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _flags(
    rep: dict[str, Any], at_ceiling: bool, shares: dict[str, float], thresholds: tuple[float, float]
) -> tuple[bool, list[str]]:
    """Saturated or not, and the flags in words (see :func:`saturation`)."""
    same_min, wrong_min = thresholds
    top, n_models = rep["top_tied"], rep["n_models"]
    if n_models < 2:
        return False, []
    ceiling = f"best score's interval reaches {100 * rep['best'].high:.1f}%" if at_ceiling else None
    uniform = (
        f"{_pct(shares['same'])} of items answered the same by every model"
        if shares["same"] >= same_min
        else None
    )
    saturated = len(top) >= 2 and (at_ceiling or shares["all_right"] >= same_min)
    flags = []
    if saturated:
        parts = [f"top {len(top)} models within noise", ceiling, uniform]
        flags.append("saturated: " + "; ".join(p for p in parts if p))
    else:
        if not rep["separates"]:
            flags.append(
                f"no separation: all {n_models} models within noise on {rep['n_items']} items"
            )
        if ceiling:
            flags.append(f"near ceiling: {ceiling}")
        if uniform:
            flags.append(uniform)
    if shares["all_wrong"] >= wrong_min:
        flags.append(
            f"{_pct(shares['all_wrong'])} of items every model gets wrong "
            "(check labels: calipers audit)"
        )
    return saturated, flags


def saturation(
    runs: Sequence[StoredRun],
    task: str,
    *,
    metric: str | None = None,
    seed: int = 0,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    ranking: Leaderboard | None = None,
    headroom_margin: float = 0.05,
    same_share: float = 0.5,
    wrong_share: float = 0.25,
) -> SaturationReport:
    """Does ``task`` still separate the models of ``runs`` (one run per model, same
    methodology)?

    Saturated: the top tie group holds 2+ models (they cannot be told apart at
    ``confidence``) *and* either the best score's interval comes within ``headroom_margin``
    of 1 or at least ``same_share`` of the items are right for every model. Otherwise the
    flags say: no separation at all (one tie group), near the ceiling, ``same_share`` or more
    of the items scored the same by every model; and, in any case, ``wrong_share`` or more of
    the items wrong for every model (a floor, or bad labels). ``ranking`` reuses a
    leaderboard's :func:`rank_models` result for these runs (labels ``StoredRun.label``) on
    the same items; otherwise it is computed with the leaderboard's seeding.
    """
    metric = task_metric(runs, task, metric)
    _check_comparable(runs, task)
    matrix = common_matrix(runs, task, metric)
    stats = _item_stats(runs, task, metric, matrix, confidence)
    rep = _verdict(
        runs,
        task,
        metric,
        matrix[2],
        {"same": stats.same, "all_right": stats.all_right, "all_wrong": stats.all_wrong},
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
        ranking=ranking,
        thresholds=(headroom_margin, same_share, wrong_share),
    )
    return SaturationReport(**rep, items=stats)


def saturation_flags(
    runs: Sequence[StoredRun], task: str, *, metric: str, ranking: Leaderboard
) -> list[str]:
    """:func:`saturation`'s flags with its default thresholds, from the score matrix alone
    (no per-item rows are built: what a leaderboard of a million items needs)."""
    metric = task_metric(runs, task, metric)
    _check_comparable(runs, task)
    ids, _cats, x = common_matrix(runs, task, metric)
    if not ids:
        raise DataError(f"No item of task {task!r} was scored ({metric}) by every run.")
    rep = _verdict(
        runs, task, metric, x, _estimates(x, 0.95), 0, 1000, 0.95, ranking, (0.05, 0.5, 0.25)
    )
    return list(rep["flags"])


def _verdict(
    runs: Sequence[StoredRun],
    task: str,
    metric: str,
    x: npt.NDArray[np.float64],
    ests: dict[str, Estimate],
    seed: int,
    n_resamples: int,
    confidence: float,
    ranking: Leaderboard | None,
    thresholds: tuple[float, float, float],
) -> dict[str, Any]:
    """The fields of a :class:`SaturationReport` but its items."""
    headroom_margin, same_share, wrong_share = thresholds
    if ranking is None:
        rng = derived_rng(seed, task)
        ranking = rank_models(
            {r.label: x[j] for j, r in enumerate(runs)},
            rng=rng,
            n_resamples=n_resamples,
            confidence=confidence,
        )
    live = [m for m in ranking.models if not m.score.is_empty]
    best = live[0] if live else ranking.models[0]
    unit = bool(np.all((x >= 0.0) & (x <= 1.0)))
    headroom = 1.0 - best.score.high if unit and not best.score.is_empty else None
    rep: dict[str, Any] = dict(
        task=task,
        metric=metric,
        n_items=int(x.shape[1]),
        n_models=len(runs),
        best_model=best.name,
        best=best.score,
        headroom=headroom,
        top_tied=[m.name for m in live if m.tie_group == 1],
        n_tie_groups=len({m.tie_group for m in live}),
    )
    rep["separates"] = rep["n_tie_groups"] >= 2
    shares = {k: 0.0 if e.is_empty else e.value for k, e in ests.items()}  # no item: 0
    at_ceiling = headroom is not None and headroom <= headroom_margin
    rep["saturated"], rep["flags"] = _flags(rep, at_ceiling, shares, (same_share, wrong_share))
    return rep
