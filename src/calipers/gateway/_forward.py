"""The user path: send the request to the serving upstream and give its answer back as it
came, whole or streamed, recording what happened on the :class:`Call` as it goes.

Nothing here waits for the log: the finished call is handed to ``done`` (which only queues
it). A streamed answer is relayed chunk by chunk as the upstream sends it; the chunks are also
kept so the log can read the text afterwards.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import httpx
from starlette.responses import Response, StreamingResponse

from calipers.gateway._calls import Call
from calipers.gateway._proxy import RawHeaders, Upstream, error_body, response_headers

__all__ = ["open_upstream", "read_whole", "stream_response", "unavailable", "whole_response"]

Done = Callable[[Call], object]


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
    """502 (or 504 on a timeout) in OpenAI's error shape, when no answer came back."""
    error = call.error or "no answer"
    timeout = "Timeout" in error
    what = "did not answer in time" if timeout else "cannot be reached"
    return Response(
        content=error_body(
            f"The {call.role} upstream {call.upstream} {what}: {error}",
            "upstream_timeout" if timeout else "upstream_unavailable",
        ),
        status_code=504 if timeout else 502,
        media_type="application/json",
        headers={"x-calipers-request-id": call.pair_id},
    )


def stream_response(response: httpx.Response, call: Call, t0: float, done: Done) -> Response:
    """Relay the upstream's body chunk by chunk, unchanged, with its status and headers."""
    answer = StreamingResponse(_relay(response, call, t0, done), status_code=response.status_code)
    answer.raw_headers.extend(response_headers(response.headers, call.pair_id))
    return answer


async def _relay(
    response: httpx.Response, call: Call, t0: float, done: Done
) -> AsyncIterator[bytes]:
    chunks: list[bytes] = []
    try:
        async for chunk in response.aiter_bytes():
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
