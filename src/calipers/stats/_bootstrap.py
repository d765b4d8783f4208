"""Mean of arbitrary scores with a bootstrap confidence interval (scipy.stats.bootstrap)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import numpy.typing as npt
from scipy import stats

from calipers.stats._proportion import check_confidence
from calipers.types import Estimate

__all__ = ["as_values", "bootstrap_mean"]

# Resampling and the BCa jackknife build (batch x n) arrays; keep each batch near this size.
_BATCH_CELLS = 2_000_000


def as_values(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``values`` as a 1-D float array with NaN (unscored) entries removed.

    ``None`` becomes NaN and is removed too. Infinite values raise ``ValueError``.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[~np.isnan(x)]
    if np.isinf(x).any():
        raise ValueError("values contain an infinite score; a mean of them is undefined")
    return x


def _run(
    x: npt.NDArray[np.float64],
    rng: np.random.Generator,
    c: float,
    n_resamples: int,
) -> tuple[float, float, str]:
    batch = max(1, min(n_resamples, _BATCH_CELLS // x.size))
    with warnings.catch_warnings():
        # BCa is undefined when every jackknife mean is equal (e.g. constant data); scipy
        # warns and returns NaN, and we fall back to the percentile interval below.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap(
            (x,), np.mean, n_resamples=n_resamples, batch=batch, vectorized=True,
            confidence_level=c, method="BCa", rng=rng,
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isfinite(low) and math.isfinite(high):
        return low, high, "bootstrap-bca"
    # Reuse the same resamples (n_resamples=0 draws nothing new) for the percentile interval.
    res = stats.bootstrap(
        (x,), np.mean, n_resamples=0, vectorized=True, confidence_level=c,
        method="percentile", bootstrap_result=res, rng=rng,
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high), (
        "bootstrap-percentile"
    )


def bootstrap_mean(
    values: npt.ArrayLike,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Estimate:
    """Mean of ``values`` with a bootstrap CI from ``scipy.stats.bootstrap``.

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
    low, high, method = _run(x, rng, c, n_resamples)
    return Estimate(value, min(low, value), max(high, value), int(x.size), method, c)
