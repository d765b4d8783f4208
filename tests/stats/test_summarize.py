"""summarize chooses the interval as documented; is_binary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calipers.stats import clustered_mean, is_binary, summarize, wilson


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_binary_scores_use_wilson_on_the_counts() -> None:
    est = summarize([1, 0, 1, 1, 0, 1, 1], rng=rng())
    assert est == wilson(5, 7)
    assert est.method == "wilson"


def test_nan_values_are_unscored_not_wrong() -> None:
    # None is outside ArrayLike on purpose: the test checks it is read as NaN (as_values)
    est = summarize([1.0, float("nan"), 0.0, None, 1.0], rng=rng())  # type: ignore[arg-type]
    assert est.n == 3 and est.value == pytest.approx(2 / 3)


@pytest.mark.parametrize("values", [[], [float("nan"), None]])
def test_no_scored_values_is_empty(values: list[float | None]) -> None:
    est = summarize(values, rng=rng())  # type: ignore[arg-type]  # None read as NaN, on purpose
    assert est.n == 0 and math.isnan(est.value) and est.is_empty


def test_non_binary_scores_use_bootstrap() -> None:
    est = summarize([0.2, 0.9, 0.4, 0.5, 0.7], rng=rng())
    assert est.method.startswith("bootstrap-") and est.value == pytest.approx(0.54)


def test_shared_clusters_use_clustered_mean() -> None:
    values = [1, 1, 0, 0, 1, 0, 1, 1]
    labels = ["p1", "p1", "p2", "p2", "p3", "p3", "p4", "p4"]
    est = summarize(values, clusters=labels, rng=rng())
    assert est == clustered_mean(values, labels)
    assert est.method == "cluster-t"


def test_singleton_clusters_after_dropping_nan_are_independent() -> None:
    est = summarize([1.0, float("nan"), 0.0, 1.0], clusters=["a", "a", "b", "c"], rng=rng())
    assert est == wilson(2, 3)


def test_cluster_length_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        summarize([1, 0], clusters=["a"], rng=rng())


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0, 1, 1], True),
        ([True, False], True),
        ([0.0, float("nan"), 1.0], True),
        ([0, 0.5, 1], False),
        ([2, 1], False),
        ([], False),
    ],
)
def test_is_binary(values: list[float], expected: bool) -> None:
    assert is_binary(values) is expected
