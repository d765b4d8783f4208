"""Estimate what a GGUF's weight quantization costs when the unquantized model is not at hand.

The embedded SmolLM2 is a Q4_1 GGUF; its model card's figures come from the bf16 model, which
this machine cannot download. This script writes a checkpoint with a *second dose* of the file's
own rounding error: every block of 32 weights of a quantized matrix gets independent noise,
uniform on [-d/2, d/2], where d is that block's quantization step. The step is read off the
dequantized block itself: Q4_1 stores ``d * q + m`` with q in 0..15 and the block's minimum and
maximum on the grid, so ``d = (max - min) / 15``; Q8_0 stores ``d * q`` with |q| <= 127 and the
largest magnitude on the grid, so ``d = max|w| / 127``. The script checks that every block's
values do lie on that grid before adding anything.

Rounding to a grid of step d leaves an error of variance d^2/12 per weight, the variance this
noise has too. Near trained weights the expected loss grows with the noise variance, so
scoring the noisy copy next to the original on the same items measures, to first order, what
one dose - the original quantization - cost. It is an estimate (rounding error is not
independent noise, and the first-order argument holds only for small doses); average it over
a few ``--seed`` values.

    python benchmarks/quantization_noise.py --out /tmp/smollm2-noise1 --seed 1
    python benchmarks/reproduce_smollm2.py --model hf:/tmp/smollm2-noise1,batch=16 ...

Only llama-architecture GGUFs (SmolLM2's) are mapped; the weights come from calipers' ``hf``
loader (the GGUF dequantized to float32).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

# GGUF tensor kind -> the transformers parameter it becomes (llama architecture).
_LLAMA = {
    "token_embd": "model.embed_tokens.weight",
    "output": "lm_head.weight",
    "attn_q": "self_attn.q_proj.weight",
    "attn_k": "self_attn.k_proj.weight",
    "attn_v": "self_attn.v_proj.weight",
    "attn_output": "self_attn.o_proj.weight",
    "ffn_gate": "mlp.gate_proj.weight",
    "ffn_up": "mlp.up_proj.weight",
    "ffn_down": "mlp.down_proj.weight",
}
_LEVELS = {"Q4_1": 15, "Q8_0": 127}  # grid steps per block: (max - min) / 15, max|w| / 127
_BLOCK = 32


def gguf_quant_types(path: Path) -> dict[str, str]:
    """transformers parameter name -> the GGUF quantization type of the tensor behind it."""
    from gguf import GGUFReader

    out: dict[str, str] = {}
    for t in GGUFReader(str(path)).tensors:
        parts = t.name.split(".")
        if parts[0] == "blk":
            hf = _LLAMA.get(parts[2])
            name = f"model.layers.{parts[1]}.{hf}" if hf else None
        else:
            name = _LLAMA.get(parts[0])
        if name is not None:
            out[name] = t.tensor_type.name
    return out


def block_steps(w: Any, qtype: str) -> tuple[Any, float]:
    """Each 32-weight block's step d (shape: blocks x 1), and the largest distance of a weight
    from its block's grid, in steps (close to 0 when the step is read right)."""
    import torch

    blocks = w.detach().reshape(-1, _BLOCK).double()
    if qtype == "Q4_1":
        lo = blocks.amin(dim=1, keepdim=True)
        d = (blocks.amax(dim=1, keepdim=True) - lo) / _LEVELS[qtype]
        q = (blocks - lo) / d.clamp_min(1e-30)
    elif qtype == "Q8_0":
        d = blocks.abs().amax(dim=1, keepdim=True) / _LEVELS[qtype]
        q = blocks / d.clamp_min(1e-30)
    else:
        raise SystemExit(f"no noise model for {qtype} tensors (known: Q4_1, Q8_0)")
    return d, float((q - torch.round(q)).abs().max())  # a constant block: q = 0, on the grid


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="@smollm2", help="hf spec of a GGUF (default: @smollm2)")
    ap.add_argument("--out", type=Path, required=True, help="checkpoint folder to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--dose",
        type=float,
        default=1.0,
        help="noise variance in units of the quantization's own (default 1)",
    )
    args = ap.parse_args(argv)

    import torch

    from calipers.models._hf_load import load_model, load_tokenizer, parse_spec, resolve_local

    spec = parse_spec(args.model)
    local = resolve_local(spec)
    if local.gguf_path is None:
        raise SystemExit(f"{args.model} is not a GGUF: nothing to estimate")
    types = gguf_quant_types(local.gguf_path)
    tokenizer = load_tokenizer(spec, local)
    model = load_model(spec, local, tokenizer)
    params = dict(model.named_parameters())
    gen = torch.Generator().manual_seed(args.seed)
    scale = args.dose**0.5
    report: list[dict[str, Any]] = []
    with torch.no_grad():
        for name, qtype in sorted(types.items()):
            if qtype not in _LEVELS:
                continue
            w = params.get(name)
            if w is None:  # lm_head tied to the embedding: one tensor, already done
                continue
            d, off = block_steps(w, qtype)
            if off > 1e-3:
                raise SystemExit(
                    f"{name}: weights are {off:.3f} steps off a {qtype} grid; "
                    "the step is not what this script assumes"
                )
            u = torch.rand(d.shape[0], _BLOCK, generator=gen, dtype=torch.float64) - 0.5
            noise = (u * d * scale).reshape(w.shape).to(w.dtype)
            w.add_(noise)
            rms_w = float(w.double().pow(2).mean().sqrt())
            report.append(
                {
                    "tensor": name,
                    "type": qtype,
                    "grid_offset_steps": off,
                    "noise_rms": float(noise.double().pow(2).mean().sqrt()),
                    "weight_rms": rms_w,
                }
            )
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    (args.out / "calipers-noise.json").write_text(
        json.dumps(
            {
                "source": str(local.gguf_path),
                "seed": args.seed,
                "dose": args.dose,
                "tensors": report,
            },
            indent=2,
        )
    )
    kinds = dict(Counter(r["type"] for r in report))
    worst = max(r["grid_offset_steps"] for r in report)
    ratio = sum(r["noise_rms"] / r["weight_rms"] for r in report) / len(report)
    print(
        f"wrote {args.out}: noise on {len(report)} tensors ({kinds}); all blocks within "
        f"{worst:.1e} steps of their grid; mean noise/weight RMS {ratio:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
