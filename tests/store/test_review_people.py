"""The people side of review in the store: token lookup, sessions, adjudications and imported
labels, on SQLite and (when a server is given) PostgreSQL. Counts are read with plain SQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from calipers.errors import StoreError
from calipers.store import ImportedJudgment, ReviewNotFoundError, Store
from tests.store.test_review import T0, answer_all, campaign, counts, raters


def test_a_rater_is_found_by_token_key_id_and_name(store: Store) -> None:
    campaign(store, 2)
    added = store.add_rater("c", "alice", "h-alice", pool="business", token_key="KEYKEYKEYKEY")
    assert store.rater_by_token_key("KEYKEYKEYKEY") == added
    assert store.rater_by_token_key("nope") is None
    assert added.id is not None and store.rater_by_id(added.id) == added
    assert store.rater_by_id(added.id + 1000) is None
    assert store.get_rater("c", "alice").pool == "business"
    with pytest.raises(StoreError):  # a key is one person's
        store.add_rater("c", "bob", "h-bob", token_key="KEYKEYKEYKEY")
    store.add_rater("c", "carol", "h-carol")  # no key: many raters may have none
    store.add_rater("c", "dan", "h-dan")


def test_a_session_lives_until_it_expires_or_ends(store: Store) -> None:
    campaign(store, 1)
    rid = store.add_rater("c", "alice", "h").id
    assert rid is not None
    store.create_review_session(rid, "s1", "csrf1", now=T0, expires_at=T0 + timedelta(hours=1))
    live = store.review_session("s1", now=T0 + timedelta(minutes=59))
    assert live is not None and (live.rater_id, live.csrf_token) == (rid, "csrf1")
    assert store.review_session("s1", now=T0 + timedelta(hours=1)) is None  # expired
    assert store.review_session("other", now=T0) is None
    store.end_review_session("s1")
    assert store.review_session("s1", now=T0) is None


def test_adjudication_needs_the_role_and_the_latest_holds(store: Store) -> None:
    campaign(store, 2)
    store.add_rater("c", "r0", "h0")
    store.add_rater("c", "judge", "hj", role="adjudicator")
    with pytest.raises(StoreError, match="only an adjudicator or the owner"):
        store.adjudicate("c", "i000", "r0", {"ok": True}, now=T0)
    with pytest.raises(ReviewNotFoundError):
        store.adjudicate("c", "nope", "judge", {"ok": True}, now=T0)
    store.adjudicate("c", "i000", "judge", {"ok": False}, note="first look", now=T0)
    store.adjudicate("c", "i000", "judge", {"ok": True}, now=T0 + timedelta(seconds=1))
    got = store.get_adjudications("c")
    assert [(a.item_key, a.adjudicator, a.answers, a.note) for a in got] == [
        ("i000", "judge", {"ok": False}, "first look"),
        ("i000", "judge", {"ok": True}, None),
    ]


def test_imported_labels_fill_slots_and_refuse_more_than_k(store: Store, store_url: str) -> None:
    campaign(store, 2, k=2)
    names = raters(store, 3)
    rows = [ImportedJudgment(item_key="i000", rater=n, answers={"ok": True}) for n in names[:2]]
    assert store.import_judgments("c", rows) == 2
    assert counts(store_url)["counted"] == {"i000": 2}
    with pytest.raises(StoreError, match="more than k=2"):
        store.import_judgments(
            "c", [ImportedJudgment(item_key="i000", rater=names[2], answers={"ok": False})]
        )
    with pytest.raises(StoreError, match="twice"):  # and nothing of the batch is stored
        store.import_judgments(
            "c",
            [
                ImportedJudgment(item_key="i001", rater=names[0], answers={"ok": True}),
                ImportedJudgment(item_key="i001", rater=names[0], answers={"ok": True}),
            ],
        )
    assert counts(store_url)["counted"] == {"i000": 2}
    # the full item is not offered to a rater any more; the other one is
    assert answer_all(store, names[2]) == ["i001"]
    judged = store.get_judgments("c")
    assert sorted((j.item_key, j.rater, j.counted) for j in judged) == [
        ("i000", "r0", True),
        ("i000", "r1", True),
        ("i001", "r2", True),
    ]


def test_migration_6_adds_the_tables(store: Store, store_url: str) -> None:
    engine = sa.create_engine(store_url)
    try:
        names = set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert {"review_adjudications", "review_sessions"} <= names


def test_skips_are_counted_per_rater(store: Store) -> None:
    campaign(store, 3, k=1)
    raters(store, 2)
    for _ in range(2):
        lease = store.lease_next("c", "r0", now=T0, lease_s=60)
        assert lease is not None
        store.skip("c", "r0", lease.assignment_id, now=T0)
    found = store.assignment_counts("c", now=T0)
    assert found == {"r0": {"skipped": 2}}  # r1 has no assignment: not listed
