"""Leaderboard rank intervals at scale: 20 models x 10,000 items, 1,000 paired resamples.

Times ``calipers.stats._ranking.rank_models`` on synthetic scores (binary accuracy, and
continuous scores with 5% unscored items) and prints the leaderboard it produced.
Target (issue: leaderboard of 20 runs x 10,000 items): under 5 s per board.

    python benchmarks/leaderboard_ranks.py [--models 20] [--items 10000] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from calipers.stats._ranking import Leaderboard, rank_models

TARGET_S = 5.0


def make_scores(kind: str, n_models: int, n_items: int, seed: int) -> dict[str, np.ndarray]:
    """Models whose true accuracy rises in small steps, so some neighbours are within noise."""
    rng = np.random.default_rng(seed)
    difficulty = rng.random(n_items)  # shared by all models: scores are correlated, as in life
    out = {}
    for i in range(n_models):
        skill = 0.6 + 0.1 * i / max(1, n_models - 1)
        if kind == "binary":
            x = (rng.random(n_items) * 0.5 + difficulty * 0.5 < skill).astype(float)
        else:
            x = np.clip(skill + 0.3 * (0.5 - difficulty) + rng.normal(0, 0.2, n_items), 0, 1)
            x[rng.random(n_items) < 0.05] = np.nan
        out[f"model-{i:02d}"] = x
    return out


def timed(
    scores: dict[str, np.ndarray], n_resamples: int, repeats: int
) -> tuple[Leaderboard, list[float]]:
    times, board = [], None
    for r in range(repeats):
        start = time.perf_counter()
        board = rank_models(scores, rng=np.random.default_rng(r), n_resamples=n_resamples)
        times.append(time.perf_counter() - start)
    assert board is not None
    return board, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    console = Console()
    timing = Table(
        title=f"rank_models: {args.models} models x {args.items:,} items, "
        f"{args.resamples:,} paired resamples"
    )
    for col in ("scores", "first (s)", f"median of {args.repeats} (s)", "target"):
        timing.add_column(col, justify="right")
    boards = {}
    for kind in ("binary", "continuous, 5% NaN"):
        scores = make_scores(kind.split(",")[0], args.models, args.items, seed=1)
        boards[kind], times = timed(scores, args.resamples, args.repeats)
        verdict = "meets" if max(times) < TARGET_S else "MISSES"
        timing.add_row(
            kind,
            f"{times[0]:.2f}",
            f"{statistics.median(times):.2f}",
            f"< {TARGET_S:g} s: {verdict}",
        )
    console.print(timing)
    board = boards["binary"]
    top = Table(title="binary board, top 8", caption=board.method)
    for col in ("rank [95%]", "tie group", "model", "score [95%]"):
        top.add_column(col)
    for m in board.models[:8]:
        top.add_row(
            f"{m.rank} [{m.rank_low}-{m.rank_high}]",
            str(m.tie_group),
            m.name,
            m.score.format(percent=True),
        )
    console.print(top)
    console.print(f"saturated: {board.saturated}  {board.saturation_note or ''}")


if __name__ == "__main__":
    main()
