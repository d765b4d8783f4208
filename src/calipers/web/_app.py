"""The dashboard app: server-rendered pages over a store, their JSON twins and ``/healthz``.

    app = create_app("sqlite:///.calipers/calipers.db")
    uvicorn.run(app, host="127.0.0.1", port=8765)

Pages carry no script at all, and a Content-Security-Policy that forbids scripts, so even
a model output that slipped past escaping could not run. Requests whose Host header is not one
of the dashboard's names are refused, and with a ``token`` every request must carry it
(:mod:`calipers.web._guard`).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from calipers.errors import CalipersError, ConfigError, RunNotFoundError, StoreError
from calipers.store import Store
from calipers.web._api import health
from calipers.web._api import router as api_router
from calipers.web._guard import Guard
from calipers.web._pages import router as page_router
from calipers.web._pages import store_of
from calipers.web._render import json_response, page
from calipers.web._sections import Section, SectionBuilder, resolve_sections
from calipers.web._trend_page import router as trend_router

__all__ = ["CSP", "MIN_TOKEN", "create_app"]

MIN_TOKEN = 16

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""No scripts, no remote anything: styles are inline, images only data: URIs."""

_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class _StoreRef:
    """The app's store: the one given (left open), or opened from a URL on first use and
    closed when the app shuts down."""

    def __init__(self, store: Store | str | None) -> None:
        self._given = store if isinstance(store, Store) else None
        self._url = None if isinstance(store, Store) else store
        self._opened: Store | None = None
        self._lock = threading.Lock()

    def get(self) -> Store:
        if self._given is not None:
            return self._given
        with self._lock:
            if self._opened is None:
                self._opened = Store.open(self._url)
            return self._opened

    @property
    def url(self) -> str:
        return self.get().url

    def close(self) -> None:
        with self._lock:
            if self._opened is not None:
                self._opened.close()
                self._opened = None


def _status(e: CalipersError) -> int:
    if isinstance(e, RunNotFoundError):
        return 404
    if isinstance(e, StoreError):
        return 503
    return 400 if isinstance(e, ConfigError) else 500


async def _calipers_error(request: Request, e: Exception) -> Response:
    assert isinstance(e, CalipersError)
    if request.url.path.startswith("/api/") or request.url.path == "/healthz":
        return json_response({"error": e.message, "hint": e.hint}, _status(e))
    return page(request, "error.html.j2", _status(e), message=e.message, hint=e.hint)


async def _headers(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    response = await call_next(request)
    for k, v in _HEADERS.items():
        response.headers.setdefault(k, v)
    return response


def _add_section(app: FastAPI, section: Section) -> None:
    build = section.build
    assert build is not None  # resolve_sections gives every section a builder

    def html(request: Request) -> Response:
        built = build(store_of(request), request.query_params)
        return page(request, built.template, built.status, section=section, **built.context)

    def api(request: Request) -> Response:
        built = build(store_of(request), request.query_params)
        return json_response(built.data, built.api_status or built.status)

    app.add_api_route(f"/{section.key}", html, methods=["GET"], include_in_schema=False)
    app.add_api_route(f"/api/{section.key}", api, methods=["GET"])


def create_app(
    store: Store | str | None = None,
    *,
    sections: Mapping[str, SectionBuilder] | None = None,
    token: str | None = None,
    allowed_hosts: Iterable[str] = (),
) -> FastAPI:
    """The dashboard over ``store``: a :class:`Store` (left open), or a URL (``None``: the
    default SQLite file) opened on first use and closed on shutdown. ``sections`` replaces the
    page builders of the A/B and Monitor sections (see :mod:`calipers.web._sections`).

    Only requests whose Host header names ``127.0.0.1``, ``localhost``, ``[::1]`` or one of
    ``allowed_hosts`` (``"*"``: any) are answered; with a ``token``, every request must carry
    it (``?token=`` once, then a cookie; or ``Authorization: Bearer``). ``calipers ui`` makes
    a token unless told otherwise."""
    if token is not None and (len(token) < MIN_TOKEN or token != token.strip()):
        raise ConfigError(
            f"The dashboard token is too short ({len(token)} characters) or "
            "has spaces at its ends: a short token can be guessed.",
            hint=f"Use at least {MIN_TOKEN} characters (calipers ui makes one when none is given).",
        )
    ref = _StoreRef(store)
    resolved = resolve_sections(sections)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            ref.close()

    app = FastAPI(
        title="calipers ui", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.store = ref
    app.state.sections = resolved
    app.add_exception_handler(CalipersError, _calipers_error)
    app.middleware("http")(_headers)
    app.add_middleware(Guard, token=token, hosts=allowed_hosts)  # outermost: runs first
    app.include_router(health)
    app.include_router(api_router)
    app.include_router(page_router)
    app.include_router(trend_router)
    for section in resolved:
        _add_section(app, section)
    return app
