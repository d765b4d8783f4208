"""Synthetic gateway traffic with known properties, for the A/B tests.

Each arm has an error rate, a log-normal latency, a refusal rate and a share of "GOOD"
answers (the fake judge in :func:`judge_script` grades GOOD 5 and anything else 1), so the
true differences are known exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from calipers.store import TrafficRecord

T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
REFUSAL_TEXT = "I'm sorry, but I can't help with that."


@dataclass(frozen=True)
class Arm:
    error: float = 0.0
    latency_log_mean: float = 6.0
    latency_log_sd: float = 0.3
    refusal: float = 0.0
    good: float = 0.5
    tokens: bool = True


def _record(
    pair: str,
    role: str,
    served: bool,
    mode: str,
    i: int,
    arm: Arm,
    rng: np.random.Generator,
    user: str | None,
) -> TrafficRecord:
    failed = rng.random() < arm.error
    refused = rng.random() < arm.refusal
    good = rng.random() < arm.good
    text = REFUSAL_TEXT if refused else ("GOOD answer" if good else "meh answer") + f" {i}"
    latency = float(rng.lognormal(arm.latency_log_mean, arm.latency_log_sd))
    return TrafficRecord(
        pair_id=pair,
        role=role,
        served=served,
        mode=mode,
        endpoint="/v1/chat/completions",
        upstream=f"http://{role}",
        request={"messages": [{"role": "user", "content": f"question {i}"}]},
        ts=T0 + timedelta(seconds=10 * i),
        user_key_hash=user,
        response=None if failed else text,
        status=503 if failed else 200,
        error="upstream answered 503" if failed else None,
        latency_ms=latency,
        input_tokens=20 + i % 7 if arm.tokens and not failed else None,
        output_tokens=int(rng.integers(20, 80)) if arm.tokens and not failed else None,
    )


def shadow_traffic(
    n: int, baseline: Arm, candidate: Arm, *, seed: int = 0, mirrored: float = 1.0, start: int = 0
) -> list[TrafficRecord]:
    """``n`` shadow requests; a share ``mirrored`` of them also went to the candidate."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(start, start + n):
        pair = f"s{seed}-{i:05d}"
        out.append(_record(pair, "baseline", True, "shadow", i, baseline, rng, None))
        if rng.random() < mirrored:
            out.append(_record(pair, "candidate", False, "shadow", i, candidate, rng, None))
    return out


def canary_traffic(
    n: int, baseline: Arm, candidate: Arm, *, seed: int = 0, share: float = 0.3, keyless: int = 0
) -> list[TrafficRecord]:
    """``n`` canary requests from users assigned at random (``share`` to the candidate),
    then ``keyless`` requests without a user key (always the baseline)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n + keyless):
        user = f"u{i % 997:04d}" if i < n else None
        treated = user is not None and rng.random() < share
        role, arm = ("candidate", candidate) if treated else ("baseline", baseline)
        out.append(_record(f"c{seed}-{i:05d}", role, True, "canary", i, arm, rng, user))
    return out


def judge_script(folder: Path) -> str:
    """A fake judge spec: GOOD answers get 5 (1.0 after normalising), others 1 (0.0)."""
    path = folder / "judge.json"
    path.write_text(
        json.dumps(
            {"GOOD": '{"reasoning": "good", "score": 5}', "*": '{"reasoning": "weak", "score": 1}'}
        )
    )
    return f"fake:script={path}"
