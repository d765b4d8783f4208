"""Gateway test rig: real HTTP on 127.0.0.1. Fake upstreams are tiny Starlette apps served by
uvicorn in a thread; the gateway is the real app, also under uvicorn in a thread, logging to a
SQLite store in the test's folder."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from calipers.gateway import GatewayConfig, create_app
from calipers.store import Store, TrafficRecord
from tests._servers import ServerThread, free_port

# Fake upstreams: quick to stop, and quiet about requests cut off when they are stopped.
UPSTREAM: dict[str, Any] = {"graceful_s": 1, "lifespan": "off", "log_level": "critical"}


def sse_bytes(name: str, text: str) -> bytes:
    """The exact stream the fake upstream sends: one event per word, odd spacing and a comment
    line included, so a proxy that re-frames events would be caught."""
    events = [b": keep-alive\n\n"]
    words = text.split(" ")
    for i, word in enumerate(words):
        piece = word if i == 0 else " " + word
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": name,
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
        }
        events.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    last = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": name,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    events.append(b"data:" + json.dumps(last).encode() + b"\r\n\r\n")
    events.append(b"data: [DONE]\n\n")
    return b"".join(events)


@dataclass
class FakeUpstream:
    """An OpenAI-compatible stub. Its answer names it (``"<name>: <prompt>"``), so a test can
    tell which arm served. ``model`` values ``status-NNN`` make it answer with that status;
    ``behavior`` ``"garbage"`` answers 200 with a body that is not JSON, ``"stall"`` sends a
    stream's headers at once and then nothing for ``delay_s`` (a hung stream); ``delay_s``
    slows every answer (a stream's first chunk only, when stalling)."""

    name: str
    behavior: str = "ok"
    delay_s: float = 0.0
    seen: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/completions", self.completions, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ])  # fmt: skip

    def prompt_of(self, body: dict[str, Any]) -> str:
        if "messages" in body:
            return str(body["messages"][-1]["content"])
        return str(body.get("prompt", ""))

    async def _common(self, request: Request) -> tuple[dict[str, Any], Response | None]:
        try:
            body = await request.json()
        except ValueError:
            return {}, JSONResponse({"error": {"message": "bad JSON", "type": "test"}}, 400)
        self.seen.append({"headers": dict(request.headers), "body": body})
        if self.delay_s and not (self.behavior == "stall" and body.get("stream")):
            await asyncio.sleep(self.delay_s)
        model = str(body.get("model", ""))
        if model.startswith("status-"):
            status = int(model.removeprefix("status-"))
            err = {"error": {"message": f"{self.name} says {status}", "type": "test"}}
            return body, JSONResponse(err, status, headers={"retry-after": "7"})
        if self.behavior == "garbage":
            return body, Response(b"<html>definitely not json", 200, media_type="text/html")
        return body, None

    async def chat(self, request: Request) -> Response:
        body, early = await self._common(request)
        if early is not None:
            return early
        text = f"{self.name}: {self.prompt_of(body)}"
        if body.get("stream"):
            return StreamingResponse(
                self._stream(sse_bytes(self.name, text)), media_type="text/event-stream"
            )
        usage = {"prompt_tokens": len(self.prompt_of(body).split()), "completion_tokens": 3}
        return JSONResponse(
            {"id": "x", "object": "chat.completion", "model": self.name, "usage": usage,
             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                          "finish_reason": "stop"}]},
            headers={"x-upstream": self.name},
        )  # fmt: skip

    async def _stream(self, data: bytes) -> AsyncIterator[bytes]:
        if self.behavior == "stall":
            await asyncio.sleep(self.delay_s)
        yield data

    async def completions(self, request: Request) -> Response:
        _, early = await self._common(request)
        if early is not None:
            return early
        return JSONResponse(
            {
                "id": "y",
                "object": "text_completion",
                "model": self.name,
                "choices": [{"text": f" {self.name}", "finish_reason": "length"}],
                "usage": {"prompt_tokens": 2, "completion_tokens": 1},
            }
        )

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.name, "object": "model"}]})


@dataclass
class Rig:
    """Two fake upstreams and a gateway between them; ``stop()`` shuts the gateway down
    gracefully (flushing its log) and returns the stored traffic."""

    baseline: FakeUpstream
    candidate: FakeUpstream
    gateway: ServerThread
    store_path: Path
    servers: list[ServerThread]

    @property
    def url(self) -> str:
        return f"{self.gateway.url}/v1"

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = httpx.get(f"{self.gateway.url}/calipers/stats").json()
        return stats

    def settled_stats(self, timeout_s: float = 10.0) -> dict[str, Any]:
        """The stats once every accepted shadow copy has its record (or ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            stats = self.stats()
            shadow = stats["shadow"]
            if shadow is None or shadow["finished"] == shadow["mirrored"]:
                return stats
            if time.monotonic() > deadline:
                return stats
            time.sleep(0.05)

    def stop(self) -> list[TrafficRecord]:
        self.gateway.stop()
        with Store.open(str(self.store_path)) as store:
            return store.get_traffic()


@pytest.fixture
def rig_factory(tmp_path: Path) -> Iterator[Any]:
    started: list[ServerThread] = []

    def make(*, candidate_down: bool = False, **settings: Any) -> Rig:
        base, cand = FakeUpstream("baseline"), FakeUpstream("candidate")
        servers = [ServerThread(base.app(), **UPSTREAM).start()]
        if candidate_down:
            cand_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
        else:
            servers.append(ServerThread(cand.app(), **UPSTREAM).start())
            cand_url = f"{servers[1].url}/v1"
        config = GatewayConfig(
            baseline_url=f"{servers[0].url}/v1", candidate_url=cand_url,
            **({"batch_window_ms": 20.0, "seed": 0} | settings),
        )  # fmt: skip
        store_path = tmp_path / f"gateway-{len(started)}.db"
        gateway = ServerThread(create_app(config, str(store_path))).start()
        started.extend([*servers, gateway])
        return Rig(base, cand, gateway, store_path, servers)

    yield make
    for server in reversed(started):
        if server.thread.is_alive():
            server.server.force_exit = True
            server.stop()


def chat_body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


@dataclass
class Answer:
    status_code: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


class LightClient:
    """Keep-alive HTTP/1.1 POSTs over asyncio streams: a few times cheaper than httpx, so a
    thousand requests through the in-process rig take seconds, not a minute. Reads
    ``content-length`` answers only (the gateway's non-streamed answers)."""

    def __init__(self, url: str) -> None:
        parts = httpx.URL(url)
        self.host, self.port, self.prefix = parts.host, parts.port, parts.path.rstrip("/")
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        data = json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head = (
            f"POST {self.prefix}{path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(data)}\r\n{extra}\r\n"
        )
        conn = self.idle.pop() if self.idle else await asyncio.open_connection(self.host, self.port)
        reader, writer = conn
        writer.write(head.encode() + data)
        status = int((await reader.readuntil(b"\r\n")).split()[1])
        got: dict[str, str] = {}
        while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.decode("latin-1").partition(":")
            got[name.strip().lower()] = value.strip()
        content = await reader.readexactly(int(got.get("content-length", "0")))
        self.idle.append(conn)
        return Answer(status, got, content)

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


async def _many(
    url: str, bodies: list[dict[str, Any]], headers: list[dict[str, str]], concurrency: int
) -> list[tuple[Answer, float]]:
    sem = asyncio.Semaphore(concurrency)
    client = LightClient(url)

    async def one(body: dict[str, Any], hdrs: dict[str, str]) -> tuple[Answer, float]:
        async with sem:
            t = time.perf_counter()
            r = await client.post("/chat/completions", body, hdrs)
            return r, time.perf_counter() - t

    try:
        return await asyncio.gather(*(one(b, h) for b, h in zip(bodies, headers, strict=True)))
    finally:
        client.close()


def send_many(
    url: str,
    bodies: list[dict[str, Any]],
    headers: list[dict[str, str]] | None = None,
    *,
    concurrency: int = 16,
) -> list[tuple[Answer, float]]:
    """POST every body to the chat endpoint, ``concurrency`` at a time; (answer, seconds)."""
    return asyncio.run(_many(url, bodies, headers or [{} for _ in bodies], concurrency))
