"""Bradley-Terry / Davidson ratings, checked against fits written here another way."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from scipy import optimize
from statsmodels.discrete.discrete_model import Logit
from statsmodels.stats.proportion import proportion_confint

from calipers.stats import BradleyTerry, bradley_terry

Array = npt.NDArray[np.float64]
Battle = tuple[str, str, str]


def _simulate(theta: Array, nu: float, n: int, rng: np.random.Generator) -> list[Battle]:
    """``n`` battles between random pairs drawn from Davidson's model."""
    k = theta.size
    i = rng.integers(0, k, n)
    j = (i + rng.integers(1, k, n)) % k
    pi, pj = np.exp(theta[i]), np.exp(theta[j])
    tie = nu * np.sqrt(pi * pj)
    u = rng.random(n) * (pi + pj + tie)
    outcome = np.where(u < pi, "a", np.where(u < pi + pj, "b", "tie"))
    return [(f"m{a}", f"m{b}", str(o)) for a, b, o in zip(i, j, outcome, strict=True)]


def _theta(result: BradleyTerry) -> Array:
    """Log-strengths in model-index order (names are m0, m1, ...)."""
    by_name = {m.name: m.log_strength.value for m in result.models}
    return np.array([by_name[f"m{k}"] for k in range(len(by_name))])


def test_without_ties_equals_logistic_regression_on_the_pm1_design() -> None:
    theta = np.array([-0.8, -0.2, 0.1, 0.3, 0.6])
    battles = _simulate(theta, 0.0, 1500, np.random.default_rng(1))
    design = np.zeros((len(battles), theta.size))
    y = np.zeros(len(battles))
    for row, (a, b, outcome) in enumerate(battles):
        design[row, int(a[1:])], design[row, int(b[1:])] = 1.0, -1.0
        y[row] = outcome == "a"
    # No intercept; model 0 is the reference (its column dropped), then centre.
    fit = Logit(y, design[:, 1:]).fit(disp=0, tol=1e-12, maxiter=100)
    expected = np.concatenate([[0.0], fit.params])
    expected -= expected.mean()
    result = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=50, prior=0.0)
    np.testing.assert_allclose(_theta(result), expected, atol=1e-7)
    assert result.tie.value == 0.0 and result.tie.method == "no ties observed"
    assert "no ties" in result.method and result.mle_exists and result.note is None


def _davidson_nll(params: Array, i: Array, j: Array, outcome: Array) -> float:
    """Per battle, strengths as raw positive numbers with model 0 fixed at 1, nu = params[-1]."""
    pi = np.concatenate([[1.0], params[:-1]])
    nu = params[-1]
    a, b = pi[i], pi[j]
    tie = nu * np.sqrt(a * b)
    d = a + b + tie
    p = np.where(outcome == 0, a / d, np.where(outcome == 1, b / d, tie / d))
    return float(-np.log(p).sum())


def test_with_ties_equals_a_direct_scipy_fit_of_davidsons_likelihood() -> None:
    theta = np.array([-0.5, 0.0, 0.2, 0.7])
    battles = _simulate(theta, 0.6, 2000, np.random.default_rng(2))
    i = np.array([int(a[1:]) for a, _, _ in battles])
    j = np.array([int(b[1:]) for _, b, _ in battles])
    outcome = np.array([{"a": 0, "b": 1, "tie": 2}[o] for _, _, o in battles])
    res = optimize.minimize(
        _davidson_nll,
        np.ones(theta.size),
        args=(i, j, outcome),
        method="L-BFGS-B",
        bounds=[(1e-6, None)] * theta.size,
        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 1000},
    )
    log_pi = np.log(np.concatenate([[1.0], res.x[:-1]]))
    result = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=50, prior=0.0)
    np.testing.assert_allclose(_theta(result), log_pi - log_pi.mean(), atol=2e-5)
    assert result.tie.value == pytest.approx(res.x[-1], rel=1e-4)
    assert "Davidson" in result.method


def test_counts_mapping_gives_the_same_fit_as_the_battles() -> None:
    battles = _simulate(np.array([0.0, 0.4, -0.4]), 0.3, 600, np.random.default_rng(3))
    counts: dict[tuple[str, str], list[int]] = {}
    for a, b, o in battles:  # keyed in the order first seen, both orders possible
        key, flip = ((a, b), False) if (b, a) not in counts else ((b, a), True)
        cell = counts.setdefault(key, [0, 0, 0])
        col = {"a": 0, "b": 1, "tie": 2}[o]
        cell[(1 - col) if flip and col < 2 else col] += 1
    as_tuples = {k: (v[0], v[1], v[2]) for k, v in counts.items()}
    one = bradley_terry(battles, rng=np.random.default_rng(5), n_resamples=200)
    two = bradley_terry(as_tuples, rng=np.random.default_rng(5), n_resamples=200)
    assert one == two


def test_recovers_known_strengths_and_ranks_on_a_synthetic_tournament() -> None:
    theta = np.array([-1.5, -0.9, -0.4, 0.0, 0.3, 0.8, 1.2, 1.6])
    theta -= theta.mean()
    battles = _simulate(theta, 0.4, 20_000, np.random.default_rng(4))
    result = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=300)
    np.testing.assert_allclose(_theta(result), theta, atol=0.08)
    assert result.tie.value == pytest.approx(0.4, abs=0.03)
    assert [m.name for m in result.models] == [f"m{k}" for k in range(7, -1, -1)]
    # Gaps of 0.3 or more on 20,000 battles: every rank is pinned.
    assert [(m.rank, m.rank_low, m.rank_high) for m in result.models] == [
        (r, r, r) for r in range(1, 9)
    ]
    top = result.models[0]
    assert top.elo.value == pytest.approx(1000 + 400 / math.log(10) * top.log_strength.value)
    assert (
        top.n == top.wins + top.losses + top.ties == sum(1 for a, b, _ in battles if "m7" in (a, b))
    )
    assert result.n == 20_000


def test_close_models_share_rank_intervals() -> None:
    theta = np.array([0.0, 0.02, 1.0])
    battles = _simulate(theta, 0.0, 3000, np.random.default_rng(6))
    result = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=400)
    rows = {m.name: (m.rank_low, m.rank_high) for m in result.models}
    assert rows == {"m2": (1, 1), "m1": (2, 3), "m0": (2, 3)}


def test_pair_records_hold_counts_and_wilson_intervals() -> None:
    battles = [("x", "y", "a")] * 7 + [("y", "x", "a")] * 3 + [("x", "y", "tie")] * 2
    battles += [("y", "z", "a")] * 4 + [("z", "y", "a")] * 4 + [("x", "z", "b")] * 2
    battles += [("z", "x", "b")] * 3
    result = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=100)
    xy = next(p for p in result.pairs if {p.model_a, p.model_b} == {"x", "y"})
    assert (xy.model_a, xy.model_b, xy.wins_a, xy.wins_b, xy.ties) == ("x", "y", 7, 3, 2)
    low, high = proportion_confint(7, 10, alpha=0.05, method="wilson")
    assert (xy.win_rate.value, xy.win_rate.low, xy.win_rate.high) == pytest.approx((0.7, low, high))
    low, high = proportion_confint(2, 12, alpha=0.05, method="wilson")
    assert (xy.tie_rate.low, xy.tie_rate.high) == pytest.approx((low, high))
    x = next(m for m in result.models if m.name == "x")
    assert (x.wins, x.losses, x.ties) == (10, 5, 2)


def _coverage(reps: int, n_battles: int, n_resamples: int, seed: int) -> float:
    theta = np.array([-0.6, -0.2, 0.1, 0.3, 0.4])
    theta -= theta.mean()
    rng = np.random.default_rng(seed)
    hits = []
    for _ in range(reps):
        result = bradley_terry(
            _simulate(theta, 0.5, n_battles, rng), rng=rng, n_resamples=n_resamples
        )
        by_name = {m.name: m.log_strength for m in result.models}
        for k, t in enumerate(theta):
            est = by_name[f"m{k}"]
            hits.append(est.low <= t <= est.high)
    return float(np.mean(hits))


def test_bootstrap_intervals_cover_the_true_ratings_small() -> None:
    # 60 tournaments x 5 models = 300 intervals: loose bounds around 95%.
    assert 0.88 <= _coverage(60, 1000, 200, seed=7) <= 0.995


@pytest.mark.slow
def test_bootstrap_intervals_cover_the_true_ratings_full() -> None:
    # 1,000 tournaments x 5 models; the binomial standard error of 5,000 pooled is ~0.3%.
    coverage = _coverage(1000, 1000, 1000, seed=8)
    assert 0.93 <= coverage <= 0.97, coverage


def test_disconnected_comparison_graph_names_the_components() -> None:
    battles = [("a", "b", "a"), ("b", "a", "a"), ("c", "d", "tie"), ("d", "c", "a")]
    with pytest.raises(ValueError, match=r"disconnected.*\{a, b\}; \{c, d\}"):
        bradley_terry(battles, rng=np.random.default_rng(0))


def test_a_model_that_never_lost_is_finite_under_the_prior_and_flagged() -> None:
    battles = [("a", "b", "a"), ("b", "a", "a"), ("a", "b", "tie"), ("b", "c", "a")] * 5
    battles += [("c", "b", "a")] * 5 + [("top", x, "a") for x in "abc"] * 4
    result = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=200)
    top = result.models[0]
    assert top.name == "top" and top.unbounded and math.isfinite(top.log_strength.value)
    assert (top.rank, top.rank_low, top.rank_high) == (1, 1, 1)
    assert not any(m.unbounded for m in result.models[1:])
    assert not result.mle_exists
    assert result.note is not None and "{top}" in result.note
    # A stronger prior pulls it in: the rating is the prior's, not the data's.
    firmer = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=50, prior=1.0)
    assert firmer.models[0].log_strength.value < top.log_strength.value
    with pytest.raises(ValueError, match=r"infinite.*\{top\}.*prior > 0"):
        bradley_terry(battles, rng=np.random.default_rng(0), prior=0.0)


def test_a_model_that_never_won_but_tied_is_bounded() -> None:
    battles = [("a", "b", "a"), ("b", "a", "a"), ("c", "a", "tie"), ("c", "b", "b")] * 3
    result = bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=50, prior=0.0)
    c = next(m for m in result.models if m.name == "c")
    assert (c.wins, c.ties) == (0, 3) and not c.unbounded and result.mle_exists


@pytest.mark.parametrize(
    ("battles", "message"),
    [
        ([("a", "b", "tie"), ("b", "a", "tie")], "every battle is a tie"),
        ([("a", "a", "a")], "cannot battle itself"),
        ([("a", "b", "left")], "outcome must be"),
        ([("a", "b", "a")][:0], "at least two models"),
    ],
)
def test_bad_input_raises(battles: list[Battle], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bradley_terry(battles, rng=np.random.default_rng(0))


def test_bad_parameters_raise() -> None:
    battles = [("a", "b", "a"), ("b", "a", "a")]
    with pytest.raises(ValueError, match="n_resamples"):
        bradley_terry(battles, rng=np.random.default_rng(0), n_resamples=0)
    with pytest.raises(ValueError, match="prior"):
        bradley_terry(battles, rng=np.random.default_rng(0), prior=-1.0)
    with pytest.raises(ValueError, match="confidence"):
        bradley_terry(battles, rng=np.random.default_rng(0), confidence=1.5)
