"""Dawid-Skene: a hand-worked fixed point, a loop implementation, and planted accuracies."""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np
import pytest

from calipers.stats import dawid_skene

PLANTED = np.array([0.95, 0.9, 0.8, 0.7, 0.55])


def test_hand_worked_example_reaches_its_fixed_point_at_once() -> None:
    # Raters A, B; items 1-3: (0, 0), (0, 1), (1, 1). Majority start: [1, 0], [.5, .5], [0, 1].
    # M-step, no smoothing: prior [.5, .5]; A: row 0 = [1, 0], row 1 = [1/3, 2/3];
    # B: row 0 = [2/3, 1/3], row 1 = [0, 1]. E-step: item 1 has joint [1/3, 0], item 2
    # [1/6, 1/6], item 3 [0, 1/3]: the same posteriors, so EM stops after its 2nd iteration.
    fit = dawid_skene(
        [1, 1, 2, 2, 3, 3], ["A", "B"] * 3, [0, 0, 0, 1, 1, 1], smoothing=0.0, tol=1e-12
    )
    assert fit.classes == (0, 1) and fit.raters == ("A", "B") and fit.items == (1, 2, 3)
    np.testing.assert_allclose(fit.posterior, [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]], atol=1e-15)
    np.testing.assert_allclose(fit.prior, [0.5, 0.5])
    np.testing.assert_allclose(fit.confusion[0], [[1.0, 0.0], [1 / 3, 2 / 3]])
    np.testing.assert_allclose(fit.confusion[1], [[2 / 3, 1 / 3], [0.0, 1.0]])
    np.testing.assert_allclose(fit.accuracy, [5 / 6, 5 / 6])
    assert fit.log_likelihood == pytest.approx(3 * math.log(1 / 3))
    assert fit.labels == (0, 0, 1)  # item 2 is a tie: the first class
    assert (fit.iterations, fit.converged) == (2, True)


def loop_dawid_skene(
    triples: list[tuple[int, int, int]],
    n_items: int,
    n_raters: int,
    k: int,
    alpha: float,
    steps: int,
) -> tuple[list[list[float]], list[float], list[list[list[float]]], float]:
    """EM written out with loops from the 1979 paper: start at each item's vote shares,
    then ``steps`` times: M-step with ``alpha`` pseudo-counts, E-step."""
    t = [[0.0] * k for _ in range(n_items)]
    for i, _, lab in triples:
        t[i][lab] += 1
    t = [[v / sum(row) for v in row] for row in t]
    ll = 0.0
    for _ in range(steps):
        prior = [sum(t[i][c] for i in range(n_items)) + alpha for c in range(k)]
        prior = [p / sum(prior) for p in prior]
        conf = [[[alpha] * k for _ in range(k)] for _ in range(n_raters)]
        for i, r, lab in triples:
            for c in range(k):
                conf[r][c][lab] += t[i][c]
        conf = [[[v / sum(row) for v in row] for row in m] for m in conf]
        joint = [list(prior) for _ in range(n_items)]
        for i, r, lab in triples:
            for c in range(k):
                joint[i][c] *= conf[r][c][lab]
        t = [[v / sum(row) for v in row] for row in joint]
        ll = sum(math.log(sum(row)) for row in joint)
    return t, prior, conf, ll


@pytest.mark.parametrize("steps", [1, 2, 7])
def test_matches_a_loop_implementation_step_by_step(steps: int) -> None:
    rng = np.random.default_rng(4)
    n_items, n_raters, k = 12, 4, 3
    truth = rng.integers(0, k, n_items)
    triples = [
        (i, r, int(truth[i]) if rng.random() < 0.7 else int(rng.integers(0, k)))
        for i in range(n_items)
        for r in range(n_raters)
        if rng.random() < 0.75 or r == 0  # gaps; rater 0 labels everything
    ]
    items, raters, labels = zip(*triples, strict=True)
    fit = dawid_skene(
        items, raters, labels, classes=range(k), smoothing=0.3, tol=0.0, max_iter=steps
    )
    post, prior, conf, ll = loop_dawid_skene(triples, n_items, n_raters, k, 0.3, steps)
    order = np.array(fit.items, dtype=np.intp)  # items in order of first appearance: 0..11 here
    np.testing.assert_allclose(fit.posterior, np.array(post)[order], atol=1e-12)
    np.testing.assert_allclose(fit.prior, prior, atol=1e-12)
    np.testing.assert_allclose(
        fit.confusion, np.array(conf)[np.array(fit.raters, dtype=np.intp)], atol=1e-12
    )
    assert fit.log_likelihood == pytest.approx(ll, abs=1e-9)
    assert fit.iterations == steps


def simulate(
    rng: np.random.Generator, n_items: int, k: int = 3, missing: float = 0.0
) -> tuple[list[int], list[int], list[int], np.ndarray, np.ndarray]:
    """Each rater is right with its planted accuracy, otherwise picks a wrong class at
    random; returns the triples, the true classes and each rater's realised accuracy."""
    truth = rng.integers(0, k, n_items)
    items: list[int] = []
    raters: list[int] = []
    labels: list[int] = []
    realised = []
    for r, acc in enumerate(PLANTED):
        right = rng.random(n_items) < acc
        answer = np.where(right, truth, (truth + rng.integers(1, k, n_items)) % k)
        keep = rng.random(n_items) >= missing
        realised.append(right[keep].mean())
        items += np.flatnonzero(keep).tolist()
        raters += [r] * int(keep.sum())
        labels += answer[keep].tolist()
    return items, raters, labels, truth, np.array(realised)


def test_recovers_planted_accuracies() -> None:
    # 300 items: the estimate tracks each rater's realised accuracy (what the data can
    # show) to 0.03; 1,000 items: sampling noise is small enough for +/-0.05 of planted.
    items, raters, labels, truth, realised = simulate(np.random.default_rng(7), 300)
    fit = dawid_skene(items, raters, labels)
    assert fit.converged and fit.raters == (0, 1, 2, 3, 4)
    assert np.abs(fit.accuracy - realised).max() <= 0.03
    assert np.mean(np.array(fit.labels) == truth[np.array(fit.items, dtype=np.intp)]) >= 0.95
    majority_wrong = 0
    for i in range(300):
        votes = np.bincount(
            [lab for it, lab in zip(items, labels, strict=True) if it == i], minlength=3
        )
        majority_wrong += int(np.argmax(votes) != truth[i])
    assert np.sum(np.array(fit.labels) != truth) < majority_wrong  # weighting beats voting

    items, raters, labels, _, _ = simulate(np.random.default_rng(8), 1000)
    fit = dawid_skene(items, raters, labels)
    assert np.abs(fit.accuracy - PLANTED).max() <= 0.05
    np.testing.assert_allclose(fit.prior, [1 / 3] * 3, atol=0.05)
    np.testing.assert_allclose(fit.confusion.sum(axis=2), 1.0)


def test_missing_labels_and_names() -> None:
    items, raters, labels, _, _ = simulate(np.random.default_rng(9), 1000, missing=0.4)
    names = ["yes", "no", "maybe"]
    fit = dawid_skene(
        [f"q{i}" for i in items],
        [f"r{r}" for r in raters],
        [names[v] for v in labels],
        classes=names,
    )
    assert fit.classes == ("yes", "no", "maybe") and fit.raters[0] == "r0"
    assert np.abs(fit.accuracy - PLANTED).max() <= 0.05
    assert set(fit.labels) <= set(names)


@pytest.mark.slow
def test_recovery_rate_by_simulation() -> None:
    """200 datasets of 1,000 items: every rater within +/-0.05 of planted in >= 99%; with
    300 items and 30% of labels missing, within 0.06 of realised in >= 95%."""
    rng = np.random.default_rng(10)
    close = sum(
        np.abs(dawid_skene(*simulate(rng, 1000)[:3]).accuracy - PLANTED).max() <= 0.05
        for _ in range(200)
    )
    assert close >= 198
    tracked = 0
    for _ in range(200):
        items, raters, labels, _, realised = simulate(rng, 300, missing=0.3)
        tracked += np.abs(dawid_skene(items, raters, labels).accuracy - realised).max() <= 0.06
    assert tracked >= 190


def test_validation() -> None:
    with pytest.raises(ValueError, match="triple"):
        dawid_skene([1, 2], ["a"], [0, 1])
    with pytest.raises(ValueError, match="not one of the classes"):
        dawid_skene([1], ["a"], ["x"], classes=["y"])
    with pytest.raises(ValueError, match="smoothing"):
        dawid_skene([1], ["a"], [0], smoothing=-1)
    with pytest.raises(ValueError, match="no judgments"):
        dawid_skene([], [], [])
    unused: list[Hashable] = ["a", "b", "c"]
    fit = dawid_skene([1, 1, 2], ["x", "y", "x"], ["a", "a", "b"], classes=unused)
    assert fit.posterior.shape == (2, 3) and fit.prior[2] < 0.05
    # No smoothing: rater y never saw a class-x item, so its x row has no weight: uniform.
    bare = dawid_skene([1, 2, 2], ["x", "x", "y"], ["a", "b", "b"], smoothing=0.0)
    np.testing.assert_allclose(bare.confusion[1], [[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(bare.posterior, [[1.0, 0.0], [0.0, 1.0]])
