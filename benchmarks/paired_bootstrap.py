"""Paired bootstrap speed and memory: 10,000 resamples of 100,000 paired items.

Times ``calipers.stats.paired_bootstrap`` (means of A and B and of B - A from one paired
bootstrap) on three kinds of scores, the sign-flip permutation test, and a whole
``paired_compare``. Peak memory is what numpy allocated (tracemalloc): resamples are drawn in
chunks of ``_CELLS`` indices, so memory stays flat instead of growing with
resamples x items. Target (issue): under 2 s on this machine.

    python benchmarks/paired_bootstrap.py [--items 100000] [--resamples 10000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from calipers.stats import paired_bootstrap, paired_compare, sign_flip_pvalue
from calipers.stats._resample import BINS, EXACT_CELLS
from calipers.stats._resample import CELLS as _CELLS
from calipers.stats._resample import FEW as _FEW

MiB = 2**20


def scores(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if kind == "continuous":  # e.g. token F1 or BLEU: every pair distinct
        a = rng.uniform(size=n)
        return a, np.clip(a + rng.normal(0.01, 0.2, size=n), 0, 1)
    if kind == "partial":  # 0 / 0.5 / 1 credit: 9 distinct pairs
        return rng.integers(0, 3, size=n) / 2, rng.integers(0, 3, size=n) / 2
    return (rng.random(n) < 0.7).astype(float), (rng.random(n) < 0.72).astype(float)


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median seconds, peak MiB allocated) over ``repeat`` runs."""
    secs, peaks = [], []
    for _ in range(repeat):
        tracemalloc.start()
        start = time.perf_counter()
        fn()
        secs.append(time.perf_counter() - start)
        peaks.append(tracemalloc.get_traced_memory()[1] / MiB)
        tracemalloc.stop()
    return statistics.median(secs), max(peaks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n, b = args.items, args.resamples
    data = {
        k: scores(k, n, np.random.default_rng(args.seed))
        for k in ("continuous", "partial", "binary")
    }
    rows_per_chunk = max(1, _CELLS // n)
    binned = n * b > EXACT_CELLS and n >= BINS * _FEW
    continuous_how = (
        f"binned: exact multinomial over {BINS} bins + within-bin normal"
        if binned
        else f"index matrix, chunks of {rows_per_chunk} x {n:,}"
    )
    cases: list[tuple[str, str, Callable[[], Any], bool]] = [
        (
            "paired bootstrap, continuous scores",
            continuous_how,
            lambda: paired_bootstrap(
                *data["continuous"], rng=np.random.default_rng(1), n_resamples=b
            ),
            True,
        ),
        (
            "paired bootstrap, 0/0.5/1 scores",
            f"multinomial counts (distinct pairs <= n/{_FEW})",
            lambda: paired_bootstrap(*data["partial"], rng=np.random.default_rng(1), n_resamples=b),
            True,
        ),
        (
            "sign-flip test, continuous scores",
            "random bits, chunked",
            lambda: sign_flip_pvalue(
                data["continuous"][1] - data["continuous"][0],
                rng=np.random.default_rng(1),
                n_resamples=b,
            ),
            False,
        ),
        (
            "paired_compare, 0/1 scores",
            "Newcombe + exact McNemar",
            lambda: paired_compare(*data["binary"], rng=np.random.default_rng(1)),
            False,
        ),
        (
            "paired_compare, continuous scores",
            "bootstrap + sign-flip test",
            lambda: paired_compare(
                *data["continuous"], rng=np.random.default_rng(1), n_resamples=b
            ),
            False,
        ),
    ]
    table = Table(
        title=f"Paired comparison, {n:,} items, {b:,} resamples (median of {args.repeat})"
    )
    for col in ("what", "how", "seconds", "peak MiB", "target", "ok"):
        table.add_column(col)
    for label, how, fn, targeted in cases:
        secs, peak = measure(fn, args.repeat)
        ok = ("yes" if secs < 2.0 else "NO") if targeted else "-"
        table.add_row(label, how, f"{secs:.2f}", f"{peak:.1f}", "< 2 s" if targeted else "-", ok)
    console = Console(width=130)
    console.print(table)
    console.print(
        f"An exact index bootstrap would draw {n * b:,} indices; above "
        f"{EXACT_CELLS:,} (and n >= {BINS * _FEW:,}) continuous scores use the binned "
        "resampler (docs/comparisons-statistics.md)."
    )


if __name__ == "__main__":
    main()
