"""Is a rate trending with an ordered factor? The Cochran–Armitage test for trend.

Groups ``i`` with scores ``s_i`` (a dose, a distance in turns), ``n_i`` trials and ``x_i``
successes; ``N = sum n_i``, ``p = sum x_i / N``, ``s̄ = sum n_i s_i / N``::

    T = sum x_i (s_i - s̄)        Var_0(T) = p (1 - p) sum n_i (s_i - s̄)^2

``z = T / sqrt(Var_0(T))`` is standard normal when the rate does not depend on the score;
``z^2`` is R's ``prop.trend.test`` statistic and Agresti's ``M^2`` with ``N`` in place of
``N - 1`` (Agresti 2002, *Categorical Data Analysis*, §3.4.6: alcohol and malformation,
``M^2 = 6.57``). The slope is the least-squares slope of the 0/1 outcome on the score
(per unit of score), reported with the test's null standard error, so its interval is the
test's Wald inversion.

Items that appear at every level (one item asked at each distance) are not independent
across groups; positive correlation within an item lowers the variance of ``T``'s contrast
(its weights sum to zero), so the test is then conservative, never anti-conservative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from calipers.stats._proportion import check_confidence
from calipers.types import Estimate

__all__ = ["TrendTest", "cochran_armitage"]


@dataclass(frozen=True, slots=True)
class TrendTest:
    """``z`` (positive: the rate rises with the score), ``chi2 = z^2``, the two-sided
    ``p_value``, and the ``slope`` of the rate per unit of score with its interval."""

    z: float
    chi2: float
    p_value: float
    slope: Estimate
    n: int


def cochran_armitage(
    successes: Sequence[int],
    totals: Sequence[int],
    scores: Sequence[float],
    confidence: float = 0.95,
) -> TrendTest:
    """The Cochran–Armitage trend test (see the module docstring). Groups with no trials are
    dropped; fewer than two groups with trials, or no variation (every trial a success or
    every one a failure), give NaN statistics with the observed n."""
    c = check_confidence(confidence)
    if not len(successes) == len(totals) == len(scores):
        raise ValueError("successes, totals and scores must have the same length")
    rows = [(int(x), int(n), float(s)) for x, n, s in zip(successes, totals, scores, strict=True)]
    for x, n, _s in rows:
        if n < 0 or not 0 <= x <= n:
            raise ValueError(f"need 0 <= successes <= totals, got {x} of {n}")
    rows = [r for r in rows if r[1] > 0]
    big_n = sum(n for _x, n, _s in rows)
    nan = math.nan
    empty = TrendTest(nan, nan, nan, Estimate(nan, nan, nan, big_n, "cochran-armitage", c), big_n)
    if len(rows) < 2:
        return empty
    p = sum(x for x, _n, _s in rows) / big_n
    mean_s = sum(n * s for _x, n, s in rows) / big_n
    sxx = sum(n * (s - mean_s) ** 2 for _x, n, s in rows)
    if sxx == 0 or p in (0.0, 1.0):
        return empty
    t = sum(x * (s - mean_s) for x, _n, s in rows)
    z = t / math.sqrt(p * (1 - p) * sxx)
    slope = t / sxx
    se = math.sqrt(p * (1 - p) / sxx)
    half = float(stats.norm.ppf(0.5 + c / 2)) * se
    est = Estimate(slope, slope - half, slope + half, big_n, "cochran-armitage", c)
    return TrendTest(z, z * z, float(2 * stats.norm.sf(abs(z))), est, big_n)
