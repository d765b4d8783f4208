"""Mean with a cluster-robust standard error (Miller 2024, "Adding Error Bars to Evals")."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

from calipers.stats._proportion import check_confidence
from calipers.types import Estimate

__all__ = ["cluster_codes", "clustered_mean"]


def cluster_codes(clusters: Sequence[Hashable]) -> npt.NDArray[np.intp]:
    """Integer codes 0..G-1 for cluster labels, in order of first appearance."""
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(c, len(index)) for c in clusters], dtype=np.intp)


def clustered_mean(
    values: npt.ArrayLike,
    clusters: Sequence[Hashable],
    confidence: float = 0.95,
) -> Estimate:
    """Mean of ``values`` with a cluster-robust CI (method ``"cluster-t"``).

    Items in the same cluster (questions on one passage, one prompt under several
    perturbations, ...) are not independent, so the naive SE understates uncertainty. The
    standard error is the Liang-Zeger sandwich for an intercept-only OLS
    (``statsmodels`` ``cov_type="cluster"``)::

        SE^2 = G/(G-1) * (1/N^2) * sum_g (sum_{i in g} (x_i - mean))^2

    where ``G/(G-1)`` is statsmodels' default small-sample factor ``G/(G-1)*(N-1)/(N-K)``
    with K = 1. With one item per cluster this equals the naive ``s^2/N`` exactly. The
    interval is ``mean +- t_{G-1} * SE``; it is not clipped to the range of the scores.

    NaN values are unscored and dropped together with their cluster labels. With a single
    cluster the between-cluster variance cannot be estimated at all (the t distribution has
    0 degrees of freedom), so the interval is ``(-inf, inf)``: the data say nothing about
    how far the mean could move on fresh clusters.
    """
    c = check_confidence(confidence)
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(clusters) != x.size:
        raise ValueError(f"got {x.size} values but {len(clusters)} cluster labels")
    keep = ~np.isnan(x)
    if np.isinf(x[keep]).any():
        raise ValueError("values contain an infinite score; a mean of them is undefined")
    x, groups = x[keep], cluster_codes([g for g, k in zip(clusters, keep, strict=True) if k])
    if x.size == 0:
        return Estimate.empty("cluster-t", c)
    value = float(np.mean(x))
    n_clusters = int(groups.max()) + 1
    if n_clusters < 2:
        return Estimate(value, -math.inf, math.inf, int(x.size), "cluster-t", c)
    from scipy import stats  # imported here: most runs have no clusters
    from statsmodels.regression.linear_model import OLS

    fit = OLS(x, np.ones((x.size, 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    se = float(np.asarray(fit.bse)[0])
    half = float(stats.t.ppf(0.5 + c / 2, n_clusters - 1)) * se
    return Estimate(value, value - half, value + half, int(x.size), "cluster-t", c)
