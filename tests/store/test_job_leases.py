"""Job leases: one holder at a time, renewed by its holder, taken over once expired or given
up, and a write fenced by a lease refused once the lease is someone else's. On SQLite and,
when a server is given, PostgreSQL (where the threads below really race)."""

from __future__ import annotations

import threading
import time

import pytest

from calipers.store import FingerprintLookRecord, JobLeaseLostError, Store


def test_one_holder_until_it_expires_then_another(store: Store) -> None:
    assert store.hold_job_lease("job", "a", 0.4)
    assert not store.hold_job_lease("job", "b", 0.4)  # held: b waits
    first = store.get_job_lease("job")
    assert first is not None and first.holder == "a"
    time.sleep(0.1)
    assert store.hold_job_lease("job", "a", 0.4)  # a renews: later expiry, same start
    renewed = store.get_job_lease("job")
    assert renewed is not None
    assert renewed.expires_at > first.expires_at and renewed.acquired_at == first.acquired_at
    time.sleep(0.5)  # a stops renewing
    assert store.hold_job_lease("job", "b", 0.4)
    assert not store.hold_job_lease("job", "a", 0.4)  # a came back too late
    taken = store.get_job_lease("job")
    assert taken is not None and taken.holder == "b" and taken.acquired_at > first.acquired_at
    assert store.hold_job_lease("other job", "a", 0.4)  # leases are per name


def test_a_lease_given_up_is_free_at_once(store: Store) -> None:
    assert store.hold_job_lease("job", "a", 60)
    assert not store.release_job_lease("job", "b")  # only the holder gives it up
    assert store.release_job_lease("job", "a")
    assert store.get_job_lease("job") is None
    assert store.hold_job_lease("job", "b", 60)


def test_racing_takers_get_one_holder(store: Store) -> None:
    start = threading.Barrier(8)
    won: list[str] = []

    def take(name: str) -> None:
        start.wait()
        if store.hold_job_lease("job", name, 30):
            won.append(name)

    threads = [threading.Thread(target=take, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    lease = store.get_job_lease("job")
    assert lease is not None and lease.holder == won[0]


def _look() -> FingerprintLookRecord:
    return FingerprintLookRecord(
        canary="fp", reference_hash="h", status="failed", model="m", completions={},
        design={}, error="probe q0: TimeoutError",
    )  # fmt: skip


def test_a_look_is_stored_only_under_a_lease_still_held(store: Store) -> None:
    assert store.hold_job_lease("canary", "a", 0.3)
    store.add_fingerprint_look(_look(), lease=("canary", "a"))
    with pytest.raises(JobLeaseLostError, match="no longer holds"):
        store.add_fingerprint_look(_look(), lease=("canary", "b"))
    time.sleep(0.4)  # a's lease ran out: a stalled replica must not store its look
    with pytest.raises(JobLeaseLostError):
        store.add_fingerprint_look(_look(), lease=("canary", "a"))
    assert store.hold_job_lease("canary", "b", 30)
    store.add_fingerprint_look(_look(), lease=("canary", "b"))
    assert len(store.get_fingerprint_looks(canary="fp")) == 2
    last = store.last_fingerprint_look("fp", "h")
    assert last == store.get_fingerprint_looks(canary="fp")[-1].ts
    assert store.last_fingerprint_look("fp", "other") is None


def test_a_lease_lasts_a_positive_time(store: Store) -> None:
    with pytest.raises(ValueError, match="positive"):
        store.hold_job_lease("job", "a", 0)
