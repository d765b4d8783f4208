"""A quantile (median, p95 latency, ...) with a distribution-free interval from order statistics.

For n independent draws from a continuous distribution, the number B of draws below the true
q-quantile is Binomial(n, q), so the interval between the l-th and u-th smallest draws covers
the quantile with probability ``P(l <= B <= u - 1)`` whatever the distribution (Hahn & Meeker,
*Statistical Intervals*, 1991, ch. 5; Conover, *Practical Nonparametric Statistics*, 3.2). The
ranks are chosen equal-tailed, each tail at most ``(1 - confidence) / 2``, so the coverage is
at least the nominal level (it is exact only where the binomial allows).

When n is too small for a bound (the p95 needs n >= 72 for an upper bound at 95%), that bound
is infinite: the data cannot bound it, and the interval says so rather than inventing one.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import stats

from calipers.stats._proportion import check_confidence
from calipers.types import Estimate

__all__ = ["order_statistic_ranks", "quantile_interval"]

METHOD = "order-statistic"
_EPS = 1e-12


@lru_cache(maxsize=256)
def order_statistic_ranks(n: int, q: float, confidence: float = 0.95) -> tuple[int, int, float]:
    """1-based ranks ``(l, u)`` of the order statistics bounding the q-quantile, and the exact
    coverage ``P(l <= B <= u - 1)`` for ``B ~ Binomial(n, q)``.

    ``l = 0`` means no finite lower bound, ``u = n + 1`` no finite upper bound.
    """
    c = check_confidence(confidence)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q!r}")
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    tail = (1.0 - c) / 2.0
    cdf = stats.binom.cdf(np.arange(n + 1), n, q)  # cdf[k] = P(B <= k)
    # Largest l with P(B <= l - 1) <= tail (so P(X_(l) > quantile) <= tail).
    below = np.flatnonzero(cdf <= tail + _EPS)
    low_rank = int(below[-1]) + 1 if below.size else 0
    # Smallest u with P(B >= u) <= tail, i.e. P(B <= u - 1) >= 1 - tail.
    above = np.flatnonzero(cdf >= 1.0 - tail - _EPS)
    high_rank = int(above[0]) + 1 if above.size else n + 1
    f_high = 1.0 if high_rank > n else float(cdf[high_rank - 1])
    f_low = 0.0 if low_rank == 0 else float(cdf[low_rank - 1])
    return low_rank, high_rank, f_high - f_low


def quantile_interval(values: npt.ArrayLike, q: float, confidence: float = 0.95) -> Estimate:
    """The sample q-quantile (numpy's default, linear interpolation) with the distribution-free
    order-statistic interval (method ``"order-statistic"``).

    NaN values are dropped; none left gives ``Estimate.empty``. A bound the data cannot give
    (too few values for that tail) is ``-inf`` or ``inf``. The interval assumes independent
    draws of a continuous quantity; with ties it is conservative.
    """
    c = check_confidence(confidence)
    x = np.sort(np.asarray(values, dtype=np.float64).reshape(-1))
    x = x[~np.isnan(x)]
    if x.size == 0:
        return Estimate.empty(METHOD, c)
    if np.isinf(x).any():
        raise ValueError("values contain an infinite value; its quantile interval is undefined")
    n = int(x.size)
    low_rank, high_rank, _coverage = order_statistic_ranks(n, q, c)
    value = float(np.quantile(x, q))
    low = -math.inf if low_rank == 0 else float(x[low_rank - 1])
    high = math.inf if high_rank > n else float(x[high_rank - 1])
    return Estimate(value, min(low, value), max(high, value), n, METHOD, c)
