"""The context-fill sweep of a RAG stress test on llama.cpp: KV reuse of the shared filler
prefix, wall time, and a cached re-run.

Every fill arm puts the same filler passages (one seeded order per stress test) before each
item's own passages, so consecutive requests share a long prefix that llama.cpp keeps in its KV
cache. This script runs the sweep (``--limit`` questions x the fill levels) as
``calipers rag stress --factors fill`` does, and counts the prompt tokens llama.cpp evaluated
against the naive count (every prompt token of every request). It then runs the same sweep
again in a new process, as a user re-runs the command, answered from the response cache.
Targets (issue 19): evaluated <= 15% of naive, the sweep within
30 minutes on this machine, the cached re-run >= 50x faster.

    python benchmarks/rag_fill.py [--task nq_open_oracle] [--limit 100] [--n-ctx 8192]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import measured

from calipers.analysis import (
    FillCurve,
    StressGrid,
    load_study,
    plan_rag_stress,
    rag_report,
    run_study,
)
from calipers.models import ModelOptions, resolve_model
from calipers.runner import RunConfig
from calipers.store import Store


def _sweep(store: Store, config: RunConfig, levels: list[float]) -> tuple[Any, dict[str, Any]]:
    provider = resolve_model(config.model, config.model_options)
    out: dict[str, Any] = {}
    with measured(out):
        plan = plan_rag_stress(config, ["fill"], StressGrid(fill=levels), provider=provider)
        run_study(plan, store, provider=provider)
    out["prompt_tokens"] = getattr(provider, "prompt_tokens", None)
    out["evaluated"] = getattr(provider, "prompt_tokens_evaluated", None)
    out["loads"] = getattr(provider, "loads", None)
    return plan, out


def _cached_rerun(url: str, args: argparse.Namespace, levels: list[float]) -> dict[str, Any]:
    """The same sweep again as a user re-runs it: a new ``calipers rag stress`` process on the
    same store, answered from the response cache (planning included: the fill is counted with
    the model's tokenizer again, without loading the weights)."""
    cmd = [
        sys.executable, "-m", "calipers", "rag", "stress", "-t", args.task, "-m", args.model,
        "-n", str(args.limit), "--factors", "fill", "--fill", ",".join(map(str, levels)),
        "--n-ctx", str(args.n_ctx), "--store", url, "--json",
    ]  # fmt: skip
    out: dict[str, Any] = {}
    with measured(out):
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    out["prompt_tokens"] = out["evaluated"] = out["loads"] = None  # another process: not seen
    out["cached_arms"] = len(report["arms"]) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="nq_open_oracle")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--levels", default="0.1,0.25,0.5,0.6,0.75,0.9")
    ap.add_argument("--store", help="Store URL (default: a temporary SQLite file)")
    ap.add_argument("--json", dest="json_path", help="Also write the figures as JSON here")
    args = ap.parse_args()
    levels = [float(v) for v in args.levels.split(",")]
    config = RunConfig(
        model=args.model,
        tasks=(args.task,),
        limit=args.limit,
        model_options=ModelOptions(n_ctx=args.n_ctx),
    )
    url = args.store or f"sqlite:///{tempfile.mkdtemp()}/rag_fill.db"
    with Store.open(url) as store:
        plan, first = _sweep(store, config, levels)
        report = rag_report(load_study(store, plan.study))
    again = _cached_rerun(url, args, levels)
    console = Console()
    t = Table(
        title=f"Fill sweep: {args.limit} questions x {len(levels)} levels, "
        f"{args.model} (n_ctx {args.n_ctx})",
        header_style="bold",
    )
    for col in (
        "run",
        "wall s",
        "prompt tokens",
        "evaluated",
        "evaluated / naive",
        "weights loaded",
    ):
        t.add_column(col, justify="right")
    for name, r in (("first", first), ("cached re-run", again)):
        share = f"{100 * r['evaluated'] / r['prompt_tokens']:.1f}%" if r["prompt_tokens"] else "-"
        t.add_row(
            name,
            f"{r['seconds']:.1f}",
            "-" if r["prompt_tokens"] is None else f"{r['prompt_tokens']:,}",
            "-" if r["evaluated"] is None else f"{r['evaluated']:,}",
            share,
            "-" if r["loads"] is None else str(r["loads"]),
        )
    console.print(t)
    console.print(f"Cached re-run speed-up: {first['seconds'] / max(again['seconds'], 1e-9):.0f}x")
    curve: FillCurve
    for curve in report.fill:
        points = ", ".join(
            f"{100 * rl:.1f}%: {100 * e.value:.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}]"
            for rl, e in zip(curve.realised, curve.scores, strict=True)
        )
        console.print(f"{curve.outcome}: {points}")
        if curve.knee is not None:
            k = curve.knee
            console.print(
                f"  {k.verdict}; knee {100 * k.knee.value:.0f}% "
                f"[{100 * k.knee.low:.0f}%, {100 * k.knee.high:.0f}%], p={k.p_value:.3g}"
            )
    if args.json_path:
        Path(args.json_path).write_text(
            json.dumps(
                {"first": first, "cached": again, "report": report.model_dump(mode="json")},
                indent=2,
                default=str,
            )
        )


if __name__ == "__main__":
    main()
