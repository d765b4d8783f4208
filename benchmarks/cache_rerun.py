"""Re-running a finished evaluation is answered from the response cache.

Runs the same evaluation twice into a fresh store (in one process, so interpreter start-up
is not counted in either) and reports the speed-up. The second run must not load the model.
Target (issue 2): >= 50x faster than the first run.

    python benchmarks/cache_rerun.py [--model smollm2] [--task dynamic] [--limit 10]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from calipers.runner import RunConfig, arun
from calipers.store import Store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--task", default="dynamic")
    ap.add_argument("--limit", type=int, default=10, help="items per task")
    args = ap.parse_args()
    cfg = RunConfig(model=args.model, tasks=(args.task,), limit=args.limit)
    rows = []
    with tempfile.TemporaryDirectory() as d, Store.open(f"sqlite:///{Path(d) / 'b.db'}") as st:
        for label in ("first run", "identical re-run"):
            start = time.perf_counter()
            result = asyncio.run(arun(cfg, st))
            elapsed = time.perf_counter() - start
            n = sum(t["n_samples"] for t in result.summary["tasks"].values())
            cached = sum(t["n_cached"] for t in result.summary["tasks"].values())
            rows.append((label, n, cached, elapsed, result.summary))
    first, second = rows[0][3], rows[1][3]
    same = all(
        rows[0][4]["tasks"][t]["metrics"] == rows[1][4]["tasks"][t]["metrics"]
        for t in rows[0][4]["tasks"]
    )
    table = Table(title=f"Cache re-run: {args.model} on {args.task}, {args.limit} items/task")
    for c in ("run", "samples", "from cache", "seconds", "speed-up"):
        table.add_column(c, justify="right")
    for label, n, cached, secs, _ in rows:
        table.add_row(label, str(n), str(cached), f"{secs:.2f}", f"{first / secs:.0f}x")
    Console().print(table)
    verdict = "meets" if first / second >= 50 else "MISSES"
    Console().print(
        f"Identical estimates: {same}. Speed-up {first / second:.0f}x {verdict} the >= 50x target."
    )


if __name__ == "__main__":
    main()
