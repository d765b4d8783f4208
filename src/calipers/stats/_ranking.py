"""Leaderboards with rank intervals: a paired bootstrap over items, shared by every model.

See ``docs/leaderboard-statistics.md`` for what a rank interval is and how tie groups and
saturation are decided.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.stats._bootstrap import as_values
from calipers.stats._proportion import check_confidence, wilson
from calipers.stats._summarize import is_binary
from calipers.types import Estimate

__all__ = ["Leaderboard", "RankedModel", "rank_models"]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Each chunk of resamples builds arrays of about this many cells (memory stays ~30 MB).
_CHUNK_CELLS = 2_000_000
# A best score whose interval comes this close to the ideal end of [0, 1] is at the ceiling.
_CEILING_MARGIN = 0.02


@dataclass(frozen=True, slots=True)
class RankedModel:
    """One row of a :class:`Leaderboard`; ranks count from 1 = best."""

    name: str
    score: Estimate
    rank: int
    rank_low: int
    rank_high: int
    tie_group: int


@dataclass(frozen=True, slots=True)
class Leaderboard:
    """Models ordered best first, with how the ranks were computed and a saturation flag."""

    models: tuple[RankedModel, ...]
    n_items: int
    n_resamples: int
    method: str
    saturated: bool
    saturation_note: str | None


def _as_matrix(scores: Mapping[str, npt.ArrayLike]) -> tuple[list[str], Array]:
    if len(scores) < 1:
        raise ValueError("rank_models needs at least one model")
    names = list(scores)
    rows = [np.asarray(scores[k], dtype=np.float64).reshape(-1) for k in names]
    lengths = {k: r.size for k, r in zip(names, rows, strict=True)}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k!r}: {v}" for k, v in lengths.items())
        raise ValueError(f"score vectors must cover the same items; lengths differ ({detail})")
    x = np.vstack(rows)
    if np.isinf(x).any():
        bad = [k for k, r in zip(names, rows, strict=True) if np.isinf(r).any()]
        raise ValueError(f"infinite scores for {bad}; a mean of them is undefined")
    return names, x


def _chunks(total: int, cells_per_row: int) -> Iterator[slice]:
    step = max(1, _CHUNK_CELLS // max(1, cells_per_row))
    for start in range(0, total, step):
        yield slice(start, min(total, start + step))


def _resample_means(x: Array, rng: np.random.Generator, n_resamples: int) -> Array:
    """(n_resamples x models) means over each model's scored items in each paired resample.

    Each chunk draws ``rng.integers(0, n_items, size=(rows, n_items))``, turns it into item
    counts, and takes sums and scored-item counts as two matrix products. NaN where a model
    has no scored item in the resample.
    """
    n_models, n_items = x.shape
    scored = (~np.isnan(x)).astype(np.float64)
    values = np.where(np.isnan(x), 0.0, x)
    out = np.empty((n_resamples, n_models))
    for part in _chunks(n_resamples, n_items):
        rows = part.stop - part.start
        idx = rng.integers(0, n_items, size=(rows, n_items))
        flat = (idx + n_items * np.arange(rows)[:, None]).ravel()
        c = np.bincount(flat, minlength=rows * n_items).reshape(rows, n_items).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[part] = (c @ values.T) / (c @ scored.T)
    return out


def _oriented(means: Array, higher_is_better: bool) -> Array:
    """Bigger is better, and no score (NaN) is worst of all (-inf)."""
    v = means if higher_is_better else -means
    return np.where(np.isnan(v), -np.inf, v)


def _tie_tolerance(x: Array) -> float:
    """Means closer than the worst-case float error of a mean of n_items scores are equal."""
    scale = float(np.max(np.abs(x), initial=0.0, where=~np.isnan(x)))
    return int(x.shape[1]) * float(np.finfo(np.float64).eps) * scale


def _rank_bounds(v: Array, tol: float) -> tuple[IntArray, IntArray]:
    """Best and worst rank of each model along the last axis; ties span the tied places."""
    better = v[..., :, None] > v[..., None, :] + tol  # [.., k, j]: k beats j
    not_worse = ~(v[..., None, :] > v[..., :, None] + tol)  # [.., k, j]: j does not beat k
    best = 1 + better.sum(axis=-2)
    worst = not_worse.sum(axis=-2)
    return best.astype(np.int64), worst.astype(np.int64)


def _rank_intervals(o: Array, tol: float, c: float) -> tuple[IntArray, IntArray]:
    n_resamples, n_models = o.shape
    best = np.empty((n_resamples, n_models), dtype=np.int64)
    worst = np.empty_like(best)
    for part in _chunks(n_resamples, n_models * n_models):
        best[part], worst[part] = _rank_bounds(o[part], tol)
    alpha = 1.0 - c
    low = np.quantile(best, alpha / 2, axis=0, method="inverted_cdf")
    high = np.quantile(worst, 1 - alpha / 2, axis=0, method="inverted_cdf")
    return low.astype(np.int64), high.astype(np.int64)


def _separable(a: Array, b: Array, tol: float, c: float) -> bool:
    """True when the paired percentile interval of ``a - b`` lies above 0 (``a`` is better)."""
    both_missing = np.isneginf(a) & np.isneginf(b)
    with np.errstate(invalid="ignore"):
        d = np.where(both_missing, 0.0, a - b)
    return bool(np.quantile(d, (1.0 - c) / 2, method="inverted_cdf") > tol)


def _tie_groups(o: Array, order: list[int], tol: float, c: float) -> dict[int, int]:
    """Walk down ``order``; a model joins the group until it is separable from its leader."""
    groups: dict[int, int] = {}
    group, leader = 0, -1
    for j in order:
        if leader < 0 or _separable(o[:, leader], o[:, j], tol, c):
            group, leader = group + 1, j
        groups[j] = group
    return groups


def _score(x: Array, resampled: Array, c: float) -> Estimate:
    v = as_values(x)
    if v.size == 0:
        return Estimate.empty("none", c)
    if is_binary(v):
        return wilson(int(v.sum()), int(v.size), c)
    value = float(v.mean())
    if v.size == 1:
        return Estimate(value, -np.inf, np.inf, 1, "bootstrap-undefined", c)
    lo, hi = np.nanquantile(resampled, [(1 - c) / 2, (1 + c) / 2])
    return Estimate(
        value, min(float(lo), value), max(float(hi), value), int(v.size), "bootstrap-percentile", c
    )


def _pct(c: float) -> str:
    return f"{100 * c:g}%"


def _ceiling_reason(best: Estimate, x: Array, higher_is_better: bool, c: float) -> str | None:
    """Scores all in [0, 1] and the best interval within the margin of 1 (or of 0)."""
    v = x[~np.isnan(x)]
    if not bool(np.all((v >= 0.0) & (v <= 1.0))):
        return None
    edge, ideal = (best.high, 1.0) if higher_is_better else (best.low, 0.0)
    if abs(ideal - edge) > _CEILING_MARGIN and not (edge > 1.0 or edge < 0.0):
        return None
    return (
        f"the best score's {_pct(c)} interval reaches {edge:.3f}, within "
        f"{_CEILING_MARGIN:g} of the ceiling {ideal:g} or past it"
    )


def _saturation(
    rows: list[RankedModel], x: Array, higher_is_better: bool, c: float
) -> tuple[bool, str | None]:
    scored = [r for r in rows if not r.score.is_empty]
    if not scored:
        return False, None
    reasons = []
    top = [r.name for r in scored if r.tie_group == 1]
    if len(top) >= 2:
        reasons.append(
            f"the top {len(top)} models ({', '.join(top)}) cannot be separated "
            f"at {_pct(c)} confidence on {x.shape[1]} items"
        )
    ceiling = _ceiling_reason(scored[0].score, x, higher_is_better, c)
    if ceiling is not None:
        reasons.append(ceiling)
    if not reasons:
        return False, None
    return True, "Saturated: " + "; ".join(reasons) + "."


def rank_models(
    scores: Mapping[str, npt.ArrayLike],
    *,
    rng: np.random.Generator,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    higher_is_better: bool = True,
) -> Leaderboard:
    """Rank models scored on the same items, with percentile rank intervals and tie groups.

    ``scores`` maps a model name to its per-item scores, aligned on the same items; NaN is
    an unscored item. Items are resampled jointly for all models (a paired bootstrap); in
    each resample a model's mean is over its scored items there. ``rng`` is used only to
    draw the resample indices, in chunks of ``rng.integers(0, n_items, (rows, n_items))``.
    Rules (ranks, ties, saturation, unscored models) are in ``docs/leaderboard-statistics.md``.
    """
    c = check_confidence(confidence)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    names, x = _as_matrix(scores)
    n_models, n_items = x.shape
    means = np.full((n_resamples, n_models), np.nan)
    if n_items > 0 and not np.isnan(x).all():
        means = _resample_means(x, rng, n_resamples)
    ests = [_score(x[j], means[:, j], c) for j in range(n_models)]
    point = _oriented(np.array([e.value for e in ests]), higher_is_better)
    tol, o = _tie_tolerance(x), _oriented(means, higher_is_better)
    rank, _ = _rank_bounds(point, tol)
    low, high = _rank_intervals(o, tol, c)
    order = sorted(range(n_models), key=lambda j: (-point[j], names[j]))
    live = [j for j in order if not ests[j].is_empty]
    groups = _tie_groups(o, live, tol, c)
    last_group = max(groups.values(), default=0) + 1
    # The point rank is kept inside its interval; an unscored model could rank anywhere.
    low, high = np.minimum(low, rank), np.maximum(high, rank)
    rows = [
        RankedModel(names[j], ests[j], int(rank[j]), 1, n_models, last_group)
        if ests[j].is_empty
        else RankedModel(names[j], ests[j], int(rank[j]), int(low[j]), int(high[j]), groups[j])
        for j in order
    ]
    saturated, note = _saturation(rows, x, higher_is_better, c)
    method = f"paired bootstrap over items, {_pct(c)} percentile rank intervals"
    return Leaderboard(tuple(rows), n_items, n_resamples, method, saturated, note)
