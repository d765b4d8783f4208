"""Synthetic models for the fingerprint canary: per probe, a model is a distribution over a
few completion strings (variants of one answer, so the kernel between them is graded, as
between real samples); another model shares half of those strings and weighs them anew."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calipers.stats import (
    CanaryLook,
    CanaryReference,
    canary_look,
    canary_reference,
    hamming_codes,
)

ALPHABET = np.array(list("abcdefghij "))


def _variant(base: str, rng: np.random.Generator) -> str:
    """``base`` rewritten from a random point on (an early divergence, as sampling makes)."""
    cut = int(rng.integers(5, len(base)))
    tail = "".join(rng.choice(ALPHABET, size=int(rng.integers(10, 60))))
    return base[:cut] + tail


@dataclass(frozen=True)
class Model:
    strings: tuple[tuple[str, ...], ...]  # per probe
    weights: tuple[np.ndarray, ...]

    def sample(self, probe: int, k: int, rng: np.random.Generator) -> list[str]:
        pick = rng.choice(len(self.strings[probe]), size=k, p=self.weights[probe])
        return [self.strings[probe][i] for i in pick]


def models(n_probes: int, k: int, rng: np.random.Generator) -> tuple[Model, Model]:
    """``(P, Q)``: ``Q`` keeps half of ``P``'s strings per probe, adds new variants of the
    same answer, and draws its own weights."""
    ps, qs, pw, qw = [], [], [], []
    for _ in range(n_probes):
        base = "".join(rng.choice(ALPHABET, size=80))
        mine = [_variant(base, rng) for _ in range(k)]
        theirs = mine[: k // 2] + [_variant(base, rng) for _ in range(k - k // 2)]
        ps.append(tuple(mine))
        qs.append(tuple(theirs))
        pw.append(rng.dirichlet(np.full(k, 0.8)))
        qw.append(rng.dirichlet(np.full(k, 0.8)))
    return Model(tuple(ps), tuple(pw)), Model(tuple(qs), tuple(qw))


def reference(p: Model, per_probe: int, rng: np.random.Generator) -> CanaryReference:
    return canary_reference({f"p{i}": p.sample(i, per_probe, rng) for i in range(len(p.strings))})


def looks(
    ref: CanaryReference,
    p: Model,
    q: Model,
    n_looks: int,
    rng: np.random.Generator,
    *,
    share_q: float = 0.0,
    switch_after: int = 0,
    fast: bool = True,
) -> list[CanaryLook]:
    """``n_looks`` looks of one completion per probe; from look ``switch_after + 1`` on,
    each completion comes from ``q`` with probability ``share_q``, else from ``p``."""
    n = len(p.strings)
    from_q = rng.random((n_looks, n)) < share_q
    from_q[:switch_after] = False
    drawn: dict[int, Any] = {}
    for i in range(n):
        k = len(p.strings[i])
        drawn[i] = (
            rng.choice(k, size=n_looks, p=p.weights[i]),
            rng.choice(k, size=n_looks, p=q.weights[i]),
        )
    if not fast:
        return [
            canary_look(ref, {f"p{i}": [_pick(p, q, i, t, from_q, drawn)] for i in range(n)})
            for t in range(n_looks)
        ]
    # The same looks, each distinct string scored once: T_p(y) from the reference's own
    # scores (the kernel), then the look from those scores, as canary_look does.
    k = max(len(x) for x in p.strings)
    table = np.zeros((n, 2 * k))
    for i in range(n):
        both = list(p.strings[i]) + list(q.strings[i])
        table[i, : len(both)] = ref.scores(np.full(len(both), i), hamming_codes(both, ref.length))
    col = np.array(
        [np.where(from_q[:, i], drawn[i][1] + len(p.strings[i]), drawn[i][0]) for i in range(n)]
    ).T  # (looks, probes): which string each look drew
    idx, ones = np.arange(n), np.ones(n, dtype=np.int64)
    return [ref.look(idx, ones, table[idx, col[t]]) for t in range(n_looks)]


def _pick(p: Model, q: Model, i: int, t: int, from_q: np.ndarray, drawn: dict[int, Any]) -> str:
    model, pick = (q, drawn[i][1]) if from_q[t, i] else (p, drawn[i][0])
    return model.strings[i][int(pick[t])]
