"""Talking to one upstream: pooled HTTP/1.1 connections through httpx's transport, the headers
that are passed on (and those that are not), and the errors the gateway answers with when an
upstream cannot.

Requests go straight to an httpx transport rather than through ``AsyncClient``: the gateway
needs none of the client's redirects, cookies, auth or URL merging. The transport is
:class:`~calipers.gateway._transport.H11Transport` (see there why not httpcore). Headers stay
``bytes`` from the ASGI scope to the upstream and back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import httpx

from calipers.gateway._transport import H11Transport

__all__ = [
    "RawHeaders",
    "Upstream",
    "error_body",
    "request_headers",
    "response_headers",
]

RawHeaders = list[tuple[bytes, bytes]]

# Hop-by-hop headers (RFC 9110 7.6.1) and those the HTTP layers set themselves.
_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
_NOT_FORWARDED = _HOP | {b"accept-encoding", b"authorization"}
_NOT_RETURNED = _HOP | {b"content-encoding", b"date", b"server"}
_IDENTITY = (b"accept-encoding", b"identity")


def request_headers(headers: Iterable[tuple[bytes, bytes]], api_key: str | None) -> RawHeaders:
    """The client's headers (lower-case names, as ASGI gives them) as sent upstream:
    hop-by-hop and ``x-calipers-*`` headers dropped, an uncompressed answer asked for (so bytes
    pass through and can be logged as they are), and ``Authorization`` replaced when the
    gateway has its own key for this upstream."""
    out = [
        (k, v) for k, v in headers if k not in _NOT_FORWARDED and not k.startswith(b"x-calipers-")
    ]
    out.append(_IDENTITY)
    if api_key:
        out.append((b"authorization", f"Bearer {api_key}".encode("latin-1")))
    else:
        out.extend((k, v) for k, v in headers if k == b"authorization")
    return out


def response_headers(headers: httpx.Headers, pair_id: str) -> RawHeaders:
    """The upstream's response headers as returned to the client, plus the request id."""
    out = [(k.lower(), v) for k, v in headers.raw if k.lower() not in _NOT_RETURNED]
    if pair_id:
        out.append((b"x-calipers-request-id", pair_id.encode("ascii")))
    return out


def error_body(message: str, kind: str) -> bytes:
    """An OpenAI-style error body for failures of the gateway itself (upstream unreachable)."""
    return json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()


class Upstream:
    """One OpenAI-compatible server. Its own connection pool: a slow candidate cannot use up
    the connections the baseline needs."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        max_connections: int,
        api_key: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self._transport = H11Transport(max_connections=max_connections)
        self._timeout = {
            "connect": connect_timeout_s, "read": timeout_s, "write": timeout_s,
            "pool": timeout_s,
        }  # fmt: skip
        self._urls: dict[str, httpx.URL] = {}

    def _url(self, path: str) -> httpx.URL:
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx.URL(f"{self.base_url}/{path}")
        return url

    async def open(
        self, method: str, path: str, headers: RawHeaders, content: bytes
    ) -> httpx.Response:
        """Send the request; the returned response's body is not read yet (``aread`` or
        ``aiter_bytes``, then ``aclose``)."""
        request = httpx.Request(
            method, self._url(path), headers=headers, content=content,
            extensions={"timeout": self._timeout},
        )  # fmt: skip
        response = await self._transport.handle_async_request(request)
        response.request = request
        return response

    async def aclose(self) -> None:
        await self._transport.aclose()
