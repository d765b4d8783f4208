"""Scores of logged traffic: stored once per (request, arm, scorer), NaN kept as NaN, read
back by scorer, by request and by the request's arrival time; SQLite and PostgreSQL."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from calipers.store import OnlineScoreRecord, Store, TrafficRecord

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def _traffic(pair: str, minutes: int) -> list[TrafficRecord]:
    return [
        TrafficRecord(
            pair_id=pair,
            role=role,
            served=role == "baseline",
            mode="shadow",
            endpoint="/v1/chat/completions",
            upstream=f"http://{role}",
            request={"messages": [{"role": "user", "content": pair}]},
            ts=T0 + timedelta(minutes=minutes),
            status=200,
            response="ok",
        )
        for role in ("baseline", "candidate")
    ]


def _score(pair: str, role: str, scorer: str, value: float, **kw: object) -> OnlineScoreRecord:
    return OnlineScoreRecord(pair_id=pair, role=role, scorer=scorer, value=value, **kw)


def test_scores_are_written_once_and_read_back_exactly(store: Store) -> None:
    first = [
        _score("p1", "baseline", "refusal", 0.0, details={"pattern": None}),
        _score("p1", "candidate", "refusal", 1.0, details={"pattern": "x"}),
        _score("p1", "candidate", "llm_judge:helpfulness", 0.75),
    ]
    assert store.add_online_scores(first) == 3
    again = [_score("p1", "candidate", "refusal", 0.0), _score("p2", "baseline", "refusal", 0.0)]
    assert store.add_online_scores(again) == 1  # the stored 1.0 is kept, p2 is new
    got = store.get_online_scores(scorer="refusal")
    assert [(r.pair_id, r.role, r.value) for r in got] == [
        ("p1", "baseline", 0.0),
        ("p1", "candidate", 1.0),
        ("p2", "baseline", 0.0),
    ]
    assert got[1].details == {"pattern": "x"} and got[1].id is not None
    assert got[0].scored_at.tzinfo is not None
    assert store.add_online_scores([]) == 0


def test_nan_means_not_scored_and_a_real_value_replaces_it(store: Store) -> None:
    nan = _score(
        "p1",
        "candidate",
        "llm_judge:helpfulness",
        math.nan,
        details={"error": "judge gave no verdict"},
    )
    assert store.add_online_scores([nan]) == 1
    (got,) = store.get_online_scores()
    assert math.isnan(got.value) and got.details == {"error": "judge gave no verdict"}
    assert store.add_online_scores([nan]) == 0  # NaN does not replace NaN
    assert store.add_online_scores([_score("p1", "candidate", "llm_judge:helpfulness", 0.5)]) == 1
    assert store.add_online_scores([_score("p1", "candidate", "llm_judge:helpfulness", 1.0)]) == 0
    (got,) = store.get_online_scores()
    assert got.value == 0.5 and got.details is None


def test_a_batch_keeps_one_row_per_key_preferring_a_real_value(store: Store) -> None:
    batch = [
        _score("p1", "baseline", "s", math.nan),
        _score("p1", "baseline", "s", 0.25),
        _score("p1", "baseline", "s", 0.75),
    ]
    assert store.add_online_scores(batch) == 1
    assert [r.value for r in store.get_online_scores()] == [0.25]


def test_filters_by_request_and_by_the_requests_arrival_time(store: Store) -> None:
    for i in range(4):
        store.add_traffic(_traffic(f"p{i}", 10 * i))
    scores = [_score(f"p{i}", "candidate", "refusal", float(i % 2)) for i in range(4)]
    scores.append(
        _score("p0", "baseline", "feedback", 1.0, scored_at=T0 + timedelta(days=3))
    )  # scored late: still in p0's window
    store.add_online_scores(scores)
    window = store.get_online_scores(since=T0, until=T0 + timedelta(minutes=20))
    assert sorted((r.pair_id, r.scorer) for r in window) == [
        ("p0", "feedback"),
        ("p0", "refusal"),
        ("p1", "refusal"),
    ]
    late = store.get_online_scores(scorer="refusal", since=T0 + timedelta(minutes=15))
    assert [r.pair_id for r in late] == ["p2", "p3"]
    picked = store.get_online_scores(pair_ids=["p3", "p1", "nope"])
    assert [r.pair_id for r in picked] == ["p1", "p3"]
    assert store.get_online_scores(pair_ids=[]) == []


def test_many_pair_ids_are_read_in_chunks_in_storage_order(store: Store) -> None:
    ids = [f"q{i:04d}" for i in range(1200)]
    assert store.add_online_scores([_score(p, "baseline", "s", 1.0) for p in ids]) == 1200
    got = store.get_online_scores(pair_ids=list(reversed(ids)))
    assert [r.pair_id for r in got] == ids


def test_the_record_validates_its_role_and_times() -> None:
    with pytest.raises(ValidationError):
        _score("p", "judge", "s", 1.0)
    naive = _score("p", "baseline", "s", 1.0, scored_at=datetime(2026, 1, 1, 12))
    assert naive.scored_at == datetime(2026, 1, 1, 12, tzinfo=UTC)
