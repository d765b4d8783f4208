"""Canary mode's user path: a canary user's request goes to the candidate, behind the circuit
breaker and under a first-byte deadline; when the candidate cannot answer in time, or fails
before anything reached the user, the baseline answers instead.

A hung candidate costs a canary user at most the deadline (see
:class:`~calipers.gateway._deadline.FirstByteDeadline`), not the candidate timeout, and each
call past the deadline counts against the breaker at the deadline, so once
``breaker_failures`` of them have passed, the breaker is open and later users are not sent
there at all: only the requests already in flight or arriving within one deadline pay.

Every canary request chosen for the candidate ends as one candidate row: served, failed,
too slow (``timeout: ...``), or not sent because the breaker was open
(:data:`~calipers.store.NOT_SENT_BREAKER_OPEN`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import httpx
from starlette.responses import Response

from calipers.gateway._breaker import CircuitBreaker
from calipers.gateway._calls import Call
from calipers.gateway._deadline import FirstByteDeadline
from calipers.gateway._forward import (
    ChunkStream,
    first_chunk,
    open_upstream,
    read_whole,
    stream_response,
    whole_response,
)
from calipers.gateway._proxy import RawHeaders, Upstream
from calipers.gateway._shadow import call_failed
from calipers.store import NOT_SENT_BREAKER_OPEN

__all__ = ["Canary"]


def _passes_through(status: int) -> bool:
    """An answer the user gets as it is (2xx, and 4xx other than 429: the client's business)."""
    return status < 500 and status != 429


class Canary:
    def __init__(
        self,
        upstream: Upstream,
        breaker: CircuitBreaker,
        deadline: FirstByteDeadline,
        log: Callable[[Call], object],
    ) -> None:
        self.upstream = upstream
        self.breaker = breaker
        self.deadline = deadline
        self._log = log
        self.sent = 0
        self.served = 0
        self.failed = 0
        self.too_slow = 0
        self.not_sent = 0

    async def serve(
        self, call: Call, headers: RawHeaders, content: bytes, t0: float
    ) -> Response | None:
        """The candidate's answer for this canary user, or ``None`` when the baseline must
        answer (the candidate's call is logged either way)."""
        if not self.breaker.allow():
            self.not_sent += 1
            return self._give_up(call, NOT_SENT_BREAKER_OPEN, None)
        self.sent += 1
        deadline_ms = self.deadline.ms(call.stream)
        response: httpx.Response | None = None
        read: ChunkStream | None = None
        try:
            async with asyncio.timeout(deadline_ms / 1000.0):
                response = await open_upstream(self.upstream, call, headers, content, t0)
                if response is not None and call.stream and _passes_through(call.status or 0):
                    read = await first_chunk(response, call, t0)
                elif response is not None:
                    await read_whole(response, call, t0)
        except TimeoutError:
            if response is not None:
                await response.aclose()
            self.too_slow += 1
            self.breaker.failure(slow=True)
            call.content = b""
            call.latency_ms = (time.perf_counter() - t0) * 1000.0
            return self._give_up(
                call, f"timeout: no first byte within the canary deadline of "
                f"{deadline_ms:.0f} ms; the baseline answered instead", t0,
            )  # fmt: skip
        except httpx.HTTPError as e:  # the stream broke before its first chunk
            call.error = f"{type(e).__name__}: {e}"
        if response is not None and read is not None:
            self.served += 1
            return stream_response(response, call, t0, self._stream_done, read)
        if response is not None and _passes_through(response.status_code) and not call_failed(call):
            self.breaker.success()
            self.served += 1
            self._log(call)
            return whole_response(call, response)
        if response is not None:
            await response.aclose()
        self.failed += 1
        self.breaker.failure()
        return self._give_up(call, None, t0)

    def _give_up(self, call: Call, error: str | None, t0: float | None) -> Response | None:
        """Log the candidate's call as not served (``error``, if given, says why)."""
        if error is not None:
            call.error = error
        if call.latency_ms is None and t0 is not None:
            call.latency_ms = (time.perf_counter() - t0) * 1000.0
        call.served = False
        self._log(call)
        return None

    def _stream_done(self, call: Call) -> None:
        if call.error is not None and call.error.startswith("the upstream"):
            self.breaker.failure()
        else:
            self.breaker.success()
        self._log(call)

    def snapshot(self) -> dict[str, object]:
        return {
            "sent": self.sent,
            "served": self.served,
            "failed": self.failed,
            "too_slow": self.too_slow,
            "not_sent_breaker_open": self.not_sent,
            "first_byte_deadline": self.deadline.snapshot(),
        }
