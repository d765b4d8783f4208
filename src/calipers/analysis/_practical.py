"""Practical factors measured from stored runs: latency, throughput, tokens, cost, stability.

Per run:

- **latency p50 / p95** per request, with distribution-free order-statistic intervals, over
  the samples that completed without error and were *not* served from the response cache (a
  cached response measures the cache, not the model);
- **throughput**: completed items per second of wall time, from the run's ``created_at`` to
  ``finished_at`` (one measurement, so no interval; a resumed run's pause is included);
- **tokens per item** (input and output) as bootstrap Estimates over completed items;
- **cost per 1,000 items**: from the card's token prices (per item, then a bootstrap
  interval), or from a hardware cost per hour × wall time / completed items.

Across runs, **stability**: the spread of the primary score of the same model on the same task
(n runs, mean, sd, min, max). A measurement that is not there is ``None`` ("missing"), never 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from calipers._util.seeding import derived_rng
from calipers.analysis._align import StoredRun
from calipers.cards import ModelCard
from calipers.runner import comparable_hash
from calipers.stats import bootstrap_mean, quantile_interval
from calipers.store import SampleRecord
from calipers.types import Estimate

__all__ = ["RunFactors", "Stability", "run_factors", "stability"]

HARDWARE_METHOD = "hardware-rate x wall-time (one run: no interval)"


@dataclass(frozen=True)
class RunFactors:
    run_id: str
    model: str
    model_name: str
    tasks: tuple[str, ...]
    card: str | None
    n_items: int
    n_ok: int
    n_errors: int
    n_cached: int
    n_timed: int
    latency_p50_s: Estimate | None
    latency_p95_s: Estimate | None
    wall_s: float | None
    items_per_s: float | None
    input_tokens_per_item: Estimate | None
    output_tokens_per_item: Estimate | None
    cost_per_1000_usd: Estimate | None
    cost_basis: str
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; an interval bound the data cannot give (infinite) is ``null``."""
        d = asdict(self)
        for k, v in d.items():
            if isinstance(getattr(self, k), Estimate):
                d[k] = {
                    kk: None if isinstance(vv, float) and math.isinf(vv) else vv
                    for kk, vv in getattr(self, k).to_dict().items()
                }
            elif isinstance(v, tuple):
                d[k] = list(v)
        return d


@dataclass(frozen=True)
class Stability:
    model: str
    task: str
    metric: str
    n_runs: int
    run_ids: tuple[str, ...]
    values: tuple[float, ...]
    mean: float | None
    sd: float | None  # sample standard deviation (n - 1); None below two runs
    min: float | None
    max: float | None
    same_methodology: bool

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def _scaled(e: Estimate, k: float) -> Estimate:
    return Estimate(e.value * k, e.low * k, e.high * k, e.n, e.method, e.confidence)


def _wall_s(run: StoredRun) -> float | None:
    r = run.record
    if r.status != "finished" or r.finished_at is None:
        return None
    wall = (r.finished_at - r.created_at).total_seconds()
    return wall if wall > 0 else None


def _tokens(
    ok: Sequence[SampleRecord], attr: str, rng: np.random.Generator, confidence: float
) -> Estimate | None:
    xs = [getattr(s, attr) for s in ok if getattr(s, attr) is not None]
    return bootstrap_mean(xs, rng, confidence=confidence) if xs else None


def _token_cost(
    ok: Sequence[SampleRecord], card: ModelCard, rng: np.random.Generator, confidence: float
) -> tuple[Estimate | None, str]:
    p = card.pricing
    if p.input_usd_per_mtok is None or p.output_usd_per_mtok is None:
        return None, f"missing: card {card.name!r} has no input and output token prices"
    costs = [
        (s.input_tokens * p.input_usd_per_mtok + s.output_tokens * p.output_usd_per_mtok) / 1e6
        for s in ok
        if s.input_tokens is not None and s.output_tokens is not None
    ]
    if not costs:
        return None, "missing: no completed item recorded its token counts"
    est = _scaled(bootstrap_mean(costs, rng, confidence=confidence), 1000.0)
    when = f", prices as of {p.as_of}" if p.as_of else f", card as of {card.as_of}"
    return est, (
        f"card {card.name!r}: ${p.input_usd_per_mtok:g} / ${p.output_usd_per_mtok:g} per "
        f"million input / output tokens{when}; cached items priced as if called"
    )


def _hardware_cost(
    rate: float, wall: float | None, n_ok: int, source: str
) -> tuple[Estimate | None, str]:
    if wall is None:
        return None, "missing: the run has no finished wall time"
    if n_ok == 0:
        return None, "missing: no item completed"
    value = rate * wall / 3600.0 / n_ok * 1000.0
    nan = math.nan
    return Estimate(value, nan, nan, n_ok, HARDWARE_METHOD), (
        f"${rate:g}/hour ({source}) x {wall:.1f} s wall time / {n_ok} completed items"
    )


def _cost(
    ok: Sequence[SampleRecord],
    card: ModelCard | None,
    hardware: float | None,
    wall: float | None,
    rng: np.random.Generator,
    confidence: float,
) -> tuple[Estimate | None, str]:
    if hardware is not None:
        return _hardware_cost(hardware, wall, len(ok), "given")
    if card is None:
        return None, "missing: no model card (give --card or --hardware-cost-per-hour)"
    p = card.pricing
    if (
        p.input_usd_per_mtok is None
        and p.output_usd_per_mtok is None
        and (p.hardware_usd_per_hour is not None)
    ):
        return _hardware_cost(p.hardware_usd_per_hour, wall, len(ok), f"card {card.name!r}")
    return _token_cost(ok, card, rng, confidence)


def run_factors(
    run: StoredRun,
    *,
    card: ModelCard | None = None,
    hardware_cost_per_hour: float | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> RunFactors:
    """Latency, throughput, tokens and cost of one stored run (see the module docstring)."""
    if hardware_cost_per_hour is not None and hardware_cost_per_hour < 0:
        raise ValueError(f"hardware cost per hour must be >= 0, got {hardware_cost_per_hour}")
    rid = run.record.id
    samples = run.samples
    ok = [s for s in samples if s.error is None]
    timed = [s.latency_s for s in ok if not s.cached and s.latency_s is not None]
    wall = _wall_s(run)
    n_cached = sum(s.cached for s in samples)
    notes = [
        "latency excludes cached responses and errors",
        "time to first token: not measured (evaluation runs do not stream; "
        "`calipers gateway` logs it for streamed traffic)",
    ]
    if n_cached:
        notes.append(
            f"{n_cached} of {len(samples)} responses came from the cache: throughput "
            "and hardware cost per item are optimistic"
        )
    if wall is None:
        notes.append(f"run status is {run.record.status!r}: no wall time, so no throughput")
    cost, basis = _cost(
        ok, card, hardware_cost_per_hour, wall, derived_rng(seed, rid, "cost"), confidence
    )
    return RunFactors(
        run_id=rid,
        model=run.record.model,
        model_name=run.record.model_name,
        tasks=tuple(run.record.tasks),
        card=card.name if card else None,
        n_items=len(samples),
        n_ok=len(ok),
        n_errors=len(samples) - len(ok),
        n_cached=n_cached,
        n_timed=len(timed),
        latency_p50_s=quantile_interval(timed, 0.5, confidence) if timed else None,
        latency_p95_s=quantile_interval(timed, 0.95, confidence) if timed else None,
        wall_s=wall,
        items_per_s=len(ok) / wall if wall and ok else None,
        input_tokens_per_item=_tokens(ok, "input_tokens", derived_rng(seed, rid, "in"), confidence),
        output_tokens_per_item=_tokens(
            ok, "output_tokens", derived_rng(seed, rid, "out"), confidence
        ),
        cost_per_1000_usd=cost,
        cost_basis=basis,
        notes=tuple(notes),
    )


def _primary_value(run: StoredRun, task: str) -> tuple[str, float] | None:
    ts = run.record.task_summary(task)
    metric = ts.primary if ts else None
    est = ts.metrics.get(metric) if ts and metric else None
    if metric is None or est is None or math.isnan(est.value):
        return None
    return metric, est.value


def stability(runs: Sequence[StoredRun]) -> list[Stability]:
    """Spread of the primary score per (model, task, metric) across ``runs``; runs without a
    score for the task are left out. ``same_methodology`` is False when the runs' methodology
    for the task differs (for example a dynamic task with different seeds: different items)."""
    groups: dict[tuple[str, str, str], list[tuple[StoredRun, float]]] = defaultdict(list)
    for run in runs:
        for task in run.record.tasks:
            got = _primary_value(run, task)
            if got is not None:
                groups[(run.record.model_name, task, got[0])].append((run, got[1]))
    out = []
    for (model, task, metric), members in groups.items():
        vals = np.array([v for _r, v in members], dtype=float)
        hashes = {comparable_hash(r.methodology, task) for r, _v in members}
        out.append(
            Stability(
                model=model,
                task=task,
                metric=metric,
                n_runs=len(members),
                run_ids=tuple(r.record.id for r, _v in members),
                values=tuple(vals.tolist()),
                mean=float(vals.mean()),
                sd=float(vals.std(ddof=1)) if vals.size >= 2 else None,
                min=float(vals.min()),
                max=float(vals.max()),
                same_methodology=len(hashes) == 1,
            )
        )
    return out
