"""A/B decisions that stay valid when people look at the results every hour.

mSPRT with a normal mixture (Johari, Koomen, Pekelis & Walsh 2017 KDD / 2022 Operations
Research, "Always valid inference"): an always-valid p-value and the matching confidence
sequence, for paired differences (shadow traffic: both models answer the same request) and
for two independent groups (canary: requests split between the models), continuous metrics
or 0/1 rates. A fixed-n test looked at after every batch rejects a true null far more often
than alpha; these do not, however often they are looked at. See
``docs/statistics-agreement-sequential-drift.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import optimize

from calipers.types import Estimate

__all__ = [
    "Decision",
    "Guardrail",
    "GuardrailStatus",
    "SequentialPath",
    "SequentialTest",
    "decide",
    "guardrail_verdict",
    "msprt_paired",
    "msprt_paired_path",
    "msprt_two_sample",
    "msprt_two_sample_path",
]

Floats = npt.NDArray[np.float64]
Action = Literal["promote", "keep_watching", "roll_back"]
METHOD = "msprt-normal-mixture"


@dataclass(frozen=True, slots=True)
class SequentialPath:
    """The test after every observation (arrays over the last axis; leading axes are
    independent streams). ``n`` counts pairs (paired) or observations in both arms; before
    the burn-in ``variance`` is NaN, ``p_value`` 1 and the bounds infinite. ``low``/``high``
    are the running intersection of the per-step intervals: the effects not yet rejected."""

    n: npt.NDArray[np.int64]
    estimate: Floats
    variance: Floats
    p_value: Floats
    low: Floats
    high: Floats


@dataclass(frozen=True, slots=True)
class SequentialTest:
    """Where the test stands now. ``effect.value`` is the current estimate (B - A) and
    ``effect.low``/``high`` the confidence sequence at ``1 - alpha``, valid at every n at
    once; both bounds are NaN (method ``...-empty``) when no effect survived every look (the
    effect changed over time). ``rejected_at`` is the n at which ``p_value`` first fell to
    alpha or below, None if it has not."""

    effect: Estimate
    p_value: float
    alpha: float
    n_a: int
    n_b: int
    tau: float
    rejected_at: int | None


@lru_cache(maxsize=64)
def _x_star(alpha: float) -> float:
    """``n tau^2 / sigma^2`` at which the confidence sequence is narrowest: it minimises
    ``(1 + 1/x)(log(1/alpha) + log(1 + x)/2)`` (about 8.2 at alpha = 0.05; Waudby-Smith et
    al. 2021 give the closed-form approximation ``-2 log a + log(1 - 2 log a)``)."""

    def width(x: float) -> float:
        return (1 + 1 / x) * (math.log(1 / alpha) + 0.5 * math.log1p(x))

    return float(optimize.minimize_scalar(width, bounds=(1e-3, 1e4), method="bounded").x)


def _check(alpha: float, min_n: int, tau: float | None, n_target: int) -> float:
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if min_n < 2:
        raise ValueError(f"min_n must be at least 2 (a variance needs two values), got {min_n}")
    if tau is not None and not tau > 0:
        raise ValueError(f"tau must be positive, got {tau!r}")
    if n_target < 1:
        raise ValueError(f"n_target must be positive, got {n_target}")
    return a


def _mixture(
    estimate: Floats, variance: Floats, tau2: Floats, alpha: float, theta0: float = 0.0
) -> tuple[Floats, Floats]:
    """Per-step ``(1 / Lambda_n, half-width)`` of the normal-mixture SPRT.

    With the estimate ``theta_n ~ N(theta, V_n)`` and mixing ``theta ~ N(theta0, tau^2)``::

        Lambda_n = sqrt(V / (V + tau^2)) exp(tau^2 (theta_n - theta0)^2 / (2 V (V + tau^2)))

    (Johari et al. eq. for the mSPRT, written with ``V = sigma^2 / n``). Under
    ``theta = theta0`` it is a nonnegative martingale with mean 1, so by Ville's inequality
    it ever reaches ``1 / alpha`` with probability at most alpha. Inverting ``Lambda_n <
    1 / alpha`` in ``theta0`` gives the half-width of the confidence sequence.
    """
    ratio = variance / (variance + tau2)
    log_lr = 0.5 * np.log(ratio) + tau2 * (estimate - theta0) ** 2 / (
        2 * variance * (variance + tau2)
    )
    half = np.sqrt(
        2 * variance * (variance + tau2) / tau2 * (math.log(1 / alpha) - 0.5 * np.log(ratio))
    )
    return np.minimum(1.0, np.exp(-log_lr)), half


def _path(
    n: npt.NDArray[np.int64],
    estimate: Floats,
    variance: Floats,
    ok: npt.NDArray[np.bool_],
    alpha: float,
    tau: float | None,
    n_target: int,
) -> SequentialPath:
    v = np.where(ok & (variance > 0), variance, np.nan)
    tau2 = tau**2 if tau is not None else _x_star(alpha) * v * n / n_target
    with np.errstate(invalid="ignore", divide="ignore"):
        p, half = _mixture(estimate, v, np.asarray(tau2, dtype=np.float64), alpha)
    p = np.minimum.accumulate(np.where(np.isnan(p), 1.0, p), axis=-1)
    low = np.maximum.accumulate(np.where(np.isnan(half), -np.inf, estimate - half), axis=-1)
    high = np.minimum.accumulate(np.where(np.isnan(half), np.inf, estimate + half), axis=-1)
    return SequentialPath(np.broadcast_to(n, estimate.shape), estimate, v, p, low, high)


def _running(
    x: Floats, mask: npt.NDArray[np.bool_], count: Floats, binary: bool
) -> tuple[Floats, Floats]:
    """Running mean and variance of the values ``x[mask]`` seen so far (``count`` of them).
    0/1 data use ``p(1 - p)`` with ``p = (k + 1/2) / (n + 1)``, which is never 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if binary:
            s = np.cumsum(np.where(mask, x, 0.0), axis=-1)
            smooth = (s + 0.5) / (count + 1)
            return s / count, smooth * (1 - smooth)
        shift = x[..., :1]  # variance is shift-invariant; this limits round-off
        s1 = np.cumsum(np.where(mask, x - shift, 0.0), axis=-1)
        s2 = np.cumsum(np.where(mask, (x - shift) ** 2, 0.0), axis=-1)
        return shift + s1 / count, np.maximum(s2 - s1**2 / count, 0.0) / (count - 1)


def _as_binary(x: Floats, binary: bool) -> None:
    if binary and not np.isin(x, (0.0, 1.0)).all():
        raise ValueError("binary=True needs 0/1 values")


def msprt_paired_path(
    d: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    tau: float | None = None,
    n_target: int = 1000,
    min_n: int = 100,
) -> SequentialPath:
    """The test of ``mean(d) = 0`` after each of the paired differences ``d`` (in arrival
    order, last axis; leading axes are independent streams).

    ``d_i = b_i - a_i`` on the same request (shadow traffic). ``V_n = s_n^2 / n`` with the
    running sample variance plugged in for the unknown variance: the mSPRT is exact for a
    known variance, with the plug-in it is valid asymptotically (Waudby-Smith et al. 2021,
    "Time-uniform central limit theory and asymptotic confidence sequences": this is their
    Gaussian-mixture asymptotic confidence sequence). Early estimates of the variance are
    noisy, so nothing is concluded before ``min_n`` pairs (default 100: with 20, skewed
    metrics and rare events reached false-alarm rates of 6-7% at alpha = 5% in simulation).
    ``tau`` is the mixture SD on the effect scale (the size of effect expected); by default
    ``tau^2 = x* s_n^2 / n_target``, which makes the confidence sequence narrowest at
    ``n_target``. Tau changes power, never validity. Differences of 0/1 scores (-1/0/1)
    need no special case. NaN differences are not allowed here; drop them.
    """
    a = _check(alpha, min_n, tau, n_target)
    x = np.asarray(d, dtype=np.float64)
    if np.isnan(x).any() or x.ndim == 0:
        raise ValueError("d must be an array of differences without NaN (drop unscored pairs)")
    n = np.arange(1, x.shape[-1] + 1, dtype=np.int64)
    count = np.broadcast_to(n.astype(np.float64), x.shape)
    mean, var = _running(x, np.ones(x.shape, dtype=bool), count, binary=False)
    return _path(n, mean, var / count, count >= min_n, a, tau, n_target)


def msprt_two_sample_path(
    values: npt.ArrayLike,
    treated: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    tau: float | None = None,
    n_target: int = 1000,
    min_n: int = 100,
    binary: bool = False,
) -> SequentialPath:
    """The test of ``mean_B - mean_A = 0`` after each observation, for two independent
    groups (canary), in arrival order: ``values[i]`` was observed on arm B if
    ``treated[i]`` else on arm A. Any split (5% canary) works.

    ``V_n = s_A^2 / n_A + s_B^2 / n_B``: the estimate has the "canonical joint
    distribution" of group-sequential theory (Jennison & Turnbull 2000, ch. 3), so the
    mixture is a martingale for unequal and changing arm sizes, as long as who goes to which
    arm does not depend on the outcomes. Plug-in variances as in :func:`msprt_paired_path`;
    ``binary=True`` uses ``p(1 - p)`` with ``p = (k + 1/2) / (n + 1)`` per arm, so a run of
    zeros at the start of a rare-event metric does not make the variance 0. Nothing is
    concluded before each arm has ``min_n`` observations. ``n`` counts both arms.
    """
    a = _check(alpha, min_n, tau, n_target)
    x = np.asarray(values, dtype=np.float64)
    t = np.broadcast_to(np.asarray(treated, dtype=bool), x.shape)
    if np.isnan(x).any() or x.ndim == 0:
        raise ValueError("values must be an array without NaN (drop unscored observations)")
    _as_binary(x, binary)
    arms = []
    for arm in (~t, t):
        count = np.cumsum(arm, axis=-1, dtype=np.float64)
        mean, var = _running(x, arm, count, binary)
        arms.append((count, mean, var))
    (na, ma, va), (nb, mb, vb) = arms
    n = np.arange(1, x.shape[-1] + 1, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = va / na + vb / nb
    return _path(n, mb - ma, variance, np.minimum(na, nb) >= min_n, a, tau, n_target)


def _summary(
    path: SequentialPath, alpha: float, tau: float | None, n_target: int, n_a: int, n_b: int
) -> SequentialTest:
    if path.n.size == 0:
        return SequentialTest(Estimate.empty(METHOD, 1 - alpha), 1.0, alpha, 0, 0, math.nan, None)
    n, est = int(path.n[-1]), float(path.estimate[-1])
    low, high = float(path.low[-1]), float(path.high[-1])
    effect = (
        Estimate(est, low, high, n, METHOD, 1 - alpha)
        if low <= high
        else Estimate(est, math.nan, math.nan, n, f"{METHOD}-empty", 1 - alpha)
    )
    hit = np.flatnonzero(path.p_value <= alpha)
    v = float(path.variance[-1])
    t = tau if tau is not None else math.sqrt(_x_star(alpha) * v * n / n_target)
    return SequentialTest(
        effect,
        float(path.p_value[-1]),
        alpha,
        n_a,
        n_b,
        t,
        int(path.n[hit[0]]) if hit.size else None,
    )


def msprt_paired(
    d: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    tau: float | None = None,
    n_target: int = 1000,
    min_n: int = 100,
) -> SequentialTest:
    """Always-valid test and confidence sequence for paired differences ``d`` (1-D, arrival
    order; NaN dropped) as they stand after the last one. See :func:`msprt_paired_path`."""
    x = np.asarray(d, dtype=np.float64).reshape(-1)
    x = x[~np.isnan(x)]
    path = msprt_paired_path(x, alpha=alpha, tau=tau, n_target=n_target, min_n=min_n)
    return _summary(path, alpha, tau, n_target, x.size, x.size)


def msprt_two_sample(
    values: npt.ArrayLike,
    treated: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    tau: float | None = None,
    n_target: int = 1000,
    min_n: int = 100,
    binary: bool = False,
) -> SequentialTest:
    """Always-valid test and confidence sequence for ``mean_B - mean_A`` of two independent
    groups (1-D, arrival order; NaN values dropped). See :func:`msprt_two_sample_path`."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    t = np.asarray(treated, dtype=bool).reshape(-1)
    if x.size != t.size:
        raise ValueError(f"got {x.size} values and {t.size} arm labels; give one per value")
    keep = ~np.isnan(x)
    x, t = x[keep], t[keep]
    path = msprt_two_sample_path(
        x, t, alpha=alpha, tau=tau, n_target=n_target, min_n=min_n, binary=binary
    )
    return _summary(path, alpha, tau, n_target, int((~t).sum()), int(t.sum()))


@dataclass(frozen=True, slots=True)
class Guardrail:
    """A metric the candidate must not make worse by more than ``tolerance`` (>= 0, in the
    metric's units). ``effect`` is candidate minus baseline with a confidence sequence.

    ``crossed`` is set when that sequence is empty (``effect`` has NaN bounds, method
    ``...-empty``): the running intersection's highest lower bound and lowest upper bound,
    ``(low, high)`` with ``low > high``. Each was a bound of the interval at some look, so
    they still say where the effect was shown to be: see :func:`guardrail_verdict`."""

    name: str
    effect: Estimate
    higher_is_better: bool = True
    tolerance: float = 0.0
    crossed: tuple[float, float] | None = None


GuardrailStatus = Literal["failing", "safe", "open", "moved"]


@dataclass(frozen=True, slots=True)
class Decision:
    """``promote``, ``keep_watching`` or ``roll_back``, with the reasons in words."""

    action: Action
    reasons: tuple[str, ...]


def _gain(e: Estimate, higher_is_better: bool) -> tuple[float, float]:
    """The confidence sequence of the improvement (positive = better)."""
    return (e.low, e.high) if higher_is_better else (-e.high, -e.low)


def _gain_of(bounds: tuple[float, float], higher_is_better: bool) -> tuple[float, float]:
    low, high = bounds
    return (low, high) if higher_is_better else (-high, -low)


def _moved(
    name: str, crossed: tuple[float, float], higher: bool, limit: float, what: str
) -> tuple[bool, str]:
    """Whether an empty sequence still shows the effect beyond ``limit`` (on the bad side,
    gain units), and the words: the effect moved; where it was shown to be at some look."""
    low, high = crossed
    g_high = _gain_of(crossed, higher)[1]
    shown = f"at one look at least {low:+.3g}, at another at most {high:+.3g}"
    head = f"{name}: the effect moved over time: no single effect fits every look ({shown})"
    if g_high < -limit:
        worse = f"below {high:+.3g}" if higher else f"above {low:+.3g}"
        return True, f"{head}; it was shown {worse}, {what}"
    return (
        False,
        f"{head}; not shown {what}: start a new experiment after the change "
        "(--since) to tell where it stands now",
    )


def guardrail_verdict(g: Guardrail) -> tuple[GuardrailStatus, str]:
    """``failing`` (worse than the tolerance for sure: roll back), ``safe`` (within it for
    sure), ``open`` (not yet known) or ``moved`` (the sequence is empty without showing
    harm: it cannot show safety either), with the reason in words.

    ``failing`` is the same rule whether or not the sequence is empty: the lowest upper
    bound of the improvement over all looks is below ``-tolerance``. Under any constant
    effect within the tolerance that happens with probability at most alpha; an empty
    sequence (the effect moved) does not hide it."""
    if g.tolerance < 0:
        raise ValueError(f"guardrail {g.name!r}: tolerance must be >= 0, got {g.tolerance}")
    if g.crossed is not None:
        harmful, why = _moved(
            g.name,
            g.crossed,
            g.higher_is_better,
            g.tolerance,
            f"worse than the tolerance {g.tolerance:g}",
        )
        return ("failing", why) if harmful else ("moved", why)
    low, high = _gain(g.effect, g.higher_is_better)
    if math.isnan(low) or math.isnan(high):
        return "open", f"{g.name}: no usable confidence sequence yet ({g.effect.method})"
    if high < -g.tolerance:
        return "failing", f"{g.name}: worse by more than {g.tolerance:g} ({g.effect.format()})"
    if low >= -g.tolerance:
        return "safe", f"{g.name}: not worse than {g.tolerance:g} ({g.effect.format()})"
    return (
        "open",
        f"{g.name}: cannot yet rule out harm beyond {g.tolerance:g} ({g.effect.format()})",
    )


def decide(
    primary: Estimate,
    *,
    higher_is_better: bool = True,
    min_improvement: float = 0.0,
    guardrails: Sequence[Guardrail] = (),
    max_n: int | None = None,
    primary_crossed: tuple[float, float] | None = None,
) -> Decision:
    """Promote, keep watching or roll back, from confidence sequences (valid at any look).

    * roll back: a guardrail is ``failing`` (worse than its tolerance for sure, see
      :func:`guardrail_verdict`), or the primary metric is worse for sure (the lowest upper
      bound of its improvement over the looks is below 0, also when its sequence is empty:
      ``primary_crossed`` as :attr:`Guardrail.crossed`);
    * promote: the primary improvement is above ``min_improvement`` for sure and every
      guardrail is within its tolerance for sure;
    * otherwise keep watching, except that once ``primary.n >= max_n`` (the traffic
      budget) an improvement still not shown is a roll back: not shown is not shipped.

    The reasons list every metric's standing. Pure: it only reads the numbers given.
    """
    rows = [guardrail_verdict(g) for g in guardrails]
    low, high = _gain(primary, higher_is_better)
    reasons = [r for _, r in rows]
    moved: tuple[bool, str] | None = None
    if primary_crossed is not None:
        moved = _moved("primary", primary_crossed, higher_is_better, 0.0, "worse than the baseline")
    if any(s == "failing" for s, _ in rows) or high < 0 or (moved and moved[0]):
        if high < 0:
            reasons.insert(0, f"primary: the candidate is worse ({primary.format()})")
        elif moved and moved[0]:
            reasons.insert(0, moved[1])
        return Decision("roll_back", tuple(reasons))
    if math.isnan(low) or math.isnan(high) or math.isinf(low):
        head = f"primary: not enough data for a conclusion yet (n={primary.n})"
        if moved is not None:
            head = f"{moved[1]}; investigate (novelty, drift, a changed mix of traffic)"
        elif primary.method.endswith("-empty"):
            head = (
                "primary: no effect is consistent with every look; the effect changed "
                "over time (novelty, drift, a changed mix of traffic): investigate"
            )
    elif low > min_improvement:
        head = f"primary: better by more than {min_improvement:g} ({primary.format()})"
        if all(s == "safe" for s, _ in rows):
            return Decision("promote", (head, *reasons))
    else:
        head = f"primary: improvement above {min_improvement:g} not shown ({primary.format()})"
    if max_n is not None and primary.n >= max_n and not low > min_improvement:
        return Decision("roll_back", (f"{head}; reached max_n={max_n}", *reasons))
    return Decision("keep_watching", (head, *reasons))
