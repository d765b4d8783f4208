"""Has the traffic changed? Two-window drift tests with a controlled false-alarm rate.

Each test compares a reference window with a current one and returns a p-value, so that
"alarm when p <= alpha" raises a false alarm at most alpha of the time when nothing changed;
several features tested at once are corrected with Holm (:func:`adjust_drift`). Numbers:
PSI with a permutation-calibrated threshold, Kolmogorov-Smirnov. Categories (language,
topic cluster): chi-square. Embeddings: MMD with a permutation test, and a classifier
two-sample test. See ``docs/statistics-agreement-sequential-drift.md``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from calipers.stats._multiple import adjust

__all__ = [
    "DriftTest",
    "adjust_drift",
    "chi2_drift",
    "classifier_drift",
    "ks_drift",
    "mmd2_unbiased",
    "mmd_drift",
    "psi",
    "psi_drift",
]

Floats = npt.NDArray[np.float64]
CELLS = 1 << 22  # permutation cells held at once
NAN = math.nan


@dataclass(frozen=True, slots=True)
class DriftTest:
    """One drift test of a current window against a reference window.

    ``threshold`` is the statistic value at which this test alarms at ``alpha`` on its own
    (NaN where the test has none); ``p_adjusted`` is set by :func:`adjust_drift` when several
    features are tested together, and ``drifted`` then uses it. A test that could not run
    (an empty window) has NaN statistic and p-value and never alarms.
    """

    test: str
    statistic: float
    p_value: float
    threshold: float
    n_reference: int
    n_current: int
    alpha: float
    p_adjusted: float = NAN

    @property
    def drifted(self) -> bool:
        p = self.p_value if math.isnan(self.p_adjusted) else self.p_adjusted
        return p <= self.alpha


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and math.isnan(v))


def _numbers(x: npt.ArrayLike, name: str) -> Floats:
    v = np.asarray(x, dtype=np.float64).reshape(-1)
    v = v[~np.isnan(v)]
    if np.isinf(v).any():
        raise ValueError(f"{name} contains an infinite value")
    return v


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def _skipped(test: str, n_ref: int, n_cur: int, alpha: float) -> DriftTest:
    return DriftTest(test, NAN, NAN, NAN, n_ref, n_cur, alpha)


def _perm_p(observed: float, null: Floats) -> float:
    """``(1 + #{null >= observed}) / (1 + B)``: valid, never 0 (Phipson & Smyth 2010)."""
    tol = 1e-12 * max(1.0, abs(observed))
    return float((1 + np.count_nonzero(null >= observed - tol)) / (1 + null.size))


def _psi_rows(ref: Floats, cur: Floats, bins: int, eps: float) -> Floats:
    """PSI of each row pair: bins are the quantile bins of that row of ``ref`` (quantiles by
    linear interpolation, as ``np.quantile``; bins right-closed, ``(e_{i-1}, e_i]``)."""
    s = np.sort(ref, axis=1)
    h = (s.shape[1] - 1) * np.arange(1, bins) / bins
    lo = np.floor(h).astype(np.intp)
    hi = np.minimum(lo + 1, s.shape[1] - 1)
    edges = s[:, lo] + (h - lo) * (s[:, hi] - s[:, lo])

    def shares(x: Floats) -> Floats:
        below = (x[:, :, None] <= edges[:, None, :]).sum(axis=1)  # values <= each edge
        cum = np.concatenate(
            [np.zeros((x.shape[0], 1)), below, np.full((x.shape[0], 1), x.shape[1])], axis=1
        )
        share: Floats = np.maximum(np.diff(cum, axis=1) / x.shape[1], eps)
        return share

    p, q = shares(ref), shares(cur)
    out: Floats = np.sum((q - p) * np.log(q / p), axis=1)
    return out


def psi(
    reference: npt.ArrayLike, current: npt.ArrayLike, *, bins: int = 10, eps: float = 1e-4
) -> float:
    """Population stability index ``sum_i (q_i - p_i) ln(q_i / p_i)``.

    ``p_i``, ``q_i``: shares of the reference and current values in bin i; the bins are
    the ``bins`` quantile bins of the reference (right-closed, ``(e_{i-1}, e_i]``; tied
    edges give empty bins that add 0). A share of 0 is replaced by ``eps``. NaN values are
    dropped; an empty window gives NaN.
    """
    if bins < 2:
        raise ValueError(f"bins must be at least 2, got {bins}")
    ref, cur = _numbers(reference, "reference"), _numbers(current, "current")
    if ref.size == 0 or cur.size == 0:
        return NAN
    return float(_psi_rows(ref[None, :], cur[None, :], bins, eps)[0])


def psi_drift(
    reference: npt.ArrayLike,
    current: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    bins: int = 10,
    eps: float = 1e-4,
    alpha: float = 0.05,
    n_permutations: int = 1000,
) -> DriftTest:
    """PSI with a permutation p-value and the threshold that alarms at ``alpha``.

    If nothing changed, the two windows are exchangeable: the PSI of a random split of the
    pooled values into windows of the same sizes is a draw from its no-drift distribution.
    ``threshold`` is the ``1 - alpha`` quantile of those draws. The usual fixed 0.1 / 0.25
    thresholds are not used: with no drift PSI is about ``(bins - 1)(1/n + 1/m)`` (a
    chi-square), so 0.1 alarms on almost every pair of 100-value windows and almost never
    on 100,000-value ones; its false-alarm rate is set by the window size, not chosen.
    """
    a = _check_alpha(alpha)
    ref, cur = _numbers(reference, "reference"), _numbers(current, "current")
    if ref.size == 0 or cur.size == 0:
        return _skipped("psi-permutation", ref.size, cur.size, a)
    observed = psi(ref, cur, bins=bins, eps=eps)
    pooled, m = np.concatenate([ref, cur]), ref.size
    rows, null = max(1, CELLS // (pooled.size * bins)), []
    for start in range(0, n_permutations, rows):
        z = rng.permuted(
            np.broadcast_to(pooled, (min(rows, n_permutations - start), pooled.size)), axis=1
        )
        null.append(_psi_rows(z[:, :m], z[:, m:], bins, eps))
    draws = np.concatenate(null)
    return DriftTest(
        "psi-permutation",
        observed,
        _perm_p(observed, draws),
        float(np.quantile(draws, 1 - a)),
        ref.size,
        cur.size,
        a,
    )


def ks_drift(reference: npt.ArrayLike, current: npt.ArrayLike, *, alpha: float = 0.05) -> DriftTest:
    """Two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``, exact for small windows)
    for a continuous feature (length, latency, a score). ``threshold`` is the asymptotic
    critical distance ``sqrt(-ln(alpha/2)/2) sqrt((n + m)/(n m))``. With many ties
    (discrete values) the test is conservative: it alarms less than alpha."""
    a = _check_alpha(alpha)
    ref, cur = _numbers(reference, "reference"), _numbers(current, "current")
    if ref.size == 0 or cur.size == 0:
        return _skipped("ks", ref.size, cur.size, a)
    r = stats.ks_2samp(ref, cur)
    m, n = ref.size, cur.size
    crit = math.sqrt(-math.log(a / 2) / 2) * math.sqrt((m + n) / (m * n))
    return DriftTest("ks", float(r.statistic), float(r.pvalue), crit, ref.size, cur.size, a)


def _chi2_rows(cur: Floats, pooled: Floats, n_ref: int, n_cur: int) -> Floats:
    """Pearson chi-square of the 2 x K tables whose current-window counts are rows of ``cur``."""
    total = n_ref + n_cur
    e_cur, e_ref = n_cur * pooled / total, n_ref * pooled / total
    out: Floats = (((cur - e_cur) ** 2 / e_cur) + ((pooled - cur - e_ref) ** 2 / e_ref)).sum(-1)
    return out


def chi2_drift(
    reference: Sequence[Hashable],
    current: Sequence[Hashable],
    *,
    rng: np.random.Generator,
    alpha: float = 0.05,
    n_permutations: int = 2000,
) -> DriftTest:
    """Did the shares of categories (language, topic cluster, route) change?

    Pearson chi-square on the 2 x K table of counts (None and NaN labels dropped). When every
    expected count is at least 5, the chi-square p-value on K - 1 df (``chi2``); otherwise
    a permutation p-value (``chi2-permutation``): with no change, the current window's
    counts are a multivariate hypergeometric draw from the pooled counts.
    """
    a = _check_alpha(alpha)
    ref = [v for v in reference if not _missing(v)]
    cur = [v for v in current if not _missing(v)]
    if not ref or not cur:
        return _skipped("chi2", len(ref), len(cur), a)
    index: dict[Hashable, int] = {}
    codes = np.array([index.setdefault(v, len(index)) for v in ref + cur])
    pooled = np.bincount(codes, minlength=len(index)).astype(np.float64)
    counts = np.bincount(codes[len(ref) :], minlength=len(index)).astype(np.float64)
    observed = float(_chi2_rows(counts, pooled, len(ref), len(cur)))
    if len(index) == 1:
        return DriftTest("chi2", 0.0, 1.0, NAN, len(ref), len(cur), a)
    expected = np.outer([len(ref), len(cur)], pooled) / (len(ref) + len(cur))
    if expected.min() >= 5:
        df = len(index) - 1
        return DriftTest(
            "chi2",
            observed,
            float(stats.chi2.sf(observed, df)),
            float(stats.chi2.ppf(1 - a, df)),
            len(ref),
            len(cur),
            a,
        )
    draws = rng.multivariate_hypergeometric(
        pooled.astype(np.int64), len(cur), size=n_permutations
    ).astype(np.float64)
    null = _chi2_rows(draws, pooled, len(ref), len(cur))
    return DriftTest(
        "chi2-permutation",
        observed,
        _perm_p(observed, null),
        float(np.quantile(null, 1 - a)),
        len(ref),
        len(cur),
        a,
    )


def _rows(x: npt.ArrayLike, name: str) -> Floats:
    v = np.asarray(x, dtype=np.float64)
    v = v.reshape(-1, 1) if v.ndim == 1 else v
    if v.ndim != 2:
        raise ValueError(f"{name} must be an (n, d) array of embeddings")
    v = v[~np.isnan(v).any(axis=1)]
    if np.isinf(v).any():
        raise ValueError(f"{name} contains an infinite value")
    return v


def _subsample(x: Floats, max_n: int, rng: np.random.Generator) -> Floats:
    return x if x.shape[0] <= max_n else x[rng.choice(x.shape[0], max_n, replace=False)]


def _kernel(z: Floats, bandwidth: float | None) -> Floats:
    """RBF kernel matrix ``exp(-|z_i - z_j|^2 / (2 s^2))`` with zero diagonal; ``s`` is the
    median pairwise distance of the pooled sample (the median heuristic) unless given."""
    sq = (z * z).sum(axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * z @ z.T, 0.0)
    if bandwidth is None:
        dist = np.sqrt(d2[np.triu_indices(z.shape[0], k=1)])
        bandwidth = float(np.median(dist)) if dist.size else 1.0
        bandwidth = bandwidth if bandwidth > 0 else 1.0
    k: Floats = np.exp(-d2 / (2 * bandwidth**2))
    np.fill_diagonal(k, 0.0)
    return k


def _mmd_rows(k0: Floats, assign: Floats, m: int) -> Floats:
    """Unbiased MMD^2 for each row of 0/1 ``assign`` (1 = reference) over kernel ``k0``."""
    n = k0.shape[0] - m
    rowsum, total = k0.sum(axis=1), float(k0.sum())
    sxx = ((assign @ k0) * assign).sum(axis=1)
    ra = assign @ rowsum
    syy, sxy = total - 2 * ra + sxx, ra - sxx
    out: Floats = sxx / (m * (m - 1)) + syy / (n * (n - 1)) - 2 * sxy / (m * n)
    return out


def mmd2_unbiased(x: npt.ArrayLike, y: npt.ArrayLike, *, bandwidth: float | None = None) -> float:
    """Unbiased squared MMD (Gretton et al. 2012, eq. 3) with an RBF kernel::

        1/(m(m-1)) sum_{i!=j} k(x_i, x_j) + 1/(n(n-1)) sum_{i!=j} k(y_i, y_j)
          - 2/(mn) sum_{i,j} k(x_i, y_j)

    ``bandwidth`` defaults to the median pairwise distance of the pooled sample. Needs at
    least 2 rows in each sample."""
    a, b = _rows(x, "x"), _rows(y, "y")
    if a.shape[0] < 2 or b.shape[0] < 2:
        raise ValueError("MMD needs at least 2 embeddings in each window")
    k0 = _kernel(np.vstack([a, b]), bandwidth)
    assign = np.zeros((1, k0.shape[0]))
    assign[0, : a.shape[0]] = 1.0
    return float(_mmd_rows(k0, assign, a.shape[0])[0])


def mmd_drift(
    reference: npt.ArrayLike,
    current: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    alpha: float = 0.05,
    n_permutations: int = 500,
    max_n: int = 1000,
    bandwidth: float | None = None,
) -> DriftTest:
    """Embedding drift: unbiased MMD^2 with an RBF kernel and a permutation p-value.

    Each window is first subsampled to ``max_n`` rows with ``rng`` (the kernel matrix is
    O(n^2)). The bandwidth (median heuristic) is computed once on the pooled sample, which a
    permutation does not change, so the permutation test is exact: with no drift it alarms
    at most ``alpha`` of the time. Permutations are vectorised (one matrix product each)."""
    a = _check_alpha(alpha)
    ref = _subsample(_rows(reference, "reference"), max_n, rng)
    cur = _subsample(_rows(current, "current"), max_n, rng)
    m, n = ref.shape[0], cur.shape[0]
    if m < 2 or n < 2:
        return _skipped("mmd-permutation", m, n, a)
    k0 = _kernel(np.vstack([ref, cur]), bandwidth)
    first = np.zeros((1, m + n))
    first[0, :m] = 1.0
    observed = float(_mmd_rows(k0, first, m)[0])
    rows, null = max(1, CELLS // (m + n)), []
    for start in range(0, n_permutations, rows):
        b = min(rows, n_permutations - start)
        order = rng.random((b, m + n)).argsort(axis=1)
        assign = np.zeros((b, m + n))
        np.put_along_axis(assign, order[:, :m], 1.0, axis=1)
        null.append(_mmd_rows(k0, assign, m))
    draws = np.concatenate(null)
    return DriftTest(
        "mmd-permutation",
        observed,
        _perm_p(observed, draws),
        float(np.quantile(draws, 1 - a)),
        m,
        n,
        a,
    )


def _logistic_fit(x: Floats, y: Floats, l2: float) -> Floats:
    """L2-penalised logistic regression (intercept first, unpenalised) by Newton's method:
    the penalty makes the loss strictly convex, so it converges even on separable data."""
    xb = np.column_stack([np.ones(x.shape[0]), x])
    pen = np.full(xb.shape[1], l2)
    pen[0] = 0.0
    w = np.zeros(xb.shape[1])
    for _ in range(100):
        p = special.expit(xb @ w)
        grad = xb.T @ (p - y) + pen * w
        hess = (xb.T * (p * (1 - p))) @ xb + np.diag(pen + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


def classifier_drift(
    reference: npt.ArrayLike,
    current: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    alpha: float = 0.05,
    max_n: int = 2000,
    l2: float = 1.0,
) -> DriftTest:
    """Embedding drift by a domain classifier: can a model tell the windows apart?

    A classifier two-sample test (Lopez-Paz & Oquab 2017): each window (subsampled to
    ``max_n``) is split in half at random; L2 logistic regression (standardised features)
    is fit on the first halves and scored on the second. The statistic is the held-out
    AUC (0.5: indistinguishable) and the p-value the one-sided Mann-Whitney test of the
    held-out scores: the classifier never saw those rows, so with no drift their scores are
    exchangeable and the test is valid with one fit (no refitting per permutation; the
    price is that half of the data only trains).
    """
    a = _check_alpha(alpha)
    ref = _subsample(_rows(reference, "reference"), max_n, rng)
    cur = _subsample(_rows(current, "current"), max_n, rng)
    if ref.shape[0] < 4 or cur.shape[0] < 4:
        return _skipped("classifier-auc", ref.shape[0], cur.shape[0], a)
    halves = [rng.permutation(len(w)) for w in (ref, cur)]
    train = [w[h[: len(h) // 2]] for w, h in zip((ref, cur), halves, strict=True)]
    test = [w[h[len(h) // 2 :]] for w, h in zip((ref, cur), halves, strict=True)]
    x = np.vstack(train)
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    y = np.r_[np.zeros(len(train[0])), np.ones(len(train[1]))]
    w = _logistic_fit((x - mu) / sd, y, l2)
    score_ref, score_cur = (((t - mu) / sd) @ w[1:] for t in test)
    r = stats.mannwhitneyu(score_cur, score_ref, alternative="greater")
    auc = float(r.statistic) / (len(score_cur) * len(score_ref))
    return DriftTest("classifier-auc", auc, float(r.pvalue), NAN, ref.shape[0], cur.shape[0], a)


def adjust_drift(
    tests: Mapping[str, DriftTest], method: Literal["holm", "bh"] = "holm"
) -> dict[str, DriftTest]:
    """The same tests with ``p_adjusted`` set, correcting for testing several features at
    once (Holm by default: the chance of any false alarm among them stays at alpha).
    Skipped tests (NaN p-value) are not counted."""
    names = list(tests)
    adjusted = adjust([tests[k].p_value for k in names], method)
    return {
        k: dataclasses.replace(tests[k], p_adjusted=p) for k, p in zip(names, adjusted, strict=True)
    }
