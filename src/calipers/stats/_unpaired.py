"""The difference between the means of two independent groups of items, with an interval.

0/1 scores: Newcombe's hybrid score interval for the difference of two independent
proportions (R. G. Newcombe 1998, "Interval estimation for the difference between independent
proportions: comparison of eleven methods", Statistics in Medicine 17:873-890, method 10),
valid at small n. Other scores: an unpaired percentile bootstrap (each group resampled on its
own). For the same items scored twice, use the paired methods in ``_paired`` instead.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from calipers.stats._bootstrap import as_values
from calipers.stats._proportion import check_confidence, wilson
from calipers.stats._resample import resample_means
from calipers.types import Estimate

__all__ = ["newcombe_unpaired", "unpaired_difference"]


def newcombe_unpaired(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> Estimate:
    """``p1 - p2`` for ``k1/n1`` and ``k2/n2`` from independent samples (method
    ``"newcombe-unpaired"``).

    With Wilson intervals ``(l1, u1)`` and ``(l2, u2)`` for the two proportions::

        low  = d - sqrt((p1 - l1)^2 + (u2 - p2)^2)
        high = d + sqrt((u1 - p1)^2 + (p2 - l2)^2)

    It never leaves [-1, 1] and stays close to nominal coverage at small n (Newcombe 1998).
    An empty group gives ``Estimate.empty``.
    """
    c = check_confidence(confidence)
    if n1 == 0 or n2 == 0:
        return Estimate.empty("newcombe-unpaired", c)
    a, b = wilson(k1, n1, c), wilson(k2, n2, c)
    d = a.value - b.value
    low = d - math.hypot(a.value - a.low, b.high - b.value)
    high = d + math.hypot(a.high - a.value, b.value - b.low)
    return Estimate(d, max(-1.0, low), min(1.0, high), int(n1 + n2), "newcombe-unpaired", c)


def unpaired_difference(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
) -> Estimate:
    """``mean(x) - mean(y)`` for two independent groups; NaN values are dropped.

    Both groups 0/1: :func:`newcombe_unpaired`. Otherwise the percentile interval of
    ``n_resamples`` differences of independently resampled means (method
    ``"bootstrap-unpaired-percentile"``; ``-undefined`` with ``(-inf, inf)`` when a group has
    a single value). An empty group gives ``Estimate.empty``.
    """
    c = check_confidence(confidence)
    a, b = as_values(x), as_values(y)
    binary = bool(np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    if a.size == 0 or b.size == 0:
        return Estimate.empty("newcombe-unpaired" if binary else "bootstrap-unpaired", c)
    if binary:
        return newcombe_unpaired(int(a.sum()), a.size, int(b.sum()), b.size, c)
    d = float(a.mean() - b.mean())
    n = int(a.size + b.size)
    if a.size < 2 or b.size < 2:
        return Estimate(d, -math.inf, math.inf, n, "bootstrap-unpaired-undefined", c)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    draws = (
        resample_means(a[:, None], rng, n_resamples)[:, 0]
        - resample_means(b[:, None], rng, n_resamples)[:, 0]
    )
    low, high = np.quantile(draws, [(1 - c) / 2, (1 + c) / 2])
    return Estimate(
        d, min(float(low), d), max(float(high), d), n, "bootstrap-unpaired-percentile", c
    )
