"""The default interval chooser the runner uses to turn per-sample scores into an Estimate."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

from calipers.stats._bootstrap import as_values, bootstrap_mean
from calipers.stats._clustered import cluster_codes, clustered_mean
from calipers.stats._proportion import check_confidence, wilson
from calipers.types import Estimate

__all__ = ["is_binary", "summarize"]


def is_binary(values: npt.ArrayLike) -> bool:
    """True when every scored (non-NaN) value is 0 or 1 and there is at least one."""
    x = as_values(values)
    return bool(x.size > 0 and np.isin(x, (0.0, 1.0)).all())


def _has_shared_cluster(clusters: Sequence[Hashable]) -> bool:
    codes = cluster_codes(clusters)
    return codes.size > 0 and int(np.bincount(codes).max()) > 1


def summarize(
    values: npt.ArrayLike,
    *,
    clusters: Sequence[Hashable] | None = None,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> Estimate:
    """Turn per-sample scores into an ``Estimate``, choosing the interval.

    1. NaN values (unscored: errors, skipped) are dropped with their cluster labels.
    2. Nothing left: ``Estimate.empty`` (value NaN, n = 0), never 0.
    3. ``clusters`` given and some cluster holds more than one scored item:
       :func:`clustered_mean` (the items are not independent).
    4. Every value is 0 or 1: :func:`wilson` on (sum, n), valid at small n.
    5. Otherwise: :func:`bootstrap_mean` with ``rng``.
    """
    c = check_confidence(confidence)
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    keep = ~np.isnan(x)
    if clusters is not None:
        if len(clusters) != x.size:
            raise ValueError(f"got {x.size} values but {len(clusters)} cluster labels")
        kept = [g for g, k in zip(clusters, keep, strict=True) if k]
        if _has_shared_cluster(kept):
            return clustered_mean(x[keep], kept, c)
    x = as_values(x)
    if x.size == 0:
        return Estimate.empty("none", c)
    if is_binary(x):
        return wilson(int(x.sum()), int(x.size), c)
    return bootstrap_mean(x, rng, c)
