"""Time-windowed metrics of logged traffic, per arm: every number an ``Estimate``.

Per window and arm (``served``: the call whose answer the user got; ``baseline``;
``candidate``):

* ``volume``: calls made (a count: ``low = high = value``, method ``count``);
* ``latency_p50_ms`` / ``latency_p95_ms``: of the calls that answered (2xx), with the
  distribution-free order-statistic interval (an unbounded side is ``inf``: too few calls);
* ``error_rate``: calls that got no usable answer (no response, non-2xx, an error), Wilson;
  a candidate call not sent because the gateway's breaker was open is one (and is in the
  volume), as in ``calipers ab`` (``docs/ab.md``);
* ``refusal_rate``: answered calls whose reply starts with a refusal phrase (the ``refusal``
  scorer's patterns), Wilson;
* ``cost_per_request_usd``: mean of ``(input_tokens * in + output_tokens * out) / 1e6`` over
  calls with token counts, each call at its own arm's prices (``*``: any arm), bootstrap
  interval; without prices "skipped: no prices";
* ``score:NAME``: mean online score of that scorer (NaN = unscorable, left out), and
  ``feedback``: mean user feedback; Wilson for 0/1 values, else bootstrap.

No data is NaN with n = 0 (or "skipped: reason" in ``method``), never 0.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.monitor._scores import FEEDBACK, ScoreIndex
from calipers.monitor._traffic import Exchange
from calipers.scorers import DEFAULT_REFUSAL_PATTERNS, detect_refusal
from calipers.stats import bootstrap_mean, quantile_interval, summarize, wilson
from calipers.store import TrafficRecord
from calipers.types import Estimate

__all__ = [
    "ARMS",
    "Prices",
    "arm_metrics",
    "arm_record",
    "counted_metrics",
    "is_refusal",
    "metrics_to_dict",
    "record_cost",
]

ARMS = ("served", "baseline", "candidate")
REFUSAL_WINDOW = 300
_PATTERNS = [re.compile(p, re.IGNORECASE | re.MULTILINE) for p in DEFAULT_REFUSAL_PATTERNS]


@dataclass(frozen=True, slots=True)
class Prices:
    """Dollars per million input and output tokens."""

    input_per_m: float
    output_per_m: float

    def to_dict(self) -> dict[str, float]:
        return {"input_per_m": self.input_per_m, "output_per_m": self.output_per_m}


def arm_record(ex: Exchange, arm: str) -> TrafficRecord | None:
    if arm == "served":
        return ex.served
    rec: TrafficRecord | None = ex.baseline if arm == "baseline" else ex.candidate
    return rec


def is_refusal(text: str | None) -> bool:
    return bool(text) and _refused(text or "")


@functools.lru_cache(maxsize=1 << 14)
def _refused(text: str) -> bool:
    """Cached: the window metrics and the drift features ask about the same answers."""
    return detect_refusal(text, _PATTERNS, REFUSAL_WINDOW) is not None


def record_cost(rec: TrafficRecord, price: Prices) -> float:
    if rec.input_tokens is None or rec.output_tokens is None:
        return math.nan
    return (rec.input_tokens * price.input_per_m + rec.output_tokens * price.output_per_m) / 1e6


def _count(n: int) -> Estimate:
    return Estimate(float(n), float(n), float(n), n, "count")


def _rate(flags: Sequence[bool], confidence: float) -> Estimate:
    if not flags:
        return Estimate.empty("wilson", confidence)
    return wilson(sum(flags), len(flags), confidence)


def _cost(
    records: Sequence[TrafficRecord],
    prices: Mapping[str, Prices],
    rng: np.random.Generator,
    confidence: float,
) -> Estimate:
    """Each call priced by its own arm's prices (``*``: every arm)."""
    priced = [(r, prices.get(r.role) or prices.get("*")) for r in records]
    if not records or any(p is None for _r, p in priced):
        missing = sorted({r.role for r, p in priced if p is None})
        why = f"no prices for {', '.join(missing)}" if prices and missing else "no prices"
        return Estimate.empty(f"skipped: {why}", confidence)
    costs = [record_cost(r, p) for r, p in priced if p is not None]
    if all(math.isnan(c) for c in costs):
        return Estimate.empty("skipped: no token counts logged", confidence)
    return bootstrap_mean(costs, rng, confidence)


def _scores(
    records: Sequence[tuple[str, TrafficRecord]],
    scores: ScoreIndex,
    rng: np.random.Generator,
    confidence: float,
) -> dict[str, Estimate]:
    out: dict[str, Estimate] = {}
    for name in scores.scorers:
        values = [scores.of(pid, r.role).get(name, math.nan) for pid, r in records]
        key = FEEDBACK if name == FEEDBACK else f"score:{name}"
        out[key] = summarize(values, rng=rng, confidence=confidence)
    return out


def arm_metrics(
    exchanges: Sequence[Exchange],
    arm: str,
    *,
    prices: Mapping[str, Prices],
    scores: ScoreIndex,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> dict[str, Estimate]:
    """The metrics of one arm over the given requests (see the module docstring)."""
    recs = [(ex.pair_id, r) for ex in exchanges if (r := arm_record(ex, arm)) is not None]
    calls = [r for _pid, r in recs]
    ok = [r for r in calls if r.ok]
    latency = [r.latency_ms for r in ok if r.latency_ms is not None]
    metrics: dict[str, Estimate] = {
        "volume": _count(len(calls)),
        "latency_p50_ms": quantile_interval(latency, 0.5, confidence),
        "latency_p95_ms": quantile_interval(latency, 0.95, confidence),
        "error_rate": _rate([not r.ok for r in calls], confidence),
        "refusal_rate": _rate([is_refusal(r.response) for r in ok], confidence),
        "cost_per_request_usd": _cost(calls, prices, rng, confidence),
    }
    metrics.update(_scores(recs, scores, rng, confidence))
    return metrics


def counted_metrics(
    calls: int,
    failed: int,
    latencies: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    latency_sample: str = "",
) -> dict[str, Estimate]:
    """``volume``, the latency quantiles and ``error_rate`` of one arm from what the database
    counted (``latency_sample``: said in the method when the latencies are a sample)."""
    lat = {
        f"latency_p{round(100 * q)}_ms": quantile_interval(latencies, q, confidence)
        for q in (0.5, 0.95)
    }
    if latency_sample:
        lat = {k: replace(e, method=f"{e.method}; {latency_sample}") for k, e in lat.items()}
    return {
        "volume": _count(calls),
        **lat,
        "error_rate": wilson(failed, calls, confidence)
        if calls
        else Estimate.empty("wilson", confidence),
    }


def metrics_to_dict(metrics: Mapping[str, Estimate]) -> dict[str, Any]:
    """JSON-able: NaN and infinite bounds (the data cannot bound them) become ``null``."""
    return {
        k: {
            f: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for f, v in e.to_dict().items()
        }
        for k, e in metrics.items()
    }
