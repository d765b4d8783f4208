"""The unpaired difference of two means (``calipers.stats._unpaired``), checked against
Newcombe's (1998) published worked examples, statsmodels, and a normal approximation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from calipers.stats._unpaired import newcombe_unpaired, unpaired_difference

# R. G. Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10 (score,
# no continuity correction): (k1, n1, k2, n2) -> 95% limits for p1 - p2, to 4 decimals.
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((0, 10, 0, 10), (-0.2775, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000)),
]


@pytest.mark.parametrize(("counts", "limits"), NEWCOMBE_TABLE_II)
def test_newcombe_worked_examples(
    counts: tuple[int, int, int, int], limits: tuple[float, float]
) -> None:
    e = newcombe_unpaired(*counts)
    k1, n1, k2, n2 = counts
    assert e.value == pytest.approx(k1 / n1 - k2 / n2)
    assert (round(e.low, 4), round(e.high, 4)) == limits
    assert e.n == n1 + n2 and e.method == "newcombe-unpaired"


def test_newcombe_agrees_with_statsmodels_on_random_tables() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n1, n2 = (int(x) for x in rng.integers(1, 300, size=2))
        k1, k2 = int(rng.integers(0, n1 + 1)), int(rng.integers(0, n2 + 1))
        for c in (0.9, 0.95, 0.99):
            low, high = confint_proportions_2indep(
                k1, n1, k2, n2, method="newcomb", compare="diff", alpha=1 - c
            )
            e = newcombe_unpaired(k1, n1, k2, n2, c)
            assert (e.low, e.high) == pytest.approx((low, high), abs=1e-9)


def test_binary_scores_use_newcombe_and_empty_groups_are_nan() -> None:
    x, y = [1.0] * 7 + [0.0] * 3 + [math.nan], [1.0] * 2 + [0.0] * 8
    e = unpaired_difference(x, y, rng=np.random.default_rng(0))
    assert e == newcombe_unpaired(7, 10, 2, 10)
    empty = unpaired_difference([], y, rng=np.random.default_rng(0))
    assert empty.is_empty and math.isnan(empty.value) and empty.n == 0


def test_continuous_scores_match_the_normal_approximation_at_large_n() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0, 1, 3000), rng.beta(2, 3, 2000)
    e = unpaired_difference(x, y, rng=np.random.default_rng(2), n_resamples=20_000)
    se = math.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
    d = x.mean() - y.mean()
    assert e.value == pytest.approx(d)
    assert e.method == "bootstrap-unpaired-percentile" and e.n == 5000
    assert e.low == pytest.approx(d - 1.959964 * se, abs=0.1 * se)
    assert e.high == pytest.approx(d + 1.959964 * se, abs=0.1 * se)
    one = unpaired_difference([0.3], y, rng=np.random.default_rng(0))
    assert one.method.endswith("undefined") and math.isinf(one.low)
