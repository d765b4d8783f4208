"""Intervals for a proportion k/n that stay valid at small n: Wilson score and Beta posterior."""

from __future__ import annotations

import math
from statistics import NormalDist

from calipers.types import Estimate

__all__ = ["beta_posterior", "check_confidence", "wilson"]


def check_confidence(confidence: float) -> float:
    """Return ``confidence`` as a float, or raise ``ValueError`` unless it is in (0, 1)."""
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    return c


def _check_counts(k: int, n: int) -> None:
    if int(k) != k or int(n) != n:
        raise ValueError(f"k and n must be whole numbers, got k={k!r}, n={n!r}")
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")


def wilson(k: int, n: int, confidence: float = 0.95) -> Estimate:
    """Wilson score interval for ``k`` successes out of ``n`` (method ``"wilson"``).

    The closed form, computed as ``statsmodels.stats.proportion.proportion_confint(
    method="wilson")`` computes it, with the standard library's normal quantile (a test checks
    they agree to 1e-15), so that a run's finalize does not import statsmodels, pandas and
    scipy (1-2 s) for it. Unlike the Wald (CLT) interval it never collapses to zero width at 0/n
    or n/n and keeps close to nominal coverage for small n (Brown, Cai & DasGupta 2001).
    ``n == 0`` gives ``Estimate.empty("wilson")``.
    """
    c = check_confidence(confidence)
    _check_counts(k, n)
    if n == 0:
        return Estimate.empty("wilson", c)
    value = k / n
    crit = -NormalDist().inv_cdf((1.0 - c) / 2.0)  # scipy.stats.norm.isf(alpha / 2)
    crit2 = crit**2
    denom = 1 + crit2 / n
    center = (value + crit2 / (2 * n)) / denom
    dist = crit * math.sqrt(value * (1.0 - value) / n + crit2 / (4.0 * n**2)) / denom
    low, high = center - dist, center + dist
    # Round-off can push the bounds a hair outside [0, 1] or past the point estimate.
    low, high = max(0.0, min(float(low), value)), min(1.0, max(float(high), value))
    return Estimate(value, low, high, int(n), "wilson", c)


def _beta_method(prior: tuple[float, float]) -> str:
    if prior == (0.5, 0.5):
        return "beta-jeffreys"
    return f"beta({prior[0]:g},{prior[1]:g})"


def beta_posterior(
    k: int, n: int, confidence: float = 0.95, prior: tuple[float, float] = (0.5, 0.5)
) -> Estimate:
    """Equal-tailed Beta posterior interval; Jeffreys prior Beta(1/2, 1/2) by default.

    The posterior is Beta(k + a, n - k + b); the interval is its ``(1-c)/2`` and ``(1+c)/2``
    quantiles (``scipy.stats.beta.interval``). ``value`` is the observed proportion k/n, not the
    posterior mean. As in Brown, Cai & DasGupta (2001), the lower bound is set to 0 when k = 0
    and the upper bound to 1 when k = n, so the interval always contains k/n. Method is
    ``"beta-jeffreys"`` for the default prior, ``"beta(a,b)"`` otherwise.
    """
    c = check_confidence(confidence)
    _check_counts(k, n)
    a, b = float(prior[0]), float(prior[1])
    if a <= 0 or b <= 0:
        raise ValueError(f"prior parameters must be positive, got {prior!r}")
    method = _beta_method((a, b))
    if n == 0:
        return Estimate.empty(method, c)
    from scipy import stats  # scipy.stats takes longer to import than a run's finalize

    low, high = stats.beta.interval(c, k + a, n - k + b)
    low = 0.0 if k == 0 else float(low)
    high = 1.0 if k == n else float(high)
    return Estimate(k / n, low, high, int(n), method, c)
