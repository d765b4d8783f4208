"""Order-statistic quantile intervals, against scipy's quantile test, the binomial formula
by hand, and simulated coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calipers.stats._quantile import order_statistic_ranks, quantile_interval


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(B <= k) for B ~ Binomial(n, p), summed term by term (independent of scipy)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def test_median_ranks_for_n_100_by_hand() -> None:
    # P(B <= 39) = 0.0176 <= 0.025 < P(B <= 40) = 0.0284, so l = 40;
    # P(B <= 59) = 0.9716 < 0.975 <= P(B <= 60) = 0.9824, so u = 61.
    assert binom_cdf(39, 100, 0.5) <= 0.025 < binom_cdf(40, 100, 0.5)
    assert binom_cdf(59, 100, 0.5) < 0.975 <= binom_cdf(60, 100, 0.5)
    low, high, coverage = order_statistic_ranks(100, 0.5, 0.95)
    assert (low, high) == (40, 61)
    assert coverage == pytest.approx(binom_cdf(60, 100, 0.5) - binom_cdf(39, 100, 0.5))
    assert coverage == pytest.approx(0.9648, abs=1e-4)


@pytest.mark.parametrize("n", [5, 20, 73, 100, 250])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.95])
@pytest.mark.parametrize("conf", [0.9, 0.95])
def test_matches_scipy_quantile_test(n: int, q: float, conf: float) -> None:
    x = np.random.default_rng(n).lognormal(size=n)
    e = quantile_interval(x, q, conf)
    ci = stats.quantile_test(x, p=q).confidence_interval(conf)
    want_low = -math.inf if math.isnan(ci.low) else ci.low
    want_high = math.inf if math.isnan(ci.high) else ci.high
    assert e.low == pytest.approx(want_low) and e.high == pytest.approx(want_high)
    assert e.n == n and e.method == "order-statistic" and e.confidence == conf
    assert e.value == pytest.approx(np.quantile(x, q)) and e.low <= e.value <= e.high


def test_simulated_coverage_of_the_median_at_n_100() -> None:
    rng = np.random.default_rng(20261130)
    reps, n = 2000, 100
    true_median = math.log(2)  # exponential(1)
    hits = 0
    for _ in range(reps):
        e = quantile_interval(rng.exponential(size=n), 0.5)
        hits += e.low <= true_median <= e.high
    coverage = hits / reps
    exact = order_statistic_ranks(n, 0.5, 0.95)[2]
    # Monte Carlo sd is sqrt(0.965 * 0.035 / 2000) = 0.004
    assert 0.92 <= coverage <= 0.98
    assert abs(coverage - exact) < 0.015


def test_simulated_coverage_of_the_p95_at_n_200() -> None:
    rng = np.random.default_rng(7)
    true_q = stats.lognorm(s=1).ppf(0.95)
    hits = sum(
        (e := quantile_interval(rng.lognormal(size=200), 0.95)).low <= true_q <= e.high
        for _ in range(1000)
    )
    assert 0.93 <= hits / 1000 <= 0.99


def test_too_few_values_leave_a_bound_open_and_no_values_are_empty() -> None:
    # p95 needs 0.95**n <= 0.025, n >= 72, before the largest value can bound it
    assert order_statistic_ranks(71, 0.95)[1] == 72  # beyond n: no upper bound
    assert order_statistic_ranks(72, 0.95)[1] == 72
    e = quantile_interval(np.arange(30.0), 0.95)
    assert e.high == math.inf and math.isfinite(e.low)
    assert quantile_interval([], 0.5).is_empty
    assert quantile_interval([math.nan, math.nan], 0.5).n == 0
    e = quantile_interval([1.0, math.nan, 2.0, 3.0], 0.5)
    assert e.n == 3 and e.value == 2.0
    with pytest.raises(ValueError):
        quantile_interval([1.0], 1.0)
    with pytest.raises(ValueError):
        quantile_interval([1.0, math.inf], 0.5)
