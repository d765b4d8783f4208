"""``calipers review serve``: the pages raters, adjudicators and owners use, over one campaign.

    app = review_app(store, "support-q4")
    uvicorn.run(app, host="127.0.0.1", port=8766)

A person opens their personal link ``/r/TOKEN`` once: the token is checked against its argon2
hash, a session is created in the store (only its SHA-256 is kept, with a random CSRF token),
an HttpOnly, SameSite=Strict cookie is set and the browser is sent on at once to the page of
the person's role (``/rate``, ``/adjudicate`` or ``/owner``), so the token leaves the address
bar. Sessions live in the store, so they survive a restart of the server.

Every page but the link and the static files needs a session; every POST carries the
session's CSRF token (compared in constant time) and, when the browser sends one, an Origin of
this server. The Host header is checked (:class:`~calipers.web._guard.Guard`), and unless
``allow_remote`` a client whose address is not loopback is refused. Pages carry a strict
Content-Security-Policy (scripts and styles only from this server, no inline script), and model
outputs reach pages only as autoescaped template variables: they are shown as text.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import Depends, FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from calipers._util.clock import utc_now
from calipers.errors import ConfigError
from calipers.review import QuestionSet, check_token, parse_questions, token_key
from calipers.store import RaterRecord, Store
from calipers.web._guard import Guard
from calipers.web._render import environment

__all__ = [
    "REVIEW_CSP",
    "FormData",
    "PageError",
    "ReviewState",
    "Visitor",
    "check_csrf",
    "form_of",
    "render",
    "require",
    "review_app",
    "state",
    "text_of",
]

REVIEW_CSP = (
    "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""Scripts, styles and images only from this server; no inline script, no plugins, no
framing, forms only back to this server."""

_HEADERS = {
    "content-security-policy": REVIEW_CSP,
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
}
ROLE_PAGE = {"rater": "/rate", "adjudicator": "/adjudicate", "owner": "/owner"}
MAX_FORM = 256 * 1024
_STATIC = {"review.js": "text/javascript; charset=utf-8", "review.css": "text/css; charset=utf-8"}


class PageError(Exception):
    """A refusal shown as a page: ``status``, a title and one sentence (no internal detail)."""

    def __init__(self, status: int, title: str, text: str, *, link: str | None = None) -> None:
        super().__init__(title)
        self.status, self.title, self.text, self.link = status, title, text, link


class Progress:
    """A rater's progress for the page, without reading every judgment per request: how many
    items each rater answered (read from the store once, then counted up on each answer this
    server stores), and the rater's total (answered + open + still to come), kept for
    ``ttl_s`` as it only shrinks when other raters fill items."""

    def __init__(self, store: Store, campaign: str, *, ttl_s: float = 10.0) -> None:
        self._store, self._campaign, self._ttl = store, campaign, ttl_s
        self._counts: dict[str, int] | None = None
        self._totals: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def done(self, rater: str) -> int:
        with self._lock:
            if self._counts is None:
                self._counts = Counter(j.rater for j in self._store.get_judgments(self._campaign))
            return self._counts.get(rater, 0)

    def answered(self, rater: str) -> None:
        with self._lock:
            if self._counts is not None:
                self._counts[rater] = self._counts.get(rater, 0) + 1

    def total(
        self, rater: str, done: int, open_now: int, waiting: Callable[[], int], *, fresh: bool
    ) -> int:
        """``done + open_now + waiting()``, from a recent call unless ``fresh``."""
        now = time.monotonic()
        with self._lock:
            hit = self._totals.get(rater)
        if not fresh and hit is not None and now - hit[1] < self._ttl:
            return max(hit[0], done + open_now)
        total = done + open_now + waiting()
        with self._lock:
            self._totals[rater] = (total, now)
        return total


@dataclass(frozen=True)
class ReviewState:
    store: Store
    campaign: str
    campaign_id: int
    kind: str
    questions: QuestionSet
    settings: dict[str, Any]
    lease_s: float
    session_s: float
    secure: bool
    allow_remote: bool
    progress: Progress


@dataclass(frozen=True)
class Visitor:
    """The person behind a request's session."""

    rater: RaterRecord
    csrf: str
    session_hash: str


def state(request: Request) -> ReviewState:
    st: ReviewState = request.app.state.review
    return st


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def cookie_name(request: Request) -> str:
    """One cookie per port (cookies are not kept apart by port)."""
    return f"calipers_review_{request.url.port or 0}"


def visitor(request: Request) -> Visitor | None:
    """The session's person, or None (no cookie, unknown or expired session, other campaign)."""
    sid = request.cookies.get(cookie_name(request))
    if not sid:
        return None
    st = state(request)
    h = _digest(sid)
    session = st.store.review_session(h, now=utc_now())
    if session is None:
        return None
    rater = st.store.rater_by_id(session.rater_id)
    if rater is None or rater.campaign_id != st.campaign_id:
        return None
    return Visitor(rater, session.csrf_token, h)


def require(request: Request, *roles: str) -> Visitor:
    """The request's person, who must hold one of ``roles``; else a 401 or 403 page."""
    v = visitor(request)
    if v is None:
        raise PageError(
            401,
            "Please open your personal link",
            "This page needs the personal link the campaign's owner sent you. "
            "Open it again in this browser.",
        )
    if v.rater.role not in roles:
        raise PageError(
            403,
            "Not your page",
            f"Your role in this campaign is {v.rater.role}.",
            link=ROLE_PAGE[v.rater.role],
        )
    return v


async def form_of(request: Request) -> dict[str, list[str]]:
    """The POSTed form (``application/x-www-form-urlencoded``, at most 256 KiB)."""
    body = await request.body()
    if len(body) > MAX_FORM:
        raise PageError(413, "Too long", "The answer is too long.")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if body and kind != "application/x-www-form-urlencoded":
        raise PageError(415, "Unsupported form", "Send the page's own form.")
    return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)


FormData = Annotated[dict[str, list[str]], Depends(form_of)]
"""A POST endpoint's parameter: the form, read before the (sync) endpoint runs."""


def check_csrf(request: Request, v: Visitor, form: dict[str, list[str]]) -> None:
    """The form's ``csrf`` field must be the session's token (constant-time compare), and the
    browser's Sec-Fetch-Site and Origin headers, when sent, must say it came from this server
    (a page with no-referrer sends ``Origin: null``, which only the token then decides)."""
    given = (form.get("csrf") or [""])[-1]
    if not hmac.compare_digest(given.encode(), v.csrf.encode()):
        raise PageError(403, "Form refused", "The form is stale or not from this site. Reload.")
    site = request.headers.get("sec-fetch-site")  # browsers send it; "null" Origins too
    origin = request.headers.get("origin")
    cross = site is not None and site not in ("same-origin", "none")
    if origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host"):
        cross = True
    if cross:
        raise PageError(403, "Form refused", "The form was sent from another site.")


def text_of(value: Any) -> str:
    """A payload value as the text shown (JSON for anything but a string)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def render(
    request: Request, name: str, status: int = 200, *, v: Visitor | None = None, **ctx: Any
) -> HTMLResponse:
    st = state(request)
    html = (
        environment()
        .get_template(f"review/{name}")
        .render(campaign=st.campaign, who=v.rater if v else None, csrf=v.csrf if v else "", **ctx)
    )
    return HTMLResponse(html, status_code=status, headers={"cache-control": "no-store"})


async def _page_error(request: Request, e: Exception) -> Response:
    assert isinstance(e, PageError)
    return render(request, "message.html.j2", e.status, title=e.title, text=e.text, link=e.link)


def _loopback_client(request: Request) -> bool:
    host = request.client.host if request.client else None
    try:
        return host is None or ipaddress.ip_address(host).is_loopback
    except ValueError:  # not an address (a test client, a unix socket)
        return True


async def _guard_and_headers(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    if not state(request).allow_remote and not _loopback_client(request):
        response: Response = Response("Loopback only (serve with --allow-remote).", 403)
    else:
        response = await call_next(request)
    for k, val in _HEADERS.items():
        response.headers.setdefault(k, val)
    return response


def _login(request: Request, token: str) -> Response:
    st = state(request)
    key = token_key(token)
    rater = st.store.rater_by_token_key(key) if key else None
    if (
        rater is None
        or rater.id is None
        or rater.campaign_id != st.campaign_id
        or not check_token(token, rater.token_hash)
    ):
        raise PageError(
            403, "This link is not valid", "Ask the campaign's owner for a new personal link."
        )
    session_id, csrf, now = secrets.token_urlsafe(32), secrets.token_urlsafe(32), utc_now()
    expires = now + timedelta(seconds=st.session_s)
    st.store.create_review_session(rater.id, _digest(session_id), csrf, now=now, expires_at=expires)
    response = RedirectResponse(ROLE_PAGE[rater.role], 303, headers={"cache-control": "no-store"})
    response.set_cookie(
        cookie_name(request),
        session_id,
        max_age=int(st.session_s),
        path="/",
        httponly=True,
        samesite="strict",
        secure=st.secure or request.url.scheme == "https",
    )
    return response


def _home(request: Request) -> Response:
    v = visitor(request)
    if v is None:
        raise PageError(
            401,
            "Please open your personal link",
            "Reviewers use the personal link the campaign's owner sent them.",
        )
    return RedirectResponse(ROLE_PAGE[v.rater.role], 303)


async def _logout(request: Request) -> Response:
    form = await form_of(request)
    v = require(request, "rater", "adjudicator", "owner")
    check_csrf(request, v, form)
    state(request).store.end_review_session(v.session_hash)
    response = render(request, "message.html.j2", title="Signed out", text="You can close this.")
    response.delete_cookie(cookie_name(request), path="/")
    return response


def _static(name: str) -> Callable[[], Response]:
    def serve() -> Response:
        body = resources.files("calipers.web").joinpath("templates", "review", name).read_bytes()
        return Response(body, media_type=_STATIC[name], headers={"cache-control": "no-cache"})

    return serve


def review_app(
    store: Store,
    campaign: str,
    *,
    allow_remote: bool = False,
    secure_cookies: bool = False,
    lease_s: float = 900.0,
    session_s: float = 30 * 86400.0,
    allowed_hosts: Iterable[str] = (),
) -> FastAPI:
    """The review pages of ``campaign`` over ``store`` (left open).

    ``lease_s``: how long an item stays leased to a rater without an answer. ``allow_remote``:
    answer clients that are not on this machine (every page but the personal link needs a
    session anyway). ``secure_cookies``: mark the session cookie Secure (served over TLS, e.g.
    behind a proxy). ``allowed_hosts``: Host names answered besides the loopback ones."""
    from calipers.web._review_admin import router as admin_router
    from calipers.web._review_rate import router as rate_router

    camp = store.get_campaign(campaign)
    if camp.id is None or lease_s <= 0 or session_s <= 0:
        raise ConfigError("A lease and a session must last longer than 0 seconds.")
    st = ReviewState(
        store=store,
        campaign=camp.name,
        campaign_id=camp.id,
        kind=camp.kind,
        questions=parse_questions({"questions": camp.questions}, source=f"campaign {campaign}"),
        settings=dict(camp.settings),
        lease_s=lease_s,
        session_s=session_s,
        secure=secure_cookies,
        allow_remote=allow_remote,
        progress=Progress(store, camp.name),
    )
    app = FastAPI(title="calipers review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.review = st
    app.add_exception_handler(PageError, _page_error)
    app.middleware("http")(_guard_and_headers)
    app.add_middleware(Guard, token=None, hosts=allowed_hosts)  # outermost: the Host check
    app.add_api_route("/", _home, methods=["GET"])
    app.add_api_route("/favicon.ico", lambda: Response(status_code=204), methods=["GET"])
    app.add_api_route("/r/{token}", _login, methods=["GET"])
    app.add_api_route("/logout", _logout, methods=["POST"])
    for name in _STATIC:
        app.add_api_route(f"/static/{name}", _static(name), methods=["GET"])
    app.include_router(rate_router)
    app.include_router(admin_router)
    return app
