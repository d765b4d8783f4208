"""Batched log-likelihood scoring on a transformers causal LM: each context once, the output
head only where a continuation token is predicted.

Tokenization follows lm-evaluation-harness 0.4 (``HFLM.tok_encode`` / ``_encode_pair``):
trailing context whitespace moves to the continuation; ``context + continuation`` is tokenized
whole and the continuation tokens are those after the context's own; the tokenizer adds its
special tokens (BOS where its post-processor does) unless the text already starts with the BOS
text; an empty context is scored after the prefix token (BOS, else EOS).

Packing: a request becomes one block of tokens ``context, option 1, option 2, ...``; option
tokens take the positions that follow the context (each option starts at ``len(context)``).
A block-sparse attention mask lets a context token see the earlier context tokens and an
option token see the whole context and its own earlier tokens, never another option. Blocks of
several requests share a row of the batch (first-fit decreasing, rows as long as the longest
block), so there is little padding; padding tokens see only themselves. One forward pass of the
base model gives the hidden states; the output head (``hidden @ W_vocab``, the costliest matrix
product per token for small models) and the log-softmax over the full vocabulary run only at
the rows that predict an option token: the context's last token and every option token but the
last. The result equals a full forward pass of ``context + option`` for each option up to float
rounding (the tests check 1e-4 nats).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Encoded", "Scored", "encode_request", "head_logits", "pack_rows", "score_packed"]

HEAD_CHUNK = 1024  # rows of the output head computed at once (each row: the whole vocabulary)


@dataclass(frozen=True)
class Encoded:
    context: list[int]
    continuations: list[list[int]]

    @property
    def size(self) -> int:
        return len(self.context) + sum(len(c) for c in self.continuations)

    @property
    def span(self) -> int:
        """Positions used: the context plus the longest continuation."""
        return len(self.context) + max((len(c) for c in self.continuations), default=0)


@dataclass(frozen=True)
class Scored:
    logprobs: list[float]
    greedy: list[bool]


def encode_request(
    tok_encode: Callable[[str], list[int]], prefix_token: int, context: str,
    continuations: Sequence[str],
) -> Encoded:
    """Context and continuation tokens, the lm-evaluation-harness way (module docstring)."""
    n_space = len(context) - len(context.rstrip())
    if n_space:
        continuations = [context[-n_space:] + c for c in continuations]
        context = context[:-n_space]
    if not context:
        return Encoded([prefix_token], [tok_encode(c) for c in continuations])
    ctx = tok_encode(context)
    return Encoded(ctx, [tok_encode(context + c)[len(ctx) :] for c in continuations])


def pack_rows(sizes: Sequence[int]) -> list[list[int]]:
    """Indices of the blocks in each row: first-fit decreasing into rows as long as the
    largest block."""
    capacity = max(sizes, default=0)
    rows: list[list[int]] = []
    free: list[int] = []
    for i in sorted(range(len(sizes)), key=lambda j: -sizes[j]):
        for r, room in enumerate(free):
            if sizes[i] <= room:
                rows[r].append(i)
                free[r] -= sizes[i]
                break
        else:
            rows.append([i])
            free.append(capacity - sizes[i])
    return rows


@dataclass
class _Layout:
    """Flat per-row lists for the batch, plus what to read back: for every scored token, the
    flat index of the hidden state that predicts it, the token, and its option number."""

    tokens: list[list[int]]
    positions: list[list[int]]
    segment: list[list[int]]  # block part: context or one option, unique in the row
    parent: list[list[int]]  # the segment of the block's context
    rows: list[int]
    targets: list[int]
    option: list[int]


def _layout(encoded: Sequence[Encoded], rows: list[list[int]], width: int) -> _Layout:
    lay = _Layout([], [], [], [], [], [], [])
    n_option = 0
    for r, members in enumerate(rows):
        toks: list[int] = []
        pos: list[int] = []
        seg: list[int] = []
        par: list[int] = []
        for i in members:
            enc, ctx_seg, base = encoded[i], len(toks), r * width
            n_ctx = len(enc.context)
            toks += enc.context
            pos += range(n_ctx)
            seg += [ctx_seg] * n_ctx
            par += [ctx_seg] * n_ctx
            for cont in enc.continuations:
                if not cont:  # scores 0.0 (log 1) without computing anything
                    continue
                start = len(toks)
                toks += cont
                pos += range(n_ctx, n_ctx + len(cont))
                seg += [start] * len(cont)
                par += [ctx_seg] * len(cont)
                # The context's last token predicts the first option token, and so on.
                lay.rows += [base + ctx_seg + n_ctx - 1, *range(base + start,
                                                                 base + start + len(cont) - 1)]
                lay.targets += cont
                lay.option += [n_option] * len(cont)
                n_option += 1
        pad = width - len(toks)
        lay.tokens.append(toks + [0] * pad)
        lay.positions.append(pos + [0] * pad)
        lay.segment.append(seg + [-1 - j for j in range(pad)])  # pads: their own segment
        lay.parent.append(par + [-1 - j for j in range(pad)])
    return lay


def _mask(torch: Any, lay: _Layout, dtype: Any) -> Any:
    """Additive 4-D mask ``(rows, 1, width, width)``: 0 where a query may attend a key."""
    seg = torch.tensor(lay.segment)
    par = torch.tensor(lay.parent)
    width = seg.shape[1]
    causal = torch.ones(width, width, dtype=torch.bool).tril()
    same = (seg[:, None, :] == seg[:, :, None]) | (seg[:, None, :] == par[:, :, None])
    allowed = (same & causal)[:, None]
    zero = torch.zeros((), dtype=dtype)
    return torch.where(allowed, zero, torch.tensor(torch.finfo(dtype).min, dtype=dtype))


def head_logits(model: Any, hidden: Any) -> Any:
    """The output head on the selected hidden states, with the final logit transforms some
    architectures apply (scale, soft-capping)."""
    logits = model.get_output_embeddings()(hidden)
    config = model.config
    scale = getattr(config, "logit_scale", None)
    if isinstance(scale, float | int) and scale != 1:
        logits = logits * scale
    cap = getattr(config, "final_logit_softcapping", None)
    if isinstance(cap, float | int) and cap:
        logits = (logits / cap).tanh() * cap
    return logits


def score_packed(torch: Any, model: Any, encoded: Sequence[Encoded]) -> list[Scored]:
    """Log-likelihood and greedy flag of every continuation of every request, in one forward
    pass of the base model."""
    out = [Scored([0.0] * len(e.continuations), [True] * len(e.continuations)) for e in encoded]
    sizes = [e.size for e in encoded]
    rows = pack_rows(sizes)
    width = max(sizes, default=0)
    lay = _layout(encoded, rows, width)
    if not lay.targets:  # only empty continuations
        return out
    dtype = next(model.parameters()).dtype
    with torch.inference_mode():
        hidden = model.base_model(
            input_ids=torch.tensor(lay.tokens), position_ids=torch.tensor(lay.positions),
            attention_mask=_mask(torch, lay, dtype), use_cache=False,
        ).last_hidden_state
        flat = hidden.reshape(-1, hidden.shape[-1])
        targets = torch.tensor(lay.targets)
        logprob = torch.empty(len(lay.targets), dtype=torch.float64)
        hit = torch.empty(len(lay.targets), dtype=torch.bool)
        for lo in range(0, len(lay.rows), HEAD_CHUNK):
            sel = torch.tensor(lay.rows[lo : lo + HEAD_CHUNK])
            logits = head_logits(model, flat[sel]).float()
            tgt = targets[lo : lo + HEAD_CHUNK]
            lsm = torch.log_softmax(logits, dim=-1)
            logprob[lo : lo + len(sel)] = lsm.gather(1, tgt[:, None])[:, 0].double()
            hit[lo : lo + len(sel)] = logits.argmax(dim=-1) == tgt
        option = torch.tensor(lay.option)
        n_options = int(option.max()) + 1
        sums = torch.zeros(n_options, dtype=torch.float64).index_add_(0, option, logprob)
        misses = torch.zeros(n_options, dtype=torch.long).index_add_(0, option, (~hit).long())
    _unpack(encoded, rows, sums.tolist(), (misses == 0).tolist(), out)
    return out


def _unpack(encoded: Sequence[Encoded], rows: list[list[int]], sums: list[float],
            greedy: list[bool], out: list[Scored]) -> None:
    """Option numbers run in layout order (row by row); empty options were never numbered."""
    k = 0
    for members in rows:
        for i in members:
            for j, cont in enumerate(encoded[i].continuations):
                if cont:
                    out[i].logprobs[j], out[i].greedy[j] = sums[k], greedy[k]
                    k += 1
