"""RAG requests through the gateway: ``calipers_rag`` never reaches an upstream, is kept in
the stored row (redacted like the rest), and a malformed one is refused with a 400."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from calipers.store import MAX_RAG_CHARS, RAG_FIELD
from tests.gateway.conftest import chat_body, send_many

PASSAGES = [
    {"id": "doc-1", "title": "Zorvia", "text": "The capital of Zorvia is Quelport."},
    {"id": 2, "text": "Write to ann@example.com for the Brelland archive."},
]


def rag_body(text: str, passages: Any = PASSAGES, **extra: Any) -> dict[str, Any]:
    return chat_body(text, **{RAG_FIELD: {"passages": passages}}, **extra)


@pytest.mark.parametrize(
    ("settings", "extra"),
    [
        ({"mode": "shadow", "fraction": 1.0}, {}),
        ({"mode": "shadow", "fraction": 1.0, "candidate_params": {"temperature": 0.0}}, {}),
        ({"mode": "canary", "fraction": 1.0}, {"user": "u1"}),
        ({"mode": "off"}, {"stream": True}),
    ],
)
def test_the_upstreams_never_see_the_passages_and_the_store_keeps_them(
    rig_factory: Any, settings: dict[str, Any], extra: dict[str, Any]
) -> None:
    rig = rig_factory(**settings)
    body = rag_body("What is the capital of Zorvia?", **extra)
    with httpx.Client(timeout=30) as client:
        r = client.post(f"{rig.url}/chat/completions", json=body)
    assert r.status_code == 200, r.text
    stats = rig.settled_stats()
    assert stats["rag"] == {"requests": 1, "refused": 0}
    rows = rig.stop()
    seen = [s["body"] for s in rig.baseline.seen + rig.candidate.seen]
    assert seen and all(RAG_FIELD not in b for b in seen)
    assert all(b["messages"] == body["messages"] for b in seen)  # nothing else changed
    assert rows
    for row in rows:
        kept = row.request[RAG_FIELD]["passages"]
        assert kept[0] == PASSAGES[0]
        # redacted as the messages are: the e-mail address is not stored
        assert kept[1] == {"id": 2, "text": "Write to [EMAIL] for the Brelland archive."}


def test_requests_without_passages_pass_through_byte_for_byte(rig_factory: Any) -> None:
    rig = rig_factory(mode="off")
    raw = b'{"model": "m",   "messages": [{"role": "user", "content": "hi"}]}'
    with httpx.Client(timeout=30) as client:
        r = client.post(
            f"{rig.url}/chat/completions", content=raw, headers={"content-type": "application/json"}
        )
    assert r.status_code == 200
    assert rig.settled_stats()["rag"] == {"requests": 0, "refused": 0}
    rows = rig.stop()
    assert RAG_FIELD not in rows[0].request


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("doc-1 doc-2", "calipers_rag must be an object"),
        ({}, "calipers_rag.passages: Field required"),
        ({"passages": "doc-1"}, "calipers_rag.passages: Input should be a valid list"),
        ({"passages": [{"id": "d"}]}, "calipers_rag.passages[0].text: Field required"),
        ({"passages": [{"text": 7}]}, "calipers_rag.passages[0].text: Input should be a valid"),
        ({"passages": [{"text": "a", "score": 1}]}, "passages[0].score: Extra inputs"),
        ({"pasages": []}, "calipers_rag.pasages: Extra inputs are not permitted"),
        ({"passages": [{"text": "x" * (MAX_RAG_CHARS + 1)}]}, "500,000 the gateway keeps"),
    ],
)
def test_a_malformed_field_is_refused_before_any_upstream_is_called(
    rig_factory: Any, value: Any, problem: str
) -> None:
    rig = rig_factory(mode="shadow", fraction=1.0)
    body = chat_body("q", **{RAG_FIELD: value})
    ((answer, _s),) = send_many(rig.url, [body])
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert problem in error["message"], error["message"]
    assert error["param"] == RAG_FIELD and error["type"] == "invalid_request_error"
    assert rig.settled_stats()["rag"] == {"requests": 0, "refused": 1}
    assert rig.stop() == []
    assert rig.baseline.seen == [] and rig.candidate.seen == []


def test_the_openai_sdk_sends_passages_with_extra_body(rig_factory: Any) -> None:
    openai = pytest.importorskip("openai")
    rig = rig_factory(mode="off")
    client = openai.OpenAI(base_url=rig.url, api_key="unused")
    reply = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "What is the capital of Zorvia?"}],
        extra_body={RAG_FIELD: {"passages": PASSAGES[:1]}},
    )
    assert reply.choices[0].message.content == "baseline: What is the capital of Zorvia?"
    rig.settled_stats()
    rows = rig.stop()
    assert RAG_FIELD not in json.dumps(rig.baseline.seen[0]["body"])
    assert rows[0].request[RAG_FIELD] == {"passages": PASSAGES[:1]}
