"""From logged requests and their stored scores to the A/B metrics' sequential paths.

Shadow traffic is compared on the same requests; canary traffic between the user groups.
Every builder returns a :class:`MetricPath`, or a string saying why the metric is skipped
(never a 0). Observations are in arrival order. ``docs/ab.md`` says what each one tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from calipers.monitor._ab_metrics import (
    MetricPath,
    Transform,
    exceed_p95,
    interleave,
    paired_metric,
    two_sample_metric,
)
from calipers.monitor._online import PAIRWISE
from calipers.monitor._traffic import Exchange
from calipers.store import OnlineScoreRecord, TrafficRecord

__all__ = [
    "Built",
    "Guardrail",
    "Prices",
    "Scores",
    "Settings",
    "build_guardrail",
    "build_score_metric",
    "prepare_guardrail",
]

Scores = Mapping[tuple[str, str], OnlineScoreRecord]  # (pair_id, role) -> score
Prices = Mapping[str, tuple[float, float]]  # role -> USD per million (input, output) tokens
Built = tuple[MetricPath, list[datetime]] | str

WHAT = {
    "error_rate": "share of calls that failed (no answer, non-2xx, unusable body): candidate "
    "minus baseline, in rate units",
    "latency_p50": "typical latency: ratio of geometric means minus 1 (the mean log-latency "
    "difference; +0.10 = 10% slower)",
    "latency_p95": "share of answers slower than the baseline's p95 so far: candidate minus "
    "baseline (+0.03 = 3 points more of the tail)",
    "refusal_rate": "share of answers the refusal patterns flag: candidate minus baseline",
    "cost": "cost in USD per 1,000 requests from tokens x prices: candidate minus baseline",
}


@dataclass(frozen=True)
class Settings:
    """What every builder needs: the mode, alphas and the test's burn-in and target n."""

    mode: str
    alpha: float
    min_n: int = 100
    n_target: int = 1000
    blocks: int = 200


def _cost(rec: TrafficRecord, price: tuple[float, float]) -> float:
    """USD per 1,000 requests (prices are per million tokens)."""
    if rec.input_tokens is None or rec.output_tokens is None:
        return math.nan
    return (rec.input_tokens * price[0] + rec.output_tokens * price[1]) / 1e3


def _latency(rec: TrafficRecord) -> float:
    ms = rec.latency_ms
    return math.log(ms) if rec.ok and ms is not None and ms > 0 else math.nan


def _arms(e: Exchange) -> tuple[TrafficRecord, bool]:
    """A canary request's assigned arm and whether it is the candidate's."""
    if e.candidate is not None:
        return e.candidate, True
    assert e.baseline is not None
    return e.baseline, False


def _values(
    name: str, exchanges: Sequence[Exchange], scores: Scores, prices: Prices
) -> tuple[np.ndarray, np.ndarray] | str:
    """Per request, the baseline and candidate value of a guardrail (shadow) or the value
    and group (canary: second array is the candidate flag)."""

    def value(rec: TrafficRecord) -> float:
        if name == "error_rate":
            return 0.0 if rec.ok else 1.0
        if name in ("latency_p50", "latency_p95"):
            return _latency(rec)
        if name == "refusal_rate":
            s = scores.get((rec.pair_id, rec.role))
            return math.nan if s is None or not rec.ok else s.value
        return _cost(rec, prices[rec.role]) if rec.ok else math.nan

    if name == "cost" and not {"baseline", "candidate"} <= set(prices):
        return "no prices given for both arms (--price baseline=IN,OUT --price candidate=IN,OUT)"
    if exchanges and exchanges[0].mode == "shadow":
        pairs = [
            (e.baseline, e.candidate)
            for e in exchanges
            if e.baseline is not None and e.candidate is not None
        ]
        return (np.array([value(b) for b, _ in pairs]), np.array([value(c) for _, c in pairs]))
    arms = [_arms(e) for e in exchanges]
    return np.array([value(r) for r, _ in arms]), np.array([t for _, t in arms], dtype=bool)


@dataclass(frozen=True)
class Guardrail:
    """A guardrail's observations, ready to test at any alpha: what
    :func:`prepare_guardrail` computes once, so that choosing the alpha (which depends on how
    many guardrails apply) never builds a guardrail twice."""

    name: str
    values: np.ndarray
    treated: np.ndarray | None  # None: paired differences (shadow latency and cost)
    ts: list[datetime]
    tolerance: float
    binary: bool = False


def prepare_guardrail(
    name: str,
    exchanges: Sequence[Exchange],
    scores: Scores,
    prices: Prices,
    tolerance: float,
    st: Settings,
) -> Guardrail | str:
    """One guardrail's observations in arrival order (shadow: the mirrored requests), or why
    it is skipped; nothing here depends on ``st.alpha``."""
    got = _values(name, exchanges, scores, prices)
    if isinstance(got, str):
        return got
    a, b = got
    ts = [e.ts for e in exchanges]
    if st.mode == "shadow":
        keep = ~(np.isnan(a) | np.isnan(b))
        a, b, ts = a[keep], b[keep], [t for t, k in zip(ts, keep, strict=True) if k]
        if a.size == 0:
            return f"no request has a usable value for both arms ({_why(name)})"
        if name in ("latency_p50", "cost"):
            tol = tolerance * float(np.mean(a)) if name == "cost" else tolerance
            return Guardrail(name, b - a, None, ts, tol)
        values, treated = interleave(a, b)
        return _rate(name, values, treated, [t for t in ts for _ in (0, 1)], tolerance, st)
    keep = ~np.isnan(a)
    values, treated = a[keep], b[keep]
    ts = [t for t, k in zip(ts, keep, strict=True) if k]
    if min(int(treated.sum()), int((~treated).sum())) == 0:
        return f"one group has no usable value ({_why(name)})"
    if name in ("latency_p50", "cost"):
        tol = tolerance * float(np.mean(values[~treated])) if name == "cost" else tolerance
        return Guardrail(name, values, treated, ts, tol)
    return _rate(name, values, treated, ts, tolerance, st)


def _rate(
    name: str,
    values: np.ndarray,
    treated: np.ndarray,
    ts: list[datetime],
    tolerance: float,
    st: Settings,
) -> Guardrail | str:
    if name == "latency_p95":
        values, keep = exceed_p95(
            values, treated, warm=min(2 * st.min_n, values.size), blocks=st.blocks
        )
        values, treated = values[keep], treated[keep]
        ts = [t for t, k in zip(ts, keep, strict=True) if k]
        if values.size == 0:
            return f"fewer than {2 * st.min_n} answers: no baseline p95 to compare with yet"
    return Guardrail(name, values, treated, ts, tolerance, binary=True)


def build_guardrail(
    name: str,
    exchanges: Sequence[Exchange],
    scores: Scores,
    prices: Prices,
    tolerance: float,
    st: Settings,
    *,
    prepared: Guardrail | str | None = None,
) -> Built:
    """One guardrail's sequential test at ``st.alpha`` (``prepared``: its observations from
    :func:`prepare_guardrail` with the same arguments, not computed again)."""
    g = (
        prepared
        if prepared is not None
        else prepare_guardrail(name, exchanges, scores, prices, tolerance, st)
    )
    if isinstance(g, str):
        return g
    kw: dict[str, Any] = {
        "alpha": st.alpha,
        "what": WHAT[name],
        "min_n": st.min_n,
        "n_target": st.n_target,
        "tolerance": g.tolerance,
    }
    transform: Transform = "expm1" if name == "latency_p50" else "identity"
    if g.treated is None:
        return paired_metric(name, g.values, transform=transform, **kw), g.ts
    return two_sample_metric(
        name, g.values, g.treated, binary=g.binary, transform=transform, **kw
    ), g.ts


def _why(name: str) -> str:
    return {
        "error_rate": "no calls",
        "latency_p50": "no latency logged",
        "latency_p95": "no latency logged",
        "refusal_rate": "no refusal scores",
        "cost": "no token counts logged: streams report none unless the client asks for usage",
    }[name]


def build_score_metric(
    key: str,
    exchanges: Sequence[Exchange],
    scores: Scores,
    st: Settings,
    *,
    higher_is_better: bool = True,
) -> Built:
    """A quality score: shadow, the paired difference on requests scored for both arms
    (pairwise: P(candidate preferred) - 0.5); canary, the difference between the groups."""
    what = f"{key}: candidate minus baseline"
    kw: dict[str, Any] = {
        "alpha": st.alpha,
        "min_n": st.min_n,
        "n_target": st.n_target,
        "higher_is_better": higher_is_better,
    }
    if st.mode == "shadow":
        rows: list[tuple[datetime, float]] = []
        for e in exchanges:
            c = scores.get((e.pair_id, "candidate"))
            b = None if key == PAIRWISE else scores.get((e.pair_id, "baseline"))
            if (
                c is None
                or math.isnan(c.value)
                or (key != PAIRWISE and (b is None or math.isnan(b.value)))
            ):
                continue
            rows.append((e.ts, c.value - 0.5 if b is None else c.value - b.value))
        if key == PAIRWISE:
            what = f"{key}: P(judge prefers the candidate's answer) minus 0.5"
        if not rows:
            return f"no request has a {key} score for both arms yet"
        d = np.array([v for _, v in rows])
        return paired_metric(key, d, what=what, **kw), [t for t, _ in rows]
    if key == PAIRWISE:
        return "a pairwise judge needs both answers to one request: shadow traffic only"
    obs: list[tuple[datetime, float, bool]] = []
    for e in exchanges:
        rec, treated = _arms(e)
        s = scores.get((e.pair_id, rec.role))
        if s is not None and not math.isnan(s.value):
            obs.append((e.ts, s.value, treated))
    values = np.array([v for _, v, _ in obs])
    treated_arr = np.array([t for _, _, t in obs], dtype=bool)
    if min(int(treated_arr.sum()), int((~treated_arr).sum())) == 0:
        return f"no {key} scores in {'both groups' if obs else 'either group'} yet"
    binary = bool(np.isin(values, (0.0, 1.0)).all())
    return two_sample_metric(key, values, treated_arr, what=what, binary=binary, **kw), [
        t for t, _, _ in obs
    ]
