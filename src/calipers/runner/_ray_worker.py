"""The Ray executor's actor: one model replica that runs shards of planned samples.

This module does not import Ray: the driver wraps :class:`ShardWorker` with ``ray.remote``, and
Ray imports this module by name in the actor's process. The actor builds its own provider (from
the run's model spec, or from the instance the caller passed), runs each shard through the same
``run_sample`` as the local executor, and returns the records. It never writes to the store: the
driver is the only writer. Its response cache is the slice of the store's cache the driver
looked up for the shard; what it adds comes back with the records.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from calipers.models import ModelOptions, ModelProvider, resolve_model
from calipers.runner._cache import ResponseCache
from calipers.runner._plan import PlannedSample
from calipers.runner._sample import run_sample
from calipers.scorers import Scorer
from calipers.store import SampleRecord

__all__ = ["Shard", "ShardResult", "ShardWorker", "WorkerSpec"]


@dataclass(frozen=True)
class WorkerSpec:
    """What every replica needs, sent once when the actor starts."""

    run_id: str
    model: str  # the run's model spec, resolved in the actor
    model_options: ModelOptions
    scorers: Mapping[str, tuple[Scorer, ...]]  # by task
    model_key: str  # the response cache's key prefix (the model's identity)
    tool_format: str | None
    concurrency: int | None  # requests in flight per replica; None: the provider's default
    provider: ModelProvider | None = None  # an instance the caller passed, copied to the actor


@dataclass(frozen=True)
class Shard:
    """Samples for one call; ``hits``: the store's cached responses for their requests."""

    number: int
    samples: tuple[PlannedSample, ...]
    hits: Mapping[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ShardResult:
    number: int
    records: list[SampleRecord]
    cache_puts: dict[str, dict[str, Any]]  # new cache entries, for the driver to store
    pid: int  # the process that ran the shard


class _ShardCache:
    """The ``CacheStore`` a shard's ``ResponseCache`` reads and writes: the driver's lookups
    in, new entries out."""

    def __init__(self, hits: Mapping[str, dict[str, Any]]) -> None:
        self._hits = hits
        self.puts: dict[str, dict[str, Any]] = {}

    def cache_get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {k: self._hits[k] for k in keys if k in self._hits}

    def cache_put_many(self, items: Mapping[str, dict[str, Any]]) -> None:
        self.puts.update(items)


class ShardWorker:
    """One model replica. Ray runs it as an async actor: its two shards in flight share one
    provider and one concurrency limit, as the local executor's samples do."""

    def __init__(self, spec: WorkerSpec, use_cache: bool) -> None:
        self._spec = spec
        self._use_cache = use_cache
        self._provider: ModelProvider | None = None
        self._sem: asyncio.Semaphore | None = None

    def pid(self) -> int:
        return os.getpid()

    def _ready(self) -> tuple[ModelProvider, asyncio.Semaphore]:
        if self._provider is None:
            spec = self._spec
            self._provider = spec.provider or resolve_model(spec.model, spec.model_options)
        if self._sem is None:
            limit = self._spec.concurrency or self._provider.default_concurrency
            self._sem = asyncio.Semaphore(limit)
        return self._provider, self._sem

    async def run_shard(self, shard: Shard) -> ShardResult:
        provider, sem = self._ready()
        spec = self._spec
        store = _ShardCache(shard.hits)
        cache = (
            ResponseCache(store, spec.model_key, tool_format=spec.tool_format)
            if self._use_cache
            else None
        )

        async def one(ps: PlannedSample) -> SampleRecord:
            async with sem:
                return await run_sample(spec.run_id, ps, provider, spec.scorers[ps.task], cache)

        records = list(await asyncio.gather(*(one(ps) for ps in shard.samples)))
        if cache is not None:
            cache.flush()
        return ShardResult(shard.number, records, store.puts, os.getpid())

    async def close(self) -> None:
        if self._provider is not None:
            await self._provider.aclose()
