"""How often does `calipers fingerprint check` notice a change, on this machine, with SmolLM2?

Three stages, each resumable (the pools are saved as they grow):

1. ``perturb``: a perturbed copy of the embedded SmolLM2 GGUF (Q4_1). Every Q4_1 block of 32
   weights gets independent noise, uniform on [-d/2, d/2] where d is the block's quantization
   step ((max - min) / 15, as benchmarks/quantization_noise.py reads it), and is quantized
   again to Q4_1 with the ``gguf`` package, written in place into a copy of the file, so the
   copy has the original's layout, metadata and size and llama.cpp loads it as it loads the
   original. One dose of the file's own rounding error plus a second rounding.
2. ``sample``: pools of real completions of the fp-v1 probes (chat, temperature 1, 24 tokens):
   the baseline, and (a) the perturbed copy, (b) the baseline with a system prompt, (c) the
   baseline at temperature 0.7, grown in rounds (``--per-round`` completions per probe each)
   until ``--rounds`` or ``--budget-s``, every round saved at once, so the pools stay balanced
   whenever it stops. Each completion has its own seed (calipers.analysis.sample_probes).
3. ``table``: power by resampling from the pools (calipers.stats.resample_check,
   equality_power): at n completions per probe and side, n from the baseline pool against n
   from the change's pool; (d) is the mixture: each candidate completion from the perturbed
   pool with probability 0.16, else from the baseline pool (disjoint from the reference side).
   False alarms: random same-vs-same splits of the baseline pool. Prints a Markdown table.

    python benchmarks/fingerprint_power.py perturb
    python benchmarks/fingerprint_power.py sample
    python benchmarks/fingerprint_power.py table --repetitions 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

WORK = Path("/tmp/calipers-fingerprint-power")
SYSTEM = "You are a helpful pirate. Answer every question in the voice of a pirate."
CONDITIONS = {  # name -> (model file: "base" or "perturbed", temperature, system prompt)
    "baseline": ("base", 1.0, None),
    "perturbed": ("perturbed", 1.0, None),
    "system": ("base", 1.0, SYSTEM),
    "temperature": ("base", 0.7, None),
}
MAX_TOKENS = 24  # about 100 characters of English: what the kernel reads
Q4_1_LEVELS = 15
BLOCK = 32


def base_gguf() -> Path:
    from calipers.models import resolve_model

    return Path(resolve_model("smollm2").path)  # type: ignore[attr-defined]


def perturb(out: Path, seed: int) -> dict[str, Any]:
    """Write the perturbed copy (see the module docstring); returns what was changed."""
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize, quantize

    shutil.copyfile(base_gguf(), out)
    reader = GGUFReader(str(out), "r+")
    rng = np.random.default_rng(seed)
    changed, weights, shift = 0, 0, 0.0
    for t in reader.tensors:
        if t.tensor_type != GGMLQuantizationType.Q4_1:
            continue
        w = dequantize(t.data, GGMLQuantizationType.Q4_1).astype(np.float32)
        blocks = w.reshape(-1, BLOCK)
        step = (blocks.max(axis=1) - blocks.min(axis=1)) / Q4_1_LEVELS
        noisy = blocks + rng.uniform(-0.5, 0.5, blocks.shape) * step[:, None]
        q = quantize(noisy.reshape(w.shape).astype(np.float32), GGMLQuantizationType.Q4_1)
        assert q.shape == t.data.shape and q.dtype == t.data.dtype
        after = dequantize(q, GGMLQuantizationType.Q4_1)
        shift += float(np.sqrt(np.mean((after - w) ** 2)) / np.sqrt(np.mean(w**2)))
        t.data[...] = q
        changed += 1
        weights += w.size
    reader.data.flush()
    return {"tensors": changed, "weights": weights, "mean_relative_rms_change": shift / changed}


def _pool_path(name: str) -> Path:
    return WORK / f"pool-{name}.json"


def load_pool(name: str) -> dict[str, list[str]]:
    path = _pool_path(name)
    return json.loads(path.read_text()) if path.exists() else {}


def sample(name: str, more: int, seed: int) -> float:
    """Add ``more`` completions per probe to the pool ``name`` (saved at once); returns the
    seconds spent. Each round's seeds differ (they start at the pool's current size)."""
    from calipers.analysis import sample_probes
    from calipers.models import resolve_model
    from calipers.tasks.fingerprint import probe_set
    from calipers.types import FingerprintSettings

    which, temperature, system = CONDITIONS[name]
    pool = load_pool(name)
    have = min((len(pool.get(p.id, [])) for p in probe_set()), default=0)
    spec = "smollm2" if which == "base" else f"llamacpp:{WORK / 'perturbed.gguf'}"
    provider = resolve_model(spec)
    settings = FingerprintSettings(
        temperature=temperature, max_tokens=MAX_TOKENS, system=system, samples_per_probe=more
    )
    started = time.perf_counter()
    drawn = asyncio.run(sample_probes(provider, probe_set(), settings, seed=seed * 100_000 + have))
    for k, v in drawn.completions.items():
        pool[k] = pool.get(k, [])[:have] + list(v)
    _pool_path(name).write_text(json.dumps(pool, indent=0))
    asyncio.run(provider.aclose())
    return time.perf_counter() - started


def table(budgets: list[int], repetitions: int, permutations: int, seed: int) -> str:
    from calipers.stats import equality_power, resample_check

    base = load_pool("baseline")
    pools = {k: load_pool(k) for k in ("perturbed", "system", "temperature")}
    rng = np.random.default_rng(seed)
    rows = [
        ("same vs same (false alarms)", None, 1.0),
        ("(a) perturbed weights (Q4_1 + 1 step noise)", "perturbed", 1.0),
        ("(b) system prompt added", "system", 1.0),
        ("(c) temperature 1.0 -> 0.7", "temperature", 1.0),
        ("(d) 16% of traffic from (a)", "perturbed", 0.16),
    ]
    header = "| change | " + " | ".join(f"n={n}" for n in budgets) + " |"
    lines = [header, "|---|" + "---|" * len(budgets)]
    for label, other, eps in rows:
        cells = []
        for n in budgets:
            oth = pools[other] if other else None
            short = min(len(v) for v in base.values()) < 2 * n  # n a side, never shared
            if short or (oth is not None and min(len(v) for v in oth.values()) < n):
                cells.append("–")  # the pools are too small for this budget
                continue

            def draw(r: np.random.Generator, n: int = n, oth: Any = oth, eps: float = eps) -> Any:
                return resample_check(base, n, r, other=oth, epsilon=eps)

            t0 = time.perf_counter()
            est = equality_power(draw, rng=rng, repetitions=repetitions, permutations=permutations)
            cells.append(f"{100 * est.value:.0f}% [{100 * est.low:.0f}, {100 * est.high:.0f}]")
            print(f"  {label} n={n}: {cells[-1]} ({time.perf_counter() - t0:.0f} s)", flush=True)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=["perturb", "sample", "table"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument(
        "--per-round",
        default="4,2,1,2",
        help="completions per probe added per round: baseline,perturbed,system,temperature",
    )
    ap.add_argument("--budget-s", type=float, default=1500, help="stop starting rounds after")
    ap.add_argument("--budgets", default="2,5,10,15")
    ap.add_argument("--repetitions", type=int, default=200)
    ap.add_argument("--permutations", type=int, default=200)
    args = ap.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    if args.stage == "perturb":
        print(json.dumps(perturb(WORK / "perturbed.gguf", args.seed)))
    elif args.stage == "sample":
        per_round = dict(zip(CONDITIONS, (int(x) for x in args.per_round.split(",")), strict=True))
        spent = 0.0
        for r in range(args.rounds):
            if spent > args.budget_s:
                print(f"budget reached after {r} rounds ({spent:.0f} s)")
                break
            for name, more in per_round.items():
                seconds = sample(name, more, args.seed)
                spent += seconds
                sizes = min(len(v) for v in load_pool(name).values())
                print(f"round {r}: {name} now {sizes} per probe (+{seconds:.0f} s, {spent:.0f} s)")
    else:
        budgets = [int(b) for b in args.budgets.split(",")]
        print(table(budgets, args.repetitions, args.permutations, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
