"""Schedule: run the planned samples with bounded concurrency, writing records as they finish.

Records are written in small batches (each batch one transaction), so a kill loses at most the
samples in flight; a resumed run skips what was written and retries what errored. A deadline
(``deadline``, a ``time.monotonic()`` instant) stops the run the same way: samples in flight are
cancelled and left, with those not started, for a resumed run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Container, Iterable, Iterator, Sized
from itertools import islice
from typing import Protocol

from calipers.models import Retry
from calipers.runner._cache import ResponseCache
from calipers.runner._plan import Plan, PlannedSample, PlannedTask
from calipers.runner._sample import run_sample
from calipers.store import SampleKey, SampleRecord, Store

__all__ = ["Progress", "execute"]


class Progress(Protocol):
    """What the runner tells a progress display (the CLI's bar; nothing in the library)."""

    def start_run(self, run_id: str) -> None: ...
    def note(self, message: str) -> None: ...  # one line the user should read (a fallback)
    def start_task(self, task: str, total: int, done: int) -> None: ...
    def advance(self, task: str, record: SampleRecord) -> None: ...
    def retrying(self, task: str, sample_id: str, retry: Retry) -> None: ...
    def finish_task(self, task: str) -> None: ...


class _Writer:
    """Buffers records and flushes them every ``every`` records or ``interval_s`` seconds."""

    def __init__(self, store: Store, every: int = 256, interval_s: float = 0.5) -> None:
        self._store = store
        self._buf: list[SampleRecord] = []
        self._every = every
        self._interval = interval_s
        self._last = time.monotonic()

    def add(self, record: SampleRecord) -> None:
        self._buf.append(record)
        if len(self._buf) >= self._every or time.monotonic() - self._last > self._interval:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self._store.add_samples(self._buf)
            self._buf = []
        self._last = time.monotonic()


async def _run_task(
    run_id: str,
    plan: Plan,
    pt: PlannedTask,
    todo: Iterable[PlannedSample],
    writer: _Writer,
    cache: ResponseCache | None,
    progress: Progress | None,
) -> None:
    limit = plan.provider.concurrency_limit(plan.config.concurrency)
    sem = asyncio.Semaphore(limit)

    async def one(ps: PlannedSample) -> None:
        def on_retry(r: Retry) -> None:
            if progress:
                progress.retrying(pt.task.name, ps.sample.id, r)

        async with sem:
            rec = await run_sample(run_id, ps, plan.provider, pt.task.scorers, cache, on_retry)
        writer.add(rec)
        if progress:
            progress.advance(pt.task.name, rec)

    # Bounded fan-out: at most ``limit`` coroutines exist at once, in item order; the plan is
    # read a chunk at a time (its cached responses fetched per chunk), never held whole.
    pending: set[asyncio.Task[None]] = set()
    try:
        for ps in _prefetched(todo, cache):
            if len(pending) >= limit:
                _done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                _raise_first(_done)
            pending.add(asyncio.create_task(one(ps)))
        if pending:
            _raise_first((await asyncio.wait(pending))[0])
    finally:
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        writer.flush()
        if cache is not None:
            cache.flush()


def _raise_first(done: set[asyncio.Task[None]]) -> None:
    """Raise the first failure among finished tasks, after reading every one's exception (a
    failure left unread is logged as "Task exception was never retrieved")."""
    failures = [e for d in done if (e := d.exception()) is not None]
    if failures:
        raise failures[0]


PREFETCH = 1000
"""Planned samples read ahead at a time: their cached responses are fetched in one query."""


def _prefetched(
    todo: Iterable[PlannedSample], cache: ResponseCache | None
) -> Iterator[PlannedSample]:
    it = iter(todo)
    while chunk := list(islice(it, PREFETCH)):
        if cache is not None:
            cache.prefetch(ps.request for ps in chunk)
        yield from chunk


def _todo(pt: PlannedTask, done: Container[SampleKey]) -> Iterator[PlannedSample]:
    return (ps for ps in pt.samples if (ps.task, ps.sample.id, ps.epoch) not in done)


def _n_done(pt: PlannedTask, done: Container[SampleKey]) -> int:
    """How many of the task's planned samples are in ``done`` (none when it is empty)."""
    if isinstance(done, Sized) and not len(done):
        return 0
    return sum((ps.task, ps.sample.id, ps.epoch) in done for ps in pt.samples)


async def execute(
    run_id: str,
    plan: Plan,
    store: Store,
    *,
    done: Container[SampleKey] = frozenset(),
    progress: Progress | None = None,
    deadline: float | None = None,
) -> bool:
    """Run every planned sample not in ``done`` (a set, or the store's compact
    :class:`~calipers.store.DoneKeys`); records go to ``store`` as they finish.
    Returns False when ``deadline`` (``time.monotonic()`` seconds) came first."""
    loop = asyncio.get_running_loop()
    when = None if deadline is None else loop.time() + (deadline - time.monotonic())
    try:
        async with asyncio.timeout_at(when) as budget:
            await _execute(run_id, plan, store, done, progress)
    except TimeoutError:
        if not budget.expired():
            raise  # some other timeout, not the deadline
        return False
    return True


async def _execute(
    run_id: str,
    plan: Plan,
    store: Store,
    done_set: Container[SampleKey],
    progress: Progress | None,
) -> None:
    cache = (
        ResponseCache(store, plan.methodology.model.key(), tool_format=plan.provider.tool_format())
        if plan.config.use_cache
        else None
    )
    writer = _Writer(store)
    for pt in plan.tasks:
        todo = _todo(pt, done_set)
        if progress:
            progress.start_task(pt.task.name, len(pt.samples), _n_done(pt, done_set))
        await _run_task(run_id, plan, pt, todo, writer, cache, progress)
        if progress:
            progress.finish_task(pt.task.name)
