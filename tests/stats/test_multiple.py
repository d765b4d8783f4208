"""Holm and Benjamini-Hochberg adjusted p-values against a hand-worked example."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pytest

from calipers.stats import adjust

P = [0.01, 0.04, 0.03, 0.005]


def test_holm_by_hand() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    assert adjust(P) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(P, method="holm") == adjust(P)


def test_benjamini_hochberg_by_hand() -> None:
    # sorted p(i) * 4 / i: 0.02, 0.02, 0.04, 0.04 -> running min from the top keeps them
    assert adjust(P, method="bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_nan_passes_through_and_is_not_counted() -> None:
    # two tested p-values: Holm multiplies the smaller by 2, the larger by 1
    out = adjust([0.01, math.nan, 0.04])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)
    assert all(math.isnan(v) for v in adjust([math.nan, math.nan], method="bh"))
    assert adjust([]) == []


def test_adjusted_values_are_capped_at_one() -> None:
    assert adjust([0.6, 0.7, 0.9]) == pytest.approx([1.0, 1.0, 1.0])


def test_bad_input_raises() -> None:
    bad: Any = "bonferroni"
    with pytest.raises(ValueError):
        adjust(P, method=bad)
    with pytest.raises(ValueError):
        adjust([0.5, 1.2])


def test_adjust_agrees_with_statsmodels_on_random_p_values() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 17, 60):
        p = rng.uniform(size=m) ** 3
        p[rng.integers(0, m)] = p[0]  # a tie
        pairs: tuple[tuple[Literal["holm", "bh"], str], ...] = (("holm", "holm"), ("bh", "fdr_bh"))
        for ours, theirs in pairs:
            assert adjust(p, method=ours) == pytest.approx(
                list(multipletests(p, method=theirs)[1]), abs=1e-12
            )
