"""What the user gets through the gateway is what the baseline sent: bodies, statuses,
headers, errors, and streams byte for byte."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from tests._servers import ServerThread
from tests.gateway.conftest import UPSTREAM, FakeUpstream, chat_body, sse_bytes


def test_chat_and_completions_pass_through(rig_factory: Any) -> None:
    rig = rig_factory(mode="off")
    direct = httpx.post(f"{rig.servers[0].url}/v1/chat/completions", json=chat_body("hi there"))
    via = httpx.post(f"{rig.url}/chat/completions", json=chat_body("hi there"))
    assert via.status_code == 200
    assert via.content == direct.content
    assert via.headers["content-type"] == direct.headers["content-type"]
    assert via.headers["x-upstream"] == "baseline"
    assert len(via.headers["x-calipers-request-id"]) == 32
    comp = httpx.post(f"{rig.url}/completions", json={"model": "m", "prompt": "a b"})
    assert comp.json()["choices"][0]["text"] == " baseline"
    models = httpx.get(f"{rig.url}/models")
    assert models.json()["data"][0]["id"] == "baseline"
    rows = rig.stop()
    assert [(r.endpoint, r.role, r.served) for r in rows] == [
        ("chat/completions", "baseline", True),
        ("completions", "baseline", True),
    ]
    assert rows[0].response == "baseline: hi there"
    assert (rows[0].input_tokens, rows[0].output_tokens) == (2, 3)
    assert rows[1].response == " baseline" and rows[1].finish_reason == "length"


def test_errors_pass_through_unchanged(rig_factory: Any) -> None:
    rig = rig_factory(mode="off")
    for status in (400, 404, 429, 500, 503):
        body = chat_body("x", model=f"status-{status}")
        direct = httpx.post(f"{rig.servers[0].url}/v1/chat/completions", json=body)
        via = httpx.post(f"{rig.url}/chat/completions", json=body)
        assert via.status_code == status
        assert via.content == direct.content
        assert via.headers["retry-after"] == "7"
    bad = httpx.post(
        f"{rig.url}/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert bad.status_code == 400  # the upstream's own answer to a broken body
    rows = rig.stop()
    assert [r.status for r in rows] == [400, 404, 429, 500, 503, 400]
    assert rows[0].error is not None and rows[0].error.startswith("HTTP 400: ")
    assert "baseline says 400" in rows[0].error
    assert rows[-1].request == {"_unparsed": "{not json"}


def test_streaming_is_relayed_byte_for_byte(rig_factory: Any) -> None:
    rig = rig_factory(mode="off")
    body = chat_body("stream me please", stream=True)
    with httpx.stream("POST", f"{rig.url}/chat/completions", json=body) as r:
        got = b"".join(r.iter_raw())
        assert r.headers["content-type"].startswith("text/event-stream")
    assert got == sse_bytes("baseline", "baseline: stream me please")
    rows = rig.stop()
    assert len(rows) == 1
    assert rows[0].stream and rows[0].response == "baseline: stream me please"
    assert rows[0].finish_reason == "stop"
    assert rows[0].ttft_ms is not None and rows[0].latency_ms is not None
    assert 0 < rows[0].ttft_ms <= rows[0].latency_ms


def test_baseline_down_is_a_502_in_openai_shape(rig_factory: Any) -> None:
    rig = rig_factory(mode="off")
    rig.servers[0].stop()
    r = httpx.post(f"{rig.url}/chat/completions", json=chat_body("anyone?"))
    assert r.status_code == 502
    assert r.json()["error"]["type"] == "upstream_unavailable"
    rows = rig.stop()
    assert len(rows) == 1 and rows[0].status is None and rows[0].error


def test_headers_forwarded_and_gateway_headers_kept_back(rig_factory: Any) -> None:
    rig = rig_factory(mode="shadow", fraction=1.0)
    headers = {
        "authorization": "Bearer client-key-123",
        "x-calipers-user": "u1",
        "openai-organization": "org-1",
    }
    httpx.post(f"{rig.url}/chat/completions", json=chat_body("h"), headers=headers)
    rig.stop()
    for upstream in (rig.baseline, rig.candidate):
        (seen,) = upstream.seen
        assert seen["headers"]["authorization"] == "Bearer client-key-123"
        assert seen["headers"]["openai-organization"] == "org-1"
        assert "x-calipers-user" not in seen["headers"]


def test_gateway_keys_replace_the_clients(tmp_path: Any) -> None:
    from calipers.gateway import GatewayConfig, create_app

    base, cand = FakeUpstream("b"), FakeUpstream("c")
    servers = [
        ServerThread(base.app(), **UPSTREAM).start(),
        ServerThread(cand.app(), **UPSTREAM).start(),
    ]
    config = GatewayConfig(
        baseline_url=f"{servers[0].url}/v1", candidate_url=f"{servers[1].url}/v1", fraction=1.0
    )
    app = create_app(config, str(tmp_path / "g.db"), candidate_api_key="sk-candidate-only")
    gw = ServerThread(app).start()
    try:
        httpx.post(
            f"{gw.url}/v1/chat/completions",
            json=chat_body("k"),
            headers={"authorization": "Bearer client"},
        )
    finally:
        gw.stop()
        for s in servers:
            s.stop()
    assert base.seen[0]["headers"]["authorization"] == "Bearer client"
    assert cand.seen[0]["headers"]["authorization"] == "Bearer sk-candidate-only"


def test_health_and_stats(rig_factory: Any) -> None:
    rig = rig_factory(mode="shadow", fraction=1.0)
    assert httpx.get(f"{rig.gateway.url}/healthz").json() == {"status": "ok", "mode": "shadow"}
    httpx.post(f"{rig.url}/chat/completions", json=chat_body("s"))
    stats = rig.stats()
    assert stats["requests"] == 1 and stats["sampled_for_shadow"] == 1
    assert stats["breaker"]["state"] == "closed"
    assert json.dumps(stats)  # plain JSON
    rig.stop()


def test_a_502_tells_the_client_the_request_id_not_the_upstream(
    rig_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rig = rig_factory(mode="off")
    port = rig.servers[0].port
    rig.servers[0].stop()
    with caplog.at_level(logging.WARNING, logger="calipers.gateway"):
        r = httpx.post(f"{rig.url}/chat/completions", json=chat_body("anyone?"))
        models = httpx.get(f"{rig.url}/models")
    assert r.status_code == 502 and models.status_code == 502
    rid = r.headers["x-calipers-request-id"]
    for body in (r.text, models.text):
        assert "127.0.0.1" not in body and str(port) not in body and "http" not in body
    assert rid in r.json()["error"]["message"]
    rows = rig.stop()
    logged = caplog.text  # the operator still sees where it failed
    assert f"127.0.0.1:{port}" in logged and rid in logged
    assert rows[0].upstream.endswith(f":{port}/v1")
