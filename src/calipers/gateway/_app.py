"""The ASGI app: OpenAI-compatible routes in front of the gateway, plus health and counters.

app = create_app(GatewayConfig(baseline_url=..., candidate_url=..., mode="shadow"))
uvicorn.run(app, host="127.0.0.1", port=8090)
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from calipers.gateway._config import GatewayConfig
from calipers.gateway._core import Gateway
from calipers.gateway._feedback import record_feedback
from calipers.gateway._proxy import error_body, request_headers, response_headers
from calipers.store import Store

__all__ = ["create_app"]

_log = logging.getLogger("calipers.gateway")
_COMPLETIONS = {"/v1/chat/completions": "chat/completions", "/v1/completions": "completions"}


class _CompletionsFirst:
    """Hands the two completion routes to the gateway before FastAPI's router, exception
    middleware and dependency solving see them: the same answer, for a good part less CPU per
    request. Everything else (and these routes' OpenAPI entries) goes through FastAPI."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            endpoint = _COMPLETIONS.get(scope["path"])
            if endpoint is not None:
                gateway: Gateway = scope["app"].state.gateway
                response = await gateway.handle(Request(scope, receive), endpoint)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    config: GatewayConfig,
    store_url: str | None = None,
    *,
    store: Store | None = None,
    baseline_api_key: str | None = None,
    candidate_api_key: str | None = None,
) -> FastAPI:
    """The gateway app. It logs to ``store`` if given (and leaves it open), else opens the
    store at ``store_url`` (``None``: the default SQLite file) on startup and closes it on
    shutdown. API keys given here replace the clients' ``Authorization`` for that upstream;
    they are never logged."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        mine = store is None
        opened = (
            Store.open(store_url, max_connections=config.store_connections)
            if store is None
            else store
        )
        gateway = Gateway(
            config, opened, baseline_api_key=baseline_api_key, candidate_api_key=candidate_api_key
        )
        await gateway.start()
        app.state.gateway = gateway
        try:
            yield
        finally:
            await gateway.stop()
            if mine:
                opened.close()

    app = FastAPI(
        title="calipers gateway", lifespan=lifespan, docs_url=None, redoc_url=None,
        openapi_url=None,
    )  # fmt: skip

    app.add_middleware(_CompletionsFirst)

    def gateway_of(request: Request) -> Gateway:
        found: Gateway = request.app.state.gateway
        return found

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await gateway_of(request).handle(request, "chat/completions")

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await gateway_of(request).handle(request, "completions")

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        return await _models(gateway_of(request), request)

    @app.get("/healthz")
    async def healthz(request: Request) -> Response:
        gateway = gateway_of(request)
        return JSONResponse({"status": "ok", "mode": gateway.config.mode})

    @app.post("/calipers/feedback")
    async def feedback(request: Request) -> Response:
        gateway = gateway_of(request)
        # another replica may still hold the row: its batch window, and time to write it
        wait_s = gateway.config.batch_window_ms / 1000.0 + 2.0
        return await record_feedback(
            request, gateway.store, gateway.arms, gateway.redact, wait_s=wait_s
        )

    @app.get("/calipers/stats")
    async def stats(request: Request) -> Response:
        return JSONResponse(gateway_of(request).stats())

    return app


async def _models(gateway: Gateway, request: Request) -> Response:
    """The baseline's model list, passed through (not logged: it is not traffic)."""
    upstream = gateway.baseline
    headers = request_headers(request.scope["headers"], api_key=upstream.api_key)
    try:
        response = await upstream.open("GET", "models", headers, b"")
        try:
            content = await response.aread()
        finally:
            await response.aclose()
    except httpx.HTTPError as e:  # the URL and error go to the log, not to the client
        _log.warning(
            "GET /v1/models: the baseline upstream %s could not be reached: %s: %s",
            upstream.base_url,
            type(e).__name__,
            e,
        )
        message = "The model server behind this gateway could not be reached."
        return Response(
            error_body(message, "upstream_unavailable"), 502, media_type="application/json"
        )
    answer = Response(content, response.status_code)
    answer.raw_headers.extend(response_headers(response.headers, ""))
    return answer
