"""The canary's first-byte deadline, fed by hand: the baseline's p95 plus the margin, within
the floor and the ceiling; a fixed start until enough baseline answers are in."""

from __future__ import annotations

import numpy as np

from calipers.gateway._deadline import MIN_SAMPLES, WINDOW, FirstByteDeadline


def make(
    *,
    fixed_ms: float | None = None,
    margin_ms: float = 500.0,
    floor_ms: float = 250.0,
    start_ms: float = 2000.0,
    ceiling_ms: float = 30_000.0,
) -> FirstByteDeadline:
    return FirstByteDeadline(
        fixed_ms=fixed_ms,
        margin_ms=margin_ms,
        floor_ms=floor_ms,
        start_ms=start_ms,
        ceiling_ms=ceiling_ms,
    )


def test_follows_the_baseline_p95_of_its_own_kind() -> None:
    d = make()
    rng = np.random.default_rng(3)
    whole = rng.lognormal(6.5, 0.4, size=500)  # ~665 ms typical
    for i, ms in enumerate(whole):
        if i < MIN_SAMPLES - 1:
            d.observe(False, float(ms))
            assert d.ms(False) == 2000.0  # the start value until 20 answers are in
            continue
        d.observe(False, float(ms))
    last = whole[-WINDOW:]  # the window: the last 200 answers (recomputed every 10)
    assert abs(d.ms(False) - (np.percentile(last, 95) + 500.0)) < 1e-6
    assert d.ms(True) == 2000.0  # streams have their own window, still empty
    for ms in range(40):
        d.observe(True, 10.0 + ms)
    assert abs(d.ms(True) - max(250.0, np.percentile(np.arange(10.0, 50.0), 95) + 500)) < 1e-6


def test_floor_ceiling_and_a_fixed_deadline() -> None:
    tight = make(margin_ms=0.0)
    for _ in range(MIN_SAMPLES):
        tight.observe(False, 5.0)
    assert tight.ms(False) == 250.0  # the floor
    slow = make(ceiling_ms=3000.0)
    for _ in range(MIN_SAMPLES):
        slow.observe(False, 9000.0)
    assert slow.ms(False) == 3000.0  # the candidate timeout caps it
    fixed = make(fixed_ms=1200.0)
    for _ in range(MIN_SAMPLES):
        fixed.observe(False, 9000.0)
    assert fixed.ms(False) == fixed.ms(True) == 1200.0
    snap = slow.snapshot()
    assert snap["whole"] == {
        "deadline_ms": 3000.0,
        "baseline_p95_ms": 9000.0,
        "baseline_samples": MIN_SAMPLES,
    }
