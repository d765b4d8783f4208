"""Reliability of an agent over repeated trials: pass^k, pass@k, flip rate, and the smallest
difference between two agents that a study of a given size can detect.

With ``n`` trials of a task of which ``c`` succeeded:

- pass^k (tau-bench, Yao et al. 2024): the chance that *all* of k fresh trials succeed,
  ``p^k``; its unbiased estimate is ``C(c, k) / C(n, k)`` (the share of the k-subsets of the
  trials that are all successes), computed as ``prod_{i<k} (c - i) / (n - i)``. The plug-in
  ``(c/n)^k`` is biased (upwards for k >= 2 by Jensen's inequality).
- pass@k (Chen et al. 2021): the chance that *at least one* of k trials succeeds,
  ``1 - C(n - c, k) / C(n, k)`` (:func:`~calipers.stats.pass_at_k`).
- flip rate: the share of the ``C(n, 2)`` pairs of trials that disagree,
  ``c (n - c) / C(n, 2)``, unbiased for ``2 p (1 - p)``: how often two identical runs of the
  task give different outcomes.

Every per-task value is averaged over tasks, and the interval treats the task as the sampling
unit (a task's trials are one cluster): Wilson when every task's value is 0 or 1, otherwise the
BCa bootstrap that resamples tasks with the ``rng`` passed in (:func:`summarize`). When fewer
than :data:`FEW` tasks lie off one end of [0, 1] (few tasks with any success, or few with any
failure: rare pass^k, common pass@k) the bootstrap has too little to resample and covers
badly (0.78 instead of 0.95 for a mean pass^4 of 1.2% over 20 tasks), so the interval is
widened to include the Wilson bound of the mean (the score interval with the Bernoulli
variance ``m (1 - m)``, an upper bound of the variance of any values in [0, 1]; method
``bootstrap-bca+wilson-bound``). Tests check the coverage by simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from calipers.stats._passk import pass_at_k
from calipers.stats._power import check_alpha_power
from calipers.stats._proportion import check_confidence
from calipers.stats._summarize import summarize
from calipers.types import Estimate

__all__ = [
    "between_task_variance",
    "flip_rate",
    "flip_rate_estimate",
    "mean_over_items",
    "min_detectable_difference",
    "pass_at_k_curve",
    "pass_hat_k",
    "pass_hat_k_curve",
    "pass_hat_k_estimate",
]

FEW = 5  # tasks off an end of [0, 1] below which the bootstrap interval is widened


def _wilson_bound(mean: float, n: int, confidence: float) -> tuple[float, float]:
    """The Wilson score interval of a mean of ``n`` values in [0, 1] treated as Bernoulli:
    conservative, since no values in [0, 1] with mean m vary more than m (1 - m)."""
    from statistics import NormalDist

    z = -NormalDist().inv_cdf((1.0 - confidence) / 2.0)
    z2 = z * z
    denom = 1 + z2 / n
    center = (mean + z2 / (2 * n)) / denom
    half = z * math.sqrt(max(mean * (1 - mean), 0.0) / n + z2 / (4.0 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def _over_tasks(
    values: npt.NDArray[np.float64], rng: np.random.Generator, confidence: float
) -> Estimate:
    """The mean of per-task values in [0, 1] with its interval over tasks (see the module
    doc: Wilson, BCa bootstrap, or the bootstrap widened by the Wilson bound)."""
    c = check_confidence(confidence)
    est = summarize(values, rng=rng, confidence=c)
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if est.is_empty or est.method == "wilson" or min((x > 0).sum(), (x < 1).sum()) >= FEW:
        return est
    low, high = _wilson_bound(est.value, int(x.size), c)
    return Estimate(
        est.value,
        min(low, est.low),
        max(high, est.high),
        est.n,
        "bootstrap-bca+wilson-bound",
        c,
    )


def mean_over_items(
    values: npt.ArrayLike, rng: np.random.Generator, confidence: float = 0.95
) -> Estimate:
    """The mean of per-item values in [0, 1] (an item's mean over its trials or epochs) with
    an interval over items: Wilson when every value is 0 or 1, else the BCa bootstrap, widened
    by the Wilson bound when fewer than ``FEW`` items lie off an end of [0, 1]. Never below 0,
    above 1 or of zero width at 0% or 100%, where a t interval over trials would be."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    kept = x[~np.isnan(x)]
    if ((kept < 0) | (kept > 1)).any():
        raise ValueError("mean_over_items needs values in [0, 1]")
    return _over_tasks(x, rng, confidence)


def _check(n: int, c: int) -> None:
    if not all(isinstance(v, int | np.integer) for v in (n, c)):
        raise TypeError(f"trial counts must be integers, got n={n!r}, c={c!r}")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one task: ``C(c, k) / C(n, k)`` (``1 <= k <= n``)."""
    _check(n, c)
    if not isinstance(k, int | np.integer) or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n, got k={k!r}, n={n}")
    if c < k:
        return 0.0
    return float(np.prod((c - np.arange(k)) / (n - np.arange(k, dtype=np.float64))))


def _counts(correct: Sequence[int], n: int | Sequence[int]) -> tuple[list[int], list[int]]:
    counts = [int(c) for c in correct]
    ns = [int(n)] * len(counts) if isinstance(n, int | np.integer) else [int(x) for x in n]
    if len(ns) != len(counts):
        raise ValueError(f"got {len(counts)} success counts but {len(ns)} trial counts")
    return counts, ns


def _need(ns: Sequence[int], k: int, what: str) -> None:
    short = [i for i, m in enumerate(ns) if m < k]
    if short:
        raise ValueError(
            f"{what} needs at least {k} trials per task; task #{short[0]} has {ns[short[0]]}"
        )


def pass_hat_k_estimate(
    correct: Sequence[int],
    n: int | Sequence[int],
    k: int,
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> Estimate:
    """Mean pass^k over tasks with an interval over tasks (``correct[i]`` successes of
    ``n`` or ``n[i]`` trials of task ``i``). No tasks: ``Estimate.empty``."""
    counts, ns = _counts(correct, n)
    _need(ns, k, f"pass^{k}")
    values = np.array([pass_hat_k(m, c, k) for m, c in zip(ns, counts, strict=True)])
    return _over_tasks(values, rng, confidence)


def _curve(
    correct: Sequence[int],
    n: int | Sequence[int],
    rng: np.random.Generator,
    confidence: float,
    one: Callable[[int, int, int], float],
) -> dict[int, Estimate]:
    counts, ns = _counts(correct, n)
    if not counts:
        return {}
    out: dict[int, Estimate] = {}
    for k in range(1, min(ns) + 1):
        values = np.array([one(m, c, k) for m, c in zip(ns, counts, strict=True)])
        out[k] = _over_tasks(values, rng, confidence)
    return out


def pass_hat_k_curve(
    correct: Sequence[int],
    n: int | Sequence[int],
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> dict[int, Estimate]:
    """pass^k for k = 1 .. the fewest trials of any task, each with its interval over tasks."""
    return _curve(correct, n, rng, confidence, pass_hat_k)


def pass_at_k_curve(
    correct: Sequence[int],
    n: int | Sequence[int],
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> dict[int, Estimate]:
    """pass@k for k = 1 .. the fewest trials of any task, each with its interval over tasks."""
    return _curve(correct, n, rng, confidence, pass_at_k)


def flip_rate(n: int, c: int) -> float:
    """The share of pairs of a task's ``n`` trials whose outcomes differ:
    ``c (n - c) / C(n, 2)`` (``n >= 2``)."""
    _check(n, c)
    if n < 2:
        raise ValueError(f"a flip rate needs at least 2 trials, got n={n}")
    return c * (n - c) / (n * (n - 1) / 2)


def flip_rate_estimate(
    correct: Sequence[int],
    n: int | Sequence[int],
    *,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> Estimate:
    """Mean flip rate over tasks with an interval over tasks (tasks need 2+ trials)."""
    counts, ns = _counts(correct, n)
    _need(ns, 2, "a flip rate")
    values = np.array([flip_rate(m, c) for m, c in zip(ns, counts, strict=True)])
    return _over_tasks(values, rng, confidence)


def between_task_variance(correct: Sequence[int], n: int | Sequence[int]) -> float:
    """How much tasks' true success rates vary, ``Var(p_i)``, from their trial counts.

    The observed rate ``r_i = c_i / n_i`` varies by ``Var(p_i) + E[p_i (1 - p_i)] / n_i``;
    ``r_i (1 - r_i) / (n_i - 1)`` is unbiased for a task's trial noise ``p_i (1 - p_i) / n_i``,
    so ``s^2(r) - mean(r_i (1 - r_i) / (n_i - 1))`` (floored at 0) estimates ``Var(p_i)``.
    Needs 2+ tasks, and 2+ trials per task (one trial cannot tell noise from difficulty):
    NaN otherwise."""
    counts, ns = _counts(correct, n)
    if len(counts) < 2 or min(ns) < 2:
        return math.nan
    r = np.array(counts, dtype=np.float64) / np.array(ns, dtype=np.float64)
    noise = r * (1 - r) / (np.array(ns, dtype=np.float64) - 1)
    return max(0.0, float(np.var(r, ddof=1) - noise.mean()))


def min_detectable_difference(
    n_tasks: int,
    trials: int,
    *,
    success_rate: float,
    between_task_var: float | None = None,
    correlation: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """The smallest true difference between two agents' success rates that a paired test
    over ``n_tasks`` tasks, ``trials`` trials each, detects at ``alpha`` with ``power``.

    Each agent's per-task rate varies by ``sigma_b^2 + w / K`` (``sigma_b^2`` the
    between-task variance of true rates, ``w = p (1 - p) - sigma_b^2`` the mean trial noise,
    ``K`` the trials); the difference of two agents whose true per-task rates correlate by
    ``correlation`` (rho) over tasks varies by ``2 ((1 - rho) sigma_b^2 + w / K)``, so::

        MDD = (z_{1-alpha/2} + z_power) * sqrt(2 ((1 - rho) sigma_b^2 + w / K) / n_tasks)

    (normal theory, as :func:`mde_paired`), with the variances taken at the rate between
    ``success_rate`` and ``success_rate ± MDD`` nearest 1/2, so a rate of 0% or 100% does not
    make every difference look detectable. More trials shrink only the trial noise: with
    all-or-nothing tasks (``sigma_b^2 = p (1 - p)``) they do not help at all. Without
    ``between_task_var`` that worst case is assumed; ``correlation = 0`` gives pairing no
    credit (two agents that find the same tasks hard can do better)."""
    if n_tasks < 1 or trials < 1:
        raise ValueError(f"need n_tasks >= 1 and trials >= 1, got {n_tasks}, {trials}")
    if not 0.0 <= success_rate <= 1.0:
        raise ValueError(f"success_rate must be between 0 and 1, got {success_rate!r}")
    if not -1.0 <= correlation <= 1.0:
        raise ValueError(f"correlation must be between -1 and 1, got {correlation!r}")
    total = success_rate * (1 - success_rate)
    sb = total if between_task_var is None or math.isnan(between_task_var) else between_task_var
    if not 0.0 <= sb <= total + 1e-12:
        raise ValueError(f"between_task_var must lie in [0, p(1-p)] = [0, {total:.4f}], got {sb!r}")
    # The share of the variance that lies between tasks; all of it (the worst case) where
    # the observed rate has no variance to split (0 or 1).
    share = min(sb, total) / total if total > 0 else 1.0
    z = check_alpha_power(alpha, power)

    def mdd_at(p: float) -> float:
        t = p * (1 - p)
        var_diff = 2 * ((1 - correlation) * share * t + (1 - share) * t / trials)
        return z * math.sqrt(var_diff / n_tasks)

    # The variance is taken at the rate between the observed one and the alternative that is
    # nearest 1/2 (the largest on that stretch): at an observed 0% or 100% the rate's own
    # variance is 0 and would claim any difference detectable. A fixed point in delta.
    delta = mdd_at(success_rate) or 0.5
    for _ in range(200):
        toward = (
            min(success_rate + delta, 0.5) if success_rate < 0.5 else max(success_rate - delta, 0.5)
        )
        nxt = min(1.0, mdd_at(toward))
        if abs(nxt - delta) < 1e-12:
            break
        delta = nxt
    return delta
