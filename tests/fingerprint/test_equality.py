"""Model equality tests (calipers.stats.equality_tests): the statistic against a brute-force
computation, false alarms at most alpha over many same-vs-same checks, power on planted
changes, which probes moved, and resampling."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from scipy.stats import binom

from calipers.stats import (
    equality_power,
    equality_tests,
    hamming_kernel,
    resample_check,
    unrelated_pools,
)

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def model(
    probes: int, n: int, rng: np.random.Generator, *, tilt: float = 0.0, temper: float = 1.0
) -> dict[str, list[str]]:
    """Completions of ``probes`` prompts: two words drawn from a probe-specific distribution
    (``tilt`` moves mass onto one more word; ``temper`` < 1 sharpens it, as a lower
    temperature does), prefixed by the probe's id, like answers that start alike."""
    out = {}
    for j in range(probes):
        w = np.ones(len(WORDS))
        w[j % len(WORDS)] += 4.0
        w[(j + 3) % len(WORDS)] += 12.0 * tilt
        w = w ** (1.0 / temper)
        w /= w.sum()
        pick = rng.choice(len(WORDS), size=(n, 2), p=w)
        out[f"p{j}"] = [f"{j}: {WORDS[a]} {WORDS[b]}" for a, b in pick]
    return out


def brute_mmd(x: list[str], y: list[str]) -> float:
    """Gretton et al.'s unbiased MMD^2, written out with explicit loops over pairs."""

    def k(a: str, b: str) -> float:
        return float(hamming_kernel([a], [b])[0, 0])

    n, m = len(x), len(y)
    xx = sum(k(a, b) for a, b in itertools.permutations(x, 2)) / (n * (n - 1))
    yy = sum(k(a, b) for a, b in itertools.permutations(y, 2)) / (m * (m - 1))
    xy = sum(k(a, b) for a in x for b in y) / (n * m)
    return xx + yy - 2 * xy


def test_statistic_is_the_mean_of_per_probe_unbiased_mmds() -> None:
    rng = np.random.default_rng(1)
    a, b = model(3, 5, rng), model(3, 4, rng, tilt=1.0)
    res = equality_tests(a, b, rng=rng, permutations=50)
    expected = [brute_mmd(a[p], b[p]) for p in a]
    assert [p.statistic for p in res.mmd.probes] == pytest.approx(expected, abs=1e-12)
    assert res.mmd.statistic == pytest.approx(np.mean(expected), abs=1e-12)
    assert [p.n_reference for p in res.mmd.probes] == [5, 5, 5]
    assert [p.n_candidate for p in res.mmd.probes] == [4, 4, 4]


def test_identical_answers_everywhere_give_p_one_and_no_change() -> None:
    same = {f"p{j}": ["the same answer"] * 6 for j in range(5)}
    res = equality_tests(same, same, rng=np.random.default_rng(0), permutations=99)
    assert res.mmd.p_value == 1.0 and res.rank.p_value == 1.0
    assert not res.changed and res.moved == ()


def test_the_decision_is_holm_over_the_two_tests() -> None:
    rng = np.random.default_rng(2)
    res = equality_tests(model(10, 6, rng), model(10, 6, rng, tilt=0.5), rng=rng)
    assert res.p_value == pytest.approx(min(1.0, 2 * min(res.mmd.p_value, res.rank.p_value)))


def test_probes_with_fewer_than_two_completions_are_left_out() -> None:
    rng = np.random.default_rng(3)
    a, b = model(4, 5, rng), model(4, 5, rng)
    b["p0"] = b["p0"][:1]
    del b["p1"]
    res = equality_tests(a, b, rng=rng, permutations=20)
    assert [p.probe for p in res.mmd.probes] == ["p2", "p3"]
    empty = equality_tests({"x": ["a"]}, {"x": ["b"]}, rng=rng)
    assert np.isnan(empty.p_value) and not empty.changed


def test_false_alarms_at_most_alpha_over_500_same_vs_same_checks() -> None:
    """Under the null each test, and the decision, rejects at most alpha of the time: with
    500 checks the count stays below the binomial 99.9% bound for alpha = 0.05."""
    rng = np.random.default_rng(4)
    reps, alpha = 500, 0.05
    hits = {"decision": 0, "mmd": 0, "rank": 0}
    for _ in range(reps):
        res = equality_tests(
            model(8, 5, rng), model(8, 5, rng), rng=rng, permutations=99, alpha=alpha
        )
        hits["decision"] += res.changed
        hits["mmd"] += res.mmd.p_value <= alpha
        hits["rank"] += res.rank.p_value <= alpha
    bound = binom.ppf(0.999, reps, alpha)  # 36 of 500
    assert all(k <= bound for k in hits.values()), hits
    assert hits["mmd"] >= 5 and hits["rank"] >= 5  # and they are not degenerate (never reject)


def test_power_on_planted_changes() -> None:
    """A tilted distribution and a sharpened one (a lower temperature) are caught; the
    rank test sees the candidate as *more* like the reference when it collapses onto the
    reference's common answers (a positive statistic), less when tilted away."""
    rng = np.random.default_rng(5)
    ref = model(20, 10, rng)
    tilted = equality_tests(ref, model(20, 10, rng, tilt=1.0), rng=rng, permutations=200)
    assert tilted.changed and tilted.rank.statistic < 0
    sharp = equality_tests(ref, model(20, 10, rng, temper=0.4), rng=rng, permutations=200)
    assert sharp.changed and sharp.rank.statistic > 0


def test_which_probes_moved() -> None:
    rng = np.random.default_rng(6)
    ref, cand = model(20, 20, rng), model(20, 20, rng)
    for j in (3, 11, 17):  # these probes now answer something else entirely
        cand[f"p{j}"] = [f"{j}: {w} {w}" for w in rng.choice(["kilo", "lima"], 20)]
    res = equality_tests(ref, cand, rng=rng, permutations=1000)
    assert res.changed and set(res.moved) == {"p3", "p11", "p17"}


def test_mixture_power_grows_with_the_share_and_the_budget() -> None:
    """Power to notice epsilon of traffic from a model with unrelated answers
    (unrelated_pools): more share or more samples per probe, more power; none at all means
    the false-alarm rate."""
    rng = np.random.default_rng(7)
    pool = model(12, 40, rng)
    other = unrelated_pools(pool)

    def power(n: int, eps: float) -> float:
        est = equality_power(
            lambda r: resample_check(pool, n, r, other=other, epsilon=eps),
            rng=rng,
            repetitions=60,
            permutations=100,
        )
        assert est.n == 60 and est.method == "wilson" and est.low <= est.value <= est.high
        return est.value

    assert power(10, 1.0) == 1.0
    assert power(10, 0.5) >= 0.9
    assert power(10, 0.16) > power(3, 0.16)
    assert power(5, 0.0) <= binom.ppf(0.999, 60, 0.05) / 60


def test_resample_check_splits_without_sharing_and_mixes_at_epsilon() -> None:
    rng = np.random.default_rng(8)
    pool = {"a": [f"a{i}" for i in range(20)], "b": [f"b{i}" for i in range(20)]}
    ref, cand = resample_check(pool, 10, rng)
    for k in pool:
        assert len(ref[k]) == len(cand[k]) == 10 and not set(ref[k]) & set(cand[k])
    other = {"a": ["X"] * 5, "b": ["Y"] * 5}
    shares = []
    for _ in range(400):
        _, cand = resample_check(pool, 5, rng, other=other, epsilon=0.3, replace=True)
        shares.append(sum(t in ("X", "Y") for v in cand.values() for t in v) / 10)
    assert np.mean(shares) == pytest.approx(0.3, abs=0.03)
    with pytest.raises(ValueError, match="without replacement"):
        resample_check(pool, 11, rng)
    assert unrelated_pools({"a": ["1"], "b": ["2"], "c": ["3"]}) == {
        "a": ("2",),
        "b": ("3",),
        "c": ("1",),
    }


def test_forty_probes_twenty_a_side_a_thousand_permutations_take_seconds() -> None:
    rng = np.random.default_rng(9)
    a, b = model(40, 20, rng), model(40, 20, rng)
    start = time.perf_counter()
    equality_tests(a, b, rng=rng, permutations=1000)
    assert time.perf_counter() - start < 20  # about 2 s on an idle core
