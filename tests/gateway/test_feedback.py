"""User feedback through the gateway: stored as an online score of the arm that served."""

from __future__ import annotations

from collections.abc import Container
from types import SimpleNamespace
from typing import Any, cast

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from calipers.errors import StoreError
from calipers.gateway import in_canary
from calipers.gateway._feedback import ServedArms, record_feedback
from calipers.store import Store
from tests.gateway.conftest import chat_body, send_many


def _feedback(rig: Any, **body: Any) -> httpx.Response:
    return httpx.post(f"{rig.gateway.url}/calipers/feedback", json=body)


def test_feedback_is_stored_against_the_arm_that_served(rig_factory: Any) -> None:
    rig = rig_factory(mode="canary", fraction=0.5, salt="s")
    users = [f"u{i}" for i in range(12)]
    answers = send_many(rig.url, [chat_body("hello", user=u) for u in users])
    ids = [a.headers["x-calipers-request-id"] for a, _ in answers]
    for i, rid in enumerate(ids):
        r = _feedback(
            rig,
            request_id=rid,
            score=float(i % 2),
            comment="mail me at jane.doe@example.com" if i == 0 else None,
        )
        assert r.status_code == 200, r.text
        assert r.json()["stored"] is True
    again = _feedback(rig, request_id=ids[0], score=1.0)
    assert again.status_code == 200 and again.json()["stored"] is False  # one per request
    rig.stop()
    with Store.open(str(rig.store_path)) as store:
        got = {s.pair_id: s for s in store.get_online_scores(scorer="feedback")}
    assert set(got) == set(ids)
    for i, (user, rid) in enumerate(zip(users, ids, strict=True)):
        expected = "candidate" if in_canary(user, "s", 0.5) else "baseline"
        assert got[rid].role == expected and got[rid].value == float(i % 2)
    comment = (got[ids[0]].details or {})["comment"]
    assert "jane.doe@example.com" not in comment  # redacted like the traffic


def test_bad_feedback_is_refused_with_a_reason(rig_factory: Any) -> None:
    rig = rig_factory(mode="off")
    ((answer, _),) = send_many(rig.url, [chat_body("hi")])
    rid = answer.headers["x-calipers-request-id"]
    unknown = _feedback(rig, request_id="f" * 32, score=1)
    assert unknown.status_code == 404 and "x-calipers-request-id" in unknown.text
    missing = _feedback(rig, request_id=rid)
    assert missing.status_code == 400 and "score" in missing.text
    extra = _feedback(rig, request_id=rid, score=1, rating=5)
    assert extra.status_code == 400 and "rating" in extra.text
    nan = httpx.post(
        f"{rig.gateway.url}/calipers/feedback",
        content=b'{"request_id": "%s", "score": NaN}' % rid.encode(),
    )
    assert nan.status_code == 400
    rig.stop()
    with Store.open(str(rig.store_path)) as store:
        assert store.get_online_scores(scorer="feedback") == []


def test_a_boolean_is_not_a_score(rig_factory: Any) -> None:
    rig = rig_factory(mode="off")
    ((answer, _),) = send_many(rig.url, [chat_body("hi")])
    rid = answer.headers["x-calipers-request-id"]
    for value in (True, False):
        r = _feedback(rig, request_id=rid, score=value)
        assert r.status_code == 400, r.text
        assert "not the boolean" in r.json()["error"]["message"]
    assert _feedback(rig, request_id=rid, score=1).status_code == 200  # a number still counts
    rig.stop()
    with Store.open(str(rig.store_path)) as store:
        assert [s.value for s in store.get_online_scores(scorer="feedback")] == [1.0]


class _FlakyStore:
    """A store whose calls numbered in ``failing`` (from 1) fail as an unreachable database's do."""

    def __init__(self, failing: Container[int]) -> None:
        self.failing = failing
        self.calls = 0
        self.stored: list[Any] = []

    def _maybe_fail(self) -> None:
        self.calls += 1
        if self.calls in self.failing:
            raise StoreError("The store pg cannot be used right now: connection reset.")

    def get_traffic(self, *, pair_id: str) -> list[Any]:
        self._maybe_fail()
        return [SimpleNamespace(served=True, role="candidate")]

    def add_online_scores(self, records: list[Any]) -> int:
        self._maybe_fail()
        self.stored.extend(records)
        return len(records)


def _feedback_app(store: _FlakyStore, store_wait_s: float) -> TestClient:
    async def route(request: Request) -> Response:
        return await record_feedback(
            request,
            cast(Store, store),
            ServedArms(),
            lambda s: s,
            store_wait_s=store_wait_s,
        )

    return TestClient(Starlette(routes=[Route("/f", route, methods=["POST"])]))


def test_feedback_waits_out_a_short_store_outage() -> None:
    store = _FlakyStore(failing={1, 2, 4})  # the lookup fails twice, then the write once
    r = _feedback_app(store, store_wait_s=5.0).post("/f", json={"request_id": "a" * 32, "score": 1})
    assert r.status_code == 200, r.text
    assert r.json() == {"request_id": "a" * 32, "role": "candidate", "stored": True}
    assert store.calls == 5 and [s.value for s in store.stored] == [1.0]


def test_feedback_is_refused_with_503_while_the_store_stays_down() -> None:
    store = _FlakyStore(failing=range(1, 10**6))
    r = _feedback_app(store, store_wait_s=0.3).post("/f", json={"request_id": "a" * 32, "score": 1})
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert r.json()["error"]["type"] == "store_unavailable"
    assert "connection reset" in r.json()["error"]["message"] and store.stored == []
