"""What reaches the store: every accepted request, each mirrored copy paired with it, written
at graceful shutdown at the latest; and never an API key."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.gateway.conftest import chat_body, send_many, sse_bytes

KEY = "sk-plantedKEY0123456789abcdefXYZ"


def db_bytes(path: Path) -> bytes:
    """The database file and its WAL, as raw bytes."""
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


async def streams(url: str, n: int) -> list[bytes]:
    async with httpx.AsyncClient(timeout=30) as client:

        async def one(i: int) -> bytes:
            body = chat_body(f"s{i}", stream=True)
            async with client.stream("POST", f"{url}/chat/completions", json=body) as r:
                return b"".join([c async for c in r.aiter_raw()])

        return await asyncio.gather(*(one(i) for i in range(n)))


def test_every_request_is_logged_and_shutdown_flushes(rig_factory: Any) -> None:
    # A 60 s batch window: nothing is written before shutdown, so shutdown must write it all.
    rig = rig_factory(mode="shadow", fraction=0.5, batch_window_ms=60_000.0, seed=5)
    answers = send_many(rig.url, [chat_body(f"q{i}") for i in range(150)])
    streamed = asyncio.run(streams(rig.url, 20))
    assert all(a.status_code == 200 for a, _ in answers)
    assert streamed == [sse_bytes("baseline", f"baseline: s{i}") for i in range(20)]
    before = rig.settled_stats()
    assert before["log"]["written"] == 0
    rows = rig.stop()
    mirrored = before["shadow"]["mirrored"]
    base = {r.pair_id: r for r in rows if r.role == "baseline"}
    cand = {r.pair_id: r for r in rows if r.role == "candidate"}
    assert len(base) == 170 and len(cand) == mirrored > 0
    assert len(rows) == before["log"]["accepted"] == 170 + mirrored
    assert set(cand) <= set(base)
    assert sum(r.stream for r in base.values()) == 20
    for pid, c in cand.items():
        b = base[pid]
        assert c.stream == b.stream and c.request == b.request and c.ts == b.ts
        assert c.response == "candidate: " + (b.response or "").removeprefix("baseline: ")
        if c.stream:
            assert c.ttft_ms is not None


def test_api_keys_never_reach_the_store(rig_factory: Any) -> None:
    rig = rig_factory(mode="shadow", fraction=1.0)
    body = chat_body(f"my key is {KEY}, mail me at ann@example.com", api_key=KEY)
    headers = {"authorization": f"Bearer {KEY}", "x-api-key": KEY}
    send_many(rig.url, [body], [headers])
    rig.settled_stats()
    rows = rig.stop()
    assert len(rows) == 2
    assert rig.baseline.seen[0]["headers"]["authorization"] == f"Bearer {KEY}"  # still forwarded
    raw = db_bytes(rig.store_path)
    assert KEY.encode() not in raw and b"plantedKEY" not in raw
    assert b"ann@example.com" not in raw
    assert rows[0].request["api_key"] == "[SECRET]"
    assert "[API_KEY]" in rows[0].request["messages"][0]["content"]
    assert "[EMAIL]" in rows[0].request["messages"][0]["content"]


def test_a_piece_of_the_request_key_echoed_back_is_not_stored(rig_factory: Any) -> None:
    # A key in no known format (no sk-, no Bearer in the text): only the request knows it.
    key = "c9QxV2mLr8TzP4kWn7YbH3sDf6GjA1eU"
    piece = key[6:24]  # 18 characters, which the fake model echoes in its answer
    for settings in ({"mode": "shadow", "fraction": 1.0}, {"mode": "off", "redact": False}):
        rig = rig_factory(**settings)
        send_many(
            rig.url,
            [chat_body(f"did you keep ...{piece}...?")],
            [{"authorization": f"Bearer {key}"}],
        )
        rig.settled_stats()
        rows = rig.stop()
        raw = db_bytes(rig.store_path)
        assert piece.encode() not in raw and piece[:8].encode() not in raw, settings
        assert rows and all(
            r.response == f"{r.role}: did you keep ...[API_KEY]...?" for r in rows
        ), settings


def test_without_redaction_personal_data_stays_but_keys_still_go(rig_factory: Any) -> None:
    rig = rig_factory(mode="off", redact=False)
    send_many(rig.url, [chat_body(f"{KEY} ann@example.com")])
    (row,) = rig.stop()
    raw = db_bytes(rig.store_path)
    assert KEY.encode() not in raw
    assert b"ann@example.com" in raw
    assert row.response == "baseline: [API_KEY] ann@example.com"


def test_canary_streams_come_from_the_candidate(rig_factory: Any) -> None:
    rig = rig_factory(mode="canary", fraction=1.0)
    body = chat_body("flow", stream=True, user="someone")
    with httpx.stream("POST", f"{rig.url}/chat/completions", json=body) as r:
        got = b"".join(r.iter_raw())
    assert got == sse_bytes("candidate", "candidate: flow")
    (row,) = rig.stop()
    assert (row.role, row.served, row.stream, row.response) == (
        "candidate",
        True,
        True,
        "candidate: flow",
    )
