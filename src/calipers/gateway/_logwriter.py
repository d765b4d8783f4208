"""The log writer: a bounded queue the request path drops calls into without waiting, and one
background task that writes them to the store in batches.

A batch is written when ``batch_window_s`` has passed since its first call arrived, or at once
when ``batch_max_rows`` are waiting. Parsing, redaction and the database write run in the
writer's own thread, so the event loop keeps serving users meanwhile and the log never waits
behind other work (feedback look-ups, the fingerprint canary) for a worker thread. When the
queue is full the call is dropped and counted; the user never waits for the log. A write the
store could not take (unreachable, a cut connection) is retried at once, since the connection
pool replaces a cut connection, and then with growing pauses for up to ``retry_s``; after that
its rows are counted as lost. :meth:`LogWriter.close` writes everything accepted before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from calipers.errors import StoreError
from calipers.gateway._calls import Call
from calipers.store import TrafficRecord

__all__ = ["LogWriter"]

_log = logging.getLogger("calipers.gateway")
_STOP = object()
_FIRST_DELAY_S = 0.25
_MAX_DELAY_S = 5.0
_CHUNK_ROWS = 25

_T = TypeVar("_T")
WriteRows = Callable[[Sequence[TrafficRecord]], int]
ToRecord = Callable[[Call], TrafficRecord]


class LogWriter:
    def __init__(
        self,
        write: WriteRows,
        to_record: ToRecord,
        *,
        queue_size: int,
        batch_max_rows: int,
        batch_window_s: float,
        retry_s: float = 60.0,
    ) -> None:
        self._write = write
        self._to_record = to_record
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=queue_size)
        self._max_rows = batch_max_rows
        self._window_s = batch_window_s
        self._retry_s = retry_s
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._thread: ThreadPoolExecutor | None = None
        self.accepted = 0
        self.dropped = 0
        self.written = 0
        self.lost = 0
        self.write_errors = 0

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="calipers-log-writer")
        self._task = asyncio.create_task(self._run(), name="calipers-log-writer")

    def submit(self, call: Call) -> bool:
        """Queue ``call`` for writing; ``False`` (and counted) when the queue is full."""
        if self._closing.is_set():
            self.dropped += 1
            return False
        try:
            self._queue.put_nowait(call)
        except asyncio.QueueFull:
            self.dropped += 1
            return False
        self.accepted += 1
        return True

    async def close(self) -> None:
        """Stop accepting, write everything accepted, and end the background task."""
        if self._task is None:
            return
        self._closing.set()
        await self._queue.put(_STOP)
        await self._task
        self._task = None
        if self._thread is not None:
            self._thread.shutdown(wait=False)
            self._thread = None

    async def _in_thread(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` on the writer's own thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, functools.partial(fn, *args))

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            if first is _STOP:
                return
            if self._queue.qsize() + 1 < self._max_rows and not self._closing.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), self._window_s)
            batch: list[Call] = [first]
            stop = False
            while len(batch) < self._max_rows and not self._queue.empty():
                item = self._queue.get_nowait()
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
            await self._write_batch(batch)
            if stop:
                return

    async def _write_batch(self, batch: list[Call]) -> None:
        records, refused = await self._in_thread(self._convert, batch)
        if refused:
            self._lose(refused, "the call could not be turned into a log row")
        for i in range(0, len(records), _CHUNK_ROWS):
            await self._write_chunk(records[i : i + _CHUNK_ROWS])

    async def _write_chunk(self, chunk: list[TrafficRecord]) -> None:
        """Write one chunk (one transaction): wait out an unreachable store for up to
        ``retry_s`` (the first retry at once: a cut connection is replaced by the pool); split a
        chunk the database refuses into single rows."""
        delay, give_up = 0.0, time.monotonic() + self._retry_s
        while True:
            try:
                self.written += await self._in_thread(self._write, chunk)
                return
            except StoreError as e:  # unreachable: the rows wait, the queue fills meanwhile
                self.write_errors += 1
                if time.monotonic() + delay > give_up:
                    self._lose(
                        len(chunk), f"the store was unreachable for {self._retry_s:g} s: {e}"
                    )
                    return
                _log.warning("writing %d gateway log rows failed, retrying: %s", len(chunk), e)
                await asyncio.sleep(delay)
                delay = min(max(delay * 2, _FIRST_DELAY_S), _MAX_DELAY_S)
            except Exception as e:  # the database refused something: find the row
                self.write_errors += 1
                if len(chunk) == 1:
                    self._lose(1, f"pair {chunk[0].pair_id} ({chunk[0].role}): {e}")
                    return
                for record in chunk:
                    await self._write_chunk([record])
                return

    def _lose(self, n: int, why: str) -> None:
        self.lost += n
        _log.error("%d gateway log row(s) lost: %s", n, why)

    def _convert(self, batch: list[Call]) -> tuple[list[TrafficRecord], int]:
        """Runs in a worker thread: the rows of ``batch``, and how many calls could not be
        converted. ``time.sleep(0)`` after each row hands the GIL back to the event loop at
        once instead of after the switch interval, so users' requests are not slowed down
        while a batch is converted."""
        records, refused = [], 0
        for call in batch:
            try:
                records.append(self._to_record(call))
            except Exception:  # a bug: the row is lost, the others are written
                _log.exception("gateway log row %s (%s) could not be made", call.pair_id, call.role)
                refused += 1
            time.sleep(0)
        return records, refused

    def snapshot(self) -> dict[str, int]:
        return {
            "accepted": self.accepted,
            "written": self.written,
            "pending": self.pending,
            "dropped_queue_full": self.dropped,
            "write_errors": self.write_errors,
            "lost": self.lost,
        }
