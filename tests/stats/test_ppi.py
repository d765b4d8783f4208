"""Prediction-powered inference (``calipers.stats._ppi``), checked against the papers' formulas
written out here with the standard library, against simulation (coverage and width), and
against the authors' own package ``ppi_python`` when it is installed (it is not in the lock)."""

from __future__ import annotations

import contextlib
import io
import math
import re
import statistics
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from calipers.stats import PPIResult, ppi_difference, ppi_lambda, ppi_mean, wilson

Z95 = 1.959963984540054  # scipy.stats.norm.isf(0.025)
N_LABELLED, N_UNLABELLED = 150, 2_000
DOC = Path(__file__).resolve().parents[2] / "docs" / "judge-corrected.md"


def _judge(
    rng: np.random.Generator, p: float, sens: float, spec: float, size: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Truth Y ~ Bernoulli(p) and a judge that says 1 with probability sens when Y = 1 and
    1 - spec when Y = 0."""
    y = (rng.random(size) < p).astype(np.float64)
    u = rng.random(size)
    yhat = np.where(y == 1.0, u < sens, u < 1.0 - spec).astype(np.float64)
    return y, yhat


def _draw(
    rng: np.random.Generator, p: float, sens: float, spec: float, n: int, big_n: int
) -> PPIResult:
    y, yhat = _judge(rng, p, sens, spec, n + big_n)
    return ppi_mean(y[:n], yhat[:n], yhat[n:])


# --- (1) and (2): the formulas, written out independently --------------------------------

Y = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1] * 4  # n = 40 human labels
YHAT = [1, 1, 0, 1, 1, 1, 0, 1, 0, 1] * 4  # the judge on the same 40 items
YHAT_U = [1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1] * 25  # the judge on N = 300 more


def _mean(x: Sequence[float]) -> float:
    return sum(x) / len(x)


def test_classic_ppi_point_and_interval_match_the_paper() -> None:
    r = ppi_mean(Y, YHAT, YHAT_U, lam=1.0)
    rect = [a - b for a, b in zip(Y, YHAT, strict=True)]
    theta = _mean(YHAT_U) + _mean(rect)  # Angelopoulos et al. 2023, eq. (1)
    se = math.sqrt(statistics.variance(YHAT_U) / len(YHAT_U) + statistics.variance(rect) / len(Y))
    assert r.estimate.value == pytest.approx(theta, abs=1e-12)
    assert r.se == pytest.approx(se, rel=1e-12)
    assert r.estimate.low == pytest.approx(theta - Z95 * se, abs=1e-12)
    assert r.estimate.high == pytest.approx(theta + Z95 * se, abs=1e-12)
    assert (r.estimate.n, r.n_unlabelled, r.lam, r.estimate.method) == (40, 300, 1.0, "ppi")


def test_ppi_plus_plus_lambda_point_and_interval_match_the_paper() -> None:
    n, big_n = len(Y), len(YHAT_U)
    my, mf = _mean(Y), _mean(YHAT)
    cov = sum((a - my) * (b - mf) for a, b in zip(Y, YHAT, strict=True)) / (n - 1)
    lam = cov / ((1 + n / big_n) * statistics.variance(YHAT + YHAT_U))
    assert 0 < lam < 1
    theta = _mean([lam * f for f in YHAT_U]) + _mean(
        [a - lam * b for a, b in zip(Y, YHAT, strict=True)]
    )
    se = math.sqrt(
        statistics.variance([lam * f for f in YHAT_U]) / big_n
        + statistics.variance([a - lam * b for a, b in zip(Y, YHAT, strict=True)]) / n
    )
    r = ppi_mean(Y, YHAT, YHAT_U)
    assert r.lam == pytest.approx(lam, rel=1e-12)
    assert ppi_lambda(Y, YHAT, YHAT_U) == (pytest.approx(lam, rel=1e-12))
    assert r.estimate.value == pytest.approx(theta, abs=1e-12)
    assert r.estimate.low == pytest.approx(theta - Z95 * se, abs=1e-12)
    assert r.estimate.high == pytest.approx(theta + Z95 * se, abs=1e-12)
    assert r.estimate.method == "ppi++"
    # The comparisons: the human labels alone (Wilson) and the judge alone on all n + N items.
    assert r.human_only == wilson(sum(Y), n)
    assert r.naive_judge == wilson(sum(YHAT) + sum(YHAT_U), n + big_n)


def test_lambda_zero_is_the_human_only_mean() -> None:
    r = ppi_mean(Y, YHAT, YHAT_U, lam=0.0)
    se = statistics.stdev(Y) / math.sqrt(len(Y))
    assert r.estimate.value == pytest.approx(_mean(Y), abs=1e-12)
    assert r.se == pytest.approx(se, rel=1e-12)
    assert r.estimate.high - r.estimate.low == pytest.approx(2 * Z95 * se, rel=1e-12)


def test_a_useless_judge_gets_lambda_zero() -> None:
    constant = ppi_mean(Y, [1] * len(Y), [1] * 100)
    assert constant.lam == 0.0 and constant.estimate.value == pytest.approx(_mean(Y))
    anti = ppi_mean(Y, [1 - v for v in Y], [0, 1] * 50)  # negatively correlated: clipped to 0
    assert anti.lam == 0.0


def test_few_human_labels_fall_back_to_wilson_on_them() -> None:
    r = ppi_mean(Y[:20], YHAT[:20], YHAT_U)
    w = wilson(sum(Y[:20]), 20)
    assert r.estimate.method == "human-only-small-n" and r.lam == 0.0
    assert (r.estimate.value, r.estimate.low, r.estimate.high) == (w.value, w.low, w.high)
    with pytest.raises(ValueError, match="unpaired_difference"):
        ppi_difference(r, ppi_mean(Y, YHAT, YHAT_U))
    assert ppi_mean([], [], YHAT_U).estimate.is_empty
    # 40 labels but only 9 ones: too few of one value for the normal interval.
    rare = ppi_mean([1] * 9 + [0] * 31, [1] * 12 + [0] * 28, YHAT_U)
    assert rare.estimate.method == "human-only-small-n"
    assert rare.estimate.high == wilson(9, 40).high
    assert ppi_mean([1] * 10 + [0] * 30, [1] * 12 + [0] * 28, YHAT_U).estimate.method == "ppi++"


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="same items"):
        ppi_mean(Y, YHAT[:-1], YHAT_U)
    with pytest.raises(ValueError, match="NaN"):
        ppi_mean([*Y[:-1], math.nan], YHAT, YHAT_U)
    with pytest.raises(ValueError, match="lam"):
        ppi_mean(Y, YHAT, YHAT_U, lam=1.5)


def test_difference_of_two_independent_arms() -> None:
    a = ppi_mean(Y, YHAT, YHAT_U)
    b = ppi_mean(YHAT, Y, YHAT_U[:200])
    d = ppi_difference(a, b)
    se = math.sqrt(a.se**2 + b.se**2)
    assert d.value == pytest.approx(a.estimate.value - b.estimate.value, abs=1e-12)
    assert d.low == pytest.approx(d.value - Z95 * se, abs=1e-12)
    assert (d.n, d.method) == (80, "ppi++-difference")


# --- (3)-(5): simulation ------------------------------------------------------------------


def _coverage(reps: int, seed: int) -> dict[float, float]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in (0.2, 0.5, 0.8):
        hits = 0
        for _ in range(reps):
            e = _draw(rng, p, 0.85, 0.85, N_LABELLED, N_UNLABELLED).estimate
            hits += e.low <= p <= e.high
        out[p] = hits / reps
    return out


def test_ppi_plus_plus_covers_the_truth_fast() -> None:
    cov = _coverage(1_000, seed=18)
    # 3,000 intervals (1 s): the binomial SE of a 95 % coverage is 0.004 overall, 0.007 per rate.
    assert 0.93 <= sum(cov.values()) / 3 <= 0.97, cov
    assert min(cov.values()) >= 0.92, cov


@pytest.mark.slow
def test_ppi_plus_plus_covers_the_truth_full() -> None:
    cov = _coverage(10_000, seed=1818)  # SE 0.002 per rate
    assert all(0.93 <= c <= 0.97 for c in cov.values()), cov


@pytest.mark.parametrize(("p", "sens", "spec"), [(0.3, 0.95, 0.8), (0.8, 0.85, 0.8)])
def test_the_naive_judge_interval_under_covers(p: float, sens: float, spec: float) -> None:
    rng = np.random.default_rng(7)
    results = [_draw(rng, p, sens, spec, N_LABELLED, N_UNLABELLED) for _ in range(200)]
    naive = sum(r.naive_judge.low <= p <= r.naive_judge.high for r in results) / len(results)
    ppi = sum(r.estimate.low <= p <= r.estimate.high for r in results) / len(results)
    bias = (1 - p) * (1 - spec) - p * (1 - sens)  # E[judge rate] - p
    assert abs(bias) >= 0.075  # vs a Wilson half-width of ~0.02 on 2,150 items
    assert naive <= 0.05, naive
    assert ppi >= 0.90, ppi


def _theory_ratio(p: float, acc: float) -> float:
    """sd(PPI++) / sd(human-only) at the optimal lambda: sqrt(1 - rho^2 / (1 + n/N))."""
    q = p * acc + (1 - p) * (1 - acc)  # P(judge says 1)
    cov = p * (1 - p) * (2 * acc - 1)
    rho2 = cov**2 / (p * (1 - p) * q * (1 - q))
    return math.sqrt(1 - rho2 / (1 + N_LABELLED / N_UNLABELLED))


@pytest.mark.parametrize(("p", "acc"), [(0.5, 0.9), (0.3, 0.9), (0.5, 0.85), (0.2, 0.85)])
def test_width_against_human_only(p: float, acc: float) -> None:
    rng = np.random.default_rng(150)
    ratios = []
    for _ in range(200):
        r = _draw(rng, p, acc, acc, N_LABELLED, N_UNLABELLED)
        ratios.append((r.estimate.high - r.estimate.low) / (r.human_only.high - r.human_only.low))
    ratio = float(np.mean(ratios))
    assert ratio == pytest.approx(_theory_ratio(p, acc), abs=0.03)
    if acc >= 0.9:
        assert ratio <= 0.7, ratio  # the bar; at accuracy 0.85 theory gives 0.73-0.80


# --- (6): the authors' package, when installed ----------------------------------------------


def test_agrees_with_ppi_python() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(2023)
    y, yhat = _judge(rng, 0.35, 0.9, 0.85, N_LABELLED + N_UNLABELLED)
    lab, unl = slice(0, N_LABELLED), slice(N_LABELLED, None)
    for lam in (None, 1.0):
        ours = ppi_mean(y[lab], yhat[lab], yhat[unl], lam=lam).estimate
        point = ppi_py.ppi_mean_pointestimate(y[lab], yhat[lab], yhat[unl], lam=lam)
        low, high = ppi_py.ppi_mean_ci(y[lab], yhat[lab], yhat[unl], alpha=0.05, lam=lam)
        theirs = [float(np.ravel(v)[0]) for v in (point, low, high)]
        # ppi_py divides the covariance and the variances by n (we use n - 1): O(1/n) apart.
        assert [ours.value, ours.low, ours.high] == pytest.approx(theirs, abs=1e-3)


# --- the docs -----------------------------------------------------------------------------


def test_judge_corrected_doc_example_runs_and_its_comments_are_true() -> None:
    code = "\n".join(re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    promised = [m.group(1).split(" — ")[0] for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    assert out.getvalue().splitlines() == promised
