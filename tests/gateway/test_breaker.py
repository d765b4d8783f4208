"""The circuit breaker's states on a hand-driven clock."""

from __future__ import annotations

from calipers.gateway import BreakerState, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def state(b: CircuitBreaker) -> BreakerState:
    """``b.state`` read afresh: the property moves with the clock and with ``failure()``, which
    a type checker, narrowing ``b.state`` after an assert, does not know."""
    return b.state


def test_opens_after_consecutive_failures_only() -> None:
    b = CircuitBreaker(3, 10.0, Clock())
    for _ in range(2):
        b.failure()
    b.success()  # the run of failures is broken
    b.failure()
    b.failure()
    assert state(b) == "closed" and b.allow()
    b.failure()
    assert state(b) == "open" and not b.allow()
    assert b.times_opened == 1


def test_half_open_lets_one_trial_through() -> None:
    clock = Clock()
    b = CircuitBreaker(1, 10.0, clock)
    b.failure()
    clock.now += 9.9
    assert not b.allow()
    clock.now += 0.2
    assert state(b) == "half_open"
    assert b.allow()
    assert not b.allow()  # only one trial at a time
    b.failure()  # the trial failed: open again, for a full period
    assert state(b) == "open" and b.times_opened == 2
    clock.now += 10.0
    assert b.allow()
    b.success()
    assert state(b) == "closed" and b.allow() and b.allow()
    assert b.snapshot() == {
        "state": "closed",
        "failures_in_a_row": 0,
        "times_opened": 2,
        "slow_calls": 0,
    }
