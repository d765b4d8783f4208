"""The log writer on its own: never blocks, counts drops, batches by window and size, retries,
and writes everything accepted when closed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from calipers._util.clock import utc_now
from calipers.errors import StoreError
from calipers.gateway import _logwriter
from calipers.gateway._calls import Call, to_record
from calipers.gateway._logwriter import LogWriter, WriteRows
from calipers.store import TrafficRecord


def call(i: int) -> Call:
    return Call(
        pair_id=f"p{i}", role="baseline", served=True, mode="off", endpoint="chat/completions",
        upstream="http://u/v1", ts=utc_now(), user_key_hash=None, body={"model": "m"},
        raw=b"{}", stream=False, status=200,
        content=b'{"choices": [{"message": {"content": "ok"}}]}',
    )  # fmt: skip


class Sink:
    def __init__(self, fail_first: int = 0, gate: threading.Event | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_first = fail_first
        self.gate = gate

    def __call__(self, rows: Sequence[TrafficRecord]) -> int:
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail_first:
            self.fail_first -= 1
            raise RuntimeError("database is down")
        self.batches.append([r.pair_id for r in rows])
        return len(rows)


def writer(sink: Any, **kw: Any) -> LogWriter:
    settings = {"queue_size": 100, "batch_max_rows": 10, "batch_window_s": 0.05} | kw
    return LogWriter(sink, lambda c: to_record(c, str), **settings)


def test_full_queue_drops_and_counts_without_waiting() -> None:
    async def go() -> tuple[LogWriter, Sink]:
        sink = Sink()
        w = writer(sink, queue_size=3)
        w.start()
        taken = [w.submit(call(i)) for i in range(5)]  # no await: the writer cannot run
        assert taken == [True, True, True, False, False]
        await w.close()
        return w, sink

    w, sink = asyncio.run(go())
    assert (w.accepted, w.dropped, w.written, w.lost) == (3, 2, 3, 0)
    assert [p for b in sink.batches for p in b] == ["p0", "p1", "p2"]


def test_batches_by_size_and_close_writes_the_rest() -> None:
    async def go() -> Sink:
        sink = Sink()
        w = writer(sink, batch_max_rows=4, batch_window_s=30.0)
        w.start()
        for i in range(10):
            w.submit(call(i))
        await asyncio.sleep(0.3)  # full batches go at once, without waiting for the window
        assert [len(b) for b in sink.batches] == [4, 4]
        await w.close()  # the last two are written now, not after 30 s
        return sink

    sink = asyncio.run(go())
    assert [len(b) for b in sink.batches] == [4, 4, 2]
    assert [p for b in sink.batches for p in b] == [f"p{i}" for i in range(10)]


def test_window_bounds_how_long_a_row_waits() -> None:
    async def go() -> list[float]:
        sink = Sink()
        w = writer(sink, batch_window_s=0.1)
        w.start()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        w.submit(call(0))
        waits = []
        while not sink.batches:
            await asyncio.sleep(0.005)
        waits.append(loop.time() - t0)
        await w.close()
        return waits

    (wait,) = asyncio.run(go())
    assert 0.09 <= wait < 1.0


class FlakyStore:
    """A store that cannot be reached until ``down_s`` have passed, and refuses the rows
    whose pair id is in ``refuse`` (as PostgreSQL refuses a NUL character) every time."""

    def __init__(self, down_s: float = 0.0, refuse: frozenset[str] = frozenset()) -> None:
        self.up_at = time.monotonic() + down_s
        self.refuse = refuse
        self.rows: list[str] = []
        self.attempts = 0

    def __call__(self, rows: Sequence[TrafficRecord]) -> int:
        self.attempts += 1
        if time.monotonic() < self.up_at:
            raise StoreError("The store cannot be used right now: connection refused.")
        if any(r.pair_id in self.refuse for r in rows):
            raise ValueError("A string literal cannot contain NUL (0x00) characters.")
        new = [r.pair_id for r in rows if r.pair_id not in self.rows]  # skips stored rows
        self.rows += new
        return len(new)


def _write_all(store: WriteRows, n: int, **kw: Any) -> LogWriter:
    async def go() -> LogWriter:
        w = writer(store, batch_max_rows=100, **kw)
        w.start()
        for i in range(n):
            w.submit(call(i))
        await w.close()
        return w

    return asyncio.run(go())


def test_an_unreachable_store_is_waited_for_and_nothing_is_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_logwriter, "_FIRST_DELAY_S", 0.02)
    monkeypatch.setattr(_logwriter, "_MAX_DELAY_S", 0.1)
    store = FlakyStore(down_s=0.6)  # a database restart
    w = _write_all(store, 60, retry_s=5.0)
    assert store.rows == [f"p{i}" for i in range(60)]  # each once, in order
    assert (w.written, w.lost) == (60, 0)
    assert w.write_errors >= 3 and store.attempts > w.write_errors


def test_a_store_down_longer_than_the_retry_time_loses_the_rows_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_logwriter, "_FIRST_DELAY_S", 0.02)
    store = FlakyStore(down_s=30.0)
    w = _write_all(store, 30, retry_s=0.1)
    assert (w.written, w.lost, store.rows) == (0, 30, [])
    lost = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
    assert sum(int(m.split()[0]) for m in lost) == 30  # 25 + 5: two chunks
    assert "unreachable for 0.1 s" in lost[0]


def test_a_row_the_database_refuses_loses_only_that_row() -> None:
    store = FlakyStore(refuse=frozenset({"p7"}))
    w = _write_all(store, 30)
    assert store.rows == [f"p{i}" for i in range(30) if i != 7]
    assert (w.written, w.lost) == (29, 1)


def test_a_slow_store_does_not_block_submitters() -> None:
    gate = threading.Event()

    async def go() -> tuple[LogWriter, float]:
        w = writer(Sink(gate=gate), queue_size=50, batch_max_rows=5, batch_window_s=0.01)
        w.start()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        for i in range(200):
            w.submit(call(i))
            await asyncio.sleep(0)
        spent = loop.time() - t0
        gate.set()
        await w.close()
        return w, spent

    w, spent = asyncio.run(go())
    assert spent < 0.5  # the store was stuck the whole time
    assert w.dropped > 0 and w.accepted + w.dropped == 200 and w.written == w.accepted


def test_a_nul_character_in_an_answer_does_not_cost_the_row() -> None:
    """PostgreSQL refuses NUL in text ("text fields cannot contain NUL (0x00) bytes"), which
    lost whole batches there: the row keeps the answer with U+FFFD in its place."""
    c = call(0)
    c.content = b'{"choices": [{"message": {"content": "a\\u0000b"}}], "model": "m\\u0000"}'
    c.body = {"model": None, "messages": [{"role": "user", "content": "x\u0000y"}]}
    record = to_record(c, str)
    assert (record.response, record.model) == ("a\ufffdb", "m\ufffd")
    assert record.request["messages"][0]["content"] == "x\u0000y"  # JSON escapes it


class CutOnce:
    """A store whose first write meets a connection the database cut (the pool replaces it)."""

    def __init__(self) -> None:
        self.rows: list[str] = []
        self.attempts = 0

    def __call__(self, rows: Sequence[TrafficRecord]) -> int:
        self.attempts += 1
        if self.attempts == 1:
            raise StoreError("terminating connection due to administrator command")
        self.rows += [r.pair_id for r in rows]
        return len(rows)


def test_a_cut_connection_is_retried_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a database restart the first retry gets a new connection: waiting before it
    only keeps more rows in memory, where a crash would lose them."""
    monkeypatch.setattr(_logwriter, "_FIRST_DELAY_S", 5.0)
    store = CutOnce()
    t0 = time.monotonic()
    w = _write_all(store, 10, retry_s=30.0)
    assert time.monotonic() - t0 < 2.0  # not the 5 s pause
    assert store.rows == [f"p{i}" for i in range(10)]
    assert (w.written, w.write_errors, w.lost) == (10, 1, 0)


def test_the_log_does_not_wait_for_busy_worker_threads() -> None:
    """Feedback look-ups and the canary use asyncio's worker threads; with all of them busy
    the log is still written."""
    release = threading.Event()

    async def go() -> tuple[LogWriter, bool]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(2))
        busy = [asyncio.create_task(asyncio.to_thread(release.wait, 10)) for _ in range(2)]
        sink = Sink()
        w = writer(sink, batch_window_s=0.01)
        w.start()
        w.submit(call(0))
        deadline = loop.time() + 3
        while not sink.batches and loop.time() < deadline:
            await asyncio.sleep(0.01)
        written_while_busy = sink.batches == [["p0"]]
        release.set()
        await asyncio.gather(*busy)
        await w.close()
        return w, written_while_busy

    w, written_while_busy = asyncio.run(go())
    assert written_while_busy and w.written == 1
