"""Did a series of independent estimates change level, where, and by how much?

The data: ``T`` estimates ``y_1 .. y_T`` in time order (one per run), each with its own standard
error ``s_i`` (from its interval: each run has its own n). The model under "no change" is
``y_i ~ N(mu, s_i^2)``, independent, ``mu`` unknown, the ``s_i`` taken as known.

**The scan.** For a split before index ``k`` (``1 <= k < T``) the two sides' inverse-variance
means ``m_1, m_2`` (weights ``w_i = 1/s_i^2``, totals ``W_1, W_2``) differ by
``D_k = m_2 - m_1`` with variance ``1/W_1 + 1/W_2``, and ::

    Z_k = D_k / sqrt(1/W_1 + 1/W_2)

``Z_k^2`` is the likelihood-ratio statistic of "one change, at k" against "no change" (Gaussian,
known variances), and with equal ``s_i`` ``Z_k`` is the standardized CUSUM. The test statistic
is ``max_k |Z_k|`` (two-sided: a rise and a drop alike); the split is the ``argmax``.

**Its null distribution** is simulated, not taken from an asymptotic: ``Z_k`` does not depend
on ``mu``, so the series ``y* ~ N(0, s_i^2)`` drawn with the series' own standard errors give
``max |Z*|`` exactly as under "no change" (a parametric bootstrap). The p-value
``(1 + #{max|Z*| >= max|Z|}) / (n_sim + 1)`` is then valid at every ``n_sim``:
``P(p <= a) <= a`` under "no change" (the rank argument of a Monte Carlo test).

**The change** is ``D`` at the split, between its neighbouring changes (or the ends), with a
basic-bootstrap interval from the fitted two-level model, re-locating the split in every
simulated series, so the interval pays for not knowing
where the change is and corrects the winner's curse of a split chosen by the data (the naive
Wald interval at the chosen split would be too narrow). Where the change is: the split and the
central ``confidence`` range of the re-located splits.

**Several changes**: binary segmentation. The whole series is tested at level ``alpha``; after
a change, each of the two sides is tested at half its parent's level, and so on. The segments
tested at any time are disjoint nodes of a binary tree whose levels are ``alpha / 2^depth``, so
the levels of the flat (no change) segments that get tested sum to at most ``alpha`` (Kraft's
inequality): the chance of any false change is at most ``alpha`` when the found changes are
at the true places; with no change at all it is exactly the first test's, at most ``alpha``.

**What it assumes.** Independent runs, roughly normal estimates with the reported standard
errors, a level that is constant between changes. Runs that share their items (the same fixed
test set each time) are positively correlated; their differences vary less than the standard
errors say, so the test is then conservative (fewer false alarms, less power), never the other
way. Extra run-to-run variation that the intervals do not include (a nondeterministic server on
a fixed set of items) makes it anti-conservative; it is part of the item sampling error when
each run draws fresh items.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from scipy import stats

from calipers.stats._proportion import check_confidence
from calipers.types import Estimate

__all__ = [
    "ChangeScan",
    "Changepoint",
    "Segment",
    "Segmentation",
    "change_scan",
    "changepoints",
    "scan_statistics",
]

Array = npt.NDArray[np.float64]

SCAN_METHOD = "max-LR scan, parametric-bootstrap null"
SHIFT_METHOD = "basic bootstrap, split re-located"
MEAN_METHOD = "inverse-variance mean"


@dataclass(frozen=True, slots=True)
class ChangeScan:
    """The test of one stretch ``[start, end)``: ``index`` is the first point after the best
    split, ``statistic`` ``max |Z_k|`` and ``p_value`` its Monte Carlo p-value."""

    start: int
    end: int
    index: int
    statistic: float
    p_value: float
    level: float

    @property
    def significant(self) -> bool:
        return self.p_value <= self.level


@dataclass(frozen=True, slots=True)
class Changepoint:
    """A change found: the level moves between ``index - 1`` and ``index`` by ``shift``
    (after minus before, with its interval); ``where`` is the central range of the re-located
    splits (first index after the change); the test that found it, at its ``level``."""

    index: int
    where: tuple[int, int]
    shift: Estimate
    statistic: float
    p_value: float
    level: float
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Segment:
    """Points ``[start, end)`` between changes, with their inverse-variance mean."""

    start: int
    end: int
    mean: Estimate


@dataclass(frozen=True, slots=True)
class Segmentation:
    """Every change found (in order), the segments between them, and every test run."""

    changes: tuple[Changepoint, ...]
    segments: tuple[Segment, ...]
    tests: tuple[ChangeScan, ...]
    alpha: float
    n_sim: int
    method: str = SCAN_METHOD


def _check(values: Sequence[float] | Array, ses: Sequence[float] | Array) -> tuple[Array, Array]:
    y = np.asarray(values, dtype=np.float64)
    s = np.asarray(ses, dtype=np.float64)
    if y.ndim != 1 or y.shape != s.shape:
        raise ValueError("values and standard errors must be two sequences of the same length")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError("values must be finite and standard errors finite and positive")
    return y, s


def _z(y: Array, w: Array) -> Array:
    """``Z_k`` for every split (last axis), for one series or a stack of them."""
    cw = np.cumsum(w)[:-1]
    total_w = w.sum()
    cy = np.cumsum(y * w, axis=-1)
    left = cy[..., :-1] / cw
    right = (cy[..., -1:] - cy[..., :-1]) / (total_w - cw)
    return np.asarray((right - left) / np.sqrt(1 / cw + 1 / (total_w - cw)), dtype=np.float64)


def scan_statistics(values: Sequence[float] | Array, ses: Sequence[float] | Array) -> Array:
    """``Z_k`` for ``k = 1 .. T-1`` (the split before index ``k``): the standardized
    difference of the inverse-variance means after and before it."""
    y, s = _check(values, ses)
    if len(y) < 2:
        return np.zeros(0)
    return _z(y, 1 / s**2)


def _null_max(s: Array, rng: np.random.Generator, n_sim: int) -> Array:
    sims = rng.standard_normal((n_sim, len(s))) * s
    out: Array = np.abs(_z(sims, 1 / s**2)).max(axis=1)
    return out


def change_scan(
    values: Sequence[float] | Array,
    ses: Sequence[float] | Array,
    rng: np.random.Generator,
    *,
    n_sim: int = 999,
    level: float = 0.05,
) -> ChangeScan:
    """The scan test of "no change" on one series (module docstring). Fewer than two points:
    no test (p-value 1)."""
    y, s = _check(values, ses)
    if len(y) < 2:
        return ChangeScan(0, len(y), 0, math.nan, 1.0, level)
    z = np.abs(_z(y, 1 / s**2))
    k = int(np.argmax(z))
    t = float(z[k])
    null = _null_max(s, rng, n_sim)
    p = (1 + int(np.sum(null >= t - 1e-12 * max(1.0, t)))) / (n_sim + 1)
    return ChangeScan(0, len(y), k + 1, t, p, level)


def _shift(
    y: Array, s: Array, index: int, rng: np.random.Generator, n_boot: int, confidence: float
) -> tuple[Estimate, tuple[int, int]]:
    """``D`` at the split before ``index`` with its basic-bootstrap interval, and the central
    range of the re-located splits."""
    w = 1 / s**2
    m1 = float(np.sum(w[:index] * y[:index]) / w[:index].sum())
    m2 = float(np.sum(w[index:] * y[index:]) / w[index:].sum())
    d = m2 - m1
    fitted = np.where(np.arange(len(y)) < index, m1, m2)
    sims = fitted + rng.standard_normal((n_boot, len(y))) * s
    z = _z(sims, w)
    ks = np.argmax(np.abs(z), axis=1) + 1
    cw = np.cumsum(w)
    cy = np.cumsum(sims * w, axis=1)
    rows = np.arange(n_boot)
    left = cy[rows, ks - 1] / cw[ks - 1]
    right = (cy[:, -1] - cy[rows, ks - 1]) / (cw[-1] - cw[ks - 1])
    ds = right - left
    tail = (1 - confidence) / 2
    q_lo, q_hi = np.quantile(ds, [tail, 1 - tail])
    where = np.quantile(ks, [tail, 1 - tail], method="inverted_cdf")
    est = Estimate(d, 2 * d - float(q_hi), 2 * d - float(q_lo), len(y), SHIFT_METHOD, confidence)
    return est, (int(where[0]), int(where[1]))


def _local(
    ch: Changepoint,
    y: Array,
    s: Array,
    a: int,
    b: int,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> Changepoint:
    """The change's shift and place refitted between its neighbours ``[a, b)``: the test
    found it in a longer stretch, whose other changes would blur the difference."""
    shift, (lo, hi) = _shift(y[a:b], s[a:b], ch.index - a, rng, n_boot, confidence)
    return replace(ch, shift=shift, where=(a + lo, a + hi))


def _mean(y: Array, s: Array, confidence: float) -> Estimate:
    w = 1 / s**2
    m = float(np.sum(w * y) / w.sum())
    half = float(stats.norm.ppf(0.5 + confidence / 2)) / math.sqrt(float(w.sum()))
    return Estimate(m, m - half, m + half, len(y), MEAN_METHOD, confidence)


def changepoints(
    values: Sequence[float] | Array,
    ses: Sequence[float] | Array,
    rng: np.random.Generator,
    *,
    alpha: float = 0.05,
    n_sim: int = 999,
    n_boot: int = 999,
    confidence: float = 0.95,
) -> Segmentation:
    """Binary segmentation with the scan test (module docstring): the changes found with the
    chance of any false one at most ``alpha``, each with its shift and interval, and the
    segments between them with their means."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    c = check_confidence(confidence)
    y, s = _check(values, ses)
    tests: list[ChangeScan] = []
    found: list[Changepoint] = []
    todo = [(0, len(y), alpha)]
    while todo:
        start, end, level = todo.pop(0)
        if end - start < 2:
            continue
        scan = change_scan(y[start:end], s[start:end], rng, n_sim=n_sim, level=level)
        at = start + scan.index
        tests.append(ChangeScan(start, end, at, scan.statistic, scan.p_value, level))
        if not scan.significant:
            continue
        nan = Estimate(math.nan, math.nan, math.nan, 0, SHIFT_METHOD, c)  # set below
        found.append(
            Changepoint(at, (at, at), nan, scan.statistic, scan.p_value, level, start, end)
        )
        todo += [(start, at, level / 2), (at, end, level / 2)]
    found.sort(key=lambda ch: ch.index)
    cuts = [0, *(ch.index for ch in found), len(y)]
    found = [_local(ch, y, s, cuts[i], cuts[i + 2], rng, n_boot, c) for i, ch in enumerate(found)]
    segments = tuple(
        Segment(a, b, _mean(y[a:b], s[a:b], c)) for a, b in itertools.pairwise(cuts) if b > a
    )
    return Segmentation(tuple(found), segments, tuple(tests), alpha, n_sim)
