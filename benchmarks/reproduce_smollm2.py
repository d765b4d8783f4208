"""Reproduce SmolLM2-135M-Instruct's model-card figures with the embedded Q4_1 model.

The card reports (lighteval, bf16, chat template on, 0-shot, acc_norm = log-likelihood divided
by the option's character length): HellaSwag 40.9, ARC (mean of Easy and Challenge) 37.3,
PIQA 66.3, MMLU cloze 29.3; GSM8K 5-shot 1.4. Each row runs on a seeded random subset of the
benchmark (``--hellaswag 200``: 200 items drawn with ``--seed``; ``-1``: the full set; ``0``:
skip) and prints published vs measured with the 95% interval, and whether the published figure
lies inside that interval widened by ``--allowance`` points for quantization (Q4_1 vs bf16).

Intervals: one task, the runner's estimate (Wilson for 0/1 scores); the ARC mean of Easy and
Challenge, MOVER (the two Wilson intervals' half-widths combined in quadrature; the tasks are
independent samples). Rows whose tasks are not registered (MMLU cloze: ``mmlu``; GSM8K:
``gsm8k``) are skipped with a note. Results go to docs/reproducibility.md by hand.

    python benchmarks/reproduce_smollm2.py --data-dir /work/shared/data \\
        --hellaswag 200 --arc 200 --piqa 250 --mmlu 200 --gsm8k 30
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.runner import RunConfig, arun
from calipers.store import Store
from calipers.tasks import LoadContext, Task, get_task, list_tasks, register_task
from calipers.tasks.benchmarks import commonsense
from calipers.types import Sample


@dataclasses.dataclass(frozen=True)
class Row:
    label: str
    tasks: tuple[str, ...]  # several: the row is their unweighted mean (ARC)
    published: float  # percent
    metric: str | None  # None: the task's primary metric
    size: int  # default subset size per task
    formulation: str | None = None
    few_shot: int | None = None


ROWS = {
    "hellaswag": Row("HellaSwag", ("hellaswag",), 40.9, "acc_norm", 200),
    "arc": Row(
        "ARC (mean of Easy, Challenge)", ("arc_easy", "arc_challenge"), 37.3, "acc_norm", 200
    ),
    "piqa": Row("PIQA", ("piqa",), 66.3, "acc_norm", 250),
    "mmlu": Row("MMLU cloze", ("mmlu",), 29.3, "acc_norm", 200, formulation="cloze"),
    "gsm8k": Row("GSM8K 5-shot", ("gsm8k",), 1.4, None, 30, few_shot=5),
}


def subset_task(task: Task, n: int, seed: int) -> Task:
    """``task`` whose loader returns ``n`` items drawn at random (seeded by ``seed`` and the
    task name), kept in file order; the methodology card then records the subset's data
    hash and item count."""

    def load(ctx: LoadContext) -> Sequence[Sample]:
        items = list(task.load(ctx))
        if n < 0 or n >= len(items):
            return items
        keep = sorted(random.Random(f"{seed}:{task.name}").sample(range(len(items)), n))
        return [items[i] for i in keep]

    what = "all items" if n < 0 else f"random subset of {n} items, seed {seed}"
    return dataclasses.replace(task, load=load, description=f"{task.description} [{what}]")


def _register_subset(name: str, row: Row, n: int, seed: int) -> str:
    task = subset_task(get_task(name, row.formulation), n, seed)
    alias = f"repro:{name}"
    register_task(alias, lambda: task)
    return alias


def mover_mean(estimates: Sequence[tuple[float, float, float]]) -> tuple[float, float, float]:
    """The unweighted mean of independent estimates ``(value, low, high)`` with its interval by
    MOVER (Zou & Donner 2008): each side's half-widths combined in quadrature. With Wilson
    intervals for the parts it stays valid for small n and at 0% or 100%, unlike a bootstrap."""
    k = len(estimates)
    value = sum(v for v, _lo, _hi in estimates) / k
    low = value - math.sqrt(sum((v - lo) ** 2 for v, lo, _hi in estimates)) / k
    high = value + math.sqrt(sum((hi - v) ** 2 for v, _lo, hi in estimates)) / k
    return value, low, high


async def run_row(
    key: str, row: Row, n: int, args: argparse.Namespace, store: Store
) -> dict[str, Any]:
    aliases = tuple(_register_subset(t, row, n, args.seed) for t in row.tasks)
    config = RunConfig(
        model=args.model,
        tasks=aliases,
        data_dir=args.data_dir,
        seed=args.seed,
        chat_template=args.chat_template,
        few_shot=row.few_shot,
        model_options={"n_threads": args.threads},
    )
    start = time.perf_counter()
    result = await arun(config, store)
    wall = time.perf_counter() - start
    summaries = result.summary["tasks"]
    per_task = {}
    for name in row.tasks:
        s = summaries[name]
        metric = row.metric or s["primary"]
        per_task[name] = {
            "metric": metric,
            "n": s["n_scored"],
            "errors": s["n_errors"],
            **{k: 100 * s["metrics"][metric][k] for k in ("value", "low", "high")},
        }
    value, low, high = mover_mean([(p["value"], p["low"], p["high"]) for p in per_task.values()])
    return {
        "row": key,
        "label": row.label,
        "published": row.published,
        "value": value,
        "low": low,
        "high": high,
        "n": {t: p["n"] for t, p in per_task.items()},
        "errors": sum(p["errors"] for p in per_task.values()),
        "tasks": per_task,
        "wall_s": wall,
        "run_id": result.run_id,
        "metric": per_task[row.tasks[0]]["metric"],
    }


def _verdict(r: dict[str, Any], allowance: float) -> str:
    if r["low"] <= r["published"] <= r["high"]:
        return "inside"
    if r["low"] - allowance <= r["published"] <= r["high"] + allowance:
        return f"inside ±{allowance:g}"
    return "OUTSIDE"


def _print(
    results: list[dict[str, Any]], notes: list[str], args: argparse.Namespace, total: float
) -> None:
    mode = "chat template on" if args.chat_template else "chat template off"
    table = Table(
        title=f"SmolLM2-135M-Instruct ({args.model}), 0-shot unless noted, {mode}, seed {args.seed}"
    )
    for c in (
        "benchmark",
        "metric",
        "items",
        "published",
        "measured",
        "95% interval",
        "verdict",
        "seconds",
    ):
        table.add_column(c, justify="left" if c in ("benchmark", "metric") else "right")
    for r in results:
        items = " + ".join(str(n) for n in r["n"].values())
        table.add_row(
            r["label"],
            r["metric"],
            items,
            f"{r['published']:.1f}",
            f"{r['value']:.1f}",
            f"[{r['low']:.1f}, {r['high']:.1f}]",
            _verdict(r, args.allowance),
            f"{r['wall_s']:.0f}",
        )
        if len(r["tasks"]) > 1:
            for t, p in r["tasks"].items():
                table.add_row(
                    f"  {t}",
                    p["metric"],
                    str(p["n"]),
                    "",
                    f"{p['value']:.1f}",
                    f"[{p['low']:.1f}, {p['high']:.1f}]",
                    "",
                    "",
                )
    console = Console(width=140)
    console.print(table)
    console.print(
        f"Quantization allowance: ±{args.allowance:g} points. Total wall time {total:.0f} s."
    )
    for note in notes:
        console.print(note)


async def main_async(args: argparse.Namespace) -> None:
    commonsense.register()
    registered = set(list_tasks())
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    start = time.perf_counter()
    url = args.store or f"sqlite:///{Path(tempfile.mkdtemp()) / 'reproduce.db'}"
    with Store.open(url) as store:
        for key, row in ROWS.items():
            n = getattr(args, key)
            n = row.size if n is None else n
            missing = [t for t in row.tasks if t not in registered]
            if n == 0:
                notes.append(f"{row.label}: skipped (size 0).")
            elif missing:
                notes.append(f"{row.label}: skipped, task {', '.join(missing)} not registered.")
            else:
                results.append(await run_row(key, row, n, args, store))
    total = time.perf_counter() - start
    _print(results, notes, args, total)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "results": results,
                    "notes": notes,
                    "total_s": total,
                    "allowance": args.allowance,
                    "seed": args.seed,
                    "chat_template": args.chat_template,
                    "model": args.model,
                },
                indent=2,
            )
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--data-dir", default=os.environ.get("CALIPERS_DATA", "/work/shared/data"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--allowance",
        type=float,
        default=3.0,
        help="quantization allowance in points (Q4_1 vs bf16)",
    )
    ap.add_argument("--chat-template", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument(
        "--threads", type=int, default=None, help="llama.cpp threads (default: all cores)"
    )
    ap.add_argument("--store", help="database URL to keep the runs (default: a temporary one)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    for key, row in ROWS.items():
        ap.add_argument(
            f"--{key}",
            type=int,
            default=None,
            help=f"{row.label}: items per task (default {row.size}; -1 all, 0 skip)",
        )
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
