"""The changepoint scan (calipers.stats.changepoints): hand-worked statistics, the false-alarm
rate on flat series (binomial bound), and power and location on a planted drop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calipers.stats import change_scan, changepoints, scan_statistics, wilson

ALPHA = 0.05
Z95 = stats.norm.ppf(0.975)


def _wilson_se(k: int, n: int) -> float:
    """A run's standard error as the analysis derives it: the Wilson interval's half-width / z."""
    w = wilson(k, n)
    return float((w.high - w.low) / (2 * Z95))


def test_scan_statistics_by_hand() -> None:
    # y = (1, 1, 0), every s = 1: split after 1: means 1 | 0.5, var 1 + 1/2 -> -0.5/sqrt(1.5);
    # after 2: means 1 | 0, var 1/2 + 1 -> -1/sqrt(1.5).
    z = scan_statistics([1.0, 1.0, 0.0], [1.0, 1.0, 1.0])
    assert z == pytest.approx([-0.5 / math.sqrt(1.5), -1 / math.sqrt(1.5)])
    # unequal errors: weights 4 and 1 on the left of (0.5, 0.3 | 0.1) with s = (0.5, 1, 1)
    w = np.array([4.0, 1.0, 1.0])
    left = (4 * 0.5 + 0.3) / 5
    expected = (0.1 - left) / math.sqrt(1 / 5 + 1 / 1)
    assert scan_statistics([0.5, 0.3, 0.1], list(1 / np.sqrt(w)))[1] == pytest.approx(expected)


def test_two_runs_is_the_two_sided_z_test() -> None:
    # 0.80 then 0.60, each with SE 0.05: z = -0.2 / sqrt(0.005) = -2.828, p = 2 Phi(-2.828)
    rng = np.random.default_rng(1)
    scan = change_scan([0.8, 0.6], [0.05, 0.05], rng, n_sim=39_999)
    exact = 2 * stats.norm.sf(0.2 / math.sqrt(0.005))
    assert exact == pytest.approx(0.004678, abs=1e-6)
    assert scan.statistic == pytest.approx(2.8284271, abs=1e-6)
    assert abs(scan.p_value - exact) < 4 * math.sqrt(exact * (1 - exact) / 39_999)
    seg = changepoints([0.8, 0.6], [0.05, 0.05], rng)
    (change,) = seg.changes
    assert change.index == 1 and change.shift.value == pytest.approx(-0.2)
    assert [g.mean.value for g in seg.segments] == pytest.approx([0.8, 0.6])


def test_segment_means_are_inverse_variance_means() -> None:
    y, s = [0.70, 0.72, 0.71, 0.50, 0.52], [0.01, 0.02, 0.01, 0.01, 0.02]
    seg = changepoints(y, s, np.random.default_rng(0))
    assert [c.index for c in seg.changes] == [3]
    w = 1 / np.array(s) ** 2
    before = float(np.dot(w[:3], y[:3]) / w[:3].sum())
    after = float(np.dot(w[3:], y[3:]) / w[3:].sum())
    assert seg.segments[0].mean.value == pytest.approx(before)
    assert seg.segments[1].mean.value == pytest.approx(after)
    half = Z95 / math.sqrt(w[:3].sum())
    assert seg.segments[0].mean.high - before == pytest.approx(half)
    assert seg.changes[0].shift.value == pytest.approx(after - before)
    assert seg.changes[0].shift.low < after - before < seg.changes[0].shift.high


def _bound(trials: int) -> int:
    """The most false alarms a test at level ALPHA gives in ``trials`` flat series, but for
    a 1-in-1000 chance: above it, the rate is above ALPHA."""
    return int(stats.binom.ppf(0.999, trials, ALPHA))


def test_false_alarms_on_flat_binomial_series_stay_under_alpha() -> None:
    """1000 flat series of 2-30 runs, each run a binomial rate with its own n (50-400) and
    its Wilson interval, at rates from 0.2 to 0.9: series with any change found."""
    rng = np.random.default_rng(2026)
    alarms = 0
    for _ in range(1000):
        t, p = int(rng.integers(2, 31)), float(rng.uniform(0.2, 0.9))
        ns = rng.integers(50, 401, size=t)
        ks = rng.binomial(ns, p)
        ses = [_wilson_se(int(k), int(n)) for k, n in zip(ks, ns, strict=True)]
        seg = changepoints(ks / ns, ses, rng, alpha=ALPHA, n_sim=199, n_boot=99)
        alarms += bool(seg.changes)
    assert alarms <= _bound(1000)  # 65 of 1000


def test_false_alarms_on_flat_gaussian_series_stay_under_alpha() -> None:
    """Where the model holds exactly (normal estimates, known errors) the Monte Carlo test is
    exact: about ALPHA, never above it but for chance."""
    rng = np.random.default_rng(7)
    alarms = 0
    for _ in range(1000):
        t = int(rng.integers(2, 41))
        s = rng.uniform(0.01, 0.08, size=t)
        seg = changepoints(0.5 + rng.standard_normal(t) * s, s, rng, n_sim=199, n_boot=99)
        alarms += bool(seg.changes)
    assert alarms <= _bound(1000)
    assert alarms >= int(stats.binom.ppf(0.001, 1000, ALPHA))  # and not far below: exact


def test_a_planted_drop_is_found_where_it_is() -> None:
    """12 runs of n=300 at 75%, the last 3 at 67% (-8 points): power and location."""
    rng = np.random.default_rng(11)
    found = at = covered = 0
    reps = 300
    for _ in range(reps):
        rates = np.where(np.arange(12) < 9, 0.75, 0.67)
        ks = rng.binomial(300, rates)
        ses = [_wilson_se(int(k), 300) for k in ks]
        seg = changepoints(ks / 300, ses, rng, n_sim=199, n_boot=199)
        if seg.changes:
            found += 1
            first = seg.changes[0]
            at += first.index == 9
            covered += first.shift.low <= -0.08 <= first.shift.high
    power = found / reps
    # The oracle (split known, one-sided z at 2.5%) has power 1 - Phi(1.96 - 0.08/se_d):
    se_d = math.sqrt(0.75 * 0.25 / 300 / 9 + 0.67 * 0.33 / 300 / 3)
    oracle = stats.norm.sf(Z95 - 0.08 / se_d)
    assert oracle > 0.95
    assert power >= 0.85  # the scan pays for not knowing where: a little under the oracle
    assert at / found >= 0.8
    assert covered / found >= 0.85  # a 95% interval that re-locates the split


def test_a_drop_and_a_recovery_are_both_found() -> None:
    y = [0.8] * 5 + [0.6] * 4 + [0.8] * 5
    seg = changepoints(y, [0.02] * 14, np.random.default_rng(3))
    assert [c.index for c in seg.changes] == [5, 9]
    assert seg.changes[0].shift.value == pytest.approx(-0.2)
    assert seg.changes[1].level == pytest.approx(ALPHA / 2)  # a side of the first split


def test_bad_input_is_refused() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="positive"):
        changepoints([0.5, 0.6], [0.1, 0.0], rng)
    with pytest.raises(ValueError, match="same length"):
        changepoints([0.5, 0.6], [0.1], rng)
    with pytest.raises(ValueError, match="alpha"):
        changepoints([0.5, 0.6], [0.1, 0.1], rng, alpha=1.5)
    one = changepoints([0.5], [0.1], rng)
    assert one.changes == () and len(one.segments) == 1 and one.tests == ()
