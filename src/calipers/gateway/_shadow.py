"""Shadow calls: a bounded queue of copies of user requests and a few worker tasks that send
them to the candidate, in the background, each under a deadline and behind the circuit
breaker. The user path only calls :meth:`Shadow.submit`, which never waits: a full queue drops
the copy and counts it.

Every accepted copy ends as exactly one candidate call record: answered, failed, timed out,
not sent because the breaker was open, or cancelled at shutdown. A copy not sent because the
breaker was open, whether found at :meth:`Shadow.submit` or when a worker takes it, is
logged with the error :data:`~calipers.store.NOT_SENT_BREAKER_OPEN`: the same row, and the
same count (``not_sent_breaker_open``), as a canary request the breaker kept away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import httpx

from calipers.gateway._breaker import CircuitBreaker
from calipers.gateway._calls import Call
from calipers.gateway._proxy import RawHeaders, Upstream
from calipers.store import NOT_SENT_BREAKER_OPEN

__all__ = ["Shadow", "ShadowJob", "call_failed"]

_log = logging.getLogger("calipers.gateway")


@dataclass(slots=True)
class ShadowJob:
    pair_id: str
    ts: datetime
    endpoint: str
    mode: str
    user_key_hash: str | None
    body: object
    content: bytes
    headers: RawHeaders
    stream: bool
    secrets: tuple[str, ...] = ()


def call_failed(call: Call) -> bool:
    """What counts against the candidate: no response, 5xx or 429, or a 2xx that is not a
    completion. Other 4xx mean the request was refused, not that the candidate is down."""
    if call.error is not None or call.status is None:
        return True
    if call.status >= 500 or call.status == 429:
        return True
    parsed = call.parse()
    return parsed is not None and parsed.invalid is not None


class Shadow:
    def __init__(
        self,
        upstream: Upstream,
        breaker: CircuitBreaker,
        log: Callable[[Call], object],
        *,
        workers: int,
        queue_size: int,
        timeout_s: float,
    ) -> None:
        self._upstream = upstream
        self._breaker = breaker
        self._log = log
        self._queue: asyncio.Queue[ShadowJob] = asyncio.Queue(maxsize=queue_size)
        self._n_workers = workers
        self._timeout_s = timeout_s
        self._workers: list[asyncio.Task[None]] = []
        self._closing = False
        self.mirrored = 0
        self.dropped = 0
        self.not_sent = 0
        self.completed = 0
        self.failed = 0
        self.timeouts = 0
        self.invalid = 0
        self.cancelled = 0

    def start(self) -> None:
        self._workers = [
            asyncio.create_task(self._work(), name=f"calipers-shadow-{i}")
            for i in range(self._n_workers)
        ]

    def submit(self, job: ShadowJob) -> bool:
        """Queue a copy for the candidate without waiting; ``False`` when it is not queued
        (dropped: shutting down or the queue is full; or the breaker is open, which is
        logged as not sent at once)."""
        if self._closing:
            self.dropped += 1
            return False
        if self._breaker.state == "open":
            self.mirrored += 1
            self.not_sent += 1
            self._finish(self._call(job), error=NOT_SENT_BREAKER_OPEN)
            return False
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            self.dropped += 1
            return False
        self.mirrored += 1
        return True

    async def close(self, grace_s: float) -> None:
        """Let queued and running calls finish for up to ``grace_s``, then cancel the rest
        (each logged as cancelled)."""
        self._closing = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), grace_s)
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        while not self._queue.empty():
            job = self._queue.get_nowait()
            self._finish(self._call(job), error="cancelled: the gateway shut down first")

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            try:
                await self._run(job)
            except Exception as e:  # a bug here must not stop the worker or reach users
                _log.exception("shadow call %s failed unexpectedly", job.pair_id)
                self.failed += 1
                self._finish(self._call(job), error=f"gateway error: {type(e).__name__}: {e}")
            finally:
                self._queue.task_done()

    def _call(self, job: ShadowJob) -> Call:
        return Call(
            pair_id=job.pair_id, role="candidate", served=False, mode=job.mode,
            endpoint=job.endpoint, upstream=self._upstream.base_url, ts=job.ts,
            user_key_hash=job.user_key_hash, body=job.body, raw=job.content, stream=job.stream,
            secrets=job.secrets,
        )  # fmt: skip

    async def _run(self, job: ShadowJob) -> None:
        call = self._call(job)
        if not self._breaker.allow():
            self.not_sent += 1
            self._finish(call, error=NOT_SENT_BREAKER_OPEN)
            return
        start = time.perf_counter()
        try:
            async with asyncio.timeout(self._timeout_s):
                await fetch(self._upstream, call, job.headers, job.content, start)
        except TimeoutError:
            self.timeouts += 1
            call.error = f"timeout: no complete answer within {self._timeout_s:g} s"
        except httpx.HTTPError as e:
            call.error = f"{type(e).__name__}: {e}"
        except asyncio.CancelledError:
            self._finish(call, error="cancelled: the gateway shut down first")
            raise
        call.latency_ms = (time.perf_counter() - start) * 1000.0
        self._record(call)

    def _record(self, call: Call) -> None:
        if call_failed(call):
            self.failed += 1
            parsed = call.parsed
            if call.error is None and parsed is not None and parsed.invalid is not None:
                self.invalid += 1
            self._breaker.failure()
        else:
            self.completed += 1
            self._breaker.success()
        self._log(call)

    def _finish(self, call: Call, *, error: str) -> None:
        call.error = error
        if error.startswith("cancelled"):
            self.cancelled += 1
        self._log(call)

    @property
    def finished(self) -> int:
        """Copies that have their record (``mirrored``: all of them once the queue is
        idle)."""
        return self.completed + self.failed + self.not_sent + self.cancelled

    def snapshot(self) -> dict[str, int]:
        return {
            "mirrored": self.mirrored,
            "dropped_queue_full": self.dropped,
            "not_sent_breaker_open": self.not_sent,
            "completed": self.completed,
            "failed": self.failed,
            "timeouts": self.timeouts,
            "invalid": self.invalid,
            "cancelled": self.cancelled,
            "finished": self.finished,
            "queued": self._queue.qsize(),
        }


async def fetch(
    upstream: Upstream, call: Call, headers: RawHeaders, content: bytes, start: float
) -> None:
    """Send ``call``'s request and read the whole answer into it (status, bytes, TTFT)."""
    response = await upstream.open("POST", call.endpoint, headers, content)
    try:
        call.status = response.status_code
        chunks: list[bytes] = []
        async for chunk in response.aiter_bytes():
            if call.ttft_ms is None and call.stream:
                call.ttft_ms = (time.perf_counter() - start) * 1000.0
            chunks.append(chunk)
        call.content = b"".join(chunks)
    finally:
        await response.aclose()
