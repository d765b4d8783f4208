"""pass@k: the chance that at least one of k samples solves a problem (Chen et al. 2021).

With ``n`` samples of a problem of which ``c`` are correct, the unbiased estimator is
``1 - C(n-c, k) / C(n, k)``, computed as the product ``prod_{i=n-c+1}^{n} (1 - k/i)`` so it
neither overflows nor loses precision for large n (the numpy form of the HumanEval paper).
Over problems it is averaged; the interval treats problems as the sampling unit (each
problem's estimate is one value) and is chosen by :func:`~calipers.stats.summarize`: Wilson
when every value is 0 or 1 (one sample per problem, k = 1, or k = n), else the bootstrap
over problems (BCa) with the ``rng`` passed in.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calipers.stats._summarize import summarize
from calipers.types import Estimate

__all__ = ["pass_at_k", "pass_at_k_estimate"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem from ``n`` samples with ``c`` correct (``1 <= k <= n``)."""
    if not (
        isinstance(n, int | np.integer)
        and isinstance(c, int | np.integer)
        and isinstance(k, int | np.integer)
    ):
        raise TypeError(f"pass_at_k takes integers, got n={n!r}, c={c!r}, k={k!r}")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"pass_at_k needs n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def pass_at_k_estimate(
    correct_counts: Sequence[int],
    n: int | Sequence[int],
    k: int,
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> Estimate:
    """Mean pass@k over problems, with an interval over problems.

    ``correct_counts[i]`` of ``n`` (or ``n[i]``) samples of problem ``i`` passed; every
    problem needs at least ``k`` samples. The interval method is named in the Estimate:
    ``wilson`` when each problem's pass@k is 0 or 1, else ``bootstrap-bca`` (resampling
    problems with ``rng``). No problems: ``Estimate.empty``."""
    counts = [int(c) for c in correct_counts]
    ns = [int(n)] * len(counts) if isinstance(n, int | np.integer) else [int(x) for x in n]
    if len(ns) != len(counts):
        raise ValueError(f"got {len(counts)} correct counts but {len(ns)} sample counts")
    short = [i for i, m in enumerate(ns) if m < k]
    if short:
        raise ValueError(
            f"pass@{k} needs at least {k} samples per problem; problem #{short[0]} has "
            f"{ns[short[0]]}"
        )
    values = np.array([pass_at_k(m, c, k) for m, c in zip(ns, counts, strict=True)])
    return summarize(values, rng=rng, confidence=confidence)
