"""pass@k: the unbiased estimator against hand-computed values and the direct formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calipers.stats._passk import pass_at_k, pass_at_k_estimate


def direct(n: int, c: int, k: int) -> float:
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def test_hand_computed_values() -> None:
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # C(3,2)/C(5,2) = 3/10
    assert pass_at_k(5, 2, 5) == 1.0 and pass_at_k(5, 1, 5) == 1.0  # k = n, c > 0
    assert pass_at_k(5, 0, 5) == 0.0 and pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 5, 1) == 1.0 and pass_at_k(5, 4, 2) == 1.0  # n - c < k
    assert pass_at_k(1, 1, 1) == 1.0 and pass_at_k(1, 0, 1) == 0.0


def test_matches_the_combinatorial_formula() -> None:
    for n in range(1, 31):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(direct(n, c, k), abs=1e-12)


def test_stable_for_large_n() -> None:
    # math.comb is exact with integers; the product form must agree without overflow.
    assert pass_at_k(200, 13, 100) == pytest.approx(direct(200, 13, 100), rel=1e-12)
    assert pass_at_k(1000, 1, 10) == pytest.approx(0.01, rel=1e-12)


def test_k1_is_the_share_correct() -> None:
    for n, c in [(10, 3), (7, 7), (200, 51)]:
        assert pass_at_k(n, c, 1) == pytest.approx(c / n)


@pytest.mark.parametrize("args", [(0, 0, 1), (5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_invalid_arguments(args: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        pass_at_k(*args)


def test_estimate_is_the_mean_over_problems_with_its_interval() -> None:
    rng = np.random.default_rng(0)
    counts, n, k = [0, 3, 10, 5, 1, 7], 10, 5
    est = pass_at_k_estimate(counts, n, k, rng=rng)
    expected = np.mean([direct(n, c, k) for c in counts])
    assert est.value == pytest.approx(expected) and est.n == len(counts)
    assert est.method.startswith("bootstrap") and est.low <= est.value <= est.high
    again = pass_at_k_estimate(counts, n, k, rng=np.random.default_rng(0))
    assert (again.low, again.high) == (est.low, est.high)  # seeded: reproducible


def test_estimate_binary_values_use_wilson() -> None:
    est = pass_at_k_estimate([1, 0, 1, 1], 1, 1, rng=np.random.default_rng(0))
    assert (est.value, est.n, est.method) == (0.75, 4, "wilson")


def test_estimate_with_per_problem_sample_counts() -> None:
    est = pass_at_k_estimate([1, 2], [4, 5], 2, rng=np.random.default_rng(0))
    assert est.value == pytest.approx((direct(4, 1, 2) + direct(5, 2, 2)) / 2)
    with pytest.raises(ValueError, match="at least 3 samples"):
        pass_at_k_estimate([1, 2], [2, 5], 3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="2 correct counts but 3"):
        pass_at_k_estimate([1, 2], [4, 5, 6], 1, rng=np.random.default_rng(0))


def test_no_problems_is_empty_not_zero() -> None:
    est = pass_at_k_estimate([], 10, 1, rng=np.random.default_rng(0))
    assert est.is_empty and est.n == 0
