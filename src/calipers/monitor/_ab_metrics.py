"""The A/B metrics as sequential paths: arrays in, always-valid paths out, one stream or many.

Every function takes arrays in observation order (last axis; leading axes are independent
streams, which is how the A/A simulation runs hundreds of experiments at once) and returns a
:class:`MetricPath`: the mSPRT path of ``calipers.stats`` plus what the metric means, how its
effect is shown and the alpha it is tested at. :func:`effect_at` reads a path at a look and
:func:`decide_at` turns the paths into promote / keep watching / roll back. What each metric
tests is written in ``docs/ab.md``; the ``what`` strings say it in one line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.stats import (
    Decision,
    Guardrail,
    SequentialPath,
    decide_rollout,
    guardrail_verdict,
    msprt_paired_path,
    msprt_two_sample_path,
)
from calipers.types import Estimate

__all__ = [
    "METHOD",
    "MetricPath",
    "crossed_at",
    "decide_at",
    "effect_at",
    "exceed_p95",
    "guardrail_status",
    "interleave",
    "paired_metric",
    "two_sample_metric",
]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Transform = Literal["identity", "expm1"]
Status = Literal["safe", "failing", "open", "moved", "skipped"]
METHOD = "msprt-normal-mixture"


@dataclass(frozen=True, slots=True)
class MetricPath:
    """One metric's sequential test. ``transform="expm1"`` shows a log-scale effect as a
    relative change (``exp(x) - 1``: +0.10 = 10% higher), bounds included (monotone, so the
    confidence sequence stays valid). ``tolerance`` is in the shown units."""

    name: str
    path: SequentialPath
    alpha: float
    what: str
    higher_is_better: bool = False
    tolerance: float = 0.0
    transform: Transform = "identity"


def paired_metric(
    name: str,
    d: npt.ArrayLike,
    *,
    alpha: float,
    what: str,
    min_n: int = 100,
    n_target: int = 1000,
    higher_is_better: bool = False,
    tolerance: float = 0.0,
    transform: Transform = "identity",
) -> MetricPath:
    """Paired differences ``d = candidate - baseline`` on the same requests (shadow)."""
    path = msprt_paired_path(
        np.asarray(d, dtype=np.float64), alpha=alpha, min_n=min_n, n_target=n_target
    )
    return MetricPath(name, path, alpha, what, higher_is_better, tolerance, transform)


def two_sample_metric(
    name: str,
    values: npt.ArrayLike,
    treated: npt.ArrayLike,
    *,
    alpha: float,
    what: str,
    binary: bool = False,
    min_n: int = 100,
    n_target: int = 1000,
    higher_is_better: bool = False,
    tolerance: float = 0.0,
    transform: Transform = "identity",
) -> MetricPath:
    """Two groups, ``treated`` = the candidate's observations (canary; or a shadow rate with
    the arms interleaved by :func:`interleave`). ``n`` counts both groups."""
    path = msprt_two_sample_path(
        np.asarray(values, dtype=np.float64),
        treated,
        alpha=alpha,
        min_n=min_n,
        n_target=n_target,
        binary=binary,
    )
    return MetricPath(name, path, alpha, what, higher_is_better, tolerance, transform)


def interleave(baseline: npt.ArrayLike, candidate: npt.ArrayLike) -> tuple[Floats, Bools]:
    """``b1, c1, b2, c2, ...`` with the candidate flags: paired 0/1 outcomes as two groups.

    A rate difference tested this way ignores the pairing: still valid (the two answers of a
    request are positively correlated, if at all, so the unpaired variance is the larger),
    and the smoothed binary variance never collapses to 0 when neither model ever errs."""
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    values = np.stack([b, c], axis=-1).reshape(*b.shape[:-1], 2 * b.shape[-1])
    treated = np.zeros(values.shape[-1], dtype=bool)
    treated[1::2] = True
    return values, treated


def exceed_p95(
    values: npt.ArrayLike, treated: npt.ArrayLike, *, warm: int = 100, blocks: int = 200
) -> tuple[Floats, Bools]:
    """Whether each observation is above the baseline's p95 *as it stood before it*.

    The threshold at position i is the 95th percentile of the baseline observations before
    the start of i's block (``blocks`` equal blocks, so the cost stays bounded): it depends on
    the past only, so under "same latency distribution" a new candidate and a new baseline
    observation exceed it with the same probability, and the difference of the two groups'
    exceedance rates is a fair test of the tail. Returns the 0/1 values and a mask that drops
    the first ``warm`` positions (no threshold yet)."""
    x = np.asarray(values, dtype=np.float64)
    t = np.broadcast_to(np.asarray(treated, dtype=bool), x.shape)
    n = x.shape[-1]
    out = np.zeros(x.shape, dtype=np.float64)
    step = max(1, math.ceil(max(n - warm, 1) / blocks))
    base = np.where(t, np.nan, x)
    history = np.sort(base[..., :warm], axis=-1)  # NaN sorts last
    for start in range(warm, n, step):
        if start > warm:  # merge the last block in: a stable sort of two sorted runs is linear
            history = np.sort(
                np.concatenate([history, base[..., start - step : start]], -1),
                axis=-1,
                kind="stable",
            )
        threshold = _p95_sorted(history)
        block = x[..., start : start + step]
        out[..., start : start + step] = np.where(np.isnan(threshold), 0.0, block > threshold)
    keep = np.zeros(n, dtype=bool)
    keep[warm:] = True
    return out, keep


def _p95_sorted(s: Floats) -> Floats:
    """numpy's default (linear) 95th percentile of each row of sorted values, NaN last;
    NaN for a row without values. Shape ``(..., 1)``."""
    count = np.sum(~np.isnan(s), axis=-1, keepdims=True)
    pos = 0.95 * np.maximum(count - 1, 0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(count - 1, 0))
    a = np.take_along_axis(s, lo, axis=-1)
    b = np.take_along_axis(s, hi, axis=-1)
    return np.where(count > 0, a + (b - a) * (pos - lo), np.nan)


def _index(path: SequentialPath, k: int | None) -> int:
    size = int(path.estimate.shape[-1])
    return size - 1 if k is None else min(k, size) - 1


def effect_at(m: MetricPath, k: int | None = None, stream: int | None = None) -> Estimate:
    """The metric after its first ``k`` observations (``None``: all) of one stream
    (``stream`` indexes the leading axis of a 2-D path), in the shown units."""
    p = m.path
    if p.estimate.shape[-1] == 0 or (k is not None and k < 1):
        return Estimate.empty(METHOD, 1 - m.alpha)
    i = _index(p, k)

    def at(a: npt.NDArray[Any]) -> Any:
        return a[..., i] if stream is None else a[stream, i]

    n = int(p.n[..., i] if p.n.ndim == 1 else at(p.n))
    est, low, high = float(at(p.estimate)), float(at(p.low)), float(at(p.high))
    if m.transform == "expm1":
        est, low, high = math.expm1(est), math.expm1(low), math.expm1(high)
    if low > high:  # no effect survived every look: the effect changed over time
        return Estimate(est, math.nan, math.nan, n, f"{METHOD}-empty", 1 - m.alpha)
    return Estimate(est, low, high, n, METHOD, 1 - m.alpha)


def crossed_at(
    m: MetricPath, k: int | None = None, stream: int | None = None
) -> tuple[float, float] | None:
    """When the confidence sequence after ``k`` observations is empty, the crossed bounds
    of the running intersection ``(highest lower, lowest upper)`` in the shown units (the
    transform is monotone, so they stay the bounds they were); ``None`` when it is not."""
    p = m.path
    if p.estimate.shape[-1] == 0 or (k is not None and k < 1):
        return None
    i = _index(p, k)
    low = float(p.low[..., i] if stream is None else p.low[stream, i])
    high = float(p.high[..., i] if stream is None else p.high[stream, i])
    if not low > high:
        return None
    if m.transform == "expm1":
        low, high = math.expm1(low), math.expm1(high)
    return low, high


def guardrail_status(
    name: str,
    effect: Estimate,
    tolerance: float,
    higher_is_better: bool,
    crossed: tuple[float, float] | None = None,
) -> tuple[Status, str]:
    """``failing``, ``safe``, ``open`` or ``moved`` with the reason: the rule
    ``decide_rollout`` applies to each guardrail (``calipers.stats.guardrail_verdict``)."""
    return guardrail_verdict(Guardrail(name, effect, higher_is_better, tolerance, crossed))


def decide_at(
    primary: MetricPath | None,
    guardrails: Sequence[MetricPath],
    *,
    k: int | None = None,
    guardrail_k: Sequence[int | None] | None = None,
    stream: int | None = None,
    min_improvement: float = 0.0,
    max_n: int | None = None,
) -> Decision:
    """The decision after the first ``k`` observations of the primary metric and
    ``guardrail_k[i]`` of guardrail i (``None``: all; ``guardrail_k`` defaults to ``k``).

    Without a primary metric nothing can be promoted (its effect is empty, so the decision
    is keep watching unless a guardrail shows harm)."""
    ks = [k] * len(guardrails) if guardrail_k is None else list(guardrail_k)
    effect = effect_at(primary, k, stream) if primary is not None else Estimate.empty(METHOD, 0.95)
    rails = [
        Guardrail(
            g.name,
            effect_at(g, gk, stream),
            g.higher_is_better,
            g.tolerance,
            crossed_at(g, gk, stream),
        )
        for g, gk in zip(guardrails, ks, strict=True)
    ]
    higher = primary.higher_is_better if primary is not None else True
    crossed = crossed_at(primary, k, stream) if primary is not None else None
    return decide_rollout(
        effect,
        higher_is_better=higher,
        min_improvement=min_improvement,
        guardrails=rails,
        max_n=max_n if primary is not None else None,
        primary_crossed=crossed,
    )
