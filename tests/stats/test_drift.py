"""Drift tests: statistics against hand computations and plain loops, false-alarm rates under
no drift at or below alpha by simulation, and power for a clear shift."""

from __future__ import annotations

import contextlib
import gc
import io
import itertools
import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

from calipers.stats._drift import (
    DriftTest,
    _logistic_fit,
    adjust_drift,
    chi2_drift,
    classifier_drift,
    ks_drift,
    mmd2_unbiased,
    mmd_drift,
    psi,
    psi_drift,
)

ALPHA = 0.05
REPS = 200
LIMIT = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / REPS)  # 0.096: alpha + 3 SE
SHARES = [0.4, 0.3, 0.2, 0.07, 0.03]


def alarm_rate(test: Callable[[np.random.Generator], DriftTest], reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return sum(test(rng).drifted for _ in range(reps)) / reps


# --- PSI ------------------------------------------------------------------------------------


def test_psi_hand_computed() -> None:
    # Reference 1..10 with 2 bins: edge = median 5.5, shares (1/2, 1/2). Current: 3 of 8
    # values <= 5.5. PSI = (3/8 - 1/2) ln(3/4) + (5/8 - 1/2) ln(5/4) = 0.063853.
    assert psi(np.arange(1, 11), [1, 2, 3, 8, 9, 10, 11, 12], bins=2) == pytest.approx(
        (3 / 8 - 1 / 2) * math.log(3 / 4) + (5 / 8 - 1 / 2) * math.log(5 / 4)
    )
    # An empty current bin: its share 0 becomes eps = 1e-4.
    empty = (1 - 0.5) * math.log(1 / 0.5) + (1e-4 - 0.5) * math.log(1e-4 / 0.5)
    assert psi(np.arange(1, 11), [1, 2, 3], bins=2) == pytest.approx(empty)
    assert math.isnan(psi([], [1.0]))


def loop_psi(ref: np.ndarray, cur: np.ndarray, bins: int, eps: float = 1e-4) -> float:
    edges = [float(np.quantile(ref, i / bins)) for i in range(1, bins)]
    bounds = [-math.inf, *edges, math.inf]
    total = 0.0
    for lo, hi in itertools.pairwise(bounds):
        p = max(sum(lo < v <= hi for v in ref) / len(ref), eps)
        q = max(sum(lo < v <= hi for v in cur) / len(cur), eps)
        total += (q - p) * math.log(q / p)
    return total


@pytest.mark.parametrize("kind", ["continuous", "ties"])
def test_psi_against_a_loop_implementation(kind: str) -> None:
    rng = np.random.default_rng(1)
    if kind == "continuous":
        ref, cur = rng.normal(size=300), rng.normal(0.3, 1.2, size=170)
    else:  # token lengths: many ties, so some quantile edges coincide
        ref, cur = rng.poisson(3, size=300).astype(float), rng.poisson(4, 170).astype(float)
    assert psi(ref, cur, bins=10) == pytest.approx(loop_psi(ref, cur, 10), abs=1e-12)


def test_fixed_psi_threshold_is_not_a_false_alarm_rate_but_the_permutation_one_is() -> None:
    """No drift, windows of 100: PSI averages about (bins - 1)(1/n + 1/m) = 0.18, so the rule
    of thumb 0.1 alarms most of the time; the permutation test alarms at most alpha."""
    rng = np.random.default_rng(2)
    values = [psi(rng.normal(size=100), rng.normal(size=100)) for _ in range(REPS)]
    assert np.mean(values) == pytest.approx(9 * (2 / 100), rel=0.2)
    assert np.mean(np.array(values) > 0.1) > 0.7
    rate = alarm_rate(
        lambda r: psi_drift(r.normal(size=100), r.normal(size=100), rng=r, n_permutations=200),
        REPS,
        seed=3,
    )
    assert rate <= LIMIT


def test_psi_drift_power_and_threshold() -> None:
    power = alarm_rate(
        lambda r: psi_drift(
            r.normal(size=300), r.normal(0.4, 1, size=300), rng=r, n_permutations=200
        ),
        50,
        seed=4,
    )
    assert power > 0.8
    t = psi_drift(np.arange(100.0), np.arange(100.0) + 30, rng=np.random.default_rng(0))
    assert t.drifted and t.statistic > t.threshold and t.test == "psi-permutation"
    assert t.p_value == pytest.approx(1 / 1001)  # no permutation reached it: (1 + 0) / (1 + B)


# --- KS and chi-square ----------------------------------------------------------------------


def test_ks_false_alarms_power_and_scipy() -> None:
    assert (
        alarm_rate(
            lambda r: ks_drift(r.exponential(size=150), r.exponential(size=120)), REPS, seed=5
        )
        <= LIMIT
    )
    assert (
        alarm_rate(lambda r: ks_drift(r.normal(size=300), r.normal(0.3, size=300)), 100, seed=6)
        > 0.8
    )
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=80), rng.normal(size=60)
    t = ks_drift(a, b)
    ref = stats.ks_2samp(a, b)
    assert (t.statistic, t.p_value) == (ref.statistic, ref.pvalue)
    assert t.threshold == pytest.approx(1.358 * math.sqrt(140 / 4800), rel=1e-3)


def draw_labels(rng: np.random.Generator, n: int, shares: list[float]) -> list[str]:
    return list(rng.choice(list("abcde"), size=n, p=shares))


def test_chi2_asymptotic_matches_scipy_and_small_counts_use_permutation() -> None:
    rng = np.random.default_rng(8)
    a, b = draw_labels(rng, 400, SHARES), draw_labels(rng, 300, SHARES)
    t = chi2_drift(a, b, rng=rng)
    table = [[a.count(c) for c in "abcde"], [b.count(c) for c in "abcde"]]
    ref = stats.chi2_contingency(table, correction=False)
    assert t.test == "chi2" and t.statistic == pytest.approx(ref.statistic)
    assert t.p_value == pytest.approx(ref.pvalue)
    small = chi2_drift(a[:30], b[:30], rng=rng)  # expected count of "e" below 5
    assert small.test == "chi2-permutation"
    assert chi2_drift(["x"] * 5, ["x"] * 3, rng=rng).p_value == 1.0
    assert math.isnan(chi2_drift([], ["x"], rng=rng).p_value)


@pytest.mark.parametrize("n", [40, 300])
def test_chi2_false_alarms(n: int) -> None:
    """n = 40: rare categories, permutation p-value; n = 300: chi-square p-value."""
    rate = alarm_rate(
        lambda r: chi2_drift(
            draw_labels(r, n, SHARES), draw_labels(r, n, SHARES), rng=r, n_permutations=500
        ),
        REPS,
        seed=9,
    )
    assert rate <= LIMIT


def test_chi2_power_on_a_topic_share_shift() -> None:
    shifted = [0.3, 0.3, 0.2, 0.1, 0.1]
    assert (
        alarm_rate(
            lambda r: chi2_drift(draw_labels(r, 400, SHARES), draw_labels(r, 400, shifted), rng=r),
            100,
            seed=10,
        )
        > 0.8
    )


# --- embeddings: MMD and classifier ---------------------------------------------------------


def loop_mmd2(x: np.ndarray, y: np.ndarray) -> float:
    """Gretton et al. (2012) eq. 3 with loops; bandwidth = median pooled pairwise distance."""
    z = np.vstack([x, y])
    dist = [float(np.linalg.norm(z[i] - z[j])) for i in range(len(z)) for j in range(i + 1, len(z))]
    s = float(np.median(dist))

    def k(a: np.ndarray, b: np.ndarray) -> float:
        return math.exp(-float(np.sum((a - b) ** 2)) / (2 * s * s))

    m, n = len(x), len(y)
    xx = sum(k(x[i], x[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    yy = sum(k(y[i], y[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    xy = sum(k(x[i], y[j]) for i in range(m) for j in range(n)) / (m * n)
    return xx + yy - 2 * xy


def test_mmd_statistic_against_a_loop_implementation() -> None:
    rng = np.random.default_rng(11)
    x, y = rng.normal(size=(7, 3)), rng.normal(0.5, 1, size=(5, 3))
    assert mmd2_unbiased(x, y) == pytest.approx(loop_mmd2(x, y), abs=1e-12)
    t = mmd_drift(x, y, rng=rng)
    assert t.statistic == pytest.approx(loop_mmd2(x, y), abs=1e-12)
    assert (t.n_reference, t.n_current) == (7, 5)


def embeddings(rng: np.random.Generator, n: int, shift: float = 0.0) -> np.ndarray:
    """Correlated 16-d embeddings; ``shift`` moves the mean along the first 4 directions."""
    base = rng.normal(size=(n, 16)) @ np.linalg.cholesky(0.5 * np.eye(16) + 0.5).T
    base[:, :4] += shift
    return base


def test_mmd_false_alarms_and_power() -> None:
    rate = alarm_rate(
        lambda r: mmd_drift(embeddings(r, 40), embeddings(r, 50), rng=r, n_permutations=100),
        REPS,
        seed=12,
    )
    assert rate <= LIMIT
    power = alarm_rate(
        lambda r: mmd_drift(embeddings(r, 100), embeddings(r, 100, 0.5), rng=r, n_permutations=100),
        50,
        seed=13,
    )
    assert power > 0.8


def test_mmd_subsamples_to_max_n_and_skips_tiny_windows() -> None:
    rng = np.random.default_rng(14)
    t = mmd_drift(embeddings(rng, 500), embeddings(rng, 300), rng=rng, max_n=100, n_permutations=50)
    assert (t.n_reference, t.n_current) == (100, 100)
    assert math.isnan(mmd_drift(embeddings(rng, 1), embeddings(rng, 9), rng=rng).p_value)
    with pytest.raises(ValueError, match="at least 2"):
        mmd2_unbiased(np.zeros((1, 2)), np.zeros((3, 2)))


def test_classifier_false_alarms_and_power() -> None:
    rate = alarm_rate(
        lambda r: classifier_drift(embeddings(r, 100), embeddings(r, 100), rng=r), REPS, seed=15
    )
    assert rate <= LIMIT
    power = alarm_rate(
        lambda r: classifier_drift(embeddings(r, 300), embeddings(r, 300, 0.5), rng=r), 50, seed=16
    )
    assert power > 0.8
    rng = np.random.default_rng(0)
    t = classifier_drift(embeddings(rng, 300), embeddings(rng, 300, 2.0), rng=rng)
    assert t.statistic > 0.9 and t.test == "classifier-auc"


def test_logistic_fit_matches_statsmodels_without_penalty() -> None:
    rng = np.random.default_rng(18)
    x = rng.normal(size=(300, 4))
    y = (rng.random(300) < 1 / (1 + np.exp(-(x @ [1.0, -1.0, 0.5, 0.0])))).astype(float)
    ref = sm.Logit(y, sm.add_constant(x)).fit(disp=0).params
    np.testing.assert_allclose(_logistic_fit(x, y, 1e-10), ref, rtol=1e-6, atol=1e-8)


# --- several features at once ---------------------------------------------------------------


def test_holm_keeps_the_family_false_alarm_rate_at_alpha(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five unchanged features: alarming on any raw p <= alpha happens about 1 - 0.95^5 =
    23% of the time; with Holm, at most alpha."""
    monkeypatch.setattr(gc, "collect", lambda *_: 0)  # statsmodels' Holm collects per call
    rng = np.random.default_rng(17)
    raw = holm = 0
    for _ in range(REPS):
        tests = {f"f{i}": ks_drift(rng.normal(size=100), rng.normal(size=100)) for i in range(5)}
        raw += any(t.drifted for t in tests.values())
        holm += any(t.drifted for t in adjust_drift(tests).values())
    assert raw / REPS > 0.12
    assert holm / REPS <= LIMIT


def test_adjust_drift_matches_statsmodels_holm_and_skips_nan() -> None:
    ps = [0.01, 0.04, 0.03, math.nan]
    tests = {f"f{i}": DriftTest("ks", 0.1, p, math.nan, 10, 10, ALPHA) for i, p in enumerate(ps)}
    out = adjust_drift(tests)
    ref = multipletests(ps[:3], method="holm")[1]
    assert [out[f"f{i}"].p_adjusted for i in range(3)] == pytest.approx(list(ref))
    assert math.isnan(out["f3"].p_adjusted) and not out["f3"].drifted
    assert tests["f0"].drifted and out["f0"].drifted  # 0.03 after Holm
    assert tests["f1"].drifted and not out["f1"].drifted  # 0.04 -> 0.06


DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics-agreement-sequential-drift.md"


def test_doc_example_runs_and_prints_what_its_comments_say() -> None:
    code = "\n".join(re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    promised = [m.group(1) for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    assert out.getvalue().splitlines() == promised
