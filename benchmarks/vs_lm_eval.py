"""The same items through lm-evaluation-harness and through calipers: choices and wall time.

For each benchmark (ARC-Easy, ARC-Challenge, PIQA, HellaSwag, MMLU cloze) a seeded random
subset of items is planned by calipers (0-shot, no chat template); the same prompts go to
lm-evaluation-harness (PyPI ``lm_eval``, its ``hf`` backend on the bundled SmolLM2 GGUF
dequantised to float32, local data through its ``json`` dataset loader; see
``_lm_eval_side.py``) and to calipers with each backend (``hf:@smollm2`` = the same float32
weights; ``smollm2`` = the Q4_1 file through llama.cpp, for reference). Per task it prints
acc and acc_norm with 95% Wilson intervals, the share of items where calipers and lm-eval
choose the same option (with its interval), the largest log-likelihood difference, and wall
time with the ratio. Each model is loaded once and its load time reported apart; each task's
time is the whole evaluation call (reading items, tokenizing, scoring, metrics). lm-eval runs in
a spawned process of its own, so neither side's threads or objects slow the other (see
``_lm_eval_side.py``); the two alternate task by task.

Other processes share this machine's CPU: for every timed step the script records the load
average, this process's CPU seconds (user + system, threads included: less sensitive to other
load than wall time, so the CPU-time ratio is printed too) and the share of the machine's CPU
time used by other processes during the step (from /proc/stat minus this process's own CPU
time); steps above ``--busy`` are flagged.

Needs ``calipers[hf]`` and ``pip install 'lm_eval==0.4.13'`` (pin torch to the build you have
in the same command, e.g. ``'torch==2.13.0'``, or pip may replace it).

    python benchmarks/vs_lm_eval.py                 # 500/300/500/300/300 items
    python benchmarks/vs_lm_eval.py --quick --json out.json
"""

from __future__ import annotations

import os

# No network: lm-eval's json loader and transformers must not try the hub (read at import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import argparse
import asyncio
import dataclasses
import json
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _lm_eval_side as lme
from _measure import measured
from rich.console import Console
from rich.table import Table

from calipers.models import ModelOptions, ModelProvider, resolve_model
from calipers.models._gguf import bundled_smollm2
from calipers.runner import RunConfig, arun, make_plan
from calipers.stats import wilson
from calipers.store import Store
from calipers.tasks import LoadContext, Task, get_task, register_task
from calipers.types import LoglikelihoodRequest, Sample

TASKS = {  # name -> (formulation, default size)
    "arc_easy": (None, 500),
    "arc_challenge": (None, 300),
    "piqa": (None, 500),
    "hellaswag": (None, 300),
    "mmlu": ("cloze", 300),
}
BACKENDS = {"hf": "hf:@smollm2,batch={batch}", "llamacpp": "smollm2"}
QUICK = 20


# -- items --------------------------------------------------------------------------------------


def subset(task: Task, n: int, seed: int) -> Task:
    """``task`` whose loader returns ``n`` items drawn with ``seed`` (file order kept)."""

    def load(ctx: LoadContext) -> Sequence[Sample]:
        items = list(task.load(ctx))
        if n >= len(items):
            return items
        keep = sorted(random.Random(f"{seed}:{task.name}").sample(range(len(items)), n))
        return [items[i] for i in keep]

    return dataclasses.replace(task, load=load)


def plan_items(
    name: str, n: int, args: argparse.Namespace, provider: ModelProvider
) -> tuple[RunConfig, list[lme.Item]]:
    formulation, _size = TASKS[name]
    task = subset(get_task(name, formulation), n, args.seed)
    alias = f"vs_lm_eval:{name}"
    register_task(alias, lambda: task)
    config = RunConfig(
        model="hf:@smollm2",
        tasks=(alias,),
        data_dir=args.data_dir,
        seed=args.seed,
        chat_template=False,
        few_shot=0,
        use_cache=False,
    )
    items = []
    for ps in make_plan(config, provider).tasks[0].samples:
        req, s = ps.request, ps.sample
        assert isinstance(req, LoglikelihoodRequest) and s.choices
        if req.continuations != tuple(" " + c for c in s.choices):
            raise SystemExit(
                f"{name}: item {s.id} does not score ' ' + option; the lm-eval "
                "YAML here cannot reproduce it."
            )
        items.append(lme.Item(s.id, req.context, tuple(s.choices), s.target_index))
    return config, items


# -- calipers side ------------------------------------------------------------------------------


async def _noop() -> None:
    return None


def load_calipers(spec: str, threads: int | None) -> tuple[ModelProvider, dict[str, Any]]:
    provider = resolve_model(spec, ModelOptions(n_threads=threads))
    # keep the weights across runs: the runner closes the provider after each run
    provider.aclose = _noop  # type: ignore[method-assign]
    stats: dict[str, Any] = {}
    with measured(stats):
        provider.identity()
        asyncio.run(
            provider.loglikelihood(LoglikelihoodRequest(context="Warm", continuations=(" up",)))
        )
    return provider, stats


def run_calipers(
    provider: ModelProvider, spec: str, config: RunConfig, store: Store
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cfg = config.model_copy(update={"model": spec})
    with measured(out):
        result = asyncio.run(arun(cfg, store, provider=provider))
    preds, preds_norm, logprobs, errors = {}, {}, {}, 0
    for rec in store.get_samples(result.run_id):
        if rec.error or rec.answer is None or not rec.score_details:
            errors += 1
            continue
        preds[rec.sample_id] = int(rec.answer)
        preds_norm[rec.sample_id] = int(
            rec.score_details["loglikelihood_mc"]["metadata"]["pred_norm"]
        )
        logprobs[rec.sample_id] = rec.score_details["loglikelihood"]["logprobs"]
    out.update(preds=preds, preds_norm=preds_norm, logprobs=logprobs, errors=errors)
    return out


# -- report -------------------------------------------------------------------------------------


def _interval(k: int, n: int) -> dict[str, float]:
    e = wilson(k, n)
    return {"value": e.value, "low": e.low, "high": e.high, "n": n}


def _accuracy(preds: dict[str, int], items: Sequence[lme.Item]) -> dict[str, float]:
    return _interval(sum(preds.get(it.id) == it.gold for it in items), len(items))


def _agreement(a: dict[str, int], b: dict[str, int], items: Sequence[lme.Item]) -> dict[str, float]:
    return _interval(sum(a.get(it.id, -1) == b.get(it.id, -2) for it in items), len(items))


def _max_diff(a: dict[str, list[float]], b: dict[str, list[float]]) -> float:
    diffs = [abs(x - y) for k in a if k in b for x, y in zip(a[k], b[k], strict=True)]
    return max(diffs, default=float("nan"))


def summarize(
    name: str, items: Sequence[lme.Item], lm: lme.LmEvalTask | None, ours: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    row: dict[str, Any] = {"task": name, "n": len(items), "systems": {}}
    if lm is not None:
        row["systems"]["lm-eval hf"] = {
            "seconds": lm.timing["seconds"],
            "timing": lm.timing,
            "acc": _accuracy(lm.preds, items),
            "acc_norm": _accuracy(lm.preds_norm, items),
            "lm_eval_reported": {"acc": lm.acc, "acc_norm": lm.acc_norm},
            "same_prompt": lm.same_prompt,
        }
    for backend, r in ours.items():
        sysrow: dict[str, Any] = {
            "seconds": r["seconds"],
            "timing": {k: v for k, v in r.items() if "pred" not in k and k != "logprobs"},
            "acc": _accuracy(r["preds"], items),
            "acc_norm": _accuracy(r["preds_norm"], items),
            "errors": r["errors"],
        }
        if lm is not None:
            sysrow["same_choice_acc"] = _agreement(r["preds"], lm.preds, items)
            sysrow["same_choice_acc_norm"] = _agreement(r["preds_norm"], lm.preds_norm, items)
            sysrow["max_abs_logprob_diff"] = _max_diff(r["logprobs"], lm.logprobs)
            sysrow["speedup"] = lm.timing["seconds"] / r["seconds"]
            sysrow["cpu_speedup"] = lm.timing["cpu_seconds"] / r["cpu_seconds"]
        row["systems"][f"calipers {backend}"] = sysrow
    return row


def _pct(e: dict[str, float]) -> str:
    return f"{100 * e['value']:.1f} [{100 * e['low']:.1f}, {100 * e['high']:.1f}]"


def print_table(rows: list[dict[str, Any]], loads: dict[str, Any], busy: float) -> None:
    table = Table(
        title="Same items, lm-evaluation-harness vs calipers (SmolLM2-135M-Instruct, "
        "0-shot, no chat template); % with 95% Wilson intervals"
    )
    for c in (
        "task",
        "n",
        "system",
        "acc",
        "acc_norm",
        "same choice acc_norm / acc",
        "max |Δ logprob|",
        "seconds",
        "lm-eval ÷ this",
        "CPU s",
        "CPU ratio",
        "others' CPU",
    ):
        table.add_column(c, justify="left" if c in ("task", "system") else "right")
    for row in rows:
        for i, (system, s) in enumerate(row["systems"].items()):
            flag = " busy" if s["timing"]["others_cpu_share"] > busy else ""
            same = (
                f"{_pct(s['same_choice_acc_norm'])} / {_pct(s['same_choice_acc'])}"
                if "same_choice_acc" in s
                else f"prompts identical: {s['same_prompt']}/{row['n']}"
                if "same_prompt" in s
                else "—"
            )
            table.add_row(
                row["task"] if i == 0 else "",
                str(row["n"]) if i == 0 else "",
                system,
                _pct(s["acc"]),
                _pct(s["acc_norm"]),
                same,
                f"{s['max_abs_logprob_diff']:.2g}" if "max_abs_logprob_diff" in s else "—",
                f"{s['seconds']:.1f}",
                f"{s['speedup']:.2f}×" if "speedup" in s else "—",
                f"{s['timing']['cpu_seconds']:.0f}",
                f"{s['cpu_speedup']:.2f}×" if "cpu_speedup" in s else "—",
                f"{100 * s['timing']['others_cpu_share']:.0f}%{flag}",
            )
    console = Console(width=200)
    console.print(table)
    for what, st in loads.items():
        console.print(
            f"load {what}: {st['seconds']:.1f} s (others' CPU "
            f"{100 * st['others_cpu_share']:.0f}%, load average "
            f"{st['loadavg_before']:.1f} -> {st['loadavg_after']:.1f})"
        )


# -- main ---------------------------------------------------------------------------------------


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("calipers", "lm_eval", "torch", "transformers", "llama_cpp_python"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def main_run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = {n: (QUICK if args.quick else d) for n, (_f, d) in TASKS.items()}
    sizes |= {n: getattr(args, n) for n in TASKS if getattr(args, n) is not None}
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="vs-lm-eval-"))
    workdir.mkdir(parents=True, exist_ok=True)
    loads: dict[str, Any] = {}
    backends = [b for b in args.backends.split(",") if b]
    providers: dict[str, ModelProvider] = {}
    specs = {b: BACKENDS[b].format(batch=args.batch) for b in backends}
    for b in backends:
        providers[b], loads[f"calipers {b}"] = load_calipers(specs[b], args.threads)
    planned = {
        name: plan_items(name, n, args, next(iter(providers.values())))
        for name, n in sizes.items()
        if n > 0
    }
    lm = None
    if not args.skip_lm_eval:
        lm_tasks = {
            name: lme.write_task(workdir, name, items) for name, (_c, items) in planned.items()
        }
        lm = lme.LmEvalProcess(bundled_smollm2(), args.batch, workdir)
        loads |= lm.loads
    rows = []
    try:
        with Store.open(f"sqlite:///{workdir / 'calipers.db'}") as store:
            for name, (config, items) in planned.items():
                result = lm.run(lm_tasks[name], items) if lm is not None else None
                ours = {b: run_calipers(p, specs[b], config, store) for b, p in providers.items()}
                rows.append(summarize(name, items, result, ours))
                print_table(rows[-1:], {}, args.busy)
    finally:
        if lm is not None:
            lm.close()
    print_table(rows, loads, args.busy)
    return {
        "rows": rows,
        "loads": loads,
        "sizes": sizes,
        "seed": args.seed,
        "batch": args.batch,
        "versions": _versions(),
        "cpus": os.cpu_count(),
        "workdir": str(workdir),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK} items per task")
    for name, (_f, size) in TASKS.items():
        ap.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            type=int,
            default=None,
            help=f"items (default {size}; 0 skips the task)",
        )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16, help="lm-eval batch size")
    ap.add_argument("--backends", default="hf,llamacpp", help="calipers backends to run")
    ap.add_argument("--skip-lm-eval", action="store_true", help="calipers only")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for calipers")
    ap.add_argument(
        "--busy",
        type=float,
        default=0.10,
        help="flag timings where other processes used more than this CPU share",
    )
    ap.add_argument("--data-dir", default=os.environ.get("CALIPERS_DATA", "/work/shared/data"))
    ap.add_argument("--workdir", help="keep the items, YAML files and store here")
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args()
    out = main_run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
