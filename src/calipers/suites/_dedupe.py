"""Exact and near-duplicate queries.

Exact: equal after normalisation (case folded, punctuation dropped, whitespace collapsed).
Near: Jaccard similarity of character 5-gram shingle sets at least ``threshold`` (0.8 by
default). Candidates come from MinHash signatures banded for locality-sensitive hashing
(Broder 1997; Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*, ch. 3): each shingle
is hashed to 64 bits, reduced modulo the Mersenne prime p = 2^61 - 1, and permuted by
``(a x + b) mod p`` for ``num_perm`` random (a, b), all vectorised. With 32 bands of 4 rows, a
pair at Jaccard 0.8 becomes a candidate with probability 1 - (1 - 0.8^4)^32 > 0.9999; each
candidate pair is then confirmed by its exact Jaccard, so no pair below the threshold merges.
Groups are connected components of confirmed pairs; the first record of a group represents it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "DedupeResult",
    "MinHasher",
    "dedupe",
    "estimate_jaccard",
    "jaccard",
    "normalise",
    "shingles",
]

U64 = npt.NDArray[np.uint64]
MERSENNE = np.uint64((1 << 61) - 1)
_LOW31 = np.uint64((1 << 31) - 1)
_LOW30 = np.uint64((1 << 30) - 1)
_PUNCT = re.compile(r"[^\w\s]")


def normalise(text: str) -> str:
    """Case folded, NFKC, punctuation dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT.sub(" ", text).split())


def shingles(text: str, k: int = 5) -> set[str]:
    """Character k-grams of the normalised text (the whole text when shorter than k)."""
    t = normalise(text)
    if len(t) <= k:
        return {t}
    return {t[i : i + k] for i in range(len(t) - k + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _hash64(items: Sequence[str]) -> U64:
    out = np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest(), "little")
            for s in items
        ),
        dtype=np.uint64,
        count=len(items),
    )
    return out % MERSENNE


def _mulmod(a: U64, x: U64) -> U64:
    """``a * x mod (2^61 - 1)`` without overflow, for a < 2^32 and x < 2^61 (broadcast).

    x = x_hi 2^31 + x_lo; a x_lo < 2^63; a x_hi = h1 2^30 + h0 and, since 2^61 = 1 (mod p),
    a x_hi 2^31 = h0 2^31 + h1 (mod p)."""
    lo = a * (x & _LOW31)
    hi = a * (x >> np.uint64(31))
    folded = (lo % MERSENNE) + ((hi & _LOW30) << np.uint64(31)) + (hi >> np.uint64(30))
    out: U64 = folded % MERSENNE
    return out


@dataclass(frozen=True)
class MinHasher:
    """``num_perm`` hash functions ``(a x + b) mod p``; seeded, so signatures are stable."""

    a: U64
    b: U64

    @classmethod
    def create(cls, num_perm: int = 128, seed: int = 1) -> MinHasher:
        rng = np.random.default_rng(seed)
        a = rng.integers(1, 1 << 32, size=num_perm, dtype=np.uint64)
        b = rng.integers(0, int(MERSENNE), size=num_perm, dtype=np.uint64)
        return cls(a, b)

    @property
    def num_perm(self) -> int:
        return int(self.a.size)

    def signature(self, items: set[str]) -> U64:
        x = _hash64(sorted(items))
        if x.size == 0:
            return np.full(self.num_perm, MERSENNE, dtype=np.uint64)
        h = (_mulmod(self.a[:, None], x[None, :]) + self.b[:, None]) % MERSENNE
        sig: U64 = h.min(axis=1)
        return sig


def estimate_jaccard(sig_a: U64, sig_b: U64) -> float:
    """The share of equal signature positions: an unbiased estimate of the Jaccard index."""
    return float(np.mean(sig_a == sig_b))


@dataclass(frozen=True)
class DedupeResult:
    """``groups`` lists the indices of each group, its representative (the first) first;
    ``kind`` says for each index whether it is kept, an exact or a near duplicate."""

    groups: list[list[int]]
    kind: list[str]

    @property
    def representatives(self) -> list[int]:
        return [g[0] for g in self.groups]

    @property
    def n_exact(self) -> int:
        return self.kind.count("exact")

    @property
    def n_near(self) -> int:
        return self.kind.count("near")


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _candidates(sigs: U64, bands: int) -> set[tuple[int, int]]:
    rows = sigs.shape[1] // bands
    pairs: set[tuple[int, int]] = set()
    for b in range(bands):
        buckets: dict[bytes, list[int]] = defaultdict(list)
        for i, row in enumerate(sigs[:, b * rows : (b + 1) * rows]):
            buckets[row.tobytes()].append(i)
        for members in buckets.values():
            for j in range(1, len(members)):
                pairs.update((members[i], members[j]) for i in range(j))
    return pairs


def dedupe(
    texts: Sequence[str],
    *,
    threshold: float = 0.8,
    num_perm: int = 128,
    bands: int = 32,
    k: int = 5,
    seed: int = 1,
) -> DedupeResult:
    """Group exact and near duplicates of ``texts`` (see the module docstring)."""
    if num_perm % bands:
        raise ValueError(f"num_perm={num_perm} is not a multiple of bands={bands}")
    keys = [normalise(t) for t in texts]
    first: dict[str, int] = {}
    kind = ["kept"] * len(texts)
    for i, key in enumerate(keys):
        if key in first:
            kind[i] = "exact"
        else:
            first[key] = i
    uniq = list(first.values())
    parent = list(range(len(texts)))
    for i, key in enumerate(keys):
        parent[i] = first[key]
    if len(uniq) > 1 and threshold <= 1.0:
        hasher = MinHasher.create(num_perm, seed)
        sets = [shingles(texts[i], k) for i in uniq]
        sigs = np.stack([hasher.signature(s) for s in sets])
        for a, b in sorted(_candidates(sigs, bands)):
            if jaccard(sets[a], sets[b]) >= threshold:
                ra, rb = _find(parent, uniq[a]), _find(parent, uniq[b])
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(texts)):
        root = _find(parent, i)
        groups[root].append(i)
        if kind[i] == "kept" and root != i:
            kind[i] = "near"
    return DedupeResult([groups[r] for r in sorted(groups)], kind)
