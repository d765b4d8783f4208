"""The response cache as the runner uses it: prefetched per task, written in batches.

A key is the model's identity (with its file hash) plus the full request, so any change to
the prompt, decoding or model is a different entry. Log-likelihoods are always cacheable;
generations only when greedy (temperature 0): a sampled answer is not a fact to replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from calipers._util.hashing import json_hash
from calipers.types import (
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelRequest,
    ModelResponse,
    SampleOutput,
)

__all__ = ["CacheStore", "ResponseCache", "cache_key"]

Request = ModelRequest | LoglikelihoodRequest


class CacheStore(Protocol):
    def cache_get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]: ...
    def cache_put_many(self, items: Mapping[str, dict[str, Any]]) -> None: ...


def cache_key(model_key: str, request: Request) -> str:
    kind = "generate" if isinstance(request, ModelRequest) else "loglikelihood"
    return json_hash([model_key, kind, request.model_dump(mode="json")], length=64)


def cacheable(request: Request) -> bool:
    return isinstance(request, LoglikelihoodRequest) or request.params.temperature == 0


class ResponseCache:
    def __init__(self, store: CacheStore, model_key: str, batch: int = 64) -> None:
        self._store = store
        self._model_key = model_key
        self._hits: dict[str, dict[str, Any]] = {}
        self._asked: set[str] = set()  # keys looked up in the store (found or not)
        self._pending: dict[str, dict[str, Any]] = {}
        self._batch = batch

    def prefetch(self, requests: Iterable[Request]) -> None:
        keys = [cache_key(self._model_key, r) for r in requests if cacheable(r)]
        for i in range(0, len(keys), 500):
            self._hits.update(self._store.cache_get_many(keys[i : i + 500]))
        self._asked.update(keys)

    def get(self, request: Request) -> SampleOutput | None:
        if not cacheable(request):
            return None
        key = cache_key(self._model_key, request)
        hit = self._hits.get(key) or self._pending.get(key)  # prefetched per task
        if hit is None and key not in self._asked:
            # a request no plan could list (an episode's later steps): looked up on its own
            self._asked.add(key)
            hit = self._store.cache_get_many([key]).get(key)
        if hit is None:
            return None
        if isinstance(request, ModelRequest):
            return SampleOutput(response=ModelResponse.model_validate({**hit, "cached": True}))
        ll = LoglikelihoodResult.model_validate({**hit, "cached": True})
        return SampleOutput(loglikelihood=ll)

    def put(self, request: Request, output: SampleOutput) -> None:
        if not cacheable(request):
            return
        value = output.response or output.loglikelihood
        assert value is not None
        self._pending[cache_key(self._model_key, request)] = value.model_dump(mode="json")
        if len(self._pending) >= self._batch:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._store.cache_put_many(self._pending)
            self._pending = {}
