"""Traffic with known properties for the ``calipers monitor`` tests, in a tmp SQLite store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from calipers.monitor._synthetic import TrafficProfile, synthetic_traffic
from calipers.store import Store, TrafficRecord

T0 = datetime(2025, 6, 2, tzinfo=UTC)
HOUR = timedelta(hours=1)


def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'monitor.db'}"


def call(
    pair_id: str,
    role: str,
    ts: datetime,
    *,
    served: bool,
    latency: float | None,
    prompt: str = "How do I reset my password?",
    response: str | None = "Sure.",
    status: int | None = 200,
    error: str | None = None,
    tokens: tuple[int, int] | None = (10, 20),
    mode: str = "shadow",
) -> TrafficRecord:
    return TrafficRecord(
        pair_id=pair_id,
        role=role,
        served=served,
        mode=mode,
        endpoint="/v1/chat/completions",
        upstream=f"http://{role}.invalid/v1",
        request={
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": prompt},
            ]
        },
        ts=ts,
        response=response,
        status=status,
        error=error,
        latency_ms=latency,
        input_tokens=tokens[0] if tokens else None,
        output_tokens=tokens[1] if tokens else None,
    )


def write_windows(
    url: str, profiles: Sequence[TrafficProfile], n: int, seed: int = 0, start: datetime = T0
) -> None:
    """One hour of ``n`` synthetic requests per profile, from ``start`` on."""
    rng = np.random.default_rng(seed)
    with Store.open(url) as store:
        for i, p in enumerate(profiles):
            store.add_traffic(
                synthetic_traffic(
                    n,
                    start=start + i * HOUR,
                    end=start + (i + 1) * HOUR,
                    rng=rng,
                    profile=p,
                    prefix=f"w{i}-",
                )
            )


BASE = TrafficProfile()
COOKING = BASE.replace(topics={**BASE.topics, "cooking": 0.6})  # a new topic, 37.5% of requests
LONGER = BASE.replace(mean_words=14.0)
