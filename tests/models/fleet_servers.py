"""Fake OpenAI-compatible servers for fleet tests and the fleet benchmark: FastAPI under
uvicorn on a free loopback port (``tests._servers.ServerThread``). Each answers after
``delay_s``, echoing the last user message (or the prompt), and counts what it did; one with a
``capacity`` answers 429 to a request that arrives while ``capacity`` others are in flight."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests._servers import ServerThread

__all__ = ["FakeServer"]


@dataclass
class FakeServer:
    model_id: str = "fleet-model"
    delay_s: float = 0.02
    capacity: int | None = None
    refuse_first: int = 0  # answer this many requests 429 first
    bad_request: bool = False  # answer every request 400 (the request is wrong, not the server)
    meta: dict[str, Any] | None = None
    in_flight: int = 0
    peak: int = 0  # most requests being answered at once (429s not counted)
    served: int = 0
    throttled: int = 0
    prompts: list[str] = field(default_factory=list)
    thread: ServerThread | None = None

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        async def models() -> dict[str, Any]:
            entry: dict[str, Any] = {"id": self.model_id, "object": "model"}
            if self.meta is not None:
                entry["meta"] = self.meta
            return {"object": "list", "data": [entry]}

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            return await self._answer(str(body["messages"][-1]["content"]), chat=True)

        @app.post("/v1/completions")
        async def completions(request: Request) -> Any:
            body = await request.json()
            return await self._answer(str(body["prompt"]), chat=False)

        return app

    async def _answer(self, text: str, *, chat: bool) -> Any:
        if self.bad_request:
            return JSONResponse({"error": {"message": "max_tokens is too large"}}, status_code=400)
        full = self.capacity is not None and self.in_flight >= self.capacity
        if full or self.throttled < self.refuse_first:
            self.throttled += 1
            return JSONResponse({"error": {"message": "too many requests"}}, status_code=429)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        self.served += 1
        self.prompts.append(text)
        choice = {"message": {"content": text}} if chat else {"text": text}
        return {
            "choices": [{**choice, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 2},
        }

    def start(self, port: int | None = None) -> FakeServer:
        """Serve on a free port, or on ``port`` (a server that comes back)."""
        thread = ServerThread(self.app(), graceful_s=1)
        if port is not None:
            thread.port = thread.server.config.port = port
        self.thread = thread.start()
        return self

    @property
    def url(self) -> str:
        assert self.thread is not None
        return f"{self.thread.url}/v1"

    def stop(self) -> None:
        if self.thread is not None and self.thread.thread.is_alive():
            self.thread.stop()

    def kill(self) -> None:
        """Stop at once: requests in flight lose their connection, new ones are refused."""
        if self.thread is not None and self.thread.thread.is_alive():
            self.thread.server.force_exit = True
            self.thread.stop()
