"""The changepoint scan of ``calipers trend`` in simulation: false alarms on flat series and
power on a planted drop, for docs/trends.md.

    python benchmarks/trend_changepoint.py            # about a minute on one core

Each run is a binomial rate with its own n, as a run of a model on n fresh items would be,
tested with the standard errors the trend analysis uses for Wilson proportions (binomial,
with the pooled rate: the errors under "no change").
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from calipers.stats import changepoints, wilson

Z = float(stats.norm.ppf(0.975))


def _series(
    rng: np.random.Generator, rates: np.ndarray, ns: np.ndarray
) -> tuple[list[float], list[float]]:
    """Rates and the standard errors calipers trend tests them with: binomial under "no
    change" with the pooled rate (every run a Wilson proportion), else each run's own."""
    ks = rng.binomial(ns, rates)
    pooled = ks.sum() / ns.sum()
    if 0 < pooled < 1:
        return list(ks / ns), list(np.sqrt(pooled * (1 - pooled) / ns))
    ses = []
    for k, n in zip(ks, ns, strict=True):
        w = wilson(int(k), int(n))
        ses.append((w.high - w.low) / (2 * Z))
    return list(ks / ns), ses


def false_alarms(alpha: float, reps: int, rng: np.random.Generator) -> float:
    hits = 0
    for _ in range(reps):
        t, p = int(rng.integers(2, 31)), float(rng.uniform(0.2, 0.9))
        ns = rng.integers(50, 401, size=t)
        y, s = _series(rng, np.full(t, p), ns)
        hits += bool(changepoints(y, s, rng, alpha=alpha, n_sim=499, n_boot=99).changes)
    return hits / reps


def power(drop: float, n: int, reps: int, rng: np.random.Generator) -> tuple[float, float]:
    found = at = 0
    for _ in range(reps):
        rates = np.where(np.arange(12) < 9, 0.75, 0.75 - drop)
        y, s = _series(rng, rates, np.full(12, n))
        seg = changepoints(y, s, rng, n_sim=499, n_boot=99)
        if seg.changes:
            found += 1
            at += any(c.index == 9 for c in seg.changes)
    return found / reps, (at / found if found else float("nan"))


def main() -> None:
    rng = np.random.default_rng(2026)
    for alpha in (0.05, 0.01):
        rate = false_alarms(alpha, 2000, rng)
        print(
            f"flat series (2-30 runs, n 50-400, rate 0.2-0.9), alpha={alpha}: "
            f"false alarms {rate:.3f} of 2000"
        )
    print("planted drop in the last 3 of 12 runs from 75%: power (location exact)")
    for n in (100, 300, 1000):
        cells = []
        for drop in (0.03, 0.05, 0.08, 0.10):
            pw, loc = power(drop, n, 400, rng)
            cells.append(f"-{100 * drop:.0f} pts: {pw:.2f} ({loc:.2f})")
        print(f"  n={n:>4} per run: " + "  ".join(cells))


if __name__ == "__main__":
    main()
