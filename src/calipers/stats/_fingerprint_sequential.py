"""Is it still the same model? An always-valid test across periodic looks (the fingerprint
canary).

A canary samples the probes of a recorded :class:`~calipers.types.Fingerprint` every hour
and asks, after every look, whether the model still produces the reference's distribution.
Looking after every look must not inflate false alarms, so the test is sequential; and the
reference is a *fixed finite sample*, which is the subtle part.

Why the naive test fails. Score a new completion ``y`` of probe ``p`` by its mean Hamming
kernel to the reference completions ``R_p`` and test whether the looks' mean equals the same
score's mean over the reference itself. The reference's own mean includes the kernel of each
completion with itself (1) and, even without it, is one draw of a random quantity: given
``R``, the looks estimate ``E[T(y) | R]`` exactly, the reference gives a different number,
and their gap is fixed for the life of the canary. An always-valid confidence sequence
shrinks to its limit, so sooner or later it excludes the reference's value: every canary
eventually alarms, with probability 1, on an unchanged model.

The design here (split the reference):

* each probe's reference completions are split in two, alternately: anchors ``A_p`` and a
  calibration half ``B_p``. A completion ``y`` scores ``T_p(y) = mean_{a in A_p} k(y, a)``
  (:func:`~calipers.stats.hamming_kernel`);
* under "same model", a look's completion and each ``b in B_p`` are i.i.d. given ``A``, so
  ``E[T_p(y) | A] = E[T_p(b) | A] = mu_p``, and ``theta = mean_p mu_p`` is estimated two
  independent ways: by the looks and by ``B``;
* a look's statistic is ``x_t = theta_B + mean_{p in look} (mean T_p(y_p) - m_p)``, with
  ``m_p`` the mean of ``T_p`` over ``B_p`` and ``theta_B = mean_p m_p``. Given ``A`` and
  ``B`` the looks are i.i.d. with mean exactly ``theta`` under the null (when a look takes a
  random subset of the probes the centring by ``m_p`` removes the probes' differences from
  its variance; with every probe in every look it is a constant shift);
* the looks give a normal-mixture confidence sequence for ``theta`` at level ``alpha/2``
  (the mSPRT of :mod:`calipers.stats._sequential`, Johari et al. 2017; always valid, so any
  number of looks), and ``B`` a fixed interval for the same ``theta`` at ``alpha/2``
  (Welch-Satterthwaite t over the per-probe variances);
* the model *changed* at the first look where the two are disjoint (or the sequence is
  empty: no single mean fits every look). Each interval misses ``theta`` with probability at
  most ``alpha/2``, so a false alarm, ever, has probability at most ``alpha`` (Bonferroni).

The sequence's variance is the one the calibration half predicts for a look under the null
(per probe, the variance of ``T_p`` over ``B_p``), raised to its upper 95% confidence bound
(chi-square, Welch-Satterthwaite degrees of freedom) for the error of that estimate, and
floored at a resolution of half a character per probe (a model that always says the same
thing has variance 0). Not the looks' own running variance: under the null it is the same
quantity with fewer degrees of freedom at the first looks (where it is often far too small),
and after a change it is inflated by the change itself (looks from two models look like one
noisy model), which hides the change it should reveal. The mixture scale ``tau`` is fixed by
the reference alone (narrowest at ``n_target`` looks), never by the looks. Tau changes power,
not validity. Evidence from before a change dilutes it: the test is on the mean of all looks,
so a change after many quiet looks takes longer to show (start a new canary after a known
change). Simulated false alarms and detection are in ``docs/fingerprint-canary.md`` and
``tests/canary_fp``.

Pure: numbers in, numbers out; completions are scored with the string kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from calipers.stats._sequential import _mixture, _x_star
from calipers.stats._string_kernel import hamming_codes
from calipers.types import Estimate

__all__ = [
    "CanaryLook",
    "CanaryReference",
    "CanaryState",
    "CanaryVerdict",
    "canary_look",
    "canary_reference",
    "canary_verdict",
]

CanaryState = Literal["same", "changed", "not_enough_looks"]
Floats = npt.NDArray[np.float64]
METHOD = "msprt-normal-mixture"
REFERENCE_METHOD = "welch-t-calibration-half"


@dataclass(frozen=True, slots=True)
class CanaryReference:
    """A reference split for the canary. ``anchors``: the anchor completions' kernel codes,
    stacked ``(probes, max anchors, length)`` with ``valid`` marking real ones; per probe
    (in ``probe_ids`` order) the calibration half's mean score ``mean``, its sample variance
    ``var`` and size ``n_b``. ``length`` is the kernel's number of characters."""

    probe_ids: tuple[str, ...]
    anchors: npt.NDArray[np.int32]
    valid: npt.NDArray[np.bool_]
    mean: Floats
    var: Floats
    n_b: npt.NDArray[np.int64]
    length: int

    def summary(self) -> dict[str, Any]:
        """What the verdict needs (no anchors): stored with every look, so the verdict can be
        computed from the looks alone (:meth:`from_summary`)."""
        return {
            "probe_ids": list(self.probe_ids),
            "mean": self.mean.tolist(),
            "var": self.var.tolist(),
            "n_b": self.n_b.tolist(),
            "length": self.length,
        }

    @classmethod
    def from_summary(cls, d: Mapping[str, Any]) -> CanaryReference:
        """A reference that can judge looks (:func:`canary_verdict`) but not score them."""
        probes = tuple(str(p) for p in d["probe_ids"])
        length = int(d["length"])
        return cls(probes, np.zeros((len(probes), 0, length), dtype=np.int32),
                   np.zeros((len(probes), 0), dtype=bool), np.asarray(d["mean"], dtype=np.float64),
                   np.asarray(d["var"], dtype=np.float64), np.asarray(d["n_b"], dtype=np.int64),
                   length)  # fmt: skip

    def index(self, probe: str) -> int:
        try:
            return self.probe_ids.index(probe)
        except ValueError:
            raise ValueError(f"probe {probe!r} is not in the reference") from None

    @property
    def theta(self) -> float:
        """``theta_B``: the calibration half's estimate of a look's mean under the null."""
        return float(self.mean.mean())

    def scores(self, idx: npt.NDArray[np.int64], codes: npt.NDArray[np.int32]) -> Floats:
        """``T_p(y)`` for completions ``codes`` (``hamming_codes`` rows) of probes ``idx``:
        the mean kernel to the probe's anchors."""
        matches = (codes[:, None, :] == self.anchors[idx]).mean(axis=-1)
        valid = self.valid[idx]
        out: Floats = (matches * valid).sum(axis=1) / valid.sum(axis=1)
        return out

    def look(
        self, idx: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], scores: Floats
    ) -> CanaryLook:
        """A look from its completions' scores ``T_p(y)`` (:meth:`scores`): ``counts[j]``
        completions of probe ``idx[j]``, their scores in that order."""
        which = np.repeat(np.arange(idx.size), counts)
        per_probe = np.bincount(which, weights=scores, minlength=idx.size) / counts
        shift = float(np.mean(per_probe - self.mean[idx]))
        return CanaryLook(self.theta + shift, self.look_variance(idx, counts), int(idx.size))

    def look_variance(self, idx: npt.NDArray[np.int64], per_probe: npt.NDArray[np.int64]) -> float:
        """The variance of a look's statistic under the null as the calibration half
        predicts it (probes ``idx`` with ``per_probe`` completions each), floored at a
        resolution of half a character per probe."""
        v = float(np.sum(self.var[idx] / per_probe)) / idx.size**2
        return max(v, 1.0 / (4.0 * self.length**2 * idx.size))

    def full_look_variance(self) -> float:
        """:meth:`look_variance` of a look of every probe, one completion each."""
        idx = np.arange(len(self.probe_ids))
        return self.look_variance(idx, np.ones_like(idx))

    def inflation(self) -> float:
        """The factor from the calibration half's pooled variance to its upper 95% bound:
        ``df / chi2_{0.05}(df)`` with Welch-Satterthwaite ``df`` (1 when it is infinite)."""
        w = self.var / self.n_b
        denom = float(np.sum(w**2 / (self.n_b - 1)))
        if denom <= 0:
            return 1.0
        df = float(w.sum()) ** 2 / denom
        return float(df / sps.chi2.ppf(0.05, df))

    def interval(self, alpha: float) -> Estimate:
        """The calibration half's interval for ``theta`` at ``1 - alpha`` (the canary uses
        ``alpha/2``): Welch-Satterthwaite t over the probes' halves, its standard error
        floored at the resolution of :meth:`look_variance`."""
        w = self.var / self.n_b
        se = max(
            math.sqrt(float(w.sum())) / len(self.probe_ids),
            math.sqrt(self.full_look_variance() / float(self.n_b.min())),
        )
        denom = float(np.sum(w**2 / (self.n_b - 1)))
        df = float(w.sum()) ** 2 / denom if denom > 0 else math.inf
        dist: Any = sps.t(df) if math.isfinite(df) else sps.norm()
        q = float(dist.ppf(1 - alpha / 2))
        n = int(self.n_b.sum())
        return Estimate(self.theta, self.theta - q * se, self.theta + q * se, n,
                        REFERENCE_METHOD, 1 - alpha)  # fmt: skip


def canary_reference(
    completions: Mapping[str, Sequence[str]], *, length: int = 100
) -> CanaryReference:
    """Split each probe's reference completions alternately into anchors (even positions)
    and the calibration half (odd positions), and score the calibration half. Each probe
    needs at least 4 completions (two anchors, two to estimate a variance)."""
    if not completions:
        raise ValueError("the reference has no probes")
    probes = tuple(completions)
    short = [p for p in probes if len(completions[p]) < 4]
    if short:
        raise ValueError(
            f"probe {short[0]!r} has {len(completions[short[0]])} reference completions; the "
            "canary needs at least 4 per probe (half anchors, half calibration): record more"
        )
    per = [hamming_codes(list(completions[p]), length) for p in probes]
    n_a = max((c.shape[0] + 1) // 2 for c in per)
    anchors = np.zeros((len(probes), n_a, length), dtype=np.int32)
    valid = np.zeros((len(probes), n_a), dtype=bool)
    mean, var, n_b = [], [], []
    for i, codes in enumerate(per):
        a = codes[0::2]
        anchors[i, : a.shape[0]] = a
        valid[i, : a.shape[0]] = True
        s = (codes[1::2, None, :] == a[None]).mean(axis=(1, 2))  # hamming_kernel, row means
        mean.append(float(s.mean()))
        var.append(float(s.var(ddof=1)))
        n_b.append(s.size)
    return CanaryReference(probes, anchors, valid, np.array(mean), np.array(var),
                           np.array(n_b, dtype=np.int64), length)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CanaryLook:
    """One look's statistic ``value`` (see the module), the variance the reference predicts
    for it under the null, and how many probes it holds."""

    value: float
    null_variance: float
    n_probes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "null_variance": self.null_variance,
            "n_probes": self.n_probes,
        }


def canary_look(ref: CanaryReference, completions: Mapping[str, Sequence[str]]) -> CanaryLook:
    """Score one look: ``completions`` maps probe ids (of the reference) to the completions
    sampled for them in this look. Which probes a look holds must not depend on the answers
    (a look where some probe failed is a failed look, not a smaller one)."""
    probes = [p for p, texts in completions.items() if texts]
    if not probes:
        raise ValueError("a look needs at least one completion")
    idx = np.array([ref.index(p) for p in probes], dtype=np.int64)
    counts = np.array([len(completions[p]) for p in probes], dtype=np.int64)
    codes = hamming_codes([t for p in probes for t in completions[p]], ref.length)
    return ref.look(idx, counts, ref.scores(np.repeat(idx, counts), codes))


@dataclass(frozen=True, slots=True)
class CanaryVerdict:
    """Where the canary stands after ``looks`` looks.

    ``estimate``: the looks' running mean with the confidence sequence at ``1 - alpha/2``
    (valid at every look at once; NaN bounds before ``min_looks`` or, method ``...-empty``,
    when no single mean fits every look). ``reference``: the calibration half's interval for
    the same mean at ``1 - alpha/2``. ``changed_at``: the first look (1-based) at which the
    two were disjoint (or the sequence empty), None if never. ``direction``: ``lower`` when
    the new completions are less like the reference's than its own are, ``higher`` when more
    alike (e.g. a lower temperature), None while unchanged. ``path``: per look, the running
    mean and the sequence's bounds (infinite before ``min_looks``)."""

    state: CanaryState
    looks: int
    estimate: Estimate
    reference: Estimate
    changed_at: int | None
    direction: Literal["lower", "higher"] | None
    alpha: float
    min_looks: int
    tau: float
    path: tuple[tuple[float, float, float], ...]

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "state": self.state,
            "looks": self.looks,
            "estimate": self.estimate.to_dict(),
            "reference": self.reference.to_dict(),
            "changed_at": self.changed_at,
            "direction": self.direction,
            "alpha": self.alpha,
            "min_looks": self.min_looks,
            "tau": self.tau,
            "path": [[num(m), num(lo), num(hi)] for m, lo, hi in self.path],
        }


def _sequence(
    x: Floats, null_variance: Floats, tau2: float, alpha: float, min_looks: int
) -> tuple[Floats, Floats, Floats]:
    """Running mean and the running intersection of the mixture's intervals, with the
    variance of each look as the reference predicts it (``null_variance``)."""
    n = np.arange(1, x.size + 1, dtype=np.float64)
    mean = np.cumsum(x) / n
    v = np.where(n >= min_looks, np.cumsum(null_variance) / n**2, np.nan)
    with np.errstate(invalid="ignore"):
        _, half = _mixture(mean, v, np.full_like(v, tau2), alpha)
    low = np.maximum.accumulate(np.where(np.isnan(half), -np.inf, mean - half))
    high = np.minimum.accumulate(np.where(np.isnan(half), np.inf, mean + half))
    return mean, low, high


def canary_verdict(
    ref: CanaryReference,
    looks: Sequence[CanaryLook],
    *,
    alpha: float = 0.05,
    min_looks: int = 3,
    n_target: int = 24,
) -> CanaryVerdict:
    """The sequential verdict after ``looks`` (in the order they were taken; failed looks
    left out). ``alpha`` is the chance of ever raising a false alarm, however many looks;
    ``n_target`` the number of looks at which the sequence is narrowest (24: a day of hourly
    looks); nothing is concluded before ``min_looks``."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if min_looks < 2 or n_target < 1:
        raise ValueError("min_looks must be at least 2 and n_target at least 1")
    half_alpha = alpha / 2
    reference = ref.interval(half_alpha)
    tau2 = _x_star(half_alpha) * ref.full_look_variance() * ref.inflation() / n_target
    confidence = 1 - half_alpha
    if not looks:
        empty = Estimate.empty(METHOD, confidence)
        return CanaryVerdict("not_enough_looks", 0, empty, reference, None, None, alpha,
                             min_looks, math.sqrt(tau2), ())  # fmt: skip
    x = np.array([lk.value for lk in looks], dtype=np.float64)
    var = np.array([lk.null_variance for lk in looks], dtype=np.float64) * ref.inflation()
    mean, low, high = _sequence(x, var, tau2, half_alpha, min_looks)
    apart = (low > high) | (low > reference.high) | (high < reference.low)
    hits = np.flatnonzero(apart)
    changed_at = int(hits[0]) + 1 if hits.size else None
    n = x.size
    lo, hi, m = float(low[-1]), float(high[-1]), float(mean[-1])
    if lo > hi:
        estimate = Estimate(m, math.nan, math.nan, n, f"{METHOD}-empty", confidence)
    elif n < min_looks:
        estimate = Estimate(m, math.nan, math.nan, n, METHOD, confidence)
    else:
        estimate = Estimate(m, lo, hi, n, METHOD, confidence)
    state: CanaryState = (
        "changed" if changed_at is not None else "not_enough_looks" if n < min_looks else "same"
    )
    direction: Literal["lower", "higher"] | None = None
    if changed_at is not None:
        direction = "lower" if m < reference.value else "higher"
    path = tuple(zip(mean.tolist(), low.tolist(), high.tolist(), strict=True))
    return CanaryVerdict(state, n, estimate, reference, changed_at, direction, alpha,
                         min_looks, math.sqrt(tau2), path)  # fmt: skip
