"""The user path: send the request to the serving upstream and give its answer back as it
came, whole or streamed, recording what happened on the :class:`Call` as it goes.

Nothing here waits for the log: the finished call is handed to ``done`` (which only queues
it). A streamed answer is relayed chunk by chunk as the upstream sends it; the chunks are also
kept so the log can read the text afterwards.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable

import httpx
from starlette.responses import Response, StreamingResponse

from calipers.gateway._calls import Call
from calipers.gateway._proxy import RawHeaders, Upstream, error_body, response_headers

__all__ = [
    "ChunkStream",
    "first_chunk",
    "open_upstream",
    "read_whole",
    "stream_response",
    "unavailable",
    "whole_response",
]

_log = logging.getLogger("calipers.gateway")
Done = Callable[[Call], object]
ChunkStream = tuple[bytes, AsyncIterator[bytes]]
"""A stream's first chunk, already read, and the rest of it."""


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def _describe(e: httpx.HTTPError) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


async def open_upstream(
    upstream: Upstream, call: Call, headers: RawHeaders, content: bytes, t0: float
) -> httpx.Response | None:
    """The upstream's response with its body unread, or ``None`` (``call.error`` says why)."""
    try:
        response = await upstream.open("POST", call.endpoint, headers, content)
    except httpx.HTTPError as e:
        call.error = _describe(e)
        call.latency_ms = _ms(t0)
        return None
    call.status = response.status_code
    return response


async def read_whole(response: httpx.Response, call: Call, t0: float) -> None:
    """Read the whole body into ``call.content``; on a broken read, ``call.error``."""
    try:
        call.content = await response.aread()
    except httpx.HTTPError as e:
        call.error = _describe(e)
    finally:
        await response.aclose()
        call.latency_ms = _ms(t0)


def whole_response(call: Call, response: httpx.Response) -> Response:
    answer = Response(content=call.content, status_code=response.status_code)
    answer.raw_headers.extend(response_headers(response.headers, call.pair_id))
    return answer


def unavailable(call: Call) -> Response:
    """502 (or 504 on a timeout) in OpenAI's error shape, when no answer came back.

    The body names the request id and nothing internal: the upstream's URL and the error
    (which names its host and port) go to the gateway's log and the stored row, not to the
    client."""
    error = call.error or "no answer"
    timeout = "Timeout" in error
    what = "did not answer in time" if timeout else "could not be reached"
    _log.warning(
        "request %s: the %s upstream %s %s: %s", call.pair_id, call.role, call.upstream, what, error
    )
    return Response(
        content=error_body(
            f"The model server behind this gateway {what}. Request id {call.pair_id} "
            "(the gateway's log has the details).",
            "upstream_timeout" if timeout else "upstream_unavailable",
        ),
        status_code=504 if timeout else 502,
        media_type="application/json",
        headers={"x-calipers-request-id": call.pair_id},
    )


async def first_chunk(response: httpx.Response, call: Call, t0: float) -> ChunkStream:
    """Wait for a stream's first chunk (``call.ttft_ms``) and return it with the rest, so
    the caller can still choose not to relay it (a canary past its deadline)."""
    chunks = response.aiter_bytes()
    try:
        first = await anext(chunks)
    except StopAsyncIteration:
        first = b""
    call.ttft_ms = _ms(t0)
    return first, chunks


def stream_response(
    response: httpx.Response, call: Call, t0: float, done: Done, read: ChunkStream | None = None
) -> Response:
    """Relay the upstream's body chunk by chunk, unchanged, with its status and headers
    (``read``: the first chunk, already read by :func:`first_chunk`, and the rest)."""
    answer = StreamingResponse(
        _relay(response, call, t0, done, read), status_code=response.status_code
    )
    answer.raw_headers.extend(response_headers(response.headers, call.pair_id))
    return answer


async def _relay(
    response: httpx.Response, call: Call, t0: float, done: Done, read: ChunkStream | None
) -> AsyncIterator[bytes]:
    chunks: list[bytes] = []
    source = response.aiter_bytes() if read is None else read[1]
    try:
        if read is not None and read[0]:
            chunks.append(read[0])
            yield read[0]
        async for chunk in source:
            if call.ttft_ms is None:
                call.ttft_ms = _ms(t0)
            chunks.append(chunk)
            yield chunk
    except httpx.HTTPError as e:
        call.error = f"the upstream's stream broke off: {_describe(e)}"
        raise  # the client must see a broken stream, not a complete-looking one
    except BaseException:
        call.error = "the client went away before the end of the stream"
        raise
    finally:
        call.content = b"".join(chunks)
        call.latency_ms = _ms(t0)
        done(call)
        await response.aclose()
