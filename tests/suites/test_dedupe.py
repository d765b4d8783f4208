"""Dedupe: MinHash estimates agree with exact Jaccard, the modular arithmetic is exact, and
the groups on a hand-made list are the ones worked out by hand."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from calipers.suites import MinHasher, dedupe, estimate_jaccard, jaccard
from calipers.suites._dedupe import MERSENNE, _mulmod, normalise, shingles


def test_mulmod_is_exact() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(1, 1 << 32, size=2000, dtype=np.uint64)
    x = rng.integers(0, int(MERSENNE), size=2000, dtype=np.uint64)
    p = (1 << 61) - 1
    want = [(int(ai) * int(xi)) % p for ai, xi in zip(a, x, strict=True)]
    assert [int(v) for v in _mulmod(a, x)] == want


def _pair(rng: random.Random, n: int, overlap: float) -> tuple[set[str], set[str]]:
    shared = {f"s{i}" for i in range(int(n * overlap))}
    only = n - len(shared)
    return shared | {f"a{i}{rng.random()}" for i in range(only)}, shared | {
        f"b{i}{rng.random()}" for i in range(only)
    }


@pytest.mark.parametrize("overlap", [0.0, 0.3, 0.6, 0.8, 0.95, 1.0])
def test_minhash_estimates_jaccard_within_tolerance(overlap: float) -> None:
    rng = random.Random(int(overlap * 100))
    hasher = MinHasher.create(num_perm=256, seed=3)
    a, b = _pair(rng, 200, overlap)
    exact = jaccard(a, b)
    est = estimate_jaccard(hasher.signature(a), hasher.signature(b))
    # the estimate is a mean of 256 Bernoulli(J) draws: sd = sqrt(J(1-J)/256) <= 0.031
    assert abs(est - exact) <= 4 * math.sqrt(exact * (1 - exact) / 256) + 1e-9


def test_minhash_error_across_many_pairs_matches_binomial_sd() -> None:
    hasher = MinHasher.create(num_perm=128, seed=5)
    rng = random.Random(1)
    errs = []
    for _ in range(200):
        a, b = _pair(rng, 60, 0.5)
        errs.append(estimate_jaccard(hasher.signature(a), hasher.signature(b)) - jaccard(a, b))
    j = jaccard(*_pair(rng, 60, 0.5))
    sd = math.sqrt(j * (1 - j) / 128)
    assert abs(float(np.mean(errs))) < 3 * sd / math.sqrt(200)  # unbiased
    assert 0.7 * sd < float(np.std(errs)) < 1.3 * sd


def test_normalise_and_shingles() -> None:
    assert normalise("  How DO I, reset   my password?! ") == "how do i reset my password"
    assert shingles("abcdef", k=5) == {"abcde", "bcdef"}
    assert shingles("Hi!", k=5) == {"hi"}


LONG = "how do i reset the password of my account on the settings page"


def test_exact_and_near_duplicates_by_hand() -> None:
    texts = [
        LONG,  # 0 kept
        "How do I reset the password of my account on the settings page?",  # 1 exact of 0
        "how do i reset the pasword of my account on the settings page",  # 2 near 0 (typo)
        "what is your refund policy for damaged items",  # 3 kept
        "WHAT is your refund policy for damaged items!!",  # 4 exact of 3
        "where is my parcel",  # 5 kept
        "where is my parcel now",  # 6 J below 0.8: kept
        "cancel my subscription please",  # 7 kept
    ]
    # hand check of the two borderline pairs (character 5-grams)
    assert jaccard(shingles(texts[0]), shingles(texts[2])) == pytest.approx(53 / 60)
    assert jaccard(shingles(texts[5]), shingles(texts[6])) == pytest.approx(14 / 18)
    res = dedupe(texts)
    assert res.groups == [[0, 1, 2], [3, 4], [5], [6], [7]]
    assert res.kind == ["kept", "exact", "near", "kept", "exact", "kept", "kept", "kept"]
    assert (res.n_exact, res.n_near) == (2, 1)
    assert dedupe(texts, threshold=0.75).groups == [[0, 1, 2], [3, 4], [5, 6], [7]]


def test_threshold_one_keeps_only_exact_duplicates() -> None:
    res = dedupe([LONG, LONG.replace("password", "pasword"), LONG.upper()], threshold=1.0)
    assert res.groups == [[0, 2], [1]] and res.n_near == 0
