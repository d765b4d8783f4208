"""The gateway's HTTP/1.1 transport against a scripted asyncio server: keep-alive reuse, stale
connections, chunked bodies, early close, timeouts and the connection limit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import httpx
import pytest

from calipers.gateway._transport import H11Transport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]
TIMEOUT = {"connect": 2.0, "read": 2.0, "write": 2.0, "pool": 2.0}


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + await reader.readexactly(length)


def ok(body: bytes, *, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), extra, body)


class Scripted:
    """A server whose ``handler(reader, writer, n)`` answers connection number ``n``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []

    async def __aenter__(self) -> str:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer, self.connections)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/x"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()


async def call(t: H11Transport, url: str, body: bytes = b"{}", **timeout: float) -> Any:
    request = httpx.Request("POST", url, content=body, extensions={"timeout": TIMEOUT | timeout})
    response = await t.handle_async_request(request)
    try:
        return response.status_code, dict(response.headers), await response.aread()
    finally:
        await response.aclose()


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_keep_alive_reuses_one_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            request = await read_request(reader)
            scripted.requests.append(request)
            writer.write(ok(b"echo:" + request.rsplit(b"\r\n\r\n", 1)[1], extra=b"x-a: 1\r\n"))

    scripted = Scripted(handler)

    async def go() -> list[Any]:
        t = H11Transport(max_connections=4)
        async with scripted as url:
            got = [await call(t, url, b'{"i": %d}' % i) for i in range(5)]
        await t.aclose()
        return got

    got = run(go())
    assert [g[2] for g in got] == [b'echo:{"i": %d}' % i for i in range(5)]
    assert got[0][1]["x-a"] == "1"
    assert scripted.connections == 1
    first = scripted.requests[0]
    assert first.startswith(b"POST /v1/x HTTP/1.1\r\n") and b"content-length: 8" in first.lower()


def test_a_connection_the_server_closed_is_replaced_without_an_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(ok(b"one-shot"))  # keep-alive promised, then closed: a stale connection
        await writer.drain()

    async def go() -> tuple[list[Any], int]:
        scripted = Scripted(handler)
        t = H11Transport(max_connections=2)
        async with scripted as url:
            got = [await call(t, url) for _ in range(3)]
        return got, scripted.connections

    got, connections = run(go())
    assert [g[2] for g in got] == [b"one-shot"] * 3
    assert connections == 3


def test_chunked_bodies_arrive_piece_by_piece() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for piece in (b"data: a\n\n", b"data: b\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await read_request(reader)  # the connection was kept for the next request
        writer.write(ok(b"again"))

    async def go() -> tuple[list[bytes], bytes, int]:
        scripted = Scripted(handler)
        t = H11Transport(max_connections=1)
        async with scripted as url:
            request = httpx.Request("POST", url, content=b"{}", extensions={"timeout": TIMEOUT})
            response = await t.handle_async_request(request)
            pieces = [p async for p in response.aiter_raw()]
            await response.aclose()
            again = (await call(t, url))[2]
        return pieces, again, scripted.connections

    pieces, again, connections = run(go())
    assert pieces == [b"data: a\n\n", b"data: b\n\n"]
    assert again == b"again" and connections == 1


def test_errors_are_httpx_errors() -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        await asyncio.sleep(1.0)

    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this")
        await writer.drain()

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await read_request(reader)
        writer.write(b"this is not http\r\n\r\n")
        await writer.drain()

    async def go() -> None:
        t = H11Transport(max_connections=2)
        async with Scripted(slow) as url:
            with pytest.raises(httpx.ReadTimeout):
                await call(t, url, read=0.1)
        async with Scripted(cut) as url:
            with pytest.raises(httpx.RemoteProtocolError):
                await call(t, url)
        async with Scripted(garbage) as url:
            with pytest.raises(httpx.RemoteProtocolError):
                await call(t, url)
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(httpx.ConnectError):
            await call(t, f"http://127.0.0.1:{port}/v1/x")
        assert t._slots._value == 2  # every failure gave its slot back

    run(go())


def test_the_connection_limit_queues_and_times_out() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await read_request(reader)
            await asyncio.sleep(0.2)
            writer.write(ok(b"k"))

    async def go() -> None:
        t = H11Transport(max_connections=1)
        async with Scripted(handler) as url:
            both = await asyncio.gather(call(t, url), call(t, url))
            assert [b[2] for b in both] == [b"k", b"k"]
            with pytest.raises(httpx.PoolTimeout):
                await asyncio.gather(call(t, url), call(t, url, pool=0.05))

    run(go())


def test_stopping_early_closes_instead_of_reusing() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        while True:
            await read_request(reader)
            writer.write(ok(b"x" * 200_000))
            await writer.drain()

    async def go() -> int:
        scripted = Scripted(handler)
        t = H11Transport(max_connections=2)
        async with scripted as url:
            request = httpx.Request("POST", url, content=b"{}", extensions={"timeout": TIMEOUT})
            response = await t.handle_async_request(request)
            async for _ in response.aiter_raw():
                break
            await response.aclose()
            assert (await call(t, url))[2] == b"x" * 200_000
        return scripted.connections

    assert run(go()) == 2
