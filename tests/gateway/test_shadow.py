"""Shadow mode through real HTTP: the mirrored share, and users untouched by a candidate that
is down, slow, or answering garbage."""

from __future__ import annotations

import statistics
from typing import Any

from calipers.store import NOT_SENT_BREAKER_OPEN, TrafficRecord
from tests.gateway.conftest import chat_body, send_many
from tests.gateway.test_routing import within_binomial


def test_mirrored_share_and_pairs(rig_factory: Any) -> None:
    rig = rig_factory(mode="shadow", fraction=0.1, seed=11)
    n = 1000
    answers = send_many(rig.url, [chat_body(f"q{i}") for i in range(n)])
    assert all(r.status_code == 200 for r, _ in answers)
    assert all(
        r.json()["choices"][0]["message"]["content"] == f"baseline: q{i}"
        for i, (r, _) in enumerate(answers)
    )
    stats = rig.settled_stats()
    rows = rig.stop()
    mirrored = stats["shadow"]["mirrored"]
    assert within_binomial(mirrored, n, 0.1), mirrored
    assert stats["sampled_for_shadow"] == mirrored  # nothing dropped at this load
    base = {r.pair_id: r for r in rows if r.role == "baseline"}
    cand = {r.pair_id: r for r in rows if r.role == "candidate"}
    assert len(base) == n and len(cand) == mirrored == len(rig.candidate.seen)
    assert set(cand) <= set(base)
    for pid, c in cand.items():
        assert not c.served and base[pid].served
        assert c.response == "candidate: " + base[pid].response.removeprefix("baseline: ")
        assert c.ok and c.latency_ms is not None and c.latency_ms > 0


def run_isolation(
    rig_factory: Any, **setup: Any
) -> tuple[list[float], dict[str, Any], list[TrafficRecord]]:
    """40 requests, all mirrored; returns user latencies, stats and stored rows."""
    behavior = setup.pop("behavior", None)
    delay = setup.pop("delay_s", 0.0)
    rig = rig_factory(
        mode="shadow",
        fraction=1.0,
        candidate_timeout_s=1.0,
        shutdown_grace_s=0.3,
        breaker_failures=3,
        **setup,
    )
    if behavior:
        rig.candidate.behavior = behavior
    rig.candidate.delay_s = delay
    answers = send_many(rig.url, [chat_body(f"q{i}") for i in range(40)], concurrency=4)
    assert [r.status_code for r, _ in answers] == [200] * 40
    assert all(
        r.json()["choices"][0]["message"]["content"] == f"baseline: q{i}"
        for i, (r, _) in enumerate(answers)
    )
    stats = rig.settled_stats()
    rows = rig.stop()
    return [t for _, t in answers], stats, rows


def test_faulty_candidates_do_not_touch_the_user_path(rig_factory: Any) -> None:
    healthy, stats, rows = run_isolation(rig_factory)
    assert stats["breaker"]["state"] == "closed"
    assert sum(r.role == "candidate" and r.ok for r in rows) == 40
    reference = statistics.median(healthy)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"candidate_down": True}, "ConnectError"),
        ({"delay_s": 5.0}, "timeout"),
        ({"behavior": "garbage"}, "not JSON"),
    ]
    for setup, error_part in cases:
        latencies, stats, rows = run_isolation(rig_factory, **setup)
        assert max(latencies) < 1.0, (setup, max(latencies))  # never the candidate's 1-5 s
        assert statistics.median(latencies) < 3 * reference + 0.05, setup
        assert stats["breaker"]["times_opened"] >= 1, setup
        base = [r for r in rows if r.role == "baseline"]
        cand = [r for r in rows if r.role == "candidate"]
        assert len(base) == 40 and all(r.ok for r in base)
        shadow = stats["shadow"]
        # Every copy has its candidate row: sent and failed, or not sent (breaker open),
        # whether the breaker was found open when the copy was made or when it was taken.
        assert shadow["mirrored"] == 40 and len(cand) == 40 and not any(r.ok for r in cand)
        not_sent = [r for r in cand if r.error == NOT_SENT_BREAKER_OPEN]
        assert len(not_sent) == shadow["not_sent_breaker_open"] > 0, setup
        assert shadow["failed"] + shadow["not_sent_breaker_open"] == 40
        assert any(error_part in (r.error or "") for r in cand), (setup, cand[0].error)


def test_a_full_shadow_queue_drops_and_counts(rig_factory: Any) -> None:
    rig = rig_factory(
        mode="shadow",
        fraction=1.0,
        shadow_workers=1,
        shadow_queue_size=2,
        candidate_timeout_s=5.0,
        breaker_failures=100,
        shutdown_grace_s=5.0,
    )
    rig.candidate.delay_s = 0.2
    answers = send_many(rig.url, [chat_body(f"q{i}") for i in range(30)], concurrency=10)
    assert all(r.status_code == 200 for r, _ in answers)
    stats = rig.stats()["shadow"]
    rows = rig.stop()
    assert stats["dropped_queue_full"] > 0
    assert stats["mirrored"] + stats["dropped_queue_full"] == 30
    cand = [r for r in rows if r.role == "candidate"]
    assert len(cand) == stats["mirrored"] and all(r.ok for r in cand)  # grace let them finish


def test_shutdown_cancels_what_the_grace_period_cannot_finish(rig_factory: Any) -> None:
    rig = rig_factory(
        mode="shadow",
        fraction=1.0,
        shadow_workers=1,
        candidate_timeout_s=30.0,
        shutdown_grace_s=0.2,
    )
    rig.candidate.delay_s = 3.0
    send_many(rig.url, [chat_body(f"q{i}") for i in range(3)])
    rows = rig.stop()
    cand = [r for r in rows if r.role == "candidate"]
    assert len(cand) == 3
    assert all((r.error or "").startswith("cancelled") for r in cand)


def test_candidate_gets_its_own_params_and_system_prompt(rig_factory: Any) -> None:
    rig = rig_factory(
        mode="shadow",
        fraction=1.0,
        candidate_params={"temperature": 0.7},
        candidate_system_prompt="Be brief.",
    )
    body = chat_body("hello", temperature=0.0)
    body["messages"].insert(0, {"role": "system", "content": "Be verbose."})
    send_many(rig.url, [body])
    rows = rig.stop()
    assert rig.baseline.seen[0]["body"] == body
    sent = rig.candidate.seen[0]["body"]
    assert sent["temperature"] == 0.7
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]
    (cand,) = [r for r in rows if r.role == "candidate"]
    assert cand.request == sent
