"""Bradley-Terry ratings at scale: 50 models x 100,000 votes, 1,000 bootstrap resamples.

Times ``calipers.stats.bradley_terry`` on synthetic battles drawn from Davidson's model with
known strengths (ties and no ties) and prints the timing and the top of the table, with how
far the fitted log-strengths are from the true ones.
Target (issue 18): under 10 s per fit, bootstrap included.

    python benchmarks/bradley_terry.py [--models 50] [--votes 100000] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from calipers.stats import BradleyTerry, bradley_terry

TARGET_S = 10.0


def make_battles(
    n_models: int, n_votes: int, nu: float, seed: int
) -> tuple[list[tuple[str, str, str]], np.ndarray]:
    """Votes between random pairs; true log-strengths N(0, 1), centred."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, n_models)
    theta -= theta.mean()
    i = rng.integers(0, n_models, n_votes)
    j = (i + rng.integers(1, n_models, n_votes)) % n_models
    pi, pj = np.exp(theta[i]), np.exp(theta[j])
    u = rng.random(n_votes) * (pi + pj + nu * np.sqrt(pi * pj))
    outcome = np.where(u < pi, "a", np.where(u < pi + pj, "b", "tie"))
    names = np.array([f"model-{k:02d}" for k in range(n_models)])
    battles = list(zip(names[i].tolist(), names[j].tolist(), outcome.tolist(), strict=True))
    return battles, theta


def timed(
    battles: list[tuple[str, str, str]], n_resamples: int, repeats: int
) -> tuple[BradleyTerry, list[float]]:
    times, result = [], None
    for r in range(repeats):
        start = time.perf_counter()
        result = bradley_terry(battles, rng=np.random.default_rng(r), n_resamples=n_resamples)
        times.append(time.perf_counter() - start)
    assert result is not None
    return result, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=50)
    ap.add_argument("--votes", type=int, default=100_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    console = Console()
    timing = Table(
        title=f"bradley_terry: {args.models} models x {args.votes:,} votes, "
        f"{args.resamples:,} bootstrap resamples"
    )
    for col in ("votes", "first (s)", f"median of {args.repeats} (s)", "max |error|", "target"):
        timing.add_column(col, justify="right")
    results = {}
    for label, nu in (("ties (nu = 0.3)", 0.3), ("no ties", 0.0)):
        battles, theta = make_battles(args.models, args.votes, nu, seed=1)
        result, times = timed(battles, args.resamples, args.repeats)
        results[label] = result
        fitted = {m.name: m.log_strength.value for m in result.models}
        error = max(abs(fitted[f"model-{k:02d}"] - t) for k, t in enumerate(theta))
        verdict = "meets" if max(times) < TARGET_S else "MISSES"
        timing.add_row(
            label,
            f"{times[0]:.2f}",
            f"{statistics.median(times):.2f}",
            f"{error:.3f}",
            f"< {TARGET_S:g} s: {verdict}",
        )
    console.print(timing)
    result = results["ties (nu = 0.3)"]
    top = Table(title="with ties, top 8", caption=f"{result.method}; nu = {result.tie.format()}")
    for col in ("rank [95%]", "model", "Elo [95%]", "W-L-T"):
        top.add_column(col)
    for m in result.models[:8]:
        top.add_row(
            f"{m.rank} [{m.rank_low}-{m.rank_high}]",
            m.name,
            f"{m.elo.value:.0f} [{m.elo.low:.0f}, {m.elo.high:.0f}]",
            f"{m.wins}-{m.losses}-{m.ties}",
        )
    console.print(top)


if __name__ == "__main__":
    main()
