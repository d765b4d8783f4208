"""Bradley-Terry with Davidson ties on synthetic tournaments from planted strengths: calipers
recovers the planted order, and its fit equals an independent maximum-likelihood fit written
here with scipy.optimize.minimize."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from scipy.optimize import minimize

from calipers.stats import bradley_terry

PLANTED = {"m0": 1.2, "m1": 0.6, "m2": 0.1, "m3": -0.4, "m4": -1.5}
NU = 0.6  # Davidson's tie parameter


def tournament(per_pair: int, seed: int) -> list[tuple[str, str, str]]:
    """Every pair plays ``per_pair`` games under Davidson's model, which model is a drawn."""
    rng = np.random.default_rng(seed)
    names = list(PLANTED)
    out = []
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            px, py = math.exp(PLANTED[x]), math.exp(PLANTED[y])
            tie = NU * math.sqrt(px * py)
            probs = np.array([px, py, tie]) / (px + py + tie)
            for k in rng.choice(3, size=per_pair, p=probs):
                a, b = (x, y) if rng.integers(2) else (y, x)
                winner = (x, y, None)[k]
                out.append((a, b, "tie" if winner is None else ("a" if winner == a else "b")))
    return out


def scipy_fit(battles: list[tuple[str, str, str]]) -> tuple[dict[str, float], float]:
    """Davidson MLE: maximise sum of log P(outcome) over theta (centred) and log nu."""
    names = sorted({n for a, b, _ in battles for n in (a, b)})
    idx = {n: i for i, n in enumerate(names)}
    ia = np.array([idx[a] for a, _, _ in battles])
    ib = np.array([idx[b] for _, b, _ in battles])
    o = np.array([{"a": 0, "b": 1, "tie": 2}[w] for *_, w in battles])

    k = len(names)

    def nll(x: npt.NDArray[np.float64]) -> tuple[float, npt.NDArray[np.float64]]:
        """Minus the log-likelihood and its gradient (theta_k = -sum of the others)."""
        theta = np.append(x[: k - 1], -x[: k - 1].sum())
        ta, tb = theta[ia], theta[ib]
        tie = x[-1] + (ta + tb) / 2
        norm = np.logaddexp(np.logaddexp(ta, tb), tie)
        num = np.where(o == 0, ta, np.where(o == 1, tb, tie))
        pa, pb, pt = np.exp(ta - norm), np.exp(tb - norm), np.exp(tie - norm)
        da = (o == 0) + 0.5 * (o == 2) - (pa + 0.5 * pt)  # d log P / d theta_a
        db = (o == 1) + 0.5 * (o == 2) - (pb + 0.5 * pt)
        g_theta = np.bincount(ia, da, k) + np.bincount(ib, db, k)
        g = np.append(g_theta[: k - 1] - g_theta[k - 1], ((o == 2) - pt).sum())
        return float(-(num - norm).sum()), -g

    res = minimize(nll, np.zeros(k), jac=True, method="BFGS", options={"gtol": 1e-8})
    # BFGS may stop on "precision loss" near 1e-8; the optimum is where the gradient vanishes
    assert np.abs(res.jac).max() < 1e-4, res.message
    theta = np.append(res.x[:-1], -res.x[:-1].sum())
    return dict(zip(names, theta.tolist(), strict=True)), float(math.exp(res.x[-1]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bt_with_ties_recovers_the_planted_order_and_equals_a_scipy_mle(seed: int) -> None:
    battles = tournament(per_pair=150, seed=seed)
    fit = bradley_terry(battles, rng=np.random.default_rng(seed), n_resamples=200, prior=0.0)
    theta, nu = scipy_fit(battles)
    got = {m.name: m.log_strength.value for m in fit.models}
    for name in PLANTED:
        assert got[name] == pytest.approx(theta[name], abs=1e-4)
    assert fit.tie.value == pytest.approx(nu, rel=1e-4)
    # the planted order, strongest first, and each rating within 0.3 of its planted value
    assert [m.name for m in fit.models] == list(PLANTED)
    mean = sum(PLANTED.values()) / len(PLANTED)
    for m in fit.models:
        assert abs(m.log_strength.value - (PLANTED[m.name] - mean)) < 0.3
        assert m.log_strength.low <= m.log_strength.value <= m.log_strength.high
    assert abs(nu - NU) < 0.15
    ties = sum(w == "tie" for *_, w in battles)
    assert sum(m.ties for m in fit.models) == 2 * ties
