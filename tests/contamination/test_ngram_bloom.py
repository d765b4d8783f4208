"""The n-gram index's Bloom filter: its false-positive rate, from the filter's bits and from
the number of keys, against the rate measured on a million random keys never added."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calipers.contamination._bloom import BloomFilter, Layout, best_layout, expected_fp_rate


@pytest.mark.parametrize(
    ("n_words", "n_keys", "layout"),
    [
        (1 << 10, 1 << 13, Layout(1, 4)),
        (1 << 11, 1 << 13, Layout(2, 3)),
        (1 << 10, 1 << 12, Layout(3, 2)),
    ],
)
def test_fp_rate_formulas_match_an_empirical_rate(
    n_words: int, n_keys: int, layout: Layout
) -> None:
    rng = np.random.default_rng(11)
    bloom = BloomFilter.empty(n_words, layout)
    keys = rng.integers(0, 2**64, size=n_keys, dtype=np.uint64)
    for start in range(0, n_keys, 4096):
        bloom.add(keys[start : start + 4096])
    assert bloom.contains(keys).all()  # no false negatives, ever
    probes = rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    empirical = float(bloom.contains(probes).mean())
    theory = expected_fp_rate(n_keys, n_words, layout)
    fill, state = bloom.fill_and_fp_rate()
    assert 0.001 < theory < 0.1  # a rate a million probes measure to a few per cent
    # The rate of this filter (state) is exact given its bits: only probe noise remains.
    assert abs(empirical - state) < 4 * math.sqrt(state * (1 - state) / probes.size)
    # The rate from the number of keys is the mean over filters: it varies a little more.
    assert abs(empirical - theory) < 0.1 * theory
    ones = sum(bin(int(w)).count("1") for w in bloom.words)
    assert fill == pytest.approx(ones / (64 * n_words))


def test_layout_choice_reaches_a_negligible_rate_when_memory_allows() -> None:
    layout = best_layout(35_000_000, 1 << 26)  # 200 MB of text in 512 MiB
    assert expected_fp_rate(35_000_000, 1 << 26, layout) <= 1e-8
    crowded = best_layout(2_000_000_000, 1 << 26)
    assert expected_fp_rate(2_000_000_000, 1 << 26, crowded) > 1e-3  # and says so
