"""The knee of a fill curve: exact recovery, agreement with an independent OLS, input checks,
and the issue's simulation requirements (planted knee covered, straight lines not flagged)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
import statsmodels.api as sm
from scipy.stats import norm

from calipers.stats import Knee, knee

LEVELS = np.array([0.10, 0.25, 0.50, 0.60, 0.75, 0.90])
Floats = npt.NDArray[np.float64]


def test_noiseless_hinge_recovers_knee_and_slopes_exactly() -> None:
    x = np.linspace(0.0, 1.0, 41)
    y = 1.0 + 0.5 * x - 2.0 * np.maximum(0.0, x - 0.37)
    r = knee(x, y, rng=np.random.default_rng(0), n_resamples=200)
    assert r.knee.value == pytest.approx(0.37, abs=1e-6)
    assert r.slope_before.value == pytest.approx(0.5, abs=1e-6)
    assert r.slope_after.value == pytest.approx(-1.5, abs=1e-6)
    assert r.slope_change.value == pytest.approx(-2.0, abs=1e-6)
    assert r.intercept == pytest.approx(1.0, abs=1e-6)
    assert r.p_value == pytest.approx(1 / 201)
    assert r.verdict == "accelerates beyond 37%"
    assert r.knee.method == "bootstrap-percentile"


def _noisy(seed: int) -> tuple[Floats, Floats]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, 300)
    y = 0.8 - 0.1 * x - 0.9 * np.maximum(0.0, x - 0.55) + rng.normal(0.0, 0.1, 300)
    return x, y


def _sm_fit(x: Floats, y: Floats, k: float) -> tuple[Floats, float]:
    res = sm.OLS(y, np.column_stack([np.ones_like(x), x, np.maximum(0.0, x - k)])).fit()
    return np.asarray(res.params), float(res.ssr)


def test_fit_equals_statsmodels_at_the_knee_and_beats_a_brute_force_grid() -> None:
    x, y = _noisy(3)
    r = knee(x, y, rng=np.random.default_rng(1), n_resamples=100)
    params, ssr = _sm_fit(x, y, r.knee.value)
    assert r.intercept == pytest.approx(params[0], abs=1e-8)
    assert r.slope_before.value == pytest.approx(params[1], abs=1e-8)
    assert r.slope_change.value == pytest.approx(params[2], abs=1e-8)
    assert r.sse == pytest.approx(ssr, abs=1e-8)
    # Brute force, independently: statsmodels at 2,000 breakpoints between the 2nd lowest
    # and 2nd highest x. The profiled minimum can only be at or below the best of them.
    xs = np.unique(x)
    ks = np.linspace(xs[1], xs[-2], 2002)[1:-1]
    sse = np.array([_sm_fit(x, y, float(k))[1] for k in ks])
    assert r.sse <= sse.min() + 1e-10
    assert abs(r.knee.value - ks[int(np.argmin(sse))]) <= 2 * (ks[1] - ks[0])


def test_rising_curve_is_not_acceleration_when_worse_is_down() -> None:
    x = np.repeat(LEVELS, 50)
    y = 0.2 + 0.1 * x + 1.0 * np.maximum(0.0, x - 0.5)
    y = y + np.random.default_rng(2).normal(0.0, 0.05, x.size)
    down = knee(x, y, rng=np.random.default_rng(3), n_resamples=300)
    up = knee(x, y, rng=np.random.default_rng(3), n_resamples=300, worse="up")
    assert down.p_value < 0.01
    assert down.verdict.startswith("the slope changes at ") and not down.accelerates
    assert up.verdict.startswith("accelerates beyond ")
    # two distinct levels on each side: the knee lies strictly inside (0.25, 0.75)
    assert 0.25 < up.knee.low <= up.knee.value <= up.knee.high < 0.75


@pytest.mark.parametrize(
    ("x", "y", "kwargs", "match"),
    [
        ([0.1, 0.2, 0.3], [1.0, 0.0], {}, "same length"),
        ([0.1, 0.2, 0.3, 0.4], [1.0, float("nan"), 0.0, 1.0], {}, "finite"),
        ([0.1, 0.2, 0.3, 0.1, 0.2, 0.3], [1.0, 0, 1, 0, 1, 0], {}, "at least 4 distinct x"),
        ([0.1, 0.2, 0.3, 0.4, 0.5], [1.0, 0, 1, 0, 1], {"clusters": ["a"]}, "one label per"),
        ([0.1, 0.2, 0.3, 0.4, 0.5], [1.0, 0, 1, 0, 1], {"worse": "left"}, "worse"),
        ([0.1, 0.2, 0.3, 0.4, 0.5], [1.0, 0, 1, 0, 1], {"grid": [0.05]}, "strictly inside"),
        ([0.1, 0.2, 0.3, 0.4, 0.5], [1.0, 0, 1, 0, 1], {"confidence": 1.0}, "confidence"),
    ],
)
def test_bad_input_raises_a_clear_value_error(
    x: list[float], y: list[float], kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        knee(x, y, rng=np.random.default_rng(0), **kwargs)  # type: ignore[arg-type]


def _fill_sweep(rng: np.random.Generator, planted: bool) -> tuple[Floats, Floats, list[int]]:
    """100 questions x 6 fill levels, 0/1 outcomes. Planted: accuracy 0.80 - 0.05x, dropping
    1.5 per unit of fill beyond 0.6. Straight: 0.85 - 0.5x. Outcomes of one question are
    correlated (Gaussian copula, rho = 0.5); each cell's marginal accuracy is exact."""
    if planted:
        p = 0.80 - 0.05 * LEVELS - 1.5 * np.maximum(0.0, LEVELS - 0.6)
    else:
        p = 0.85 - 0.5 * LEVELS
    n_q, rho = 100, 0.5
    z = rho * rng.standard_normal((n_q, 1)) + np.sqrt(1 - rho**2) * rng.standard_normal(
        (n_q, LEVELS.size)
    )
    y = (norm.cdf(z) < p).astype(np.float64)
    x = np.broadcast_to(LEVELS, y.shape).ravel()
    return x, y.ravel(), np.repeat(np.arange(n_q), LEVELS.size).tolist()


def _simulate(n_sims: int, seed: int) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    covered = flagged = 0
    for _ in range(n_sims):
        x, y, q = _fill_sweep(rng, planted=True)
        r: Knee = knee(x, y, clusters=q, rng=rng)
        covered += r.knee.low <= 0.6 <= r.knee.high
        x, y, q = _fill_sweep(rng, planted=False)
        flagged += knee(x, y, clusters=q, rng=rng).accelerates
    return covered, flagged


def test_simulation_small_planted_knee_covered_and_lines_not_flagged() -> None:
    # 40 simulations (a few seconds). Bounds loosened for n = 40: at the measured 94.5%
    # coverage, 9+ misses out of 40 has probability < 0.1%; 4 false flags out of 40 is 10%.
    covered, flagged = _simulate(40, seed=11)
    assert covered >= 32
    assert flagged <= 4


@pytest.mark.slow
def test_simulation_full_size_meets_the_issue_bounds() -> None:
    # The issue's requirement: >= 90% of 200 covered, <= 5% of straight lines flagged.
    covered, flagged = _simulate(200, seed=12)
    assert covered >= 180
    assert flagged <= 10


def test_a_curve_that_rises_then_levels_off_is_not_acceleration() -> None:
    """The slope falls after the knee (the "worse" direction for a correct rate), but the curve
    never degrades: SmolLM2's fill curve looked like this."""
    x = np.repeat(LEVELS, 100)
    y = np.where(x < 0.4, 0.2 + 0.8 * x, 0.52)
    y = y + np.random.default_rng(4).normal(0.0, 0.05, x.size)
    r = knee(x, y, rng=np.random.default_rng(5), n_resamples=300)
    assert r.p_value < 0.01 and r.slope_change.value < 0 and r.slope_after.value > -0.05
    assert not r.accelerates
    assert r.verdict.startswith("the slope changes at ")
