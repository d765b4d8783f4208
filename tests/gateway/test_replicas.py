"""Three real ``calipers gateway`` processes behind a (test) load balancer, writing to one
PostgreSQL database: started at the same moment on a fresh database (they race to migrate
it), their database sessions cut mid-traffic (what a database restart does), the
fingerprint canary's leader killed with SIGKILL mid-traffic. Checked against the database
itself: every answered request logged exactly once, users sticky to their arm across
replicas, one canary look per interval with three replicas running and a new leader after
the old one died, and ``calipers monitor``'s totals.

Needs CALIPERS_TEST_POSTGRES_URL (skipped without it; CI sets it)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np
import pytest
import sqlalchemy as sa

from calipers.types import Fingerprint, FingerprintProbe, FingerprintSettings
from tests._servers import ServerThread
from tests.canary_fp._sim import Model, models
from tests.gateway._replicas import (
    ProbeAnsweringUpstream,
    Replica,
    fresh_postgres,
    kill_connections,
    postgres_url,
    start_replicas,
)
from tests.gateway.conftest import UPSTREAM, FakeUpstream

N_REQUESTS = 360
N_USERS = 40
SALT = "replica-test"
FRACTION = 0.5
LOOK_EVERY_S = 1.0
LEASE_S = 1.5
BATCH_WINDOW_MS = 50


@dataclass
class Sent:
    replica: int
    user: str
    status: int | None
    pair_id: str | None
    arm: str | None
    done: float  # time.monotonic() when the answer (or the failure) came back


@pytest.fixture
def store_url() -> Iterator[str]:
    with fresh_postgres(postgres_url()) as url:
        yield url


def _reference(tmp_path: Path) -> tuple[Path, Model]:
    """A fingerprint of the simulated model P (10 probes, 10 completions each)."""
    p, _ = models(10, 6, np.random.default_rng(42))
    rng = np.random.default_rng(1)
    fp = Fingerprint(
        probe_set="test-v1", model="openai:p-model", recorded_at="2026-12-01T00:00:00+00:00",
        settings=FingerprintSettings(temperature=0.8, max_tokens=64, samples_per_probe=10),
        probes=tuple(FingerprintProbe(id=f"q{i}", prompt=f"probe {i}") for i in range(10)),
        completions={f"q{i}": tuple(p.sample(i, 10, rng)) for i in range(10)},
    )  # fmt: skip
    path = tmp_path / "ref.json"
    fp.save(path)
    return path, p


def _in_canary(user: str) -> bool:
    """The arm a user must get, computed here from the documented rule (sha256 of salt and
    key, first 8 bytes over 2**64, below the fraction)."""
    digest = hashlib.sha256(f"{SALT}\x00{user}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < FRACTION


async def _traffic(
    replicas: list[Replica], on_progress: dict[int, object]
) -> tuple[list[Sent], list[tuple[Sent, int, dict[str, object]]]]:
    """``N_REQUESTS`` chat requests spread round-robin over the replicas, 12 at a time. A
    replica that cannot be reached is skipped for the next one, as a load balancer would.
    ``on_progress[k]`` (a callable) runs once ``k`` or more requests have been answered. Every 15th
    answer gets feedback at once, through another replica than the one that served it."""
    sent: list[Sent] = []
    feedback: list[tuple[Sent, int, dict[str, object]]] = []
    dead: set[int] = set()
    turn = itertools.count()
    gate = asyncio.Semaphore(12)
    async with httpx.AsyncClient(timeout=30) as client:

        async def one(i: int) -> None:
            user = f"user-{i % N_USERS}"
            body = {"model": "m", "messages": [{"role": "user", "content": f"hello {i}"}]}
            async with gate:
                for _ in range(len(replicas)):
                    r = replicas[next(turn) % len(replicas)]
                    if r.index in dead:
                        continue
                    try:
                        resp = await client.post(
                            f"{r.url}/v1/chat/completions", json=body,
                            headers={"x-calipers-user": user},
                        )  # fmt: skip
                    except httpx.HTTPError:
                        dead.add(r.index)
                        sent.append(Sent(r.index, user, None, None, None, time.monotonic()))
                        continue
                    text = resp.json()["choices"][0]["message"]["content"]
                    got = Sent(r.index, user, resp.status_code,
                               resp.headers["x-calipers-request-id"], text.split(":")[0],
                               time.monotonic())  # fmt: skip
                    sent.append(got)
                    other = replicas[(r.index + 1) % len(replicas)]
                    if i % 15 == 0 and other.index not in dead:
                        with contextlib.suppress(httpx.HTTPError):  # unless it was killed
                            fb = await client.post(
                                f"{other.url}/calipers/feedback",
                                json={"request_id": got.pair_id, "score": i % 2},
                            )
                            feedback.append((got, fb.status_code, fb.json()))
                    break
            answered = sum(s.status == 200 for s in sent)
            for k in sorted(k for k in on_progress if k <= answered):
                action = on_progress.pop(k)
                if callable(action):
                    await asyncio.to_thread(action)

        await asyncio.gather(*(one(i) for i in range(N_REQUESTS)))
    return sent, feedback


def _leader(replicas: list[Replica]) -> Replica:
    deadline = time.monotonic() + 10
    while True:
        leaders = [r for r in replicas if r.stats()["fingerprint_canary"]["leader"]]
        if len(leaders) == 1 or time.monotonic() > deadline:
            assert len(leaders) == 1, [r.stats()["fingerprint_canary"] for r in replicas]
            return leaders[0]
        time.sleep(0.1)


def _written_up_to_now(r: Replica) -> tuple[float, dict[str, int]]:
    """Wait until ``r``'s log writer has stored every row it had accepted when this was
    called (just after a database cut it may still be catching up, and what a crash loses
    then is more than its last batch window, as the docs say); the time of the call and the
    writer's counts then."""
    t0 = time.monotonic()
    target = r.stats()["log"]["accepted"]
    deadline = t0 + 30
    while True:
        log = r.stats()["log"]
        if log["written"] + log["lost"] >= target or time.monotonic() > deadline:
            assert log["written"] + log["lost"] >= target, (target, log)
            return t0, log
        time.sleep(0.02)


def _look_times(engine: sa.Engine) -> list[datetime]:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT ts FROM fingerprint_looks ORDER BY ts")).all()
    return [row.ts for row in rows]


def test_three_replicas_share_one_database(store_url: str, tmp_path: Path) -> None:
    ref, p = _reference(tmp_path)
    baseline = ProbeAnsweringUpstream("baseline", p, delay_s=0.005)
    candidate = FakeUpstream("candidate", delay_s=0.005)
    servers = [ServerThread(u.app(), **UPSTREAM).start() for u in (baseline, candidate)]
    config = tmp_path / "gateway.yaml"
    config.write_text(
        json.dumps(
            {
                "baseline_url": f"{servers[0].url}/v1", "candidate_url": f"{servers[1].url}/v1",
                "mode": "canary", "fraction": FRACTION, "salt": SALT,
                "batch_window_ms": BATCH_WINDOW_MS, "store_connections": 3,
                "fingerprint_canary": {"reference": str(ref), "every": LOOK_EVERY_S,
                                       "lease_s": LEASE_S, "timeout_s": 5},
            }
        )
    )  # fmt: skip
    tag = sa.make_url(store_url).query.get("options", sa.make_url(store_url).database)
    tag = f"pgw-{hashlib.sha256(str(tag).encode()).hexdigest()[:10]}"
    engine = sa.create_engine(store_url)
    replicas = start_replicas(3, store_url, config, tmp_path, tag)
    try:
        leader = _leader(replicas)
        time.sleep(3 * LOOK_EVERY_S)  # looks with all three replicas up
        first = [r.stats()["fingerprint_canary"] for r in replicas]
        looks_before = _look_times(engine)
        then = [r.stats()["fingerprint_canary"] for r in replicas]
        cut: list[set[str]] = []
        killed_at: list[float] = []

        synced: list[tuple[float, dict[str, int]]] = []

        def kill_leader() -> None:
            synced.append(_written_up_to_now(leader))
            killed_at.append(time.monotonic())
            leader.kill()
            killed_at.append(datetime.now(UTC).timestamp())

        progress: dict[int, object] = {
            N_REQUESTS // 4: lambda: cut.append(kill_connections(engine, tag)),
            N_REQUESTS // 2: kill_leader,
        }
        sent, feedback = asyncio.run(_traffic(replicas, progress))
        assert cut == [{f"{tag}-r{i}" for i in range(3)}] and killed_at  # all three were cut
        survivors = [r for r in replicas if r is not leader]
        new_leader = _leader(survivors)
        t_kill = killed_at[0]
        kill_wall = datetime.fromtimestamp(killed_at[1], UTC)
        deadline = time.monotonic() + 3 * LEASE_S + 4 * LOOK_EVERY_S
        while time.monotonic() < deadline:
            if sum(t > kill_wall for t in _look_times(engine)) >= 3:
                break
            time.sleep(0.2)
        new_stats = new_leader.stats()["fingerprint_canary"]
        codes = [r.stop() for r in survivors]
    finally:
        for r in replicas:
            if r.proc.poll() is None:
                r.proc.kill()
        for server in servers:
            server.stop()
    # uvicorn re-raises SIGTERM once it has shut down gracefully
    assert set(codes) <= {0, -15}, [r.output() for r in survivors]

    # -- started together on a blank database: migrated once, no errors ---------------------
    for r in replicas:
        assert "Traceback" not in r.output() and "Migration" not in r.output(), r.output()
    with engine.connect() as conn:
        versions = conn.execute(sa.text("SELECT version FROM schema_version")).scalars().all()
        rows = conn.execute(sa.text("SELECT pair_id, role, served FROM traffic")).all()
        scores = conn.execute(sa.text("SELECT pair_id, role FROM online_scores")).all()
    assert sorted(versions) == list(range(1, len(versions) + 1)) and len(versions) >= 8

    # -- every answered request logged exactly once ------------------------------------------
    answered = [s for s in sent if s.status == 200]
    assert len(answered) == N_REQUESTS  # the load balancer found a live replica for each
    assert len({s.pair_id for s in answered}) == N_REQUESTS
    per_key = Counter((r.pair_id, r.role) for r in rows)
    assert max(per_key.values()) == 1
    served = {r.pair_id: r.role for r in rows if r.served}
    assert len(served) == sum(r.served for r in rows)  # one served row per request
    killed = leader.index
    for s in answered:
        if s.replica != killed:
            assert served.get(s.pair_id) == s.arm, s  # logged, as the arm that answered
    from_killed = [s for s in answered if s.replica == killed]
    lost = [s for s in from_killed if s.pair_id not in served]
    # SIGKILL loses only what waited in memory: every request answered before the leader's
    # writer was seen caught up is stored, what it lost came after, in its last second
    ((t_synced, log_stats),) = synced
    why = (len(lost), len(from_killed), log_stats, sorted(round(t_kill - s.done, 3) for s in lost))
    assert all(s.done > t_synced for s in lost), why
    assert all(s.done > t_kill - 1.0 for s in lost), why
    assert len(from_killed) > 20
    # a served row no client got: only requests the killed replica was answering at its death
    unanswered = set(served) - {s.pair_id for s in answered}
    assert len(unanswered) <= 12, len(unanswered)

    # -- feedback through another replica finds the row, even before it was written --------
    assert len(feedback) >= 10
    # a request whose row died with the killed replica has nothing to attach feedback to:
    # that replica's lost rows are refused (404), every other is stored on the arm that served
    kept = [(got, status, answer) for got, status, answer in feedback if got.pair_id in served]
    assert len(feedback) - len(kept) <= len(lost)
    for got, status, answer in feedback:
        if got.pair_id not in served:
            assert status == 404, answer
    for got, status, answer in kept:
        assert (status, answer.get("role"), answer.get("stored")) == (200, got.arm, True), answer
    assert sorted(scores) == sorted((got.pair_id, got.arm) for got, _, _ in kept)

    # -- canary users are sticky across replicas ---------------------------------------------
    arms: dict[str, set[tuple[str, int]]] = {}
    for s in answered:
        arms.setdefault(s.user, set()).add((str(s.arm), s.replica))
    for user, seen in arms.items():
        assert {a for a, _ in seen} == {"candidate" if _in_canary(user) else "baseline"}, user
        assert len({i for _, i in seen}) >= 2  # served by several replicas, same arm
    assert {_in_canary(u) for u in arms} == {True, False}

    # -- the fingerprint canary: one look per interval, a new leader after the kill ----------
    # With three replicas up, the leader took every stored look and the other two none.
    assert first[killed]["looks"] <= len(looks_before) <= then[killed]["looks"]
    assert len(looks_before) >= 3
    assert [s["looks"] for i, s in enumerate(then) if i != killed] == [0, 0]
    assert [s["leader"] for s in first] == [i == killed for i in range(3)]
    # After the kill another replica leads, on the same schedule: never two looks for one
    # interval (three replicas looking on their own would store about three per interval).
    assert new_stats["times_leader"] >= 1 and new_stats["looks"] >= 3
    looks = _look_times(engine)
    after = [t for t in looks if t > kill_wall]
    assert len(after) >= 3
    span = (looks[-1] - looks[0]).total_seconds()
    assert len(looks) <= span / LOOK_EVERY_S + 2, (len(looks), span)
    span = (after[-1] - kill_wall).total_seconds()
    assert len(after) <= span / LOOK_EVERY_S + 1, (len(after), span)
    # the longest pause is the failover: at most a lease, a renewal period and a look
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(looks)]
    assert max(gaps) < LEASE_S * 4 / 3 + 2 * LOOK_EVERY_S + 1.5, gaps

    # -- calipers monitor on that database sees the same totals ------------------------------
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    out = subprocess.run(
        [sys.executable, "-m", "calipers", "monitor", "--store", store_url, "--since", since,
         "--window", "1d", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr
    report = json.loads(out.stdout)
    by_role = Counter(r.role for r in rows if r.served)
    windows = report["windows"]
    assert sum(w["n_requests"] for w in windows) == len(served)
    for arm in ("baseline", "candidate"):
        assert sum(w["arms"][arm]["volume"]["n"] for w in windows) == by_role[arm] > 0
    (canary,) = report["fingerprint_canaries"]  # one canary, whichever replica looked
    assert canary["verdict"]["looks"] + canary["n_failed"] == len(looks)
    assert canary["state"] == "same" and not canary["alarm"]  # the model never changed
    engine.dispose()
