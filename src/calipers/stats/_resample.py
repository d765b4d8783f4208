"""Resampling means fast: the bootstrap core shared by single scores and paired comparisons.

No Python loop over resamples: indices are drawn and gathered in chunks, or, for few distinct
values, multinomial counts are drawn directly. BCa uses the closed-form jackknife of a mean,
so it is O(n) (scipy's generic BCa jackknife is O(n^2): 2 s at 20,000 items).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from calipers.types import Estimate

# The standard normal from the standard library: scipy.stats (or scipy.special) would cost a
# cached re-run more to import than the whole of its finalize.
_NORMAL = NormalDist()

__all__ = [
    "BINS",
    "CELLS",
    "EXACT_CELLS",
    "FEW",
    "bootstrap_estimate",
    "is_flat",
    "resample_means",
]

Floats = npt.NDArray[np.float64]
CELLS = 1 << 18  # resampled values held at once: memory per chunk is about 24 bytes x this
FEW = 32  # exact multinomial shortcut when distinct values x FEW <= n
EXACT_CELLS = 200_000_000  # above n x resamples, many distinct values are resampled by bins
BINS = 256  # equal-count bins of the binned resampler; each holds n / BINS items


def resample_means(cols: Floats, rng: np.random.Generator, n_resamples: int) -> Floats:
    """``(n_resamples, k)`` column means of ``cols`` (``k`` is 1 or 2) resampled by row (an
    item keeps its pair).

    Few distinct rows (0/0.5/1 credit, 1-5 ratings): the resample counts of the K distinct
    rows are drawn directly, ``Multinomial(n, counts / n)`` -- the same distribution as
    resampling items, at O(K) per resample. Otherwise an index matrix is drawn and gathered,
    ``CELLS`` indices at a time (a pair travels as one complex number, one gather for both);
    the loop is over chunks of resamples, never over single resamples.
    """
    n, k = cols.shape
    values, counts = np.unique(cols, axis=0, return_counts=True)
    few = values.shape[0] * FEW <= n
    if not few and n * n_resamples > EXACT_CELLS and n >= BINS * FEW:
        return _binned_means(cols, rng, n_resamples)
    rows = max(1, CELLS // (values.shape[0] if few else n))
    out = np.empty((n_resamples, k))
    z = cols[:, 0] if k == 1 else cols[:, 0] + 1j * cols[:, 1]
    buf = np.empty(0 if few else rows * n, z.dtype)
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        if few:
            out[start : start + m] = rng.multinomial(n, counts / n, size=m) @ values / n
        else:
            np.take(z, rng.integers(0, n, size=m * n), out=buf[: m * n], mode="wrap")
            sums = buf[: m * n].reshape(m, n).sum(axis=1) / n
            out[start : start + m, 0] = sums.real
            if k == 2:
                out[start : start + m, 1] = sums.imag
    return out


def _binned_means(cols: Floats, rng: np.random.Generator, n_resamples: int) -> Floats:
    """Resampled column means for many items with many distinct values, in O(BINS) per
    resample instead of O(n).

    Items are sorted (by the difference of the two columns for pairs, else by value) and cut
    into ``BINS`` equal-count bins. How many resampled items fall in each bin is drawn exactly,
    ``Multinomial(n, n_b / n)``. The sum of the ``C_b`` draws inside bin ``b`` has mean
    ``C_b * mean_b`` and covariance ``C_b * cov_b``; it is drawn from the normal with those
    moments. That is the only approximation: a sum of several hundred draws from one narrow
    bin (at least ``FEW`` items per bin, 390 at 100,000 items) is normal to far below the
    Monte Carlo error of the bootstrap itself. ``tests/stats`` checks the intervals against
    the exact index bootstrap.
    """
    n, k = cols.shape
    key = cols[:, 1] - cols[:, 0] if k == 2 else cols[:, 0]
    bins = np.array_split(cols[np.argsort(key, kind="stable")], BINS)
    sizes = np.array([b.shape[0] for b in bins], dtype=np.float64)
    means = np.stack([b.mean(axis=0) for b in bins])  # (BINS, k)
    roots = np.stack(
        [_psd_sqrt(np.cov(b, rowvar=False, bias=True).reshape(k, k)) for b in bins]
    )  # (BINS, k, k)
    out = np.empty((n_resamples, k))
    rows = max(1, CELLS // (BINS * k))
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        counts = rng.multinomial(n, sizes / n, size=m).astype(np.float64)  # (m, BINS)
        z = rng.standard_normal((m, BINS, k))
        noise = np.einsum("bij,mbj->mi", roots, z * np.sqrt(counts)[:, :, None])
        out[start : start + m] = (counts @ means + noise) / n
    return out


def _psd_sqrt(cov: Floats) -> Floats:
    """A matrix root ``L`` with ``L @ L.T == cov`` for a covariance that may be singular."""
    w, v = np.linalg.eigh(cov)
    return np.asarray(v * np.sqrt(np.clip(w, 0.0, None)), dtype=np.float64)


def is_flat(v: Floats) -> bool:
    """True when every value is equal up to round-off (``x + 0.1 - x`` is not always 0.1)."""
    return float(np.ptp(v)) <= 1e-12 * max(1.0, float(np.abs(v).max()))


def _bca(draws: Floats, values: Floats, c: float) -> tuple[float, float, str]:
    """BCa interval (Efron 1987) for ``mean(values)``; percentile where BCa is undefined.

    For a mean the jackknife is closed-form, so the acceleration is
    ``sum(e^3) / (6 sum(e^2)^1.5)`` with ``e = values - mean``: O(n), not O(n^2).
    """
    theta = float(values.mean())
    e = values - theta
    ss = float(np.sum(e * e))
    tol = 1e-12 * max(1.0, float(np.abs(values).max()))
    ties = np.count_nonzero(np.abs(draws - theta) <= tol)
    below = (np.count_nonzero(draws < theta - tol) + 0.5 * ties) / draws.size
    levels = np.array([(1 - c) / 2, (1 + c) / 2])
    if not is_flat(values) and 0.0 < below < 1.0:
        z0, zq = _NORMAL.inv_cdf(below), np.array([_NORMAL.inv_cdf(q) for q in levels])
        accel = float(np.sum(e**3)) / (6 * ss**1.5)
        bca = np.array([_NORMAL.cdf(z) for z in z0 + (z0 + zq) / (1 - accel * (z0 + zq))])
        if np.isfinite(bca).all():
            low, high = np.quantile(draws, bca)
            return float(low), float(high), "bca"
    low, high = np.quantile(draws, levels)
    return float(low), float(high), "percentile"


def bootstrap_estimate(v: Floats, draws: Floats, name: str, c: float) -> Estimate:
    """The mean of ``v`` with the BCa (or percentile) interval of its bootstrap ``draws``."""
    m = float(v.mean())
    if v.size < 2:  # nothing to resample: the data cannot say how far the mean could move
        return Estimate(m, -math.inf, math.inf, v.size, f"{name}-undefined", c)
    low, high, kind = _bca(draws, v, c)
    return Estimate(m, min(low, m), max(high, m), v.size, f"{name}-{kind}", c)
