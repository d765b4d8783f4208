"""What the monitor reads of each window, bounded whatever the size of the log.

Per window the database counts the requests and each arm's calls, answered calls and
failures (``Store.traffic_counts``), and returns the latencies of the answered calls
(``Store.traffic_latencies``: all of them up to ``max_latencies`` per arm, else a seeded
sample of about that many). Only a bounded number of requests is read whole
(``Store.sample_traffic``): every request of a window with at most ``sample`` of them, else a
uniform sample of ``sample`` (by a hash of the row id: independent of the content, the same
rows on every look). The text-based metrics (refusals, RAG outcomes, cost, online scores),
the drift tests and the novelty search use those requests; a sample is a sample from the
window's traffic, so their tests and intervals stay valid for the window, with the power of
``sample`` requests. The report says which windows were sampled and how much.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from calipers._util.parallel import parallel_map
from calipers.monitor._traffic import Exchange, pair_records
from calipers.store import Store, TrafficCounts

__all__ = ["WindowData", "load_span", "load_windows", "sample_note"]


@dataclass(frozen=True)
class WindowData:
    """One window: its counts, its requests read whole (all or a sample) and latencies."""

    start: datetime
    end: datetime
    counts: TrafficCounts
    exchanges: list[Exchange]
    latencies: dict[str, npt.NDArray[np.float64]]
    latencies_sampled: bool = False

    @property
    def n(self) -> int:
        return self.counts.requests

    @property
    def sampled(self) -> bool:
        return len(self.exchanges) < self.n


def _exchanges(
    store: Store,
    a: datetime,
    b: datetime,
    modes: Sequence[str] | None,
    limit: int,
    n: int,
    seed: int,
) -> list[Exchange]:
    records = store.sample_traffic(
        since=a, until=b, modes=modes, limit=limit, requests=n, seed=seed
    )
    exchanges = pair_records(records)
    if modes is not None:
        keep = set(modes)
        exchanges = [e for e in exchanges if e.mode in keep]
    return exchanges


def load_windows(
    store: Store,
    edges: Sequence[tuple[datetime, datetime]],
    *,
    modes: Sequence[str] | None,
    sample: int,
    max_latencies: int,
    seed: int,
) -> list[WindowData]:
    """Each window of ``edges``, read a few windows at a time (the database works on one
    while the next is asked for)."""

    def one(edge: tuple[datetime, datetime]) -> WindowData:
        a, b = edge
        counts = store.traffic_counts(since=a, until=b, modes=modes)
        if counts.requests == 0:
            empty = {arm: np.zeros(0) for arm in ("served", "baseline", "candidate")}
            return WindowData(a, b, counts, [], empty)
        busiest = max(counts.answered.values(), default=0)
        latencies = store.traffic_latencies(
            since=a, until=b, modes=modes, limit=max_latencies, answered=busiest, seed=seed
        )
        exchanges = _exchanges(store, a, b, modes, sample, counts.requests, seed)
        return WindowData(a, b, counts, exchanges, latencies, busiest > max_latencies)

    return parallel_map(one, edges)


def load_span(
    store: Store,
    a: datetime,
    b: datetime,
    *,
    modes: Sequence[str] | None,
    sample: int,
    seed: int,
    n: int | None = None,
) -> tuple[list[Exchange], int]:
    """The requests of ``[a, b)`` read whole (all, or a uniform sample of ``sample``) and
    how many there are (``n``: already counted)."""
    n = store.traffic_counts(since=a, until=b, modes=modes).requests if n is None else n
    return (_exchanges(store, a, b, modes, sample, n, seed) if n else []), n


def sample_note(windows: Sequence[WindowData], sample: int, max_latencies: int) -> str | None:
    """What the report says when any window was sampled (``None`` when none was)."""
    sampled = [w for w in windows if w.sampled]
    lat = [w for w in windows if w.latencies_sampled]
    if not sampled and not lat:
        return None
    parts = []
    if sampled:
        parts.append(
            f"{len(sampled)} window(s) hold more than {sample:,} requests: their refusal, "
            f"RAG, cost and online-score metrics, drift tests and novelty use a uniform sample "
            f"of {sample:,} requests (by a hash of the row id, the same on every look); "
            "request counts and error rates count every call"
        )
    if lat:
        parts.append(
            f"latency quantiles of {len(lat)} window(s) use a uniform sample of about "
            f"{max_latencies:,} answered calls per arm"
        )
    return "sampled: " + "; ".join(parts) + " (docs/monitor.md, Large traffic)"
