"""Sample size and minimum detectable effect against hand-worked Miller (2024) values."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from calipers.stats import mde_paired, sample_size_paired, unpaired_sample_size

# z_{0.975} + z_{0.80} = 1.959964 + 0.841621, squared: worked out once by hand from tables.
Z2 = (1.959963985 + 0.841621234) ** 2


def test_paired_sample_size_matches_the_miller_formula_by_hand() -> None:
    # p_a = 0.70, p_b = 0.73, r = 0.5:
    # var = 0.21 + 0.1971 - 2 * 0.5 * sqrt(0.21 * 0.1971) = 0.4071 - 0.2034478 = 0.2036522
    var = 0.4071 - math.sqrt(0.21 * 0.1971)
    assert var == pytest.approx(0.2036522, abs=1e-7)
    # n = 7.848880 * 0.2036522 / 0.0009 = 1776.05 -> 1777
    assert Z2 * var / 0.03**2 == pytest.approx(1776.05, abs=0.01)
    assert sample_size_paired(0.03, baseline_acc=0.7, correlation=0.5) == 1777
    # a negative delta is the same question the other way round
    assert sample_size_paired(-0.03, baseline_acc=0.73, correlation=0.5) == 1777


def test_unpaired_needs_about_twice_as_many_items_at_r_one_half() -> None:
    # var = 0.21 + 0.1971 = 0.4071; n = 7.848880 * 0.4071 / 0.0009 = 3550.3 -> 3551
    assert unpaired_sample_size(0.03, baseline_acc=0.7) == 3551
    assert sample_size_paired(0.03, baseline_acc=0.7, correlation=0.0) == 3551
    for r in (0.1, 0.3, 0.6, 0.9):
        assert sample_size_paired(0.03, baseline_acc=0.7, correlation=r) < 3551


def test_var_diff_and_design_effect() -> None:
    # var 0.25, delta 0.1: 7.848880 * 25 = 196.22 -> 197
    assert sample_size_paired(0.1, var_diff=0.25) == 197
    # clustered, m = 5 items per cluster, ICC 0.1: design effect 1.4; 1776.05 * 1.4 = 2486.5
    n = sample_size_paired(
        0.03, baseline_acc=0.7, correlation=0.5, clusters_icc=0.1, cluster_size=5
    )
    assert n == 2487


def test_perfect_correlation_cannot_beat_the_binary_floor() -> None:
    # Two 0/1 scores 3 points apart disagree on at least 3% of items:
    # var >= 0.03 * 0.97 = 0.0291; 7.848880 * 0.0291 / 0.0009 = 253.78 -> 254, not 2 items.
    assert sample_size_paired(0.03, baseline_acc=0.7, correlation=1.0) == 254


@pytest.mark.parametrize("delta,var", [(0.01, 0.05), (0.03, 0.2), (0.1, 0.9), (0.5, 1.3)])
def test_mde_inverts_sample_size(delta: float, var: float) -> None:
    n = sample_size_paired(delta, var_diff=var)
    assert mde_paired(n, var_diff=var) <= delta < mde_paired(n - 1, var_diff=var)


def test_mde_binary_uses_discordance_and_never_goes_below_the_floor() -> None:
    # n = 200, 10% discordant: 2.801585 * sqrt(0.1 / 200) = 0.0626453
    assert mde_paired(200, p_discordant=0.1) == pytest.approx(0.0626453, rel=1e-5)
    # no disagreement seen: the floor (z + z)^2 / n = 7.848880 / 200
    assert mde_paired(200, p_discordant=0.0) == pytest.approx(7.848880 / 200, rel=1e-6)
    # continuous: sd 0.3, n 100
    assert mde_paired(100, var_diff=0.09) == pytest.approx(2.801585 * 0.03, rel=1e-6)
    # a stricter alpha or more power needs a bigger difference
    assert mde_paired(100, var_diff=0.09, alpha=0.01) > mde_paired(100, var_diff=0.09)
    assert mde_paired(100, var_diff=0.09, power=0.9) > mde_paired(100, var_diff=0.09)


@pytest.mark.parametrize(
    "call",
    [
        lambda: sample_size_paired(0.0, baseline_acc=0.5),
        lambda: sample_size_paired(math.nan, baseline_acc=0.5),
        lambda: sample_size_paired(0.05),
        lambda: sample_size_paired(0.05, baseline_acc=0.98),
        lambda: sample_size_paired(0.05, baseline_acc=0.5, correlation=1.5),
        lambda: sample_size_paired(0.05, baseline_acc=0.5, var_diff=0.2),
        lambda: sample_size_paired(0.05, var_diff=-1.0),
        lambda: sample_size_paired(0.05, var_diff=0.2, clusters_icc=0.1),
        lambda: sample_size_paired(0.05, var_diff=0.2, clusters_icc=1.1, cluster_size=3),
        lambda: sample_size_paired(0.05, var_diff=0.2, clusters_icc=0.1, cluster_size=0.5),
        lambda: sample_size_paired(0.05, var_diff=0.2, alpha=0.0),
        lambda: sample_size_paired(0.05, var_diff=0.2, power=1.0),
        lambda: unpaired_sample_size(0.05, baseline_acc=-0.1),
        lambda: mde_paired(0, var_diff=1.0),
        lambda: mde_paired(10),
        lambda: mde_paired(10, var_diff=1.0, p_discordant=0.1),
        lambda: mde_paired(10, p_discordant=1.5),
        lambda: mde_paired(10, var_diff=math.inf),
    ],
)
def test_bad_inputs_raise_value_error(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        call()
