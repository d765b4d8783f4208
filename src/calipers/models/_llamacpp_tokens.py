"""Token-level helpers of the llamacpp provider: tokenization the lm-evaluation-harness way,
batches that are never a single token, and log-softmax statistics over the vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "N_BATCH",
    "Logits",
    "chunks",
    "encode",
    "log_softmax",
    "next_token_stats",
    "prefix_token",
    "tokenize",
]

N_BATCH = 512
Logits = npt.NDArray[np.float64]


def log_softmax(logits: Logits) -> Logits:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    out: Logits = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return out


def next_token_stats(logits: Logits, targets: Sequence[int], block: int = 64) -> Logits:
    """Rows ``[log p(target), E log p(z), sd log p(z)]`` for each row of logits that has a next
    token in ``targets`` (the last row of a text has none), ``block`` rows at a time to bound
    memory (a row is the whole vocabulary)."""
    out = np.zeros((len(targets), 3))
    for lo in range(0, len(targets), block):
        lsm = log_softmax(logits[lo : lo + block][: len(targets) - lo])
        p = np.exp(lsm)
        mu = (p * lsm).sum(axis=-1)
        var = (p * np.square(lsm - mu[:, None])).sum(axis=-1)
        rows = np.arange(lsm.shape[0])
        out[lo : lo + lsm.shape[0]] = np.column_stack(
            (lsm[rows, np.asarray(targets[lo : lo + block])], mu, np.sqrt(np.maximum(var, 0.0)))
        )
    return out


def tokenize(llama: Any, text: str) -> list[int]:
    """Tokens as the model reads ``text``: BOS if the vocabulary asks for it, special tokens
    parsed (a rendered chat template contains them)."""
    return list(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))


def prefix_token(llama: Any) -> int:
    """What an empty context is scored after: BOS, or EOS for a model without one."""
    bos = int(llama.token_bos())
    return bos if bos >= 0 else int(llama.token_eos())


def encode(
    llama: Any, context: str, continuations: Sequence[str]
) -> tuple[list[int], list[list[int]]]:
    """Tokens of the context and of each continuation (lm-evaluation-harness convention)."""
    n_space = len(context) - len(context.rstrip())
    if n_space:
        continuations = [context[-n_space:] + c for c in continuations]
        context = context[:-n_space]
    ctx = tokenize(llama, context)
    if not ctx:  # empty context and no BOS added by the tokenizer
        return [prefix_token(llama)], [tokenize(llama, c) for c in continuations]
    return ctx, [tokenize(llama, context + c)[len(ctx) :] for c in continuations]


def chunks(tokens: list[int]) -> list[list[int]]:
    """Batches of at most N_BATCH tokens, none of them a single token (when there are two or
    more tokens)."""
    chunks = [tokens[i : i + N_BATCH] for i in range(0, len(tokens), N_BATCH)]
    if len(chunks) > 1 and len(chunks[-1]) == 1:
        chunks[-1].insert(0, chunks[-2].pop())
    return chunks
