"""How long a canary user waits for the candidate before the baseline answers instead.

The deadline is on the candidate's *first byte*: the first chunk of a stream, the whole body
of an answer that is not streamed (nothing reaches the user before it). By default it follows
the baseline: its p95 over the last :data:`WINDOW` answers of the same kind (streamed or not,
measured the same way) plus a margin, kept between a floor and the candidate timeout. Until
:data:`MIN_SAMPLES` baseline answers of that kind are in, a fixed starting value stands in.
A fixed ``canary_deadline_ms`` replaces all of it.

Why the baseline's p95 plus a margin: a healthy candidate about as fast as the baseline
answers within it nearly always (it only misses when it is slower than the baseline's tail
by more than the margin), and a hung one costs a user at most that long before the baseline
serves them, instead of the candidate timeout (30 s).
"""

from __future__ import annotations

import statistics
from collections import deque

__all__ = ["MIN_SAMPLES", "WINDOW", "FirstByteDeadline"]

WINDOW = 200
MIN_SAMPLES = 20
_RECOMPUTE_EVERY = 10


class _Kind:
    __slots__ = ("p95_ms", "samples", "since")

    def __init__(self) -> None:
        self.samples: deque[float] = deque(maxlen=WINDOW)
        self.p95_ms: float | None = None
        self.since = 0


def _p95(values: deque[float]) -> float:
    """numpy's default (linear) 95th percentile."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


class FirstByteDeadline:
    """Not thread-safe: used from the gateway's one event loop."""

    def __init__(
        self, *, fixed_ms: float | None, margin_ms: float, floor_ms: float, start_ms: float,
        ceiling_ms: float,
    ) -> None:  # fmt: skip
        self.fixed_ms = fixed_ms
        self.margin_ms = margin_ms
        self.floor_ms = floor_ms
        self.start_ms = start_ms
        self.ceiling_ms = ceiling_ms
        self._kinds = {False: _Kind(), True: _Kind()}

    def observe(self, stream: bool, ms: float) -> None:
        """A baseline answer's own first-byte time (from when the baseline was called)."""
        kind = self._kinds[stream]
        kind.samples.append(ms)
        kind.since += 1
        if len(kind.samples) >= MIN_SAMPLES and (
            kind.p95_ms is None or kind.since >= _RECOMPUTE_EVERY
        ):
            kind.p95_ms = _p95(kind.samples)
            kind.since = 0

    def ms(self, stream: bool) -> float:
        """The deadline now for a request of this kind, in milliseconds."""
        if self.fixed_ms is not None:
            return min(self.fixed_ms, self.ceiling_ms)
        p95 = self._kinds[stream].p95_ms
        raw = self.start_ms if p95 is None else p95 + self.margin_ms
        return min(max(raw, self.floor_ms), self.ceiling_ms)

    def snapshot(self) -> dict[str, object]:
        out: dict[str, object] = {"fixed_ms": self.fixed_ms}
        for stream, name in ((False, "whole"), (True, "stream")):
            kind = self._kinds[stream]
            out[name] = {
                "deadline_ms": round(self.ms(stream), 1),
                "baseline_p95_ms": None if kind.p95_ms is None else round(kind.p95_ms, 1),
                "baseline_samples": len(kind.samples),
            }
        return out
