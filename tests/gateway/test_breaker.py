"""The circuit breaker's states on a hand-driven clock."""

from __future__ import annotations

from calipers.gateway import CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_consecutive_failures_only() -> None:
    b = CircuitBreaker(3, 10.0, Clock())
    for _ in range(2):
        b.failure()
    b.success()  # the run of failures is broken
    b.failure()
    b.failure()
    assert b.state == "closed" and b.allow()
    b.failure()
    assert b.state == "open" and not b.allow()
    assert b.times_opened == 1


def test_half_open_lets_one_trial_through() -> None:
    clock = Clock()
    b = CircuitBreaker(1, 10.0, clock)
    b.failure()
    clock.now += 9.9
    assert not b.allow()
    clock.now += 0.2
    assert b.state == "half_open"
    assert b.allow()
    assert not b.allow()  # only one trial at a time
    b.failure()  # the trial failed: open again, for a full period
    assert b.state == "open" and b.times_opened == 2
    clock.now += 10.0
    assert b.allow()
    b.success()
    assert b.state == "closed" and b.allow() and b.allow()
    assert b.snapshot() == {
        "state": "closed",
        "failures_in_a_row": 0,
        "times_opened": 2,
        "slow_calls": 0,
    }
