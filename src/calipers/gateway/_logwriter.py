"""The log writer: a bounded queue the request path drops calls into without waiting, and one
background task that writes them to the store in batches.

A batch is written when ``batch_window_s`` has passed since its first call arrived, or at once
when ``batch_max_rows`` are waiting. Parsing, redaction and the database write run in a worker
thread, so the event loop keeps serving users meanwhile. When the queue is full the call is
dropped and counted; the user never waits for the log. A failed write is retried twice, then
its rows are counted as lost. :meth:`LogWriter.close` writes everything accepted before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from calipers.gateway._calls import Call
from calipers.store import TrafficRecord

__all__ = ["LogWriter"]

_log = logging.getLogger("calipers.gateway")
_STOP = object()
_RETRY_DELAYS_S = (0.5, 2.0)
_CHUNK_ROWS = 25

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
    ) -> None:
        self._write = write
        self._to_record = to_record
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=queue_size)
        self._max_rows = batch_max_rows
        self._window_s = batch_window_s
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.accepted = 0
        self.dropped = 0
        self.written = 0
        self.lost = 0
        self.write_errors = 0

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
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
        for attempt in range(len(_RETRY_DELAYS_S) + 1):
            try:
                self.written += await asyncio.to_thread(self._convert_and_write, batch)
                return
            except Exception as e:  # a broken log must never take the gateway down
                self.write_errors += 1
                _log.warning("writing %d gateway log rows failed: %s", len(batch), e)
                if attempt < len(_RETRY_DELAYS_S):
                    await asyncio.sleep(_RETRY_DELAYS_S[attempt])
        self.lost += len(batch)

    def _convert_and_write(self, batch: list[Call]) -> int:
        """Runs in a worker thread. ``time.sleep(0)`` after each row and each chunk hands the
        GIL back to the event loop at once instead of after the switch interval, so users'
        requests are not slowed down while a batch is converted. A chunk is one transaction;
        writing a batch again after a failure is harmless (rows already stored are skipped)."""
        records = []
        for call in batch:
            records.append(self._to_record(call))
            time.sleep(0)
        written = 0
        for i in range(0, len(records), _CHUNK_ROWS):
            written += self._write(records[i : i + _CHUNK_ROWS])
            time.sleep(0)
        return written

    def snapshot(self) -> dict[str, int]:
        return {
            "accepted": self.accepted,
            "written": self.written,
            "pending": self.pending,
            "dropped_queue_full": self.dropped,
            "write_errors": self.write_errors,
            "lost": self.lost,
        }
