"""Canary mode through real HTTP: sticky users, the share of users, and falling back to the
baseline when the candidate cannot answer."""

from __future__ import annotations

import time
from typing import Any

import httpx
import numpy as np
import pytest

from calipers.gateway import hash_key, in_canary
from calipers.monitor._ab import ABConfig, analyze_ab
from calipers.monitor._scores import ScoreIndex
from calipers.monitor._traffic import load_exchanges
from calipers.monitor._windows import arm_metrics
from calipers.store import NOT_SENT_BREAKER_OPEN, Store
from tests.gateway.conftest import chat_body, send_many, sse_bytes
from tests.gateway.test_routing import within_binomial


def arm_of(answer: Any) -> str:
    return str(answer.json()["choices"][0]["message"]["content"]).split(":")[0]


def test_users_stick_to_their_arm(rig_factory: Any) -> None:
    rig = rig_factory(mode="canary", fraction=0.3, salt="pepper")
    users = [f"user-{i}" for i in range(60)]
    bodies, headers, senders = [], [], []
    for rep in range(3):
        for i, user in enumerate(users):
            senders.append(user)
            if i % 2:  # half name themselves in the header, half in the body's `user` field
                bodies.append(chat_body(f"question {rep}"))
                headers.append({"x-calipers-user": user})
            else:
                bodies.append(chat_body(f"question {rep}", user=user))
                headers.append({})
    answers = send_many(rig.url, bodies, headers)
    arms: dict[str, set[str]] = {}
    for user, (answer, _) in zip(senders, answers, strict=True):
        arms.setdefault(user, set()).add(arm_of(answer))
    assert all(len(a) == 1 for a in arms.values())  # sticky: one arm per user
    canary_users = {u for u, a in arms.items() if a == {"candidate"}}
    assert within_binomial(len(canary_users), len(users), 0.3)
    assert canary_users == {u for u in users if in_canary(u, "pepper", 0.3)}
    stats = rig.stats()
    rows = rig.stop()
    assert stats["served"] == {
        "candidate": 3 * len(canary_users),
        "baseline": 3 * (len(users) - len(canary_users)),
    }
    assert len(rows) == len(bodies) and all(r.served and r.ok for r in rows)
    hashes = {hash_key(u, "pepper"): u for u in users}
    for row in rows:
        user = hashes[row.user_key_hash or ""]
        assert (row.role == "candidate") == (user in canary_users)
        assert user not in row.model_dump_json()  # the raw key is never stored
        if "user" in row.request:
            assert row.request["user"] == f"hash:{row.user_key_hash}"


def test_requests_without_a_user_key_go_to_the_baseline(rig_factory: Any) -> None:
    rig = rig_factory(mode="canary", fraction=1.0)
    answers = send_many(rig.url, [chat_body(f"anon {i}") for i in range(10)])
    assert {arm_of(a) for a, _ in answers} == {"baseline"}
    assert rig.stats()["canary_requests_without_user_key"] == 10
    rig.stop()


def test_a_failing_candidate_falls_back_to_the_baseline(rig_factory: Any) -> None:
    for setup in (
        {"candidate_down": True},
        {"behavior": "garbage"},
        {"candidate_params": {"model": "status-503"}},  # only the candidate answers 503
    ):
        behavior = setup.pop("behavior", None)
        rig = rig_factory(mode="canary", fraction=1.0, breaker_failures=3, **setup)
        if behavior:
            rig.candidate.behavior = behavior
        bodies = [chat_body(f"q{i}", user=f"u{i}") for i in range(12)]
        answers = send_many(rig.url, bodies, concurrency=1)
        assert [a.status_code for a, _ in answers] == [200] * 12, setup
        assert {arm_of(a) for a, _ in answers} == {"baseline"}, setup
        stats = rig.stats()
        rows = rig.stop()
        cand = [r for r in rows if r.role == "candidate"]
        base = [r for r in rows if r.role == "baseline"]
        # Every canary request has its candidate row: 3 tried, then the breaker is open and
        # the other 9 are logged as not sent (a candidate failure, as docs/ab.md says).
        assert len(cand) == 12 and not any(r.served or r.ok for r in cand), setup
        assert sum(r.breaker_open for r in cand) == 9 and all(
            r.error == NOT_SENT_BREAKER_OPEN and r.status is None and r.latency_ms is None
            for r in cand
            if r.breaker_open
        ), setup
        assert stats["breaker"]["state"] == "open" and stats["canary_fallbacks"] == 12
        assert stats["canary"]["sent"] == 3 and stats["canary"]["failed"] == 3
        assert stats["canary"]["not_sent_breaker_open"] == 9
        assert len(base) == 12 and all(r.served and r.ok for r in base)
        assert {r.pair_id for r in cand} <= {r.pair_id for r in base}


def _paid(latencies: list[float], threshold_s: float) -> int:
    return sum(t > threshold_s for t in latencies)


def test_a_hung_candidate_costs_canary_users_one_deadline_and_few_of_them_pay(
    rig_factory: Any,
) -> None:
    # Default settings but the candidate timeout (10 s, so the old behaviour fails fast
    # enough): the deadline follows the baseline's p95 once 20 of its answers are in.
    rig = rig_factory(mode="canary", fraction=1.0, candidate_timeout_s=10.0, breaker_reset_s=600.0)
    warm = send_many(rig.url, [chat_body(f"anon {i}") for i in range(30)], concurrency=4)
    assert {arm_of(a) for a, _ in warm} == {"baseline"}  # no user key: the baseline
    deadline = rig.stats()["canary"]["first_byte_deadline"]["whole"]
    rig.candidate.delay_s = 60.0  # hangs from now on
    bodies = [chat_body(f"q{i}", user=f"u{i}") for i in range(64)]
    answers = send_many(rig.url, bodies, concurrency=16)
    latencies = [t for _, t in answers]
    stats = rig.stats()
    rows = rig.stop()
    assert [a.status_code for a, _ in answers] == [200] * 64
    assert {arm_of(a) for a, _ in answers} == {"baseline"}  # every user got an answer
    # The deadline is the baseline's p95 (its stored latencies) + 500 ms.
    warm_rows = sorted((r for r in rows if r.user_key_hash is None), key=lambda r: r.ts)
    p95 = float(np.percentile([r.latency_ms for r in warm_rows if r.latency_ms], 95))
    assert deadline["baseline_samples"] == 30
    assert deadline["deadline_ms"] == pytest.approx(deadline["baseline_p95_ms"] + 500.0, abs=0.2)
    # the gateway times the baseline call, the store the whole request: close, not equal
    assert abs(deadline["baseline_p95_ms"] - p95) < max(50.0, 0.2 * p95), (deadline, p95)
    # Each user waited at most the deadline plus a baseline answer (slack for 2 busy cores).
    bound_s = deadline["deadline_ms"] / 1000.0 + max(t for _, t in warm) + 0.5
    assert max(latencies) < bound_s, (max(latencies), bound_s)
    # Only the users in flight when it hung paid (16 at a time here); the breaker opened on
    # those slow calls and the rest were served by the baseline at once.
    paid = _paid(latencies, deadline["deadline_ms"] / 1000.0 * 0.8)
    assert 5 <= paid <= 16 + 5, paid
    assert sorted(latencies)[paid // 2 + 32] < min(1.0, deadline["deadline_ms"] / 1000.0)
    canary = stats["canary"]
    assert canary["too_slow"] == paid == stats["breaker"]["slow_calls"]
    assert stats["breaker"]["state"] == "open"
    assert canary["not_sent_breaker_open"] == 64 - paid and canary["served"] == 0
    cand = [r for r in rows if r.role == "candidate"]
    assert len(cand) == 64 and not any(r.served or r.ok for r in cand)
    slow = [r for r in cand if (r.error or "").startswith("timeout: no first byte")]
    assert len(slow) == paid and all(r.latency_ms and r.latency_ms < bound_s * 1000 for r in slow)


def test_a_stream_that_stalls_after_its_headers_falls_back_too(rig_factory: Any) -> None:
    rig = rig_factory(mode="canary", fraction=1.0, canary_deadline_ms=400.0, breaker_failures=100)
    rig.candidate.behavior, rig.candidate.delay_s = "stall", 30.0
    t = time.perf_counter()
    with httpx.stream(
        "POST",
        f"{rig.url}/chat/completions",
        timeout=20,
        json=chat_body("stream me", user="u1", stream=True),
    ) as r:
        got = b"".join(r.iter_raw())
    waited = time.perf_counter() - t
    rows = rig.stop()
    assert r.status_code == 200 and got == sse_bytes("baseline", "baseline: stream me")
    assert 0.4 <= waited < 1.5, waited
    cand = next(row for row in rows if row.role == "candidate")
    assert not cand.served and (cand.error or "").startswith(
        "timeout: no first byte within the canary deadline of 400 ms"
    )


def test_breaker_skipped_canary_requests_stay_in_the_candidate_group(
    rig_factory: Any,
) -> None:
    # A dead candidate: 3 tries open the breaker. Every request of a canary user must still
    # be in the candidate group, as a failure, in ab and in monitor alike.
    rig = rig_factory(
        mode="canary", fraction=0.5, breaker_failures=3, candidate_down=True, breaker_reset_s=600.0
    )
    users = [f"user-{i}" for i in range(40)]
    send_many(rig.url, [chat_body(f"q{i}", user=u) for i, u in enumerate(users)], concurrency=1)
    rig.stop()
    in_group = sum(in_canary(u, "calipers", 0.5) for u in users)
    with Store.open(str(rig.store_path)) as store:
        result = analyze_ab(store, ABConfig(min_n=2))
        exchanges = load_exchanges(store)
        metrics = arm_metrics(
            exchanges, "candidate", prices={}, scores=ScoreIndex(), rng=np.random.default_rng(0)
        )
    assert result.counts["candidate"] == in_group  # assigned to the candidate: all there
    assert result.counts["baseline"] == 40  # the baseline answered every request
    assert result.counts["breaker_open"] == in_group - 3
    rail = next(g for g in result.guardrails if g.name == "error_rate")
    assert rail.effect.value == 1.0 and rail.effect.n == 40  # 100% failed minus 0%
    assert metrics["volume"].value == in_group and metrics["error_rate"].value == 1.0
