"""A circuit breaker for the candidate: after ``failures`` failures in a row it opens and the
candidate is not called; after ``reset_s`` it lets one trial call through (half-open); a
success closes it, a failure opens it again. A call too slow for its deadline is a failure
(``failure(slow=True)``, counted apart): the breaker opens on latency, not only on errors."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

__all__ = ["BreakerState", "CircuitBreaker"]

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Not thread-safe: used from the gateway's one event loop."""

    def __init__(
        self, failures: int, reset_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.threshold = failures
        self.reset_s = reset_s
        self._clock = clock
        self._state: BreakerState = "closed"
        self._in_a_row = 0
        self._opened_at = 0.0
        self._trial_out = False
        self.times_opened = 0
        self.slow_calls = 0

    @property
    def state(self) -> BreakerState:
        if self._state == "open" and self._clock() - self._opened_at >= self.reset_s:
            self._state = "half_open"
            self._trial_out = False
        return self._state

    def allow(self) -> bool:
        """Whether a call may go to the candidate now. In half-open, only one at a time."""
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._trial_out:
            self._trial_out = True
            return True
        return False

    def success(self) -> None:
        self._in_a_row = 0
        self._state = "closed"
        self._trial_out = False

    def failure(self, *, slow: bool = False) -> None:
        if slow:
            self.slow_calls += 1
        self._in_a_row += 1
        if self._state == "half_open" or self._in_a_row >= self.threshold:
            if self._state != "open":
                self.times_opened += 1
            self._state = "open"
            self._opened_at = self._clock()
            self._trial_out = False

    def snapshot(self) -> dict[str, object]:
        return {
            "state": self.state,
            "failures_in_a_row": self._in_a_row,
            "times_opened": self.times_opened,
            "slow_calls": self.slow_calls,
        }
