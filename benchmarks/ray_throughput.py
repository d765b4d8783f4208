"""Samples per second of the Ray executor against its number of workers, and of the local one.

Two cases, each a whole ``arun`` (planning, actors starting, the samples, the writes, the
summary), on one Ray instance started once in this process before the timings (its start-up
is shown apart):

- ``fake``: the fake model with a fixed delay per call (I/O-bound: a stand-in for a remote
  server), ``--concurrency`` requests in flight per replica;
- ``smollm2``: the embedded SmolLM2-135M through llama.cpp in every actor (CPU-bound: each
  replica loads its own copy; on a 2-core machine more than 2 replicas only share the cores).

The local executor runs the same configuration with the same per-replica concurrency, and for
the fake model also with the concurrency of the largest Ray run, to separate what Ray adds
(processes, machines) from what is only more requests in flight.

    python benchmarks/ray_throughput.py [--workers 1 2 4] [--fake-n 200] [--delay 0.2]
        [--smollm2-n 12] [--no-smollm2] [--address HOST:PORT] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from _measure import measured

from calipers.runner import RayExecutor, RunConfig, arun
from calipers.store import Store


class _Clock:
    """A Progress that notes when records arrive: the rate once work flows (start-up of
    actors and model loading left out) is (records after the first) / (last - first)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def start_run(self, run_id: str) -> None: ...
    def note(self, message: str) -> None: ...
    def start_task(self, task: str, total: int, done: int) -> None: ...
    def retrying(self, task: str, sample_id: str, retry: Any) -> None: ...
    def finish_task(self, task: str) -> None: ...

    def advance(self, task: str, record: Any) -> None:
        self.times.append(time.perf_counter())

    def steady(self) -> float:
        t = self.times
        return (len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 and t[-1] > t[0] else float("nan")


def _one(cfg: RunConfig, executor: RayExecutor | None, db: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    clock = _Clock()
    with Store.open(f"sqlite:///{db}") as store, measured(out):
        result = asyncio.run(arun(cfg, store, executor=executor, progress=clock))
        rows = store.get_samples(result.run_id)
    n = len(rows)
    out.update(
        n=n,
        errors=sum(1 for r in rows if r.error),
        samples_per_s=n / out["seconds"],
        steady_per_s=clock.steady(),
        distinct=len({r.key for r in rows}),
    )
    return out


def _case(
    name: str,
    cfg: RunConfig,
    workers: list[int],
    tmp: Path,
    local_concurrency: list[int],
) -> list[dict[str, Any]]:
    rows = []
    for c in local_concurrency:
        local = cfg.model_copy(update={"concurrency": c}) if c != cfg.concurrency else cfg
        r = _one(local, None, tmp / f"{name}-local-{c}.db")
        rows.append({"case": name, "executor": "local", "workers": 1, "in_flight": c, **r})
    for w in workers:
        r = _one(cfg, RayExecutor(workers=w), tmp / f"{name}-ray-{w}.db")
        per = cfg.concurrency or 1
        rows.append({"case": name, "executor": "ray", "workers": w, "in_flight": w * per, **r})
    return rows


def _print(rows: list[dict[str, Any]], startup: float, console: Console) -> None:
    table = Table(title=f"Ray executor throughput (Ray start-up {startup:.1f} s, not counted)")
    cols = ("case", "executor", "workers", "in flight", "samples", "seconds", "samples/s")
    for col in (*cols, "once flowing"):
        table.add_column(col, justify="left" if col in ("case", "executor") else "right")
    table.add_column("others' CPU", justify="right")
    for r in rows:
        table.add_row(
            r["case"],
            r["executor"],
            str(r["workers"]),
            str(r["in_flight"]),
            f"{r['n']}" + (f" ({r['errors']} err)" if r["errors"] else ""),
            f"{r['seconds']:.1f}",
            f"{r['samples_per_s']:.2f}",
            f"{r['steady_per_s']:.2f}",
            f"{r['others_cpu_share']:.0%}",
        )
    console.print(table)
    console.print(
        "[dim]samples/s: the whole run; once flowing: from the first record stored to the "
        "last (actor start-up and model loading left out)."
    )
    console.print(f"[dim]{os.cpu_count()} CPUs; load average at the end {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--fake-n", type=int, default=400)
    ap.add_argument("--delay", type=float, default=0.2, help="seconds per fake call")
    ap.add_argument("--concurrency", type=int, default=4, help="fake: in flight per replica")
    ap.add_argument("--smollm2-n", type=int, default=12)
    ap.add_argument("--no-smollm2", action="store_true")
    ap.add_argument("--address", help="an existing cluster (default: Ray in this process)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import ray

    t0 = time.perf_counter()
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(
            num_cpus=os.cpu_count() or 2,
            object_store_memory=200 * 2**20,
            include_dashboard=False,
            log_to_driver=False,
        )
    startup = time.perf_counter() - t0
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        fake = RunConfig(
            model=f"fake:sample=1|2|3,delay={args.delay}",
            tasks=("dyn_arithmetic",),
            limit=args.fake_n,
            concurrency=args.concurrency,
            use_cache=False,
        )
        most = max(args.workers) * args.concurrency
        rows += _case("fake", fake, args.workers, tmp, [args.concurrency, most])
        if not args.no_smollm2:
            smol = RunConfig(
                model="smollm2",
                tasks=("dyn_arithmetic",),
                limit=args.smollm2_n,
                max_tokens=24,
                use_cache=False,
            )
            rows += _case("smollm2", smol, args.workers, tmp, [1])
    ray.shutdown()
    if args.json:
        print(json.dumps({"ray_startup_s": startup, "rows": rows}, indent=2))
    else:
        _print(rows, startup, Console(width=120))


if __name__ == "__main__":
    main()
