"""The Ray executor: a run's pending samples sharded over model replicas on a Ray cluster.

One actor per replica (:class:`~calipers.runner._ray_worker.ShardWorker`) builds its own
provider and runs shards through the same ``run_sample`` as the local executor; the driver
(this process) is the only writer to the store, which is the checkpoint. Shards are dealt from
the samples sorted by prompt length, longest first, in turn (shard ``k`` takes items ``k``,
``k + S``, ...), so every shard holds a like mix of long and short prompts; each replica has
two shards in flight, so it never waits for the driver between shards.

Failures, handled here rather than by Ray's task retries: an actor is created with
``max_restarts`` (Ray restarts a killed process) and ``max_task_retries=0``, so the call that was
running fails back to the driver. The driver splits that shard in two and queues both halves
(one attempt more each); a shard that has failed ``shard_retries`` times becomes error rows, one
per sample, never dropped samples. Records reach the store only from a shard that came back
whole, through ``Store.add_samples``, an idempotent upsert by (run, task, sample id, epoch), so
a shard run twice cannot duplicate a row. Splitting isolates a sample that kills its worker
every time, so only it ends as an error row.

The executor is how a run is carried out, not what it measures: it is not in the run's config,
methodology or cache keys, and a run started on Ray may resume locally or with another number
of workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
import time
from collections import deque
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from calipers.errors import ConfigError, ExecutorError
from calipers.runner._cache import cache_key, cacheable
from calipers.runner._plan import Plan, PlannedSample
from calipers.runner._ray_worker import Shard, ShardResult, ShardWorker, WorkerSpec
from calipers.runner._sample import record_base
from calipers.runner._schedule import Progress
from calipers.store import SampleRecord, Store
from calipers.types import ModelRequest

__all__ = ["INSTALL_HINT", "RayExecutor"]

INSTALL_HINT = "pip install 'calipers[ray]'"
_IN_FLIGHT = 2  # shards per replica


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed.",
            hint=f"Install it with: {INSTALL_HINT}  (or run without --executor ray).",
        ) from None
    return ray


@dataclass(frozen=True)
class RayExecutor:
    """Options of the Ray executor (``calipers run --executor ray``).

    ``address``: ``None`` starts a Ray instance inside this process (or joins the one
    ``RAY_ADDRESS`` names); ``auto`` joins the cluster running on this machine; ``HOST:PORT`` a
    cluster's head; ``ray://HOST:PORT`` through Ray Client. ``workers``: model replicas (one
    actor each); ``None``: one per CPU of the cluster. ``cpus_per_worker`` / ``gpus_per_worker``
    are what each actor asks Ray for (``None`` CPUs: the cluster's CPUs shared out, at most 1).
    """

    address: str | None = None
    workers: int | None = None
    shard_size: int | None = None
    cpus_per_worker: float | None = None
    gpus_per_worker: float = 0.0
    max_restarts: int = 3
    shard_retries: int = 3

    def check(self) -> None:
        """Fail before the run is stored when Ray is missing or the address is wrong."""
        import_ray()
        if self.address not in (None, "auto"):
            assert self.address is not None
            _check_reachable(self.address)
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"--workers {self.workers}: give 1 or more.")

    async def execute(
        self,
        run_id: str,
        plan: Plan,
        store: Store,
        *,
        done: Container[tuple[str, str, int]] = frozenset(),
        progress: Progress | None = None,
        deadline: float | None = None,
        provider_given: bool = False,
    ) -> bool:
        """Run every planned sample not in ``done``; False when ``deadline`` (a
        ``time.monotonic()`` instant) came first. ``provider_given``: ``plan.provider`` is an
        instance the caller passed (copied to each actor), not one built from the model spec."""
        ray = import_ray()
        owned = _connect(ray, self.address)
        try:
            return await _Driver(self, ray, run_id, plan, store, progress, provider_given).run(
                done, deadline
            )
        finally:
            if owned:
                ray.shutdown()


def _check_reachable(address: str) -> None:
    """Fail fast (not after Ray's minute of reconnecting) on a HOST:PORT nothing listens on."""
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(
            f"--address {address!r} is not a Ray address.",
            hint="Use auto, HOST:PORT (the head's GCS port, 6379 by default) or "
            "ray://HOST:PORT (Ray Client, port 10001).",
        )
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise ExecutorError(
            f"Cannot reach a Ray cluster at {address}: {e.strerror or e}.",
            hint="Start one (ray start --head) or give its head's address; "
            "`ray status` on the head prints it.",
        ) from None


_CLIENT_TRIES = 3
_CLIENT_START_FAILED = "Starting Ray client server failed"


def _connect(ray: Any, address: str | None) -> bool:
    """Join (or start) the cluster; True when this call started the connection, so the
    executor shuts it down after the run."""
    if ray.is_initialized():
        return False
    if address not in (None, "auto"):
        assert address is not None
        _check_reachable(address)
    kwargs: dict[str, Any] = dict(
        address=address,
        log_to_driver=False,
        logging_level=logging.WARNING,
        configure_logging=False,
    )
    if address is None:
        kwargs["include_dashboard"] = False
    # Ray Client: the head starts a server process for each client, which can fail to come
    # up while the head is busy; a new connection asks for a new one.
    tries = _CLIENT_TRIES if (address or "").startswith("ray://") else 1
    attempt = 1
    while True:
        try:
            ray.init(**kwargs)
            return True
        except ConnectionError as e:
            if attempt >= tries or _CLIENT_START_FAILED not in str(e):
                raise ExecutorError(
                    f"Cannot join a Ray cluster at {address or 'this machine'}: {e}",
                    hint="Start one with `ray start --head`, or drop --address to start one "
                    "in-process.",
                ) from None
            with contextlib.suppress(Exception):
                ray.shutdown()
            time.sleep(2.0 * attempt)
            attempt += 1


def _length(ps: PlannedSample) -> int:
    """The prompt's size in characters (what the model reads): the sort key of sharding."""
    if ps.prompt_text is not None:
        return len(ps.prompt_text)
    req = ps.request
    if not isinstance(req, ModelRequest):
        return len(req.context)
    if req.prompt is not None:
        return len(req.prompt)
    return sum(len(str(m.content or "")) for m in req.messages or ())


def make_shards(todo: list[PlannedSample], workers: int, size: int | None) -> list[list[int]]:
    """Indices into ``todo``, dealt into shards from the length order (longest first): shard
    ``k`` of ``S`` takes the ``k``-th, ``(k+S)``-th, ... longest. ``size`` defaults to about 8
    shards per worker, at most 32 samples each."""
    if not todo:
        return []
    if size is None:
        size = max(1, min(32, math.ceil(len(todo) / (8 * workers))))
    n = math.ceil(len(todo) / size)
    order = sorted(range(len(todo)), key=lambda i: -_length(todo[i]))
    return [order[k::n] for k in range(n)]


def _error_records(
    run_id: str, samples: Iterable[PlannedSample], why: str
) -> Iterator[SampleRecord]:
    for ps in samples:
        yield SampleRecord(**record_base(run_id, ps), cached=False, error=f"executor: {why}")


@dataclass
class _Work:
    samples: tuple[PlannedSample, ...]
    attempt: int = 0


class _Driver:
    """One execution: the actors, the queue of shards, the writes."""

    def __init__(
        self,
        opts: RayExecutor,
        ray: Any,  # the ray module, imported on first use
        run_id: str,
        plan: Plan,
        store: Store,
        progress: Progress | None,
        provider_given: bool,
    ) -> None:
        self.opts, self.ray, self.run_id, self.plan = opts, ray, run_id, plan
        self.store, self.progress = store, progress
        self.provider_given = provider_given
        self.cache_on = plan.config.use_cache
        self.model_key = plan.methodology.model.key()
        self.tool_format = plan.provider.tool_format()
        self.failures = 0  # worker deaths seen (shards that came back as a Ray failure)

    def _spec(self) -> WorkerSpec:
        p = self.plan
        return WorkerSpec(
            run_id=self.run_id,
            model=p.config.model,
            model_options=p.config.model_options,
            scorers={pt.task.name: pt.task.scorers for pt in p.tasks},
            model_key=self.model_key,
            tool_format=self.tool_format,
            concurrency=p.config.concurrency,
            provider=p.provider if self.provider_given else None,
        )

    def _workers(self) -> int:
        if self.opts.workers is not None:
            return self.opts.workers
        cpus = self.ray.cluster_resources().get("CPU", 1)
        return max(1, int(cpus / (self.opts.cpus_per_worker or 1)))

    def _start_actors(self, n: int) -> list[Any]:
        cpus = self.opts.cpus_per_worker
        if cpus is None:  # share the cluster's CPUs out so every replica can be scheduled
            cpus = min(1.0, self.ray.cluster_resources().get("CPU", 1) / n)
        cls = self.ray.remote(ShardWorker).options(
            max_restarts=self.opts.max_restarts,
            max_task_retries=0,
            num_cpus=cpus,
            num_gpus=self.opts.gpus_per_worker,
        )
        # the spec goes inline with each actor's creation (not ray.put), so Ray keeps it for
        # the actor's restarts
        spec = self._spec()
        return [cls.remote(spec, self.cache_on) for _ in range(n)]

    def _hits(self, samples: tuple[PlannedSample, ...]) -> dict[str, dict[str, Any]]:
        if not self.cache_on:
            return {}
        keys = [
            cache_key(self.model_key, ps.request, self.tool_format)
            for ps in samples
            if cacheable(ps.request)
        ]
        return self.store.cache_get_many(keys) if keys else {}

    def _write(self, records: list[SampleRecord], puts: dict[str, dict[str, Any]]) -> None:
        self.store.add_samples(records)
        if puts:
            self.store.cache_put_many(puts)
        if self.progress:
            for rec in records:
                self.progress.advance(rec.task, rec)

    def _failed(self, work: _Work, e: BaseException, queue: deque[_Work]) -> None:
        """A shard whose worker died: split and queue again, or error rows when its retries
        are spent."""
        self.failures += 1
        why = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        n = len(work.samples)
        if work.attempt >= self.opts.shard_retries:
            text = f"the worker died {work.attempt + 1} times running this sample's shard ({why})"
            self._write(list(_error_records(self.run_id, work.samples, text)), {})
            if self.progress:
                self.progress.note(f"{n} sample(s) stored as errors: {text}")
            return
        half = math.ceil(n / 2)
        for part in (work.samples[:half], work.samples[half:]):
            if part:
                queue.append(_Work(part, work.attempt + 1))
        if self.progress:
            self.progress.note(
                f"A Ray worker died running {n} sample(s) ({why}); they run again "
                f"(attempt {work.attempt + 2} of {self.opts.shard_retries + 1})."
            )

    async def run(self, done: Container[tuple[str, str, int]], deadline: float | None) -> bool:
        todo_by_task = {
            pt.task.name: [ps for ps in pt.samples if (ps.task, ps.sample.id, ps.epoch) not in done]
            for pt in self.plan.tasks
        }
        if self.progress:
            for pt in self.plan.tasks:
                n = len(pt.samples)
                self.progress.start_task(pt.task.name, n, n - len(todo_by_task[pt.task.name]))
        todo = [ps for t in todo_by_task.values() for ps in t]
        if todo:
            loop = asyncio.get_running_loop()
            when = None if deadline is None else loop.time() + (deadline - time.monotonic())
            try:
                async with asyncio.timeout_at(when) as budget:
                    await self._dispatch(todo)
            except TimeoutError:
                if not budget.expired():
                    raise
                return False
        if self.progress:
            for pt in self.plan.tasks:
                self.progress.finish_task(pt.task.name)
        return True

    async def _dispatch(self, todo: list[PlannedSample]) -> None:
        n = min(self._workers(), len(todo))
        shards = make_shards(todo, n, self.opts.shard_size)
        queue = deque(_Work(tuple(todo[i] for i in s)) for s in shards)
        actors = self._start_actors(n)
        inflight: dict[asyncio.Future[ShardResult], tuple[int, _Work, Any]] = {}
        load = [0] * n
        # failures in a row per actor: past this, its restarts are spent and it is retired
        strikes = [0] * n
        most = _IN_FLIGHT * (self.opts.max_restarts + 1)
        seq = 0
        try:
            while queue or inflight:
                live = [a for a in range(n) if strikes[a] < most]
                if not live and not inflight:
                    raise self._all_dead(n, sum(len(w.samples) for w in queue))
                for a in sorted(live, key=lambda i: load[i]):
                    while queue and load[a] < _IN_FLIGHT:
                        work = queue.popleft()
                        ref = actors[a].run_shard.remote(
                            Shard(seq, work.samples, self._hits(work.samples))
                        )
                        seq += 1
                        inflight[asyncio.wrap_future(ref.future())] = (a, work, ref)
                        load[a] += 1
                finished, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                for fut in finished:
                    a, work, _ref = inflight.pop(fut)
                    load[a] -= 1
                    strikes[a] = 0 if self._settle(fut, work, queue) else strikes[a] + 1
        finally:  # best effort: a dead actor's call or a lost connection must not leak the rest
            for _a, _w, ref in inflight.values():
                with contextlib.suppress(Exception):
                    self.ray.cancel(ref)
            for actor in actors:
                with contextlib.suppress(Exception):
                    self.ray.kill(actor)

    def _settle(self, fut: asyncio.Future[ShardResult], work: _Work, queue: deque[_Work]) -> bool:
        """Write a shard that came back; requeue one whose worker died (False)."""
        exc = fut.exception()
        if exc is None:
            result = fut.result()
            self._write(result.records, result.cache_puts)
            return True
        if isinstance(exc, self.ray.exceptions.RayTaskError):
            cause = getattr(exc, "cause", None)
            raise cause if isinstance(cause, BaseException) else exc  # the run cannot go on
        if isinstance(exc, self.ray.exceptions.RayError):
            self._failed(work, exc, queue)
            return False
        raise exc

    def _all_dead(self, n: int, left: int) -> ExecutorError:
        return ExecutorError(
            f"All {n} Ray workers died and their restarts ({self.opts.max_restarts} each) are "
            f"spent; {left} samples are left pending, nothing finished is lost.",
            hint=f"See why with `ray logs` on the cluster, then: calipers run --resume "
            f"{self.run_id} --executor ray.",
        )
