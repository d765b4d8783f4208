"""The review assignment engine: exactly k judgments per item, leases, skips, repeats, and
concurrent raters, on SQLite and (when a server is given) PostgreSQL.

Counts are read from the tables with plain SQL, not through the engine's own methods."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from calipers.store import (
    LeaseClosedError,
    LeaseExpiredError,
    LeaseNotYoursError,
    RaterExcludedError,
    ReviewCampaignRecord,
    ReviewItemRecord,
    Store,
)
from tests.store.test_concurrency import together

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def campaign(
    store: Store, n: int, *, k: int = 2, kind: str = "single", **fields: Any
) -> ReviewCampaignRecord:
    rec = store.create_campaign(
        ReviewCampaignRecord(name="c", kind=kind, questions=[{"id": "ok"}], k=k, **fields)
    )
    items = [
        ReviewItemRecord(item_key=f"i{i:03d}", payload={"a": f"A{i}", "b": f"B{i}"})
        for i in range(n)
    ]
    store.add_review_items("c", items)
    return rec


def raters(store: Store, n: int) -> list[str]:
    names = [f"r{j}" for j in range(n)]
    for name in names:
        store.add_rater("c", name, token_hash=f"hash-{name}")
    return names


def counts(store_url: str) -> dict[str, Any]:
    """Per item: answered counted judgments; per (item, rater): first looks; all by SQL."""
    engine = sa.create_engine(store_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT i.item_key, r.name, a.state, a.slot, a.is_repeat, j.id AS jid "
                    "FROM review_assignments a JOIN review_items i ON i.id = a.item_id "
                    "JOIN raters r ON r.id = a.rater_id "
                    "LEFT JOIN review_judgments j ON j.assignment_id = a.id"
                )
            ).all()
    finally:
        engine.dispose()
    answered = [r for r in rows if r.state == "answered"]
    assert all(r.jid is not None for r in answered)  # an answer always has its judgment
    return {
        "counted": Counter(r.item_key for r in answered if r.slot is not None),
        "first_looks": Counter((r.item_key, r.name) for r in answered if not r.is_repeat),
        "repeats": Counter((r.item_key, r.name) for r in answered if r.is_repeat),
        "states": Counter(r.state for r in rows),
    }


def answer_all(store: Store, rater: str, now: datetime = T0) -> list[str]:
    done = []
    while (lease := store.lease_next("c", rater, now=now, lease_s=60)) is not None:
        store.submit("c", rater, lease.assignment_id, {"ok": True}, seconds=3.0, now=now)
        done.append(lease.item_key)
    return done


def test_each_item_gets_exactly_k_and_no_rater_sees_one_twice(store: Store, store_url: str) -> None:
    campaign(store, 5, k=2)
    done = {name: answer_all(store, name) for name in raters(store, 3)}
    assert [len(done[r]) for r in ("r0", "r1", "r2")] == [5, 5, 0]  # 5 items x 2 slots
    found = counts(store_url)
    assert found["counted"] == {f"i{i:03d}": 2 for i in range(5)}
    assert max(found["first_looks"].values()) == 1
    judgments = store.get_judgments("c")
    assert len(judgments) == 10 and all(j.counted and j.answers == {"ok": True} for j in judgments)


def test_an_open_lease_is_returned_again_not_a_second_one(store: Store) -> None:
    campaign(store, 3, k=1)
    raters(store, 1)
    first = store.lease_next("c", "r0", now=T0, lease_s=60)
    again = store.lease_next("c", "r0", now=T0 + timedelta(seconds=30), lease_s=60)
    assert first is not None and again is not None
    assert again.assignment_id == first.assignment_id
    assert again.lease_expires_at == T0 + timedelta(seconds=90)  # renewed


def test_a_skip_frees_the_slot_for_another_rater_and_is_never_a_label(
    store: Store, store_url: str
) -> None:
    campaign(store, 1, k=1)
    raters(store, 2)
    lease = store.lease_next("c", "r0", now=T0, lease_s=60)
    assert lease is not None
    store.skip("c", "r0", lease.assignment_id, now=T0)
    assert store.lease_next("c", "r0", now=T0, lease_s=60) is None  # never offered again
    assert answer_all(store, "r1") == ["i000"]
    found = counts(store_url)
    assert found["counted"] == {"i000": 1} and found["states"]["skipped"] == 1
    assert [j.rater for j in store.get_judgments("c")] == ["r1"]


def test_an_expired_lease_frees_its_slot_and_cannot_be_answered(
    store: Store, store_url: str
) -> None:
    campaign(store, 1, k=1)
    raters(store, 2)
    stale = store.lease_next("c", "r0", now=T0, lease_s=60)
    assert stale is not None
    assert store.lease_next("c", "r1", now=T0 + timedelta(seconds=59), lease_s=60) is None
    later = T0 + timedelta(seconds=61)
    fresh = store.lease_next("c", "r1", now=later, lease_s=60)
    assert fresh is not None and fresh.item_key == "i000"
    with pytest.raises(LeaseExpiredError, match="expired"):
        store.submit("c", "r0", stale.assignment_id, {"ok": True}, seconds=1.0, now=later)
    store.submit("c", "r1", fresh.assignment_id, {"ok": False}, seconds=1.0, now=later)
    assert counts(store_url)["counted"] == {"i000": 1}


def test_a_lease_past_its_time_is_refused_even_before_anyone_expires_it(store: Store) -> None:
    campaign(store, 1, k=1)
    raters(store, 1)
    lease = store.lease_next("c", "r0", now=T0, lease_s=10)
    assert lease is not None
    with pytest.raises(LeaseExpiredError):
        store.submit("c", "r0", lease.assignment_id, {}, seconds=1.0, now=T0 + timedelta(0, 10))
    assert store.get_judgments("c") == []


def test_expire_leases_counts_the_stale_ones(store: Store) -> None:
    campaign(store, 3, k=1)
    for name in raters(store, 3):
        store.lease_next("c", name, now=T0, lease_s=10 if name != "r2" else 100)
    assert store.expire_leases("c", now=T0 + timedelta(seconds=50)) == 2


def test_another_raters_lease_is_refused_and_an_answer_is_final(store: Store) -> None:
    campaign(store, 1, k=2)
    raters(store, 2)
    lease = store.lease_next("c", "r0", now=T0, lease_s=60)
    assert lease is not None
    with pytest.raises(LeaseNotYoursError):
        store.submit("c", "r1", lease.assignment_id, {"ok": True}, seconds=1.0, now=T0)
    with pytest.raises(LeaseNotYoursError):
        store.skip("c", "r1", lease.assignment_id, now=T0)
    store.submit("c", "r0", lease.assignment_id, {"ok": True}, seconds=1.0, now=T0)
    with pytest.raises(LeaseClosedError, match="already answered"):
        store.submit("c", "r0", lease.assignment_id, {"ok": False}, seconds=1.0, now=T0)
    assert [j.rater for j in store.get_judgments("c")] == ["r0"]


def test_planned_repeats_are_extra_and_come_back_to_the_same_rater(
    store: Store, store_url: str
) -> None:
    campaign(store, 10, k=1, repeat_fraction=0.2, seed=3)
    raters(store, 1)
    done = answer_all(store, "r0")
    found = counts(store_url)
    assert found["counted"] == {f"i{i:03d}": 1 for i in range(10)}  # repeats fill no slot
    assert sum(found["repeats"].values()) == 2  # round-down 10 x 0.2
    assert len(done) == 12 and set(done) == {f"i{i:03d}" for i in range(10)}
    assert all(n == 1 for n in found["repeats"].values())


def test_control_items_go_to_every_rater_and_count_toward_nothing(
    store: Store, store_url: str
) -> None:
    campaign(store, 2, k=1)
    store.add_review_items("c", [ReviewItemRecord(item_key="gold", payload={}, gold="yes")])
    for name in raters(store, 3):
        answer_all(store, name)
    found = counts(store_url)
    assert found["counted"] == {"i000": 1, "i001": 1}
    assert sum(1 for (item, _) in found["first_looks"] if item == "gold") == 3


def test_pairwise_sides_are_drawn_per_rater_and_item_and_stored(store: Store) -> None:
    campaign(store, 40, k=2, kind="pairwise", seed=11)
    names = raters(store, 2)
    for name in names:
        answer_all(store, name)
    sides = {(j.rater, j.item_key): j.swapped for j in store.get_judgments("c")}
    assert len(sides) == 80 and all(isinstance(s, bool) for s in sides.values())
    assert 20 <= sum(bool(s) for s in sides.values()) <= 60  # both sides used
    assert any(sides[("r0", k)] != sides[("r1", k)] for (_, k) in sides)  # per rater


def test_an_excluded_rater_gets_nothing_and_their_slots_are_refilled(
    store: Store, store_url: str
) -> None:
    campaign(store, 2, k=1)
    raters(store, 2)
    answer_all(store, "r0")
    store.set_rater_excluded("c", "r0", True, reason="random clicking", now=T0)
    with pytest.raises(RaterExcludedError):
        store.lease_next("c", "r0", now=T0, lease_s=60)
    assert sorted(answer_all(store, "r1")) == ["i000", "i001"]
    assert counts(store_url)["counted"] == {"i000": 1, "i001": 1}
    store.set_rater_excluded("c", "r0", False, reason=None, now=T0)
    (r0,) = [r for r in store.get_raters("c") if r.name == "r0"]
    assert not r0.excluded and r0.excluded_reason == "random clicking"  # recorded, reversed
    assert store.lease_next("c", "r0", now=T0, lease_s=60) is None  # seen both already


def test_raters_see_no_source_and_tokens_resolve_by_hash(store: Store) -> None:
    campaign(store, 1, k=1)
    store.add_review_items(
        "c", [ReviewItemRecord(item_key="s", payload={"a": "x"}, source={"model": "gpt-x"})]
    )
    raters(store, 1)
    lease = store.lease_next("c", "r0", now=T0, lease_s=60)
    assert lease is not None and "gpt-x" not in lease.model_dump_json()
    found = store.rater_by_token_hash("hash-r0")
    assert found is not None and found.name == "r0"
    assert store.get_review_items("c")[1].source == {"model": "gpt-x"}


def run_raters(store_url: str, workers: int, items: int, k: int) -> dict[str, Any]:
    with Store.open(store_url) as owner:
        campaign(owner, items, k=k)
        raters(owner, workers)

    def rate(w: int) -> int:
        with Store.open(store_url) as mine:
            n = 0
            now = T0
            while True:
                lease = mine.lease_next("c", f"r{w}", now=now, lease_s=600)
                if lease is None:
                    # nothing free now; a slot another rater holds may come back (a skip)
                    if mine.waiting_for("c", f"r{w}", now=now) == 0:
                        return n
                    time.sleep(0.01)
                    continue
                if (w + n) % 17 == 0:  # some skips, so freed slots are taken by others
                    mine.skip("c", f"r{w}", lease.assignment_id, now=now)
                else:
                    mine.submit("c", f"r{w}", lease.assignment_id, {"ok": 1}, seconds=2, now=now)
                n += 1

    together(workers, rate)
    return counts(store_url)


@pytest.mark.parametrize("items", [60, pytest.param(300, marks=pytest.mark.slow, id="300-items")])
def test_concurrent_raters_never_over_assign(store_url: str, store: Store, items: int) -> None:
    found = run_raters(store_url, workers=20, items=items, k=3)
    assert found["counted"] == {f"i{i:03d}": 3 for i in range(items)}
    assert max(found["first_looks"].values()) == 1
    assert found["states"]["answered"] == 3 * items and found["states"]["leased"] == 0


def test_sqlite_raters_in_processes_never_over_assign(tmp_path: Path) -> None:
    import multiprocessing

    url = f"sqlite:///{tmp_path / 'p.db'}"
    with Store.open(url) as owner:
        campaign(owner, 60, k=3)
        raters(owner, 6)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(6) as pool:
        pool.starmap(_rate_in_process, [(url, f"r{w}") for w in range(6)])
    found = counts(url)
    assert found["counted"] == {f"i{i:03d}": 3 for i in range(60)}
    assert max(found["first_looks"].values()) == 1


def _rate_in_process(url: str, rater: str) -> None:
    with Store.open(url) as mine:
        while (lease := mine.lease_next("c", rater, now=T0, lease_s=600)) is not None:
            mine.submit("c", rater, lease.assignment_id, {"ok": 1}, seconds=1.0, now=T0)


def test_none_now_is_not_done_while_another_raters_lease_may_come_back(store: Store) -> None:
    campaign(store, 1, k=1)
    raters(store, 2)
    held = store.lease_next("c", "r0", now=T0, lease_s=60)
    assert held is not None
    assert store.lease_next("c", "r1", now=T0, lease_s=60) is None  # the one slot is held
    assert store.waiting_for("c", "r1", now=T0) == 1  # ... but it may come back: ask again
    store.skip("c", "r0", held.assignment_id, now=T0)
    assert store.waiting_for("c", "r0", now=T0) == 0  # r0 skipped it: done
    got = store.lease_next("c", "r1", now=T0, lease_s=60)
    assert got is not None and got.item_key == "i000"
    store.submit("c", "r1", got.assignment_id, {"ok": 1}, seconds=3, now=T0)
    assert store.waiting_for("c", "r1", now=T0) == 0
