"""RAG requests through the gateway: ``calipers_rag`` never reaches an upstream, is kept in
the stored row (redacted like the rest), and a malformed one is refused with a 400."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from calipers.cli import cli
from calipers.gateway import GatewayConfig, create_app
from calipers.monitor import RagProfile
from calipers.monitor._synthetic_rag import RagQuestion, rag_question
from calipers.store import MAX_RAG_CHARS, RAG_FIELD
from tests._servers import ServerThread
from tests.gateway.conftest import UPSTREAM, chat_body, send_many

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


class RagModel:
    """An upstream that answers from the prompt's passages when they hold the answer, and
    otherwise abstains a quarter of the time and makes an answer up the rest (seeded). It
    never sees ``calipers_rag``: it reads the passages in the prompt, as a real model does."""

    def __init__(self, questions: dict[str, RagQuestion]) -> None:
        self.questions = questions
        self.rng = np.random.default_rng(0)
        self.saw_field = 0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.saw_field += RAG_FIELD in body
        prompt = body["messages"][-1]["content"]
        q = self.questions[prompt.split("Question: ")[1].removesuffix("\nAnswer:")]
        if re.search(rf"\b{q.answer}\b", prompt.split("Question: ")[0]):
            text = f"{q.answer}."
        else:
            text = "I don't know." if self.rng.random() < 0.25 else f"{q.made_up}."
        return JSONResponse(
            {"id": "r", "object": "chat.completion", "model": "rag",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                          "finish_reason": "stop"}]}
        )  # fmt: skip


def test_week_one_end_to_end_gateway_store_and_monitor_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RAG traffic through the real gateway for three hours; in the third the retriever's
    recall falls from 0.95 to 0.73. ``calipers monitor --fail-on-drift`` on the store the
    gateway wrote alarms on the unsupported-answer rate in that hour only."""
    t0 = datetime(2025, 6, 2, tzinfo=UTC)
    clock = {"now": t0}
    monkeypatch.setattr("calipers.gateway._core.utc_now", lambda: clock["now"])
    rng = np.random.default_rng(5)
    hours = [RagProfile(), RagProfile(), RagProfile(recall=0.73)]
    batches = [[rag_question(rng, p) for _ in range(150)] for p in hours]
    model = RagModel({q.question: q for batch in batches for q in batch})
    upstream = ServerThread(model.app(), **UPSTREAM).start()
    store = tmp_path / "gateway.db"
    config = GatewayConfig(baseline_url=f"{upstream.url}/v1", mode="off", batch_window_ms=20.0)
    gateway = ServerThread(create_app(config, str(store))).start()
    try:
        for h, batch in enumerate(batches):
            clock["now"] = t0 + timedelta(hours=h, minutes=30)
            answers = send_many(f"{gateway.url}/v1", [{"model": "m", **q.request()} for q in batch])
            assert all(a.status_code == 200 for a, _ in answers)
    finally:
        gateway.stop()
        upstream.stop()
    assert model.saw_field == 0
    span = ["--since", t0.isoformat(), "--until", (t0 + timedelta(hours=3)).isoformat()]
    args = ["--store", f"sqlite:///{store}", "monitor", *span, "--embeddings", "tfidf"]
    result = CliRunner().invoke(cli, [*args, "--fail-on-drift", "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    rates = [w["arms"]["baseline"]["rag_unsupported_rate"] for w in report["windows"]]
    assert [r["n"] for r in rates] == [150, 150, 150]
    assert rates[0]["value"] < 0.1 and rates[1]["value"] < 0.1 and rates[2]["value"] > 0.12
    alarms = {
        (w["start"][11:16], t["feature"])
        for w in report["drift"]
        for t in w["tests"]
        if t["drifted"]
    }
    assert ("02:00", "rag_unsupported_rate") in alarms
    assert not {a for a in alarms if a[0] == "01:00"}, alarms
