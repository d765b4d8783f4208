"""Clustered mean against a hand-written sandwich (Miller 2024, eq. for SE_clustered)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calipers.stats import clustered_mean


def miller_clustered_se(x: np.ndarray, labels: list[str]) -> float:
    """Miller (2024): SE^2 = SE_CLT^2 + (1/n^2) sum_c sum_{i != j in c} e_i e_j, e = x - mean,
    with SE_CLT^2 = (1/n^2) sum e_i^2; times statsmodels' CR1 factor G/(G-1)*(N-1)/(N-K),
    which for the intercept-only model (K = 1) is G/(G-1)."""
    n, e = x.size, x - x.mean()
    cross = 0.0
    for g in set(labels):
        idx = [i for i, lab in enumerate(labels) if lab == g]
        cross += sum(e[i] * e[j] for i in idx for j in idx if i != j)
    g_count = len(set(labels))
    return math.sqrt(g_count / (g_count - 1) * (np.sum(e**2) + cross) / n**2)


def test_matches_hand_written_sandwich_with_t_on_g_minus_1() -> None:
    rng = np.random.default_rng(3)
    sizes = [1, 2, 5, 3, 4, 2]
    labels = [f"passage-{g}" for g, s in enumerate(sizes) for _ in range(s)]
    x = np.concatenate([rng.normal(g, 1.0, size=s) for g, s in enumerate(sizes)])
    est = clustered_mean(x, labels, confidence=0.9)
    half = stats.t.ppf(0.95, len(sizes) - 1) * miller_clustered_se(x, labels)
    assert est.value == pytest.approx(x.mean())
    assert est.low == pytest.approx(x.mean() - half, rel=1e-10)
    assert est.high == pytest.approx(x.mean() + half, rel=1e-10)
    assert (est.n, est.method, est.confidence) == (x.size, "cluster-t", 0.9)


def test_correlated_clusters_are_wider_than_naive() -> None:
    rng = np.random.default_rng(5)
    effects = rng.normal(0.0, 1.0, size=20)
    x = np.repeat(effects, 10) + rng.normal(0.0, 0.1, size=200)
    labels = np.repeat(np.arange(20), 10).tolist()
    est = clustered_mean(x, labels)
    naive = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    # Near-identical items within a cluster: the effective n is ~20, not 200 (~3x wider).
    assert est.half_width > 2.5 * (naive.high - naive.low) / 2


def test_one_item_per_cluster_is_the_classical_t_interval() -> None:
    # With G = N the CR1 factor G/(G-1) turns sum(e^2)/N^2 into s^2/N exactly.
    x = np.random.default_rng(9).normal(1.0, 2.0, size=25)
    est = clustered_mean(x, list(range(25)))
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert est.low == pytest.approx(ci.low, rel=1e-10)
    assert est.high == pytest.approx(ci.high, rel=1e-10)


def test_single_cluster_has_unbounded_interval() -> None:
    est = clustered_mean([0.0, 1.0, 1.0], ["a", "a", "a"])
    assert (est.low, est.high, est.n) == (-math.inf, math.inf, 3)
    assert est.value == pytest.approx(2 / 3)


def test_nan_dropped_with_its_label_and_empty_is_nan() -> None:
    est = clustered_mean([1.0, float("nan"), 0.0, 1.0], ["a", "b", "a", "c"])
    assert est.n == 3 and est.value == pytest.approx(2 / 3) and math.isfinite(est.low)
    empty = clustered_mean([float("nan")], ["a"])
    assert empty.n == 0 and math.isnan(empty.value) and empty.method == "cluster-t"


def test_length_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        clustered_mean([1.0, 2.0], ["a"])
