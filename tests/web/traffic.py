"""Gateway traffic with known properties for the Monitor and A/B pages.

Monitoring: six hours of synthetic shadow traffic, 100 requests an hour, as in
docs/monitor.md; in the last hour prompts get longer and a new topic (cooking) makes up a
fifth of them, and three requests there ask (and are answered) with PAYLOAD. The reference is
the first three hours, so ``CALM`` (hours 3-4) has no drift and ``DRIFT`` (hours 3-5) has it in
its last window only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import numpy as np

from calipers.monitor import TrafficProfile, synthetic_traffic
from calipers.store import Store, TrafficRecord
from tests.web.conftest import PAYLOAD

T0 = datetime(2025, 6, 2, tzinfo=UTC)
HOURS, PER_HOUR, DRIFT_HOUR, REF_HOURS, N_XSS = 6, 100, 5, 3, 3


def hour(h: float) -> datetime:
    return T0 + timedelta(hours=h)


def _query(until: int) -> str:
    return urlencode(
        {
            "since": hour(REF_HOURS).isoformat(),
            "until": hour(until).isoformat(),
            "reference": f"{T0.isoformat()}..{hour(REF_HOURS).isoformat()}",
        }
    )


CALM = _query(DRIFT_HOUR)  # windows 3, 4: no drift
DRIFT = _query(HOURS)  # windows 3, 4, 5: drift in window 5


def _xss(i: int) -> list[TrafficRecord]:
    ts = hour(DRIFT_HOUR) + timedelta(minutes=10 + i)
    return [
        TrafficRecord(
            pair_id=f"xss-{i}",
            role=role,
            served=role == "baseline",
            mode="shadow",
            endpoint="/v1/chat/completions",
            upstream=f"http://{role}.invalid/v1",
            request={"messages": [{"role": "user", "content": f"{PAYLOAD} {i}"}]},
            ts=ts,
            model=f"{role}-model",
            response=PAYLOAD,
            status=200,
            latency_ms=400.0,
            input_tokens=20,
            output_tokens=10,
        )
        for role in ("baseline", "candidate")
    ]


def monitor_records() -> list[TrafficRecord]:
    base = TrafficProfile()
    changed = base.replace(topics={**base.topics, "cooking": 0.25}, mean_words=11.0)
    rng = np.random.default_rng(0)
    out: list[TrafficRecord] = []
    for h in range(HOURS):
        out += synthetic_traffic(
            PER_HOUR,
            start=hour(h),
            end=hour(h + 1),
            rng=rng,
            profile=changed if h == DRIFT_HOUR else base,
            prefix=f"h{h}-",
        )
    for i in range(N_XSS):
        out += _xss(i)
    return out


def add_monitor_traffic(path: str) -> list[TrafficRecord]:
    records = monitor_records()
    with Store.open(path) as store:
        store.add_traffic(records)
    return records
