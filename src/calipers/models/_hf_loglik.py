"""Batched log-likelihood scoring on a transformers causal LM: each shared token once, the output
head only where a continuation token is predicted.

Tokenization follows lm-evaluation-harness 0.4 (``HFLM.tok_encode`` / ``_encode_pair``):
trailing context whitespace moves to the continuation; ``context + continuation`` is tokenized
whole and the continuation tokens are those after the context's own; the tokenizer adds its
special tokens (BOS where its post-processor does) unless the text already starts with the BOS
text; an empty context is scored after the prefix token (BOS, else EOS).

Each request becomes a token tree (``build_tree``): the context, then the continuations as a
trie, so a token prefix that several continuations share (the context, and often their first
words) is evaluated once. A continuation's last token predicts nothing and is left out. Each
node takes the position of its depth, and attends to itself and its ancestors only, which is
exactly what it sees in a full forward pass of ``context + continuation``.

Packing: the trees of a batch are laid end to end in one sequence, with no padding. Every
linear layer runs on that one sequence; attention runs tree by tree (``_block_attention``, an
attention function registered with transformers and given each tree's span and ancestor mask),
so no token attends across requests and no work is spent on a dense mask over the whole batch.
A model whose attention modules do not go through transformers' attention registry is detected
on its first batch and scored one tree at a time with a 4-D mask instead (same values, slower).

The output head (``hidden @ W_vocab``, for small models the costliest matrix product per token)
and the log-softmax over the full vocabulary run only at the nodes that predict a continuation
token, once per node however many continuations pass through it, in chunks that stay in cache.
The result equals a full forward pass of ``context + continuation`` for each continuation up to
float rounding (the tests check 1e-4 nats).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from calipers.models._base import common_prefix

__all__ = [
    "Encoded",
    "Scored",
    "Tree",
    "build_tree",
    "encode_request",
    "head_logits",
    "score_packed",
]

HEAD_CHUNK = 128  # rows of the output head at once: 128 x 49,152 float32 logits fit in L3
ATTENTION = "calipers_blocks"  # the name registered with transformers' attention registry


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
    evaluated: int  # tokens through the model for this request (its own tree nodes)


@dataclass(frozen=True)
class Tree:
    """A request's tokens as a tree: ``parent[i] < i`` (-1 for the root), ``depth`` the
    position, and per continuation the ``(node, next token)`` pairs it is scored on."""

    tokens: list[int]
    parent: list[int]
    depth: list[int]
    reads: list[list[tuple[int, int]]]

    def ancestors(self, np: Any) -> Any:
        """Boolean ``(n, n)`` matrix: row ``i`` is true at ``i`` and its ancestors."""
        n = len(self.tokens)
        out = np.zeros((n, n), dtype=bool)
        for i, p in enumerate(self.parent):
            if p >= 0:
                out[i, : p + 1] = out[p, : p + 1]
            out[i, i] = True
        return out


def encode_request(
    tok_encode: Callable[[str], list[int]],
    prefix_token: int,
    context: str,
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


def build_tree(enc: Encoded) -> Tree:
    """The context as a chain, then each continuation's tokens but its last as a trie below
    the context's last token (module docstring)."""
    n = len(enc.context)
    tokens, parent, depth = list(enc.context), list(range(-1, n - 1)), list(range(n))
    child: dict[tuple[int, int], int] = {}
    reads: list[list[tuple[int, int]]] = []
    for cont in enc.continuations:
        node, read = n - 1, []
        for k, tok in enumerate(cont):
            read.append((node, tok))
            if k == len(cont) - 1:
                break  # the last token predicts nothing: never evaluated
            nxt = child.get((node, tok))
            if nxt is None:
                nxt = child[node, tok] = len(tokens)
                tokens.append(tok)
                parent.append(node)
                depth.append(depth[node] + 1)
            node = nxt
        reads.append(read)
    return Tree(tokens, parent, depth, reads)


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


# -- attention, tree by tree ---------------------------------------------------------------------

_calls = [0]  # incremented by _block_attention: shows the model used it


def _block_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    scaling: float | None = None,
    dropout: float = 0.0,
    calipers_blocks: Sequence[tuple[int, int, Any, Any]] | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers attention function: without ``calipers_blocks`` it is plain SDPA (so
    generation is unchanged); with them, SDPA over each ``(start, end, keys, mask)`` span of
    the packed sequence: its queries attend to the span itself, or to the flat positions
    ``keys`` (a borrowed prefix, then the span), as far as the tree's ancestor mask allows."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if calipers_blocks is None:
        plain: tuple[Any, None] = sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
        return plain
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    _calls[0] += 1
    groups = query.shape[1] // key.shape[1]
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    out = torch.cat(
        [
            scaled_dot_product_attention(
                query[:, :, s:e],
                key[:, :, s:e] if keys is None else key.index_select(2, keys),
                value[:, :, s:e] if keys is None else value.index_select(2, keys),
                attn_mask=mask,
                scale=scaling,
            )
            for s, e, keys, mask in calipers_blocks
        ],
        dim=2,
    )
    return out.transpose(1, 2).contiguous(), None


def use_block_attention(model: Any) -> bool:
    """Register ``_block_attention`` with transformers and switch ``model`` to it; False
    when this transformers or model does not allow it (scoring then goes tree by tree)."""
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

        AttentionInterface.register(ATTENTION, _block_attention)
        ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, sdpa_mask)
        model.set_attn_implementation(ATTENTION)
    except (ImportError, AttributeError, ValueError, TypeError, KeyError):
        return False
    return True


# -- scoring ---------------------------------------------------------------------------------------


@dataclass
class _Layout:
    """The batch as one sequence: each request's own nodes end to end. With ``share``, a
    request whose context starts with tokens an earlier request of the batch already has
    borrows them (``borrowed`` nodes, at ``prefix`` flat positions) instead of repeating them:
    the few-shot examples or instruction that every item of a subject shares, computed once."""

    tokens: list[int]
    depth: list[int]
    start: list[int]  # flat index of each request's first own node
    borrowed: list[int]
    prefix: list[list[int]]

    def flat(self, request: int, node: int) -> int:
        return self.start[request] + node - self.borrowed[request]


def _layout(trees: Sequence[Tree], contexts: Sequence[list[int]], share: bool) -> _Layout:
    lay = _Layout([], [], [], [], [])
    chain: list[list[int]] = []  # flat positions of each request's context tokens
    for i, (t, ctx) in enumerate(zip(trees, contexts, strict=True)):
        best, source = 0, -1
        for j in range(i) if share else ():
            n = common_prefix(ctx, contexts[j])
            if n > best:
                best, source = n, j
        p = min(best, len(ctx) - 1)  # >= 0 (a context has a token); its last one stays own
        lay.prefix.append(chain[source][:p] if p > 0 else [])
        lay.borrowed.append(p)
        lay.start.append(len(lay.tokens))
        chain.append(lay.prefix[-1] + list(range(len(lay.tokens), len(lay.tokens) + len(ctx) - p)))
        lay.tokens += t.tokens[p:]
        lay.depth += t.depth[p:]
    return lay


def _hidden_packed(
    torch: Any, np: Any, model: Any, trees: Sequence[Tree], lay: _Layout
) -> Any | None:
    """Hidden states of every own node of the layout; None when the model's attention did not
    go through ``_block_attention``."""
    blocks = []
    for i, t in enumerate(trees):
        p, s = lay.borrowed[i], lay.start[i]
        e = s + len(t.tokens) - p
        own = t.ancestors(np)[p:, p:]
        if p:  # every own node sees the whole borrowed prefix (its ancestors)
            mask = np.concatenate([np.ones((len(own), p), dtype=bool), own], axis=1)
            keys = torch.tensor(lay.prefix[i] + list(range(s, e)))
        else:
            mask, keys = own, None
        blocks.append((s, e, keys, torch.from_numpy(mask)))
    before = _calls[0]
    try:
        hidden = model.base_model(
            input_ids=torch.tensor([lay.tokens]),
            position_ids=torch.tensor([lay.depth]),
            attention_mask=torch.ones((1, 1, 1, 1), dtype=torch.bool),  # 4-D: used as is
            calipers_blocks=blocks,
            use_cache=False,
        ).last_hidden_state
    except TypeError:  # a forward() that takes no extra keyword arguments
        return None
    return hidden[0] if _calls[0] > before else None


def _hidden_one_by_one(torch: Any, np: Any, model: Any, trees: Sequence[Tree]) -> Any:
    """The fallback: one forward pass per tree with its ancestor mask as an additive 4-D mask."""
    dtype = next(model.parameters()).dtype
    out = []
    for t in trees:
        allowed = torch.from_numpy(t.ancestors(np))[None, None]
        mask = torch.where(
            allowed, torch.zeros((), dtype=dtype), torch.tensor(torch.finfo(dtype).min, dtype=dtype)
        )
        out.append(
            model.base_model(
                input_ids=torch.tensor([t.tokens]),
                position_ids=torch.tensor([t.depth]),
                attention_mask=mask,
                use_cache=False,
            ).last_hidden_state[0]
        )
    return torch.cat(out)


def score_packed(
    torch: Any, model: Any, encoded: Sequence[Encoded], packed: bool = True
) -> tuple[list[Scored], bool]:
    """Log-likelihood and greedy flag of every continuation of every request, in one forward
    pass of the base model; also whether the packed pass worked (pass it back next time)."""
    import numpy as np

    trees = [build_tree(e) for e in encoded]
    contexts = [e.context for e in encoded]
    lay = _layout(trees, contexts, share=packed)
    logprob = np.zeros(sum(len(r) for t in trees for r in t.reads))
    hit = np.ones(len(logprob), dtype=bool)
    if len(logprob):
        with torch.inference_mode():
            hidden = _hidden_packed(torch, np, model, trees, lay) if packed else None
            if hidden is None:
                packed, lay = False, _layout(trees, contexts, share=False)
                hidden = _hidden_one_by_one(torch, np, model, trees)
            _read_head(torch, np, model, hidden, trees, lay, logprob, hit)
    out, k = [], 0
    for i, t in enumerate(trees):
        sums, greedy = [], []
        for read in t.reads:
            sums.append(float(logprob[k : k + len(read)].sum()))
            greedy.append(bool(hit[k : k + len(read)].all()))
            k += len(read)
        out.append(Scored(sums, greedy, len(t.tokens) - lay.borrowed[i]))
    return out, packed


def _read_head(
    torch: Any,
    np: Any,
    model: Any,
    hidden: Any,
    trees: Sequence[Tree],
    lay: _Layout,
    logprob: Any,
    hit: Any,
) -> None:
    """Fill ``logprob``/``hit`` (every read of every tree, in order): the output head once per
    distinct predicting node, ``HEAD_CHUNK`` rows at a time."""
    row_of: dict[int, int] = {}
    pair_row: list[int] = []
    pair_tok: list[int] = []
    for i, t in enumerate(trees):
        for read in t.reads:
            for node, tok in read:
                pair_row.append(row_of.setdefault(lay.flat(i, node), len(row_of)))
                pair_tok.append(tok)
    nodes = torch.tensor(list(row_of))
    rows = torch.tensor(pair_row)
    order = torch.argsort(rows, stable=True)
    sorted_rows, sorted_tok = rows[order], torch.tensor(pair_tok)[order]
    lp = torch.empty(len(pair_row), dtype=torch.float64)
    ok = torch.empty(len(pair_row), dtype=torch.bool)
    for lo in range(0, len(nodes), HEAD_CHUNK):
        hi = min(lo + HEAD_CHUNK, len(nodes))
        logits = head_logits(model, hidden[nodes[lo:hi]]).float()
        a = int(torch.searchsorted(sorted_rows, lo))
        b = int(torch.searchsorted(sorted_rows, hi))
        r, tk = sorted_rows[a:b] - lo, sorted_tok[a:b]
        # log_softmax is one fused kernel, faster here than logsumexp; argmax (slower than
        # amax) runs only on the rows where the target reaches the maximum, to settle ties the
        # way argmax does (first maximal index)
        lp[a:b] = torch.log_softmax(logits, dim=-1)[r, tk].double()
        at_max = logits[r, tk] == logits.amax(dim=-1)[r]
        reached = at_max.nonzero().squeeze(1)
        if len(reached):
            at_max[reached] = logits[r[reached]].argmax(dim=-1) == tk[reached]
        ok[a:b] = at_max
    logprob[order.numpy()] = lp.numpy()
    hit[order.numpy()] = ok.numpy()
