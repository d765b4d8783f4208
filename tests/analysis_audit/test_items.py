"""Item statistics against scipy, statsmodels and hand-worked examples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep

from calipers.stats._items import (
    item_difficulty,
    item_rest_correlations,
    point_biserial,
    subset_difference,
    uniform_items,
)


def test_point_biserial_matches_scipy_and_the_textbook_formula() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = rng.integers(0, 2, size=30).astype(float)
        y = rng.normal(size=30) + x
        expected = stats.pointbiserialr(x, y).statistic
        # (M1 - M0) / s_n * sqrt(p q), s_n the population standard deviation
        p = x.mean()
        textbook = (y[x == 1].mean() - y[x == 0].mean()) / y.std() * math.sqrt(p * (1 - p))
        assert point_biserial(x, y) == pytest.approx(expected, abs=1e-12)
        assert point_biserial(x, y) == pytest.approx(textbook, abs=1e-12)


def test_point_biserial_is_nan_when_undefined() -> None:
    assert math.isnan(point_biserial([1, 1, 1], [1.0, 2.0, 3.0]))  # everyone right
    assert math.isnan(point_biserial([0, 1, 1], [2.0, 2.0, 2.0]))  # totals all equal
    assert math.isnan(point_biserial([1], [3.0]))
    with pytest.raises(ValueError):
        point_biserial([0, 1], [1.0])


# 4 runs (rows) x 3 items (columns)
HAND = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1]], dtype=float)


def test_item_rest_correlation_by_hand() -> None:
    # item 0: x = (1, 1, 0, 1); totals (2, 1, 2, 3) minus x give rest = (1, 0, 2, 2).
    # deviations: x - .75 = (.25, .25, -.75, .25); rest - 1.25 = (-.25, -1.25, .75, .75)
    # sum of products -.0625 - .3125 - .5625 + .1875 = -.75; Sxx = .75; Srr = 2.75
    r = item_rest_correlations(HAND)
    assert r[0] == pytest.approx(-0.75 / math.sqrt(0.75 * 2.75))
    for j in range(3):  # each item against the total of the other two
        rest = HAND.sum(axis=1) - HAND[:, j]
        assert r[j] == pytest.approx(stats.pearsonr(HAND[:, j], rest).statistic)


def test_constant_items_have_no_discrimination() -> None:
    x = np.array([[1, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]], dtype=float)
    r = item_rest_correlations(x)
    assert math.isnan(r[0]) and math.isnan(r[1])  # all right, all wrong
    assert not math.isnan(r[2])
    assert np.isnan(item_rest_correlations(x[:1])).all()  # one taker: nothing to correlate


def test_difficulty_and_uniform_items() -> None:
    x = np.array([[1, 0, 1, 0.5], [1, 0, 0, 0.5]], dtype=float)
    assert item_difficulty(x).tolist() == [1.0, 0.0, 0.5, 0.5]
    with_nan = np.array([[1, np.nan], [0, np.nan]])
    d = item_difficulty(with_nan)
    assert d[0] == 0.5 and math.isnan(d[1])
    right, wrong, same = uniform_items(x)
    assert right.tolist() == [True, False, False, False]
    assert wrong.tolist() == [False, True, False, False]
    assert same.tolist() == [True, True, False, True]


def test_subset_difference_is_a_scaled_newcombe_interval() -> None:
    kept = [1.0] * 40 + [0.0] * 10  # 40/50 right
    dropped = [0.0] * 9 + [1.0]  # 1/10 right
    est = subset_difference(kept, dropped, rng=np.random.default_rng(0))
    w = 10 / 60
    assert est.value == pytest.approx(40 / 50 - 41 / 60)
    assert est.value == pytest.approx(w * (0.8 - 0.1))
    low, high = confint_proportions_2indep(40, 50, 1, 10, method="newcomb", compare="diff")
    assert (est.low, est.high) == pytest.approx((w * low, w * high), abs=1e-9)
    assert est.n == 60 and est.method == "newcombe-independent-scaled"


def test_subset_difference_edges_and_bootstrap() -> None:
    rng = np.random.default_rng(0)
    same = subset_difference([1.0, 0.0], [], rng=rng)
    assert (same.value, same.low, same.high, same.method) == (0.0, 0.0, 0.0, "identical")
    assert subset_difference([], [1.0], rng=rng).is_empty
    kept = np.linspace(0.4, 0.9, 40)
    dropped = np.linspace(0.0, 0.3, 8)
    est = subset_difference(kept, dropped, rng=np.random.default_rng(1))
    assert est.method == "bootstrap-stratified-scaled"
    assert est.value == pytest.approx(kept.mean() - np.concatenate([kept, dropped]).mean())
    assert est.low < est.value < est.high
    # the simulated sampling spread of the shift (items redrawn from the same pools) agrees
    sim = np.random.default_rng(2)
    draws = [
        (8 / 48) * (sim.choice(kept, 40).mean() - sim.choice(dropped, 8).mean())
        for _ in range(4000)
    ]
    assert est.high - est.low == pytest.approx(
        np.subtract(*np.quantile(draws, [0.975, 0.025])), rel=0.15
    )
