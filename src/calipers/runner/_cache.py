"""The response cache as the runner uses it: prefetched per chunk of the plan, written in
batches.

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


def cache_key(model_key: str, request: Request, tool_format: str | None = None) -> str:
    """The key of a request's stored response. ``tool_format`` (the provider's, see
    ``ModelProvider.tool_format``) counts only for requests with tools: the same tools under
    another tool prompt are another request; every other key is as it always was."""
    kind = "generate" if isinstance(request, ModelRequest) else "loglikelihood"
    parts: list[object] = [model_key, kind, request.model_dump(mode="json")]
    if tool_format is not None and isinstance(request, ModelRequest) and request.tools:
        parts.append({"tool_format": tool_format})
    return json_hash(parts, length=64)


def cacheable(request: Request) -> bool:
    return isinstance(request, LoglikelihoodRequest) or request.params.temperature == 0


class ResponseCache:
    def __init__(
        self,
        store: CacheStore,
        model_key: str,
        batch: int = 256,
        tool_format: str | None = None,
    ) -> None:
        self._store = store
        self._model_key = model_key
        self._tool_format = tool_format
        self._hits: dict[str, dict[str, Any]] = {}
        self._older: dict[str, dict[str, Any]] = {}  # the chunk before
        self._asked: set[str] = set()  # keys looked up in the store (found or not)
        self._asked_older: set[str] = set()
        self._pending: dict[str, dict[str, Any]] = {}
        self._batch = batch

    def prefetch(self, requests: Iterable[Request]) -> None:
        """Fetch the stored responses of the next ``requests`` (a chunk of the plan). The
        chunk before stays (its last samples may still be starting); older ones are dropped,
        so the cache holds two chunks, not the run (a dropped key is looked up again)."""
        keys = [cache_key(self._model_key, r, self._tool_format) for r in requests if cacheable(r)]
        hits: dict[str, dict[str, Any]] = {}
        for i in range(0, len(keys), 500):
            hits.update(self._store.cache_get_many(keys[i : i + 500]))
        self._hits, self._older = hits, self._hits
        self._asked, self._asked_older = set(keys), self._asked

    def get(self, request: Request) -> SampleOutput | None:
        if not cacheable(request):
            return None
        key = cache_key(self._model_key, request, self._tool_format)
        hit = self._hits.get(key) or self._older.get(key) or self._pending.get(key)
        if hit is None and key not in self._asked and key not in self._asked_older:
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
        key = cache_key(self._model_key, request, self._tool_format)
        self._pending[key] = value.model_dump(mode="json")
        if len(self._pending) >= self._batch:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._store.cache_put_many(self._pending)
            self._pending = {}
