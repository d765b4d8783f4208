"""Bootstrap mean: reproducibility, agreement with normal theory, coverage, degenerate data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from calipers.stats import bootstrap_mean


def test_same_seed_same_result_and_different_seed_differs() -> None:
    x = np.random.default_rng(7).exponential(size=60)
    a = bootstrap_mean(x, np.random.default_rng(1))
    b = bootstrap_mean(x, np.random.default_rng(1))
    c = bootstrap_mean(x, np.random.default_rng(2))
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)
    assert a.method == "bootstrap-bca" and a.n == 60 and a.value == pytest.approx(x.mean())


def test_large_normal_sample_agrees_with_normal_theory() -> None:
    mu, n = 3.0, 4000
    x = np.random.default_rng(11).normal(mu, 2.0, size=n)
    est = bootstrap_mean(x, np.random.default_rng(12))
    half = norm.ppf(0.975) * x.std(ddof=1) / math.sqrt(n)
    assert est.low < mu < est.high
    assert est.low == pytest.approx(x.mean() - half, abs=0.1 * half)
    assert est.high == pytest.approx(x.mean() + half, abs=0.1 * half)


def test_coverage_is_near_nominal_for_small_normal_samples() -> None:
    rng = np.random.default_rng(2024)
    reps, hits = 200, 0
    for _ in range(reps):
        x = rng.normal(0.5, 1.0, size=40)
        est = bootstrap_mean(x, rng, confidence=0.9, n_resamples=1000)
        hits += est.low <= 0.5 <= est.high
    # Nominal 0.90; with 200 replications the binomial SD of the rate is about 0.02.
    assert 0.82 <= hits / reps <= 0.97


def test_constant_values_fall_back_to_percentile_point_interval() -> None:
    est = bootstrap_mean([0.25] * 9, np.random.default_rng(0))
    assert est.method == "bootstrap-percentile"
    assert (est.value, est.low, est.high, est.n) == (0.25, 0.25, 0.25, 9)


def test_nan_is_unscored_and_dropped() -> None:
    # None is outside ArrayLike on purpose: the test checks it is read as NaN (as_values)
    values = [1.0, float("nan"), 2.0, 4.0, None]
    est = bootstrap_mean(values, np.random.default_rng(0))  # type: ignore[arg-type]
    assert est.n == 3 and est.value == pytest.approx(7 / 3)


def test_empty_is_nan_and_single_value_is_unbounded() -> None:
    empty = bootstrap_mean([float("nan")], np.random.default_rng(0))
    assert empty.n == 0 and math.isnan(empty.value) and math.isnan(empty.low)
    one = bootstrap_mean([0.7], np.random.default_rng(0))
    assert (one.value, one.low, one.high, one.n) == (0.7, -math.inf, math.inf, 1)


def test_infinite_value_raises() -> None:
    with pytest.raises(ValueError):
        bootstrap_mean([1.0, math.inf], np.random.default_rng(0))
