"""Multiple choice by log-likelihood on llama.cpp: shared-prefix reuse vs naive evaluation.

For each item, calipers evaluates the shared context once and each option from that state.
This script counts the tokens calipers actually evaluated against the naive count (context +
option, for every option), and compares calipers' tokens/s with raw llama.cpp evaluation
speed measured in the same process on the same model instance (each naive sequence evaluated
from an empty cache with ``Llama.eval``).
Targets (issue 2): fewer tokens than naive, and >= 80% of raw speed.

    python benchmarks/loglik_kv.py [--task dyn_dates_mc] [--limit 40] [--few-shot 0]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from calipers.models._llamacpp import LlamaCppModel
from calipers.runner import RunConfig, make_plan
from calipers.types import LoglikelihoodRequest


async def _calipers(model: LlamaCppModel, reqs: list[LoglikelihoodRequest]) -> tuple[int, float]:
    start = time.perf_counter()
    evaluated = 0
    for r in reqs:
        res = await model.loglikelihood(r)
        evaluated += res.tokens_evaluated or 0
    return evaluated, time.perf_counter() - start


def _raw(
    model: LlamaCppModel, reqs: list[LoglikelihoodRequest], *, all_logits: bool
) -> tuple[int, float]:
    """Naive evaluation from an empty cache of every context + option, straight through the
    llama.cpp context of the same model instance: logits of the last position only (the raw
    speed of ``Llama.eval``), or of every position (what naive scoring must read)."""
    llama = model._ensure_loaded()
    seqs = [
        list(llama.tokenize((r.context + c).encode(), add_bos=True, special=True))
        for r in reqs
        for c in r.continuations
    ]
    n_vocab = llama.n_vocab()
    start = time.perf_counter()
    for s in seqs:
        llama._ctx.kv_cache_clear()
        llama._batch.set_batch(batch=s, n_past=0, logits_all=all_logits)
        llama._ctx.decode(llama._batch)
        rows = len(s) if all_logits else 1
        np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(rows * n_vocab,)).copy()
    elapsed = time.perf_counter() - start
    llama.reset()
    llama._ctx.kv_cache_clear()
    model._trusted = 0
    return sum(len(s) for s in seqs), elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="dyn_dates_mc")
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--few-shot", type=int, default=None)
    ap.add_argument("--chat-template", action="store_true")
    args = ap.parse_args()
    cfg = RunConfig(
        model="smollm2",
        tasks=(args.task,),
        limit=args.limit,
        few_shot=args.few_shot,
        chat_template=args.chat_template,
        use_cache=False,
    )
    plan = make_plan(cfg)
    model = plan.provider
    assert isinstance(model, LlamaCppModel)
    reqs: list[LoglikelihoodRequest] = []
    for ps in plan.tasks[0].samples:
        assert isinstance(ps.request, LoglikelihoodRequest)
        reqs.append(ps.request)
    asyncio.run(model.loglikelihood(reqs[0]))  # load the weights outside the timings
    naive_tokens, raw_s = _raw(model, reqs, all_logits=False)
    _, raw_all_s = _raw(model, reqs, all_logits=True)
    evaluated, ours_s = asyncio.run(_calipers(model, reqs))
    raw_rate, our_rate = naive_tokens / raw_s, evaluated / ours_s
    raw_all_rate = naive_tokens / raw_all_s
    table = Table(
        title=f"Log-likelihood MC on llama.cpp: {args.task}, {len(reqs)} items, "
        f"{sum(len(r.continuations) for r in reqs)} options"
    )
    for c in ("path", "tokens evaluated", "seconds", "tokens/s", "items/s"):
        table.add_column(c, justify="right")
    table.add_row(
        "raw llama.cpp, naive, last logits only",
        f"{naive_tokens:,}",
        f"{raw_s:.2f}",
        f"{raw_rate:,.0f}",
        f"{len(reqs) / raw_s:.1f}",
    )
    table.add_row(
        "raw llama.cpp, naive, all logits",
        f"{naive_tokens:,}",
        f"{raw_all_s:.2f}",
        f"{raw_all_rate:,.0f}",
        f"{len(reqs) / raw_all_s:.1f}",
    )
    table.add_row(
        "calipers, shared prefix",
        f"{evaluated:,}",
        f"{ours_s:.2f}",
        f"{our_rate:,.0f}",
        f"{len(reqs) / ours_s:.1f}",
    )
    Console().print(table)

    def verdict(ratio: float) -> str:
        return "meets" if ratio >= 0.8 else "MISSES"

    Console().print(
        f"tokens: {evaluated / naive_tokens:.0%} of naive "
        f"({'fewer' if evaluated < naive_tokens else 'NOT fewer'}).\n"
        f"speed vs raw with all logits (like for like): {our_rate / raw_all_rate:.0%} "
        f"({verdict(our_rate / raw_all_rate)} the >= 80% target).\n"
        f"speed vs raw with last logits only: {our_rate / raw_rate:.0%} "
        f"({verdict(our_rate / raw_rate)} the >= 80% target).\n"
        f"wall time: {raw_all_s / ours_s:.1f}x faster than naive scoring."
    )


if __name__ == "__main__":
    main()
