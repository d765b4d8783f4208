"""The store's traffic table: add_traffic / get_traffic on SQLite and, when a server is given,
PostgreSQL (the store tests' fixtures)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from calipers.store import Store, TrafficRecord
from tests.store.conftest import postgres_engine, store, store_url  # noqa: F401 - fixtures

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def rec(i: int, role: str = "baseline", **fields: Any) -> TrafficRecord:
    values: dict[str, Any] = {
        "pair_id": f"p{i:03d}", "role": role, "served": role == "baseline", "mode": "shadow",
        "endpoint": "chat/completions", "upstream": "http://127.0.0.1:8000/v1",
        "request": {"model": "m", "messages": [{"role": "user", "content": f"q{i} é"}],
                    "temperature": float("nan")},
        "ts": T0 + timedelta(seconds=i), "user_key_hash": "abcd" if i % 2 else None,
        "model": "m", "response": f"a{i}", "finish_reason": "stop", "status": 200,
        "latency_ms": 12.5, "ttft_ms": None, "input_tokens": 7, "output_tokens": 2,
    }  # fmt: skip
    return TrafficRecord(**(values | fields))


def same(a: TrafficRecord, b: TrafficRecord) -> bool:
    """Equal except the store-given id (NaN compares unequal to itself, so via JSON)."""
    return (
        a.model_copy(update={"id": None}).model_dump_json()
        == b.model_copy(update={"id": None}).model_dump_json()
    )


def test_round_trip_and_order(store: Store) -> None:  # noqa: F811
    records = [rec(i, role) for i in (3, 1, 2) for role in ("baseline", "candidate")]
    assert store.add_traffic(records) == 6
    got = store.get_traffic()
    assert [(r.pair_id, r.role) for r in got] == [
        (f"p{i:03d}", role) for i in (1, 2, 3) for role in ("baseline", "candidate")
    ]
    by_key = {(r.pair_id, r.role): r for r in records}
    assert all(same(r, by_key[(r.pair_id, r.role)]) for r in got)
    assert all(r.id is not None for r in got)
    assert got[0].ts == T0 + timedelta(seconds=1) and got[0].ts.tzinfo is not None


def test_a_batch_written_twice_is_stored_once(store: Store) -> None:  # noqa: F811
    batch = [rec(i) for i in range(5)]
    assert store.add_traffic(batch) == 5
    assert store.add_traffic([*batch, rec(5)]) == 1
    assert store.add_traffic([]) == 0
    assert len(store.get_traffic()) == 6


def test_filters(store: Store) -> None:  # noqa: F811
    store.add_traffic([rec(i, role) for i in range(10) for role in ("baseline", "candidate")])
    window = store.get_traffic(since=T0 + timedelta(seconds=2), until=T0 + timedelta(seconds=5))
    assert sorted({r.pair_id for r in window}) == ["p002", "p003", "p004"]
    assert len(store.get_traffic(role="candidate")) == 10
    assert {r.role for r in store.get_traffic(pair_id="p007")} == {"baseline", "candidate"}
    assert [r.pair_id for r in store.get_traffic(role="baseline", limit=3)] == [
        "p000",
        "p001",
        "p002",
    ]
    with pytest.raises(ValueError, match="role"):
        store.get_traffic(role="shadow")  # type: ignore[arg-type]  # not a role, on purpose
