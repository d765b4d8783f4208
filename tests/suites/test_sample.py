"""Stratified sampling: floors keep rare clusters, the rest follows the traffic."""

from __future__ import annotations

import numpy as np
import pytest

from calipers.suites import allocate, stratified_sample


def test_allocation_by_hand() -> None:
    # floors 2+2+2+1 = 7; 13 places left, shares of traffic 1000:500:3:1 -> 8.65, 4.32, 0.03
    # (the last cluster is full) -> integer parts 8 + 4 + 0 = 12, the largest remainder
    # (0.65, cluster 0) takes the 13th.
    assert allocate([100, 50, 3, 1], [1000, 500, 3, 1], 20, 2) == [11, 6, 2, 1]


def test_floors_win_over_size_and_size_is_capped_by_items() -> None:
    assert allocate([100, 50, 3, 1], [1000, 500, 3, 1], 5, 2) == [2, 2, 2, 1]
    assert allocate([10, 5], [10, 5], 100, 2) == [10, 5]


def test_without_floor_pressure_allocation_is_proportional() -> None:
    assert allocate([600, 300, 100], [600, 300, 100], 100, 1) == [60, 30, 10]


@pytest.mark.parametrize("size", [5, 12, 40, 200])
def test_every_cluster_keeps_its_floor(size: int) -> None:
    rng = np.random.default_rng(0)
    sizes = [120, 40, 9, 3, 1]
    labels = [c for c, n in enumerate(sizes) for _ in range(n)]
    weight = [1.0] * len(labels)
    idx = stratified_sample(labels, weight, size, 3, rng)
    got = [sum(labels[i] == c for i in idx) for c in range(len(sizes))]
    assert all(g >= min(3, n) for g, n in zip(got, sizes, strict=True))
    assert len(idx) == max(min(size, len(labels)), sum(min(3, n) for n in sizes))
    assert len(set(idx)) == len(idx)


def test_sampling_is_seeded() -> None:
    labels = [i % 4 for i in range(200)]
    w = [1.0] * 200
    a = stratified_sample(labels, w, 30, 2, np.random.default_rng(9))
    b = stratified_sample(labels, w, 30, 2, np.random.default_rng(9))
    c = stratified_sample(labels, w, 30, 2, np.random.default_rng(10))
    assert a == b and a != c
