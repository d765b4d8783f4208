"""A lean httpx transport: HTTP/1.1 to one upstream over asyncio streams, parsed by h11, with a
small keep-alive pool.

Why not httpx's default transport (httpcore): measured on the gateway's own path, httpcore's
pool bookkeeping, its per-request socket checks through anyio and its two writes per request
(headers, then body) cost about three times the CPU of everything else a proxied request needs,
and that CPU is user latency. This transport keeps httpx's interface (``httpx.Request`` in,
``httpx.Response`` with a streamed body out, httpx's exceptions) and does only what an
upstream call needs: one write per request, a LIFO list of idle connections, a request on a
stale keep-alive connection retried once on a fresh one (safe: nothing was answered), and
the ``timeout`` extension's connect/read/write/pool limits.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpx

__all__ = ["H11Transport"]

_READ = 65536


class _Conn:
    __slots__ = ("h11", "last_used", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(our_role=h11.CLIENT)
        self.last_used = time.monotonic()

    def close(self) -> None:
        self.writer.close()


class _Stale(Exception):
    """A reused connection was closed by the server before it answered anything."""


class H11Transport(httpx.AsyncBaseTransport):
    def __init__(self, *, max_connections: int, keepalive_expiry_s: float = 4.0) -> None:
        # 4 s: under the 5 s after which uvicorn and most servers drop an idle connection.
        self._idle: list[_Conn] = []
        self._slots = asyncio.Semaphore(max_connections)
        self._max_idle = max_connections
        self._expiry = keepalive_expiry_s
        self._tls_context: ssl.SSLContext | None = None

    @property
    def _tls(self) -> ssl.SSLContext:
        if self._tls_context is None:
            self._tls_context = ssl.create_default_context()
        return self._tls_context

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout: dict[str, float | None] = request.extensions.get("timeout", {})
        try:
            async with asyncio.timeout(timeout.get("pool")):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout(
                "no free upstream connection in time", request=request
            ) from None
        try:
            return await self._send(request, timeout)
        except BaseException:
            self._slots.release()
            raise

    async def _send(
        self, request: httpx.Request, timeout: dict[str, float | None]
    ) -> httpx.Response:
        conn = self._checkout()
        if conn is not None:
            try:
                return await self._exchange(conn, request, timeout, reused=True)
            except _Stale:
                conn.close()
        conn = await _connect(request, timeout.get("connect"), self._tls)
        try:
            return await self._exchange(conn, request, timeout, reused=False)
        except _Stale:
            conn.close()
            raise httpx.RemoteProtocolError(
                "the upstream closed the connection without answering", request=request
            ) from None

    def _checkout(self) -> _Conn | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if now - conn.last_used < self._expiry and not conn.reader.at_eof():
                return conn
            conn.close()
        return None

    def _checkin(self, conn: _Conn) -> None:
        if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            conn.h11.start_next_cycle()
            conn.last_used = time.monotonic()
            if len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    async def _exchange(
        self, conn: _Conn, request: httpx.Request, timeout: dict[str, float | None],
        *, reused: bool,
    ) -> httpx.Response:  # fmt: skip
        try:
            try:
                conn.writer.write(_serialize(conn.h11, request))
                async with asyncio.timeout(timeout.get("write")):
                    await conn.writer.drain()
            except TimeoutError:
                raise httpx.WriteTimeout(
                    "sending to the upstream timed out", request=request
                ) from None
            except OSError as e:
                if reused:
                    raise _Stale from None
                raise httpx.WriteError(str(e), request=request) from None
            head = await _next_event(conn, request, timeout.get("read"), fresh=reused)
        except _Stale:
            raise
        except BaseException:
            conn.close()
            raise
        assert isinstance(head, h11.Response)
        body = _Body(self, conn, request, timeout.get("read"))
        return httpx.Response(
            head.status_code,
            headers=head.headers.raw_items(),
            stream=body,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": head.reason},
        )

    def release(self, conn: _Conn, *, reusable: bool) -> None:
        if reusable:
            self._checkin(conn)
        else:
            conn.close()
        self._slots.release()

    async def aclose(self) -> None:
        while self._idle:
            self._idle.pop().close()


def _serialize(conn: h11.Connection, request: httpx.Request) -> bytes:
    """The whole request as one buffer (one write, one TCP segment for small requests)."""
    target = request.url.raw_path
    head = conn.send(h11.Request(method=request.method, target=target, headers=request.headers.raw))
    content = request.content
    parts = [head or b""]
    if content:
        parts.append(conn.send(h11.Data(data=content)) or b"")
    parts.append(conn.send(h11.EndOfMessage()) or b"")
    return b"".join(parts)


async def _connect(request: httpx.Request, timeout_s: float | None, tls: ssl.SSLContext) -> _Conn:
    url = request.url
    https = url.scheme == "https"
    port = url.port or (443 if https else 80)
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(
                url.host, port, ssl=tls if https else None, limit=_READ * 4
            )
    except TimeoutError:
        raise httpx.ConnectTimeout(
            f"connecting to {url.host}:{port} timed out", request=request
        ) from None
    except OSError as e:
        raise httpx.ConnectError(
            f"{e.strerror or e} ({url.host}:{port})", request=request
        ) from None
    return _Conn(reader, writer)


async def _next_event(
    conn: _Conn, request: httpx.Request, timeout_s: float | None, *, fresh: bool = False
) -> Any:
    """The next h11 event (skipping 1xx answers), reading as needed. ``fresh``: nothing has
    been received yet on a reused connection, so a close now means the connection was stale."""
    while True:
        try:
            event = conn.h11.next_event()
        except h11.RemoteProtocolError as e:
            raise httpx.RemoteProtocolError(
                f"bad answer from the upstream: {e}", request=request
            ) from None
        if event is h11.NEED_DATA:
            try:
                async with asyncio.timeout(timeout_s):
                    chunk = await conn.reader.read(_READ)
            except TimeoutError:
                raise httpx.ReadTimeout(
                    "the upstream did not answer in time", request=request
                ) from None
            except OSError as e:
                if fresh:
                    raise _Stale from None
                raise httpx.ReadError(str(e), request=request) from None
            if not chunk and fresh:
                raise _Stale
            fresh = False
            conn.h11.receive_data(chunk)
            continue
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.ConnectionClosed):
            if fresh:
                raise _Stale
            raise httpx.RemoteProtocolError(
                "the upstream closed the connection early", request=request
            )
        return event


class _Body(httpx.AsyncByteStream):
    """The response body as it arrives; the connection goes back to the pool when the body
    was read to its end, and is closed when the reader stops early."""

    def __init__(
        self, pool: H11Transport, conn: _Conn, request: httpx.Request, timeout_s: float | None
    ) -> None:
        self._pool = pool
        self._conn: _Conn | None = conn
        self._request = request
        self._timeout_s = timeout_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        while True:
            event = await _next_event(conn, self._request, self._timeout_s)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._finish(reusable=True)
                return

    def _finish(self, *, reusable: bool) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self._pool.release(conn, reusable=reusable)

    async def aclose(self) -> None:
        self._finish(reusable=False)
