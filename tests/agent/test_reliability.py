"""Reliability statistics: pass^k, pass@k, flip rate and the minimum detectable difference,
against hand-computed values, brute-force enumeration of trial subsets, and simulations with
planted per-task success probabilities (unbiasedness, interval coverage)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from calipers.stats import (
    between_task_variance,
    flip_rate,
    flip_rate_estimate,
    min_detectable_difference,
    pass_at_k,
    pass_at_k_curve,
    pass_hat_k,
    pass_hat_k_curve,
    pass_hat_k_estimate,
)


def test_pass_hat_k_by_hand() -> None:
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert pass_hat_k(8, 6, 3) == pytest.approx(20 / 56)  # C(6,3)/C(8,3)
    assert pass_hat_k(4, 4, 4) == 1.0
    assert pass_hat_k(4, 2, 3) == 0.0
    assert pass_hat_k(7, 3, 1) == pytest.approx(3 / 7)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_hat_k(3, 1, 4)


@pytest.mark.parametrize("n", [2, 3, 5, 6])
def test_every_estimator_equals_enumerating_the_trials(n: int) -> None:
    """pass^k: share of k-subsets of trials all successes; pass@k: share with at least one;
    flip rate: share of pairs that differ."""
    for c in range(n + 1):
        trials = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(trials, k))
            assert pass_hat_k(n, c, k) == pytest.approx(np.mean([all(s) for s in subsets]))
            assert pass_at_k(n, c, k) == pytest.approx(np.mean([any(s) for s in subsets]))
        pairs = list(itertools.combinations(trials, 2))
        assert flip_rate(n, c) == pytest.approx(np.mean([a != b for a, b in pairs]))
    assert flip_rate(4, 1) == 0.5  # 3 of the 6 pairs differ


def test_curves_over_tasks_by_hand() -> None:
    rng = np.random.default_rng(0)
    counts, n = [4, 2, 0, 3], 4
    hat = pass_hat_k_curve(counts, n, rng=rng)
    at = pass_at_k_curve(counts, n, rng=rng)
    assert sorted(hat) == sorted(at) == [1, 2, 3, 4]
    assert hat[1].value == pytest.approx(9 / 16)
    assert hat[2].value == pytest.approx((1 + 1 / 6 + 0 + 3 / 6) / 4)
    assert hat[4].value == pytest.approx(1 / 4) and hat[4].method == "wilson"
    assert at[2].value == pytest.approx((1 + 5 / 6 + 0 + 1) / 4)
    assert at[4].value == pytest.approx(3 / 4)
    for k in hat:  # pass^k falls with k, pass@k rises, and they meet at k = 1
        assert hat[k].low <= hat[k].value <= hat[k].high
    assert [hat[k].value for k in (1, 2, 3, 4)] == sorted((hat[k].value for k in hat), reverse=True)
    assert at[1].value == hat[1].value
    assert pass_hat_k_curve([], 3, rng=rng) == {}
    assert math.isnan(pass_hat_k_estimate([], 3, 2, rng=rng).value)


def test_pass_hat_k_is_unbiased_and_the_plug_in_is_not() -> None:
    """Tasks with planted success probabilities: the mean estimate recovers mean(p^k) over
    20,000 simulated studies; (c/n)^k overshoots by far more than the simulation error."""
    p = np.array([0.2, 0.5, 0.8, 0.95])
    n, k, sims = 5, 3, 20_000
    rng = np.random.default_rng(1)
    c = rng.binomial(n, p, size=(sims, p.size))
    table = np.array([pass_hat_k(n, int(ci), k) for ci in range(n + 1)])
    assert table == pytest.approx([math.comb(ci, k) / math.comb(n, k) for ci in range(n + 1)])
    est = table[c].mean(axis=1)
    truth = float(np.mean(p**k))
    se = est.std() / math.sqrt(sims)
    assert abs(est.mean() - truth) < 4 * se
    plug_in = ((c / n) ** k).mean(axis=1)
    assert plug_in.mean() - truth > 20 * se


def beta_moment(a: float, b: float, k: int) -> float:
    """E[p^k] for p ~ Beta(a, b)."""
    return float(np.prod([(a + i) / (a + b + i) for i in range(k)]))


@pytest.mark.parametrize(
    ("what", "a", "b", "n", "tasks", "k", "most"),
    [
        ("pass^2", 2, 2, 4, 40, 2, 0.985),
        ("pass^4", 2, 2, 4, 40, 4, 0.985),  # values 0/1: the Wilson branch
        ("flip", 2, 2, 4, 40, 0, 0.985),
        ("pass@2", 2, 2, 4, 20, 2, 0.985),
        # rare: mean pass^4 1.2%; the bootstrap alone covers 0.78, widened it is conservative
        ("pass^4", 0.5, 3, 8, 20, 4, 1.0),
    ],
)
def test_intervals_over_tasks_cover_by_simulation(
    what: str, a: float, b: float, n: int, tasks: int, k: int, most: float
) -> None:
    """Tasks drawn from a population with p ~ Beta(a, b), n trials each: the 95% interval
    over tasks covers the population value in about 95% of 300 studies (at least 90%)."""
    truth = {
        "pass^": beta_moment(a, b, k),
        "pass@": 1 - beta_moment(b, a, k),  # 1 - E[(1 - p)^k]
        "flip": 2 * (beta_moment(a, b, 1) - beta_moment(a, b, 2)),  # 2 E[p (1 - p)]
    }[what[:5] if what != "flip" else "flip"]
    rng = np.random.default_rng(7)
    hits, reps = 0, 300
    for _ in range(reps):
        c = rng.binomial(n, rng.beta(a, b, size=tasks)).tolist()
        if what == "flip":
            e = flip_rate_estimate(c, n, rng=rng)
        elif what.startswith("pass^"):
            e = pass_hat_k_estimate(c, n, k, rng=rng)
        else:
            e = pass_at_k_curve(c, n, rng=rng)[k]
        hits += e.low <= truth <= e.high
    assert 0.90 <= hits / reps <= most


def test_min_detectable_difference_by_hand() -> None:
    z = 1.959964 + 0.841621  # z_{0.975} + z_{0.8}
    # p = 0.5, between-task variance 0.1: trial noise 0.15 / K
    assert min_detectable_difference(
        50, 4, success_rate=0.5, between_task_var=0.1
    ) == pytest.approx(z * math.sqrt(2 * (0.1 + 0.15 / 4) / 50), rel=1e-5)
    # all-or-nothing tasks (the default worst case): trials do not help
    one = min_detectable_difference(50, 1, success_rate=0.5)
    eight = min_detectable_difference(50, 8, success_rate=0.5)
    assert one == pytest.approx(eight) == pytest.approx(z * math.sqrt(0.5 / 50), rel=1e-5)
    # agents that agree on which tasks are hard need a smaller difference
    assert min_detectable_difference(
        50, 4, success_rate=0.5, between_task_var=0.1, correlation=0.8
    ) == pytest.approx(z * math.sqrt(2 * (0.02 + 0.15 / 4) / 50), rel=1e-5)
    with pytest.raises(ValueError, match="between_task_var"):
        min_detectable_difference(10, 2, success_rate=0.9, between_task_var=0.2)
    # an agent that never succeeds: the variance is taken at the alternative 0 + MDD, so
    # MDD = z sqrt(2 MDD (1 - MDD) / 50), i.e. MDD = c / (1 + c) with c = 2 z^2 / 50
    c = 2 * z * z / 50
    for rate in (0.0, 1.0):
        mdd = min_detectable_difference(50, 3, success_rate=rate)
        assert mdd == pytest.approx(c / (1 + c), rel=1e-5)
    # over 8 items that alternative would pass 1/2, where the variance is largest: 1/4
    assert min_detectable_difference(8, 3, success_rate=0.0) == pytest.approx(
        z * math.sqrt(2 * 0.25 / 8), rel=1e-5
    )


def test_the_variance_behind_the_mdd_matches_simulated_agents() -> None:
    """Two independent agents, per-task p ~ Beta(0.75, 0.75) (mean 0.5, variance 0.1), 4
    trials: the per-task difference of observed rates varies by 2 (0.1 + 0.15 / 4), the
    variance the MDD uses; between_task_variance recovers 0.1 from the counts."""
    rng = np.random.default_rng(3)
    tasks, n = 200_000, 4
    ca = rng.binomial(n, rng.beta(0.75, 0.75, size=tasks))
    cb = rng.binomial(n, rng.beta(0.75, 0.75, size=tasks))
    var = float(np.var(ca / n - cb / n))
    assert var == pytest.approx(2 * (0.1 + 0.15 / n), rel=0.02)
    assert between_task_variance(ca.tolist(), n) == pytest.approx(0.1, abs=0.004)
    assert math.isnan(between_task_variance([1, 0], 1))  # one trial cannot tell


def test_mean_over_items_stays_in_range_and_has_width_at_the_ends() -> None:
    from calipers.stats import mean_over_items, wilson

    rng = np.random.default_rng(0)
    none = mean_over_items([0.0] * 30, rng)
    ref = wilson(0, 30)  # 30 items, none ever right: the textbook Wilson bound over items
    assert (none.low, none.high) == pytest.approx((ref.low, ref.high))
    assert none.high > 0.1
    rare = mean_over_items([0.5] + [0.0] * 29, rng)  # 1 of 60 replies right, on one item
    assert 0.0 <= rare.low <= rare.value <= rare.high <= 1.0 and rare.high > 0.05
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mean_over_items([1.5, 0.0], rng)
