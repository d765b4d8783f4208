"""A model server for the canary's end-to-end tests: an OpenAI-compatible
``/v1/chat/completions`` on 127.0.0.1 (uvicorn in a thread) that samples each probe's
completion from model P (tests/canary_fp/_sim.py) and, once switched, from Q; and a
fingerprint of P recorded from the same distribution."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from calipers.types import Fingerprint, FingerprintProbe, FingerprintSettings
from tests._servers import ServerThread
from tests.canary_fp._sim import Model, models
from tests.web.conftest import browser  # noqa: F401  (the headless chromium fixture)

N_PROBES = 10
PER_PROBE = 10


class ModelServer:
    """Answers probe ``i`` (the prompt ``probe i``) with a draw from ``self.model``."""

    def __init__(self, p: Model, q: Model, seed: int = 0) -> None:
        self.p, self.q = p, q
        self.model = p
        self.rng = np.random.default_rng(seed)
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        i = int(body["messages"][-1]["content"].split()[1])
        text = self.model.sample(i, 1, self.rng)[0]
        return JSONResponse(
            {"id": "x", "object": "chat.completion", "model": body.get("model", "m"),
             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                          "finish_reason": "stop"}]}
        )  # fmt: skip

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"])])


def different_model(p: Model) -> Model:
    """Another model altogether: every answer upper-cased (shares no character with P's)."""
    return Model(tuple(tuple(s.upper() for s in ss) for ss in p.strings), p.weights)


@pytest.fixture
def pq() -> tuple[Model, Model]:
    p, _ = models(N_PROBES, 6, np.random.default_rng(42))
    return p, different_model(p)


@pytest.fixture
def reference(pq: tuple[Model, Model], tmp_path: Path) -> Path:
    """A fingerprint of P (system prompt, temperature 0.8), saved as JSON."""
    p, _ = pq
    rng = np.random.default_rng(1)
    probes = tuple(
        FingerprintProbe(id=f"q{i}", prompt=f"probe {i}", sensitive_to=("weights",))
        for i in range(N_PROBES)
    )
    fp = Fingerprint(
        probe_set="test-v1", model="openai:p-model", recorded_at="2026-12-01T00:00:00+00:00",
        settings=FingerprintSettings(temperature=0.8, max_tokens=64, system="Be brief.",
                                     samples_per_probe=PER_PROBE),
        probes=probes,
        completions={f"q{i}": tuple(p.sample(i, PER_PROBE, rng)) for i in range(N_PROBES)},
    )  # fmt: skip
    path = tmp_path / "ref.json"
    fp.save(path)
    return path


@pytest.fixture
def model_server(pq: tuple[Model, Model]) -> Iterator[tuple[ModelServer, ServerThread]]:
    server = ModelServer(*pq)
    thread = ServerThread(server.app(), graceful_s=1).start()
    yield server, thread
    if thread.thread.is_alive():
        thread.stop()
