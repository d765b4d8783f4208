"""Always-valid A/B tests: the mixture formula against numerical integration and the published
confidence-sequence formula, and by simulation: A/A false alarms under peeking after every
observation stay at or below alpha (a naive t-test does not), power, uniform coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from calipers.stats._sequential import (
    Guardrail,
    _mixture,
    _x_star,
    decide,
    guardrail_verdict,
    msprt_paired,
    msprt_paired_path,
    msprt_two_sample,
    msprt_two_sample_path,
)
from calipers.types import Estimate

ALPHA = 0.05
STREAMS = 1000
LIMIT = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / STREAMS)  # 0.0707: alpha + 3 SE


def false_alarm(path_p: np.ndarray) -> float:
    """Share of streams whose always-valid p-value ever fell to alpha (at any of the looks)."""
    return float(np.mean(path_p.min(axis=-1) <= ALPHA))


def test_mixture_likelihood_ratio_equals_numerical_integration() -> None:
    """Known variance: Lambda_n = int prod_i N(d_i; t, s^2) / N(d_i; 0, s^2) N(t; 0, tau^2) dt."""
    rng = np.random.default_rng(0)
    sigma, tau, d = 2.0, 0.7, rng.normal(0.4, 2.0, size=30)

    def integrand(t: float) -> float:
        log_ratio = np.sum(stats.norm.logpdf(d, t, sigma) - stats.norm.logpdf(d, 0, sigma))
        return float(np.exp(log_ratio) * stats.norm.pdf(t, 0, tau))

    lam = integrate.quad(integrand, -10, 10, points=[float(d.mean())], epsabs=1e-13)[0]
    p, _ = _mixture(np.array([d.mean()]), np.array([sigma**2 / d.size]), np.array([tau**2]), ALPHA)
    assert p[0] == pytest.approx(min(1.0, 1 / lam), rel=1e-6)


def test_confidence_sequence_matches_waudby_smith_formula() -> None:
    # Waudby-Smith et al. (2021), asymptotic CS (Gaussian mixture): mean +/- sigma *
    # sqrt(2 (n rho^2 + 1) / (n^2 rho^2) * log(sqrt(n rho^2 + 1) / alpha)), tau = rho sigma.
    n, sigma, rho = np.arange(1, 500), 1.7, 0.09
    _, half = _mixture(np.zeros(n.size), sigma**2 / n, np.full(n.size, (rho * sigma) ** 2), ALPHA)
    ref = sigma * np.sqrt(
        2 * (n * rho**2 + 1) / (n**2 * rho**2) * np.log(np.sqrt(n * rho**2 + 1) / ALPHA)
    )
    np.testing.assert_allclose(half, ref, rtol=1e-12)
    # The default mixing makes the sequence narrowest at n_target; x* near their closed form.
    x = _x_star(ALPHA)
    assert x == pytest.approx(-2 * math.log(ALPHA) + math.log(1 - 2 * math.log(ALPHA)), rel=0.05)

    def half_at_1000(n_target: float) -> float:  # tau^2 = x* V n / n_target, V = 1 / n
        return float(_mixture(np.zeros(1), np.array([1e-3]), np.array([x / n_target]), ALPHA)[1][0])

    assert half_at_1000(1000) < min(half_at_1000(900), half_at_1000(1100))


def test_aa_paired_peeking_every_observation_keeps_false_alarms_at_alpha() -> None:
    """1,000 A/A streams of 2,000 paired differences, looked at after every one."""
    rng = np.random.default_rng(1)
    d = rng.normal(0, 1, size=(STREAMS, 2000))
    path = msprt_paired_path(d, alpha=ALPHA)
    assert false_alarm(path.p_value) <= LIMIT
    # The same CS read as a test: 0 leaves the running intersection exactly when p <= alpha.
    outside = (path.low[:, -1] > 0) | (path.high[:, -1] < 0)
    np.testing.assert_array_equal(outside, path.p_value[:, -1] <= ALPHA)
    # A naive fixed-n t test, looked at every 10 pairs from n = 100, is wrong far more often.
    n = np.arange(1, 2001)
    mean = np.cumsum(d, axis=1) / n
    sd = np.sqrt((np.cumsum(d**2, axis=1) - n * mean**2) / np.maximum(n - 1, 1))
    looks = np.arange(99, 2000, 10)
    t = mean[:, looks] / (sd[:, looks] / np.sqrt(n[looks]))
    naive = 2 * stats.t.sf(np.abs(t), n[looks] - 1)
    assert float(np.mean(naive.min(axis=1) <= ALPHA)) > 0.15
    assert float(np.mean(naive[:, -1] <= ALPHA)) <= LIMIT  # one look at the end is fine


def test_aa_paired_skewed_and_binary_scores() -> None:
    rng = np.random.default_rng(2)
    skewed = rng.exponential(size=(STREAMS, 2000)) - 1.0
    assert false_alarm(msprt_paired_path(skewed).p_value) <= LIMIT
    a = (rng.random((STREAMS, 2000)) < 0.8).astype(float)
    b = (rng.random((STREAMS, 2000)) < 0.8).astype(float)
    assert false_alarm(msprt_paired_path(b - a).p_value) <= LIMIT


@pytest.mark.parametrize(("share", "rate"), [(0.5, 0.3), (0.2, 0.05)])
def test_aa_two_sample_binary_canary(share: float, rate: float) -> None:
    """Canary with ``share`` of traffic on B and a 0/1 metric of rate ``rate`` in both arms."""
    rng = np.random.default_rng(3)
    x = (rng.random((STREAMS, 2500)) < rate).astype(float)
    treated = rng.random((STREAMS, 2500)) < share
    path = msprt_two_sample_path(x, treated, binary=True)
    assert false_alarm(path.p_value) <= LIMIT


def test_power_and_uniform_coverage_paired() -> None:
    """True effect 0.15 SD: most streams reject by 2,000 pairs, and the confidence sequence
    holds the true effect at every n at once in at least 1 - alpha of the streams."""
    rng = np.random.default_rng(4)
    theta = 0.15
    d = theta + rng.normal(0, 1, size=(STREAMS, 2000))
    path = msprt_paired_path(d)
    assert float(np.mean(path.p_value[:, -1] <= ALPHA)) >= 0.9
    # the running intersection at the end holds theta iff every interval held it
    covered = (path.low[:, -1] <= theta) & (theta <= path.high[:, -1])
    assert float(np.mean(covered)) >= 1 - LIMIT


def test_uniform_coverage_two_sample_unbalanced_continuous() -> None:
    rng = np.random.default_rng(5)
    treated = rng.random((STREAMS, 3000)) < 0.3
    x = rng.gamma(2.0, 1.0, size=(STREAMS, 3000)) + np.where(treated, 0.2, 0.0)
    path = msprt_two_sample_path(x, treated, tau=0.2)
    covered = (path.low[:, -1] <= 0.2) & (path.high[:, -1] >= 0.2)
    assert float(np.mean(covered)) >= 1 - LIMIT
    assert float(np.mean(path.p_value[:, -1] <= ALPHA)) >= 0.5


def test_one_stream_summary_matches_its_path() -> None:
    rng = np.random.default_rng(6)
    d = 0.3 + rng.normal(size=800)
    with_gaps = np.insert(d, [5, 50], np.nan)
    r = msprt_paired(with_gaps)
    path = msprt_paired_path(d)
    assert (r.effect.value, r.effect.low, r.effect.high) == (
        path.estimate[-1],
        path.low[-1],
        path.high[-1],
    )
    assert r.effect.method == "msprt-normal-mixture" and r.effect.confidence == 0.95
    assert (r.n_a, r.n_b, r.effect.n) == (800, 800, 800)
    assert r.effect.value == pytest.approx(d.mean())
    first = int(np.argmax(path.p_value <= ALPHA)) + 1
    assert r.rejected_at == first and r.p_value <= ALPHA
    assert np.all(path.p_value[:99] == 1.0) and np.all(np.isinf(path.low[:99]))
    assert np.all(np.diff(path.p_value) <= 0)  # always-valid p never goes back up
    treated = np.arange(900) % 3 == 0
    y = rng.normal(size=900) + 0.5 * treated
    two = msprt_two_sample(y, treated)
    assert (two.n_a, two.n_b) == (600, 300)
    assert two.effect.value == pytest.approx(y[treated].mean() - y[~treated].mean())
    assert msprt_paired([]).effect.is_empty


def test_input_errors() -> None:
    with pytest.raises(ValueError, match="NaN"):
        msprt_paired_path([1.0, np.nan])
    with pytest.raises(ValueError, match="0/1"):
        msprt_two_sample([0.0, 2.0], [True, False], binary=True)
    with pytest.raises(ValueError, match="arm labels"):
        msprt_two_sample([1.0, 2.0], [True])
    with pytest.raises(ValueError, match="tau"):
        msprt_paired([1.0, 2.0], tau=0.0)
    with pytest.raises(ValueError, match="alpha"):
        msprt_paired([1.0, 2.0], alpha=1.5)
    with pytest.raises(ValueError, match="min_n"):
        msprt_paired([1.0, 2.0], min_n=1)


# --- decisions ------------------------------------------------------------------------------


def est(low: float, high: float, n: int = 500, method: str = "msprt-normal-mixture") -> Estimate:
    return Estimate((low + high) / 2, low, high, n, method, 0.95)


def test_decide_promote_roll_back_keep_watching() -> None:
    latency_ok = Guardrail("latency_s", est(-0.2, 0.05), higher_is_better=False, tolerance=0.1)
    latency_bad = Guardrail("latency_s", est(0.15, 0.4), higher_is_better=False, tolerance=0.1)
    latency_open = Guardrail("latency_s", est(-0.1, 0.3), higher_is_better=False, tolerance=0.1)
    assert decide(est(0.01, 0.05), guardrails=[latency_ok]).action == "promote"
    bad = decide(est(0.01, 0.05), guardrails=[latency_bad])
    assert bad.action == "roll_back" and "latency_s: worse by more than 0.1" in bad.reasons[0]
    assert decide(est(-0.06, -0.01)).action == "roll_back"
    watch = decide(est(0.01, 0.05), guardrails=[latency_open])
    assert watch.action == "keep_watching"
    assert any("cannot yet rule out harm" in r for r in watch.reasons)
    assert decide(est(-0.01, 0.05)).action == "keep_watching"
    assert decide(est(0.01, 0.05), min_improvement=0.02).action == "keep_watching"
    assert decide(est(-0.01, 0.05, n=5000), max_n=5000).action == "roll_back"
    # lower is better for the primary metric too (e.g. error rate)
    assert decide(est(-0.05, -0.01), higher_is_better=False).action == "promote"


def test_decide_before_burn_in_and_on_an_empty_sequence() -> None:
    early = Estimate(0.1, -math.inf, math.inf, 40, "msprt-normal-mixture")
    assert decide(early).action == "keep_watching"
    assert "not enough data" in decide(early).reasons[0]
    empty = Estimate(0.1, math.nan, math.nan, 900, "msprt-normal-mixture-empty")
    d = decide(empty)
    assert d.action == "keep_watching" and "changed over time" in d.reasons[0]
    with pytest.raises(ValueError, match="tolerance"):
        decide(early, guardrails=[Guardrail("x", early, tolerance=-1)])


def test_an_empty_guardrail_sequence_is_a_decision_when_it_shows_harm() -> None:
    # An error rate (lower is better, tolerance 1 point) whose sequence became empty: at one
    # look it was surely at least +5.2 points, at another surely at most +0.4. The first
    # bound alone puts it beyond the tolerance: failing, roll back, with the reason.
    empty = Estimate(0.047, math.nan, math.nan, 3600, "msprt-normal-mixture-empty")
    outage = Guardrail(
        "error_rate", empty, higher_is_better=False, tolerance=0.01, crossed=(0.052, 0.004)
    )
    status, reason = guardrail_verdict(outage)
    assert status == "failing" and "moved" in reason and "above +0.052" in reason
    d = decide(est(-0.01, 0.05), guardrails=[outage])
    assert d.action == "roll_back" and d.reasons == (reason,)
    # Moved, but never shown beyond the tolerance on the bad side: not safe, not failing.
    drift = Guardrail(
        "error_rate", empty, higher_is_better=False, tolerance=0.01, crossed=(0.008, 0.004)
    )
    assert guardrail_verdict(drift)[0] == "moved"
    assert decide(est(0.01, 0.05), guardrails=[drift]).action == "keep_watching"
    # Higher is better (a quality guardrail): harm is the upper bound below -tolerance.
    quality = Guardrail("q", empty, higher_is_better=True, tolerance=0.01, crossed=(0.02, -0.03))
    assert guardrail_verdict(quality)[0] == "failing"
    assert guardrail_verdict(Guardrail("q", empty, True, 0.01, (0.02, -0.005)))[0] == "moved"


def test_an_empty_primary_sequence_that_shows_the_candidate_worse_rolls_back() -> None:
    empty = Estimate(-0.02, math.nan, math.nan, 900, "msprt-normal-mixture-empty")
    worse = decide(empty, primary_crossed=(0.01, -0.03))  # once surely below -0.03
    assert worse.action == "roll_back" and "moved" in worse.reasons[0]
    better = decide(empty, primary_crossed=(0.04, 0.01))  # moved, always above 0
    assert better.action == "keep_watching" and "investigate" in better.reasons[0]
