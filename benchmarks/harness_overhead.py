"""Harness overhead: items/s through the whole pipeline with the deterministic fake model.

Plan, schedule, per-sample scoring, batched store writes, response cache and finalize are all
included; the model answers instantly, so what is measured is calipers itself.
Target (issue 2): >= 1,000 items/s for generation tasks with simple scorers on 2 cores.

    python benchmarks/harness_overhead.py [--items 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.store import Store


def _task_file(folder: Path, n: int) -> Path:
    rows = [{"id": str(i), "input": f"What is {i} plus 1?", "target": str(i + 1)} for i in range(n)]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "bench.yaml"
    spec.write_text("name: bench\ndata: items.jsonl\nscorers: [exact_match, numeric_match]\n")
    return spec


def _answer(req) -> str:  # type: ignore[no-untyped-def]
    text = req.messages[-1].content
    return str(int(text.split()[2]) + 1)


def measure(n: int, use_cache: bool, warm_cache: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        spec = _task_file(folder, n)
        with Store.open(f"sqlite:///{folder / 'bench.db'}") as store:
            cfg = RunConfig(
                model="fake:bench", tasks=(str(spec),), use_cache=use_cache, concurrency=8
            )
            if warm_cache:
                asyncio.run(arun(cfg, store, provider=FakeModel(_answer, name="bench")))
            start = time.perf_counter()
            result = asyncio.run(arun(cfg, store, provider=FakeModel(_answer, name="bench")))
            elapsed = time.perf_counter() - start
            acc = result.summary["tasks"]["bench"]["metrics"]["exact_match"]["value"]
            assert acc == 1.0, acc
    return n / elapsed, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    table = Table(
        title=f"Harness overhead, fake model, {args.items} items (median of {args.repeat})"
    )
    for c in ("configuration", "items/s", "seconds", "target", "ok"):
        table.add_column(c)
    for label, use_cache, warm in [
        ("cache off", False, False),
        ("cache on, cold (writes)", True, False),
        ("cache on, warm (hits)", True, True),
    ]:
        runs = [measure(args.items, use_cache, warm) for _ in range(args.repeat)]
        rate = statistics.median(r[0] for r in runs)
        secs = statistics.median(r[1] for r in runs)
        table.add_row(
            label, f"{rate:,.0f}", f"{secs:.2f}", ">= 1,000", "yes" if rate >= 1000 else "NO"
        )
    Console().print(table)


if __name__ == "__main__":
    main()
