"""Is model B better than model A on the same items, and by how much? (paired comparison)

0/1 scores: exact McNemar test, Newcombe's hybrid score interval for the difference. Other
scores: paired bootstrap interval, sign-flip permutation test (or Wilcoxon). Clustered items:
cluster-robust t. See ``docs/comparisons-statistics.md`` for what is used when.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from calipers.stats._clustered import cluster_codes, clustered_mean
from calipers.stats._power import check_alpha_power, mde_paired
from calipers.stats._proportion import check_confidence, wilson
from calipers.stats._resample import CELLS, FEW, bootstrap_estimate, is_flat, resample_means
from calipers.types import Estimate

__all__ = [
    "PairedResult",
    "newcombe_interval",
    "paired_bootstrap",
    "paired_compare",
    "sign_flip_pvalue",
]

Floats = npt.NDArray[np.float64]
TestName = Literal["auto", "mcnemar-exact", "mcnemar-chi2", "permutation", "wilcoxon", "cluster-t"]
_TESTS = ("auto", "mcnemar-exact", "mcnemar-chi2", "permutation", "wilcoxon", "cluster-t")


@dataclass(frozen=True, slots=True)
class PairedResult:
    """B against A on the same items; ``diff`` is ``mean(b - a)``, positive when B scores higher.

    ``n_discordant`` is ``(B right and A wrong, A right and B wrong)`` for 0/1 scores, else
    None. ``mde`` is the smallest true |difference| this n detects with the requested power.
    """

    n: int
    mean_a: Estimate
    mean_b: Estimate
    diff: Estimate
    test: str
    p_value: float
    effect_size: float
    effect_size_name: str
    n_discordant: tuple[int, int] | None
    mde: float


def _wilson_bounds(k: Floats, n: Floats, z: float) -> tuple[Floats, Floats]:
    p, zz = k / n, z * z
    centre = (p + zz / (2 * n)) / (1 + zz / n)
    half = z * np.sqrt(p * (1 - p) / n + zz / (4 * n * n)) / (1 + zz / n)
    return centre - half, centre + half


def _phi(n11: Floats, n10: Floats, n01: Floats, n00: Floats) -> Floats:
    """Newcombe's continuity-corrected estimate of the correlation between the two scores."""
    n = n11 + n10 + n01 + n00
    margins = (n11 + n01) * (n10 + n00) * (n11 + n10) * (n01 + n00)
    cross = n11 * n00 - n10 * n01
    corrected = np.where(cross > n / 2, cross - n / 2, np.where(cross < 0, cross, 0.0))
    return np.where(margins > 0, corrected / np.sqrt(np.where(margins > 0, margins, 1.0)), 0.0)


def newcombe_interval(
    n11: npt.ArrayLike,
    n10: npt.ArrayLike,
    n01: npt.ArrayLike,
    n00: npt.ArrayLike,
    confidence: float = 0.95,
) -> tuple[Floats, Floats]:
    """Interval for ``p_b - p_a = (n01 - n10) / n`` from a paired 2x2 table (vectorised).

    ``n11``: both right; ``n10``: A right, B wrong; ``n01``: B right, A wrong; ``n00``: both
    wrong. Newcombe's hybrid score ("square-and-add") interval for paired data: R. G.
    Newcombe (1998), "Improved confidence intervals for the difference between binomial
    proportions based on paired data", Statistics in Medicine 17:2635-2650, method 10. With
    Wilson intervals ``(l_a, u_a)``, ``(l_b, u_b)`` for the two proportions::

        low  = d - sqrt((p_b - l_b)^2 - 2 phi (p_b - l_b)(u_a - p_a) + (u_a - p_a)^2)
        high = d + sqrt((u_b - p_b)^2 - 2 phi (u_b - p_b)(p_a - l_a) + (p_a - l_a)^2)

    where ``phi = C / sqrt(product of the four margins)`` with ``C = A - n/2`` if
    ``A = n11 n00 - n10 n01 > n/2``, ``0`` if ``0 <= A <= n/2``, ``A`` if ``A < 0``, and
    ``phi = 0`` when a margin is empty. Valid at small n (Fagerland, Lydersen & Laake 2014
    recommend it); every n must be positive.
    """
    c = check_confidence(confidence)
    t = [np.asarray(v, dtype=np.float64) for v in (n11, n10, n01, n00)]
    n = t[0] + t[1] + t[2] + t[3]
    z = float(stats.norm.ppf(0.5 + c / 2))
    pa, pb = (t[0] + t[1]) / n, (t[0] + t[2]) / n
    la, ua = _wilson_bounds(t[0] + t[1], n, z)
    lb, ub = _wilson_bounds(t[0] + t[2], n, z)
    phi, d = _phi(*t), pb - pa
    lo2 = (pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2
    hi2 = (ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2
    return d - np.sqrt(np.maximum(lo2, 0.0)), d + np.sqrt(np.maximum(hi2, 0.0))


def bootstrap_estimates(
    x: Floats, y: Floats, rng: np.random.Generator, c: float, n_resamples: int
) -> tuple[Estimate, Estimate, Estimate]:
    """Means of ``x``, ``y`` and of ``y - x`` from one paired bootstrap (NaN-free, n >= 1)."""
    pairs = np.column_stack((x, y))
    draws = resample_means(pairs, rng, n_resamples) if x.size > 1 else pairs
    return (
        bootstrap_estimate(x, draws[:, 0], "bootstrap", c),
        bootstrap_estimate(y, draws[:, 1], "bootstrap", c),
        bootstrap_estimate(y - x, draws[:, 1] - draws[:, 0], "paired-bootstrap", c),
    )


def paired_bootstrap(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
) -> tuple[Estimate, Estimate, Estimate]:
    """``(mean_a, mean_b, mean(b - a))`` with intervals from one paired bootstrap.

    NaN pairs are dropped. Methods: ``bootstrap-bca`` / ``paired-bootstrap-bca`` (or
    ``-percentile`` where BCa is undefined, e.g. all differences equal); one pair gives
    ``(-inf, inf)`` (``-undefined``), none gives empty estimates. Same ``rng`` state, same
    result.
    """
    c = check_confidence(confidence)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    x, y, _ = _pairs(a, b, None)
    if x.size == 0:
        return (Estimate.empty("bootstrap-bca", c),) * 2 + (
            Estimate.empty("paired-bootstrap-bca", c),
        )
    return bootstrap_estimates(x, y, rng, c, n_resamples)


def _random_flip_hits(d: Floats, rng: np.random.Generator, n_resamples: int, at: float) -> int:
    """How many of ``n_resamples`` random sign flips of ``d`` give ``|sum| >= at``."""
    mags, counts = np.unique(np.abs(d), return_counts=True)
    few, total, hits = mags.size * FEW <= d.size, float(d.sum()), 0
    rows = max(1, CELLS // (mags.size if few else d.size))
    for start in range(0, n_resamples, rows):
        m = min(rows, n_resamples - start)
        if few:  # sum_k mag_k (2 X_k - c_k), X_k ~ Binomial(c_k, 1/2): the same distribution
            null = (2 * rng.binomial(counts, 0.5, size=(m, mags.size)) - counts) @ mags
        else:  # flip the items whose random bit is 1: sum(d) - 2 sum(d[flipped])
            raw = rng.integers(0, 256, size=(m, -(-d.size // 8)), dtype=np.uint8)
            bits = np.unpackbits(raw, axis=1, count=d.size).astype(np.float64)
            null = total - 2 * (bits @ d)
        hits += int(np.count_nonzero(np.abs(null) >= at))
    return hits


def sign_flip_pvalue(
    d: npt.ArrayLike, *, rng: np.random.Generator, n_resamples: int = 10_000
) -> float:
    """Two-sided p-value of the paired sign-flip permutation test of ``mean(d) = 0``.

    If A and B are exchangeable on every item, each difference is as likely to be ``+|d_i|``
    as ``-|d_i|``. The p-value is the share of sign assignments with ``|sum| >=`` the
    observed one: exact over all ``2^m`` assignments (m non-zero differences) when
    ``2^m <= n_resamples``, else ``(1 + hits) / (1 + n_resamples)`` over random assignments
    (Phipson & Smyth 2010), which is valid and never 0. Written here rather than with
    ``scipy.stats.permutation_test``, which draws a permutation per item (too slow for large
    n); the tests check the two agree.
    """
    v = np.asarray(d, dtype=np.float64).reshape(-1)
    v = v[~np.isnan(v) & (v != 0)]
    if v.size == 0:
        return 1.0
    at = abs(float(v.sum())) - 1e-9 * float(np.abs(v).sum())  # round-off is not a difference
    if 2**v.size <= n_resamples:
        signs = 1 - 2 * ((np.arange(2**v.size)[:, None] >> np.arange(v.size)) & 1)
        return float(np.mean(np.abs(signs @ v) >= at))
    return (1 + _random_flip_hits(v, rng, n_resamples, at)) / (1 + n_resamples)


def _pairs(
    a: npt.ArrayLike, b: npt.ArrayLike, clusters: Sequence[Hashable] | None
) -> tuple[Floats, Floats, list[Hashable] | None]:
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    if x.size != y.size:
        raise ValueError(f"a has {x.size} scores and b has {y.size}; pair them item by item")
    if clusters is not None and len(clusters) != x.size:
        raise ValueError(f"got {x.size} paired scores but {len(clusters)} cluster labels")
    keep = ~(np.isnan(x) | np.isnan(y))
    if np.isinf(x[keep]).any() or np.isinf(y[keep]).any():
        raise ValueError("scores contain an infinite value; a mean of them is undefined")
    groups = None if clusters is None else [g for g, k in zip(clusters, keep, strict=True) if k]
    return x[keep], y[keep], groups


def _test_name(test: str, binary: bool, clustered: bool, empty: bool) -> str:
    if test not in _TESTS:
        raise ValueError(f"test must be one of {', '.join(_TESTS)}; got {test!r}")
    if clustered and test not in ("auto", "cluster-t"):
        raise ValueError(f"test={test!r} assumes independent items; with clusters use cluster-t")
    if test == "cluster-t" and not clustered:
        raise ValueError("test='cluster-t' needs clusters")
    if test == "auto":
        return (
            "none"
            if empty
            else "cluster-t"
            if clustered
            else ("mcnemar-exact" if binary else "permutation")
        )
    if test.startswith("mcnemar") and not binary and not empty:
        raise ValueError(f"{test} needs 0/1 scores; use 'permutation' or 'wilcoxon'")
    return test


def _binary(x: Floats, y: Floats, c: float) -> tuple[Estimate, Estimate, Estimate, list[int]]:
    n = x.size
    n11, n10 = int(np.sum((x == 1) & (y == 1))), int(np.sum((x == 1) & (y == 0)))
    n01 = int(np.sum((x == 0) & (y == 1)))
    table = [n11, n10, n01, n - n11 - n10 - n01]
    low, high = (float(v) for v in newcombe_interval(n11, n10, n01, table[3], confidence=c))
    d = (n01 - n10) / n
    diff = Estimate(d, max(-1.0, min(low, d)), min(1.0, max(high, d)), n, "newcombe-paired", c)
    return wilson(n11 + n10, n, c), wilson(n11 + n01, n, c), diff, table


def _cluster_t(diff: Estimate, groups: list[Hashable], c: float) -> tuple[float, float]:
    """(p-value, SE) of the cluster-robust t test of mean(b - a) = 0 on G - 1 df."""
    g = int(cluster_codes(groups).max()) + 1
    if g < 2:
        return 1.0, math.inf
    se = diff.half_width / float(stats.t.ppf(0.5 + c / 2, g - 1))
    if se == 0.0:
        return (1.0 if diff.value == 0.0 else 0.0), 0.0
    return float(2 * stats.t.sf(abs(diff.value) / se, g - 1)), se


def _p_value(
    name: str, d: Floats, table: list[int] | None, rng: np.random.Generator, n_resamples: int
) -> float:
    if name.startswith("mcnemar"):
        assert table is not None
        if table[1] + table[2] == 0:
            return 1.0
        res = mcnemar([table[:2], table[2:]], exact=name == "mcnemar-exact", correction=True)
        return float(res.pvalue)
    if name == "wilcoxon":
        nonzero = d[d != 0]
        return 1.0 if nonzero.size == 0 else float(stats.wilcoxon(nonzero).pvalue)
    return sign_flip_pvalue(d, rng=rng, n_resamples=n_resamples)


def _effect(x: Floats, y: Floats, binary: bool) -> tuple[float, str]:
    if binary:
        h = 2 * math.asin(math.sqrt(float(y.mean()))) - 2 * math.asin(math.sqrt(float(x.mean())))
        return h, "cohen-h"
    d = y - x
    if d.size < 2:
        return math.nan, "d_z"
    mean = float(d.mean())
    if is_flat(d):  # every difference equal: 0 if they are all 0, else unbounded
        return (0.0 if is_flat(np.append(d, 0.0)) else math.copysign(math.inf, mean)), "d_z"
    return mean / float(np.std(d, ddof=1)), "d_z"


def _mde(d: Floats, binary: bool, se: float | None, alpha: float, power: float) -> float:
    n = d.size
    if binary and se is None:
        return mde_paired(n, p_discordant=np.count_nonzero(d) / n, alpha=alpha, power=power)
    var = n * se * se if se is not None else float(np.var(d, ddof=1)) if n > 1 else math.inf
    if math.isinf(var):
        return math.inf
    floor = mde_paired(n, p_discordant=0.0, alpha=alpha, power=power) if binary else 0.0
    if not binary and is_flat(d):
        return math.nan  # every difference equal: the data say nothing about the spread
    return max(floor, mde_paired(n, var_diff=var, alpha=alpha, power=power))


def paired_compare(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
    n_resamples: int = 10_000,
    clusters: Sequence[Hashable] | None = None,
    test: TestName = "auto",
) -> PairedResult:
    """Compare B with A on the same items: ``a[i]`` and ``b[i]`` score item i.

    Pairs where either score is NaN (unscored) are dropped, with their cluster labels.

    * 0/1 scores: means with Wilson intervals, difference with Newcombe's paired interval
      (:func:`newcombe_interval`), exact McNemar test (``statsmodels``; ``test="mcnemar-chi2"``
      for the continuity-corrected chi-square), effect size Cohen's h, and the discordant
      counts.
    * Other scores: means and difference from one paired bootstrap (items resampled with
      their pair; BCa, percentile if BCa is undefined), sign-flip permutation test
      (``"permutation"``) or Wilcoxon signed-rank (``test="wilcoxon"``, scipy), effect size
      ``d_z = mean(d) / sd(d)``.
    * ``clusters`` given: means and difference from :func:`clustered_mean` (cluster-robust SE,
      t on G - 1 df) and the matching t test ``mean / SE`` (``"cluster-t"``); with equal
      cluster sizes that is the one-sample t test on the cluster means of the differences.

    ``mde`` uses the observed discordance or variance (see :func:`mde_paired`); it is NaN
    when every difference is equal (no spread to go on). No pairs left gives empty
    estimates, n = 0 and NaN p-value; ``a`` and ``b`` of different lengths raise ValueError.
    """
    c = check_confidence(confidence)
    check_alpha_power(alpha, power)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    x, y, groups = _pairs(a, b, clusters)
    n, nan = x.size, math.nan
    binary = n > 0 and bool(np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all())
    name = _test_name(test, binary, groups is not None, n == 0)
    if n == 0:
        empty = Estimate.empty("none", c)
        return PairedResult(0, empty, empty, empty, name, nan, nan, "none", None, nan)
    d, table, se = y - x, None, None
    if groups is not None:
        mean_a, mean_b, diff = (clustered_mean(v, groups, c) for v in (x, y, d))
        p_value, se = _cluster_t(diff, groups, c)
    else:
        if binary:
            mean_a, mean_b, diff, table = _binary(x, y, c)
        else:
            mean_a, mean_b, diff = bootstrap_estimates(x, y, rng, c, n_resamples)
        p_value = _p_value(name, d, table, rng, n_resamples)
    effect, effect_name = _effect(x, y, binary)
    discordant = (int(np.sum(d > 0)), int(np.sum(d < 0))) if binary else None
    return PairedResult(
        n,
        mean_a,
        mean_b,
        diff,
        name,
        p_value,
        effect,
        effect_name,
        discordant,
        _mde(d, binary, se, alpha, power),
    )
