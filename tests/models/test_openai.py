"""The openai provider: happy paths against a real llama_cpp.server; failure paths (retries,
4xx, concurrency, keys) against a tiny scripted stdlib HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from calipers.errors import ModelCallError, ModelLoadError
from calipers.models import CallStats, ModelOptions, resolve_model, track_calls
from calipers.models._openai import OpenAIModel, is_loopback
from calipers.types import (
    ChatMessage,
    GenerateParams,
    ModelRequest,
    ModelResponse,
)
from tests.models.conftest import free_port

SECRET = "sk-test-0123456789-do-not-log"
OK_BODY = {
    "model": "stub-model",
    "choices": [{"text": "ok", "message": {"content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def chat(text: str, **params: Any) -> ModelRequest:
    return ModelRequest(
        messages=(ChatMessage(role="user", content=text),), params=GenerateParams(**params)
    )


# -- against the real llama_cpp.server ----------------------------------------------------------


@pytest.fixture
def server_model(llama_server: str) -> OpenAIModel:
    return OpenAIModel("smollm2", ModelOptions(base_url=llama_server))


@pytest.mark.slow
def test_chat_and_completion(server_model: OpenAIModel) -> None:
    async def both() -> tuple[ModelResponse, ModelResponse]:
        try:
            a = await server_model.generate(chat("Say hello.", max_tokens=8))
            b = await server_model.generate(
                ModelRequest(prompt="The capital of France is", params=GenerateParams(max_tokens=5))
            )
            return a, b
        finally:
            await server_model.aclose()

    a, b = run(both())
    for r in (a, b):
        assert r.text
        assert r.input_tokens and r.input_tokens > 0
        assert r.output_tokens and 0 < r.output_tokens <= 8
        assert r.latency_s is not None and r.latency_s > 0
        assert r.finish_reason in ("stop", "length")
    assert a.input_tokens and a.input_tokens > 20  # chat template with its system prompt
    assert b.input_tokens == 5


@pytest.mark.slow
def test_greedy_generation_is_deterministic(server_model: OpenAIModel) -> None:
    """Identical requests are not sent back to back: llama_cpp.server then replays the last
    prompt token alone, which changes the logits (see docs/models.md)."""
    a = chat("Name a fruit.", max_tokens=8)
    b = chat("Name a planet.", max_tokens=4)
    texts = [run(server_model.generate(r)).text for r in (a, b, a, b, a)]
    assert texts[0] == texts[2] == texts[4]
    assert texts[1] == texts[3]


@pytest.mark.slow
def test_identity_asks_the_server(server_model: OpenAIModel, llama_server: str) -> None:
    ident = server_model.identity()
    assert ident.provider == "openai"
    assert ident.name == "smollm2"
    assert ident.base_url == llama_server
    assert ident.api_model and ident.api_model.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert server_model.identity() is ident


@pytest.mark.slow
def test_server_echo_logprobs_are_shifted(llama_server: str, reference_llama: Any) -> None:
    """What calipers' log-likelihood check catches (test_openai_loglik_e2e): llama_cpp.server's
    echoed log-probability of prompt token i is log_softmax(logits[i])[token i] -- the row
    that predicts token i + 1 -- and not log_softmax(logits[i - 1])[token i]. If this fails,
    llama-cpp-python changed: the server may now pass the check."""
    import numpy as np

    prompt = "Zebra test. Question: What is the capital of France?\nAnswer: Paris"
    body = httpx.post(
        f"{llama_server}/completions",
        json={"prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0},
        timeout=60,
    ).json()
    echoed = body["choices"][0]["logprobs"]["token_logprobs"]
    toks = reference_llama.tokenize(prompt.encode(), add_bos=True, special=True)
    assert len(echoed) == len(toks)  # the generated token is not echoed
    reference_llama.reset()
    reference_llama.eval(toks)
    logits = np.asarray(reference_llama.scores[: len(toks)], dtype=np.float64)
    lsm = logits - logits.max(1, keepdims=True)
    lsm -= np.log(np.exp(lsm).sum(1, keepdims=True))
    same_row = [lsm[i, toks[i]] for i in range(1, len(toks))]
    correct = [lsm[i - 1, toks[i]] for i in range(1, len(toks))]
    assert echoed[1:] == pytest.approx(same_row, abs=1e-3)
    assert max(abs(e - c) for e, c in zip(echoed[1:], correct, strict=True)) > 1.0


# -- against a scripted local server ----------------------------------------------------------


@dataclass
class Stub:
    """Answers each request with the next (status, headers, body) of ``script`` (the last one
    repeats), after ``delay_s``; records arrival times, paths, headers and bodies."""

    script: list[tuple[int, dict[str, str], Any]]
    delay_s: float = 0.0
    arrivals: list[float] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""


@pytest.fixture
def stub() -> Iterator[Stub]:
    state = Stub(script=[(200, {}, OK_BODY)])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            with state.lock:
                state.arrivals.append(time.monotonic())
                state.requests.append((self.path, dict(self.headers), body))
                n = len(state.arrivals) - 1
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            time.sleep(state.delay_s)
            status, headers, payload = state.script[min(n, len(state.script) - 1)]
            data = json.dumps(payload).encode()
            self.send_response(status)
            for k, v in {"content-type": "application/json", **headers}.items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with state.lock:
                state.in_flight -= 1

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def stub_model(stub: Stub, **options: Any) -> OpenAIModel:
    return OpenAIModel("stub", ModelOptions(base_url=stub.url, **options), backoff_base_s=0.05)


def counted(call: Any) -> tuple[Any, CallStats]:
    """Run ``call`` under a call tracker (as the runner does per sample)."""
    with track_calls() as calls:
        result = run(call)
    return result, calls


def error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def test_retries_with_backoff_then_succeeds(stub: Stub) -> None:
    stub.script = [(503, {}, error("busy")), (503, {}, error("busy")), (200, {}, OK_BODY)]
    model = stub_model(stub, max_retries=4)
    response, calls = counted(model.generate(chat("hi")))
    assert response.text == "ok"
    assert (calls.attempts, calls.retries, calls.rate_limited) == (3, 2, 0)
    assert len(stub.arrivals) == 3
    gaps = [b - a for a, b in zip(stub.arrivals, stub.arrivals[1:], strict=False)]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1  # 0.05 * 2**attempt, plus up to 25% jitter
    assert gaps[1] < 1.0


def test_429_honours_retry_after(stub: Stub) -> None:
    stub.script = [(429, {"Retry-After": "0.4"}, error("slow down")), (200, {}, OK_BODY)]
    model = stub_model(stub)
    response, calls = counted(model.generate(ModelRequest(prompt="x")))
    assert response.text == "ok"
    assert (calls.retries, calls.rate_limited) == (1, 1) and calls.wait_s >= 0.4
    assert stub.arrivals[1] - stub.arrivals[0] >= 0.4
    assert stub.requests[0][0] == "/v1/completions"


def test_gives_up_after_max_retries(stub: Stub) -> None:
    stub.script = [(500, {}, error("boom"))]
    model = stub_model(stub, max_retries=2)
    with pytest.raises(ModelCallError, match=r"failed after 3 attempts: HTTP 500: boom"):
        run(model.generate(chat("hi")))
    assert len(stub.arrivals) == 3


def test_400_is_not_retried(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIPERS_TEST_KEY", SECRET)
    stub.script = [(400, {}, error("max_tokens is too large"))]
    model = stub_model(stub, api_key_env="CALIPERS_TEST_KEY")
    with (
        track_calls() as calls,
        pytest.raises(ModelCallError, match=r"HTTP 400.*max_tokens is too large") as err,
    ):
        run(model.generate(chat("hi")))
    assert len(stub.arrivals) == 1 and (calls.attempts, calls.retries) == (1, 0)
    assert SECRET not in str(err.value) and SECRET not in repr(err.value)


def test_concurrency_limit(stub: Stub) -> None:
    stub.delay_s = 0.15
    model = stub_model(stub, concurrency=2)

    async def many() -> list[ModelResponse]:
        try:
            return await asyncio.gather(*(model.generate(chat(f"q{i}")) for i in range(6)))
        finally:
            await model.aclose()

    assert [r.text for r in run(many())] == ["ok"] * 6
    assert stub.max_in_flight == 2


def test_api_key_sent_but_never_recorded(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIPERS_TEST_KEY", SECRET)
    model = stub_model(stub, api_key_env="CALIPERS_TEST_KEY")
    run(model.generate(chat("hi")))
    headers = {k.lower(): v for k, v in stub.requests[0][1].items()}
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert stub.requests[0][2]["model"] == "stub"
    ident = model.identity()  # the stub has no GET /models (501): api_model stays unknown
    assert ident.api_model is None
    assert SECRET not in ident.model_dump_json()
    assert SECRET not in repr(model.__dict__)


def test_missing_key_for_a_remote_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CALIPERS_MISSING_KEY", raising=False)
    model = resolve_model(
        "openai:gpt-4o-mini",
        ModelOptions(base_url="https://api.example.invalid/v1", api_key_env="CALIPERS_MISSING_KEY"),
    )
    with pytest.raises(ModelLoadError, match="CALIPERS_MISSING_KEY is not set"):
        run(model.generate(chat("hi")))


def test_unreachable_server_fails_fast() -> None:
    port = free_port()  # nothing listens there
    model = OpenAIModel("m", ModelOptions(base_url=f"http://127.0.0.1:{port}/v1", max_retries=4))
    start = time.monotonic()
    with pytest.raises(ModelLoadError, match=r"Cannot reach http://127\.0\.0\.1:\d+/v1 .*Is the"):
        run(model.generate(chat("hi")))
    with pytest.raises(ModelLoadError, match="Is the server running"):
        model.identity()
    assert time.monotonic() - start < 3.0


def test_loopback_detection() -> None:
    assert is_loopback("http://127.0.0.1:8000/v1")
    assert is_loopback("http://localhost:11434/v1")
    assert is_loopback("http://[::1]:8000/v1")
    assert not is_loopback("https://api.openai.com/v1")
    assert not is_loopback("http://10.0.0.5:8000/v1")
