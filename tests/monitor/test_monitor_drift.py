"""Drift alarms: a controlled false-alarm rate shown by simulation, and planted drift found."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from calipers.monitor._drift import DriftOptions
from calipers.monitor._report import MonitorConfig, monitor
from calipers.monitor._simulate import simulate_alarms
from calipers.store import Store
from tests.monitor._monitor_fixtures import (
    BASE,
    COOKING,
    HOUR,
    LONGER,
    T0,
    store_url,
    write_windows,
)

ALPHA = 0.05


def test_no_drift_alarms_at_most_alpha_and_psi_rule_far_more() -> None:
    """50 independent windows of 40 requests with no drift: the calibrated tests (Holm over the
    8 features) alarm in at most alpha of them, up to a 3-SE binomial margin; the folk rule
    PSI > 0.1 alarms in most (PSI with no drift is about 9 * 2/40 = 0.45)."""
    reps = 50
    r = simulate_alarms(
        reps=reps,
        n=40,
        rng=np.random.default_rng(2024),
        options=DriftOptions(alpha=ALPHA, n_permutations=199),
    )
    bound = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert r.alarms / reps <= bound, r.to_dict()
    assert r.magic_alarms >= 0.8 * reps, r.to_dict()
    assert r.magic_alarms >= r.alarms + 30


def test_injected_drift_is_detected() -> None:
    longer = simulate_alarms(
        reps=6,
        n=60,
        rng=np.random.default_rng(1),
        current=LONGER,
        options=DriftOptions(n_permutations=199),
    )
    assert longer.alarms >= 5, longer.to_dict()
    assert longer.by_feature.get("prompt_length/ks", 0) >= 5
    topic = simulate_alarms(
        reps=6,
        n=60,
        rng=np.random.default_rng(2),
        current=COOKING,
        options=DriftOptions(n_permutations=199),
    )
    assert topic.alarms >= 5, topic.to_dict()
    text_alarms = sum(
        v for k, v in topic.by_feature.items() if k.startswith(("topic/", "embedding/"))
    )
    assert text_alarms >= 5, topic.to_dict()


def test_monitor_flags_the_drifted_window(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    write_windows(url, [BASE, BASE, LONGER.replace(error_rate=0.3)], n=60, seed=3)
    config = MonitorConfig(
        since=T0,
        until=T0 + 3 * HOUR,
        embeddings="tfidf",
        n_permutations=199,
        alpha=ALPHA,
        min_reference=60,
    )
    with Store.open(url) as store:
        report = monitor(store, config)
    assert [w.start for w in report.drift] == [T0 + HOUR, T0 + 2 * HOUR]
    quiet, drifted = report.drift
    fired = {(r.feature, r.test.test) for r in drifted.alarms}
    assert ("prompt_length", "ks") in fired, fired
    assert {("error_rate", "chi2"), ("error_rate", "chi2-permutation")} & fired, fired
    assert not quiet.alarms, [r.to_dict() for r in quiet.alarms]
    for row in drifted.rows:  # Holm: adjusted p never below the raw one
        if not math.isnan(row.test.p_value):
            assert row.test.p_adjusted >= row.test.p_value
    d = report.to_dict()
    assert d["n_drifted_windows"] == 1
    assert "per window" in d["settings"]["multiplicity"]


def test_reference_period_and_latest_only(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    write_windows(url, [BASE, BASE, BASE, LONGER], n=50, seed=5)
    config = MonitorConfig(
        since=T0 + 2 * HOUR,
        until=T0 + 4 * HOUR,
        embeddings="tfidf",
        reference=(T0, T0 + 2 * HOUR),
        latest_only=True,
        n_permutations=199,
    )
    with Store.open(url) as store:
        report = monitor(store, config)
    assert report.reference[2] == 100  # two hours of 50 requests, outside --since
    assert [w.start for w in report.drift] == [T0 + 3 * HOUR]
    assert any(r.feature == "prompt_length" for r in report.drift[0].alarms)
