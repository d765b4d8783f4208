"""One fleet endpoint's load control: an AIMD window and its health.

The window is how many requests the endpoint may have in flight (its integer part, at least
one). Additive increase: each success adds ``1 / window``, so the window grows by about one per
window's worth of answers. Multiplicative decrease: a 429, a timeout, or an answer that took
more than ``LATENCY_FACTOR`` times the endpoint's own recent baseline (the fastest of its last
``BASELINE_N`` answers) multiplies it by ``BETA``, at most once per "epoch": a request that
started before the last cut cannot cut again (the overload it reports is the one already
answered, as TCP cuts once per round trip). The window never exceeds the endpoint's
``max_concurrency`` nor falls below one.

Health: an endpoint is *up*, *down* (out of rotation until ``retry_at``, then probed), or
*refused* (it serves another model: out for good). It goes down at once when nothing listens
(connection refused), or after ``MAX_FAILURES`` consecutive 5xx, timeouts or dropped
connections; each failed probe doubles its cool-down, up to ``MAX_COOLDOWN_S``.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "BASELINE_N",
    "BETA",
    "LATENCY_FACTOR",
    "MAX_COOLDOWN_S",
    "MAX_FAILURES",
    "EndpointWindow",
]

BETA = 0.5
LATENCY_FACTOR = 4.0
BASELINE_N = 32
MIN_BASELINE_SAMPLES = 8
MAX_FAILURES = 3
COOLDOWN_S = 5.0
MAX_COOLDOWN_S = 60.0
START_WINDOW = 4.0

Health = Literal["up", "down", "refused"]


@dataclass
class EndpointWindow:
    """The load-control state of one endpoint (no I/O: the fleet feeds it outcomes)."""

    cap: int
    window: float = START_WINDOW
    in_flight: int = 0
    epoch: int = 0
    health: Health = "up"
    failures: int = 0  # consecutive 5xx, timeouts, dropped connections
    cooldown_s: float = COOLDOWN_S
    retry_at: float = 0.0  # when a down endpoint may be probed (time.monotonic())
    why_down: str = ""
    latency_factor: float = LATENCY_FACTOR
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=BASELINE_N))
    # counts, for the fleet's summary
    served: int = 0
    rate_limited: int = 0
    cuts: int = 0
    went_down: int = 0

    def __post_init__(self) -> None:
        self.window = min(float(self.cap), self.window)

    def slots(self) -> int:
        """Requests the endpoint may have in flight now."""
        return max(1, math.floor(self.window))

    def has_room(self) -> bool:
        return self.health == "up" and self.in_flight < self.slots()

    def load(self) -> float:
        return self.in_flight / self.slots()

    def baseline(self) -> float | None:
        """The fastest of the recent answers, once there are enough of them."""
        if len(self.latencies) < MIN_BASELINE_SAMPLES:
            return None
        return min(self.latencies)

    def succeeded(self, latency_s: float | None, epoch: int) -> None:
        self.served += 1
        self.failures = 0
        base = self.baseline()
        if latency_s is not None:
            self.latencies.append(latency_s)
        if base is not None and latency_s is not None and latency_s > self.latency_factor * base:
            self.cut(epoch)
        else:
            self.window = min(float(self.cap), self.window + 1.0 / self.window)

    def cut(self, epoch: int) -> None:
        """Multiplicative decrease, once per epoch."""
        if epoch != self.epoch:
            return
        self.window = max(1.0, self.window * BETA)
        self.epoch += 1
        self.cuts += 1

    def throttled(self, epoch: int) -> None:
        """A 429: the endpoint is up but full."""
        self.rate_limited += 1
        self.failures = 0
        self.cut(epoch)

    def failed(self, epoch: int, *, timeout: bool) -> bool:
        """A 5xx, timeout or dropped connection; True when the endpoint goes down for it."""
        self.failures += 1
        if timeout:
            self.cut(epoch)
        return self.failures >= MAX_FAILURES

    def down(self, now: float, why: str) -> None:
        if self.health == "up":
            self.went_down += 1
            self.cooldown_s = COOLDOWN_S
        else:  # a failed probe: wait longer next time
            self.cooldown_s = min(MAX_COOLDOWN_S, self.cooldown_s * 2)
        self.health = "down"
        self.why_down = why
        self.retry_at = now + self.cooldown_s

    def back_up(self) -> None:
        """A probe found it serving the fleet's model: back in rotation, starting small."""
        self.health = "up"
        self.failures = 0
        self.window = min(float(self.cap), START_WINDOW)
        self.epoch += 1
        self.latencies.clear()
