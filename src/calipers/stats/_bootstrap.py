"""Mean of arbitrary scores with a bootstrap confidence interval (BCa, percentile fallback)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from calipers.stats._proportion import check_confidence
from calipers.stats._resample import bootstrap_estimate, resample_means
from calipers.types import Estimate

__all__ = ["as_values", "bootstrap_mean"]


def as_values(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``values`` as a 1-D float array with NaN (unscored) entries removed.

    ``None`` becomes NaN and is removed too. Infinite values raise ``ValueError``.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[~np.isnan(x)]
    if np.isinf(x).any():
        raise ValueError("values contain an infinite score; a mean of them is undefined")
    return x


def bootstrap_mean(
    values: npt.ArrayLike,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Estimate:
    """Mean of ``values`` with a bootstrap CI (resampling in :mod:`calipers.stats._resample`;
    tests check it against ``scipy.stats.bootstrap``).

    Uses the BCa interval (method ``"bootstrap-bca"``); when BCa is undefined, as for constant
    data, it uses the percentile interval of the same resamples (``"bootstrap-percentile"``),
    which for all-equal values is ``[v, v]``. NaN values are unscored and dropped; none left
    gives ``Estimate.empty``. With a single value there is no resampling variability to
    measure, so the interval is ``(-inf, inf)`` with method ``"bootstrap-undefined"``. The same
    ``rng`` state gives the same result.
    """
    c = check_confidence(confidence)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    x = as_values(values)
    if x.size == 0:
        return Estimate.empty("bootstrap-bca", c)
    value = float(np.mean(x))
    if x.size == 1:
        return Estimate(value, -math.inf, math.inf, 1, "bootstrap-undefined", c)
    draws = resample_means(x[:, None], rng, n_resamples)[:, 0]
    return bootstrap_estimate(x, draws, "bootstrap", c)
