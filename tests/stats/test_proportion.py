"""Wilson and Beta-posterior intervals against closed forms, published tables and scipy."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from scipy.stats import beta, norm

from calipers.stats import beta_posterior, wilson
from calipers.types import Estimate

# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Stat. Med.
# 17:857-872, Table I, method 3 (Wilson score, no continuity correction), 95%.
NEWCOMBE_WILSON = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


def wilson_closed_form(k: int, n: int, confidence: float) -> tuple[float, float]:
    z = norm.ppf(0.5 + confidence / 2)
    center = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return center - half, center + half


@pytest.mark.parametrize(("k", "n", "low", "high"), NEWCOMBE_WILSON)
def test_wilson_matches_newcombe_1998_table(k: int, n: int, low: float, high: float) -> None:
    est = wilson(k, n)
    assert est.low == pytest.approx(low, abs=6e-5)
    assert est.high == pytest.approx(high, abs=6e-5)
    assert (est.value, est.n, est.method, est.confidence) == (k / n, n, "wilson", 0.95)


@pytest.mark.parametrize(
    ("k", "n", "confidence"),
    [(0, 10, 0.95), (10, 10, 0.95), (81, 263, 0.95), (3, 7, 0.9), (1, 1, 0.99), (50, 100, 0.5)],
)
def test_wilson_matches_closed_form(k: int, n: int, confidence: float) -> None:
    low, high = wilson_closed_form(k, n, confidence)
    est = wilson(k, n, confidence)
    assert est.low == pytest.approx(max(low, 0.0), abs=1e-12)
    assert est.high == pytest.approx(min(high, 1.0), abs=1e-12)


def test_wilson_at_the_boundaries_is_not_zero_width() -> None:
    # The Wald/CLT interval is [0, 0] at 0/10; Wilson is not.
    zero, full = wilson(0, 10), wilson(10, 10)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.2775, abs=6e-5)
    assert full.high == 1.0 and full.low == pytest.approx(0.7225, abs=6e-5)


def test_beta_jeffreys_matches_scipy_beta_ppf() -> None:
    k, n = 7, 23
    est = beta_posterior(k, n, 0.9)
    assert est.low == pytest.approx(beta.ppf(0.05, k + 0.5, n - k + 0.5), rel=1e-12)
    assert est.high == pytest.approx(beta.ppf(0.95, k + 0.5, n - k + 0.5), rel=1e-12)
    assert (est.value, est.n, est.method) == (k / n, n, "beta-jeffreys")


def test_beta_boundaries_follow_brown_cai_dasgupta() -> None:
    zero, full = beta_posterior(0, 12), beta_posterior(12, 12)
    assert zero.low == 0.0 and zero.high == pytest.approx(beta.ppf(0.975, 0.5, 12.5))
    assert full.high == 1.0 and full.low == pytest.approx(beta.ppf(0.025, 12.5, 0.5))


def test_beta_other_prior_is_named_and_used() -> None:
    est = beta_posterior(4, 10, prior=(1.0, 1.0))
    assert est.method == "beta(1,1)"
    assert est.low == pytest.approx(beta.ppf(0.025, 5, 7))
    assert est.high == pytest.approx(beta.ppf(0.975, 5, 7))


@pytest.mark.parametrize("fn", [wilson, beta_posterior])
def test_no_data_is_nan_not_zero(fn: Callable[[int, int], Estimate]) -> None:
    est = fn(0, 0)
    assert est.n == 0 and est.is_empty
    assert math.isnan(est.value) and math.isnan(est.low) and math.isnan(est.high)


@pytest.mark.parametrize(("k", "n", "confidence"), [(3, 2, 0.95), (-1, 5, 0.95), (1, 5, 1.0)])
def test_bad_input_raises(k: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson(k, n, confidence)
    with pytest.raises(ValueError):
        beta_posterior(k, n, confidence)
