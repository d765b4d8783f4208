"""How often does monitoring cry wolf? The false-alarm rate measured by simulation.

Each repetition draws a reference window and a current window of synthetic traffic
(:mod:`calipers.monitor._synthetic`), runs every drift test of a window (Holm-adjusted) and
counts a window with any alarm. With the same profile on both sides (no drift) the rate must
stay at or below ``alpha``; with a drifted profile it is the power. For contrast it counts the
folk rule "PSI > 0.1 on prompt length" (10 quantile bins), whose false-alarm rate is set by the
window size rather than chosen: with no drift PSI is about ``9 (1/n + 1/m)``, 0.18 for two
windows of 100.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from calipers.monitor._drift import DriftOptions, drift_tests
from calipers.monitor._features import Features, extract_features
from calipers.monitor._language import language_detector
from calipers.monitor._scores import ScoreIndex
from calipers.monitor._synthetic import TrafficProfile, synthetic_traffic
from calipers.monitor._traffic import pair_records
from calipers.monitor._vectors import Embedder
from calipers.stats import psi, wilson
from calipers.types import Estimate

__all__ = ["MAGIC_PSI", "SimulationResult", "simulate_alarms"]

MAGIC_PSI = 0.1
_T0 = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SimulationResult:
    """Windows with any alarm, out of ``reps``; the same windows judged by PSI > 0.1."""

    reps: int
    n: int
    alpha: float
    alarms: int
    magic_alarms: int
    by_feature: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> Estimate:
        return wilson(self.alarms, self.reps)

    @property
    def magic_rate(self) -> Estimate:
        return wilson(self.magic_alarms, self.reps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reps": self.reps,
            "n_per_window": self.n,
            "alpha": self.alpha,
            "alarms": self.alarms,
            "rate": self.rate.to_dict(),
            "magic_rule": f"PSI > {MAGIC_PSI} on prompt length",
            "magic_alarms": self.magic_alarms,
            "magic_rate": self.magic_rate.to_dict(),
            "by_feature": dict(sorted(self.by_feature.items())),
        }


def _window(n: int, profile: TrafficProfile, rng: np.random.Generator) -> Features:
    records = synthetic_traffic(
        n, start=_T0, end=_T0 + timedelta(hours=1), rng=rng, profile=profile
    )
    detect, _name = language_detector()
    return extract_features(pair_records(records), ScoreIndex(), detect)


def simulate_alarms(
    *,
    reps: int,
    n: int,
    rng: np.random.Generator,
    reference: TrafficProfile | None = None,
    current: TrafficProfile | None = None,
    options: DriftOptions | None = None,
    embeddings: str = "tfidf",
) -> SimulationResult:
    """``reps`` independent (reference, current) pairs of ``n``-request windows; ``current``
    defaults to ``reference`` (no drift)."""
    ref_p = reference or TrafficProfile()
    cur_p = current or ref_p
    o = options or DriftOptions()
    embedder = Embedder(embeddings, seed=0)
    alarms = magic = 0
    by_feature: Counter[str] = Counter()
    for _ in range(reps):
        ref, cur = _window(n, ref_p, rng), _window(n, cur_p, rng)
        rows = drift_tests(ref, cur, embedder=embedder, rng=rng, options=o)
        fired = {f"{r.feature}/{r.test.test}" for r in rows if r.test.drifted}
        by_feature.update(fired)
        alarms += bool(fired)
        magic += psi(ref.prompt_length, cur.prompt_length) > MAGIC_PSI
    return SimulationResult(reps, n, o.alpha, alarms, magic, dict(by_feature))
