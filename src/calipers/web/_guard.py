"""Who may read the dashboard: a Host header allowlist and an access token.

Every stored prompt and response is on these pages, so two checks run before any page:

* **Host header.** A request whose ``Host`` is not one of the dashboard's names gets 421
  (Misdirected Request). A page on another site that makes its name resolve to 127.0.0.1
  (DNS rebinding) sends its own name as ``Host``, so it never reads a page. The names are
  the loopback ones (``127.0.0.1``, ``localhost``, ``[::1]``) and those given; ``*`` accepts
  any (behind a proxy that checks names itself).
* **Token.** With a token set, a request must carry it: ``?token=...`` once (the answer sets
  an HttpOnly, SameSite=Strict cookie and redirects to the same address without the token),
  then the cookie; or ``Authorization: Bearer TOKEN`` (scripts). Otherwise 401. Tokens are
  compared in constant time.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from markupsafe import escape

__all__ = ["LOOPBACK_NAMES", "Guard", "host_name", "new_token"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
OPEN_PATHS = frozenset({"/favicon.ico"})


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


def host_name(value: str) -> str:
    """The name part of a ``Host`` value or a ``--host``: lower case, without the port, the
    brackets of an IPv6 address or a trailing dot."""
    v = value.strip().lower()
    if v.startswith("["):
        v = v[1 : v.find("]")] if "]" in v else v[1:]
    elif v.count(":") == 1:
        v = v.split(":", 1)[0]
    return v.rstrip(".")


class Guard:
    """ASGI middleware: the Host allowlist, then the token (when one is set)."""

    def __init__(self, app: ASGIApp, *, token: str | None, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        names = {host_name(h) for h in hosts}
        self.any_host = "*" in names
        self.hosts = frozenset(names | set(LOOPBACK_NAMES)) - {"*"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # the dashboard has none
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        host = host_name(headers.get("host", ""))
        if not self.any_host and host not in self.hosts:
            names = ", ".join(sorted(self.hosts))
            await _plain(
                send,
                421,
                f"This dashboard does not answer to the Host {host!r}; "
                f"it answers to: {names}. If that name is this server's, start "
                f"`calipers ui` with --allowed-host {host or 'NAME'}.",
            )
            return
        if self.token is None or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given and self._ok(given[-1]):
            if scope["method"] == "GET" and not scope["path"].startswith("/api/"):
                await self._welcome(scope, send, [(k, v) for k, v in query if k != "token"])
                return
            await self.app(scope, receive, send)
            return
        if not given and (self._ok(_bearer(headers)) or self._ok(self._cookie(scope, headers))):
            await self.app(scope, receive, send)
            return
        await _unauthorized(scope, send, bad=bool(given))

    def _ok(self, value: str | None) -> bool:
        assert self.token is not None
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    def _cookie(self, scope: Scope, headers: dict[str, str]) -> str | None:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no cookie
            return None
        morsel = jar.get(cookie_name(scope))
        return None if morsel is None else morsel.value

    async def _welcome(self, scope: Scope, send: Send, rest: list[tuple[str, str]]) -> None:
        """The token was in the address: set the cookie, go to the address without it."""
        assert self.token is not None
        target = scope["path"] + (f"?{urlencode(rest)}" if rest else "")
        cookie = f"{cookie_name(scope)}={self.token}; Path=/; HttpOnly; SameSite=Strict" + (
            "; Secure" if scope.get("scheme") == "https" else ""
        )
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", target.encode("latin-1")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    (b"cache-control", b"no-store"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def cookie_name(scope: Scope) -> str:
    """One cookie per port: cookies are not kept apart by port, two dashboards on one
    machine would overwrite each other's."""
    server = scope.get("server") or ("", 0)
    return f"calipers_ui_{server[1] or 0}"


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


_WHY = (
    "This dashboard needs its access token. Open the address `calipers ui` printed when "
    "it started (it ends in ?token=...); if you just did, reload this page. Scripts send "
    "the header Authorization: Bearer TOKEN."
)


async def _unauthorized(scope: Scope, send: Send, *, bad: bool) -> None:
    first = "The token in the address is wrong. " if bad else ""
    if scope["path"].startswith("/api/") or scope["path"] == "/healthz":
        body = json.dumps({"error": f"{first}Not authorized.", "hint": _WHY}).encode()
        kind = b"application/json"
    else:
        body = (
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>Token needed · calipers</title></head><body><h1>Token needed</h1>"
            f"<p>{escape(first)}{escape(_WHY)}</p></body></html>"
        ).encode()
        kind = b"text/html; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="calipers ui"'),
                (b"cache-control", b"no-store"),
                (b"content-security-policy", b"default-src 'none'"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
