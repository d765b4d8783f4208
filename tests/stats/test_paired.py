"""Paired comparison: each statistic checked against a second method or a hand-worked value."""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

from calipers.stats import (
    _paired,
    _resample,
    clustered_mean,
    newcombe_interval,
    paired_bootstrap,
    paired_compare,
    sign_flip_pvalue,
    wilson,
)

Z2 = (1.959963985 + 0.841621234) ** 2  # (z_.975 + z_.8)^2


def table_scores(n11: int, n10: int, n01: int, n00: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-item 0/1 scores (a, b) for a paired 2x2 table; n10 = A right and B wrong."""
    a = np.repeat([1.0, 1.0, 0.0, 0.0], [n11, n10, n01, n00])
    b = np.repeat([1.0, 0.0, 1.0, 0.0], [n11, n10, n01, n00])
    return a, b


def tango(n11: int, n10: int, n01: int, n00: int, conf: float = 0.95) -> tuple[float, float]:
    """Tango (1998) score interval for p_b - p_a, by brute numerics: the constrained MLE by
    a bounded 1-D optimiser and the limits by root finding. A second, independent method."""
    n, z = n11 + n10 + n01 + n00, stats.norm.ppf(0.5 + conf / 2)

    def score(delta: float) -> float:
        lo, hi = max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12

        def nll(q: float) -> float:  # q = P(A right, B wrong) under p_b - p_a = delta
            cells = [(n10, q), (n01, q + delta), (n11 + n00, 1 - 2 * q - delta)]
            return -sum(k * math.log(p) for k, p in cells if k > 0)

        q = optimize.minimize_scalar(
            nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}
        ).x
        return (n01 - n10 - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))

    d, eps = (n01 - n10) / n, 1e-9
    low = optimize.brentq(lambda t: score(t) - z, -1 + eps, d) if score(-1 + eps) > z else -1.0
    high = optimize.brentq(lambda t: score(t) + z, d, 1 - eps) if score(1 - eps) < -z else 1.0
    return low, high


# --- binary: McNemar and Newcombe -------------------------------------------------------


def test_hand_worked_small_binary_example() -> None:
    # 10 items: both right 3, only A right 1, only B right 4, both wrong 2.
    a, b = table_scores(3, 1, 4, 2)
    r = paired_compare(a, b, rng=np.random.default_rng(0))
    assert (r.n, r.test, r.n_discordant) == (10, "mcnemar-exact", (4, 1))
    # exact McNemar: 2 * P(X <= 1), X ~ Bin(5, 1/2) = 2 * (1 + 5) / 32
    assert r.p_value == pytest.approx(12 / 32)
    assert (r.mean_a.value, r.mean_b.value, r.diff.value) == pytest.approx((0.4, 0.7, 0.3))
    # Cohen's h = 2 asin(sqrt(0.7)) - 2 asin(sqrt(0.4)) = 1.982313 - 1.369438
    assert r.effect_size == pytest.approx(0.612875, abs=1e-6) and r.effect_size_name == "cohen-h"
    # MDE: 2.801585 * sqrt(0.5 / 10) = 0.6264 is below the floor 7.848880 / 10
    assert r.mde == pytest.approx(0.784888, abs=1e-6)
    chi2 = paired_compare(a, b, rng=np.random.default_rng(0), test="mcnemar-chi2")
    # (|4 - 1| - 1)^2 / 5 = 0.8 on 1 df
    assert chi2.p_value == pytest.approx(stats.chi2.sf(0.8, 1)) and chi2.test == "mcnemar-chi2"


@pytest.mark.parametrize("table", [(30, 3, 9, 8), (5, 0, 7, 1), (100, 41, 60, 99), (2, 6, 6, 0)])
def test_mcnemar_exact_equals_binomial_test_on_discordant_pairs(table: tuple[int, ...]) -> None:
    a, b = table_scores(*table)
    r = paired_compare(a, b, rng=np.random.default_rng(0))
    expected = stats.binomtest(table[2], table[1] + table[2], 0.5).pvalue
    assert r.p_value == pytest.approx(expected, rel=1e-12)


def test_newcombe_matches_the_published_value() -> None:
    # Cavo et al. (2012) complete response before/after consolidation, as in Fagerland,
    # Lydersen & Laake (2017), Statistical Analysis of Contingency Tables, ch. 8:
    # both 59, first only 6, second only 16, neither 80; difference -0.0621
    # (95% CI -0.1186 to -0.0046) by the Newcombe square-and-add interval.
    low, high = newcombe_interval(59, 16, 6, 80)
    assert (round(float(low), 4), round(float(high), 4)) == (-0.1186, -0.0046)
    r = paired_compare(*table_scores(59, 16, 6, 80), rng=np.random.default_rng(0))
    assert r.diff.value == pytest.approx(-10 / 161)
    assert (r.diff.low, r.diff.high) == pytest.approx((float(low), float(high)))
    assert r.diff.method == "newcombe-paired"


@pytest.mark.parametrize(
    "table,tol",
    [
        ((59, 16, 6, 80), 0.006),
        ((30, 5, 15, 50), 0.008),
        ((200, 30, 45, 300), 0.001),
        ((10, 2, 8, 20), 0.02),
        ((1, 7, 1, 12), 0.011),
    ],
)
def test_newcombe_agrees_with_tango_score_interval(table: tuple[int, ...], tol: float) -> None:
    low, high = newcombe_interval(*table)
    t_low, t_high = tango(*table)
    assert float(low) == pytest.approx(t_low, abs=tol)
    assert float(high) == pytest.approx(t_high, abs=tol)


def test_newcombe_agrees_with_wald_at_large_n() -> None:
    n11, n10, n01, n00 = 40_000, 9_000, 11_000, 40_000
    n = n11 + n10 + n01 + n00
    d, p10, p01 = (n01 - n10) / n, n10 / n, n01 / n
    half = stats.norm.ppf(0.975) * math.sqrt((p10 + p01 - (p10 - p01) ** 2) / n)
    low, high = newcombe_interval(n11, n10, n01, n00)
    assert float(low) == pytest.approx(d - half, abs=0.01 * half)
    assert float(high) == pytest.approx(d + half, abs=0.01 * half)


def test_paired_compare_binary_uses_wilson_for_each_score() -> None:
    a, b = table_scores(12, 3, 7, 8)
    r = paired_compare(a, b, rng=np.random.default_rng(0), confidence=0.9)
    assert r.mean_a == wilson(15, 30, 0.9) and r.mean_b == wilson(19, 30, 0.9)
    # MDE: discordance 10/30 -> 2.801585 * sqrt((1/3) / 30)
    assert r.mde == pytest.approx(math.sqrt(Z2 / 90), rel=1e-6)


def test_no_discordant_pairs() -> None:
    a = np.array([1.0, 1, 0, 0, 1])
    r = paired_compare(a, a.copy(), rng=np.random.default_rng(0))
    assert r.p_value == 1.0 and r.n_discordant == (0, 0) and r.diff.value == 0.0
    assert r.diff.low < 0 < r.diff.high and r.mde == pytest.approx(Z2 / 5)


# --- continuous: bootstrap, permutation, Wilcoxon ------------------------------------------


def test_bootstrap_is_reproducible_with_a_seed() -> None:
    x = np.random.default_rng(1).exponential(size=80)
    y = x + np.random.default_rng(2).normal(0.1, 0.5, size=80)
    one = paired_bootstrap(x, y, rng=np.random.default_rng(5), n_resamples=2000)
    assert one == paired_bootstrap(x, y, rng=np.random.default_rng(5), n_resamples=2000)
    other = paired_bootstrap(x, y, rng=np.random.default_rng(6), n_resamples=2000)
    assert one[2].low != other[2].low
    assert one[2].method == "paired-bootstrap-bca" and one[0].method == "bootstrap-bca"


def test_bootstrap_matches_the_t_interval_of_the_differences_at_large_n() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(size=20_000)
    y = np.clip(x + rng.normal(0.02, 0.3, size=x.size), 0, 1)
    d = y - x
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    _, _, diff = paired_bootstrap(x, y, rng=rng, n_resamples=4000)
    assert diff.value == pytest.approx(d.mean())
    assert diff.low == pytest.approx(d.mean() - half, abs=0.05 * half)
    assert diff.high == pytest.approx(d.mean() + half, abs=0.05 * half)


def test_bca_agrees_with_scipy_bootstrap_bca_on_skewed_data() -> None:
    # Heavy skew (lognormal, sigma 2, n 25) makes both BCa corrections matter: the lower
    # limit moves by a tenth of the half-width from the percentile interval's.
    y = np.random.default_rng(4).lognormal(0.0, 2.0, size=25)
    rng = np.random.default_rng(0)
    _, _, diff = paired_bootstrap(np.zeros(25), y, rng=rng, n_resamples=40_000)
    ref = stats.bootstrap((y,), np.mean, n_resamples=40_000, method="BCa", rng=rng)
    pct = stats.bootstrap((y,), np.mean, n_resamples=40_000, method="percentile", rng=rng)
    half = diff.half_width
    assert diff.method == "paired-bootstrap-bca"
    assert diff.low == pytest.approx(ref.confidence_interval.low, abs=0.01 * half)
    # the upper limit sits far in the tail, where 40,000 resamples still wobble a few percent
    assert diff.high == pytest.approx(ref.confidence_interval.high, abs=0.08 * half)
    assert diff.low - pct.confidence_interval.low > 0.08 * half


def test_few_distinct_values_shortcut_has_the_same_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 0 / 0.5 / 1 partial credit: the multinomial shortcut against explicit index resampling
    rng = np.random.default_rng(8)
    pairs = rng.integers(0, 3, size=(3000, 2)) / 2
    fast = _resample.resample_means(pairs, np.random.default_rng(1), 4000)
    monkeypatch.setattr(_resample, "FEW", 10**9)
    slow = _resample.resample_means(pairs, np.random.default_rng(1), 4000)
    se = pairs.std(axis=0) / math.sqrt(pairs.shape[0])
    for draws in (fast, slow):
        assert draws.mean(axis=0) == pytest.approx(pairs.mean(axis=0), abs=4 * se.max() / 60)
        assert draws.std(axis=0) == pytest.approx(se, rel=0.05)
    c_fast, c_slow = np.corrcoef(fast.T), np.corrcoef(slow.T)
    assert isinstance(c_fast, np.ndarray) and isinstance(c_slow, np.ndarray)
    assert c_fast[0, 1] == pytest.approx(c_slow[0, 1], abs=0.05)


def test_binned_resampler_matches_index_resampling_on_skewed_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Many distinct, skewed values (latency-like) at 10,000 items: the binned resampler used
    # for large n x resamples against the exact index bootstrap, moment by moment and at the
    # quantiles an interval reads. The skewness of the resample means is where a plain normal
    # approximation would fail.
    rng = np.random.default_rng(11)
    a = rng.lognormal(0.0, 1.2, size=10_000)
    pairs = np.column_stack([a, a * rng.lognormal(0.05, 0.5, size=a.size)])
    monkeypatch.setattr(_resample, "EXACT_CELLS", 0)
    binned = _resample.resample_means(pairs, np.random.default_rng(1), 20_000)
    monkeypatch.setattr(_resample, "EXACT_CELLS", 10**12)
    exact = _resample.resample_means(pairs, np.random.default_rng(2), 20_000)
    binned = np.column_stack([binned, binned[:, 1] - binned[:, 0]])
    exact = np.column_stack([exact, exact[:, 1] - exact[:, 0]])
    sd = exact.std(axis=0)
    assert binned.std(axis=0) == pytest.approx(sd, rel=0.03)
    assert binned.mean(axis=0) == pytest.approx(exact.mean(axis=0), abs=0.05 * sd.max())
    for q in (0.025, 0.975):
        assert np.abs(np.quantile(binned, q, axis=0) - np.quantile(exact, q, axis=0)) == (
            pytest.approx(0, abs=0.08 * sd.max())
        )
    skew = stats.skew(exact[:, 0])
    assert skew > 0.05  # the data are skewed enough for the check to mean something
    assert stats.skew(binned[:, 0]) == pytest.approx(skew, abs=0.06)


def brute_force_sign_flip(d: np.ndarray) -> float:
    observed = abs(d.sum())
    hits = sum(
        abs(np.dot(s, d)) >= observed - 1e-12 for s in itertools.product((1, -1), repeat=d.size)
    )
    return float(hits / 2**d.size)


def test_permutation_p_value_equals_full_enumeration_for_n_8() -> None:
    d = np.array([0.3, -0.1, 0.25, 0.4, 0.05, -0.2, 0.35, 0.15])
    p = sign_flip_pvalue(d, rng=np.random.default_rng(0))
    assert p == pytest.approx(brute_force_sign_flip(d), rel=1e-12)
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=10_000)
    assert p == pytest.approx(ref.pvalue, rel=1e-12)
    x = np.zeros(8)
    r = paired_compare(x, d, rng=np.random.default_rng(0))
    assert r.test == "permutation" and r.p_value == pytest.approx(p)


def test_sign_flip_on_plus_minus_one_is_the_exact_binomial_test() -> None:
    d = np.array([1.0] * 9 + [-1.0] * 2 + [0.0] * 5)  # zeros carry no information
    assert sign_flip_pvalue(d, rng=np.random.default_rng(0)) == pytest.approx(
        stats.binomtest(9, 11).pvalue, rel=1e-12
    )


def test_random_sign_flips_agree_with_enumeration() -> None:
    d = np.random.default_rng(9).normal(0.35, 1.0, size=16)  # 65,536 assignments
    exact = brute_force_sign_flip(d)
    p = sign_flip_pvalue(d, rng=np.random.default_rng(10), n_resamples=20_000)
    assert p == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 20_000))


def test_binomial_shortcut_agrees_with_random_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    d = rng.choice([-1.0, -0.5, 0.5, 1.0], p=[0.2, 0.25, 0.28, 0.27], size=400)
    fast = sign_flip_pvalue(d, rng=np.random.default_rng(1), n_resamples=20_000)
    monkeypatch.setattr(_paired, "FEW", 10**9)
    slow = sign_flip_pvalue(d, rng=np.random.default_rng(1), n_resamples=20_000)
    assert fast == pytest.approx(slow, abs=4 * math.sqrt(fast * (1 - fast) / 20_000) + 1e-3)


def test_wilcoxon_against_enumeration_of_signed_ranks() -> None:
    d = np.array([1.0, 2.1, 3.2, 4.3, 5.4, 6.5, 7.6, 8.7, 9.8, -10.9])  # ranks 1..10, W- = 10
    sums = [
        sum(r for r, s in zip(range(1, 11), signs, strict=True) if s)
        for signs in itertools.product((0, 1), repeat=10)
    ]
    p_exact = 2 * sum(w <= 10 for w in sums) / 1024
    r = paired_compare(np.zeros(10), d, rng=np.random.default_rng(0), test="wilcoxon")
    assert r.test == "wilcoxon" and r.p_value == pytest.approx(p_exact, rel=1e-12)


def test_continuous_effect_size_and_mde() -> None:
    x = np.array([0.1, 0.2, 0.3, 0.4])
    y = x + np.array([1.0, 2.0, 3.0, 2.0])  # d: mean 2, sd sqrt(2/3)
    r = paired_compare(x, y, rng=np.random.default_rng(0), n_resamples=500)
    assert r.effect_size_name == "d_z"
    assert r.effect_size == pytest.approx(2 / math.sqrt(2 / 3))
    assert r.mde == pytest.approx(math.sqrt(Z2 * (2 / 3) / 4), rel=1e-6)
    assert r.n_discordant is None


def test_equal_differences_fall_back_to_percentile_and_say_so() -> None:
    x = np.linspace(0.0, 0.8, 20)
    r = paired_compare(x, x + 0.1, rng=np.random.default_rng(0), n_resamples=1000)
    assert r.diff.method == "paired-bootstrap-percentile"
    assert (r.diff.low, r.diff.high) == pytest.approx((0.1, 0.1))
    assert r.effect_size == math.inf and math.isnan(r.mde)
    # only the two all-same-sign assignments of 20 reach |sum| = 2: p = (1 + hits) / 1001
    assert r.p_value < 0.01


def test_one_pair_has_an_unbounded_interval() -> None:
    r = paired_compare([0.2], [0.7], rng=np.random.default_rng(0))
    assert (r.diff.value, r.diff.low, r.diff.high) == pytest.approx((0.5, -math.inf, math.inf))
    assert r.diff.method == "paired-bootstrap-undefined" and r.p_value == 1.0
    assert r.mde == math.inf


# --- clusters, NaN, errors -------------------------------------------------------------


def test_clustered_test_equals_t_test_on_cluster_means_for_equal_sizes() -> None:
    rng = np.random.default_rng(12)
    labels = [f"passage-{i // 5}" for i in range(60)]
    shift = np.repeat(rng.normal(0, 0.2, size=12), 5)
    x = rng.uniform(size=60)
    y = x + 0.08 + shift + rng.normal(0, 0.1, size=60)
    r = paired_compare(x, y, rng=rng, clusters=labels)
    means = (y - x).reshape(12, 5).mean(axis=1)
    assert r.test == "cluster-t"
    assert r.p_value == pytest.approx(stats.ttest_1samp(means, 0.0).pvalue, rel=1e-9)
    assert r.diff == clustered_mean(y - x, labels)
    assert r.mean_a == clustered_mean(x, labels)


def test_clustered_interval_and_test_agree_for_unequal_sizes() -> None:
    rng = np.random.default_rng(13)
    sizes = rng.integers(1, 8, size=25)
    labels = [g for g, s in enumerate(sizes) for _ in range(s)]
    for shift in (0.0, 0.05, 0.1, 0.2):
        x = rng.uniform(size=len(labels))
        y = x + shift + rng.normal(0, 0.3, size=x.size)
        r = paired_compare(x, y, rng=rng, clusters=labels)
        assert (r.p_value < 0.05) == (r.diff.low > 0 or r.diff.high < 0)


def test_nan_pairs_are_dropped_with_their_clusters() -> None:
    a = [1.0, math.nan, 0.0, 1.0, 0.0, 1.0]
    b = [1.0, 1.0, 1.0, math.nan, 1.0, 1.0]
    r = paired_compare(a, b, rng=np.random.default_rng(0))
    assert r.n == 4 and r.n_discordant == (2, 0)
    rc = paired_compare(a, b, rng=np.random.default_rng(0), clusters=list("aabbcc"))
    assert rc.n == 4 and rc.diff == clustered_mean([0.0, 1.0, 1.0, 0.0], list("abcc"))


def test_empty_input_gives_nan_not_zero() -> None:
    for a, b in (([], []), ([math.nan, 1.0], [0.0, math.nan])):
        r = paired_compare(a, b, rng=np.random.default_rng(0))
        assert r.n == 0 and r.diff.is_empty and r.mean_a.is_empty and math.isnan(r.p_value)
        assert math.isnan(r.mde) and r.n_discordant is None


@pytest.mark.parametrize(
    "kw",
    [
        {"a": [1, 0], "b": [1, 0, 1]},
        {"a": [1, 0], "b": [1, 0], "clusters": ["x"]},
        {"a": [0.5, 0.2], "b": [0.1, 0.3], "test": "mcnemar-exact"},
        {"a": [1, 0], "b": [1, 1], "test": "wilcoxon", "clusters": ["x", "y"]},
        {"a": [1, 0], "b": [1, 1], "test": "cluster-t"},
        {"a": [1, 0], "b": [1, 1], "test": "t-test"},
        {"a": [1, 0], "b": [1, math.inf]},
        {"a": [1, 0], "b": [1, 1], "alpha": 0.0},
        {"a": [1, 0], "b": [1, 1], "n_resamples": 0},
    ],
)
def test_bad_input_raises_value_error(kw: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        # wrong kinds on purpose: the test checks they raise ValueError
        paired_compare(rng=np.random.default_rng(0), **kw)  # type: ignore[arg-type]


def test_comparisons_doc_example_runs_and_its_comments_are_true() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "comparisons-statistics.md"
    code = "\n".join(re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(doc), "exec"), {})
    promised = [m.group(1).split(" — ")[0] for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    assert out.getvalue().splitlines() == promised
