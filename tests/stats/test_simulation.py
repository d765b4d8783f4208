"""Simulation: the false-positive rate of compare under A/A, and interval coverage.

Seeded, so deterministic; sized so that the whole file runs in well under a minute. The
numbers it measures are recorded in docs/comparisons-statistics.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from calipers.stats import newcombe_interval, paired_compare, wilson

ALPHA = 0.05
AA_REPS = 2000  # binomial SE of a 5% rate: sqrt(.05 * .95 / 2000) = 0.49 points
ACCURACIES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
COVERAGE_REPS = 20_000  # per accuracy where coverage is simulated (n = 500): SE 0.15 points


def aa_false_positive_rate(n: int, reps: int = AA_REPS, seed: int = 0) -> float:
    """Share of A/A comparisons called significant: both models get item i right with the
    same probability p_i ~ Beta(1.4, 0.6) (mean 0.7; easy items easy for both), so their
    per-item scores are correlated, but neither model is better."""
    rng = np.random.default_rng([seed, n])
    p = rng.beta(1.4, 0.6, size=(reps, n))
    a = (rng.random((reps, n)) < p).astype(float)
    b = (rng.random((reps, n)) < p).astype(float)
    hits = sum(
        paired_compare(a[r], b[r], rng=rng, alpha=ALPHA).p_value < ALPHA for r in range(reps)
    )
    return float(hits) / reps


@pytest.mark.parametrize("n", [20, 50, 200, 1000])
def test_aa_false_positive_rate_is_at_most_alpha(n: int) -> None:
    rate = aa_false_positive_rate(n)
    se = math.sqrt(ALPHA * (1 - ALPHA) / AA_REPS)
    assert rate <= ALPHA + 3 * se
    if n == 1000:
        assert 0.03 <= rate <= 0.07


def test_aa_continuous_scores_permutation_rate_and_bootstrap_coverage() -> None:
    """Non-binary scores: the sign-flip test's false-positive rate, and the paired bootstrap
    interval covering the true difference 0 (300 replicates: SE 1.3 points)."""
    rng = np.random.default_rng(99)
    reps, n, rejected, covered = 300, 40, 0, 0
    for _ in range(reps):
        item = rng.uniform(0.2, 0.8, size=n)  # item difficulty shared by both models
        a, b = (np.clip(item + rng.normal(0, 0.15, size=n), 0, 1) for _ in range(2))
        r = paired_compare(a, b, rng=rng, n_resamples=2000)
        rejected += r.p_value < ALPHA
        covered += r.diff.low <= 0.0 <= r.diff.high
    assert rejected / reps <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert 0.90 <= covered / reps <= 0.99


def wilson_coverage(n: int, p: float) -> float:
    """Exact coverage: sum of Binomial(n, p) probabilities of the k whose interval holds p."""
    ests = [wilson(k, n) for k in range(n + 1)]
    pmf = stats.binom.pmf(np.arange(n + 1), n, p)
    return float(sum(w for w, e in zip(pmf, ests, strict=True) if e.low <= p <= e.high))


def cell_probabilities(pa: float, pb: float, r: float) -> np.ndarray:
    """(p11, p10, p01, p00) for 0/1 scores with means pa, pb and correlation r."""
    p11 = pa * pb + r * math.sqrt(pa * (1 - pa) * pb * (1 - pb))
    cells = np.array([p11, pa - p11, pb - p11, 1 - pa - pb + p11])
    assert (cells >= 0).all()
    return cells


def all_tables(n: int) -> np.ndarray:
    i, j, k = np.meshgrid(*(np.arange(n + 1),) * 3, indexing="ij")
    t = np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1)
    t = t[t.sum(axis=1) <= n]
    return np.column_stack([t, n - t.sum(axis=1)])


def newcombe_coverage(n: int, cells: np.ndarray, rng: np.random.Generator | None) -> float:
    """Coverage of the paired-difference interval: exact over every table when ``rng`` is
    None, else over COVERAGE_REPS simulated tables."""
    if rng is None:
        t = all_tables(n)
        logp = special.gammaln(n + 1) + (special.xlogy(t, cells) - special.gammaln(t + 1)).sum(1)
        weight = np.exp(logp)
    else:
        t = rng.multinomial(n, cells, size=COVERAGE_REPS)
        weight = np.full(len(t), 1 / len(t))
    low, high = newcombe_interval(t[:, 0], t[:, 1], t[:, 2], t[:, 3])
    truth = cells[2] - cells[1]
    return float(np.sum(weight * ((low <= truth + 1e-12) & (truth - 1e-12 <= high))))


def paired_coverages(n: int, shift: float, r: float) -> list[float]:
    rng = None if n <= 50 else np.random.default_rng([n, int(100 * shift), int(100 * r)])
    return [newcombe_coverage(n, cell_probabilities(p, p + shift, r), rng) for p in ACCURACIES]


@pytest.mark.parametrize("n", [50, 500])
def test_wilson_single_score_coverage(n: int) -> None:
    cov = [wilson_coverage(n, p) for p in ACCURACIES]
    assert 0.93 <= float(np.mean(cov)) <= 0.97


@pytest.mark.parametrize("n", [50, 500])
@pytest.mark.parametrize("shift,r", [(0.0, 0.4), (0.05, 0.4), (0.05, 0.0)])
def test_paired_difference_coverage(n: int, shift: float, r: float) -> None:
    assert 0.93 <= float(np.mean(paired_coverages(n, shift, r))) <= 0.97


def test_paired_compare_reports_the_interval_whose_coverage_is_measured() -> None:
    a = np.repeat([1.0, 1.0, 0.0, 0.0], [20, 6, 14, 10])
    b = np.repeat([1.0, 0.0, 1.0, 0.0], [20, 6, 14, 10])
    low, high = newcombe_interval(20, 6, 14, 10)
    d = paired_compare(a, b, rng=np.random.default_rng(0)).diff
    assert (d.low, d.high) == pytest.approx((float(low), float(high)))
