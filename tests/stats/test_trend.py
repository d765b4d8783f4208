"""Cochran–Armitage trend test against a textbook figure and a hand calculation."""

from __future__ import annotations

import math

import pytest

from calipers.stats import cochran_armitage


def test_agresti_alcohol_and_malformation() -> None:
    """Agresti (2002) Categorical Data Analysis, Table 2.7 / §3.4.6: malformation by the
    mother's alcohol consumption, scores 0, 0.5, 1.5, 4, 7; M² = (N − 1) r² = 6.57, P = 0.01.
    The Cochran–Armitage statistic is M² with N in place of N − 1."""
    present = [48, 38, 5, 1, 1]
    absent = [17066, 14464, 788, 126, 37]
    totals = [p + a for p, a in zip(present, absent, strict=True)]
    t = cochran_armitage(present, totals, [0, 0.5, 1.5, 4.0, 7.0])
    n = sum(totals)
    assert t.n == n == 32574
    assert round(t.chi2 * (n - 1) / n, 2) == 6.57
    assert t.z > 0 and t.p_value == pytest.approx(0.0104, abs=5e-4)


def test_a_small_table_by_hand() -> None:
    """Scores 0, 1, 2; 10 trials each; 2, 5, 8 successes. p = 0.5, mean score 1,
    Σ n (s − s̄)² = 20, T = 2·(−1) + 5·0 + 8·1 = 6, z = 6 / √(0.25 · 20) = 6/√5;
    slope T / 20 = 0.3 per unit (the rate goes 0.2, 0.5, 0.8)."""
    t = cochran_armitage([2, 5, 8], [10, 10, 10], [0, 1, 2])
    assert t.z == pytest.approx(6 / math.sqrt(5))
    assert t.chi2 == pytest.approx(7.2)
    assert t.slope.value == pytest.approx(0.3)
    se = math.sqrt(0.25 / 20)
    assert t.slope.high - t.slope.value == pytest.approx(1.959964 * se, rel=1e-5)


def test_no_trend_and_degenerate_tables() -> None:
    flat = cochran_armitage([3, 3, 3], [10, 10, 10], [1, 3, 5])
    assert flat.z == 0.0 and flat.p_value == 1.0
    assert math.isnan(cochran_armitage([10, 10], [10, 10], [1, 2]).p_value)  # no variation
    one = cochran_armitage([3, 0], [10, 0], [1, 2])  # one level with trials
    assert math.isnan(one.z) and one.n == 10
    with pytest.raises(ValueError, match="successes <= totals"):
        cochran_armitage([11], [10], [1])
