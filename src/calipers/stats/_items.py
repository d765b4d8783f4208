"""Item statistics over a (takers x items) score matrix: difficulty, discrimination, uniform
items, and how much a score moves when a subset of items is dropped.

A "taker" is whatever answered every item: in calipers a stored run (one model under one
methodology). Classical test theory names: *difficulty* is the share of takers right (higher
is easier), *discrimination* the corrected item-total (item-rest) correlation, i.e. the
point-biserial correlation between the item's 0/1 score and the taker's total on the other
items.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from calipers.stats._proportion import check_confidence, wilson
from calipers.stats._summarize import is_binary
from calipers.types import Estimate

__all__ = [
    "item_difficulty",
    "item_rest_correlations",
    "point_biserial",
    "subset_difference",
    "uniform_items",
]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


def _matrix(scores: npt.ArrayLike, *, allow_nan: bool) -> Floats:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"expected a (takers x items) matrix, got shape {x.shape}")
    if np.isinf(x).any():
        raise ValueError("scores contain an infinite value")
    if not allow_nan and np.isnan(x).any():
        raise ValueError("scores contain NaN; keep only the items every taker scored")
    return x


def point_biserial(item: npt.ArrayLike, total: npt.ArrayLike) -> float:
    """Point-biserial correlation of a 0/1 ``item`` with a continuous ``total``.

    It is Pearson's r (what ``scipy.stats.pointbiserialr`` returns), equal to
    ``(M1 - M0) / s * sqrt(p q)`` with the population standard deviation ``s`` of ``total``.
    NaN (not 0) when it is undefined: fewer than 2 values, or either variable constant.
    """
    x = np.asarray(item, dtype=np.float64).reshape(-1)
    y = np.asarray(total, dtype=np.float64).reshape(-1)
    if x.size != y.size:
        raise ValueError(f"item has {x.size} values but total has {y.size}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("point_biserial needs NaN-free values")
    if x.size < 2:
        return math.nan
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if sxx <= 0.0 or syy <= 0.0:
        return math.nan
    return float(np.clip((dx @ dy) / math.sqrt(sxx * syy), -1.0, 1.0))


def item_difficulty(scores: npt.ArrayLike) -> Floats:
    """Per item (column), the mean score over the takers who scored it: the share right for
    0/1 scores (1 = everyone right, i.e. easy). NaN for an item nobody scored."""
    x = _matrix(scores, allow_nan=True)
    scored = (~np.isnan(x)).sum(axis=0)
    sums = np.where(np.isnan(x), 0.0, x).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scored > 0, sums / np.maximum(scored, 1), np.nan)


def item_rest_correlations(scores: npt.ArrayLike) -> Floats:
    """Corrected item-total correlation of every item (column) of a NaN-free matrix.

    For item j: Pearson's r between column j and each taker's total over the *other* items
    (the item is left out of the total so it does not correlate with itself). NaN where
    undefined: fewer than 2 takers, the item constant (everyone right or everyone wrong), or
    the rest-scores constant.
    """
    x = _matrix(scores, allow_nan=False)
    n_takers, _ = x.shape
    if n_takers < 2:
        return np.full(x.shape[1], np.nan)
    rest = x.sum(axis=1, keepdims=True) - x
    dx, dr = x - x.mean(axis=0), rest - rest.mean(axis=0)
    sxx, srr = (dx * dx).sum(axis=0), (dr * dr).sum(axis=0)
    # A column is constant when its range is 0; rest-scores equal up to round-off of their
    # sums are constant too.
    tol = 1e-9 * max(1.0, float(np.abs(rest).max(initial=0.0)))
    defined = (np.ptp(x, axis=0) > 0) & (np.ptp(rest, axis=0) > tol)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (dx * dr).sum(axis=0) / np.sqrt(sxx * srr)
    return np.where(defined, np.clip(r, -1.0, 1.0), np.nan)


def uniform_items(scores: npt.ArrayLike) -> tuple[Bools, Bools, Bools]:
    """Masks over items (columns) of a NaN-free matrix: every taker scored 1 (all right),
    every taker scored 0 (all wrong), every taker scored the same (includes both)."""
    x = _matrix(scores, allow_nan=False)
    if x.shape[0] == 0:
        empty = np.zeros(x.shape[1], dtype=bool)
        return empty, empty.copy(), empty.copy()
    same = (x == x[0]).all(axis=0)
    return (x == 1.0).all(axis=0), (x == 0.0).all(axis=0), same


def _mover_independent(k1: int, n1: int, k2: int, n2: int, c: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval for p1 - p2 of two independent proportions
    (Newcombe 1998, Stat. Med. 17:873, method 10), from the Wilson intervals of each."""
    p1, p2 = k1 / n1, k2 / n2
    w1, w2 = wilson(k1, n1, c), wilson(k2, n2, c)
    d = p1 - p2
    low = d - math.sqrt((p1 - w1.low) ** 2 + (w2.high - p2) ** 2)
    high = d + math.sqrt((w1.high - p1) ** 2 + (p2 - w2.low) ** 2)
    return low, high


def _stratified_bootstrap(
    kept: Floats, dropped: Floats, rng: np.random.Generator, n_resamples: int, c: float
) -> tuple[float, float]:
    mk = kept[rng.integers(0, kept.size, size=(n_resamples, kept.size))].mean(axis=1)
    md = dropped[rng.integers(0, dropped.size, size=(n_resamples, dropped.size))].mean(axis=1)
    lo, hi = np.quantile(mk - md, [(1 - c) / 2, (1 + c) / 2])
    return float(lo), float(hi)


def subset_difference(
    kept: npt.ArrayLike,
    dropped: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Estimate:
    """How much the mean score moves when the ``dropped`` items are removed: mean(kept) minus
    mean(kept + dropped), with an interval, treating which items were dropped as fixed.

    The shift equals ``w * (mean(kept) - mean(dropped))`` with ``w = n_dropped / n``, so its
    interval is ``w`` times an interval for a difference of two independent means: Newcombe's
    hybrid score interval for 0/1 scores (method ``"newcombe-independent-scaled"``), else a
    stratified percentile bootstrap with ``rng`` (``"bootstrap-stratified-scaled"``). Nothing
    dropped: exactly 0 (``"identical"``). Nothing kept: empty.
    """
    c = check_confidence(confidence)
    k = np.asarray(kept, dtype=np.float64).reshape(-1)
    d = np.asarray(dropped, dtype=np.float64).reshape(-1)
    k, d = k[~np.isnan(k)], d[~np.isnan(d)]
    n = k.size + d.size
    if k.size == 0:
        return Estimate.empty("none", c)
    if d.size == 0:
        return Estimate(0.0, 0.0, 0.0, n, "identical", c)
    w = d.size / n
    value = w * (float(k.mean()) - float(d.mean()))
    both = np.concatenate([k, d])
    if is_binary(both):
        low, high = _mover_independent(int(k.sum()), k.size, int(d.sum()), d.size, c)
        method = "newcombe-independent-scaled"
    elif k.size < 2 or d.size < 2:
        return Estimate(value, -math.inf, math.inf, n, "bootstrap-undefined", c)
    else:
        low, high = _stratified_bootstrap(k, d, rng, n_resamples, c)
        method = "bootstrap-stratified-scaled"
    return Estimate(value, min(w * low, value), max(w * high, value), n, method, c)
