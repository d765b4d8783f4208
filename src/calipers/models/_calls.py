"""What a model call cost beyond its answer: attempts, retries, rate-limit waits.

A provider that retries (the openai provider) reports every attempt and every retry to the
tracker of the running task, if there is one; the caller opens a tracker around its call::

    with track_calls(on_retry=show) as calls:
        response = await provider.generate(request)
    calls.retries, calls.rate_limited, calls.wait_s

The tracker is a context variable, so concurrent samples (each its own asyncio task) count
apart, providers keep their ``generate(request)`` signature, and a call made with no tracker
open counts nothing. ``on_retry`` hears of each retry before its wait starts (the CLI's
progress bar shows "retrying (attempt 2/5, waiting 4s: HTTP 503 ...)").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["CallStats", "Retry", "current_calls", "track_calls"]


@dataclass(frozen=True, slots=True)
class Retry:
    """One failed attempt that will be retried: ``attempt`` of ``max_attempts`` (1-based)
    failed for ``reason``; the next starts after ``wait_s`` seconds. ``rate_limited`` when the
    server said so (HTTP 429)."""

    attempt: int
    max_attempts: int
    wait_s: float
    reason: str
    rate_limited: bool = False

    def describe(self) -> str:
        return (
            f"retrying (attempt {self.attempt + 1}/{self.max_attempts}, waiting "
            f"{self.wait_s:.1f}s: {self.reason[:80]})"
        )


@dataclass(slots=True)
class CallStats:
    """Counts for the calls made under one tracker (one sample: possibly several requests)."""

    attempts: int = 0
    retries: int = 0
    rate_limited: int = 0
    wait_s: float = 0.0
    on_retry: Callable[[Retry], None] | None = None

    def attempt(self) -> None:
        self.attempts += 1

    def retry(self, event: Retry) -> None:
        self.retries += 1
        self.rate_limited += event.rate_limited
        self.wait_s += event.wait_s
        if self.on_retry is not None:
            self.on_retry(event)

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "retries": self.retries,
            "rate_limited": self.rate_limited,
            "wait_s": round(self.wait_s, 3),
        }


_current: ContextVar[CallStats | None] = ContextVar("calipers_call_stats", default=None)


def current_calls() -> CallStats | None:
    """The tracker of the running task, or None when nobody is counting."""
    return _current.get()


@contextmanager
def track_calls(on_retry: Callable[[Retry], None] | None = None) -> Iterator[CallStats]:
    """Count the attempts and retries of the calls made inside the block."""
    stats = CallStats(on_retry=on_retry)
    token = _current.set(stats)
    try:
        yield stats
    finally:
        _current.reset(token)
