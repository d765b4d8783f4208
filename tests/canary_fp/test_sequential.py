"""The fingerprint canary's always-valid test, by simulation: false alarms at most alpha
over 100 looks, a naive test against the fixed reference far above it, detection of a
planted switch and of a 16% mixture, and the statistic computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from calipers.stats import (
    canary_look,
    canary_reference,
    canary_verdict,
    hamming_kernel,
    msprt_paired_path,
)
from tests.canary_fp._sim import looks, models, reference

ALPHA = 0.05


def _binomial_ceiling(n: int, p: float) -> int:
    """The most alarms out of ``n`` that a true rate of ``p`` explains (one-sided, 0.999)."""
    return int(sps.binom.ppf(0.999, n, p))


def test_false_alarms_stay_below_alpha_over_100_looks() -> None:
    rng = np.random.default_rng(2021)
    p, q = models(40, 8, rng)
    alarms = 0
    for _ in range(300):
        ref = reference(p, 10, rng)
        alarms += canary_verdict(ref, looks(ref, p, q, 100, rng), alpha=ALPHA).state == "changed"
    assert alarms <= _binomial_ceiling(300, ALPHA)


def test_a_naive_test_against_the_fixed_reference_raises_false_alarms() -> None:
    """Score looks against the whole reference and test their mean against the reference's
    own (leave-one-out) mean: a fixed finite sample's number, not the looks' mean, so an
    always-valid test of that difference alarms far more often than alpha."""
    rng = np.random.default_rng(7)
    p, _ = models(40, 8, rng)
    alarms = 0
    for _ in range(50):
        refs = [p.sample(i, 10, rng) for i in range(40)]
        k = [hamming_kernel(r, r) for r in refs]
        center = np.mean([(m.sum(axis=1) - 1) / 9 for m in k])  # leave-one-out
        # T_i(s) for each of probe i's strings s, then 100 looks of one draw per probe
        t = [hamming_kernel(list(p.strings[i]), refs[i]).mean(axis=1) for i in range(40)]
        draws = [rng.choice(8, size=100, p=p.weights[i]) for i in range(40)]
        x = np.mean([t[i][draws[i]] for i in range(40)], axis=0)
        path = msprt_paired_path(x - center, alpha=ALPHA, min_n=3, n_target=24)
        alarms += bool((path.p_value <= ALPHA).any())
    assert alarms > 4 * ALPHA * 50


@pytest.mark.parametrize(("share", "per_probe", "detected", "median_at_most"), [
    (1.0, 10, 0.95, 25),  # another model from look 11 on
    (0.16, 50, 0.4, 90),  # 16% of requests routed to it, against a bigger reference
])  # fmt: skip
def test_a_planted_change_after_look_10_is_detected(
    share: float, per_probe: int, detected: float, median_at_most: int
) -> None:
    rng = np.random.default_rng(11)
    p, q = models(40, 8, rng)
    delays = []
    for _ in range(40):
        ref = reference(p, per_probe, rng)
        verdict = canary_verdict(ref, looks(ref, p, q, 100, rng, share_q=share, switch_after=10))
        if verdict.changed_at is not None:
            assert verdict.changed_at > 10 or share == 1.0  # an alarm before is a false one
            delays.append(verdict.changed_at - 10)
    assert len(delays) >= detected * 40
    assert np.median(delays) <= median_at_most


def test_look_statistic_by_hand() -> None:
    """Two probes, four reference completions each (anchors: positions 0 and 2)."""
    ref_texts = {"a": ["xxxx", "xxxy", "xxyy", "xyyy"], "b": ["abcd", "abcd", "abce", "abcf"]}
    ref = canary_reference(ref_texts, length=4)
    # calibration half of "a": "xxxy" vs anchors xxxx, xxyy -> (3/4 + 3/4)/2 = .75;
    # "xyyy" -> (1/4 + 3/4)/2 = .5; mean .625. "b": "abcd" -> (1 + 3/4)/2 = .875,
    # "abcf" -> (3/4 + 3/4)/2 = .75; mean .8125. theta_B = .71875.
    assert ref.theta == pytest.approx(0.71875)
    look = canary_look(ref, {"a": ["xxxx"], "b": ["zzzz"]})
    # T_a(xxxx) = (1 + 1/2)/2 = .75, T_b(zzzz) = 0: shifts +.125 and -.8125
    assert look.value == pytest.approx(0.71875 + (0.125 - 0.8125) / 2)
    assert look.n_probes == 2


def test_looks_scored_from_strings_equal_the_simulation_s_table() -> None:
    rng = np.random.default_rng(5)
    p, q = models(6, 5, rng)
    ref = reference(p, 8, rng)
    slow = looks(ref, p, q, 5, np.random.default_rng(1), share_q=0.5, fast=False)
    fast = looks(ref, p, q, 5, np.random.default_rng(1), share_q=0.5)
    assert [a.value for a in slow] == pytest.approx([b.value for b in fast], abs=1e-12)


def test_no_looks_and_too_few_looks_conclude_nothing() -> None:
    rng = np.random.default_rng(3)
    p, q = models(5, 4, rng)
    ref = reference(p, 6, rng)
    empty = canary_verdict(ref, [])
    assert empty.state == "not_enough_looks" and empty.estimate.n == 0
    two = canary_verdict(ref, looks(ref, p, q, 2, rng, share_q=1.0), min_looks=3)
    assert two.state == "not_enough_looks" and two.changed_at is None
    with pytest.raises(ValueError, match="at least 4"):
        canary_reference({"x": ["a", "b", "c"]})
