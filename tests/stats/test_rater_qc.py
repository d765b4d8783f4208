"""Per-rater quality figures, the rusher / random-clicker rule by simulation, and the
inter-rater agreement reference values issue 18 names."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from calipers.stats import (
    first_flag,
    gold_accuracy,
    krippendorff_alpha,
    left_share,
    position_bias,
    rater_flag,
    self_consistency,
)

NAN = math.nan
K = 3  # answer choices in the simulated task


def wilson_ref(k: int, n: int) -> tuple[float, float]:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(low), float(high)


def test_gold_accuracy_and_self_consistency_by_hand() -> None:
    # 6 gold items, one skipped (None): 4 of the 5 answered match.
    est = gold_accuracy(["a", "b", None, "c", "a", "b"], ["a", "b", "c", "c", "a", "a"])
    assert (est.value, est.n, est.method) == (0.8, 5, "wilson")
    assert (est.low, est.high) == pytest.approx(wilson_ref(4, 5), abs=1e-12)
    # 7 planned repeats, one with a NaN answer: 5 of 6 gave the same label twice.
    rep = self_consistency([1, 2, 3, 4, 5, 1, 2], [1, 2, 3, 4, 4, NAN, 2])
    assert (rep.value, rep.n) == (5 / 6, 6)
    assert (rep.low, rep.high) == pytest.approx(wilson_ref(5, 6), abs=1e-12)
    with pytest.raises(ValueError, match="pair them"):
        gold_accuracy(["a"], ["a", "b"])
    assert gold_accuracy([None], ["a"]).is_empty


def test_left_share_is_position_bias_first_share() -> None:
    picks = [1, 1, 0, 1, 0.5, NAN, 1, 0]
    est = left_share(picks)
    assert (est.value, est.n) == (4 / 6, 6)  # the tie and the skip are left out
    assert est == position_bias(picks).first_share
    assert (est.low, est.high) == pytest.approx(wilson_ref(4, 6), abs=1e-12)


def test_planted_left_preference_is_recovered() -> None:
    # 400 pairwise items with the sides randomised; the rater picks left 60% of the time.
    # One fixed dataset, then 200: the interval excludes 0.5 in nearly all (power at 400
    # items is about 0.98) and covers the planted 0.6 about 95% of the time.
    rng = np.random.default_rng(12)
    est = left_share((rng.random(400) < 0.6).astype(float))
    assert est.low > 0.5 and est.low <= 0.6 <= est.high
    excluded = covered = 0
    for _ in range(200):
        e = left_share((rng.random(400) < 0.6).astype(float))
        excluded += e.low > 0.5
        covered += e.low <= 0.6 <= e.high
    assert excluded >= 190 and 180 <= covered <= 198
    fair = left_share((rng.random(400) < 0.5).astype(float))
    assert fair.low <= 0.5 <= fair.high


def test_rater_flag_rules_by_hand() -> None:
    # 10 items at 2 s, 5 of 10 agree: fast, and 0.5 < floor 2/3 -> fast-and-not-clearly-good;
    # Wilson upper of 5/10 is 0.763 > 2/3, so not clearly below the floor.
    v = rater_flag([2.0] * 10, [1, 0] * 5, n_choices=3)
    assert v.floor == pytest.approx(2 / 3) and v.too_fast and v.median_seconds == 2.0
    assert v.reasons == ("fast-and-not-clearly-good",) and v.flagged
    # Same answers at 20 s: not flagged. 2 of 20 at 20 s: Wilson upper 0.301 < 2/3.
    assert not rater_flag([20.0] * 10, [1, 0] * 5, n_choices=3).flagged
    slow_bad = rater_flag([20.0] * 20, [1, 1] + [0] * 18, n_choices=3)
    assert slow_bad.reasons == ("clearly-below-floor",)
    assert slow_bad.agreement.high == pytest.approx(wilson_ref(2, 20)[1])
    # A fast rater who agrees well is not flagged; nor anyone before min_items.
    assert not rater_flag([2.0] * 10, [1] * 9 + [0], n_choices=3).flagged
    assert not rater_flag([2.0] * 4, [0] * 4, n_choices=3).flagged
    assert first_flag([2.0] * 8, [0] * 8, n_choices=3) == 5
    assert first_flag([20.0] * 8, [1] * 8, n_choices=3) is None
    with pytest.raises(ValueError, match="floor"):
        rater_flag([1.0], [1], n_choices=2, floor=0.4)


def clicker(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform answers (agrees with the reference with chance 1/K), about 2 s per item."""
    return rng.normal(2.0, 0.3, n).clip(0.5), (rng.random(n) < 1 / K).astype(float)


def diligent(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Agrees with the reference 80% of the time, median 15 s per item (log-normal)."""
    return rng.lognormal(math.log(15.0), 0.6, n), (rng.random(n) < 0.8).astype(float)


def flag_rates(reps: int, seed: int, items: int = 20) -> tuple[float, float]:
    """Share of simulated clickers and of diligent raters flagged within ``items`` items."""
    rng = np.random.default_rng(seed)
    caught = sum(first_flag(*clicker(rng, items), n_choices=K) is not None for _ in range(reps))
    wrong = sum(first_flag(*diligent(rng, items), n_choices=K) is not None for _ in range(reps))
    return caught / reps, wrong / reps


def test_random_clicker_is_caught_and_diligent_rater_is_not() -> None:
    caught, wrong = flag_rates(150, seed=13)
    assert caught >= 0.95 and wrong <= 0.05


@pytest.mark.slow
def test_random_clicker_detection_rates_full() -> None:
    """1,000 runs of each, watched for 20 items after every item (measured: all clickers
    caught, about 1% of diligent raters flagged); over 100 items a diligent rater is
    flagged in about 1% of runs."""
    caught, wrong = flag_rates(1000, seed=14)
    assert caught >= 0.95 and wrong <= 0.05
    _, wrong_long = flag_rates(1000, seed=15, items=100)
    assert wrong_long <= 0.05


# --- inter-rater agreement: the reference values issue 18 names ----------------------------

# The `krippendorff` package's documented example: 3 coders x 15 units with gaps.
KD_EXAMPLE = [
    [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
    [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
    [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
]


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.691358), ("interval", 0.810845)])
def test_alpha_on_the_krippendorff_package_example(
    level: Literal["nominal", "interval"], published: float
) -> None:
    est = krippendorff_alpha(KD_EXAMPLE, level=level, rng=np.random.default_rng(0))
    assert est.value == pytest.approx(published, abs=5e-7)
    kd = pytest.importorskip("krippendorff")
    assert est.value == pytest.approx(
        kd.alpha(reliability_data=KD_EXAMPLE, level_of_measurement=level), abs=1e-12
    )
    # The bootstrap interval over units is there, around the value, inside [-1, 1].
    assert est.method == "bootstrap-units-percentile" and est.n == 12
    assert -1.0 <= est.low < est.value < est.high <= 1.0
